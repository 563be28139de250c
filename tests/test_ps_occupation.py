"""The other requests' occupation of a piece's attained service at a processor-sharing unit (models.ps_occupation).

Oracles: renewal theory (a stationary alternating renewal process is present a share q of any interval: E[Y] = q x),
an independent Monte-Carlo run of the same sources (present for a lognormal work, away for an exponential time,
started stationary), and the finite-source PS unit's count solved from its generator (the machine-repairman chain
of N - 1 sources: births (N - 1 - k) / Z, deaths at the unit's rate, its null vector by linear algebra).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models.ps_occupation import environments, occupation_laws


def _monte_carlo(q: float, sigma: float, x: float, samples: int = 200_000) -> np.ndarray:
    """One source's present time in [0, x], simulated period by period."""
    rng = np.random.default_rng(11)
    mu = -0.5 * sigma * sigma
    present = rng.random(samples) < q
    # stationary start: a present source is in a length-biased work (lognormal at mu + sigma^2), a uniform way in
    left = np.where(present, rng.random(samples) * np.exp(rng.normal(mu + sigma * sigma, sigma, samples)),
                    rng.exponential((1.0 - q) / q, samples))
    t = np.zeros(samples)
    occupied = np.zeros(samples)
    while True:
        live = t < x
        if not live.any():
            return occupied
        occupied += np.where(present & live, np.clip(np.minimum(t + left, x) - t, 0.0, None), 0.0)
        t = t + left
        present = ~present
        left = np.where(present, np.exp(rng.normal(mu, sigma, samples)), rng.exponential((1.0 - q) / q, samples))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(q=st.floats(0.001, 0.99), sigma=st.sampled_from([0.1, 0.25, 0.5]), x=st.floats(0.2, 3.0))
def test_a_source_is_present_its_share_of_any_horizon(q: float, sigma: float, x: float) -> None:
    """Oracle: renewal theory, E[Y] = q x for a stationary alternating renewal process; and the law sums to one.
    (The grid rounds each period to whole cells of 3 % of a mean work: away periods far shorter, q near one, move
    the mean by up to 0.4 %.)"""
    laws, h = occupation_laws(q, sigma, np.array([x, 3.0]))
    mean = float(laws[0] @ (h * np.arange(laws.shape[1])))
    assert abs(laws[0].sum() - 1.0) < 1e-9
    assert abs(mean - q * x) <= 5e-3 * x + 1e-6


@settings(max_examples=6, deadline=None, derandomize=True)
@given(q=st.sampled_from([0.02, 0.2, 0.5, 0.85]), sigma=st.sampled_from([0.25, 0.5]), x=st.sampled_from([0.5, 1.0, 2.2]))
def test_the_grid_law_matches_a_simulation_of_the_sources(q: float, sigma: float, x: float) -> None:
    """Oracle: a Monte-Carlo run of one source (200,000 starts): the law's variance, P(never present) and P(present
    all along) agree within sampling error."""
    laws, h = occupation_laws(q, sigma, np.array([x, 3.0]))
    y = h * np.arange(laws.shape[1])
    mean = float(laws[0] @ y)
    variance = float(laws[0] @ y**2) - mean**2
    sampled = _monte_carlo(q, sigma, x)
    assert abs(variance - sampled.var()) <= 0.03 * sampled.var() + 2e-4
    assert abs(laws[0][0] - np.mean(sampled < 0.5 * h)) <= 0.006
    whole = round(x / h)
    assert abs(laws[0][whole:].sum() - np.mean(sampled > x - 0.5 * h)) <= 0.006


def _repairman_count(others: int, think_over_service: float) -> np.ndarray:
    """Stationary count at a PS unit fed by `others` sources (exponential think time Z, service rate 1 shared):
    the generator's null vector, solved by least squares."""
    size = others + 1
    generator = np.zeros((size, size))
    for k in range(size):
        if k < others:
            generator[k, k + 1] = (others - k) / think_over_service
        if k > 0:
            generator[k, k - 1] = 1.0
        generator[k, k] = -generator[k].sum()
    system = np.vstack([generator.T, np.ones(size)])
    target = np.zeros(size + 1)
    target[-1] = 1.0
    return np.linalg.lstsq(system, target, rcond=None)[0]


@settings(max_examples=30, deadline=None, derandomize=True)
@given(others=st.integers(1, 40), think=st.floats(0.3, 200.0))
def test_the_shared_environment_gives_the_count_the_finite_source_spread(others: int, think: float) -> None:
    """Oracle: the repairman chain's stationary count (from its generator).  The environment keeps the mean share
    (weights sum to one, mean q = found / others) and its mixture of binomial counts has the chain's variance;
    with one other source there is nothing to spread."""
    count = _repairman_count(others, think)
    k = np.arange(others + 1)
    found = float(count @ k)
    if found / others > 0.99:
        return
    points = environments(found, others)
    weights = np.array([w for _q, w in points])
    shares = np.array([q for q, _w in points])
    assert math.isclose(weights.sum(), 1.0, rel_tol=1e-12)
    assert math.isclose(float(weights @ shares), found / others, rel_tol=1e-6)
    if others == 1:
        assert len(points) == 1
        return
    mixed = float(weights @ (others * shares * (1.0 - shares) + (others * shares) ** 2)) - found**2
    chain = float(count @ k**2) - found**2
    clipped = shares.min() <= 1e-6 or shares.max() >= 0.995
    assert clipped or math.isclose(mixed, max(chain, others * (found / others) * (1 - found / others)), rel_tol=1e-4)
