"""Checkpoint interval, goodput, lost work, energy per useful hour and endurance (models/goodput.py).

Oracles: Young's and Daly's published closed forms written out here again;
the renewal argument for exponential failures (goodput = E[work per gap] /
E[gap], summed in closed form below independently of the module); numerical
integration (scipy.integrate.quad) for the lost work; a numerical maximiser
(scipy.optimize) for the exact optimum; the definition of a DWPD rating.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from iowatt.models import goodput as gp
from scipy.integrate import quad
from scipy.optimize import minimize_scalar

deltas = st.floats(min_value=1.0, max_value=2_000.0)
mtbfs = st.floats(min_value=3_600.0, max_value=1e7)


def exact_optimum(delta: float, mtbf: float, restart: float = 0.0) -> float:
    result = minimize_scalar(lambda t: -gp.goodput(t, delta, mtbf, restart), bounds=(1e-3, 20 * mtbf), method="bounded", options={"xatol": 1e-7})
    return float(result.x)


@settings(max_examples=40, deadline=None)
@given(delta=deltas, mtbf=mtbfs)
def test_young_and_daly_match_their_closed_forms(delta, mtbf):
    # Young 1974: sqrt(2 delta M); Daly 2006 eq. (37): sqrt(2dM)[1 + (d/2M)^0.5/3 + (d/2M)/9] - d for d < 2M
    assert gp.young_interval(delta, mtbf) == pytest.approx((2.0 * delta * mtbf) ** 0.5, rel=1e-12)
    x = delta / (2.0 * mtbf)
    daly = (2.0 * delta * mtbf) ** 0.5 * (1.0 + x**0.5 / 3.0 + x / 9.0) - delta
    assert gp.daly_interval(delta, mtbf) == pytest.approx(daly, rel=1e-12)


def test_daly_beyond_two_mtbf_is_the_mtbf():
    assert gp.daly_interval(5_000.0, 2_000.0) == 2_000.0


@settings(max_examples=30, deadline=None)
@given(
    delta=st.floats(min_value=10.0, max_value=2_000.0),
    mtbf=st.floats(min_value=3_600.0, max_value=1e6),
    restart=st.floats(min_value=0.0, max_value=1_800.0),
    share=st.floats(min_value=0.2, max_value=3.0),
)
def test_goodput_is_the_renewal_reward_ratio(delta, mtbf, restart, share):
    # Between failures (X ~ Exp(M)) the job completes k segments of L = tau + delta when X >= R + k L:
    # E[k] = sum_k P(X >= R + kL) = sum_k e^-(R + kL)/M, summed term by term here (up to e^-60);
    # goodput = tau E[k] / E[X] = tau E[k] / M.
    tau = share * gp.young_interval(delta, mtbf)
    period = tau + delta
    k = np.arange(1, int(60.0 * mtbf / period) + 2, dtype=float)
    expected_segments = float(np.exp(-(restart + k * period) / mtbf).sum())
    assert gp.goodput(tau, delta, mtbf, restart) == pytest.approx(tau * expected_segments / mtbf, rel=1e-9)
    # and the textbook first-order waste model agrees to first order in (tau + delta)/M
    if period / mtbf < 1e-3 and restart / mtbf < 1e-3:
        assert gp.goodput_first_order(tau, delta, mtbf, restart) == pytest.approx(gp.goodput(tau, delta, mtbf, restart), abs=2e-3)


def test_monte_carlo_goodput_converges_to_the_exact_form():
    # 200,000 failures: the standard error of the goodput estimate is below 0.3 % here, so a 1 % tolerance
    taus = np.array([300.0, 1_400.0, 6_000.0])
    simulated = gp.monte_carlo_goodput(taus, 10.0, 1e5, 120.0, failures=200_000, seed=3)
    exact = [gp.goodput(t, 10.0, 1e5, 120.0) for t in taus]
    assert simulated == pytest.approx(exact, rel=1e-2)


@pytest.mark.parametrize("seed", [0, 1])
def test_simulated_optimum_converges_to_young_daly_when_checkpoints_are_cheap(seed):
    """The simulated optimum tracks the exact optimum to 1 % (grid + sampling noise, measured <= 0.7 % over 8 seeds),
    and its distance to Young shrinks like Young's own first-order error as delta/M -> 0: <= 2 % at delta/M = 1e-4."""
    mtbf = 1e5
    gaps = []
    for delta in (1_000.0, 100.0, 10.0):  # delta/M = 1e-2, 1e-3, 1e-4
        tau, best = gp.monte_carlo_optimum(delta, mtbf, 60.0, failures=200_000, seed=seed)
        assert tau == pytest.approx(exact_optimum(delta, mtbf, 60.0), rel=1e-2)
        assert tau == pytest.approx(gp.daly_interval(delta, mtbf), rel=1.5e-2)
        assert best == pytest.approx(gp.goodput(tau, delta, mtbf, 60.0), rel=1e-2)
        gaps.append(abs(tau / gp.young_interval(delta, mtbf) - 1.0))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.02


@settings(max_examples=30, deadline=None)
@given(delta=deltas, mtbf=mtbfs, share=st.floats(min_value=0.05, max_value=5.0))
def test_expected_lost_work_is_the_truncated_exponential_mean(delta, mtbf, share):
    period = share * gp.young_interval(delta, mtbf) + delta
    tau = period - delta
    mass = -math.expm1(-period / mtbf)
    mean, _ = quad(lambda t: t * math.exp(-t / mtbf) / mtbf, 0.0, period, epsabs=0.0, epsrel=1e-11)
    assert gp.expected_lost_work(tau, delta, mtbf) == pytest.approx(mean / mass, rel=1e-6)
    assert gp.expected_lost_work(tau, delta, mtbf) < period / 2.0 + 1e-9 * period  # failures early in a segment are likelier


def test_energy_per_useful_hour_without_failures_is_compute_plus_checkpoints():
    # M -> infinity: goodput = tau / (tau + delta); per useful hour: 3600 s of compute + 3600/tau checkpoints
    tau, delta, run_W, ckpt_J = 1_800.0, 60.0, 6_000.0, 30_000.0
    per_hour = gp.energy_per_useful_hour_J(tau, delta, 1e15, 0.0, run_W, ckpt_J)
    assert per_hour == pytest.approx(run_W * 3600.0 + ckpt_J * 3600.0 / tau, rel=1e-6)
    # with failures, lost work and restarts are paid at run power: more energy per useful hour
    assert gp.energy_per_useful_hour_J(tau, delta, 1e5, 600.0, run_W, ckpt_J) > per_hour


def test_endurance_at_the_rated_write_rate_is_the_warranty():
    # a 61.44 TB, 0.58 DWPD, 5-year drive written at exactly 0.58 DWPD lasts exactly 5 years (the rating's definition)
    capacity = 61.44e12
    per_day = 24.0
    checkpoint = 0.58 * capacity / per_day
    dwpd = gp.drive_writes_per_day(checkpoint, per_day, capacity)
    assert dwpd == pytest.approx(0.58, rel=1e-12)
    assert gp.endurance_years(0.58, 5.0, dwpd) == pytest.approx(5.0, rel=1e-12)
    # write amplification 2 wears twice as fast; a rating quoted at WA 2 (random 16K) allows twice the NAND writes
    nand = gp.drive_writes_per_day(checkpoint, per_day, capacity, 2.0)
    assert gp.endurance_years(0.58, 5.0, nand) == pytest.approx(2.5, rel=1e-12)
    assert gp.endurance_years(0.58, 5.0, nand, rating_wa=2.0) == pytest.approx(5.0, rel=1e-12)
    assert gp.endurance_years(1.0, 5.0, 0.0) == math.inf
    # 415 GB every (1,583 + 125) s on one 61.44 TB drive: 50.6 checkpoints/day, 0.342 DWPD
    per_day = gp.checkpoints_per_day(1_583.0, 125.0)
    assert per_day == pytest.approx(86_400.0 / 1_708.0, rel=1e-12)
    assert gp.drive_writes_per_day(415e9, per_day, capacity) == pytest.approx(415e9 * 86_400.0 / 1_708.0 / 61.44e12, rel=1e-12)


def test_bad_inputs_name_the_quantity():
    with pytest.raises(ValueError, match=r"failure\.nodes"):
        gp.FailureModel(nodes=0, node_mtbf_hours=10.0)
    with pytest.raises(ValueError, match=r"failure\.node_mtbf_hours"):
        gp.FailureModel(nodes=2, node_mtbf_hours=0.0)
    with pytest.raises(ValueError, match="checkpoint interval"):
        gp.goodput(0.0, 10.0, 100.0)
    with pytest.raises(ValueError, match="write amplification"):
        gp.drive_writes_per_day(1.0, 1.0, 1.0, 0.5)
    assert gp.FailureModel(nodes=2048, node_mtbf_hours=6330.0).mtbf_seconds == pytest.approx(6330.0 * 3600.0 / 2048.0)


def _simulated_design_goodput(tau: float, stall: float, mtbf: float, paths: list[gp.Recovery], gaps: int, seed: int) -> float:
    """An independent event simulation of a save design: failures one after another, each drawn exponential,
    each recovering by a path drawn by its share; after the restart, checkpoints begin at j P - s and are
    restorable A later; the work credited in a gap is tau per checkpoint restorable before the gap ends."""
    rng = np.random.default_rng(seed)
    period = tau + stall
    shares = np.array([p.share for p in paths])
    kinds = rng.choice(len(paths), size=gaps + 1, p=shares / shares.sum())
    lengths = rng.exponential(mtbf, size=gaps)
    work = 0.0
    for i in range(gaps):
        begun_by, ended_by = paths[kinds[i]], paths[kinds[i + 1]]
        t = begun_by.restart_seconds  # restart, then segments
        j = 1
        while t + j * period - stall + ended_by.ready_after_seconds <= lengths[i]:
            work += tau
            j += 1
    return work / lengths.sum()


@settings(max_examples=5, deadline=None)
@example(stall=2.0, lag=900.0, local=0.3, restart=600.0)  # a lag that costs 5 % of goodput: the test must see it
@given(
    stall=st.floats(min_value=1.0, max_value=60.0),
    lag=st.floats(min_value=0.0, max_value=900.0),
    local=st.floats(min_value=0.0, max_value=1.0),
    restart=st.floats(min_value=0.0, max_value=1_200.0),
)
def test_design_goodput_matches_an_event_simulation(stall, lag, local, restart):
    """Oracle: an independent event simulation (explicit loop over failures and checkpoints, no closed form)."""
    mtbf = 4 * 3_600.0
    tau = gp.daly_interval(stall, mtbf)
    paths = [gp.Recovery(local, restart / 3, stall + lag / 5), gp.Recovery(1.0 - local, restart, stall + lag)]
    simulated = _simulated_design_goodput(tau, stall, mtbf, paths, gaps=40_000, seed=7)
    # 40,000 exponential gaps: the ratio's standard error is about 0.5 %
    assert gp.design_goodput(tau, stall, mtbf, paths) == pytest.approx(simulated, abs=0.015)


@settings(max_examples=30, deadline=None)
@given(delta=deltas, mtbf=mtbfs, restart=st.floats(min_value=0.0, max_value=1_800.0))
def test_design_goodput_of_a_blocking_save_is_dalys(delta, mtbf, restart):
    """Oracle: Daly's exact goodput.  A checkpoint restorable when its stall ends (A = s) on one recovery path."""
    tau = gp.daly_interval(delta, mtbf)
    assert gp.design_goodput(tau, delta, mtbf, [gp.Recovery(1.0, restart, delta)]) == pytest.approx(gp.goodput(tau, delta, mtbf, restart), rel=1e-12)


def test_design_interval_leaves_room_for_the_background_write():
    """The interval is Daly's for the stall, unless the design's background work needs a longer period."""
    mtbf = 3 * 3_600.0
    assert gp.design_interval(0.5, 10.0, mtbf) == pytest.approx(gp.daly_interval(0.5, mtbf))
    assert gp.design_interval(0.5, 5_000.0, mtbf) == pytest.approx(4_999.5)
