"""How long a piece stays at a processor-sharing unit of a closed loop: the other requests' occupation of its work.

A unit shares its speed equally among the pieces it holds (processor sharing), so while a tagged piece of work x
is there every other piece present receives exactly the service the tagged one does.  Counted in the tagged
piece's attained service tau (0..x), each other piece is present for exactly its own remaining work, whatever the
rest of the unit does, and the tagged piece's stay is

    T = x + Y,   Y = int_0^x k(tau) dtau   (k: the other pieces present)

(each other piece adds the service it receives while both are there: exact for processor sharing).

In the closed loop of N requests each other request has at most one piece at the unit at a time (a request's
pieces sit at distinct drives): the N - 1 others are sources that are present or away.  Taken independent,
source j alternates present periods of one piece's work (lognormal, mean one, the drive's read spread sigma) and
away periods, exponential with mean (1 - q) / q so that it is present a share q = found / (N - 1) of the attained
time (found: the MVA's mean count a piece finds).  It starts stationary: present with probability q, then with
the equilibrium residual of a work (density P(w > r) / E[w]: in a symmetric queue the residual works of the pieces
present are independent with that law, Kelly 1979 ch. 3), else away.  Y_j, the time it is present in [0, x], is an
alternating renewal's occupation time: computed here on a grid by its renewal equations (below), and
Y = Y_1 + .. + Y_{N-1} by convolution.  Each Y_j is bounded by x (a source present all along adds at most x), so T
is bounded by N x: the tail that the open queue's exponential residuals give (models.fork_join's M/M/1-PS law, an
unbounded stay) is what made striped SATA SSDs (about two units a piece) 10-22 % slow at queue depth 2-4.

What independence leaves out: a source away comes back at a rate per unit of real time, and the tagged piece's
attained service advances 1 / (1 + k) as fast as real time, so in attained time the sources come back faster the
more are present (feedback).  Its stationary count is the finite-source (machine-repairman) law, (N - 1)! /
(N - 1 - k)! beta^k (Lazowska et al. 1984 ch. 8; product form, so whatever the works' law), more spread than the
binomial count of independent sources of the same mean; with one other request the two agree (no one else to feed
back).  The sources are therefore taken independent given a shared environment, their share q spread two ways
(`environments`) so that the count they start with has the finite-source law's variance (a beta-binomial's
over-dispersion, fitted by moments): the others' occupation is the environment's mixture of the independent laws,
its mean still found x exactly.  Without it, 6 Gen5 drives x 256 KiB at QD64 read 8 % fast against the per-request
mode; a normal noise of the Markov twins' extra variance (tried first) moved the mean by up to 6 %.

Renewal equations on a grid of step h in attained time (cells of the present, away and residual durations,
each duration rounded to whole cells with its mass; rows = horizons i h; columns = occupation y or away time
z = i - y):
    P_i = Pr(work >= i) delta_{y=i} + sum_{k<i} f_k (A_{i-k} shifted by k in y)     a present period begins at 0
    A_i = Pr(away >= i) delta_{y=0} + sum_{u<i} g_u P_{i-u}                         an away period begins at 0
    S_i = (1 - q) A_i + q [Pr(residual >= i) delta_{y=i} + sum_{k<i} e_k (A_{i-k} shifted by k)]   stationary
A shift in y is no shift in z, so each row is one matrix-vector product in the coordinates that make it one.
Oracles: the per-request mode (tests/test_per_request_referee.py), a Monte-Carlo renewal of the same sources,
renewal theory's mean q x and the repairman chain's count solved from its generator (tests/test_ps_occupation.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_CELLS = 100   # grid cells over the longest horizon (3 % of a mean work at sigma 0.25; 160 cells move E[max] < 0.05 %)


def _cell_masses(sf: np.ndarray, cells: int) -> np.ndarray:
    """Masses of a duration on whole cells 0..cells-1 from its survival at the cells' edges (k - 1/2) h: the last
    cell takes everything beyond."""
    import numpy as np
    mass = -np.diff(sf)
    mass[-1] += sf[-1]
    return np.maximum(mass, 0.0)[:cells]


def work_survival(edges: np.ndarray, sigma: float) -> np.ndarray:
    """P(w > edge) for a piece's work w, lognormal of mean one and log-spread sigma (1 at edges <= 0)."""
    import numpy as np
    from scipy.special import ndtr
    s = max(sigma, 1e-6)
    return np.where(edges > 0.0, ndtr(-(np.log(np.maximum(edges, 1e-300)) + 0.5 * s * s) / s), 1.0)


def grid_step(longest: float) -> float:
    """The cells' width for horizons up to `longest` (occupation_laws' grid)."""
    return longest / (_CELLS - 1)


def occupation_laws(q: float, sigma: float, horizons: np.ndarray) -> tuple[np.ndarray, float]:
    """The law of Y_j (one other source's present time in [0, x]) at each horizon x of `horizons` (works in units
    of their mean): rows of probability masses on cells of step h (cell y = present time y h), and h."""
    import numpy as np
    from scipy.special import ndtr

    cells = _CELLS
    h = grid_step(float(horizons.max()))
    edges = (np.arange(cells + 1) - 0.5) * h
    edges[0] = 0.0
    s = max(sigma, 1e-6)
    # the work's survival (lognormal of mean one) and the equilibrium residual's: int_r^inf P(w > v) dv
    z = (np.log(np.maximum(edges, 1e-300)) + 0.5 * s * s) / s
    work_sf = work_survival(edges, sigma)
    residual_sf = np.where(edges > 0.0, ndtr(s - z) - edges * ndtr(-z), 1.0)  # E[(w - r)+], the excess's survival
    f = _cell_masses(work_sf, cells)
    f[1] += f[0]  # a work is at least one cell (below half a cell: one cell, its mass kept)
    f[0] = 0.0
    e = _cell_masses(residual_sf, cells)
    rate = q / max(1.0 - q, 1e-12)  # away periods: exponential, mean (1 - q) / q
    away_sf = np.exp(-rate * edges)
    g = _cell_masses(away_sf, cells)
    f_tail = np.concatenate([[1.0], 1.0 - np.cumsum(f)])[:cells]  # Pr(work >= i cells)
    e_tail = np.concatenate([[1.0], 1.0 - np.cumsum(e)])[:cells]
    g_tail = np.concatenate([[1.0], 1.0 - np.cumsum(g)])[:cells]
    present_z = np.zeros((cells, cells))  # P rows in away-time coordinates z
    away_z = np.zeros((cells, cells))
    present_y = np.zeros((cells, cells))
    away_y = np.zeros((cells, cells))
    present_z[0, 0] = away_z[0, 0] = present_y[0, 0] = away_y[0, 0] = 1.0
    for i in range(1, cells):  # row i's laws live on cells 0..i (a present time within a horizon of i cells)
        # P_i: the work outlasts the horizon (all present, z = 0), or ends at k and an away period begins there
        row = np.zeros(i + 1)
        if i > 1:
            row[:i] = f[1:i] @ away_z[i - 1:0:-1, :i]
        row[0] += max(f_tail[i], 0.0)
        present_z[i, :i + 1] = row
        present_y[i, :i + 1] = row[::-1]
        # A_i: away all along (y = 0), or a present period begins at u (u = 0: at once)
        row = g[:i] @ present_y[i:0:-1, :i + 1]
        row[0] += max(g_tail[i], 0.0)
        away_y[i, :i + 1] = row
        away_z[i, :i + 1] = row[::-1]
    out = np.zeros((len(horizons), cells))
    for m, x in enumerate(horizons):
        position = float(x) / h
        low = min(int(position), cells - 2)
        frac = position - low
        for i, weight in ((low, 1.0 - frac), (low + 1, frac)):
            # S_i in z: away at 0, or present with a residual that outlasts the horizon (z = 0) or ends at k
            row = (1.0 - q) * away_z[i] + q * (e[:i] @ away_z[i:0:-1, :] if i > 0 else np.zeros(cells))
            row[0] += q * max(e_tail[i], 0.0) if i > 0 else q
            out[m, :i + 1] += weight * row[i::-1]
    return out, h


@lru_cache(maxsize=4096)
def environments(found: float, others: int) -> tuple[tuple[float, float], ...]:
    """(q, weight) pairs of the shared environment: the share q = found / others spread two ways so that the count
    the sources start with has the finite-source law's variance (module docstring); mean q kept exactly."""
    import numpy as np
    q = min(found / others, 0.995)
    if others <= 1 or found <= 0.0:
        return ((q, 1.0),)
    k = np.arange(others + 1, dtype=float)
    low, high = math.log(1e-9), math.log(1e6)
    for _ in range(60):  # beta whose finite-source law (N-1)!/(N-1-k)! beta^k has mean `found`
        mid = 0.5 * (low + high)
        log_pi = np.concatenate([[0.0], np.cumsum(mid + np.log(others - k[:-1]))])
        pi = np.exp(log_pi - log_pi.max())
        pi /= pi.sum()
        if float(pi @ k) < found:
            low = mid
        else:
            high = mid
    extra = float(pi @ k**2) - float(pi @ k) ** 2 - others * q * (1.0 - q)  # over the binomial's
    spread = math.sqrt(max(extra, 0.0) / (others * (others - 1)))
    if spread <= 1e-9 * q:
        return ((q, 1.0),)
    up, down = min(q + spread, 0.995), max(q - spread, 1e-6)
    # two points about q: the mean kept exactly; where a bound clips one side, the other takes the weight
    return ((down, (up - q) / (up - down)), (up, (q - down) / (up - down)))
