"""The closed loop's bounded count in models.fork_join: what a piece finds at its unit is at most one piece of each
other request, so its count has less spread than the open M/M/1-PS queue's geometric one.

Oracles: order statistics (the largest of p pieces' stays is no shorter than one piece's mean stay, 1 + found, the
MVA residence) and the convex order (a binomial count is less variable than a geometric one of the same mean, so
the slowest of p independent pieces is expected sooner).  The per-request referee
(tests/test_per_request_referee.py) checks the law against simulation.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models.fork_join import expected_max


@settings(max_examples=40, deadline=None, derandomize=True)
@given(pieces=st.integers(2, 16), others=st.integers(1, 63), share=st.floats(0.0, 0.95), sigma=st.sampled_from([0.1, 0.25, 0.45]))
def test_a_bounded_count_makes_the_slowest_piece_sooner_but_not_faster_than_one(pieces: int, others: int, share: float, sigma: float) -> None:
    found = share * min(others, 8)  # a unit's mean count: below the other requests' number
    closed = expected_max(pieces, found, sigma, others=others)
    assert closed >= (1.0 + found) * (1.0 - 1e-3)
    assert closed <= expected_max(pieces, found, sigma) * (1.0 + 2e-3)


def test_alone_the_count_does_not_matter() -> None:
    """Oracle: with nothing found the request takes the largest of p lognormal works, whatever the population."""
    assert expected_max(16, 0.0, 0.25, others=3) == expected_max(16, 0.0, 0.25)
