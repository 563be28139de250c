"""Scale-out erasure-coded clusters (models.array EC laws, simulator.volumes.ClusterVolume).

Oracles: bytes on the wire = (k+m)/k x data for writes and 1 x data for healthy
reads (systematic code); conservation of bytes on the drives; the binding
resource computed by hand from NIC goodput (models.fabric) and drive counts;
symmetric lumping checked against explicitly built drives; monotonicity in
nodes and clients (hypothesis).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import array as raid
from iowatt.models import fabric
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemConfig, SystemRuntime

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library"
DRIVE = "micron-7450-pro"


def _cluster(**overrides: Any) -> dict[str, Any]:
    storage = {
        "kind": "cluster",
        "nodes": 6,
        "drives_per_node": 10,
        "device": DRIVE,
        "erasure_coding": "4+2",
        "node_nics": 2,
        "fabric": "200gbe",
        "clients": 12,
    }
    storage.update(overrides)
    return storage


def _system(storage: dict[str, Any]) -> SystemRuntime:
    engine = FlowEngine(simpy.Environment())
    return SystemRuntime(engine, SystemConfig.model_validate({"storage": storage}))


def _rate(system: SystemRuntime, usage: list) -> float:
    flow = system.engine.start("probe", 1e12, usage)
    system.engine.env.run(until=1e-9)
    return flow.rate


def test_ec_closed_forms():
    assert raid.ec_write_expansion(4, 2) == 1.5
    assert raid.ec_usable_fraction(4, 2) == pytest.approx(2 / 3)
    total, alive = raid.ec_node_load(4, 2, 6, "read", failed_nodes=1)
    assert alive == 5 and total == pytest.approx(5 / 6 + 4 / 6)  # a lost chunk costs k reads


@pytest.mark.parametrize(("k", "m"), [(4, 2), (8, 3), (2, 1), (6, 0)])
def test_bytes_on_the_wire_are_k_plus_m_over_k(k: int, m: int):
    system = _system(_cluster(erasure_coding=f"{k}+{m}", nodes=max(6, k + m)))
    v = system.volume
    b = 2**20
    chunk = b / k
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / chunk
    write = {c: kk for c, kk in v.usage(Access("write", b, "seq"))}
    read = {c: kk for c, kk in v.usage(Access("read", b, "seq"))}
    assert write[v.client_tx] == pytest.approx((k + m) / k * header)
    assert read[v.client_rx] == pytest.approx(1.0 * header)
    # each node receives its share of the stripe: (k+m)/k / N
    assert write[v.node.nic_rx] == pytest.approx((k + m) / k / v.node_count * header)


def test_capacity_and_drive_count():
    system = _system(_cluster())
    spec = system.volume.drives[0].spec
    assert len(system.volume.drives) == 60
    assert system.volume.capacity_bytes == pytest.approx(60 * spec.capacity_bytes * 4 / 6)


def test_written_bytes_are_conserved_on_the_drives():
    system = _system(_cluster())
    engine = system.engine
    data = 50e9
    engine.start("write", data, system.volume.usage(Access("write", 2**20, "seq")))
    engine.run()
    on_drives = sum(d.report()["host_bytes_written"] for d in system.volume.drives)
    assert on_drives == pytest.approx(data * 1.5, rel=1e-6)


def test_sequential_reads_are_bound_by_the_nics_by_hand():
    system = _system(_cluster())
    rate = _rate(system, system.volume.usage(Access("read", 2**20, "seq")))
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (2**20 / 4)
    nic = fabric.port_goodput_Bps("200gbe", rdma=False)
    clients = 12 * nic / header
    nodes = 6 * 2 * nic / header
    assert rate == pytest.approx(min(clients, nodes), rel=1e-6)
    # with one client the client's NIC binds
    one = _system(_cluster(clients=1))
    assert _rate(one, one.volume.usage(Access("read", 2**20, "seq"))) == pytest.approx(nic / header, rel=1e-6)


def test_lumped_cluster_equals_explicit_drives():
    """Symmetric lumping: a 3-node x 3-drive cluster against the same drives built one by one."""
    lumped = _system(_cluster(nodes=3, drives_per_node=3, erasure_coding="2+1", clients=1, node_nics=1))
    lumped_rate = _rate(lumped, lumped.volume.usage(Access("write", 2**20, "seq")))
    # explicit: 9 drives, each receiving 1.5 / 9 of every host byte, behind 3 node NICs of 1/3 each
    explicit = _system({"kind": "local", "count": 9, "device": DRIVE})
    drive_usage = []
    for d in explicit.volume.drives:
        drive_usage += d.usage(Access("write", 2**20 / 2 / 3, "seq"), 1.5 / 9)
    drive_bound = _rate(explicit, drive_usage)
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / 2**19
    nic = fabric.port_goodput_Bps("200gbe", rdma=False)
    assert lumped_rate == pytest.approx(min(drive_bound, nic / (1.5 * header), 3 * nic / (1.5 * header)), rel=1e-6)


def test_degraded_cluster_reads_cost_more_and_run_slower():
    healthy = _system(_cluster(clients=48))
    degraded = _system(_cluster(clients=48, failed_nodes=1))
    assert degraded.volume.wire_bytes_per_byte("read") == pytest.approx(5 / 6 + 4 / 6)
    h = _rate(healthy, healthy.volume.usage(Access("read", 2**20, "seq")))
    d = _rate(degraded, degraded.volume.usage(Access("read", 2**20, "seq")))
    assert d < h


def test_cluster_latency_adds_the_fabric_round_trip():
    system = _system(_cluster())
    b = 4096
    node = system.volume.node.pool.qd1_latency_s(Access("read", b, "rand"))
    assert system.volume.qd1_latency_s(Access("read", b, "rand")) == pytest.approx(node + fabric.request_latency_s("200gbe", "nvmeof-tcp", b))


def test_clients_are_one_aggregate_host():
    system = _system(_cluster(clients=12))
    one = _system(_cluster(clients=1))
    assert system.host.cpu.capacity == pytest.approx(12 * one.host.cpu.capacity)
    assert system.host.base_meter.idle_W == pytest.approx(12 * one.host.base_meter.idle_W)


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(6, 16), more=st.integers(0, 8), clients=st.integers(1, 32), extra=st.integers(0, 16),
       op=st.sampled_from(["read", "write"]))
def test_more_nodes_or_clients_never_slower(nodes: int, more: int, clients: int, extra: int, op: str):
    def rate(n: int, c: int) -> float:
        s = _system(_cluster(nodes=n, clients=c))
        usage = s.volume.usage(Access("read", 2**20, "seq")) if op == "read" else s.volume.usage(Access("write", 2**20, "seq"))
        return _rate(s, usage)

    base = rate(nodes, clients)
    assert rate(nodes + more, clients) >= base * (1 - 1e-9)
    assert rate(nodes, clients + extra) >= base * (1 - 1e-9)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"erasure_coding": "4-2"}, "expected k+m such as '4+2', found '4-2'"),
        ({"nodes": 5}, "places each stripe on 6 distinct nodes, found 5 nodes"),
        ({"failed_nodes": 3}, "survives at most 2 failed nodes, found 3"),
    ],
)
def test_bad_cluster_values_name_the_field(change: dict[str, Any], message: str):
    import yaml

    data = yaml.safe_load((LIB / "cluster" / "fio_ec42_6node_12clients.yaml").read_text())
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


@pytest.mark.xfail(strict=True, reason="known miss: 1 MiB sequential reads from the EC 4+2 cluster run at the clients' NIC "
                   "goodput exactly; per-request latency (fabric round trip, drive service, EC reassembly) never keeps them below it")
def test_cluster_1mib_reads_stay_below_nic_line_rate():
    """Oracle: the clients' NIC goodput (models.fabric: 12 x 200GbE less NVMe/TCP headers) is an upper bound that a
    closed loop of 32 requests per client reaches only if nothing but the NIC ever waits; with a fabric round trip and
    drive service per request, measured clusters deliver less (the bound is asymptotic, Little's law: X = N / R).
    1 MiB reads must stay at least 1 % below the line rate."""
    metrics = _cluster_fio_metrics()
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (2**20 / 4)
    bound = 12 * fabric.port_goodput_Bps("200gbe", rdma=False) / header
    assert metrics["read_bw_bytes"] < bound * 0.99


def test_cluster_unet3d_scenario_runs_within_the_network_bound():
    from iowatt.scenarios.run import run_scenario

    overrides = ["workload.accelerators=24", "workload.total_training_steps=6", "workload.search_au=false"]
    scenario = load(LIB / "cluster" / "unet3d_a100_ec42_6node_12clients.yaml", overrides)
    m = run_scenario(scenario)[0]["metrics"]
    header = 1 + fabric.PROTOCOLS["nvmeof-tcp"].header_bytes / (2**20 / 4)
    bound = 12 * fabric.port_goodput_Bps("200gbe", rdma=False) / header
    assert 0 < m["train_io_mean_MB_per_second"] * 2**20 <= bound * (1 + 1e-9)
    assert 0 < m["train_au_percentage"] <= 100.0
    # 24 A100s need 24 x 7 samples x 146.6 MB / 0.636 s = 38.7 GB/s, well under the cluster: AU near 100 %
    assert m["train_au_percentage"] > 80.0
