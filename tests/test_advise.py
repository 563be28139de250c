"""`iowatt advise`: the greedy design (calibration.experiment), the fio job file it writes, the command.

Oracles: the Gaussian linear model's posterior covariance by direct inversion, (I + sum g g^T / sigma^2)^-1, against
the greedy's rank-one updates; a one-step design's best candidate by brute force; the plan the job file was written
from (a round trip through calibration.plan.load_plan).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.calibration.experiment import Z95, greedy, slope
from iowatt.calibration.plan import FioJob, Plan, PlanError, fio_job_file, load_plan
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()


def _posterior_variance(h: np.ndarray, g: np.ndarray, noise: np.ndarray, chosen: list[int]) -> float:
    precision = np.eye(len(h)) + sum((np.outer(g[c], g[c]) / noise[c] ** 2 for c in chosen), np.zeros((len(h), len(h))))
    return float(h @ np.linalg.inv(precision) @ h)


matrices = st.integers(1, 4).flatmap(lambda k: st.tuples(
    st.lists(st.floats(-2, 2), min_size=k, max_size=k),
    st.lists(st.lists(st.floats(-2, 2), min_size=k, max_size=k), min_size=1, max_size=6),
    st.floats(0.01, 1.0)))


@settings(max_examples=60, deadline=None)
@given(matrices)
def test_greedy_variances_are_the_exact_posterior(data: tuple[list[float], list[list[float]], float]):
    h, g, sigma = np.array(data[0]), np.array(data[1]), data[2]
    noise = np.full(len(g), sigma)
    picks = greedy(h, g, noise, max_picks=len(g), min_share=0.0)
    chosen: list[int] = []
    for pick in picks:
        chosen.append(pick.candidate)
        assert pick.variance_after == pytest.approx(_posterior_variance(h, g, noise, chosen), rel=1e-6, abs=1e-9)
    assert len(set(chosen)) == len(chosen)
    if picks:  # the first pick is the best single measurement (brute force)
        best = min(_posterior_variance(h, g, noise, [c]) for c in range(len(g)))
        assert picks[0].variance_after == pytest.approx(best, rel=1e-6, abs=1e-9)


def test_greedy_skips_what_does_not_inform_the_target_and_stops():
    h = np.array([1.0, 0.0])
    g = np.array([[0.0, 3.0], [2.0, 0.0], [1.0, 0.0]])  # the first candidate sees only an unknown the target ignores
    picks = greedy(h, g, np.full(3, 0.1), max_picks=3)
    assert picks[0].candidate == 1 and picks[0].unknown == 0
    assert all(p.candidate != 0 for p in picks)


def test_slope_is_the_log_derivative_per_standardised_unknown():
    assert slope(math.exp(-Z95 * 0.3), math.exp(Z95 * 0.3)) == pytest.approx(0.3)
    assert slope(0.0, 1.0) == 0.0 and slope(1.0, math.nan) == 0.0


jobs_st = st.lists(st.builds(FioJob, rw=st.sampled_from(["randread", "randwrite", "read", "write", "randrw"]),
                             bs=st.sampled_from([4096, 16384, 131072, 1 << 20]), iodepth=st.integers(1, 128),
                             numjobs=st.integers(1, 8), rwmixread=st.integers(0, 100)),
                   min_size=1, max_size=5, unique_by=lambda j: j.id)


@settings(max_examples=30, deadline=None)
@given(jobs_st, st.sampled_from([0.25, 2.0, 30.0]))
def test_fio_job_file_reads_back_as_the_same_plan(tmp_path_factory: pytest.TempPathFactory, jobs: list[FioJob], runtime: float):
    plan = Plan(name="advised", runtime_s=runtime, ramp_s=0.1, size=64 << 20, jobs=jobs)
    path = tmp_path_factory.mktemp("plan") / "advised.fio"
    path.write_text(fio_job_file(plan, "why\nthese jobs"))
    back = load_plan(str(path))
    assert [j.id for j in back.jobs] == [j.id for j in plan.jobs]
    assert (back.runtime_s, back.ramp_s, back.size, back.ioengine) == (plan.runtime_s, plan.ramp_s, plan.size, plan.ioengine)


@pytest.mark.parametrize(("text", "message"), [
    ("[global]\nruntime=2\n[a]\nrw=randread\nverify=crc32\n", "[a]: expected only rw, bs, iodepth, numjobs, rwmixread"),
    ("[global]\nruntime=soon\n[a]\nrw=read\n", "[global] runtime: expected a time such as 2, 2s or 500ms, found 'soon'"),
    ("[a]\nrw=sideways\n", "jobs.0.rw"),
    ("rw=read\n", "not a fio job file"),
])
def test_a_bad_job_file_names_what_is_wrong(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.fio"
    path.write_text(text)
    with pytest.raises(PlanError, match=None) as error:
        load_plan(str(path))
    assert message in str(error.value)


SCENARIO = {"name": "one_drive", "seed": 1, "system": {"storage": {"kind": "local", "device": "micron-7450-pro"}},
            "workload": {"kind": "fio", "rw": "randread", "bs": "16k", "iodepth": 4, "size": "1G", "runtime": "2 s", "time_based": True}}


def test_advise_names_the_unknowns_and_writes_jobs_collect_reads(tmp_path: Path):
    """A datasheet drive's 16 KiB QD4 read rests on its datasheet values (their source spread): advise names them and
    the fio jobs, in order, each with an interval no wider than the one before."""
    import yaml

    scenario = tmp_path / "one.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    jobfile = tmp_path / "jobs.fio"
    result = runner.invoke(app, ["advise", str(scenario), "--metric", "bw_bytes", "--samples", "4", "-j", "0", "--max-jobs", "2",
                                 "-o", str(jobfile), "-f", "json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.stdout)
    assert advice["metric"] == "bw_bytes" and advice["unknowns"]
    assert all(u["path"].startswith(("system.", "constant:")) for u in advice["unknowns"])
    assert 1 <= len(advice["jobs"]) <= 2
    widths = [advice["relative_half_width"], *(j["relative_half_width_after"] for j in advice["jobs"])]
    assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0]
    assert "randread-16k-qd4-j1" not in [j["job"] for j in advice["jobs"]]  # the predicted job is not a candidate
    assert [j.id for j in load_plan(str(jobfile)).jobs] == [j["job"] for j in advice["jobs"]]


@pytest.mark.parametrize(("args", "message"), [
    (["--noise", "2"], "--noise: expected a relative spread between 0 and 1"),
    (["--max-jobs", "0"], "--max-jobs: expected at least 1, found 0"),
    (["--format", "csv"], "--format: expected table or json, found 'csv'"),
    (["--metric", "joy", "--samples", "2", "-j", "0"], "--metric: expected one of the run's metrics"),
])
def test_bad_advise_input_names_the_option(tmp_path: Path, args: list[str], message: str):
    import yaml

    scenario = tmp_path / "one.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    result = runner.invoke(app, ["advise", str(scenario), "-o", str(tmp_path / "jobs.fio"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "jobs.fio").exists()
