"""Sweeps: expansion, executors (process pool vs a real Dask cluster), streaming output, resume, error rows.

Oracles: the full factorial is itertools.product of the axes; a sweep row
equals an independent single run of the same resolved scenario (the simulator
is deterministic); the Dask executor and the process pool produce identical
rows; resuming after an interruption yields every case exactly once.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from iowatt.scenarios import sweep as sw
from iowatt.scenarios.executors import InlineExecutor, open_executor
from iowatt.scenarios.loader import ScenarioError, validate
from iowatt.scenarios.run import run_scenario
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.commands.planning import sweep_to_file
from iowatt.output.rows import RowFile

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios" / "library"
BASE = LIBRARY / "micron6550_vs_p5336" / "checkpoint_6550_ps1.yaml"
# six cheap cases: 2 drives x 3 power states (both drives have at least 3 states)
AXES = ["storage.device=micron-6550-ion,solidigm-d5-p5336", "storage.power_state=PS0,PS1,PS2"]
runner = CliRunner()


def make_sweep(axes: list[str] = AXES, overrides: list[str] | None = None) -> sw.Sweep:
    base, origin = sw.load_base(str(BASE))
    spec = sw.Sweep(base=base, origin=origin, overrides=list(overrides or ["workload.size=20 GB"]))
    for text in axes:
        spec.grid.append(sw.parse_axis(text, "--grid", spec.base))
    return spec


def by_hash(rows: list[dict]) -> dict[str, dict]:
    return {r["scenario_hash"]: r for r in rows}


def on_disk(path: Path) -> list[dict]:
    return RowFile(path, path.suffix[1:]).existing()


def test_grid_is_the_full_factorial_in_order():
    spec = make_sweep([*AXES, "storage.fill=0,0.5,0.9"])
    cases = sw.expand(spec)
    expected = list(itertools.product(["micron-6550-ion", "solidigm-d5-p5336"], ["PS0", "PS1", "PS2"], ["0", "0.5", "0.9"]))
    assert [tuple(c.values.values()) for c in cases] == expected
    assert [c.index for c in cases] == list(range(18))


def test_random_samples_stay_in_their_ranges_and_repeat_with_the_seed():
    spec = make_sweep(["storage.device=micron-6550-ion,solidigm-d5-p5336"])
    spec.ranges = [sw.parse_range("storage.fill=0:0.9", base=spec.base), sw.parse_range("storage.count=1:4", base=spec.base)]
    spec.samples, spec.seed = 40, 7
    first, again = sw.expand(spec), sw.expand(spec)
    assert [c.values for c in first] == [c.values for c in again]
    fills = [float(c.values["storage.fill"]) for c in first]
    counts = [int(c.values["storage.count"]) for c in first]  # int bounds draw integers
    assert all(0.0 <= f <= 0.9 for f in fills) and len(set(fills)) == 40
    assert set(counts) <= {1, 2, 3, 4} and len(set(counts)) > 1
    assert {c.values["storage.device"] for c in first} == {"micron-6550-ion", "solidigm-d5-p5336"}


def test_bad_axis_names_the_option_and_the_field():
    base, _ = sw.load_base(str(BASE))
    with pytest.raises(ScenarioError, match=r"--grid storage\.nope=1,2"):
        sw.parse_axis("storage.nope=1,2", "--grid", base)
    with pytest.raises(ScenarioError, match="expected KEY=V1,V2"):
        sw.parse_axis("storage.fill", "--grid", base)
    with pytest.raises(ScenarioError, match="LO <= HI"):
        sw.parse_range("storage.fill=0.9:0.1", base=base)


def test_each_row_equals_an_independent_single_run():
    spec = make_sweep()
    result = sw.run_sweep(spec, InlineExecutor())
    assert result.done == 6 and result.failed == 0 and not result.lost
    for row in result.rows:
        data = spec.base
        from iowatt.scenarios.loader import apply_set

        for assignment in [*spec.overrides, f"storage.device={row['storage.device']}", f"storage.power_state={row['storage.power_state']}"]:
            data = apply_set(data, assignment)
        scenario = validate(data, "independent")
        document, _ = run_scenario(scenario)
        assert row["scenario_hash"] == sw.scenario_hash(scenario.model_dump(mode="json"))
        for name, value in document["metrics"].items():
            assert row[name] == pytest.approx(value, rel=1e-12), name


def test_process_pool_and_dask_local_cluster_give_identical_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = make_sweep()
    with open_executor(jobs=2) as pool:
        pooled = sweep_to_file(spec, pool, tmp_path / "pool.csv", "csv")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:  # where the workers keep their scratch files
            scratch = client.run(lambda dask_worker: dask_worker.local_directory)
        with open_executor(address=cluster.scheduler_address) as executor:
            dasked = sweep_to_file(spec, executor, tmp_path / "dask.parquet", "parquet")
    # the test session's folder (tests/conftest.py), not dask-scratch-space in the system's temporary folder
    assert scratch and all(d.startswith(os.environ["DASK_TEMPORARY_DIRECTORY"]) for d in scratch.values()), scratch
    assert pooled.done == dasked.done == 6
    a, b = by_hash(pooled.rows), by_hash(dasked.rows)
    assert set(a) == set(b) and len(a) == 6
    for digest, row in a.items():
        assert row == b[digest]
    # the files hold the same rows as the results (CSV as text, Parquet typed)
    stored_rows = by_hash(on_disk(tmp_path / "dask.parquet"))
    assert set(stored_rows) == set(b)
    for digest, row in b.items():
        for key, value in row.items():
            stored = stored_rows[digest][key]
            assert stored == value or str(stored) == str(value), key
    csv_rows = by_hash(on_disk(tmp_path / "pool.csv"))
    assert set(csv_rows) == set(a)
    assert float(csv_rows[next(iter(a))]["save_checkpoint_duration_mean_seconds"]) == pytest.approx(
        a[next(iter(a))]["save_checkpoint_duration_mean_seconds"], rel=1e-12
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_resume_after_an_interruption_has_no_duplicate_and_no_missing_row(tmp_path, fmt):
    spec = make_sweep()
    full = sw.run_sweep(spec, InlineExecutor())
    out = tmp_path / f"sweep.{fmt}"
    # the interrupted run: two finished rows on disk, and for CSV half of a third row
    partial = RowFile(out, fmt)
    partial.start([], ["case", *spec.keys, "scenario_hash", "sweep_id", "error"])
    for row in full.rows[:2]:
        partial.add(row)
    partial.close()
    if fmt == "csv":
        with out.open("a") as handle:
            handle.write(f"{full.rows[2]['case']},micron-6550-ion,PS2,{full.rows[2]['scenario_hash'][:20]}")
    resumed = sweep_to_file(spec, InlineExecutor(), out, fmt, resume=True)
    assert resumed.skipped == 2 and resumed.done == 4
    rows = on_disk(out)
    hashes = [r["scenario_hash"] for r in rows]
    assert len(hashes) == len(set(hashes)) == 6
    assert set(hashes) == {r["scenario_hash"] for r in full.rows}
    reference = by_hash(full.rows)
    for row in rows:
        assert float(row["save_checkpoint_duration_mean_seconds"]) == pytest.approx(
            reference[row["scenario_hash"]]["save_checkpoint_duration_mean_seconds"], rel=1e-12
        )
    # resuming a finished sweep runs nothing
    again = sweep_to_file(spec, InlineExecutor(), out, fmt, resume=True)
    assert again.done == 0 and again.skipped == 6


def test_invalid_case_and_raising_run_become_error_rows(monkeypatch):
    # PS5 does not exist on the P5336 (3 states): a validation error row; the 6550 has 8 states
    spec = make_sweep(["storage.device=micron-6550-ion,solidigm-d5-p5336", "storage.power_state=PS5"])
    result = sw.run_sweep(spec, InlineExecutor())
    rows = {r["storage.device"]: r for r in result.rows}
    assert rows["micron-6550-ion"]["error"] == ""
    assert "PS5" in rows["solidigm-d5-p5336"]["error"] and "save_checkpoint_duration_mean_seconds" not in rows["solidigm-d5-p5336"]
    assert result.failed == 1 and result.done == 2

    import iowatt.scenarios.run

    real = iowatt.scenarios.run.run_scenario

    def flaky(scenario, *args, **kwargs):
        if scenario.system.storage.power_state == 1:
            raise RuntimeError("simulated crash in the model")
        return real(scenario, *args, **kwargs)

    monkeypatch.setattr(iowatt.scenarios.run, "run_scenario", flaky)
    result = sw.run_sweep(make_sweep(), InlineExecutor())
    failed = [r for r in result.rows if r["error"]]
    assert len(failed) == 2 and all(r["storage.power_state"] == "PS1" for r in failed)
    assert all(r["error"] == "RuntimeError: simulated crash in the model" for r in failed)
    assert result.failed == 2 and result.done == 6


class DyingExecutor(InlineExecutor):
    """Runs cases in this process, but the worker of the `dies_at`-th submission dies (as BrokenProcessPool reports it)."""

    def __init__(self, dies_at: int) -> None:
        self.calls, self.dies_at = 0, dies_at

    def submit(self, fn, /, *args, **kwargs):
        self.calls += 1
        if self.calls == self.dies_at:
            future: Future = Future()
            future.set_exception(BrokenProcessPool("a worker died"))
            return future
        return super().submit(fn, *args, **kwargs)


def test_a_dying_worker_loses_no_finished_row(tmp_path):
    spec = make_sweep()
    out = tmp_path / "s.csv"
    result = sweep_to_file(spec, DyingExecutor(dies_at=3), out, "csv", chunk_size=1)
    assert len(result.lost) == 1 and result.done == 5
    assert len(on_disk(out)) == 5
    resumed = sweep_to_file(spec, InlineExecutor(), out, "csv", resume=True)
    assert resumed.done == 1 and resumed.skipped == 5
    rows = on_disk(out)
    assert len({r["scenario_hash"] for r in rows}) == 6
    assert [int(r["case"]) for r in rows] == list(range(6))  # the resumed file is in case order too


def test_sweep_file_and_cli(tmp_path):
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        f"scenario: {BASE}\nset: ['workload.size=20 GB']\ngrid:\n  storage.device: [micron-6550-ion, solidigm-d5-p5336]\n  storage.power_state: [PS0, PS1]\n"
    )
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["sweep", str(sweep_file), "-o", str(out), "--jobs", "0"])
    assert result.exit_code == 0, result.output
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and {r["storage.power_state"] for r in rows} == {"PS0", "PS1"}
    # PS0 is never slower than PS1 on the same drive (a looser power cap cannot slow the write)
    for device in ("micron-6550-ion", "solidigm-d5-p5336"):
        t = {r["storage.power_state"]: float(r["save_checkpoint_duration_mean_seconds"]) for r in rows if r["storage.device"] == device}
        assert t["PS0"] <= t["PS1"] * (1 + 1e-9)
        assert math.isfinite(t["PS1"])
    bad = runner.invoke(app, ["sweep", str(BASE), "-o", str(tmp_path / "x.csv"), "--grid", "storage.colour=1,2", "--jobs", "0"])
    assert bad.exit_code == 2 and "--grid storage.colour=1,2" in bad.stderr and "Traceback" not in bad.output
    bad = runner.invoke(app, ["sweep", str(BASE), "-o", str(tmp_path / "x.txt"), "--jobs", "0"])
    assert bad.exit_code == 2 and ".csv or .parquet" in bad.stderr
    bad = runner.invoke(app, ["sweep", str(BASE), "-o", str(tmp_path / "x.csv"), "--address", "tcp://h:1", "--scheduler-file", "f.json"])
    assert bad.exit_code == 2 and "give one or the other" in bad.stderr


def test_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    with pytest.raises(ScenarioError, match=r"--address tcp://127\.0\.0\.1:1: cannot reach the Dask scheduler"):
        with open_executor(address="tcp://127.0.0.1:1", connect_timeout=0.5):
            pass


def _exit_on_case_2(base, origin, overrides, cases):
    import os

    if any(case.index == 2 for case in cases):
        os._exit(3)  # the worker process dies without a word, as on an OOM kill
    return _real_run_cases(base, origin, overrides, cases)


_real_run_cases = sw.run_cases


def test_a_real_worker_death_keeps_the_finished_rows_and_resume_completes(tmp_path, monkeypatch):
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork so the worker inherits the patched function")
    from concurrent.futures import ProcessPoolExecutor

    monkeypatch.setattr(sw, "run_cases", _exit_on_case_2)
    spec = make_sweep()
    out = tmp_path / "s.csv"
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        result = sweep_to_file(spec, pool, out, "csv", chunk_size=1)
    assert result.lost and result.done + len(result.lost) == 6
    written = {r["scenario_hash"] for r in on_disk(out)}
    assert written == {r["scenario_hash"] for r in result.rows}  # every finished row reached the file
    monkeypatch.setattr(sw, "run_cases", _real_run_cases)
    resumed = sweep_to_file(spec, InlineExecutor(), out, "csv", resume=True)
    assert resumed.skipped == result.done and resumed.done == len(result.lost)
    hashes = [r["scenario_hash"] for r in on_disk(out)]
    assert len(hashes) == len(set(hashes)) == 6


def test_random_sweep_file_draws_its_samples_within_the_ranges(tmp_path):
    path = tmp_path / "random.yaml"
    path.write_text(
        f"scenario: {BASE}\ngrid:\n  storage.power_state: [PS0, PS1]\n"
        "random:\n  samples: 12\n  seed: 5\n  ranges:\n    storage.fill: [0.1, 0.8]\n    storage.count: [1, 3]\n"
    )
    spec = sw.sweep_from_file(path, sw.load_base(str(path))[0])
    cases = sw.expand(spec)
    assert len(cases) == 12 and spec.keys == ["storage.power_state", "storage.fill", "storage.count"]
    assert all(0.1 <= float(c.values["storage.fill"]) <= 0.8 and c.values["storage.count"] in {"1", "2", "3"} for c in cases)
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"scenario: {BASE}\nrandom:\n  samples: 3\n  ranges:\n    storage.fill: 0.5\n")
    with pytest.raises(ScenarioError, match=r"random\.ranges\.storage\.fill: expected \[LO, HI\]"):
        sw.sweep_from_file(bad, sw.load_base(str(bad))[0])


# --- exit status, order and input checks (issue 18 item 3) -----------------------------------

REPO = Path(__file__).resolve().parent.parent


def readme_sweep_args(out: Path) -> list[str]:
    """The README's sweep example, as written there, with its output in `out`."""
    import shlex

    line = next(x for x in (REPO / "README.md").read_text().splitlines() if x.startswith(".venv/bin/iowatt sweep checkpoint"))
    args = shlex.split(line.split("#")[0])[1:]
    return [str(out) if a == "sweep.csv" else a for a in args] + ["--jobs", "0"]


def test_the_readme_sweep_example_runs_every_case(tmp_path):
    out = tmp_path / "sweep.csv"
    result = runner.invoke(app, readme_sweep_args(out))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 6 and all(r["error"] == "" for r in rows)


def test_failed_cases_exit_1_and_are_listed(tmp_path):
    """The README example as it was (no --set): the 9550 Pro has only PS0 and the scenario asks for PS1."""
    out = tmp_path / "s.csv"
    args = [a for a in readme_sweep_args(out) if a not in ("--set", "storage.power_state=PS0")]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    for case in (3, 4, 5):
        assert f"failed: case {case} (storage.device=micron-9550-pro, storage.fill=" in result.stderr
    assert "only PS0 is valid, found PS1" in result.stderr and "Traceback" not in result.output
    rows = list(csv.DictReader(out.open()))
    assert [r["error"] != "" for r in rows] == [False] * 3 + [True] * 3  # every row is written, failed ones with the reason


def test_an_all_invalid_grid_exits_2_and_leaves_the_output_alone(tmp_path):
    out = tmp_path / "s.csv"
    out.write_text("an earlier result\n")
    result = runner.invoke(app, ["sweep", str(BASE), "-o", str(out), "--grid", "storage.power_state=PS30,PS31", "--jobs", "0"])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: every case of the sweep is an invalid scenario")
    assert out.read_text() == "an earlier result\n"
    fresh = tmp_path / "new.parquet"
    result = runner.invoke(app, ["sweep", str(BASE), "-o", str(fresh), "--grid", "storage.power_state=PS30", "--jobs", "0"])
    assert result.exit_code == 2 and not fresh.exists()


@pytest.mark.parametrize("second", ["storage.fill=0.9", "system.storage.fill=0.9"])
def test_a_duplicated_axis_is_an_error(tmp_path, second):
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["sweep", str(BASE), "-o", str(out), "--grid", "storage.fill=0,0.5", "--grid", second, "--jobs", "0"])
    assert result.exit_code == 2 and "given twice" in result.stderr and second.split("=")[0] in result.stderr
    assert not out.exists()


def test_a_missing_scheduler_file_fails_at_once(tmp_path):
    """dask.distributed waits forever for a scheduler file to appear; the join is a guard against that hang, not a timing test."""
    import threading

    outcome: dict[str, object] = {}

    def attempt() -> None:
        outcome["result"] = runner.invoke(app, ["sweep", str(BASE), "-o", str(tmp_path / "s.csv"), "--scheduler-file", str(tmp_path / "nope.json")])

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "a missing scheduler file must not wait for the file to appear"
    result = outcome["result"]
    assert result.exit_code == 2 and f"--scheduler-file {tmp_path / 'nope.json'}: no such file" in result.stderr


def test_rows_are_in_case_order_whatever_the_completion_order(tmp_path, monkeypatch):
    """Oracle: completion order reversed by hand; the file must not change, so two identical sweeps give identical bytes."""
    args = ["sweep", str(BASE), "--grid", AXES[0], "--grid", AXES[1], "--set", "workload.size=20 GB", "--jobs", "0"]
    assert runner.invoke(app, [*args, "-o", str(tmp_path / "a.csv")]).exit_code == 0
    monkeypatch.setattr(sw, "as_completed", lambda futures: list(reversed(list(futures))))
    assert runner.invoke(app, [*args, "-o", str(tmp_path / "b.csv")]).exit_code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert [int(r["case"]) for r in csv.DictReader((tmp_path / "b.csv").open())] == list(range(6))


def test_resume_refuses_the_output_of_another_sweep(tmp_path):
    out = tmp_path / "s.csv"
    args = ["sweep", str(BASE), "-o", str(out), "--set", "workload.size=20 GB", "--jobs", "0"]
    assert runner.invoke(app, [*args, "--grid", "storage.fill=0,0.5"]).exit_code == 0
    before = out.read_bytes()
    result = runner.invoke(app, [*args, "--grid", "storage.power_state=PS0,PS1", "--resume"])
    assert result.exit_code == 2 and "holds rows of another sweep" in result.stderr
    assert out.read_bytes() == before
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("name,value\nmine,1\n")
    result = runner.invoke(app, ["sweep", str(BASE), "-o", str(foreign), "--grid", "storage.fill=0", "--resume", "--jobs", "0"])
    assert result.exit_code == 2 and "another sweep" in result.stderr and foreign.read_text() == "name,value\nmine,1\n"
    # the same sweep resumes: nothing to run, exit 0, same file
    result = runner.invoke(app, [*args, "--grid", "storage.fill=0,0.5", "--resume"])
    assert result.exit_code == 0 and out.read_bytes() == before
