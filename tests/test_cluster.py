"""Scale-out erasure-coded clusters as a volume (simulator.storage.cluster_volume).

Oracles: conservation of bytes on the drives ((k+m)/k per byte written, the journal's
copies and destage); the asymptotic bound of operational analysis (no station runs above
its capacity; at depth the busiest one saturates); Little's law (fio's iops x latency =
requests in flight); NIC goodput from models.fabric and the ConnectX-6 user manual's
statement that a PCIe Gen4 x16 card carries 200 Gb/s, in configurations built so that
one resource is the tightest by a wide margin; Phanishayee et al.'s one-block goodput
B / (B / C + RTO) for incast; monotonicity in nodes and clients (hypothesis).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import simpy
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import erasure, fabric
from iowatt.models.links import pcie_payload_Bps
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.run import run_scenario
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemConfig, SystemRuntime

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library"
FIO = LIB / "cluster" / "fio_ec42_6node_12clients.yaml"
DRIVE = "micron-7450-pro"
MIB = 2.0**20


def _cluster(**overrides: Any) -> dict[str, Any]:
    storage = {"kind": "cluster", "nodes": 6, "drives_per_node": 10, "device": DRIVE, "erasure_coding": "4+2", "node_nics": 2,
               "fabric": "200gbe", "clients": 12}
    storage.update(overrides)
    return storage


def _system(storage: dict[str, Any]) -> SystemRuntime:
    engine = FlowEngine(simpy.Environment())
    return SystemRuntime(engine, SystemConfig.model_validate({"storage": storage}))


def _ceiling(system: SystemRuntime, access: Access) -> float:
    """Host bytes/s the access's constraints allow one flow (the engine's answer for a lone flow)."""
    return min(c.capacity / k for c, k in system.volume.usage(access) if k > 0 and c.capacity < math.inf)


def _fio(*overrides: str) -> dict[str, Any]:
    return run_scenario(load(FIO, ["workload.runtime=1 s", *overrides]))[0]


def test_capacity_and_drive_count():
    system = _system(_cluster())
    spec = system.volume.drives[0].spec
    assert len(system.volume.drives) == 60
    assert system.volume.capacity_bytes == pytest.approx(60 * spec.capacity_bytes * 4 / 6)


@pytest.mark.parametrize(("block", "pattern", "stored"), [(MIB, "seq", 1.5), (4096.0, "rand", 3.0 + 1.5)])
def test_written_bytes_are_conserved_on_the_drives(block: float, pattern: str, stored: float):
    """Full stripes store 1.5 bytes per byte; a journalled 4 KiB write 3 copies now and 1.5 once destaged."""
    system = _system(_cluster())
    data = 20e9
    system.engine.start("write", data, system.volume.usage(Access("write", block, pattern, 64)))
    system.engine.run()
    on_drives = sum(d.report()["host_bytes_written"] for d in system.volume.drives)
    metadata = data / block * 3 * erasure.METADATA_BYTES_PER_WRITE
    assert on_drives == pytest.approx(data * stored + metadata, rel=1e-6)


@pytest.mark.parametrize(("rw", "bs"), [("read", "1M"), ("write", "1M"), ("randread", "4k"), ("randwrite", "4k")])
def test_library_fio_runs_at_the_closed_loop_solution_and_names_its_binding_station(rw: str, bs: str):
    """fio's rate is the MVA solution, below every station's capacity; the busiest station is named; Little's law."""
    doc = _fio(f"workload.rw={rw}", f"workload.bs={bs}")
    m, storage = doc["metrics"], doc["storage"]
    direction = "read" if "read" in rw else "write"
    system = _system(load(FIO).system.storage.model_dump())
    access = Access(direction, float(MIB if bs == "1M" else 4096), "rand" if rw.startswith("rand") else "seq", 384)
    solution = system.volume.solve(access)
    assert m[f"{direction}_iops"] == pytest.approx(solution.throughput, rel=1e-6)
    assert m[f"{direction}_bw_bytes"] <= _ceiling(system, access) * (1 + 1e-9)
    assert storage["binding_constraint"].startswith(solution.bottleneck)
    assert max(storage["station_utilisation"].values()) <= 1.0 + 1e-6
    assert m[f"{direction}_iops"] * m[f"{direction}_clat_mean_us"] * 1e-6 == pytest.approx(32 * 12, rel=1e-6)


def test_writes_are_slower_than_reads_on_the_library_cluster():
    """The issue's acceptance: 4 KiB random writes below 4 KiB random reads, 1 MiB writes below 1 MiB reads."""
    assert _fio("workload.rw=randwrite", "workload.bs=4k")["metrics"]["write_iops"] < _fio("workload.rw=randread", "workload.bs=4k")["metrics"]["read_iops"]
    assert _fio("workload.rw=write")["metrics"]["write_bw_bytes"] < _fio()["metrics"]["read_bw_bytes"]


def _bound(storage: dict[str, Any], access: Access) -> tuple[float, str]:
    system = _system(storage)
    x = system.volume.solve(access)
    return x.throughput * access.block_bytes, x.bottleneck


def test_node_nics_bind_when_they_are_the_narrowest():
    """One 100 GbE port per node, fast software: reads run at the nodes' NIC goodput (models.fabric), 6 x 1 port."""
    storage = _cluster(fabric="100gbe", node_nics=1, client_nics=4, client={"frontend_cores": 32}, software={"drive_cores": 40, "compute_cores": 40})
    rate, where = _bound(storage, Access("read", MIB, "seq", 12 * 256))
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (MIB / 4)
    assert where == "node.nic_tx"
    assert rate == pytest.approx(6 * fabric.port_goodput_Bps("100gbe", False) / header, rel=0.03)


def test_a_dual_port_card_is_bound_by_its_pcie_link():
    """2 x 200 GbE on one ConnectX-6 (PCIe Gen4 x16): the card carries ~200 Gb/s (NVIDIA user manual), not 400."""
    fast = {"client": {"frontend_cores": 64}, "software": {"drive_cores": 40, "compute_cores": 40}, "clients": 48}
    one_card = _cluster(nic_ports_per_card=2, **fast)
    rate, where = _bound(one_card, Access("read", MIB, "seq", 48 * 64))
    assert where == "node.pcie_tx"
    assert rate == pytest.approx(6 * pcie_payload_Bps(4, 16) / (1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (MIB / 4)), rel=0.03)
    assert _bound(_cluster(**fast), Access("read", MIB, "seq", 48 * 64))[0] > rate * 1.3


def test_slow_drives_bind_and_are_named():
    """One SATA QLC drive per node (350 MB/s writes): 1 MiB writes run at 6 x 350 MB/s / 1.5 and the drives are named."""
    storage = _cluster(device="micron-5210-ion", drives_per_node=1, client={"frontend_cores": 8})
    system = _system(storage)
    access = Access("write", MIB, "seq", 384)
    assert _ceiling(system, access) == pytest.approx(6 * 350e6 / 1.5, rel=0.02)
    doc = run_scenario(load(FIO, ["workload.runtime=1 s", "workload.rw=write"] + [f"storage.{k}={v}" for k, v in
                                  (("device", "micron-5210-ion"), ("drives_per_node", 1), ("client.frontend_cores", 8))]))[0]
    assert doc["storage"]["binding_constraint"].startswith("node.drives")


def test_in_place_small_writes_bind_on_the_drive_processes_and_name_the_ec_path():
    """rmw: 6 drive I/Os per 4 KiB write instead of 3 + a destage; with fast clients the drive processes bind."""
    fast = ["workload.rw=randwrite", "workload.bs=4k", "storage.client.frontend_cores=8"]
    rmw = _fio(*fast, "storage.software.small_writes=rmw")
    journal = _fio(*fast)
    assert rmw["storage"]["erasure_paths"] == ["partial-stripe read-modify-write"]
    assert rmw["storage"]["binding_constraint"].startswith("node.drive_cores")
    assert rmw["metrics"]["write_iops"] < journal["metrics"]["write_iops"]


def test_degraded_cluster_reads_cost_more_and_run_slower():
    fast = {"client": {"frontend_cores": 8}}
    healthy = _bound(_cluster(**fast), Access("read", 4096, "rand", 384))[0]
    degraded = _bound(_cluster(failed_nodes=1, **fast), Access("read", 4096, "rand", 384))[0]
    assert degraded < healthy


def test_qd1_latency_is_the_sum_of_hops_and_services():
    """At QD1 fio's latency is the volume's unloaded latency, and it grows with the client's hop (Little's law, N = 1)."""
    doc = _fio("workload.iodepth=1", "workload.numjobs=1", "workload.rw=randread", "workload.bs=4k")
    system = _system(load(FIO).system.storage.model_dump())
    l0 = system.volume.qd1_latency_s(Access("read", 4096, "rand"))
    assert doc["metrics"]["read_clat_mean_us"] == pytest.approx(l0 * 1e6, rel=1e-6)
    slower = _system(_cluster(client={"hop": "50 us"}))
    assert slower.volume.qd1_latency_s(Access("read", 4096, "rand")) == pytest.approx(l0 + 2 * (50e-6 - 13e-6), rel=1e-9)


def test_incast_stalls_a_synchronized_read_by_its_timeout_share():
    """One 1 MiB block over 4 nodes (256 KiB each) into a 256 KiB port buffer: 3/4 of it overflows, the block waits
    0.75 x 200 ms; at QD1 the client's goodput is B / (L0 + 0.15 s), Phanishayee et al.'s one-block goodput."""
    plain = _system(_cluster(clients=1))
    l0 = plain.volume.qd1_latency_s(Access("read", MIB, "seq"))
    lossy = _system(_cluster(clients=1, incast={"switch_buffer_bytes_per_port": 256 * 1024}))
    assert lossy.volume.solve(Access("read", MIB, "seq", 1)).throughput == pytest.approx(1.0 / (l0 + 0.75 * 0.2), rel=1e-9)
    roomy = _system(_cluster(clients=1, incast={}))  # 1 MiB of buffer holds the whole block: no timeout
    assert roomy.volume.qd1_latency_s(Access("read", MIB, "seq")) == pytest.approx(l0, rel=1e-12)


def test_kernel_and_fuse_clients_work_on_the_host_cpu():
    """A kernel client pays per request on the host's cores; FUSE splits 1 MiB into 8 requests of 128 KiB and pays more."""
    read = Access("read", MIB, "seq", 1)
    latency = {stack: _system(_cluster(client={"stack": stack})).volume.qd1_latency_s(read) for stack in ("dpdk", "kernel", "fuse")}
    assert latency["dpdk"] < latency["kernel"] < latency["fuse"]
    cpu = {stack: dict((c.name, k) for c, k in _system(_cluster(client={"stack": stack})).volume.usage(read))["host.cpu"]
           for stack in ("kernel", "fuse")}
    assert cpu["fuse"] > cpu["kernel"] > 0.0
    assert "cluster.clients.frontend" not in {c.name for c, _ in _system(_cluster(client={"stack": "kernel"})).volume.usage(read)}


def test_rdma_lets_the_frontend_skip_the_copy_of_large_requests():
    """WEKA's RDMA data path (reads >= 32 KB): the frontend pays per request only, so one core reads far more."""
    tcp = _bound(_cluster(), Access("read", MIB, "seq", 384))
    rdma = _bound(_cluster(protocol="rdma"), Access("read", MIB, "seq", 384))
    assert rdma[0] > 2.0 * tcp[0] and tcp[1] == "cluster.clients.frontend"


def test_dedicated_cores_draw_busy_power_while_idle():
    """DPDK cores poll: with no I/O at all each node's CPU draws idle + (compute + drive cores) x busy W per core."""
    system = _system(_cluster())
    system.engine.run(until=1.0)
    cpu = system.config.storage.node.cpu_spec()
    per_core = (cpu.tdp_W - cpu.idle_W) / cpu.cores
    node = system.engine.meters["node.cpu"]
    assert node.energy_J == pytest.approx(6 * (cpu.idle_W + (16 + 8) * per_core), rel=1e-9)


def test_clients_are_one_aggregate_host():
    system = _system(_cluster(clients=12))
    one = _system(_cluster(clients=1))
    assert system.host.cpu.capacity == pytest.approx(12 * one.host.cpu.capacity)
    assert system.host.base_meter.idle_W == pytest.approx(12 * one.host.base_meter.idle_W)


@settings(max_examples=20, deadline=None)
@given(nodes=st.integers(6, 16), more=st.integers(0, 8), clients=st.integers(1, 32), extra=st.integers(0, 16),
       op=st.sampled_from(["read", "write"]), block=st.sampled_from([4096.0, MIB]))
def test_more_nodes_or_clients_never_slower(nodes: int, more: int, clients: int, extra: int, op: str, block: float):
    """The same requests per client, more clients or nodes: never a lower rate.  (A node more also sends a larger
    share of each stripe's pieces over the network, (A-1)/A of them, so a latency-bound loop may lose a hair: 0.1 %.)"""
    def rate(n: int, c: int) -> float:
        return _bound(_cluster(nodes=n, clients=c), Access(op, block, "rand", 32 * c))[0]  # type: ignore[arg-type]

    base = rate(nodes, clients)
    assert rate(nodes + more, clients) >= base * (1 - 1e-3)
    assert rate(nodes, clients + extra) >= base * (1 - 1e-9)


def test_a_profile_sets_the_software_and_explicit_values_win(tmp_path: Path):
    profile = tmp_path / "p.yaml"
    fitted = {"p": "calibrated", "src": "b", "fitted_on": ["b"]}
    profile.write_text(yaml.safe_dump({"format": "iowatt-cluster-profile", "software": {"drive": {"read_iops": {"v": 5e4, **fitted}}},
                                       "client": {"hop": {"v": 2e-5, **fitted}, "frontend_cores": 3}}))
    config = SystemConfig.model_validate({"storage": _cluster(profile=str(profile), client={"frontend_cores": 2})}).storage
    assert config.software.drive.read_iops == 5e4 and config.software.drive.write_iops > 0
    assert config.client.hop_s == 2e-5 and config.client.frontend_cores == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"erasure_coding": "4-2"}, "expected k+m such as '4+2', found '4-2'"),
        ({"nodes": 5}, "places each stripe on 6 distinct nodes, found 5 nodes"),
        ({"failed_nodes": 3}, "survives at most 2 failed nodes, found 3"),
        ({"incast": {}, "protocol": "rdma"}, "incast: TCP incast needs protocol tcp"),
        ({"profile": "/nowhere/p.yaml"}, "profile: expected a cluster profile YAML file"),
        ({"software": {"small_writes": "cache"}}, "small_writes"),
        ({"client": {"stack": "nfs"}}, "stack"),
        ({"software": {"drive_cores": 90}}, "software: 180 compute + 90 drive cores do not fit a node of 96 cores"),
    ],
)
def test_bad_cluster_values_name_the_field(change: dict[str, Any], message: str):
    data = yaml.safe_load(FIO.read_text())
    data["system"]["storage"].update(change)
    with pytest.raises(ScenarioError) as error:
        load(data)
    assert message in str(error.value)


def _cluster_fio_metrics() -> dict:
    from iowatt.scenarios.run import run_scenario

    scenario = load(LIB / "cluster" / "fio_ec42_6node_12clients.yaml", ["workload.runtime=2 s"])
    return run_scenario(scenario)[0]["metrics"]


def test_cluster_library_fio_obeys_littles_law():
    """Oracle: fio's closed loop, iops x mean latency = outstanding I/Os (Little's law), 12 clients x iodepth 32."""
    metrics = _cluster_fio_metrics()
    assert metrics["read_iops"] * metrics["read_clat_mean_us"] * 1e-6 == pytest.approx(32 * 12, rel=1e-6)


def test_cluster_1mib_reads_stay_below_nic_line_rate():
    """Oracle: the clients' NIC goodput (models.fabric: 12 x 200GbE less NVMe/TCP headers) is an upper bound that a
    closed loop of 32 requests per client reaches only if nothing but the NIC ever waits; with a fabric round trip and
    drive service per request, measured clusters deliver less (the bound is asymptotic, Little's law: X = N / R).
    1 MiB reads must stay at least 1 % below the line rate."""
    metrics = _cluster_fio_metrics()
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (2**20 / 4)
    bound = 12 * fabric.port_goodput_Bps("200gbe", rdma=False) / header
    assert metrics["read_bw_bytes"] < bound * 0.99


# ---------------------------------------------------------------------------- loaders on a cluster (DLIO)

UNET = LIB / "cluster" / "unet3d_a100_ec42_6node_12clients.yaml"


def test_unet3d_knee_is_where_the_cluster_runs_out():
    """Oracle: supply = demand.  Each A100 asks D = batch x record / compute time; the cluster serves the loaders'
    1 MiB reads at C (its busiest station's capacity); per-accelerator throughput stays at D (AU >= 90 %) up to the
    knee N* = C / (0.9 D) that the scenario reports, and above it falls as C / N (AU x N x D = C).  The fluid law
    holds where the loader's buffer rides out the requests' fluctuations: two batches a worker (DLIO prefetch_size 8
    over 4 workers); at DLIO's default (one a worker) the count just below the knee loses about 1 % of AU."""
    doc = run_scenario(load(UNET, ["workload.total_training_steps=16", "workload.prefetch_size=8"]))[0]
    m, cfg = doc["metrics"], doc["dlio"]["resolved"]
    demand = cfg["batch_size"] * cfg["record_length"] / cfg["computation_time"]
    capacity = _ceiling(_system(load(UNET).system.storage.model_dump()), Access("read", MIB, "seq", 384))
    knee = capacity / (0.9 * demand)
    assert abs(m["max_accelerators_au90"] - knee) <= 1.5
    for n, au in doc["dlio"]["au_search"]["rows"]:
        if n <= knee:
            assert au >= 90.0
        elif n > knee + 2:
            assert n * au / 100.0 * demand == pytest.approx(capacity, rel=0.10)
    assert doc["storage"]["binding_constraint"].startswith("cluster.clients.frontend")


def test_a_fuse_client_on_a_small_cpu_is_bound_by_the_host_cpu():
    """The loaders' parsing and a FUSE client share 8 cores per client (no frontend cores): the host CPU binds, and is named."""
    small = ["workload.total_training_steps=8", "workload.search_au=false", "server.cpu={base: amd-epyc-9654, cores: 8}", "storage.client.stack=fuse"]
    doc = run_scenario(load(UNET, small))[0]
    assert doc["storage"]["binding_constraint"].startswith("host.cpu")
    assert "cluster.clients.frontend" not in doc["storage"]["station_utilisation"]
