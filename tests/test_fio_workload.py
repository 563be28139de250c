"""fio workload: fio's identities, the closed-loop law against a per-I/O simulation, fill, power states, job files."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from iowatt.models import catalog, nand, ssd, ssd_power
from iowatt.scenarios.fiojob import parse_fio_size, parse_job_file
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.run import run_scenario
from typer.testing import CliRunner

from iowatt.cli import app
from tests.ftl_oracle import PageFTL, random_overwrites
from tests.queueing_oracle import law_latency, per_io_units

KiB = 1024
LIB = Path(__file__).resolve().parents[1] / "scenarios" / "library"


def fio(device: str | dict, **workload: object) -> dict[str, float]:
    storage = {"device": device}
    for key in ("power_state", "fill", "count"):
        if key in workload:
            storage[key] = workload.pop(key)
    data = {"system": {"storage": storage}, "workload": {"kind": "fio", **workload}}
    document, _ = run_scenario(load(data))
    return document["metrics"]


# ---------------------------------------------------------------- closed loop


def test_qd1_latency_bound_job_runs_at_the_unloaded_latency() -> None:
    """Not ceiling-bound: IOPS = N / L0 and iops x lat = iodepth x numjobs (fio's identity)."""
    spec = catalog.spec_from("ssd", "micron-9200-pro")
    m = fio("micron-9200-pro", rw="randread", bs="4k", iodepth=1, size="1 GiB")
    l0 = ssd.unloaded_latency_s(spec, 4 * KiB, False)
    assert m["read_clat_mean_us"] == pytest.approx(l0 * 1e6, rel=1e-6)
    assert m["read_iops"] == pytest.approx(1 / l0, rel=1e-6)
    assert m["read_iops"] * m["read_clat_mean_us"] * 1e-6 == pytest.approx(1.0, rel=1e-9)
    assert m["read_bw_bytes"] == pytest.approx(m["read_iops"] * 4096, rel=1e-9)
    assert m["job_runtime_seconds"] == pytest.approx(2**30 / m["read_bw_bytes"], rel=1e-6)


def test_deep_queue_job_follows_the_concurrency_law_below_the_block_size_ceiling() -> None:
    """1,024 requests on the 9200: X = N / R(N), R the textbook MVA of c = L0 / S flash units
    (tests/queueing_oracle.law_latency), within 10 % of the block-size ceiling 1 / S and never above it."""
    spec = catalog.spec_from("ssd", "micron-9200-pro")
    m = fio("micron-9200-pro", rw="randread", bs="4k", iodepth=256, numjobs=4, runtime=2, time_based=True)
    ceiling = ssd.read_throughput_Bps(spec, 4 * KiB)
    service, l0 = 4 * KiB / ceiling, ssd.unloaded_latency_s(spec, 4 * KiB, False)
    assert m["read_iops"] == pytest.approx(1024 / law_latency(l0, service, 1024), rel=1e-6)
    assert 0.9 * ceiling < m["read_bw_bytes"] < ceiling
    assert m["read_iops"] * m["read_clat_mean_us"] * 1e-6 == pytest.approx(1024, rel=1e-6)
    assert m["simulated_seconds"] == pytest.approx(2.0)


def test_numjobs_and_iodepth_are_interchangeable_at_the_ceiling() -> None:
    a = fio("micron-5210-ion", rw="randread", bs="128k", iodepth=32, runtime=1, time_based=True)
    b = fio("micron-5210-ion", rw="randread", bs="128k", iodepth=8, numjobs=4, runtime=1, time_based=True)
    assert a["read_bw_bytes"] == pytest.approx(b["read_bw_bytes"], rel=1e-9)
    assert a["read_clat_mean_us"] == pytest.approx(b["read_clat_mean_us"], rel=1e-9)


def test_sync_engine_keeps_one_request_per_job() -> None:
    a = fio("micron-9200-pro", rw="randread", bs="4k", iodepth=32, ioengine="psync", size="256 MiB")
    b = fio("micron-9200-pro", rw="randread", bs="4k", iodepth=1, size="256 MiB")
    assert a["read_iops"] == pytest.approx(b["read_iops"], rel=1e-9)
    assert a["outstanding_ios"] == 1




@pytest.mark.parametrize("qd", [1, 2, 4, 8, 32])
def test_fluid_closed_loop_matches_a_per_io_simulation(qd: int) -> None:
    """A 5210 ION whose QD1 latency is made exactly 4 service times (c = 4 units): fio's read IOPS match a
    per-request SimPy run of 4 random-routed units within 4 % (Monte Carlo, 12k requests)."""
    base = catalog.spec_from("sata_ssd", "micron-5210-ion")
    b = 128 * KiB
    service = b / ssd.read_throughput_Bps(base, b)
    latency_us = (4 * service - (b - 4 * KiB) / ssd.read_stream_Bps(base)) * 1e6
    device = {"base": "micron-5210-ion", "read_latency_us": latency_us}
    spec = catalog.spec_from("sata_ssd", device)
    l0 = ssd.unloaded_latency_s(spec, b, False)
    assert l0 == pytest.approx(4 * service, rel=1e-9)
    m = fio(device, rw="randread", bs="128k", iodepth=qd, runtime=5, time_based=True)
    assert m["read_iops"] == pytest.approx(per_io_units(qd, 4, l0), rel=0.04)


def test_mixed_job_keeps_fio_mix_and_littles_law() -> None:
    m = fio("micron-6550-ion", rw="randrw", rwmixread=70, bs="16k", iodepth=64, runtime=2, time_based=True, fill=0.8)
    assert m["read_iops"] / m["write_iops"] == pytest.approx(70 / 30, rel=1e-9)
    total = m["read_iops"] + m["write_iops"]
    mean = (m["read_iops"] * m["read_clat_mean_us"] + m["write_iops"] * m["write_clat_mean_us"]) / total
    assert total * mean * 1e-6 == pytest.approx(64, rel=1e-6)
    spec = catalog.spec_from("ssd", "micron-6550-ion")
    ceiling = 1 / ssd.mixed_seconds_per_byte(spec, 16 * KiB, 0.7, "rand", True, 0.8)
    assert m["bw_bytes"] <= ceiling * (1 + 1e-9)


def test_percentiles_follow_the_stated_gamma_assumption() -> None:
    from scipy.stats import gamma

    m = fio("micron-9200-pro", rw="randread", bs="128k", iodepth=32, runtime=1, time_based=True)
    k, mean = m["latency_shape_k"], m["read_clat_mean_us"]
    spec = catalog.spec_from("ssd", "micron-9200-pro")
    l0 = ssd.unloaded_latency_s(spec, 128 * KiB, False)
    service = 128 * KiB / ssd.read_throughput_Bps(spec, 128 * KiB)  # flash units c = C x L0
    assert k == pytest.approx(law_latency(l0, service, 32) / l0, rel=1e-6)  # R / L0: the others at the request's unit + its own L0
    assert m["read_clat_p99_us"] == pytest.approx(gamma.ppf(0.99, k, scale=mean / k), rel=1e-6)
    assert m["read_clat_p50_us"] < mean < m["read_clat_p99_us"]


def test_hdd_through_fio_gains_from_queue_depth_and_obeys_littles_law() -> None:
    one = fio("hdd-7200rpm-sas-8tb", rw="randread", bs="128k", iodepth=1, size="100G", runtime=30, time_based=True)
    deep = fio("hdd-7200rpm-sas-8tb", rw="randread", bs="128k", iodepth=32, size="100G", runtime=30, time_based=True)
    assert deep["read_iops"] > 2 * one["read_iops"]
    assert deep["read_iops"] * deep["read_clat_mean_us"] * 1e-6 == pytest.approx(32, rel=1e-6)
    seq = fio("hdd-7200rpm-sas-8tb", rw="read", bs="1m", iodepth=4, runtime=30, time_based=True)
    # streaming over the whole disk: the zoned mean media rate, OD x (1 + ID/OD) / 2
    spec = catalog.spec_from("hdd", "hdd-7200rpm-sas-8tb")
    assert seq["read_bw_bytes"] == pytest.approx(spec.outer_transfer_MBps * 1e6 * (1 + spec.inner_outer_ratio) / 2, rel=1e-6)


# ---------------------------------------------------------------- fill and endurance


ORACLE_USER = 60_000  # pages of the scaled drive (tests/ftl_oracle.py)


def oracle_drive(op: float, pages_per_block: int = 256) -> PageFTL:
    """The per-page oracle with the NAND its GC can use matching a drive of spare `op` (reserve and open
    blocks excluded)."""
    return PageFTL(ORACLE_USER, op + 3 * pages_per_block / ORACLE_USER, pages_per_block)


def test_p5336_random_fill_follows_the_per_page_ftl() -> None:
    """Oracle: a per-page FTL simulation of the same fill (a fresh drive, 16 KiB = one indirection unit per
    page, pages drawn with replacement until 3 drive writes, greedy GC, the drive's spare): the mean WA agrees
    within 5 %, WA is 1 while free blocks last (the deciles before the oracle's first copy run at the
    fresh-out-of-box rate), and the write rate falls decile after decile after that."""
    document, _ = run_scenario(load(LIB / "micron6550_vs_p5336" / "fill_p5336.yaml"))
    deciles = document["fio"]["fill_write_GBps_by_decile"]
    m = document["metrics"]
    spec = catalog.spec_from("ssd", "solidigm-d5-p5336")
    oracle = oracle_drive(ssd.over_provisioning_of(spec))
    rng = np.random.default_rng(7)
    onset = None
    for _ in range(300):  # 3 drive writes in 1 % steps
        before = oracle.nand - oracle.host
        oracle.write(rng.integers(0, ORACLE_USER, ORACLE_USER // 100))
        if onset is None and oracle.nand - oracle.host > before:
            onset = oracle.valid_pages / ORACLE_USER
    measured = oracle.nand / oracle.host
    print("\nP5336 16K random fill, GB/s by fill decile:", [round(x, 3) for x in deciles], f"WA {m['write_amplification_mean']:.3f}, "
          f"oracle {measured:.3f}, first copy at fill {onset:.2f}")
    assert m["write_amplification_mean"] == pytest.approx(measured, rel=0.05)
    fob = 1 / ssd.write_seconds_per_byte_at(spec, 16 * KiB, 1.0)
    for i in range(int(onset * 10)):
        assert deciles[i] == pytest.approx(fob / 1e9, rel=1e-6)
    later = deciles[int(onset * 10):]
    assert all(b2 < a2 for a2, b2 in itertools.pairwise(later))
    assert m["fill_end"] == pytest.approx(1 - math.exp(-3), abs=0.01)
    assert m["write_amplification_mean"] == pytest.approx(m["nand_bytes_written"] / m["write_io_bytes"], rel=1e-9)
    years = nand.endurance(spec.capacity_bytes, m["write_io_bytes"], m["nand_bytes_written"], m["simulated_seconds"], spec.endurance_dwpd, 5)
    assert m["endurance_years_left"] == pytest.approx(years["years_to_rated_endurance"], rel=1e-9)


@pytest.mark.parametrize("fill", [0.0, 0.5])
def test_sequential_writes_pay_garbage_collection_only_on_a_used_drive(fill: float) -> None:
    """Oracle: the per-page FTL simulation.  6 TB of 128 KiB sequential writes into a fresh P5336 program each
    byte once (WA 1, the datasheet 3.3 GB/s); into one half full of data written randomly (SNIA PTS-E steady
    state) they need the free space scattered over partly valid blocks and pay greedy GC, as the per-page
    simulation of a drive brought to that state does (within 5 %)."""
    m = fio("solidigm-d5-p5336", rw="write", bs="128k", iodepth=32, size="6 TB", fill=fill)
    spec = catalog.spec_from("ssd", "solidigm-d5-p5336")
    oracle = oracle_drive(ssd.over_provisioning_of(spec))
    held = int(fill * ORACLE_USER)
    if held:
        oracle.write(np.arange(held))
        random_overwrites(oracle, np.arange(held), 8 * held, np.random.default_rng(3))
    host, programmed = oracle.host, oracle.nand
    oracle.write(np.arange(held, held + int(6e12 / spec.capacity_bytes * ORACLE_USER)))
    measured = (oracle.nand - programmed) / (oracle.host - host)
    assert m["write_amplification_mean"] == pytest.approx(measured, rel=0.05)
    if fill == 0.0:
        assert measured == pytest.approx(1.0)
        assert m["write_bw_bytes"] == pytest.approx(3.3e9, rel=1e-6)
    else:
        assert measured > 1.05
        assert m["write_bw_bytes"] < 3.3e9 / measured * 1.05


# ---------------------------------------------------------------- power states


def test_6550_power_states_cap_throughput_and_power() -> None:
    """PS0 (25 W) and PS1 (20 W) do not bind a 128K read (17.5 W measured at full speed, S08): it runs at the
    concurrency law of its 256 requests.  Lower states throttle die activity (models.ssd_power): the flash units
    that may work at once shrink to share = budget / dynamic power at the ceiling, so the law's S becomes S / share
    (oracle: the textbook MVA of c x share units, tests.queueing_oracle.law_latency), and the power budget bounds the
    rate from above."""
    runs = {ps: fio("micron-6550-ion", rw="read", bs="128k", iodepth=256, runtime=10, time_based=True, power_state=ps) for ps in ("PS0", "PS1", "PS3", "PS7")}
    print("\n6550 ION 128K read by power state:", {k: (round(v["read_bw_MBps"]), round(v["ssd_mean_power_W"], 2)) for k, v in runs.items()})
    spec = catalog.spec_from("ssd", "micron-6550-ion")
    block = 128 * KiB
    free, _lat = ssd.closed_loop(spec, block, 256, 1.0)
    assert 0.95 * 12e9 < free < 12e9
    assert runs["PS0"]["read_bw_bytes"] == pytest.approx(free, rel=1e-6)
    assert runs["PS1"]["read_bw_bytes"] == pytest.approx(free, rel=1e-6)
    model = ssd_power.power_model(spec)
    joules = ssd_power.read_J_per_host_byte(model, block)
    l0, s = ssd.unloaded_latency_s(spec, block, False), ssd.queue_seconds(spec, block, 1.0, "seq")
    for ps, cap in (("PS3", 16.0), ("PS7", 10.0)):
        share = ssd_power.cap_share(model, cap, joules, 1.0 / ssd.read_seconds_per_byte(spec, block))
        law = 256 / law_latency(l0, s / share, 256, units=ssd.flash_units(spec, block) * share) * block
        bound = ssd_power.dynamic_budget_W(model, cap) / joules
        assert runs[ps]["read_bw_bytes"] == pytest.approx(min(law, bound), rel=1e-6)
        assert runs[ps]["ssd_mean_power_W"] <= cap * (1 + 1e-9)
    assert runs["PS7"]["ssd_mean_power_W"] > 0.99 * 10.0  # deep throttle: the drive runs at its cap
    assert runs["PS7"]["read_bw_bytes"] < runs["PS3"]["read_bw_bytes"] < runs["PS1"]["read_bw_bytes"]


# ---------------------------------------------------------------- job files and CLI


def test_fio_sizes_follow_kb_base_1024_compat_mode() -> None:
    assert parse_fio_size("128k", "bs", "x") == 131072
    assert parse_fio_size("1000G", "size", "x") == 1000 * 2**30
    assert parse_fio_size("4KiB", "bs", "x") == 4000  # fio's documented inversion in compat mode
    assert parse_fio_size("4KiB", "bs", "x", kb_base=1000) == 4096


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "job.fio"
    p.write_text(text)
    return p


def test_job_file_parses_global_and_job(tmp_path: Path) -> None:
    p = _write(tmp_path, "; c\n[global]\nioengine=libaio\ndirect=1\ntime_based\nruntime=1m\n\n[rr]\nrw=randread\nbs=128k\niodepth=32\nsize=10G\n")
    w = parse_job_file(p)
    assert w == {"kind": "fio", "name": "rr", "ioengine": "libaio", "direct": True, "time_based": True, "runtime": 60.0,
                 "rw": "randread", "bs": 131072.0, "iodepth": "32", "size": 10 * 2**30}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[a]\nrw=read\nzonemode=zbd\n", "'zonemode'"),
        ("[a]\nrw=read\n[b]\nrw=write\n", "[a], [b]"),
        ("[global]\nrw=read\n", "one job section"),
        ("[a]\nsize=50%\n", "percentages"),
        ("[a]\nbs=4k,128k\n", "separate read/write"),
        ("rw=read\n", "before any [section]"),
    ],
)
def test_job_file_errors_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=None) as info:
        parse_job_file(_write(tmp_path, text))
    assert needle in str(info.value)


def test_cli_fio_jobfile_matches_the_library_scenario(tmp_path: Path) -> None:
    p = _write(tmp_path, "[global]\nioengine=libaio\ndirect=1\nruntime=60\ntime_based\n[randread-128k]\nrw=randread\nbs=128k\niodepth=32\nsize=1000G\n")
    runner = CliRunner()
    out = runner.invoke(app, ["run", "--fio", str(p), "--set", "storage.device=micron-9200-pro", "-f", "json"])
    assert out.exit_code == 0, out.output
    import json

    m = json.loads(out.stdout)["metrics"]
    ref, _ = run_scenario(load(LIB / "amax" / "fio_9200.yaml"))
    assert m["read_bw_bytes"] == pytest.approx(ref["metrics"]["read_bw_bytes"], rel=1e-12)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--set", "storage.device=micron-9200-pro"], "'zonemode'"),
        ([], "storage.device=NAME"),
    ],
)
def test_cli_fio_bad_input_exits_2_naming_it(tmp_path: Path, args: list[str], needle: str) -> None:
    p = _write(tmp_path, "[a]\nrw=read\nzonemode=zbd\n" if args else "[a]\nrw=read\n")
    out = CliRunner().invoke(app, ["run", "--fio", str(p), *args])
    assert out.exit_code == 2
    assert needle in out.output
    assert "Traceback" not in out.output


def test_buffered_io_is_refused_with_the_field_named() -> None:
    with pytest.raises(ScenarioError, match="direct"):
        load({"system": {"storage": {"device": "micron-9200-pro"}}, "workload": {"kind": "fio", "direct": False}})


def test_sata_ncq_holds_32_commands_the_rest_wait_in_the_host() -> None:
    """A SATA drive whose 4 KiB reads are latency-bound at QD32 (inline spec: the 5210 ION with a 2 ms read
    latency, so 32 / L0 = 16K IOPS < its 83K ceiling): beyond 32 outstanding it gains nothing (NCQ has 32 tags)
    and fio's latency grows with N by Little's law.  An NVMe drive with the same numbers keeps scaling."""
    slow = {"base": "micron-5210-ion", "read_latency_us": 2000}
    spec = catalog.spec_from("sata_ssd", slow)
    l0 = ssd.unloaded_latency_s(spec, 4 * KiB, False)
    service = 4 * KiB / ssd.read_throughput_Bps(spec, 4 * KiB)
    q32 = fio(slow, rw="randread", bs="4k", iodepth=32, runtime=1, time_based=True)
    q128 = fio(slow, rw="randread", bs="4k", iodepth=128, runtime=1, time_based=True)
    assert q32["read_iops"] == pytest.approx(32 / (l0 + 31 * service), rel=1e-6)  # concurrency law at N = 32
    assert q128["read_iops"] == pytest.approx(q32["read_iops"], rel=1e-6)
    assert q128["read_clat_mean_us"] == pytest.approx(4 * q32["read_clat_mean_us"], rel=1e-6)
    bw, _lat = ssd.closed_loop(spec, 4 * KiB, 128, 1.0)
    assert bw / (4 * KiB) == pytest.approx(q128["read_iops"], rel=1e-6)
    nvme = {"base": "micron-5210-ion", "read_latency_us": 2000, "interface": "nvme"}
    assert fio(nvme, rw="randread", bs="4k", iodepth=128, runtime=1, time_based=True)["read_iops"] == pytest.approx(
        128 / (l0 + 127 * service), rel=1e-6
    )
