"""The parallel file system and object store kinds (simulator/storage/kinds/parallel_fs.py, object.py).

Oracles: conservation of bytes on the drives ((k+m)/k per byte written in full stripes);
operational analysis (the utilisation law: no station above its capacity; the asymptotic
bound X <= N / R0 of a closed loop; Little's law for fio's closed loop); the S3 multipart
limits (AWS docs: parts of 5 MiB..5 GiB); the Lustre manual's client window (at most
max_rpcs_in_flight RPCs per OST in flight: a window of one RPC is one RPC's round trip per
RPC); monotonicity in servers and clients (hypothesis).
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
from iowatt.models import object_store, parallel_fs
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.run import run_scenario
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access, registry
from iowatt.simulator.system import SystemConfig, SystemRuntime

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "cluster"
PFS_FIO = LIB / "parallel_fs_fio_4oss_16clients.yaml"
OBJ_FIO = LIB / "object_fio_8gw_16clients.yaml"
DRIVE = "micron-7450-pro"
MIB = 2.0**20


def _pfs(**overrides: Any) -> dict[str, Any]:
    storage = {"kind": "parallel_fs", "servers": 4, "drives_per_server": 12, "ost_raid": "8+2", "device": DRIVE,
               "fabric": "ib-ndr", "clients": 16, "stripe_count": 4}
    storage.update(overrides)
    return storage


def _obj(**overrides: Any) -> dict[str, Any]:
    storage = {"kind": "object", "gateways": 8, "drives_per_gateway": 12, "erasure_coding": "8+4", "device": DRIVE,
               "fabric": "200gbe", "clients": 16, "connections": 16}
    storage.update(overrides)
    return storage


def _system(storage: dict[str, Any]) -> SystemRuntime:
    engine = FlowEngine(simpy.Environment())
    return SystemRuntime(engine, SystemConfig.model_validate({"storage": storage}))


def test_both_kinds_are_registered_with_their_planning_facts():
    assert {"parallel_fs", "object"} <= set(registry.kind_names())
    pfs = _system(_pfs()).volume
    assert len(pfs.drives) == 48
    assert pfs.capacity_bytes == pytest.approx(48 * pfs.drives[0].capacity_bytes * 8 / 10)
    obj = _system(_obj()).volume
    assert len(obj.drives) == 96
    assert obj.capacity_bytes == pytest.approx(96 * obj.drives[0].capacity_bytes * 8 / 12)


@pytest.mark.parametrize(("storage", "expansion"), [(_pfs(), 10 / 8), (_obj(), 12 / 8)])
def test_full_stripe_writes_store_k_plus_m_over_k_bytes(storage: dict[str, Any], expansion: float):
    """Conservation: a full-stripe write of D bytes puts D (k+m)/k bytes on the drives."""
    system = _system(storage)
    data = 10e9
    block = 8 * MIB if storage["kind"] == "object" else MIB
    system.engine.start("write", data, system.volume.usage(Access("write", block, "seq", 64)))
    system.engine.run()
    on_drives = sum(d.report()["host_bytes_written"] for d in system.volume.drives)
    assert on_drives == pytest.approx(data * expansion, rel=1e-6)


@pytest.mark.parametrize("path", [PFS_FIO, OBJ_FIO])
@pytest.mark.parametrize("rw", ["read", "write"])
def test_fio_runs_at_the_loop_solution_below_every_station_and_obeys_littles_law(path: Path, rw: str):
    """Utilisation law (no station above 1), the named binding station is the loop's busiest, and Little's law
    N = X R over fio's requests in flight (numjobs x iodepth)."""
    doc = run_scenario(load(path, ["workload.runtime=1 s", f"workload.rw={rw}"]))[0]
    m, storage, wl = doc["metrics"], doc["storage"], load(path).workload
    assert max(storage["station_utilisation"].values()) <= 1.0 + 1e-6
    assert storage["binding_constraint"].split(" ")[0] in storage["station_utilisation"]
    outstanding = wl.numjobs * wl.iodepth
    assert m[f"{rw}_iops"] * m[f"{rw}_clat_mean_us"] * 1e-6 == pytest.approx(outstanding, rel=1e-6)


def test_one_rpc_in_flight_per_ost_bounds_a_client_by_its_round_trip():
    """The Lustre client window: with max_rpcs_in_flight 1 and a file system of one OST, one client has one RPC in
    flight, so it runs at most one RPC per unloaded round trip (the asymptotic bound X <= N / R0 with N = 1)."""
    volume = _system(_pfs(servers=1, clients=1, stripe_count=1, max_rpcs_in_flight=1)).volume
    access = Access("read", MIB, "seq", 1.0)
    r0 = volume.qd1_latency_s(access)
    deep = volume.solve(Access("read", MIB, "seq", 64.0))
    assert deep.throughput <= 1.0 / r0 * (1 + 1e-9)
    wide = _system(_pfs(servers=1, clients=1, stripe_count=1, max_rpcs_in_flight=32)).volume.solve(Access("read", MIB, "seq", 64.0))
    assert wide.throughput > 4.0 * deep.throughput


def test_rpc_split_conserves_bytes_and_respects_stripes_and_the_rpc_size():
    split = parallel_fs.rpc_split(8 * MIB, stripe_size=MIB, stripe_count=4, max_rpc_bytes=4 * MIB)
    assert (split.rpcs, split.rpc_bytes, split.osts) == (8, MIB, 4)
    small = parallel_fs.rpc_split(64 * 1024, stripe_size=MIB, stripe_count=4, max_rpc_bytes=MIB)
    assert (small.rpcs, small.osts) == (1, 1)


@settings(max_examples=60, deadline=None)
@given(block=st.floats(4096, 2**32), stripe=st.sampled_from([2**16, 2**20, 2**22]), count=st.integers(1, 64),
       pages=st.sampled_from([16, 256, 1024]))
def test_rpc_split_properties(block: float, stripe: int, count: int, pages: int):
    """Conservation (rpcs x rpc bytes = the request), no RPC over the smaller of a stripe and max_pages_per_rpc, and
    no more OSTs than the stripe count or the stripes the request spans."""
    split = parallel_fs.rpc_split(block, float(stripe), count, pages * 4096.0)
    assert split.rpcs * split.rpc_bytes == pytest.approx(block, rel=1e-12)
    assert split.rpc_bytes <= min(stripe, pages * 4096.0) * (1 + 1e-12)
    assert 1 <= split.osts <= min(count, math.ceil(block / stripe))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["read", "write"]), r=st.floats(4096, 2**22), k=st.integers(1, 16), m=st.integers(0, 4))
def test_ost_work_moves_at_least_the_rpc_and_rmw_only_below_a_full_stripe(op: str, r: float, k: int, m: int):
    """Reads move the RPC's bytes (or a page more); a write stores its data plus m parities of its chunks, and reads
    back only when it changes part of a stripe with parity (read-modify-write)."""
    chunk = parallel_fs.ost_chunk_bytes(k, 2**20)
    work = parallel_fs.ost_work(op, r, k, m, chunk)
    if op == "read":
        assert work.writes == 0 and work.reads * work.piece_bytes >= r * (1 - 1e-12)
    else:
        assert work.writes * work.piece_bytes >= r * (1 - 1e-12)
        assert (work.reads > 0) == (m > 0 and math.ceil(r / chunk) < k)


@settings(max_examples=40, deadline=None)
@given(block=st.floats(1.0, 2**36), part=st.floats(object_store.MIN_PART_BYTES, object_store.MAX_PART_BYTES))
def test_object_parts_conserve_bytes_within_the_s3_part_count(block: float, part: float):
    parts = object_store.split(block, part)
    assert parts.parts * parts.part_bytes == pytest.approx(block, rel=1e-12)
    assert 1 <= parts.parts <= object_store.MAX_PARTS


def test_an_object_read_pays_the_first_byte_latency_and_the_connection_rate():
    """A lone ranged GET of one part takes at least the first-byte latency plus its bytes at one connection's rate
    (the model's delays), and an object of P parts on >= P connections no more than one part's time plus queueing."""
    volume = _system(_obj(first_byte=0.01, connection_throughput_GBps=0.5)).volume
    one = volume.qd1_latency_s(Access("read", 8 * MIB, "seq", 1.0))
    assert one >= 0.01 + 8 * MIB / 0.5e9
    four = volume.qd1_latency_s(Access("read", 32 * MIB, "seq", 1.0))
    assert one < four < 2.0 * one


@settings(max_examples=12, deadline=None)
@given(servers=st.integers(1, 8), more=st.integers(1, 4), clients=st.integers(1, 32), op=st.sampled_from(["read", "write"]))
def test_more_servers_never_slower(servers: int, more: int, clients: int, op: str):
    access = Access(op, MIB, "seq", 16.0 * clients)
    base = _system(_pfs(servers=servers, clients=clients, stripe_count=1)).volume.solve(access).throughput
    bigger = _system(_pfs(servers=servers + more, clients=clients, stripe_count=1)).volume.solve(access).throughput
    assert bigger >= base * (1 - 1e-9)


@pytest.mark.parametrize(
    ("path", "change", "message"),
    [
        (PFS_FIO, {"stripe_count": 5}, "stripe_count: expected at most the 4 OSTs"),
        (PFS_FIO, {"servers": 0}, "servers"),
        (PFS_FIO, {"ost_raid": "8"}, "ost_raid: expected k+m"),
        (PFS_FIO, {"ost_raid": "12+2"}, "ost_raid: expected k+m of at most the 12 drives"),
        (PFS_FIO, {"max_rpcs_in_flight": 512}, "max_rpcs_in_flight"),
        (OBJ_FIO, {"part_size": "1 MiB"}, "part_size: expected 5 MiB to 5 GiB"),
        (OBJ_FIO, {"gateways": 0}, "gateways"),
        (OBJ_FIO, {"erasure_coding": "90+10"}, "erasure_coding: expected k+m of at most the 96 drives"),
    ],
)
def test_bad_values_name_the_field(path: Path, change: dict[str, Any], message: str):
    data = yaml.safe_load(path.read_text())
    data["system"]["storage"].update(change)
    with pytest.raises(ScenarioError) as error:
        load(data)
    assert message in str(error.value)


LIBRARY = sorted([*LIB.glob("parallel_fs_*.yaml"), *LIB.glob("object_*.yaml")])
SHRINK = {"dlio": ["workload.total_training_steps=8", "workload.search_au=false"], "fio": ["workload.runtime=1 s"], "checkpoint": []}
HEADLINE = {"dlio": "train_io_mean_MB_per_second", "fio": "bw_bytes", "checkpoint": "save_checkpoint_duration_mean_seconds"}


def test_the_library_has_every_file_workload_on_both_kinds():
    """fio, DLIO, checkpoint with `mlperf:` rules, and async / tiered saves, each on a parallel_fs and an object store."""
    for prefix in ("parallel_fs", "object"):
        docs = [yaml.safe_load(p.read_text()) for p in LIBRARY if p.name.startswith(prefix)]
        kinds = {d["workload"]["kind"] for d in docs}
        assert kinds == {"fio", "dlio", "checkpoint"}
        assert any("mlperf" in d["workload"] for d in docs)
        assert any(d["workload"].get("save", {}).get("mode") in ("async", "tiered") for d in docs)


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_library_scenarios_run_and_name_their_binding_station(path: Path):
    """Each runs (shrunk), reports its headline metric (finite, > 0) and a binding station below or at capacity."""
    kind = load(path).workload.kind
    doc = run_scenario(load(path, SHRINK[kind]))[0]
    value = doc["metrics"][HEADLINE[kind]]
    assert value == value and value > 0.0
    assert max(doc["storage"]["station_utilisation"].values()) <= 1.0 + 1e-6
    assert doc["storage"]["binding_constraint"]


def test_the_cluster_kind_and_its_volume_import_one_way():
    """Oracle: the layering rule of docs/architecture.md, every import counted (lazy and TYPE_CHECKING ones too): the
    cluster's volume and config never import the kind's module, so kinds/cluster -> cluster_volume -> cluster_config
    is one way (before: kinds/cluster imported the volume lazily and the volume imported the kind for its type)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "simulator" / "storage"

    def imports(path: Path) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        return found

    kind = "iowatt.simulator.storage.kinds.cluster"
    assert kind not in imports(root / "cluster_volume.py")
    assert kind not in imports(root / "cluster_config.py")
    assert "iowatt.simulator.storage.cluster_volume" not in imports(root / "cluster_config.py")
