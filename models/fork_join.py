"""A request split over several servers completes when its slowest piece does: fork-join in a closed loop.

N requests cycle with zero think time.  Each forks into p pieces on p of U identical processor-sharing
units (the flash units of the p drives a striped request covers, one piece per drive, a random unit in
each: simulator.per_request.units) and is done when its last piece is (the join).  The join is why a
striped request is slower than its pieces: with p = 16 pieces whose times spread by sigma = 0.25 the
slowest takes ~1.5 x the mean piece even alone, and queueing at the units widens the spread further.

Mean value equation (after Varki, "Mean value technique for closed fork-join networks", ACM SIGMETRICS
1999: a request arriving at population N sees the network at N - 1, and its response time is set by the
degree of parallelism and the queue its pieces find):

    a(N-1)  mean pieces a piece finds at its unit
    R(N)  = s E[max_{i=1..p} T_i / s]          the request's time: the slowest of its p pieces
    X(N)  = N / R(N)
    a(N)  = (X(N) p / U) s (1 + a(N-1))        Little's law at one unit

With p = 1 this is Reiser & Lavenberg's exact MVA of U processor-sharing units (models.unit_mva's law).

A piece's sojourn T: a unit holding a pieces on average is taken as an M/M/1-PS queue at rho = a / (1 + a);
a piece of work x stays x / (1 - rho) on average with variance (Coffman, Muntz & Trotter, "Waiting time
distributions for processor-sharing systems", JACM 17(1), 1970; unit service rate)

    V(x) = 2 rho x / (1 - rho)^3 - 2 rho (1 - exp(-(1 - rho) x)) / (1 - rho)^4,

x lognormal of mean one with the drive's read spread sigma (simulator.per_request.latency).  T = x + D with the
delay D >= 0 taken as gamma with that mean and variance (at light load most pieces meet no one, a few wait long),
the p pieces independent (they sit at different drives), and E[max] = int_0^inf 1 - G(t)^p dt; alone (a = 0) it is
the largest of p lognormal works, exactly.  Nelson & Tantawi (IEEE ToC 37(6), 1988) give the same growth with p
for exponential pieces in the open system: H_p / H_2 at light load.

In the closed loop (fork_join_latency_s) the count a piece finds is bounded: the N - 1 other requests have at most
one piece each at a unit (a request's pieces sit at distinct drives), so the count is taken binomial over them,
variance a (1 - a / (N - 1)), not the open queue's geometric a (1 + a).  Given n found, M/M/1-PS's mean stay is
x / (1 - rho) + (n (1 - rho) - rho) b(x) / (1 - rho), b(x) = (1 - exp(-(1 - rho) x)) / (1 - rho) (derived here for the
unit-rate queue, not taken from a page of Coffman, Muntz & Trotter 1970; checked at both ends: slope n + 1 as x -> 0,
and mean x / (1 - rho) over the geometric n, their unconditional result), so by the law
of total variance V(x) drops by the two counts' difference times b(x)^2: a^2 N / (N - 1) b(x)^2; arrivals during
the stay keep the open queue's law.  Against the per-request mode this moved 16 x 5210 SATA, 1 MiB, QD16 from +8.6 %
to -1.4 % and 16 x 7450 NVMe, 1 MiB, QD4 from +5.1 % to +3.2 % (throughput, per-request / fluid - 1).  Still too
slow: SATA (about 2 units a piece) with 1 MiB requests at QD2..4, +22 % and +10 %: the pieces a request finds
belong to requests that have run a while, so little of their work is left (an exponential residual overstates it).  Oracles: the per-request mode
(tests/test_per_request_referee.py: within 5 % over k = 2..16 NVMe drives, queue depths 1..64) and a per-request
simulation of arrays of processor-sharing units (tests/test_array_closed_loop.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


_NODES = 16            # Gauss-Hermite nodes over the piece's own work x
_GRID = 1500           # points of the time grid of E[max]


@lru_cache(maxsize=1)
def _a_grid() -> np.ndarray:
    """The occupancies the ratio is tabulated at (made on first use: numpy loads only when a run needs it)."""
    import numpy as np

    return np.concatenate([[0.0], np.geomspace(1e-3, 2e3, 72)])


def _expected_max_at(pieces: int, found: float, sigma: float, nodes: bool = True, others: int = 0) -> float:
    """E[max of `pieces` sojourns] in units of a piece's mean work, each piece finding `found` at its unit: the piece's
    own work x over Gauss-Hermite nodes (`nodes`), or, alone (found = 0, nodes False), its lognormal exactly.
    `others` > 0: at most that many pieces can be at a unit (module docstring, closed population)."""
    import numpy as np
    from scipy.special import gammainc, ndtr

    rho = found / (1.0 + found)
    z, w = np.polynomial.hermite_e.hermegauss(_NODES)
    w = w / w.sum()
    x = np.exp(sigma * z - 0.5 * sigma * sigma)
    delay = x * rho / (1.0 - rho)  # E[T | x] - x: the share of the unit others take while the piece is there
    var = 2.0 * rho * x / (1.0 - rho) ** 3 - 2.0 * rho * (-np.expm1(-(1.0 - rho) * x)) / (1.0 - rho) ** 4
    if others > 0:
        # the count found is binomial over the other requests (at most one piece each at a unit), not M/M/1's
        # geometric: Var(T | x) loses (Var_geometric - Var_binomial) b(x)^2 = found^2 N / (N - 1) b(x)^2
        slope = -np.expm1(-(1.0 - rho) * x) / (1.0 - rho)
        var = var - found * found * (1.0 + 1.0 / others) * slope * slope
    var = np.maximum(var, 1e-18)
    top = float((x + delay + 12.0 * np.sqrt(var)).max()) if rho > 0.0 else math.exp(10.0 * sigma)
    t = np.linspace(0.0, top * 1.05, _GRID * 4 if rho <= 0.0 else _GRID)[1:]
    if rho <= 0.0 and not nodes:
        g = ndtr((np.log(t) + 0.5 * sigma * sigma) / max(sigma, 1e-9))
    elif rho <= 0.0:
        g = (w[None, :] * (t[:, None] >= x[None, :])).sum(axis=1)
    else:
        # T = x + D, D >= 0 gamma with the delay's mean and variance: mostly no one else at light load, a long tail
        shape = delay**2 / var
        scale = var / delay
        g = (w[None, :] * gammainc(shape[None, :], np.maximum(t[:, None] - x[None, :], 0.0) / scale[None, :])).sum(axis=1)
    survive = 1.0 - g**pieces
    return float(np.trapezoid(np.concatenate([[1.0], survive]), np.concatenate([[0.0], t])))


@lru_cache(maxsize=256)
def _ratio_table(pieces: int, sigma: float) -> np.ndarray:
    """E[max] / (1 + a) at the tabulated occupancies a (smooth in log(1 + a): interpolated between)."""
    # the nodes' error in the largest of p works, measured where it is known exactly (alone), corrects every row
    import numpy as np
    exact = _nodes_correction(pieces, sigma)
    return np.array([exact * _expected_max_at(pieces, a, sigma) / (1.0 + a) for a in _a_grid()])


@lru_cache(maxsize=256)
def _nodes_correction(pieces: int, sigma: float) -> float:
    """The exact largest of p lognormal works over the nodes' value of it: corrects every occupancy's E[max]."""
    return _expected_max_at(pieces, 0.0, sigma, nodes=False) / _expected_max_at(pieces, 0.0, sigma)


def expected_max(pieces: int, found: float, sigma: float, others: int = 0) -> float:
    """E[max_i T_i] / s for `pieces` pieces that each find `found` pieces at their unit (module docstring).
    One piece: exactly 1 + found, the MVA residence.  `others` > 0: the other requests in a closed loop, each with
    at most one piece at a unit (0: the open queue's count)."""
    import numpy as np
    if pieces <= 1:
        return 1.0 + found
    if others > 0 and found >= 1e-3:  # below, the count's correction (order found^2) is lost in the table's
        return _nodes_correction(int(pieces), round(float(sigma), 4)) * _expected_max_at(
            int(pieces), found, round(float(sigma), 4), others=others)
    table = _ratio_table(int(pieces), round(float(sigma), 4))
    ratio = float(np.interp(math.log1p(found), np.log1p(_a_grid()), table))
    return ratio * (1.0 + found)


@lru_cache(maxsize=4096)
def fork_join_latency_s(pieces: int, units: float, piece_s: float, sigma: float, requests: int) -> float:
    """Mean time of one request with `requests` in flight: p pieces of mean work `piece_s` on `units` PS units
    (module docstring's recursion)."""
    if pieces < 1 or units <= 0.0 or piece_s <= 0.0 or requests < 1:
        raise ValueError(f"fork-join: pieces >= 1, units > 0, piece time > 0, requests >= 1, found {pieces}, {units}, {piece_s}, {requests}")
    found = 0.0
    latency = piece_s
    for n in range(1, requests + 1):
        latency = piece_s * expected_max(pieces, found, sigma, others=n - 1)
        found = (n / latency) * pieces / units * piece_s * (1.0 + found)
    return latency


@lru_cache(maxsize=1024)
def equivalent_spread(pieces: int, slowest_over_mean: float) -> float:
    """The lognormal spread sigma whose largest of `pieces` (mean one) is `slowest_over_mean`: a piece time of another
    shape (a hard disk's bounded seek + rotation, models.hdd.slowest_positioning_seconds) enters the join through it,
    exact alone and grown with the load as the lognormal's is.  Bisection on the exact lognormal maximum."""
    if pieces <= 1 or slowest_over_mean <= 1.0:
        return 0.0
    low, high = 0.0, 3.0
    for _ in range(40):
        mid = 0.5 * (low + high)
        if _expected_max_at(int(pieces), 0.0, mid, nodes=False) < slowest_over_mean:
            low = mid
        else:
            high = mid
    return round(0.5 * (low + high), 4)




