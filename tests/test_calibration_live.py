"""The calibration loop on this machine's own disk, end to end through the CLI (about a minute).

`iowatt collect fio --plan quick --repeat 2` on a temporary directory, then
`iowatt calibrate --holdout 0.5` on half the jobs, then `iowatt validate`
predicts the other half.  Oracle: the measurements themselves; the issue's
bar is a median |error| <= 15 % on the held-back jobs.  The report keeps each
error next to that job's own run-to-run spread.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from calibration.plan import quick
from iowatt.cli import app

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt-get install fio); .ci/run installs it")

runner = CliRunner()


def test_collect_calibrate_validate_on_this_machine(tmp_path: Path):
    target = tmp_path / "target"
    target.mkdir()
    bundle = tmp_path / "bundle"
    result = runner.invoke(app, ["collect", "fio", "--target", str(target), "--plan", "quick", "--repeat", "2", "--out", str(bundle), "-q"])
    assert result.exit_code == 0, result.output
    assert list(target.iterdir()) == []  # the test file was removed
    profile = tmp_path / "this-disk.yaml"
    result = runner.invoke(app, ["calibrate", str(bundle), "--base", "micron-7450-pro", "--holdout", "0.5", "--seed", "0", "-o", str(profile)])
    assert result.exit_code == 0, result.output
    print(result.stderr, file=sys.stderr)
    result = runner.invoke(app, ["validate", "--bundle", str(bundle), "--profile", str(profile), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = report["jobs"]
    for row in rows:
        print(f"{row['job']:26s} measured {row['measured_MBps']:9.1f} predicted {row['predicted_MBps']:9.1f} MB/s "
              f"error {row['error_pct']:+6.1f} % spread {row['spread_pct']:5.1f} % {row['verdict']}", file=sys.stderr)
    summary = report["summary"]
    print(f"held back {summary['jobs']}: median |error| {summary['median_abs_error_pct']} %, max {summary['max_abs_error_pct']} %, "
          f"law {report['queue_law']}", file=sys.stderr)
    calibration = yaml.safe_load(profile.read_text())["calibration"]
    held = set(calibration["holdout"]["jobs"])
    training = set(calibration["training"])
    assert held.isdisjoint(training) and len(held | training) == len(quick().jobs)
    assert {r["job"] for r in rows} == held and len(held) >= 10
    assert all(r["runs"] == 2 and r["spread_pct"] is not None for r in rows)
    assert summary["median_abs_error_pct"] <= 15.0
