"""calibration/pass_test.py: the checkpoint-pass measurement (fresh, overwrite, filled filesystem) and its bundles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from iowatt.calibration import pass_test
from typer.testing import CliRunner

from iowatt.cli import app

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "passes"
PHASES = ("open_seconds", "truncate_seconds", "write_seconds", "close_seconds", "unlink_seconds")


@pytest.mark.parametrize(
    ("args", "field"),
    [(["--writers", "0"], "--writers"), (["--file-MiB", "-1"], "--file-MiB"), (["--repeats", "0"], "--repeats"),
     (["--file-MiB", "40000"], "--writers x --files x --file-MiB"), (["--files", "0"], "--files"),
     (["--modes", "fresh,later"], "--modes")],
)
def test_bad_input_names_the_field_exits_2_and_writes_nothing(tmp_path, args, field):
    out = tmp_path / "bundle.json"
    result = CliRunner().invoke(app, ["collect", "passes", "--target", str(tmp_path), "--out", str(out), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert field in result.output and "expected" in result.output and "found" in result.output
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_missing_target_or_an_existing_bundle_is_refused(tmp_path):
    missing = CliRunner().invoke(app, ["collect", "passes", "--target", str(tmp_path / "nope"), "--out", str(tmp_path / "b.json")])
    assert missing.exit_code == 2 and "--target" in missing.output
    existing = tmp_path / "b.json"
    existing.write_text("{}")
    again = CliRunner().invoke(app, ["collect", "passes", "--target", str(tmp_path), "--out", str(existing)])
    assert again.exit_code == 2 and "--out" in again.output and existing.read_text() == "{}"


def test_a_small_run_records_every_mode_and_phase_and_leaves_nothing_behind(tmp_path):
    """Two writers of 1 MiB, one round, page cache kept: every mode runs once, every writer reports its five
    phases, the files it replaced were the previous pass's (overwrite: truncated, delete_create: unlinked), and the
    test's folder is gone afterwards."""
    bundle = pass_test.run(tmp_path, pass_test.SaveShape(writers=2, file_bytes=2**20, buffer_bytes=2**20), repeats=1, seed=3, drop=False)
    assert sorted(t["mode"] for t in bundle["trials"]) == sorted(pass_test.MODES)
    for trial in bundle["trials"]:
        assert len(trial["writers"]) == 2 and all(set(w) == set(PHASES) for w in trial["writers"])
        assert len(trial["extents"]) == 2 and not trial["caches_dropped"]
    assert set(bundle["summary"]) == set(pass_test.MODES)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_committed_bundles_are_whole_and_their_summary_follows_from_their_trials(name):
    """Every committed bundle holds each mode `repeats` times (interleaved rounds) and its summary is the one
    `summarise` gives for its trials (nothing edited by hand)."""
    bundle = json.loads((FIXTURES / name).read_text())
    for mode in bundle.get("modes", pass_test.MODES):
        rounds = sorted(t["round"] for t in bundle["trials"] if t["mode"] == mode)
        assert rounds == list(range(bundle["repeats"]))
    assert bundle["summary"] == json.loads(json.dumps(pass_test.summarise(bundle["trials"])))


def test_several_files_per_writer_with_crc_are_written_and_counted(tmp_path):
    """Three files per writer, CRC on, two modes: each trial holds writers x files extents, and the overwrite trial
    truncated every file the previous pass left (its truncate phase ran), the fresh one none."""
    shape = pass_test.SaveShape(writers=2, file_bytes=2**20, buffer_bytes=2**20, files=3, crc=True)
    bundle = pass_test.run(tmp_path, shape, repeats=1, seed=1, drop=False, modes=("fresh", "overwrite"))
    assert bundle["files_per_writer"] == 3 and bundle["crc"] and bundle["modes"] == ["fresh", "overwrite"]
    assert {t["mode"] for t in bundle["trials"]} == {"fresh", "overwrite"}
    for trial in bundle["trials"]:
        assert len(trial["extents"]) == 6
    assert set(bundle["summary"]) == {"fresh", "overwrite"}
    assert list(tmp_path.iterdir()) == []
