"""`iowatt advise` closes the loop on this machine's disk: the jobs it names, measured with `collect fio` and fitted
with `calibrate --more`, shrink the interval of a job neither bundle ran.

Oracle: the held-back job's interval from the sampler (scenarios.uncertainty) on the profile before and after; the
fit's standard errors come from more measurements of the unknowns that interval rests on, so it must narrow.  The
measured rate of the held-back job is printed beside both intervals for the report (not asserted: one fio run on a
shared VM).  Runs fio for about a minute in all (realhw: `make test` runs it alone after the parallel suite); skips
without fio.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from iowatt.cli import app
from tests.calibration_oracle import TINY_PLAN

pytestmark = [pytest.mark.realhw, pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")]
runner = CliRunner()

# the tiny plan's reads and three more: 6 jobs for the 3 read fields, so the first profile has a few degrees of freedom
# (reads only: the held-back job reads, and on this shared VM small writes ran at 4-14 MB/s with 50-100 % spreads)
INITIAL_PLAN = {**TINY_PLAN, "name": "initial", "jobs": [*(j for j in TINY_PLAN["jobs"] if "read" in j["rw"]),
                                                        {"rw": "randread", "bs": "4k", "iodepth": 4},
                                                        {"rw": "randread", "bs": "16k", "iodepth": 1},
                                                        {"rw": "read", "bs": "128k", "iodepth": 1}]}
HELD_BACK = {"rw": "randread", "bs": "16k", "iodepth": 4}  # in neither bundle, nor among advise's candidates


def _scenario(path: Path, profile: Path) -> Path:
    path.write_text(yaml.safe_dump({"name": "held_back", "seed": 1, "system": {"storage": {"kind": "local", "device": f"profile:{profile}"}},
                                    "workload": {"kind": "fio", "name": "held-back", **HELD_BACK, "numjobs": 1, "size": "16M",
                                                 "runtime": "2 s", "time_based": True}}))
    return path


def _interval(scenario: Path) -> dict[str, float]:
    result = runner.invoke(app, ["run", str(scenario), "--uncertainty", "--samples", "8", "-j", "0", "-f", "json"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    return json.loads(text[text.index("{"):])["uncertainty"]["metrics"]["bw_bytes"]


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@pytest.mark.xfail(strict=False, reason=(
    "not yet a law: once, on the quiet VM (fresh clone, 2026-11-27), the held-back job's interval widened from +-2.4 % "
    "to +-4.3 % after the advised QD1 jobs (the first fit's residual scale was small by luck and advise assumed a fixed "
    "--noise).  Since calibrate's interval is no narrower than the repeats' own noise implies (calibration.fit.noise_floor) "
    "and advise weighs jobs by the noise its profile's bundle measured (scenarios.advise.bundle_noise), it shrank in "
    "four of five runs to completion (quiet clones and CI, e.g. +-3.8 % -> +-3.2 %) and not in the fifth (a fresh clone, "
    "2026-11-27 10:50): the margin is a fraction of a point of real fio on a shared disk, so it stays non-strict"))
def test_advised_jobs_shrink_a_held_back_jobs_interval(tmp_path: Path):
    (tmp_path / "initial.yaml").write_text(yaml.safe_dump(INITIAL_PLAN))
    _ok(["collect", "fio", "--target", str(tmp_path), "--plan", str(tmp_path / "initial.yaml"), "--repeat", "2", "-o", str(tmp_path / "a"), "-q"])
    _ok(["calibrate", str(tmp_path / "a"), "--base", "micron-7450-pro", "-o", str(tmp_path / "before.yaml")])
    before = _interval(_scenario(tmp_path / "held_before.yaml", tmp_path / "before.yaml"))

    advice = json.loads(_ok(["advise", str(tmp_path / "held_before.yaml"), "--metric", "bw_bytes", "--samples", "8", "-j", "0",
                             "--max-jobs", "3", "--runtime", "0.25", "--size", "16M", "-o", str(tmp_path / "jobs.fio"), "-f", "json"]))
    assert advice["jobs"] and all(j["unknown"].startswith("system.storage.device.") for j in advice["jobs"])
    assert advice["unknowns"][0]["share"] > 0.3  # one unknown dominates a random-read job's interval: the read latency or IOPS
    _ok(["collect", "fio", "--target", str(tmp_path), "--plan", str(tmp_path / "jobs.fio"), "--repeat", "2", "-o", str(tmp_path / "b"), "-q"])
    _ok(["calibrate", str(tmp_path / "a"), "--more", str(tmp_path / "b"), "--base", "micron-7450-pro", "-o", str(tmp_path / "after.yaml")])
    after = _interval(_scenario(tmp_path / "held_after.yaml", tmp_path / "after.yaml"))

    held = {"name": "held", "runtime_s": 0.25, "ramp_s": 0.05, "size": "16M", "jobs": [HELD_BACK]}
    (tmp_path / "held.yaml").write_text(yaml.safe_dump(held))
    _ok(["collect", "fio", "--target", str(tmp_path), "--plan", str(tmp_path / "held.yaml"), "-o", str(tmp_path / "c"), "-q"])
    measured = float((tmp_path / "c" / "tables" / "jobs.csv").read_text().splitlines()[1].split(",")[7])

    def width(i: dict[str, float]) -> float:
        return (i["high"] - i["low"]) / 2 / i["median"]

    print(f"held-back randread 16k QD4: before {before}, +/- {width(before):.1%}; after {after}, +/- {width(after):.1%}; "
          f"advised {[j['job'] for j in advice['jobs']]}; measured {measured:.4g} B/s")
    assert width(after) < width(before)
