"""The runner's safety rules, the bundle's integrity checks and power-source handling, through the CLI.

Bad input (a raw or mounted device, an existing file, a corrupt, truncated or
foreign bundle) must end in one `error: ...` line naming what is wrong, exit
status 2, no traceback, and nothing written.  A real (tiny, ~4 s) collection
on a temporary directory supplies the bundle the corruption tests start from.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from iowatt.calibration import bundle, power
from iowatt.calibration.dataset import load_jobs
from iowatt.calibration.fioparse import parse_file
from iowatt.calibration.runner import TEST_FILE
from iowatt.calibration.target import backing_of as target_of
from iowatt.models import catalog
from iowatt.models.ssd import SSDSpec
from typer.testing import CliRunner

from iowatt.cli import app
from tests.calibration_oracle import TINY_PLAN, prediction_shift

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt-get install fio); .ci/run installs it")

runner = CliRunner()
DLIO_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dlio" / "unet3d_tiny"


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    if target_of(root).memory:
        pytest.skip(f"the temporary folder is memory-backed here ({target_of(root).describe()}); collect refuses it")
    plan = root / "tiny.yaml"
    plan.write_text(yaml.safe_dump(TINY_PLAN))
    target = root / "target"
    target.mkdir()
    (target / "keep.txt").write_text("a user's file beside the test file\n")
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    out = root / "bundle"
    result = invoke("collect", "fio", "--target", target, "--plan", plan, "--repeat", "2", "--out", out, "-q")
    assert result.exit_code == 0, result.output
    return {"root": root, "target": target, "bundle": out, "plan": plan, "before": before}  # type: ignore[dict-item]


def test_collection_writes_only_the_test_file_and_removes_it(tiny):
    target, out = tiny["target"], tiny["bundle"]
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]  # the test file is gone, the user's file untouched
    for job in bundle.load(out).jobs:  # fio ran time-based for the plan's runtime (0.2 s), not through the small file
        for run in job.runs:
            record = parse_file(out / next(f for f in run.files if f.endswith(".json")))
            # a time-based run never ends before its runtime (a run through the tiny file would end far sooner);
            # how far past it a loaded machine lets fio run is not asserted (no timed assertions)
            assert record["runtime_s"] >= 0.2 * 0.95
    assert (target / "keep.txt").read_text() == "a user's file beside the test file\n"
    manifest = bundle.load(out)
    assert manifest.target["fio_filename"] == str((target / TEST_FILE).resolve())
    # oracle: the filename fio itself reports for every run is that test file, and nothing else
    for job in manifest.jobs:
        for run in job.runs:
            document = bundle.read_json(out, next(f for f in run.files if f.endswith(".json")))
            assert document["jobs"][0]["job options"]["filename"] == str((target / TEST_FILE).resolve())
    # nothing that existed before the run changed except the target folder's own timestamps
    changed = [p for p, t in tiny["before"].items() if p.exists() and p.stat().st_mtime_ns != t and p != target]
    assert changed == []


def test_repeats_are_interleaved_and_the_spread_recorded(tiny):
    out = tiny["bundle"]
    manifest = bundle.load(out)
    assert manifest.repeat == 2 and all(len(j.runs) == 2 for j in manifest.jobs)
    # interleaved: every job's first run ends before any job's second run starts (fio timestamps)
    ends = {}
    for job in manifest.jobs:
        for run in job.runs:
            record = parse_file(out / next(f for f in run.files if f.endswith(".json")))
            ends[(job.id, run.repeat)] = record["timestamp_ms"]
    assert max(t for (_, r), t in ends.items() if r == 0) <= min(t for (_, r), t in ends.items() if r == 1)
    rows = bundle.read_csv(out / "tables" / "jobs.csv")
    runs = bundle.read_csv(out / "tables" / "runs.csv")
    for row in rows:
        mine = [float(r["bw_Bps"]) for r in runs if r["job_id"] == row["job_id"]]
        mean = sum(mine) / 2
        # oracle: sample sd / mean of two values = |a - b| / (sqrt(2) mean)
        assert float(row["bw_spread"]) == pytest.approx(abs(mine[0] - mine[1]) / (2**0.5 * mean), rel=1e-9)


def test_every_power_source_is_recorded_available_or_absent_with_a_reason(tiny):
    manifest = bundle.load(tiny["bundle"])
    assert set(manifest.power_sources) == {"nvme_ps", "rapl", "ipmi_dcmi", "nvidia_smi"}
    for name, source in manifest.power_sources.items():
        assert source.available or source.detail, name
    has_power_files = any(f.path.startswith("power/") for f in manifest.files)
    assert has_power_files == any(s.available for s in manifest.power_sources.values())


def test_rapl_energy_counter_becomes_watts():
    # oracle: a counter rising 12.5 J/s reads 12.5 W; a level column averages
    samples = [{"t_s": t / 4, "rapl_intel-rapl:0_uj": 1e6 * 12.5 * t / 4, "gpu_total_W": 100.0 + t} for t in range(9)]
    means = power.mean_power(samples, 0.0, 2.0)
    assert means["rapl_intel-rapl:0_W"] == pytest.approx(12.5)
    assert means["gpu_total_W"] == pytest.approx(104.0)
    assert power.mean_power([], 0.0, 1.0) == {}


def test_existing_file_is_refused_without_destructive(tmp_path):
    victim = tmp_path / "data.bin"
    victim.write_bytes(b"precious")
    result = invoke("collect", "fio", "--target", victim, "--out", tmp_path / "b", "-q")
    refused(result, "--target", "--destructive")
    assert victim.read_bytes() == b"precious" and not (tmp_path / "b").exists()


def _a_block_device() -> Path:
    for name in sorted(os.listdir("/sys/block")) if Path("/sys/block").is_dir() else []:
        node = Path("/dev") / name
        if node.exists() and node.is_block_device():
            return node
    pytest.skip("no block device node under /dev on this machine")


def test_raw_block_device_is_refused_without_destructive_and_serial(tmp_path):
    device = _a_block_device()
    result = invoke("collect", "fio", "--target", device, "--out", tmp_path / "b", "-q")
    refused(result, "raw block device", "--destructive", "--serial")
    result = invoke("collect", "fio", "--target", device, "--destructive", "--out", tmp_path / "b", "-q")
    refused(result, "--serial")
    result = invoke("collect", "fio", "--target", device, "--destructive", "--serial", "NOT-THE-SERIAL", "--out", tmp_path / "b", "-q")
    refused(result, "does not match")
    assert not (tmp_path / "b").exists()


def test_device_with_a_mounted_filesystem_is_refused_even_with_its_serial(tmp_path):
    from iowatt.calibration import inventory

    root_disk = inventory.block_device_of(Path("/"))
    if root_disk is None or not Path(f"/dev/{root_disk}").is_block_device():
        pytest.skip("the root filesystem is not on a block device with a /dev node here")
    serial = inventory.device_serial(root_disk)
    args = ["collect", "fio", "--target", f"/dev/{root_disk}", "--out", tmp_path / "b", "-q", "--destructive"]
    result = invoke(*args, "--serial", serial or "NONE")
    if serial:
        refused(result, "mounted filesystem")
    else:
        refused(result, "does not match")  # a device without a serial can never be named: refused
    result = invoke("collect", "fio", "--target", f"/dev/{root_disk}", "--out", tmp_path / "b", "-q")
    refused(result, "mounted filesystem")
    assert not (tmp_path / "b").exists()


def test_fio_failure_still_removes_the_test_file(tmp_path):
    plan = tmp_path / "bad.yaml"
    plan.write_text(yaml.safe_dump({**TINY_PLAN, "ioengine": "no-such-engine", "jobs": TINY_PLAN["jobs"][:1]}))
    target = tmp_path / "t"
    target.mkdir()
    result = invoke("collect", "fio", "--target", target, "--plan", plan, "--out", tmp_path / "b", "-q")
    refused(result, "fio failed on job")
    assert list(target.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--plan", "nonsense"], "--plan: expected quick, standard or a plan file"),
        (["--repeat", "0"], "--repeat"),
    ],
)
def test_bad_collect_options(tmp_path, args, needle):
    target = tmp_path / "t"
    target.mkdir()
    refused(invoke("collect", "fio", "--target", target, "--out", tmp_path / "b", "-q", *args), needle)
    assert list(target.iterdir()) == []


def _copy(tiny, tmp_path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(tiny["bundle"], copy)
    return copy


def _corrupt_manifest(path: Path, **changes) -> None:
    data = json.loads((path / "manifest.json").read_text())
    data.update(changes)
    (path / "manifest.json").write_text(json.dumps(data))


CORRUPTIONS = {
    "missing manifest": (lambda b: (b / "manifest.json").unlink(), "manifest.json is missing"),
    "manifest not json": (lambda b: (b / "manifest.json").write_text("{ half a docu"), "not valid JSON"),
    "foreign format": (lambda b: _corrupt_manifest(b, format="someone-elses-bundle"), "foreign bundle"),
    "future version": (lambda b: _corrupt_manifest(b, version=99), "version"),
    "unknown field": (lambda b: _corrupt_manifest(b, surprise=1), "malformed"),
    "truncated": (lambda b: next((b / "raw").glob("*.json")).unlink(), "missing (truncated bundle)"),
    "edited raw file": (lambda b: next((b / "raw").glob("*.json")).write_text("{}"), "sha256"),
    "escaping path": (lambda b: _corrupt_manifest(b, files=[{"path": "../outside", "sha256": "0", "bytes": 0}]), "outside the bundle"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_bundle_is_refused_by_calibrate_and_validate(tiny, tmp_path, case):
    damage, needle = CORRUPTIONS[case]
    copy = _copy(tiny, tmp_path)
    damage(copy)
    profile = tmp_path / "p.yaml"
    refused(invoke("calibrate", copy, "--base", "micron-7450-pro", "-o", profile), "bundle", needle)
    assert not profile.exists()


def test_not_a_bundle_at_all(tmp_path):
    refused(invoke("calibrate", tmp_path / "nowhere", "--base", "micron-7450-pro", "-o", tmp_path / "p.yaml"), "no such directory")
    (tmp_path / "file").write_text("x")
    refused(invoke("calibrate", tmp_path / "file", "--base", "micron-7450-pro", "-o", tmp_path / "p.yaml"), "found a file")


def test_dlio_bundle_cannot_be_calibrated(tmp_path):
    out = tmp_path / "d"
    assert invoke("collect", "dlio", "--ingest", DLIO_FIXTURE, "--out", out).exit_code == 0
    refused(invoke("calibrate", out, "--base", "micron-7450-pro", "-o", tmp_path / "p.yaml"), "holds no fio jobs")


def test_calibrate_and_validate_on_every_job(tiny, tmp_path):
    profile = tmp_path / "tiny.yaml"
    result = invoke("calibrate", tiny["bundle"], "--base", "micron-7450-pro", "-o", profile)
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(profile.read_text())
    calibration = document["calibration"]
    assert calibration["writes_queue"] in (True, False) and set(calibration["costs"]) == {"buffered", "queueing"}
    entry = document["entries"]["tiny"]
    # Which fields a bundle informs depends on the drive: on a fast one the 1 MiB QD2 job may stay latency-bound,
    # on one with a write cache the 4 KiB writes may all sit at the ceiling.  Oracle (a finite difference through
    # the drive law, independent of the fit's Jacobian): a field the profile calls not informed leaves every
    # training job's prediction unchanged when moved the way that cannot make its term bind (a ceiling raised,
    # a latency lowered); a calibrated one moves at least one prediction.
    jobs = load_jobs(tiny["bundle"])
    spec = catalog.load_file("ssd", profile).spec
    assert isinstance(spec, SSDSpec)
    queue = calibration["writes_queue"]
    for name, factor in (("seq_read_MBps", 2.0), ("rand_read_iops", 2.0), ("read_latency_us", 0.5),
                         ("seq_write_MBps", 2.0), ("write_latency_us", 0.5)):
        moved = prediction_shift(spec, name, factor, jobs, queue)
        if entry[name]["p"] == "calibrated":
            assert tiny["bundle"].name in entry[name]["src"] and moved > 1e-6, (name, moved)
        else:
            assert "no training job is limited by it" in entry[name]["note"] and moved < 1e-6, (name, moved)
    assert any(entry[name]["p"] == "calibrated" for name in ("seq_read_MBps", "rand_read_iops", "read_latency_us"))
    assert any(entry[name]["p"] == "calibrated" for name in ("seq_write_MBps", "write_latency_us"))
    assert "not informed" in entry["rand_write_iops"]["note"]
    assert entry["idle_W"]["p"] != "calibrated"  # no power measured: power fields keep the base values
    device = json.loads((tiny["bundle"] / "inventory.json").read_text())["block_device"]
    if device.get("size_bytes"):  # the capacity is the measured device's (oracle: /sys/block/NAME/size, 512-byte sectors)
        sectors = int(Path(f"/sys/block/{device['name']}/size").read_text())
        assert entry["capacity_TB"]["p"] == "measured"
        assert entry["capacity_TB"]["v"] == pytest.approx(sectors * 512 / 1e12, rel=1e-5)
    refused(invoke("validate", "--bundle", tiny["bundle"], "--profile", profile), "holds back no jobs")
    result = invoke("validate", "--bundle", tiny["bundle"], "--profile", profile, "--all", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["jobs"] == len(TINY_PLAN["jobs"])
    for row in report["jobs"]:
        # the validation error is the training residual the profile recorded for the same job (same law, same code)
        recorded = next(r for r in calibration["residuals"] if r["job"] == row["job"])
        assert row["error_pct"] == pytest.approx(recorded["error_pct"], abs=0.01)
        assert row["spread_pct"] is not None and row["runs"] == 2
        if row["job"].startswith(("randread", "read")):  # reads: the profile's law is the simulator's (models.ssd.closed_loop)
            assert row["simulator_MBps"] == pytest.approx(row["predicted_MBps"], rel=1e-6)


def test_bad_profile_is_refused(tiny, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: something-else\n")
    refused(invoke("validate", "--bundle", tiny["bundle"], "--profile", bad), "--profile", "iowatt-profile")
    refused(invoke("validate", "--bundle", tiny["bundle"], "--profile", tmp_path / "none.yaml"), "no such file")


def test_calibrate_warns_about_a_bundle_measured_on_a_virtual_device(tiny, tmp_path):
    copy = _copy(tiny, tmp_path)
    data = json.loads((copy / "manifest.json").read_text())
    _corrupt_manifest(copy, target={**data["target"], "backing_device": "loop4", "backing_device_kind": "loop"})
    result = invoke("calibrate", copy, "--base", "micron-7450-pro", "-o", tmp_path / "p.yaml")
    assert result.exit_code == 0, result.output
    assert "warning: the bundle was measured on loop4, a loop device" in result.stderr
    _corrupt_manifest(copy, target={**data["target"], "backing_device": "nvme0n1", "backing_device_kind": "block"})
    result = invoke("calibrate", copy, "--base", "micron-7450-pro", "-o", tmp_path / "q.yaml")
    assert result.exit_code == 0 and "warning" not in result.stderr, result.output
