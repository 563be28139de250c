"""RAID laws (models.array) and the array / NFS runtimes (simulator.volumes) against closed forms.

Oracles: the RAID capacity and write-penalty closed forms (Patterson et al. 1988),
an exhaustive count over a left-symmetric RAID 5 layout (every stripe, every chunk)
for the degraded costs, single-drive flow rates scaled by the per-drive load that the
law predicts, and the fabric's payload rate for NFS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import simpy
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import array as raid
from iowatt.models import fabric, host_io
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access, registry
from iowatt.simulator.system import SystemConfig, SystemRuntime
from typer.testing import CliRunner

from iowatt.cli import app

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library"
SU = 512 * 1024
SSD = "micron-5210-ion"


# ---------------------------------------------------------------------------- pure laws


@pytest.mark.parametrize("n", [4, 5, 8, 16])
def test_usable_capacity_closed_forms(n: int):
    c = 3.84e12
    assert raid.usable_capacity_bytes(0, n, c) == n * c
    assert raid.usable_capacity_bytes(1, n, c) == c
    assert raid.usable_capacity_bytes(5, n, c) == (n - 1) * c
    assert raid.usable_capacity_bytes(6, n, c) == (n - 2) * c
    if n % 2 == 0:
        assert raid.usable_capacity_bytes(10, n, c) == n / 2 * c


@pytest.mark.parametrize("n", [4, 6, 8, 16])
def test_small_write_penalty(n: int):
    b = 4096
    r5 = raid.io_load(5, n, "write", b, SU)
    assert r5.drive_ios == 4  # read data + parity, write data + parity
    assert r5.read_total == pytest.approx(2.0) and r5.write_total == pytest.approx(2.0)
    if n >= 6:  # below 6 drives reconstruct-write reads fewer blocks than read-modify-write
        r6 = raid.io_load(6, n, "write", b, SU)
        assert r6.drive_ios == 6
        assert r6.read_total == pytest.approx(3.0) and r6.write_total == pytest.approx(3.0)
    assert raid.io_load(0, n, "write", b, SU).drive_ios == 1
    assert raid.io_load(1, n, "write", b, SU).drive_ios == n
    assert raid.io_load(10, n, "write", b, SU).drive_ios == 2


def test_three_drive_raid5_prefers_reconstruct_write():
    # rcw reads the one other data chunk (1 read) instead of old data + parity (2): 3 I/Os, as md picks
    load = raid.io_load(5, 3, "write", 4096, SU)
    assert load.drive_ios == 3 and load.read_total == pytest.approx(1.0) and load.write_total == pytest.approx(2.0)


@pytest.mark.parametrize(("level", "n"), [(5, 4), (5, 16), (6, 6), (6, 12)])
def test_full_stripe_writes_read_nothing_and_write_n_over_d(level: int, n: int):
    d = raid.data_drives(level, n)
    load = raid.io_load(level, n, "write", raid.full_stripe_bytes(level, n, SU), SU)
    assert load.read_total == 0.0
    assert load.write_total == pytest.approx(n / d)
    seq = raid.io_load(level, n, "write", 128 * 1024, SU, sequential=True)  # gathered into full stripes
    assert seq.write_total == pytest.approx(n / d) and seq.read_total == 0.0


@pytest.mark.parametrize("level", [0, 1, 5, 6, 10])
def test_healthy_reads_read_each_byte_once(level: int):
    load = raid.io_load(level, 8, "read", 65536, SU)
    assert load.read_total == pytest.approx(1.0) and load.write_total == 0.0
    assert max(load.read) == pytest.approx(min(load.read))  # rotated parity / balanced mirrors


def _left_symmetric(n: int, stripe: int) -> tuple[int, list[int]]:
    """Parity drive and data drives (in order) of a stripe in md's left-symmetric RAID 5 layout."""
    parity = n - 1 - stripe % n
    return parity, [(parity + 1 + j) % n for j in range(n - 1)]


@pytest.mark.parametrize("n", [4, 7, 16])
def test_degraded_raid5_costs_match_an_exhaustive_layout_count(n: int):
    failed = n - 1
    reads = [0.0] * n
    writes_r = [0.0] * n
    writes_w = [0.0] * n
    cases = 0
    for stripe in range(n):  # one full rotation of the layout
        parity, data = _left_symmetric(n, stripe)
        for target in data:
            cases += 1
            # small read of the chunk on `target`
            if target == failed:
                for x in [*data, parity]:
                    if x != failed:
                        reads[x] += 1  # reconstruct from every survivor
            else:
                reads[target] += 1
            # small write of the chunk on `target`
            if target == failed:  # reconstruct-write: read other data, write parity
                for x in data:
                    if x != target:
                        writes_r[x] += 1
                writes_w[parity] += 1
            elif parity == failed:  # parity gone: write data only
                writes_w[target] += 1
            else:  # read-modify-write
                writes_r[target] += 1
                writes_r[parity] += 1
                writes_w[target] += 1
                writes_w[parity] += 1
    read_law = raid.io_load(5, n, "read", 4096, SU, failed=failed)
    write_law = raid.io_load(5, n, "write", 4096, SU, failed=failed)
    for i in range(n):
        assert read_law.read[i] == pytest.approx(reads[i] / cases)
        assert write_law.read[i] == pytest.approx(writes_r[i] / cases)
        assert write_law.write[i] == pytest.approx(writes_w[i] / cases)
    assert read_law.read_total == pytest.approx(2 * (n - 1) / n)  # closed form


def test_raid10_degraded_partner_takes_the_pair():
    load = raid.io_load(10, 8, "read", 4096, SU, failed=5)
    assert load.read[5] == 0.0 and load.read[4] == pytest.approx(2 / 8)
    assert load.read_total == pytest.approx(1.0)


def test_rebuild_reads_per_rebuilt_byte():
    assert sum(raid.rebuild_reads(5, 8, 7)) == pytest.approx(7)  # XOR of the 7 survivors
    assert sum(raid.rebuild_reads(6, 8, 7)) == pytest.approx(6)  # d chunks suffice
    assert raid.rebuild_reads(10, 8, 3)[2] == 1.0  # the mirror partner


@settings(max_examples=40, deadline=None)
@given(level=st.sampled_from([1, 5, 6, 10]), n=st.integers(4, 24), b=st.sampled_from([4096, 16384, 131072, 2**20]))
def test_degraded_never_cheaper_than_healthy(level: int, n: int, b: int):
    if level == 10 and n % 2:
        n += 1
    healthy = raid.io_load(level, n, "read", b, SU)
    degraded = raid.io_load(level, n, "read", b, SU, failed=n - 1)
    # the busiest drive never carries less after a failure
    assert max(degraded.read) >= max(healthy.read) - 1e-12


def test_geometry_errors_name_the_problem():
    with pytest.raises(ValueError, match="RAID 6 needs at least 4 drives, found 3"):
        raid.check_geometry(6, 3)
    with pytest.raises(ValueError, match="even number"):
        raid.check_geometry(10, 5)
    with pytest.raises(ValueError, match="found 7"):
        raid.check_geometry(7, 8)


# ---------------------------------------------------------------------------- runtimes


def _system(storage: dict[str, Any]) -> SystemRuntime:
    env = simpy.Environment()
    engine = FlowEngine(env)
    return SystemRuntime(engine, SystemConfig.model_validate({"storage": storage}))


def _rate(system: SystemRuntime, usage: list) -> float:
    """Steady rate of one flow over `usage` (bytes per second)."""
    engine = system.engine
    flow = engine.start("probe", 1e9, usage)
    engine.env.run(until=1e-9)
    return flow.rate


def test_raid_volume_capacity_and_drive_count():
    system = _system({"kind": "raid", "level": 5, "count": 8, "device": SSD})
    spec = system.volume.drives[0].spec
    assert system.volume.capacity_bytes == pytest.approx(7 * spec.capacity_bytes)
    assert len(system.volume.drives) == 8


@pytest.mark.parametrize("n", [4, 8])
def test_full_stripe_vs_partial_stripe_write_throughput(n: int):
    # oracle: one drive alone, measured through its own runtime, scaled by the per-drive load of the law
    single = _system({"device": SSD})
    drive = single.volume.drives[0]
    seq_single = _rate(single, drive.usage(Access("write", SU, "seq"), 1.0))
    # md's stripe workers (group_thread_cnt) well above one raid5d thread isolate the drives' work per byte
    array = _system({"kind": "raid", "level": 5, "count": n, "device": SSD, "md_group_threads": 64})
    seq_array = _rate(array, array.volume.usage(Access("write", 2**20, "seq")))
    # full stripes: each drive writes 1/(n-1) per host byte -> (n-1) x one drive
    assert seq_array == pytest.approx((n - 1) * seq_single, rel=1e-6)

    b = 4096.0
    mixed_single = _system({"device": SSD})
    d0 = mixed_single.volume.drives[0]
    mix = [(c, 0.5 * k) for c, k in d0.usage(Access("read", b, "rand"), 1.0)]
    mix += [(c, 0.5 * k) for c, k in d0.usage(Access("write", b, "rand"), 1.0)]
    mixed_rate = _rate(mixed_single, mix)  # one drive doing equal bytes of reads and writes
    array2 = _system({"kind": "raid", "level": 5, "count": n, "device": SSD, "md_group_threads": 64})
    small = _rate(array2, array2.volume.usage(Access("write", b, "rand")))
    # read-modify-write: each drive reads 2/n and writes 2/n per host byte = (4/n) x the 50/50 mix
    assert small == pytest.approx(n / 4 * mixed_rate, rel=1e-6)
    assert small < seq_array


def test_degraded_small_reads_halve_raid5_throughput():
    healthy = _system({"kind": "raid", "level": 5, "count": 8, "device": SSD})
    degraded = _system({"kind": "raid", "level": 5, "count": 8, "device": SSD, "degraded": True})
    h = _rate(healthy, healthy.volume.usage(Access("read", 4096, "rand")))
    d = _rate(degraded, degraded.volume.usage(Access("read", 4096, "rand")))
    # survivors each read 2/n instead of 1/n per host byte
    assert d == pytest.approx(h / 2, rel=1e-6)


def test_rebuild_takes_its_share_of_the_bottleneck():
    degraded = _system({"kind": "raid", "level": 5, "count": 8, "device": SSD, "degraded": True})
    rebuilding = _system({"kind": "raid", "level": 5, "count": 8, "device": SSD, "rebuild": True, "rebuild_share": 0.3})
    d = _rate(degraded, degraded.volume.usage(Access("read", 4096, "rand")))
    r = _rate(rebuilding, rebuilding.volume.usage(Access("read", 4096, "rand")))
    rate = rebuilding.volume.rebuild_rate_Bps
    assert rate > 0
    # oracle, on the untouched drives of the degraded array: the rebuild stream reads 1 byte from each of
    # the 7 survivors per byte written to the replacement; its busiest resource runs at exactly 30 %
    drives = degraded.volume.drives
    survivors = [(c, k) for dr in drives[:-1] for c, k in dr.usage(Access("read", SU, "seq"), 1.0)]
    spare = list(drives[-1].usage(Access("write", SU, "seq"), 1.0))
    from iowatt.simulator.storage.shared import bottleneck_share

    assert max(bottleneck_share(survivors, rate), bottleneck_share(spare, rate)) == pytest.approx(0.3)
    # foreground reads keep what the rebuild leaves of each survivor's busiest resource
    assert r == pytest.approx(d * (1 - bottleneck_share(survivors[: len(survivors) // 7], rate)), rel=0.02)
    spec = drives[0].spec
    assert rebuilding.volume.rebuild_seconds() == pytest.approx(spec.capacity_bytes / rate)


def test_hdd_raid5_reads_scale_with_drives():
    one = _system({"device": "hdd-7200rpm-sas-8tb"})
    array = _system({"kind": "raid", "level": 5, "count": 8, "device": "hdd-7200rpm-sas-8tb"})
    r1 = _rate(one, one.volume.drives[0].usage(Access("read", 131072, "rand"), 1.0))
    r8 = _rate(array, array.volume.usage(Access("read", 131072, "rand")))
    assert r8 == pytest.approx(8 * r1, rel=1e-6)  # each of 8 disks serves 1/8 of the 128 KiB reads


# ---------------------------------------------------------------------------- NFS


def _nfs(export: dict[str, Any], protocol: str = "rdma", fabric_name: str = "ib-edr") -> SystemRuntime:
    return _system({"kind": "nfs", "protocol": protocol, "fabric": fabric_name, "export": export})


def test_nfs_caps_bandwidth_at_the_fabric():
    fast = {"kind": "raid", "level": 0, "count": 8, "device": "micron-9550-pro"}
    local = _system(fast)
    nfs = _nfs(fast)
    local_rate = _rate(local, local.volume.usage(Access("read", 2**20, "seq")))
    nfs_rate = _rate(nfs, nfs.volume.usage(Access("read", 2**20, "seq")))
    cap = fabric.protocol_goodput_Bps("ib-edr", "nfs-rdma", 2**20)
    assert local_rate > cap  # eight Gen5 drives out-run one EDR port
    assert nfs_rate == pytest.approx(cap, rel=1e-6)


def test_nfs_adds_the_fabric_latency():
    export = {"kind": "raid", "level": 5, "count": 16, "device": SSD}
    nfs = _nfs(export)
    b = 131072
    inner = nfs.volume.inner.qd1_latency_s(Access("read", b, "rand"))
    # the nfsd thread's CPU for the RPC, the export's read, the RPC round trip and the data's serialisation
    cpu = fabric.PROTOCOLS["nfs-rdma"].server_cpu_s_per_op
    assert nfs.volume.qd1_latency_s(Access("read", b, "rand")) == pytest.approx(cpu + inner + fabric.request_latency_s("ib-edr", "nfs-rdma", b))
    tcp = _nfs(export, "tcp")
    assert tcp.volume.qd1_latency_s(Access("read", b, "rand")) > nfs.volume.qd1_latency_s(Access("read", b, "rand"))


def test_nfs_tcp_costs_client_cpu_per_byte():
    export = {"kind": "local", "count": 1, "device": SSD}
    tcp = _nfs(export, "tcp", "100gbe")
    b = 2**20
    cpu = sum(k for c, k in tcp.volume.usage(Access("read", b, "seq")) if c is tcp.host.cpu)
    cost = fabric.PROTOCOLS["nfs-tcp"]
    assert cpu == pytest.approx(cost.client_cpu_s_per_byte + cost.client_cpu_s_per_op / b)


# ---------------------------------------------------------------------------- scenarios and errors


def test_every_existing_library_scenario_still_loads():
    files = sorted(LIB.glob("**/*.yaml"))
    assert files
    for path in files:
        scenario = load(path, [])
        assert scenario.system.storage.kind in registry.kind_names()


def test_amax_nfs_raid5_scenarios_resolve_to_16_drive_arrays():
    for name in ("fio_5210_raid5_nfs", "fio_hdd_raid5_nfs"):
        scenario = load(LIB / "amax" / f"{name}.yaml", [])
        storage = scenario.system.storage
        assert storage.kind == "nfs" and storage.protocol == "rdma" and storage.fabric == "ib-edr"
        assert storage.export.kind == "raid" and storage.export.level == 5 and storage.export.count == 16


def _amax_nfs(**export: Any) -> dict[str, Any]:
    data = yaml.safe_load((LIB / "amax" / "fio_5210_raid5_nfs.yaml").read_text())
    data["system"]["storage"]["export"].update(export)
    return data


@pytest.mark.parametrize(
    ("where", "change", "message"),
    [
        ("export", {"count": 2}, "system.storage.export: count: RAID 5 needs at least 3 drives, found 2"),
        ("export", {"level": 7}, "system.storage.export.level: expected 0, 1, 5, 6 or 10, found 7"),
        ("export", {"kind": "cluster"}, "kind: expected one of local, raid, found 'cluster'"),
        ("storage", {"fabric": "ib-xdr"}, "system.storage.fabric: expected 'ib-edr'"),
        ("storage", {"kind": "tape"}, "kind: expected one of local, cluster, nfs, object, parallel_fs, raid, found 'tape'"),
    ],
)
def test_bad_storage_values_name_the_field(where: str, change: dict[str, Any], message: str):
    if where == "export":
        data = _amax_nfs(**change)
    else:
        data = _amax_nfs()
        data["system"]["storage"].update(change)
    with pytest.raises(ScenarioError) as error:
        load(data)
    assert message in str(error.value)


def test_cli_bad_raid_exits_2_without_traceback(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_amax_nfs(level=6, count=3)))
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "count: RAID 6 needs at least 4 drives, found 3" in result.output


def test_raid0_cannot_be_degraded():
    with pytest.raises(ValueError, match="RAID 0"):
        SystemConfig.model_validate({"storage": {"kind": "raid", "level": 0, "count": 4, "device": SSD, "degraded": True}})


@settings(max_examples=25, deadline=None)
@given(level=st.sampled_from([0, 1, 5, 6, 10]), n=st.integers(4, 12), extra=st.integers(1, 6),
       op=st.sampled_from(["read", "write"]), block=st.sampled_from([4096, 131072, 2**20]), pattern=st.sampled_from(["seq", "rand"]))
def test_more_drives_never_slower(level: int, n: int, extra: int, op: str, block: int, pattern: str):
    if level == 10:
        n, extra = n + n % 2, extra + extra % 2
    rates = []
    for count in (n, n + extra):
        # the drives' side: md's CPU made negligible.  md itself can slow with more drives: a partial-stripe RAID 5/6
        # write reads more of a wider stripe, page by page (tests/test_nfs_md_fields.py has md's own law)
        system = _system({"kind": "raid", "level": level, "count": count, "device": SSD, "md_cpu_us_per_device_io": 1e-3,
                          "md_parity_GBps_per_core": 1000.0})
        usage = system.volume.usage(Access("read", block, pattern)) if op == "read" else system.volume.usage(Access("write", block, pattern))
        rates.append(_rate(system, usage))
    if level == 1 and op == "write":
        assert rates[1] == pytest.approx(rates[0], rel=1e-9)  # every mirror writes everything
    else:
        assert rates[1] >= rates[0] * (1 - 1e-9)


# ---------------------------------------------------------------------------- workloads run unchanged on arrays and NFS


def _checkpoint_on(storage: dict[str, Any], **workload: Any) -> dict[str, Any]:
    from iowatt.scenarios.run import run_scenario

    data = yaml.safe_load((LIB / "checkpoint_llama405b_8gpu.yaml").read_text())
    data["system"]["storage"] = storage
    data["workload"].update(workload)
    return run_scenario(load(data))[0]


def test_checkpoint_through_nfs_is_capped_by_the_fabric_and_conserves_bytes():
    # md's stripe workers (group_thread_cnt 16) lift the one raid5d thread's page-by-page write path (~1.6 GB/s on
    # the server's core) above the port, so that the port is what binds
    export = {"kind": "raid", "level": 5, "count": 8, "device": "micron-6550-ion", "md_group_threads": 16}
    doc = _checkpoint_on({"kind": "nfs", "protocol": "rdma", "fabric": "ib-edr", "export": export})
    m = doc["metrics"]
    size = 415e9
    # eight Gen5 drives out-run one EDR port: the save runs at the RPC/RDMA payload rate of 1 MiB writes
    assert m["save_checkpoint_io_mean_GB_per_second"] * 1e9 == pytest.approx(fabric.protocol_goodput_Bps("ib-edr", "nfs-rdma", 2**20), rel=0.01)
    # full-stripe RAID 5 writes: the drives receive size x n / (n - 1)
    on_drives = sum(r["host_bytes_written"] for r in doc["checkpoint"]["drives"])
    assert on_drives == pytest.approx(size * 8 / 7, rel=1e-6)
    # the NFS server's CPU and base power are part of the system energy
    assert doc["energy"]["by_group_J"]["storage_server"] > 0


def test_checkpoint_on_raid5_runs_at_the_data_drives_rate():
    # md's stripe workers (group_thread_cnt) well above one raid5d thread, and a serializer far faster than the
    # drives, isolate the drives
    raid5 = {"kind": "raid", "level": 5, "count": 8, "device": "micron-6550-ion", "power_state": "PS1", "md_group_threads": 64}
    fast = {"save_GBps_per_rank": 1000.0}
    single = _checkpoint_on({"device": "micron-6550-ion", "power_state": "PS1"}, **fast)["metrics"]
    array = _checkpoint_on(raid5, **fast)["metrics"]
    # full stripes: seven drives' worth of data per stripe (GPU links and DRAM are far above 8 x 8 GB/s)
    ratio = array["save_checkpoint_io_mean_GB_per_second"] / single["save_checkpoint_io_mean_GB_per_second"]
    assert ratio == pytest.approx(7.0, rel=0.01)
    # with torch.save's per-rank serializer (one core per rank), eight ranks bind before the array does
    host_bound = _checkpoint_on(raid5)["metrics"]["save_checkpoint_io_mean_GB_per_second"]
    assert host_bound == pytest.approx(8 * host_io.TORCH_SAVE_GBps_PER_CORE, rel=0.01)  # CRC-32 and the page-cache copy in series


def test_nfs_server_threads_bound_reads_by_littles_law():
    export = {"kind": "raid", "level": 5, "count": 16, "device": "hdd-7200rpm-sas-8tb"}
    rates = {}
    for threads in (8, 64):
        system = _system({"kind": "nfs", "export": export, "server_threads": threads})
        v = system.volume
        b = 131072
        read = Access("read", b, "rand", 32)
        rates[threads] = _rate(system, v.usage(read))
        if threads == 8:
            # oracle (Little's law): 8 threads always busy, each holding an RPC for its CPU and the export's
            # read at 8 outstanding (the array's own closed loop at depth 8)
            rpc = read.with_(queue_depth=8)
            inner = v.inner.concurrency(rpc).requests_per_second(8)
            assert rates[8] == pytest.approx(inner * b, rel=0.02)
            assert v.concurrency(read).requests_per_second(32) == pytest.approx(rates[8] / b, rel=0.02)
            assert rates[8] < 8 * b / v.thread_seconds(read.with_(queue_depth=1))  # collisions on the disks
    assert rates[64] > 1.5 * rates[8]  # 32 reads reach the disks instead of 8
    # writes are UNSTABLE: a thread only copies into the server's page cache
    assert v.thread_seconds(Access("write", b, "rand")) < v.thread_seconds(Access("read", b, "rand")) / 100


@settings(max_examples=25, deadline=None)
@given(threads=st.integers(1, 64), more=st.integers(1, 64), fabric_index=st.integers(0, 4),
       protocol=st.sampled_from(["tcp", "rdma"]), op=st.sampled_from(["read", "write"]))
def test_nfs_more_threads_or_a_faster_fabric_never_slower(threads: int, more: int, fabric_index: int, protocol: str, op: str):
    order = ["ib-edr", "ib-hdr", "ib-ndr"] if protocol == "rdma" and fabric_index < 3 else ["100gbe", "200gbe", "400gbe"]
    slow, fast = order[fabric_index % 2], order[fabric_index % 2 + 1]
    export = {"kind": "raid", "level": 5, "count": 8, "device": "micron-9550-pro"}

    def rate(fabric_name: str, n_threads: int) -> float:
        system = _system({"kind": "nfs", "protocol": protocol, "fabric": fabric_name, "export": export, "server_threads": n_threads})
        usage = system.volume.usage(Access("read", 2**20, "seq")) if op == "read" else system.volume.usage(Access("write", 2**20, "seq"))
        return _rate(system, usage)

    base = rate(slow, threads)
    assert rate(slow, threads + more) >= base * (1 - 1e-9)
    assert rate(fast, threads) >= base * (1 - 1e-9)
