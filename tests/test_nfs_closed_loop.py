"""The NFS server as a closed network (models.nfs_server) and the `kind: nfs` volume that uses it.

Oracle: per-request SimPy runs of the whole path (tests/queueing_oracle.per_request_nfs): client slots,
the wire, the nfsd thread pool, the server's cores and an export of n drives with random placement.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import simpy
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models.closed_network import Station, solve
from iowatt.models.nfs_server import NfsPath, solve_path
from iowatt.scenarios.loader import load
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemRuntime
from queueing_oracle import per_request_nfs

LIB = Path(__file__).resolve().parents[1] / "scenarios" / "library" / "amax"


@settings(max_examples=3, deadline=None)
@given(clients=st.integers(1, 128), threads=st.integers(1, 64), drives=st.integers(1, 24), units=st.integers(1, 3),
       window=st.sampled_from([16, 64]))
def test_nfs_loop_matches_per_request_simulation(clients: int, threads: int, drives: int, units: int, window: int):
    """Oracle: per-request SimPy of the path.  Throughput and mean latency within 5 %."""
    unit_s, round_trip, wire, cpu, cores = 1e-3, 100e-6, 20e-6, 10e-6, 4
    drive = tuple(k / (unit_s + (k - 1) * unit_s / units) for k in range(1, threads + 1))
    export = tuple(solve((Station("d", drive, 1 / drives, drives),), (), m).throughput for m in range(1, threads + 1))
    loop = solve_path(NfsPath(export, threads, cores, cpu, round_trip, wire, window), clients)
    sim_x, sim_r = per_request_nfs(clients, window, round_trip, wire, threads, cores, cpu, drives, units, unit_s,
                                   requests=max(12000, 200 * clients), seed=clients + threads)
    assert loop.rpc_rate == pytest.approx(sim_x, rel=0.05)
    assert clients / loop.rpc_rate == pytest.approx(sim_r, rel=0.05)


def _amax(name: str, **storage: object) -> SystemRuntime:
    data = yaml.safe_load((LIB / f"{name}.yaml").read_text())
    data["system"]["storage"].update(storage)
    scenario = load(data)
    system = SystemRuntime(FlowEngine(simpy.Environment()), scenario.system)
    system.volume.occupy(1000 * 2**30 / system.volume.capacity_bytes)
    return system


@pytest.mark.parametrize("name", ["fio_5210_raid5_nfs", "fio_hdd_raid5_nfs"])
def test_default_nfsd_threads_bind_the_amax_arrays_at_qd32(name: str):
    """Little's law at the server: with the OS default of 8 nfsd threads all busy, the export sees 8 reads
    however deep the client's queue; 64 threads let all 32 through, and the rate rises."""
    read = Access("read", 131072, "rand", 32)
    default = _amax(name).volume
    x8 = default.concurrency(read).requests_per_second(32)
    state = default.report()["closed_loop"]
    assert state["nfsd_threads_busy"] == pytest.approx(8.0, rel=0.02)
    assert str(state["binding"]).startswith("nfsd threads (8")
    more = _amax(name, server_threads=64).volume
    x64 = more.concurrency(read).requests_per_second(32)
    assert x64 > 1.5 * x8
    assert not str(more.report()["closed_loop"]["binding"]).startswith("nfsd threads")


def test_requests_beyond_the_client_window_wait_in_the_client():
    """Little's law: beyond the session's slots the RPC rate stays put and the extra requests add latency."""
    volume = _amax("fio_5210_raid5_nfs", server_threads=256).volume
    window = volume.window
    assert window == 32  # the RPC/RDMA credits the server grants (32) below the NFSv4.1 session slots (64)
    at_window = volume.concurrency(Access("read", 131072, "rand", window)).requests_per_second(window)
    beyond = volume.concurrency(Access("read", 131072, "rand", 4 * window)).requests_per_second(4 * window)
    assert beyond == pytest.approx(at_window, rel=1e-6)
