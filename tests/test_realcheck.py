"""`iowatt check-machine` and its bundle (calibration/realcheck_bundle.py, iowatt/commands/realcheck.py).

Fast tests re-score a stored bundle (tests/fixtures/realcheck/bundle, slimmed from a real run on the development
VM) and check bad input.  The slow tests run the reduced loop for real when dlio_benchmark (on PATH, or in the
folder IOWATT_DLIO_BIN names) and fio are there, and are skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from iowatt.calibration import bundle
from iowatt.calibration.realcheck_bundle import finalize, load, measured_by_repeat, score_rows, slim
from typer.testing import CliRunner

from iowatt.cli import app

FIXTURE = Path(__file__).parent / "fixtures" / "realcheck" / "bundle"
runner = CliRunner()


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "bundle"
    shutil.copytree(FIXTURE, target)
    return target


def _invoke(*args: str):
    return runner.invoke(app, list(args))


def test_fixture_rescores_from_its_dlio_tables():
    """Oracle: the measured columns are DLIO's own numbers as the runs wrote them (tables/checkpoints.csv durations,
    tables/summary.csv AU and MB/s), averaged over the repeats; the table re-scores without any hardware."""
    result = _invoke("validate", "--bundle", str(FIXTURE), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    manifest = load(FIXTURE)
    assert {r["run"] for r in report["metrics"]} == {r.name for r in manifest.runs}
    for run in manifest.runs:
        for row in (r for r in report["metrics"] if r["run"] == run.name):
            values = []
            for relative in run.dlio:
                tables = FIXTURE / relative / "tables"
                if row["metric"] == "save_seconds":
                    saves = [float(r["duration_seconds"]) for r in bundle.read_csv(tables / "checkpoints.csv") if r["operation"] == "save"]
                    values.append(statistics.fmean(saves))
                else:
                    column = {"train_au_percentage": "train_au_mean_percentage", "train_io_MiB_per_second": "train_io_mean_MB_per_second"}[row["metric"]]
                    values.append(float(bundle.read_csv(tables / "summary.csv")[0][column]))
            assert row["measured_mean"] == pytest.approx(statistics.fmean(values))
            assert (row["measured_min"], row["measured_max"]) == pytest.approx((min(values), max(values)))
    for run in report["runs"]:
        assert run["binding"] and run["trace"]


@given(st.lists(st.tuples(st.integers(2, 200), st.floats(0.1, 10.0), st.floats(0.0, 2.0)), min_size=1, max_size=4),
       st.integers(1, 64))
def test_barrier_time_is_the_block_less_its_steps(ranks: list[tuple[int, float, float]], batch: int):
    """Oracle: DLIO's throughput definition (a rank's samples over its block's time, DLIO 2.0 statscounter): with each
    rank's steps summing to `proc` seconds and `outside` seconds spent between them, the block lasts proc + outside,
    and the time at the barrier per step over the ranks is the ranks' outside seconds over their steps."""
    from iowatt.calibration.realcheck_runs import barrier_seconds_per_step

    table = [{"steps": str(n), "proc_seconds": str(proc), "throughput_samples_per_second": str(n * batch / (proc + outside))}
             for n, proc, outside in ranks]
    expected = sum(outside for _, _, outside in ranks) / sum(n for n, _, _ in ranks)
    assert barrier_seconds_per_step(table, batch) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert barrier_seconds_per_step([{"steps": "3", "proc_seconds": ""}], batch) is None


def test_table_names_the_binding_constraint_of_each_miss():
    result = _invoke("validate", "--bundle", str(FIXTURE))
    assert result.exit_code == 0, result.output
    report = json.loads(_invoke("validate", "--bundle", str(FIXTURE), "-f", "json").output)
    for run in report["runs"]:
        if run["beyond_spread"]:
            assert f"{run['run']}: misses beyond the spread; the model was bound by {run['binding']}" in " ".join(result.output.split())


def test_round_trip_and_slim(tmp_path: Path):
    """A bundle written, slimmed and re-read keeps its manifest and re-scores to the same table."""
    copy = _copy(tmp_path)
    manifest = finalize(copy, load(copy))
    assert load(copy) == manifest
    slimmed = slim(copy, tmp_path / "slim")
    assert [r.name for r in slimmed.runs] == [r.name for r in manifest.runs]
    first = json.loads(_invoke("validate", "--bundle", str(copy), "-f", "json").output)
    second = json.loads(_invoke("validate", "--bundle", str(tmp_path / "slim"), "-f", "json").output)
    assert first["metrics"] == second["metrics"]
    assert [measured_by_repeat(copy, r) for r in manifest.runs] == [measured_by_repeat(tmp_path / "slim", r) for r in slimmed.runs]


@given(st.floats(0.1, 100.0), st.lists(st.floats(0.1, 100.0), min_size=2, max_size=6))
def test_beyond_spread_means_outside_the_real_range(predicted: float, real: list[float]):
    """Oracle: the definition of the range: a prediction is beyond the spread exactly when no real run is at or past it on both sides."""
    (row,) = score_rows("r", {"m": predicted}, [{"m": v} for v in real])
    assert row["beyond_spread"] == (predicted < min(real) or predicted > max(real))
    assert (row["error_pct"] > 0) == (predicted > statistics.fmean(real))


@pytest.mark.parametrize("damage", ["missing", "edited", "no_manifest"])
def test_damaged_bundle_is_one_message_exit_2(tmp_path: Path, damage: str):
    copy = _copy(tmp_path)
    victim = next(p for p in sorted(copy.rglob("summary.csv")))
    if damage == "missing":
        victim.unlink()
    elif damage == "edited":
        victim.write_text(victim.read_text() + "\n")
    else:
        (copy / "realcheck.json").unlink()
    result = _invoke("validate", "--bundle", str(copy))
    assert result.exit_code == 2
    assert "Traceback" not in result.output and result.output.count("error:") == 1
    assert {"missing": "missing", "edited": "sha256", "no_manifest": "--profile"}[damage] in result.output


def test_bad_places_are_one_message_exit_2(tmp_path: Path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    cases = [
        (["--scratch", str(tmp_path / "nope"), "-o", str(tmp_path / "out")], "--scratch"),
        (["--scratch", str(tmp_path), "-o", str(tmp_path / "afile" / "out")], "--output"),
        (["--scratch", str(tmp_path), "-o", str(tmp_path / "full")], "--output"),
        (["--scratch", str(tmp_path), "-o", str(tmp_path / "out"), "--repeats", "1"], "--repeats"),
    ]
    for args, field in cases:
        result = _invoke("check-machine", *args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.count("error:") == 1 and field in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


# ---- the real loop (slow) ----

def _dlio_bin() -> str | None:
    folder = os.environ.get("IOWATT_DLIO_BIN")
    if folder and (Path(folder) / "dlio_benchmark").is_file():
        return folder
    found = shutil.which("dlio_benchmark")
    return str(Path(found).parent) if found else None


needs_dlio = pytest.mark.skipif(
    _dlio_bin() is None or shutil.which("fio") is None or shutil.which("mpirun") is None,
    reason="the real loop needs dlio_benchmark (on PATH or in IOWATT_DLIO_BIN), mpirun and fio; docs/realcheck.md says how to install them",
)

# floor of the tolerance, in % of the measured mean: the spread of two runs understates run-to-run noise on a shared
# 2-core VM; the full check's three repeats on this machine spread up to 21 % quiet and 27-39 % beside other work
# (docs/realcheck.md, measured)
FLOOR_PCT = 30.0


@pytest.mark.realhw
@needs_dlio
def test_real_loop(tmp_path: Path):
    """The reduced loop on this machine: it writes a bundle whose re-score (no hardware) gives the numbers the run printed;
    then, oracle the machine itself: every predicted metric within max(3 x the real runs' range, FLOOR_PCT) of their
    mean.  A miss fails the test with the metrics named: the quick loop's runs were within it on the development VM
    (docs/realcheck.md), so a miss is a host-side mechanism the probes do not measure, never hidden by a wider tolerance."""
    (tmp_path / "scratch").mkdir()
    result = _invoke("check-machine", "--quick", "--repeats", "2", "--scratch", str(tmp_path / "scratch"), "--dlio-bin", str(_dlio_bin()),
                     "-o", str(tmp_path / "bundle"), "-f", "json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output[result.output.index("{"):])
    manifest = load(tmp_path / "bundle")
    assert {r.kind for r in manifest.runs} == {"checkpoint", "training"}
    assert all(len(r.dlio) == 2 for r in manifest.runs)
    from iowatt.calibration.realcheck_runs import null_runs

    # the null runs ran again after the scored runs (a second set of directories) and the bundle says how far each moved
    assert set(manifest.machine["probes_drift"]) == set(manifest.machine["probes_before"])
    assert all((tmp_path / "bundle" / "dlio" / spec.name / "r1").is_dir() for spec in null_runs(tmp_path))
    report = json.loads(_invoke("validate", "--bundle", str(tmp_path / "bundle"), "-f", "json").output)
    assert [r["measured_mean"] for r in report["metrics"]] == [r["measured_mean"] for r in printed["metrics"]]
    assert [r["predicted"] for r in report["metrics"]] == pytest.approx([r["predicted"] for r in printed["metrics"]])
    if not manifest.caches_dropped:
        pytest.skip("the page cache could not be dropped (needs root): the training run read data cached since it was generated, "
                    "while the prediction reads the drive, so the comparison cannot be judged here")
    misses = [f"{r['run']} {r['metric']}: {r['error_pct']:+.0f} % (range {r['spread_pct']:.0f} %)" for r in report["metrics"]
              if abs(r["error_pct"]) > max(3.0 * r["spread_pct"], FLOOR_PCT)]
    assert not misses, f"beyond max(3 x range, {FLOOR_PCT:.0f} %): {'; '.join(misses)}"


@pytest.mark.parametrize("profile", ["nosuch.yaml", "garbage"])
def test_a_profile_given_with_a_check_machine_bundle_is_refused_not_ignored(tmp_path: Path, profile: str):
    """Issue 36 item 12: `validate --bundle B --profile nosuch.yaml` (or a garbage profile) exited 0 and ignored the option;
    a check-machine bundle is re-scored with its own profile, so --profile is now exit 2 naming it.
    Oracle: the README's bad-input contract (one message naming the field, exit 2)."""
    path = tmp_path / "garbage.yaml"
    path.write_text("garbage: [\n")
    chosen = str(path) if profile == "garbage" else profile
    result = _invoke("validate", "--bundle", str(FIXTURE), "--profile", chosen)
    assert result.exit_code == 2 and f"--profile {chosen}" in result.stderr and "Traceback" not in result.output, result.output
    assert result.stdout == ""


def test_probes_before_and_after_the_runs_are_reported(tmp_path: Path):
    """A full check runs the null runs again after the scored runs; the bundle keeps both sets' facts and the table says
    how far each moved (probe_drift: after relative to before), naming that the predictions use both."""
    from iowatt.calibration.realcheck_runs import PROBE_FACTS, probe_drift

    before = {k: 1.0 for k in PROBE_FACTS} | {"step_overhead_seconds": 0.002}
    after = {k: 1.5 for k in PROBE_FACTS} | {"step_overhead_seconds": 0.001}
    drift = probe_drift(before, after)
    assert drift["step_overhead_seconds"] == {"before": 0.002, "after": 0.001, "change": -0.5}
    assert drift["loader_start_seconds"]["change"] == pytest.approx(0.5)
    copy = _copy(tmp_path)
    manifest = load(copy)
    finalize(copy, manifest.model_copy(update={"machine": {**manifest.machine, "probes_drift": drift}}))
    result = _invoke("validate", "--bundle", str(copy))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "null runs before -> after the scored runs (the predictions use both)" in text
    assert "loop per step 2.00 -> 1.00 ms (-50%)" in text and "loader start 1.00 -> 1.50 s (+50%)" in text


def test_scored_runs_are_interleaved_round_by_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The scored runs go in rounds (every run once, then again), so each run's repeats span the stretch the probes
    bracket: with three runs and three repeats the order is a, b, c, a, b, c, a, b, c; each run's data is generated
    once before the first round and removed after the last, and each run's repeats land in r0, r1, r2."""
    from iowatt.calibration.realcheck_runs import RunSpec

    from iowatt.commands import realcheck

    calls: list[str] = []
    monkeypatch.setattr(realcheck, "_prepare", lambda spec, work, scratch, env: (calls.append(f"prepare {spec.name}"), Path(spec.name))[1])
    monkeypatch.setattr(realcheck, "_run_once", lambda spec, config, work, scratch, env, k, caches: (calls.append(f"run {spec.name}"),
                                                                                                     f"dlio/{spec.name}/r{k}")[1])
    monkeypatch.setattr(realcheck, "_clean", lambda spec, scratch: calls.append(f"clean {spec.name}"))
    runs = [RunSpec(name, "training", 2, {}) for name in "abc"]
    done = realcheck._run_dlio(runs, tmp_path, tmp_path, {}, 3, [])
    assert calls == ["prepare a", "prepare b", "prepare c", *["run a", "run b", "run c"] * 3, "clean a", "clean b", "clean c"]
    assert done == [[f"dlio/{n}/r{k}" for k in range(3)] for n in "abc"]
