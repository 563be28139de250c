"""Checkpoint save designs (workload.save): blocking, async and tiered saves on local, NFS and cluster storage,
many hosts, per-host limits, restore at scale."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import erasure
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

# The H100's device-to-host copy: PCIe Gen5 x16 payload 57.6 GB/s x the measured copy efficiency 0.92
# (catalog gpu.yaml, G15: nvbandwidth 52.8 GB/s); the payload rate is stated to 3 digits, hence rel=1e-3 below.
D2H_Bps = 57.6e9 * 0.92
H2D_Bps = D2H_Bps

STORAGE: dict[str, dict[str, Any]] = {
    "local": {"device": "micron-7450-pro", "count": 2},
    "nfs": {"kind": "nfs", "export": {"kind": "local", "device": "micron-7450-pro", "count": 4}, "fabric": "ib-ndr", "clients": 2},
    "cluster": {"kind": "cluster", "nodes": 4, "drives_per_node": 2, "device": "micron-7450-pro", "erasure_coding": "2+1",
                "fabric": "200gbe", "clients": 2},
}
STAGE = {"kind": "local", "device": "micron-7450-pro", "count": 1}


def _scenario(storage: str, mode: str, *, size: str = "80 GB", ranks: int = 8, gpus: int | None = None, count: int = 2,
              interval: float = 30.0, stage: Any = "memory", **save: Any) -> dict[str, Any]:
    hosts = int(STORAGE[storage].get("clients", 1))
    return {
        "name": f"{storage}_{mode}",
        "seed": 3,
        "system": {
            "server": {"cpu": "amd-epyc-9654", "sockets": 2, "memory": "512 GB"},
            "gpus": {"model": "nvidia-h100-sxm", "count": gpus if gpus is not None else ranks * hosts},
            "storage": copy.deepcopy(STORAGE[storage]),
        },
        "workload": {
            "kind": "checkpoint", "size": size, "ranks": ranks * hosts if gpus is None else ranks, "count": count,
            "interval": interval, "copy_from_gpu": True,
            "save": {"mode": mode, "stage": stage, **save},
        },
    }


def _run(data: dict[str, Any], *overrides: str) -> dict[str, Any]:
    doc, _sim = run_scenario(load(data, list(overrides)))
    return doc


@pytest.mark.parametrize("storage", sorted(STORAGE))
@pytest.mark.parametrize("mode", ["blocking", "async", "tiered", "tiered_drives"])
def test_three_designs_run_on_every_shared_storage_and_conserve_bytes_per_tier(storage, mode):
    """Oracle: conservation.  Every checkpoint byte reaches each tier of its design once: the stage drives'
    own counters hold size x count, system.storage's drives hold size x count x the code's expansion
    ((k+m)/k for a cluster, plus each write's extent metadata on m + 1 nodes, models.erasure; 1 for striped drives
    behind NFS or in the host); durable comes after the stall."""
    stage = STAGE if mode == "tiered_drives" else "memory"
    doc = _run(_scenario(storage, mode.removesuffix("_drives"), stage=stage))
    m = doc["metrics"]
    checkpoint_GB = m["checkpoint_size_GB"] * m["checkpoint_count"]
    assert m["checkpoint_size_GB"] == pytest.approx(80.0)
    durable_GB = checkpoint_GB
    if storage == "cluster":  # 2+1: 1.5 bytes per byte, and 2 x 20 B of metadata per 1 MiB write request
        durable_GB = checkpoint_GB * 1.5 + checkpoint_GB * 1e9 / 2**20 * 2 * erasure.METADATA_BYTES_PER_WRITE / 1e9
    assert m["tier_durable_drive_bytes_written_total_GB"] == pytest.approx(durable_GB, rel=1e-6)
    assert m["tier_stage_drive_bytes_written_total_GB"] == pytest.approx(checkpoint_GB if stage != "memory" else 0.0, rel=1e-6, abs=1e-9)
    assert m["tier_host_memory_bytes_total_GB"] == pytest.approx(0.0 if mode == "blocking" else checkpoint_GB)
    for marks in doc["checkpoint"]["checkpoints"]:
        assert marks["start_s"] <= marks["stall_end_s"] <= marks["durable_s"] + 1e-9
        if stage != "memory":
            assert marks["staged_s"] <= marks["durable_s"] + 1e-9
    assert m["checkpoint_durable_after_mean_seconds"] >= m["checkpoint_stall_mean_seconds"]
    assert m["tier_durable_energy_per_checkpoint_J"] > 0.0
    assert (m["tier_stage_energy_per_checkpoint_J"] > 0.0) == (stage != "memory")


@settings(max_examples=12, deadline=None)
@given(size_GB=st.floats(8.0, 400.0), ranks=st.sampled_from([1, 2, 4, 8]), storage=st.sampled_from(sorted(STORAGE)))
def test_async_stall_is_the_device_to_host_copy_when_storage_is_idle(size_GB, ranks, storage):
    """Oracle: theory.  With nothing else on the GPU links and host DRAM not binding (2 sockets: 720 GB/s >
    8 x 53 GB/s), the first async checkpoint stalls training exactly for one shard's device-to-host copy
    at the GPU's measured copy rate; the write runs afterwards in the background."""
    doc = _run(_scenario(storage, "async", size=f"{size_GB} GB", ranks=ranks, count=1))
    hosts = int(STORAGE[storage].get("clients", 1))
    shard = size_GB * 1e9 / (ranks * hosts)
    stall = doc["metrics"]["checkpoint_stall_mean_seconds"]
    assert stall == pytest.approx(shard / D2H_Bps, rel=1e-3)
    assert doc["metrics"]["checkpoint_durable_after_mean_seconds"] > stall


def test_async_stall_is_bound_by_host_memory_when_the_gpus_outrun_it():
    """Oracle: theory.  On one socket of an EPYC 9654 (360 GB/s of DRAM, catalog: 12 channels DDR5-4800 x 0.78)
    eight GPUs copying at 53 GB/s each would need 424 GB/s: the host's DRAM bounds the stall, one DRAM write
    per byte, so the copy of the host's shards takes their bytes / 360 GB/s."""
    data = _scenario("local", "async", size="400 GB", count=1)
    data["system"]["server"]["sockets"] = 1
    stall = _run(data)["metrics"]["checkpoint_stall_mean_seconds"]
    assert stall == pytest.approx(400e9 / 360e9, rel=1e-6)


def test_async_degrades_to_blocking_when_the_write_is_slower_than_the_interval():
    """Oracle: the pipeline.  An async rank reuses its host buffer only when its previous write has returned,
    so with compute I shorter than the write W the next checkpoint waits W - I and then copies (d): the
    steady stall is W - I + d.  With I = 0 that is the blocking save plus the copy, never less than blocking
    (O_DIRECT, so W is the write itself, not the page cache)."""
    base = _scenario("local", "blocking", size="400 GB", count=3, interval=0.0)
    blocking = _run(base, "workload.io_path=direct")["metrics"]
    write = blocking["checkpoint_stall_mean_seconds"]  # the blocking save: copy and write in one stream, the drive binds
    copy_seconds = 400e9 / 8 / D2H_Bps
    for interval in (0.0, write / 2):
        doc = _run(base, "workload.io_path=direct", "workload.save.mode=async", f"workload.interval={interval}")
        stall = doc["metrics"]["checkpoint_stall_last_seconds"]
        assert stall == pytest.approx(write - interval + copy_seconds, rel=1e-3)
    assert stall >= blocking["checkpoint_stall_mean_seconds"] - interval  # as slow as blocking, less the compute it overlaps
    fast = _run(base, "workload.io_path=direct", "workload.save.mode=async", f"workload.interval={2 * write}")["metrics"]
    assert fast["checkpoint_stall_last_seconds"] == pytest.approx(copy_seconds, rel=1e-3)  # the write fits the interval


def test_the_slowest_host_decides_through_its_own_nic():
    """Oracle: theory.  Two client hosts of 16 ranks share a 100 GbE cluster fabric; data-parallel rank 0's
    host writes the weights and half the optimizer state, the other host half the optimizer state.  Each
    host has one NIC port, and 16 serializing ranks (2 GB/s each) could fill more than it: the heavy host's
    bytes x (k+m)/k through its own port decide the durable time (plus its copy and the protocol headers),
    whatever the other host's port has spare.  An aggregate of both ports would end near the mean, 13 % sooner."""
    data = _scenario("cluster", "async", ranks=32, gpus=32, count=1)
    # the clients code (DAOS-like, so the (k+m)/k bytes cross their ports) with enough frontend cores that the
    # NIC port, not the storage software, is each host's narrowest station
    data["system"]["storage"].update(nodes=8, drives_per_node=4, fabric="100gbe", node_nics=2, client={"frontend_cores": 16},
                                     software={"erasure_at": "client"})
    data["workload"].update(parameters=10e9, tp=16, pp=1, dp=2, zero_stage=1, io_path="direct")
    for key in ("ranks", "size"):
        data["workload"].pop(key)
    doc = _run(data)
    from iowatt.models.fabric import port_goodput_Bps

    heavy_host = 10e9 * 2 + 10e9 * 12 / 2  # weights (dp rank 0 only) + half the optimizer state
    assert sum(doc["checkpoint"]["shard_GB"][:16]) == pytest.approx(heavy_host / 1e9)
    bound = heavy_host / 16 / D2H_Bps + heavy_host * 1.5 / port_goodput_Bps("100gbe", False, 1)  # copy, then 2+1 coded bytes
    durable = doc["metrics"]["checkpoint_durable_after_mean_seconds"]
    assert bound * (1 - 1e-3) <= durable <= bound * 1.01


def test_rank_jitter_delays_the_stall_by_the_slowest_rank():
    """Oracle: order statistics.  Each rank starts its copy after its own uniform delay in [0, J]; training
    resumes after the slowest, so the stall lies between the copy and J + the copy, and grows with J."""
    copy_seconds = 80e9 / 8 / D2H_Bps
    stalls = []
    for jitter in (0.0, 0.5, 2.0):
        m = _run(_scenario("local", "async", count=3, rank_jitter=jitter))["metrics"]
        assert copy_seconds * (1 - 1e-3) <= m["checkpoint_stall_max_seconds"] <= copy_seconds + jitter + 1e-9
        stalls.append(m["checkpoint_stall_mean_seconds"])
    assert stalls[0] < stalls[1] < stalls[2]


def test_restore_at_scale_reads_every_shard_from_the_chosen_tier():
    """Oracle: theory.  A restore from the host copy (tiered, memory stage) only copies each shard to its
    GPU: one shard / the host-to-device rate; from the stage drives or system.storage it cannot beat that."""
    memory = _run(_scenario("cluster", "tiered"), "workload.restore=true", "workload.save.restore_from=local")["metrics"]
    shard = 80e9 / 16  # two client hosts of 8 ranks
    assert memory["load_checkpoint_duration_mean_seconds"] == pytest.approx(shard / H2D_Bps, rel=1e-3)
    drives = _run(_scenario("cluster", "tiered", stage=STAGE), "workload.restore=true", "workload.save.restore_from=local")["metrics"]
    durable = _run(_scenario("cluster", "tiered", stage=STAGE), "workload.restore=true")["metrics"]
    assert drives["load_checkpoint_duration_mean_seconds"] > memory["load_checkpoint_duration_mean_seconds"]
    assert durable["load_checkpoint_duration_mean_seconds"] > memory["load_checkpoint_duration_mean_seconds"]


def test_the_loader_waits_for_background_writes_on_shared_storage():
    """Oracle: conservation of the loader's bytes.  The data loader reads rate x interval per step; alone it
    keeps up (no delay); an async write on the same drives takes part of their bandwidth, so a step whose
    loader asks more than the drives have left ends late."""
    quiet = _run(_scenario("local", "blocking", count=1, loader_rate="1 GB/s"))["metrics"]
    assert quiet["loader_delay_mean_seconds"] == pytest.approx(0.0, abs=1e-9)
    busy = _run(_scenario("local", "async", count=2, interval=5.0, loader_rate="10 GB/s"), "workload.io_path=direct")["metrics"]
    assert busy["loader_delay_mean_seconds"] > 0.0


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("workload.copy_from_gpu=false", "workload.save"),
        ("workload.save.restore_from=local", "workload.save.restore_from"),
        ("system.server.memory=10 GB", "workload.save.mode"),
        ("workload.passes=2", "workload.passes"),
    ],
)
def test_impossible_designs_name_the_field(override, field):
    from iowatt.simulator.workloads import WorkloadConfigError

    data = _scenario("local", "async")
    with pytest.raises(WorkloadConfigError, match=field.replace(".", r"\.")):
        _run(data, override)


def test_mlperf_scale_one_trillion_parameters_on_1024_processes():
    """Oracle: theory.  MLPerf Storage's 1T checkpoint (TP 8 x PP 64 x DP 2 = 1,024 processes) from 128 hosts
    to the library's 6-node cluster: the async stall is one heavy shard's copy (weights / 512 + optimizer /
    1,024 at 53 GB/s), and no byte is durable before the cluster's node ports have carried every coded byte
    ((4+2)/4 of the checkpoint through 6 nodes x 2 x 200 GbE)."""
    from pathlib import Path

    from iowatt.models.fabric import port_goodput_Bps

    library = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "checkpoint_designs"
    doc = _run(load(library / "llama405b_64x8_cluster_async.yaml", []).model_dump(mode="json"),
               "workload.model=llama3_1t", "gpus.count=1024", "storage.clients=128", "workload.count=1")
    m = doc["metrics"]
    assert m["checkpoint_writer_ranks_count"] == 1024 and m["ranks_per_host_count"] == 8
    weights, optimizer = 2571 * 2**30, 2571 * 2**30 * 6  # the preset's fp16 weights and 12 B/param of Adam state
    assert m["checkpoint_stall_last_seconds"] == pytest.approx((weights / 512 + optimizer / 1024) / D2H_Bps, rel=1e-3)
    coded = m["checkpoint_size_GB"] * 1e9 * 1.5
    assert m["checkpoint_durable_after_last_seconds"] >= coded / (6 * port_goodput_Bps("200gbe", False, 2))
