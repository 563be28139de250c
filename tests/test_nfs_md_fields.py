"""The NFS server's thread pool and RPC/RDMA credits and md's CPU costs as scenario fields with ranges (issue 30).

Oracles: the uncertainty contract's rule (an assumed default carries a range with its evidence, models.uncertainty);
Little's law for the client's window (RPCs beyond it wait in the client, so the rate is flat past it); the utilisation
law for md's CPU (a host of c cores at t core-seconds per device I/O serves at most c / t device I/Os per second).
"""

from __future__ import annotations

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iowatt.models.uncertainty import field_range
from iowatt.scenarios.loader import load
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.storage.kinds.nfs import NfsStorageConfig
from iowatt.simulator.storage.kinds.raid import RaidStorageConfig
from iowatt.simulator.system import SystemRuntime

ASSUMED = [(NfsStorageConfig, "server_threads"), (NfsStorageConfig, "rdma_credits"),
           (RaidStorageConfig, "md_cpu_us_per_device_io"), (RaidStorageConfig, "md_parity_GBps_per_core")]


@pytest.mark.parametrize(("model", "name"), ASSUMED)
def test_assumed_defaults_carry_a_range_with_evidence(model: type, name: str) -> None:
    info = model.model_fields[name]
    declared = field_range(info.json_schema_extra)
    assert declared is not None and declared.low <= info.default <= declared.high
    assert declared.note and declared.shape == "log-uniform"


def _nfs(storage: dict[str, object]) -> SystemRuntime:
    base = {"kind": "nfs", "protocol": "rdma", "export": {"kind": "raid", "level": 5, "count": 8, "device": "micron-5210-ion"}}
    scenario = load({"name": "n", "system": {"storage": base | storage},
                     "workload": {"kind": "fio", "rw": "randread", "bs": "128k", "iodepth": 8, "size": "10G"}}, [])
    return SystemRuntime(FlowEngine(simpy.Environment()), scenario.system)


@settings(max_examples=8, deadline=None)
@given(credits=st.integers(2, 48))
def test_rdma_credits_set_the_window_and_requests_beyond_it_wait(credits: int) -> None:
    """Little's law: the RPC rate at 4 x the window equals the rate at the window (the rest wait in the client)."""
    volume = _nfs({"rdma_credits": credits, "server_threads": 256}).volume
    assert volume.window == min(64, credits)
    read = Access("read", 131072, "rand")
    at = volume.concurrency(read.with_(queue_depth=credits)).requests_per_second(credits)
    beyond = volume.concurrency(read.with_(queue_depth=4 * credits)).requests_per_second(4 * credits)
    assert beyond == pytest.approx(at, rel=1e-6)


def test_tcp_ignores_rdma_credits() -> None:
    assert _nfs({"protocol": "tcp", "fabric": "100gbe", "rdma_credits": 4}).volume.window == 64


@pytest.mark.parametrize("cost_us", [50.0, 200.0])
def test_md_cpu_per_device_io_bounds_iops_by_the_utilisation_law(cost_us: float) -> None:
    """RAID 0 of 8 NVMe drives, 4 KiB random reads at QD 256 on a host whose md cost per device I/O is set high:
    IOPS = cores x core_speed / t (utilisation law), the drives being far from their own ceiling."""
    scenario = load({"name": "md", "system": {"storage": {"kind": "raid", "level": 0, "count": 8, "device": "micron-7450-pro",
                                                          "md_cpu_us_per_device_io": cost_us}},
                     "workload": {"kind": "fio", "rw": "randread", "bs": "4k", "iodepth": 256, "size": "10G",
                                  "runtime": 0.2, "time_based": True}}, [])
    from iowatt.simulator.run import simulate

    sim = simulate(scenario.system, scenario.workload, 1)
    system = SystemRuntime(FlowEngine(simpy.Environment()), scenario.system)
    cores = system.host.cpu.capacity * system.host.core_speed  # reference-core seconds per second
    assert sim.metrics["iops"] == pytest.approx(cores / (cost_us * 1e-6), rel=0.02)


@pytest.mark.parametrize("threads", [0, 4])
def test_raid5_writes_bind_on_the_stripe_threads_by_the_utilisation_law(threads: int) -> None:
    """RAID 5 small random writes: md handles their stripes in one raid5d thread (group_thread_cnt 0) or in
    `threads` workers.  With md's cost per device I/O set high, IOPS = max(1, threads) x core_speed / (t x 4):
    a read-modify-write is 4 device I/Os (read data + parity, write both; models.array)."""
    cost_us = 100.0
    scenario = load({"name": "md5", "system": {"storage": {"kind": "raid", "level": 5, "count": 8, "device": "micron-7450-pro",
                                                           "md_cpu_us_per_device_io": cost_us, "md_group_threads": threads}},
                     "workload": {"kind": "fio", "rw": "randwrite", "bs": "4k", "iodepth": 64, "size": "10G",
                                  "runtime": 0.2, "time_based": True}}, [])
    from iowatt.simulator.run import simulate

    sim = simulate(scenario.system, scenario.workload, 1)
    system = SystemRuntime(FlowEngine(simpy.Environment()), scenario.system)
    expected = max(1, threads) * system.host.core_speed / (cost_us * 1e-6 * 4)
    assert sim.metrics["iops"] == pytest.approx(expected, rel=0.02)


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(level=st.sampled_from([5, 6]), count=st.integers(4, 16), block=st.sampled_from(["128k", "1m", "4m"]))
def test_raid5_and_6_full_stripe_writes_pay_md_per_page_not_per_chunk(level: int, count: int, block: str) -> None:
    """RAID 5/6 sequential writes go through md's stripe cache, whose stripe heads are one page per member
    (drivers/md/raid5.h RAID5_STRIPE_SIZE = PAGE_SIZE; md.rst stripe_cache_size): every 4 KiB of data and of parity
    is a stripe head raid5d handles.  With md's cost per device I/O set high the one raid5d thread binds, and the
    utilisation law gives bytes/s = core_speed x 4096 / (t x n / d), d = n - 1 or n - 2 data drives, whatever the
    request and chunk size (a chunk-sized count of device I/Os would let 1 MiB writes run far faster)."""
    cost_us = 50.0
    scenario = load({"name": "md5seq", "system": {"storage": {"kind": "raid", "level": level, "count": count, "device": "micron-7450-pro",
                                                              "md_cpu_us_per_device_io": cost_us}},
                     "workload": {"kind": "fio", "rw": "write", "bs": block, "iodepth": 32, "size": "10G", "filename": "/dev/md0",
                                  "runtime": 0.2, "time_based": True}}, [])
    from iowatt.simulator.run import simulate

    sim = simulate(scenario.system, scenario.workload, 1)
    system = SystemRuntime(FlowEngine(simpy.Environment()), scenario.system)
    data = count - (level - 4)
    expected = system.host.core_speed * 4096 / (cost_us * 1e-6 * count / data)
    assert sim.metrics["bw_bytes"] == pytest.approx(expected, rel=0.02)
