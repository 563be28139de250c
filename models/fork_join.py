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

In the closed loop (fork_join_loop) each of the N - 1 other requests has at most one piece at a unit (a request's
pieces sit at distinct drives), and a piece present shares the unit's service with the tagged one equally, so it
adds exactly the service it receives while both are there: the stay is x + Y, Y the others' occupation of the
piece's attained service, bounded by (N - 1) x (models.ps_occupation: the other requests as sources present for
one piece's work and away between, in a shared environment that gives their count the finite-source law's spread).
A drive's c units are floor(c) full ones, each taking 1 / c of its pieces, and a partial one taking the rest
(the per-request mode's layout; models.unit_mva's exact loop for one piece), each kind with its own count: taken as
n c identical units, the partial unit's share of the load was overstated (2 SATA drives x 256 KiB at QD4: +6.4 %).
The open law above, with its exponential residuals and unbounded tail, made the join's loop too slow where a few
others hold most of a unit: striped SATA SSDs (about two units a piece) with 1 MiB requests read 22 % and 10 %
faster in the per-request mode at QD2 and QD4 (13 and 16 drives); the occupation law reads +1.5 % and +1.8 %
(per-request / fluid - 1, throughput).  Mean stays are the MVA's x (1 + found) exactly in both laws.
Oracles: the per-request mode (tests/test_per_request_referee.py: within 5 % over k = 1..16 NVMe and SATA drives,
queue depths 1..64) and a per-request
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


def _expected_max_at(pieces: int, found: float, sigma: float, nodes: bool = True) -> float:
    """E[max of `pieces` sojourns] in units of a piece's mean work, each piece finding `found` at its unit (the open
    M/M/1-PS law): the piece's own work x over Gauss-Hermite nodes (`nodes`), or, alone (found = 0, nodes False),
    its lognormal exactly."""
    import numpy as np
    from scipy.special import gammainc, ndtr

    rho = found / (1.0 + found)
    z, w = np.polynomial.hermite_e.hermegauss(_NODES)
    w = w / w.sum()
    x = np.exp(sigma * z - 0.5 * sigma * sigma)
    delay = x * rho / (1.0 - rho)  # E[T | x] - x: the share of the unit others take while the piece is there
    var = 2.0 * rho * x / (1.0 - rho) ** 3 - 2.0 * rho * (-np.expm1(-(1.0 - rho) * x)) / (1.0 - rho) ** 4
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


def _closed_expected_max(pieces: int, kinds: tuple[tuple[float, float], ...], sigma: float, others: int) -> float:
    """E[max of `pieces` stays] in a closed loop of `others` other requests, a piece at a unit of each kind (share,
    mean count found there) of `kinds` with its share's chance, each stay x + Y: Y the
    others' occupation of the piece's attained service (models.ps_occupation, mixed over its shared environments)
    at the work nodes, x the piece's own lognormal work on the same grid, each x taking the law of Y of the nodes
    about it (linear in x); the largest of p from that discrete law exactly.  Its grid's error alone (found = 0) is
    divided out against the exact largest of p works."""
    import numpy as np
    from iowatt.models.ps_occupation import environments, grid_step, occupation_laws, work_survival
    from scipy.fft import irfft, next_fast_len, rfft

    z, w = np.polynomial.hermite_e.hermegauss(_NODES)
    w = w / w.sum()
    nodes = np.exp(sigma * z - 0.5 * sigma * sigma)
    # the grid reaches the nodes that carry weight (>= 1e-6); the two beyond (1e-7, 1e-10) take its last law
    nodes = nodes[w >= 1e-6]
    h = grid_step(float(nodes.max()))
    # the work x on the grid (cell masses of the lognormal) as far as its largest node, the rest in the last cell
    cells = math.ceil(math.exp(sigma * z.max() - 0.5 * sigma * sigma) / h) + 1
    edges = (np.arange(cells + 1) - 0.5) * h
    work_cdf = 1.0 - work_survival(edges, sigma)
    work = np.diff(work_cdf)
    work[-1] += 1.0 - work_cdf[-1]
    # each x's share of the nodes about it: the node's law of Y taken by the x's near it
    position = np.interp(np.arange(cells) * h, nodes, np.arange(len(nodes)))
    low = np.minimum(position.astype(int), len(nodes) - 2)
    frac = position - low
    shares = np.zeros((len(nodes), cells))
    np.add.at(shares, (low, np.arange(cells)), work * (1.0 - frac))
    np.add.at(shares, (low + 1, np.arange(cells)), work * frac)
    moved = None

    def stay_cdf(count: float) -> np.ndarray:
        """The stay's law on the grid when a piece finds `count` on average (the sources' share count / others)."""
        nonlocal moved
        mixture = [(weight, occupation_laws(q, sigma, nodes)[0]) for q, weight in environments(round(count, 9), others)]
        # the stay's support, cells: N - 1 sources present all along at most, but no more than the count found and
        # 10 standard deviations of it are ever present together (what lies beyond is below 1e-15 and would wrap)
        most = min(others, math.ceil(max(q for q, _w in mixture) * others + 10.0 * math.sqrt(count + 1.0) + 10.0))
        size = most * (mixture[0][1].shape[1] - 1) + cells
        length = next_fast_len(size, real=True)
        if moved is None or moved.shape[1] != length // 2 + 1:
            moved = rfft(shares, length, axis=1)
        # the N - 1 sources' sum (a power of its spectrum) in each environment, all nodes at once, and x moved in
        spectrum = sum(weight * rfft(laws, length, axis=1) ** others for weight, laws in mixture)
        stay = np.clip(irfft((spectrum * moved).sum(axis=0), length)[:size], 0.0, None)
        return np.minimum(np.cumsum(stay) / stay.sum(), 1.0)

    def kinds_cdf() -> np.ndarray:
        """The stay's law over the unit kinds: a piece at each kind with its share's chance."""
        laws = [(share, stay_cdf(count)) for share, count in kinds if share > 0.0]
        longest = max(len(cdf) for _share, cdf in laws)
        return sum(share * np.pad(cdf, (0, longest - len(cdf)), constant_values=1.0) for share, cdf in laws)

    alone = np.cumsum(work)
    correction = _expected_max_at(pieces, 0.0, sigma, nodes=False) / (h * float(np.sum(1.0 - alone**pieces)))
    # the pieces are taken independent: the others are the same requests at every piece's unit (associated stays,
    # Esary, Proschan & Walkup 1967), but conditioning on the others' ages moved the per-request gap by at most 3
    # points (13 SATA drives x 1 MiB, QD2: +1.5 % -> -1.4 %) for three times the work, so it is left out
    cdf = kinds_cdf()
    return correction * h * float(np.sum(1.0 - cdf**pieces))


def expected_max(pieces: int, found: float, sigma: float, others: int = 0) -> float:
    """E[max_i T_i] / s for `pieces` pieces that each find `found` pieces at their unit (module docstring).
    One piece: exactly 1 + found, the MVA residence.  `others` > 0: the other requests in a closed loop, each with
    at most one piece at a unit (models.ps_occupation; 0: the open queue's M/M/1-PS law)."""
    import numpy as np
    if pieces <= 1:
        return 1.0 + found
    if others > 0 and found >= 1e-3:  # below, the others change the table's value by less than its own error
        return _closed_expected_max(int(pieces), ((1.0, found),), round(float(sigma), 4), int(others))
    table = _ratio_table(int(pieces), round(float(sigma), 4))
    ratio = float(np.interp(math.log1p(found), np.log1p(_a_grid()), table))
    return ratio * (1.0 + found)


_LOOPS: dict[tuple[int, int, float, float, float], tuple[list[float], list[float], list[float]]] = {}
_LOOPS_KEPT = 512  # volumes' loops remembered (each grows to the deepest population asked of it)
_EXACT_REQUESTS = 256  # populations solved step by step; beyond, the loop is near its ceiling and grows linearly


def fork_join_loop(pieces: int, drives: int, units_per_drive: float, piece_s: float, sigma: float,
                   requests: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The module docstring's recursion at populations 1..`requests`: (a request's mean time, the mean pieces not yet
    done at a drive), p pieces of mean work `piece_s` on `drives` drives of c = `units_per_drive` PS units each:
    floor(c) full units, each taking a share 1 / c of a drive's pieces, and a partial one taking (c - floor(c)) / c
    (simulator.per_request.units; models.unit_mva's exact loop for one piece).  A loop asked again for more requests
    goes on from where it stopped (the recursion's step n needs only step n - 1)."""
    if pieces < 1 or drives < 1 or units_per_drive <= 0.0 or piece_s <= 0.0 or requests < 1:
        raise ValueError(f"fork-join: pieces, drives >= 1, units > 0, piece time > 0, requests >= 1, found {pieces}, "
                         f"{drives}, {units_per_drive}, {piece_s}, {requests}")
    key = (int(pieces), int(drives), float(units_per_drive), float(piece_s), float(sigma))
    if key not in _LOOPS:
        if len(_LOOPS) >= _LOOPS_KEPT:
            _LOOPS.pop(next(iter(_LOOPS)))
        _LOOPS[key] = ([], [], [0.0, 0.0])
    latencies, counts, state = _LOOPS[key]
    whole = math.floor(units_per_drive)
    partial = units_per_drive - whole
    visits = pieces / drives / units_per_drive  # a full unit's pieces per request (the partial unit's: x partial)
    full, part = state
    for n in range(len(latencies) + 1, min(requests, _EXACT_REQUESTS) + 1):
        kinds = ((whole / units_per_drive, full), (partial / units_per_drive, part))
        if pieces <= 1:
            ratio = sum(share * (1.0 + count) for share, count in kinds)
        elif n == 1 or max(full, part) < 1e-3:
            ratio = expected_max(pieces, sum(share * count for share, count in kinds), sigma)
        else:
            ratio = _closed_expected_max(int(pieces), kinds, round(float(sigma), 4), n - 1)
        latency = piece_s * ratio
        full = (n / latency) * visits * piece_s * (1.0 + full)
        part = (n / latency) * visits * partial * piece_s * (1.0 + part)
        latencies.append(latency)
        counts.append(whole * full + part)
    state[:] = [full, part]
    if requests > len(latencies):  # past the exact steps each request adds the last step's time and count
        step, grown = latencies[-1] - latencies[-2], counts[-1] - counts[-2]
        more = range(1, requests - len(latencies) + 1)
        return (tuple(latencies) + tuple(latencies[-1] + k * step for k in more),
                tuple(counts) + tuple(counts[-1] + k * grown for k in more))
    return tuple(latencies[:requests]), tuple(counts[:requests])


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




