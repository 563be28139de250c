"""Issue 36, items 23 and 24: long runs say how far they are when stderr is not a terminal, and error messages
name what the user wrote (fields, options, files), not the program's internals.

Oracle: the command-line contract in README.md (one message naming the field, what was expected and what was
found) and the issue's own wording of each fault.  Each test names its item and failed on the main branch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from iowatt.models.units import UnitError, parse_bytes
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.output import progress

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml")
TIERED = str(ROOT / "scenarios" / "library" / "checkpoint_designs" / "llama405b_64x8_cluster_tiered.yaml")
SMALL = ["--set", "workload.size=4 GB"]
runner = CliRunner()


def message(args: list[object], env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, [str(a) for a in args], env=env)
    assert result.exit_code == 2 and result.stderr.startswith("error: "), (result.exit_code, result.output, result.exception)
    return result.stderr


@pytest.fixture
def every_case_reports(monkeypatch):
    """A progress line after every case (the 5 s spacing set to 0), so no test waits on a clock."""
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.0)


def test_item23_compare_sweep_and_plan_report_progress_without_a_terminal(tmp_path, every_case_reports):
    """Item 23: long `compare`, `plan` and `sweep` runs printed nothing when stderr was not a terminal."""
    compare = runner.invoke(app, ["compare", DEMO, "--vary", "storage.fill=0,0.3,0.6", *SMALL, "-f", "json"])
    assert compare.exit_code == 0, compare.output
    assert "compare: 3/3 (100%)" in compare.stderr and "\x1b[" not in compare.stderr
    sweep = runner.invoke(app, ["sweep", DEMO, "--grid", "storage.fill=0,0.5", *SMALL, "-o", str(tmp_path / "s.csv"), "--jobs", "0"])
    assert sweep.exit_code == 0, sweep.output
    assert "sweep: 2/2 (100%)" in sweep.stderr
    spec = tmp_path / "plan.yaml"
    spec.write_text(yaml.safe_dump({"scenario": DEMO, "set": ["workload.size=4 GB"], "choices": {"storage.count": [1, 2]}}))
    plan = runner.invoke(app, ["plan", str(spec), "--jobs", "0", "-f", "json"])
    assert plan.exit_code == 0, plan.output
    assert "plan: 2/2 (100%)" in plan.stderr


def test_item23_a_run_shorter_than_the_spacing_prints_no_progress_line(monkeypatch):
    """Item 23: a modest rate: the first line is due LOG_EVERY_SECONDS after the start, so a run shorter than the
    spacing (set to an hour here, so no clock decides the outcome) prints none and its results are untouched."""
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 3600.0)
    compare = runner.invoke(app, ["compare", DEMO, "--vary", "storage.fill=0,0.3", *SMALL, "-f", "json"])
    assert compare.exit_code == 0 and compare.stderr == "" and compare.stdout.startswith("{"), compare.output


def test_item24_messages_do_not_stutter():
    """Item 24: "expected a finite a size"."""
    with pytest.raises(UnitError) as caught:
        parse_bytes("1e999 GB")
    assert "a finite a" not in str(caught.value) and "finite" in str(caught.value)


def test_item24_a_union_field_error_names_the_field_not_pydantic_internals():
    """Item 24: `--set workload.save.stage.count=0` printed `tagged-union[function-after[...` locations."""
    text = message(["run", TIERED, "--set", "workload.save.stage.count=0", "--dry-run"])
    assert "workload.save.stage.count: expected greater than or equal to 1, found 0" in text
    assert "tagged-union" not in text and "function-after" not in text and "literal[" not in text


def test_item24_a_failed_write_names_the_output_not_a_temporary_file(tmp_path, monkeypatch):
    """Item 24: temporary-file names (.o.json.XXXX) in errors."""
    def full(*args: object) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / ".o.json.tmp123"))

    monkeypatch.setattr(os, "replace", full)
    out = tmp_path / "o.json"
    text = message(["run", DEMO, *SMALL, "-o", out])
    assert f"--output {out}" in text and "No space left" in text and ".o.json." not in text
    assert list(tmp_path.iterdir()) == []


def test_item24_a_plot_folder_is_reported_as_plot(tmp_path):
    """Item 24: `--plot adir` was reported as `--output`."""
    text = message(["designs", TIERED, "--plot", tmp_path])
    assert text.startswith(f"error: --plot {tmp_path}") and "--output" not in text


def test_item24_a_bad_catalog_file_is_named(tmp_path):
    """Item 24: a bad catalog file was reported without its name."""
    (tmp_path / "mine.yaml").write_text("kind: ssd\nentries:\n  my-drive: 3\n")
    text = message(["run", DEMO, "--set", "storage.device=my-drive", "--dry-run"], env={"IOWATT_CATALOG_DIR": str(tmp_path)})
    assert "mine.yaml" in text and "my-drive" in text
    (tmp_path / "mine.yaml").write_bytes(b"\xff\xfe\x00binary")
    text = message(["run", DEMO, "--set", "storage.device=my-drive", "--dry-run"], env={"IOWATT_CATALOG_DIR": str(tmp_path)})
    assert "mine.yaml" in text and "cannot read" in text


def test_item24_a_missing_bundle_is_named_before_a_profile_is_asked_for(tmp_path):
    """Item 24: `validate --bundle nosuch` said "needs --profile"."""
    text = message(["validate", "--bundle", tmp_path / "nosuch"])
    assert "--bundle" in text and "no such folder" in text and "--profile" not in text


def test_item24_a_duplicate_key_in_a_plan_names_its_line_not_pyyaml_text(tmp_path):
    """Item 24: a plan duplicate key showed raw PyYAML text."""
    spec = tmp_path / "plan.yaml"
    spec.write_text(f"scenario: {DEMO}\nchoices: {{storage.count: [1, 2]}}\nchoices: {{storage.count: [3]}}\n")
    text = message(["plan", spec])
    assert "duplicate key 'choices'" in text and "line 3" in text and "<unicode string>" not in text
