"""The slowest piece of a request striped over hard disks (models.disk_join): one disk's sojourn law for a piece.

Oracles: the per-request mode's own positioning draws (simulator.per_request.hdd), the order-statistics integral of
idle disks' positionings (models.hdd.slowest_positioning_seconds), and Little's law on the disk's stationary chain
(the mean of the tagged piece's sojourn law against the mean held over the completion rate).  The join against the
per-request mode itself: tests/test_per_request_referee.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog, hdd
from iowatt.models.disk_join import slowest_piece

SPEC = catalog.spec_from("hdd", "hdd-7200rpm-sas-8tb")
SPAN = 10 * 2**30 / SPEC.capacity_bytes  # the referee's 10 GiB file


class _Disk:
    spec = SPEC
    span_fraction = SPAN


def _disk(depths: int, block: int = 4096) -> tuple[tuple[float, ...], tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """Mean service, squared coefficient of variation and positioning quantiles at start depths 1..depths."""
    service = tuple(float(hdd.random_service_seconds(SPEC, block, j, SPAN)) for j in range(1, depths + 1))
    scv = tuple(hdd.positioning_variance_seconds2(SPEC, j, SPAN) / s**2 for j, s in enumerate(service, 1))
    shape = tuple(hdd.positioning_quantiles(SPEC, j, SPAN, False, 128) for j in range(1, depths + 1))
    return service, scv, shape


@pytest.mark.parametrize("depth", [1, 4, 16])
def test_positioning_quantiles_match_the_per_request_draws(depth: int) -> None:
    """Oracle: 40,000 positionings drawn as the per-request disk draws them (rpo: the cheapest of n with probability
    eta, else one candidate); their deciles about the mean."""
    from iowatt.simulator.per_request.hdd import Positioning

    draws = Positioning(_Disk(), np.random.default_rng(5))  # type: ignore[arg-type]
    x = np.array([draws.next(depth, False) for _ in range(40_000)])
    q = np.array(hdd.positioning_quantiles(SPEC, depth, SPAN, False, 128))
    levels = np.arange(1, 10) / 10
    law = np.interp(levels, (np.arange(128) + 0.5) / 128, q)
    assert law == pytest.approx(np.quantile(x, levels) - x.mean(), abs=0.03 * x.mean())


@pytest.mark.parametrize("pieces", [2, 4, 16])
def test_a_request_alone_waits_for_the_slowest_idle_positioning(pieces: int) -> None:
    """Oracle: the largest of p one-candidate positionings, int 1 - F(t)^p dt over the law's cdf
    (models.hdd.slowest_positioning_seconds); overhead and transfer are the same on every disk."""
    service, scv, shape = _disk(1)
    exact = service[0] - hdd.positioning_seconds(SPEC, 1, SPAN) + hdd.slowest_positioning_seconds(SPEC, pieces, SPAN)
    assert slowest_piece(service, scv, shape, 1, 1.0, pieces).slowest_s == pytest.approx(exact, rel=0.001)


@settings(max_examples=25, deadline=None)
@given(customers=st.integers(2, 12), think=st.floats(0.2, 20.0), stay=st.sampled_from([0.0, 1 / 16, 0.25, 0.5]))
def test_a_pieces_sojourn_law_keeps_littles_law(customers: int, think: float, stay: float) -> None:
    """Oracle: Little's law on the disk's stationary chain (mean held / completions per second): the mean of the
    tagged piece's sojourn law, built from what an arriving piece finds and the draws it waits through, is the same."""
    service, scv, shape = _disk(customers)
    join = slowest_piece(service, scv, shape, customers, round(think * service[0], 12), 1, stay)
    assert join.slowest_s == pytest.approx(join.held / join.done, rel=0.003)


@settings(max_examples=15, deadline=None)
@given(customers=st.integers(1, 8), think=st.floats(0.2, 20.0), pieces=st.integers(1, 15))
def test_more_pieces_wait_longer(customers: int, think: float, pieces: int) -> None:
    """Theory: the largest of p + 1 independent sojourns is at least the largest of p, and no more than p + 1 times
    the mean (E[max] <= E[sum])."""
    service, scv, shape = _disk(customers)
    z = round(think * service[0], 12)
    few, more = (slowest_piece(service, scv, shape, customers, z, p) for p in (pieces, pieces + 1))
    assert few.slowest_s <= more.slowest_s * (1 + 1e-9)
    assert more.slowest_s <= (pieces + 1) * more.sojourn_s * 1.003


@settings(max_examples=20, deadline=None)
@given(customers=st.integers(1, 8), think=st.floats(0.2, 20.0), pieces=st.integers(1, 16),
       stay=st.sampled_from([0.0, 1 / 16, 0.25]))
def test_associated_pieces_wait_no_longer_than_independent_ones(customers: int, think: float, pieces: int,
                                                                 stay: float) -> None:
    """Theory: for associated sojourns with given marginals the largest is stochastically smaller than for
    independent copies (Esary, Proschan & Walkup 1967; here Jensen over the others' state, as the join keeps each
    disk's own law); the two agree alone (N = 1) or for one piece."""
    service, scv, shape = _disk(customers)
    join = slowest_piece(service, scv, shape, customers, round(think * service[0], 12), pieces, stay)
    assert join.slowest_s <= join.independent_s * (1 + 1e-9)
    if customers == 1 or pieces == 1:
        assert join.slowest_s == pytest.approx(join.independent_s, rel=1e-9)


@pytest.mark.parametrize("pieces", [2, 4, 16])
def test_another_requests_pending_pieces_match_a_simulation(pieces: int) -> None:
    """Oracle: an independent simulation of back-to-back phases of p independent pieces (exponential sojourns), each
    phase ending with its last piece, seen at random times: how many of the current phase's pieces are pending."""
    from iowatt.models.disk_join import other_request_pending

    rng = np.random.default_rng(11)
    sojourns = rng.exponential(1.0, (200_000, pieces))
    phase = sojourns.max(axis=1)
    picked = rng.choice(len(phase), 200_000, p=phase / phase.sum())  # a random time falls in a phase by its length
    age = rng.random(len(picked)) * phase[picked]
    pending = (sojourns[picked] > age[:, None]).sum(axis=1)
    seen = np.bincount(pending, minlength=pieces + 1)[1:] / len(pending)
    dt = 0.002
    law = other_request_pending(1.0 - np.exp(-np.arange(0.0, 40.0, dt) - dt / 2), pieces)
    assert law == pytest.approx(seen, abs=0.005)
