"""The calibration loop on this machine's own disk, end to end through the CLI (about a minute).

`iowatt collect fio --plan quick --repeat 3` on a temporary directory, then
`iowatt calibrate --holdout 0.5` on half the jobs, then `iowatt validate`
predicts the other half.  Oracle: the measurements themselves; the issue's
bar is a median |error| <= 15 % on the held-back jobs.  The report keeps each
error next to that job's own run-to-run spread.  Three interleaved repeats
(about 80 s here) rather than two: on this shared 2-vCPU VM the load of other
work shifts over tens of seconds: on four two-repeat bundles 8 of 32 holdout
draws missed the bar, on four three-repeat bundles 4 of 32, three of them from
the bundle collected while the machine was busiest (held-back medians 5-13 %).  When other work loads the machine so much that the held-back
measurements themselves carry a median standard error above 10 %, a miss is
reported as xfail with those numbers (the bar cannot be judged), never as a pass.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from iowatt.calibration.plan import quick
from typer.testing import CliRunner

from iowatt.cli import app

# realhw: its fio runs are timed, so `make test` runs it after the parallel suite, alone on the cores (beside the
# suite's other worker it missed the bar once in a run where it passed alone: 76 s, within it)
pytestmark = [pytest.mark.realhw,
              pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt-get install fio); .ci/run installs it")]

runner = CliRunner()
# Above this median standard error of the held-back measurements (percent), measurement noise alone gives a median |error| of
# ~7 % or more, half the bar: a miss is then reported as an expected failure with the numbers, not as a model error.
BUSY_SE_PCT = 10.0


def test_collect_calibrate_validate_on_this_machine(tmp_path: Path):
    target = tmp_path / "target"
    target.mkdir()
    from iowatt.calibration.target import backing_of

    if backing_of(target).memory:
        pytest.skip(f"the temporary folder is memory-backed here ({backing_of(target).describe()}); collect refuses it")
    bundle = tmp_path / "bundle"
    result = runner.invoke(app, ["collect", "fio", "--target", str(target), "--plan", "quick", "--repeat", "3", "--out", str(bundle), "-q"])
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
    print(f"held back {summary['jobs']}: median |error| {summary['median_abs_error_pct']} %, max {summary['max_abs_error_pct']} %", file=sys.stderr)
    print(f"held back: median |error| of p50 {summary['median_abs_p50_error_pct']} %, of p99 {summary['median_abs_p99_error_pct']} % "
          "(iowatt run --mode per-request on the profile)", file=sys.stderr)
    calibration = yaml.safe_load(profile.read_text())["calibration"]
    # the per-request mode's latency spreads are fitted from fio's clat percentiles and checked on every held-back job
    assert set(calibration["latency_spreads"]) == {"read_latency_sigma", "write_latency_sigma"}
    assert all(r["predicted_p50_us"] > 0 and r["predicted_p99_us"] >= r["predicted_p50_us"] for r in rows if r["measured_p50_us"])
    held = set(calibration["holdout"]["jobs"])
    training = set(calibration["training"])
    assert held.isdisjoint(training) and len(held | training) == len(quick().jobs)
    assert {r["job"] for r in rows} == held and len(held) >= 10
    assert all(r["runs"] == 3 and r["spread_pct"] is not None for r in rows)
    # How well can these measurements judge a 15 % bar?  The standard error of a held-back job's mean is its spread / sqrt(runs);
    # with a perfect model the median |error| would already be ~0.67 x the median standard error (normal noise).
    standard_errors = sorted(r["spread_pct"] / math.sqrt(r["runs"]) for r in rows)
    median_se = standard_errors[len(standard_errors) // 2]
    print(f"held-back median standard error of the measurement itself: {median_se:.1f} %", file=sys.stderr)
    if summary["median_abs_error_pct"] > 15.0 and median_se > BUSY_SE_PCT:
        pytest.xfail(
            f"held-back median |error| {summary['median_abs_error_pct']} % > 15 %, but the machine was too busy to judge: the held-back "
            f"measurements' own median standard error was {median_se:.1f} % (> {BUSY_SE_PCT} %); rerun on a quieter machine"
        )
    assert summary["median_abs_error_pct"] <= 15.0, rows
