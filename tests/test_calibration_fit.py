"""The fit: recovers parameters it generated data with (the oracle), with honest Jacobian uncertainties.

Synthetic jobs are the quick plan's, measured = law(true parameters) x
lognormal noise of a known relative spread.  The fitted values must land
within 3 standard errors of the truth (the Jacobian uncertainty must cover it: 4 sd always, 2 sd about 95 % of the time),
and parameters no job depends on must keep the base value and say so.  The
calibration law must be models.ssd's own law (the simulator's), which the
identity test checks, and that law must be the exact balanced-network
solution its docstring states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from iowatt.calibration import fit
from iowatt.calibration.model import FIELDS, Job, predict, service_and_latency, simulator_predict
from iowatt.calibration.plan import quick
from iowatt.models import catalog
from iowatt.models import ssd as ssd_model

from tests.calibration_oracle import plan_jobs, prediction_shift, tiny_plan_jobs
from tests.queueing_oracle import law_latency

TINY_JOBS = tiny_plan_jobs()  # the plan tests/test_calibration_bundle.py measures on the machine's own disk

BASE = catalog.lookup("ssd", "micron-7450-pro").spec
# a virtual disk like this project's VM (values near what its bundles fit)
TRUTH = {"seq_read_MBps": 950.0, "rand_read_iops": 60000.0, "read_latency_us": 70.0, "seq_write_MBps": 2800.0, "write_latency_us": 110.0}


def quick_jobs() -> list[Job]:
    return plan_jobs(quick())


def synthetic(truth: dict[str, float], noise: float, seed: int, jobs: list[Job] | None = None, writes_queue: bool = True) -> list[Job]:
    rng = np.random.default_rng(seed)
    spec = BASE.model_copy(update=truth)
    out = []
    for job in jobs or quick_jobs():
        bw = predict(spec, job, writes_queue)["bw_Bps"] * math.exp(rng.normal(0.0, noise))
        f = job.read_fraction
        latency_us = job.inflight * job.bs / bw * 1e6  # what fio reports beside the rate (Little's law, N = X R)
        out.append(Job(job.id, job.rw, job.bs, job.iodepth, job.numjobs, f, bw_Bps=bw, lat_us=latency_us, spread=noise, runs=3,
                       read_bw_Bps=bw * f, write_bw_Bps=bw * (1 - f)))
    return out


@pytest.mark.parametrize("writes_queue", [True, False])
def test_noise_free_data_recovers_the_parameters_exactly(writes_queue: bool):
    result = fit.fit(synthetic(TRUTH, 0.0, 0, writes_queue=writes_queue), BASE)
    assert result.writes_queue is writes_queue  # the law it was made with wins
    assert set(result.costs) == {"buffered", "queueing"}
    for name in result.informed:
        assert result.values[name] == pytest.approx(TRUTH[name], rel=2e-3), name
    assert max(abs(r["error_pct"]) for r in result.residuals) < 0.1


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), noise=st.sampled_from([0.03, 0.06, 0.10]))
def test_noisy_data_truth_within_four_standard_errors(seed: int, noise: float):
    result = fit.fit(synthetic(TRUTH, noise, seed), BASE, loss="linear")
    assert set(result.informed) == set(TRUTH)
    for name in result.informed:
        deviation = abs(math.log(result.values[name] / TRUTH[name]))  # log-space error = relative error
        assert deviation <= 4.0 * result.rel_stderr[name] + 1e-3, (name, result.values[name], result.rel_stderr[name])  # P(> 4 sd) ~ 6e-5
    # the residual scale estimates the noise it was made with (chi-square with ~20 dof: within a factor 2)
    job = synthetic(TRUTH, noise, seed)[0]
    assert 0.5 < result.s * fit.sigma(job, noise) / noise < 2.0


def test_uncertainty_coverage_is_about_nominal():
    """Over 20 noisy data sets, +/- 2 standard errors must cover the truth ~95 % of the time (accept 80 %+)."""
    hits = total = 0
    for seed in range(20):
        result = fit.fit(synthetic(TRUTH, 0.08, 1000 + seed), BASE, loss="linear")
        for name in result.informed:
            total += 1
            hits += abs(math.log(result.values[name] / TRUTH[name])) <= 2.0 * result.rel_stderr[name]
    assert hits / total >= 0.80


def test_read_only_bundle_leaves_write_fields_at_the_base_and_says_why():
    reads = [j for j in synthetic(TRUTH, 0.02, 3) if j.read_fraction == 1.0]
    result = fit.fit(reads, BASE)
    for name in FIELDS["write"]:
        assert result.values[name] == getattr(BASE, name)
        assert "no write jobs" in result.not_informed[name]
    assert "rand_write_iops" in result.not_informed


def test_a_parameter_no_job_depends_on_is_dropped():
    # only large sequential reads at QD1: rand_read_iops is invisible (the 4 KiB point of the law is never used)
    jobs = [Job(f"r{b}", "read", float(b), 1, 1, 1.0) for b in (1 << 20, 2 << 20, 4 << 20)]
    truth = dict(TRUTH, rand_read_iops=1e6)  # so high the two-point law is bandwidth-bound everywhere: no command cost
    data = synthetic(truth, 0.0, 0, jobs)
    result = fit.fit(data, BASE)
    assert "rand_read_iops" in result.not_informed


def test_too_few_jobs_is_a_clear_error():
    with pytest.raises(fit.FitError, match="cannot determine"):
        fit.fit(synthetic(TRUTH, 0.0, 0)[:2], BASE)  # two read jobs, three read parameters
    with pytest.raises(fit.FitError, match="no jobs"):
        fit.fit([], BASE)


def test_noisy_jobs_weigh_less():
    pooled = 0.1
    quiet = Job("a", "randread", 4096, 1, 1, 1.0, bw_Bps=1.0, spread=0.01, runs=3)
    loud = Job("b", "randread", 4096, 1, 1, 1.0, bw_Bps=1.0, spread=0.40, runs=3)
    assert fit.sigma(quiet, pooled) < fit.sigma(loud, pooled)
    # two runs that agree by luck are pulled toward the pool, never below the floor
    assert fit.sigma(quiet, pooled) > 0.05 and fit.sigma(Job("c", "read", 4096, 1, 1, 1.0, spread=0.0, runs=2), 0.0) == fit.SPREAD_FLOOR


def test_holdout_keeps_every_stratum_in_training():
    jobs = synthetic(TRUTH, 0.0, 0)
    for seed in range(10):
        training, held = fit.split_holdout(jobs, 0.5, seed)
        assert {j.id for j in training}.isdisjoint(j.id for j in held)
        assert len(training) + len(held) == len(jobs)
        assert {fit.stratum(j) for j in training} == {fit.stratum(j) for j in jobs}
        assert len(held) >= len(jobs) * 0.4
    with pytest.raises(fit.FitError, match=r"\[0, 1\)"):
        fit.split_holdout(jobs, 1.0, 0)


def test_buffered_law_is_the_simulators_closed_loop():
    """Oracle: models.ssd.closed_loop, the law the simulator's flows use, for catalog drives; read-only jobs under either switch."""
    for entry in catalog.entries("ssd"):
        for job in quick_jobs():
            expected, latency = ssd_model.closed_loop(entry.spec, job.bs, job.inflight, job.read_fraction, job.pattern, overwrite=False, fill=0.0)
            got = predict(entry.spec, job, writes_queue=False)
            assert got["bw_Bps"] == pytest.approx(expected, rel=1e-12)
            assert got["lat_us"] == pytest.approx(latency * 1e6, rel=1e-12)
            assert simulator_predict(entry.spec, job)["bw_Bps"] == pytest.approx(expected, rel=1e-12)
            if job.read_fraction == 1.0:
                assert predict(entry.spec, job, writes_queue=True)["bw_Bps"] == pytest.approx(expected, rel=1e-12)


def test_law_is_the_exact_balanced_network_solution():
    """Oracle: the textbook MVA (Lazowska et al. 1984, ch. 6) of K = L0 / D stations: floor(K) of demand D and one of
    (K - floor(K)) D (tests/queueing_oracle.law_latency); a whole K gives X(N) = N / ((K + N - 1) D)."""
    spec = BASE.model_copy(update=TRUTH)
    for rw, f in (("randread", 1.0), ("randwrite", 0.0)):
        job = Job("x", rw, 4096.0, 1, 1, f)
        d, queued, l0 = service_and_latency(spec, job)
        assert queued == pytest.approx(d)  # no link bound at 4 KiB: the queued time is the whole service time
        k = l0 / d
        assert k > 1
        for n in (1, 2, 7, 64, 1000):
            trial = Job("x", rw, 4096.0, n, 1, f)
            assert predict(spec, trial)["iops"] == pytest.approx(n / law_latency(l0, d, n), rel=1e-9)
        # asymptotes: QD1 = 1 / L0, deep queues -> 1 / D; Little's law for the latency
        assert predict(spec, job)["iops"] == pytest.approx(1.0 / l0)
        deep = Job("x", rw, 4096.0, 10**6, 1, f)
        assert predict(spec, deep)["iops"] == pytest.approx(1.0 / d, rel=1e-3)
        assert predict(spec, deep)["lat_us"] * 1e-6 * predict(spec, deep)["iops"] == pytest.approx(10**6)
    # buffered writes do not queue: flat at N / L0 until the ceiling (the asymptotic bound)
    writes = Job("w", "randwrite", 4096.0, 4, 1, 0.0)
    d, queued, l0 = service_and_latency(spec, writes, writes_queue=False)
    assert queued == 0.0
    assert predict(spec, writes, writes_queue=False)["iops"] == pytest.approx(min(4 / l0, 1 / d))


def test_mixed_job_uses_both_directions():
    spec = BASE.model_copy(update=TRUTH)
    mix = Job("m", "randrw", 16384.0, 8, 1, 0.7)
    reads = Job("r", "randread", 16384.0, 8, 1, 1.0)
    writes = Job("w", "randwrite", 16384.0, 8, 1, 0.0)
    rates = sorted(predict(spec, j)["bw_Bps"] for j in (reads, writes))
    assert rates[0] <= predict(spec, mix)["bw_Bps"] <= rates[1]


@settings(max_examples=40, deadline=None, derandomize=True)
@example(seq_read=5796.2, iops=1592052.5, read_latency=37.4, seq_write=8352.2, write_latency=69.2, writes_queue=True)  # iops bounded
@example(seq_read=673.9, iops=383430.2, read_latency=172.0, seq_write=2399.4, write_latency=59.4, writes_queue=False)  # iops unseen
@given(seq_read=st.floats(500.0, 60000.0), iops=st.floats(2e4, 2e6), read_latency=st.floats(10.0, 200.0),
       seq_write=st.floats(300.0, 10000.0), write_latency=st.floats(10.0, 200.0), writes_queue=st.booleans())
def test_a_fit_of_data_its_law_made_reproduces_them_whatever_the_drive(seq_read, iops, read_latency, seq_write, write_latency,
                                                                      writes_queue):
    """Oracle: data made by the law itself have a zero-residual solution (the truth), so a fit that ends with
    residuals has left a parameter where the data exclude it.  That happened when a ceiling no job reached was
    put back to a base value below what a job measured (the seq read ceiling of a drive behind a slower link).
    And each field's label holds under a finite difference through the law, independent of the fit's Jacobian:
    a field the profile keeps at the base moves no prediction by +/- 1 %; a bounded one moves some when moved
    1 % toward the base it excludes.  (One start from the data's guess stalled on 8 of 150 such drives, at the
    kinks of min(latency law, ceiling); the fit's extra starts are what this holds for.)"""
    truth = {"seq_read_MBps": seq_read, "rand_read_iops": iops, "read_latency_us": read_latency,
             "seq_write_MBps": seq_write, "write_latency_us": write_latency}
    truth_spec = BASE.model_copy(update=truth)
    # a drive, not a cache: its QD1 requests run at most at half its ceiling (every SSD and virtual disk measured
    # here has several units' worth of IOPS behind its QD1 latency: 7450 80 us x 1 M IOPS = 80 units, this VM's
    # disk about 4).  Nearer one unit the QD1 job sits on the kink of min(latency law, ceiling), where a
    # finite-difference optimizer can stall: a known limit of the fit, not asserted here.
    for job in TINY_JOBS:
        if job.iodepth == 1:
            ceiling_s, _, latency_s = service_and_latency(truth_spec, job, writes_queue)
            assume(latency_s >= 2.0 * ceiling_s)
    # and small reads run faster than large ones: 4 KiB IOPS at least 4x the 128 KiB request rate (the 7450: 19x;
    # this VM's disk: 8x).  Below 1x models.ssd.two_point_fit has no command-cost law and jumps to its fallback.
    assume(truth_spec.rand_read_ceiling_iops >= 4.0 * seq_read * 1e6 / 131072)
    jobs = synthetic(truth, 0.0, 0, TINY_JOBS, writes_queue=writes_queue)
    result = fit.fit(jobs, BASE, writes_queue=writes_queue)
    assert max(abs(r["error_pct"]) for r in result.residuals) < 0.1, (result.residuals, result.bounded, result.not_informed)
    assert result.spec is not None
    base_values = BASE.model_dump()
    for name in (*FIELDS["read"], *FIELDS["write"]):
        if name in result.not_informed:
            assert result.values[name] == base_values[name]
            assert max(prediction_shift(result.spec, name, factor, jobs, writes_queue) for factor in (1.01, 0.99)) < 1e-9, name
        elif name in result.bounded:
            toward_base = 1.01 if base_values[name] > result.values[name] else 0.99
            assert prediction_shift(result.spec, name, toward_base, jobs, writes_queue) > 1e-9, name
        else:
            assert name in result.informed
