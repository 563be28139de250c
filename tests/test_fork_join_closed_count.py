"""The closed loop's join in models.fork_join: each other request has at most one piece at a unit, so what a piece
meets there is bounded (models.ps_occupation), unlike the open M/M/1-PS queue's unbounded stay.

Oracles: order statistics and processor sharing's bounds (the largest of p stays is no shorter than one piece's
mean stay 1 + found, the MVA residence, and grows with p; each of N - 1 others adds at most the tagged piece's own
work, so no stay exceeds N x) and a Monte-Carlo run of the tagged piece with one other request (a lognormal work,
the other present for its own works and away for exponential times, processor sharing served exactly).  The
per-request referee (tests/test_per_request_referee.py) checks the law against the whole simulated array.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models.fork_join import expected_max


@settings(max_examples=40, deadline=None, derandomize=True)
@given(pieces=st.integers(2, 15), others=st.integers(1, 63), share=st.floats(0.0, 0.95), sigma=st.sampled_from([0.1, 0.25, 0.45]))
def test_the_slowest_piece_lies_between_one_stay_and_every_other_present(pieces: int, others: int, share: float, sigma: float) -> None:
    found = share * min(others, 8)  # a unit's mean count: below the other requests' number
    closed = expected_max(pieces, found, sigma, others=others)
    assert closed >= (1.0 + found) * (1.0 - 1e-3)
    assert closed <= expected_max(pieces + 1, found, sigma, others=others) * (1.0 + 1e-3)
    assert closed <= (1.0 + others) * expected_max(pieces, 0.0, sigma) * (1.0 + 1e-3)


def _one_other_monte_carlo(pieces: int, share: float, sigma: float, requests: int = 200_000) -> float:
    """E[largest of `pieces` stays] with one other source, simulated: the tagged work x; the other present at the
    start with probability `share` (a uniform way into a length-biased work), else away; while both are present each
    gets the same service, so the stay is x plus the other's present time within the tagged piece's service."""
    rng = np.random.default_rng(5)
    mu = -0.5 * sigma * sigma
    stays = np.empty((requests, pieces))
    for j in range(pieces):
        x = np.exp(rng.normal(mu, sigma, requests))
        present = rng.random(requests) < share
        left = np.where(present, rng.random(requests) * np.exp(rng.normal(mu + sigma * sigma, sigma, requests)),
                        rng.exponential((1.0 - share) / share, requests))
        t = np.zeros(requests)
        occupied = np.zeros(requests)
        while (t < x).any():
            occupied += np.where(present & (t < x), np.clip(np.minimum(t + left, x) - t, 0.0, None), 0.0)
            t = t + left
            present = ~present
            left = np.where(present, np.exp(rng.normal(mu, sigma, requests)), rng.exponential((1.0 - share) / share, requests))
        stays[:, j] = x + occupied
    return float(stays.max(axis=1).mean())


@settings(max_examples=6, deadline=None, derandomize=True)
@given(pieces=st.sampled_from([2, 6, 16]), share=st.sampled_from([0.05, 0.3, 0.7]), sigma=st.sampled_from([0.1, 0.25]))
def test_with_one_other_request_the_join_matches_a_simulation(pieces: int, share: float, sigma: float) -> None:
    """Oracle: the Monte-Carlo run above (200,000 requests; its standard error is below 0.2 %)."""
    simulated = _one_other_monte_carlo(pieces, share, sigma)
    assert abs(expected_max(pieces, share, sigma, others=1) / simulated - 1.0) <= 0.01


def test_alone_the_count_does_not_matter() -> None:
    """Oracle: with nothing found the request takes the largest of p lognormal works, whatever the population."""
    assert expected_max(16, 0.0, 0.25, others=3) == expected_max(16, 0.0, 0.25)
