"""The slowest piece of a request striped over hard disks: one disk's exact sojourn law, and the largest of p.

A hard disk serves one command at a time; when it frees it picks the next among all it holds (each equally
likely: simulator.per_request.hdd) and that command's service is fixed by how many it picked from (reordering,
models.hdd).  A request puts its p pieces on p distinct disks, so each disk sees each of the N requests at most
once at a time: one disk is a machine-repairman loop of the N requests, each coming back after an exponential
think time (Lazowska et al. 1984 ch. 8), with the start-dependent server of models.closed_network (Erlang mixtures
of the service's mean and variance, Tijms 2003).

A tagged piece's sojourn there, exactly for that loop:
  - it arrives while the disk is in the state the N-source chain is in, weighted by the N - k sources that are
    not at the disk (an idle source arrives at rate 1 / Z in every state: the rate-weighted stationary law);
  - it finds the disk empty and starts at once, one candidate (the atom of the wait at 0), or it waits: another
    command's residual service, then at each completion it is the next one drawn with probability 1 / (held), the
    others arriving meanwhile from the N - 1 other sources (an absorbing chain; its law over time by BDF2 steps);
  - it is then served at the depth it started with: the disk's own seek + rotation law at that depth, exact
    (models.hdd.positioning_quantiles), shifted to that depth's mean service.
The request's phase takes the largest of its p pieces' sojourns.  Taken independent (Nelson & Tantawi 1988,
Varki's fork-join MVA 1999/2001), E[max] = int_0^inf 1 - F(t)^p dt; but the other requests are the same at all p
disks: one whose phase began just before has pieces pending at most of them, an old one at few, so the sojourns
are positively associated and their largest is stochastically smaller (Esary, Proschan & Walkup 1967).  The join
conditions on the others' pending pieces (their phases' equilibrium ages, `other_request_pending`), which tilts
P(the disk is empty) the same way at every disk, and takes the pieces independent given that (`associated_max`);
each disk's own law stays the chain's.  Independent pieces read 16 disks x 64 KiB at QD2 5.9 % slow against the
per-request mode (4.3 % at 12 pieces, 2.8 % at 16 pieces QD3).  Alone (N = 1) the join is the largest of p idle
disks' positionings exactly.

Where the processor-sharing law (models.fork_join) gave a piece that finds others a delay with an unbounded
tail, a disk's piece waits at most for whole commands, and it may be drawn first: the PS law read striped disks
12-17 % slow at QD 2-4 against the per-request mode (tests/test_per_request_referee.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from scipy.sparse import csr_matrix

_GRID = 512            # points of the wait's time grid (2048 moves the slowest piece by < 0.03 %)
_LEFT_OVER = 1e-5      # wait mass allowed beyond the grid's end, counted there (the horizon doubles until it is below)


@dataclass(frozen=True)
class DiskJoin:
    """One disk of the loop and the join of the pieces: the slowest of `pieces` sojourns, the disk's completions
    per second, P(it holds >= 1), the mean it holds and a piece's mean sojourn (all at the think time given), and
    the slowest of `pieces` independent copies of the sojourn (the upper bound the association tightens)."""

    slowest_s: float
    done: float
    busy: float
    held: float
    sojourn_s: float
    independent_s: float


def _shapes(scv: tuple[float, ...], cap: int) -> list[tuple[int, float]]:
    from iowatt.models.closed_network import erlang_mixture
    return [erlang_mixture(float(scv[min(j, len(scv) - 1)])) if scv else (1, 0.0) for j in range(cap)]


def _waiting_chain(shapes: list[tuple[int, float]], service: np.ndarray, offset: np.ndarray, n: int,
                   away_s: float, stay: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, rate) of the chain while the tagged piece waits: the states of the N-source chain at levels 2..N
    (m held, the tagged piece one of them, another's command in service at start depth j with r phases left); the
    absorbing state `size + j - 1` is the tagged piece starting at depth j."""
    import numpy as np
    from iowatt.models.closed_network import _chain_states
    cap = len(service)
    _offset, within = _chain_states(shapes, cap, n)
    size = int(offset[-1])
    rate = np.array([(k - p) / s for (k, p), s in zip(shapes, service, strict=True)])
    depth = np.repeat(np.arange(cap), np.diff(within))
    left = np.concatenate([np.arange(1, k + 1) for k, _p in shapes])
    src, dst, val = [], [], []
    for m in range(2, n + 1):
        width = int(within[min(m, cap)])
        idx = offset[m] + np.arange(width)
        mu = rate[depth[:width]]
        if m < n:  # the others not at the disk: N - m of the N - 1
            src.append(idx), dst.append(offset[m + 1] + np.arange(width)), val.append(np.full(width, (n - m) / away_s))
        more = left[:width] > 1
        src.append(idx[more]), dst.append(idx[more] - 1), val.append(mu[more])
        ends, mu_end = idx[~more], mu[~more]
        # the other's command done: m - 1 left (its request gone), or m (its next piece here at once, `stay`); the
        # next one drawn among them, the tagged piece with probability 1 / held
        for held, weight in ((m - 1, 1.0 - stay), (m, stay)):
            if weight <= 0.0:
                continue
            j = min(held, cap)
            src.append(ends), dst.append(np.full_like(ends, size + j - 1)), val.append(mu_end * weight / held)
            if held >= 2:
                top, p = shapes[j - 1]
                first = offset[held] + within[j - 1]
                other = mu_end * weight * (held - 1) / held
                src.append(ends), dst.append(np.full_like(ends, first + top - 1)), val.append(other * (1.0 - p))
                if top > 1 and p > 0.0:
                    src.append(ends), dst.append(np.full_like(ends, first + top - 2)), val.append(other * p)
    return np.concatenate(src), np.concatenate(dst), np.concatenate(val)


def _service_pmf(mean_s: float, shape: tuple[float, ...], dt: float, length: int) -> np.ndarray:
    """The service (its mean plus the positioning quantiles about it) on the grid of step dt, each quantile's mass
    split between its two neighbouring points (which keeps the mean)."""
    import numpy as np
    at = np.maximum(0.0, mean_s + np.asarray(shape)) / dt
    low = np.minimum(np.floor(at).astype(int), length - 2)
    frac = np.clip(at - low, 0.0, 1.0)
    pmf = np.zeros(length)
    np.add.at(pmf, low, (1.0 - frac) / len(shape))
    np.add.at(pmf, low + 1, frac / len(shape))
    return pmf


def _absorbed(waiting: csr_matrix | None, start: np.ndarray, dt: float) -> np.ndarray:
    """The chain's state at 0, dt, .. (_GRID points) from `start`: BDF2 steps (the first a backward Euler step),
    stable for the stiff chain a short think time makes (expm_multiply's cost grows with the rates there)."""
    import numpy as np
    from scipy.sparse import identity
    from scipy.sparse.linalg import splu

    out = np.empty((_GRID, len(start)))
    out[0] = start
    if waiting is None:
        out[1:] = start
        return out
    eye = identity(len(start), format="csc")
    out[1] = splu((eye - dt * waiting).tocsc()).solve(start)
    step = splu((3.0 * eye - 2.0 * dt * waiting).tocsc())
    for i in range(2, _GRID):
        out[i] = step.solve(4.0 * out[i - 1] - out[i - 2])
    return out


@lru_cache(maxsize=4096)
def slowest_piece(service_s: tuple[float, ...], scv: tuple[float, ...], shape: tuple[tuple[float, ...], ...],
                  customers: int, think_s: float, pieces: int, stay: float = 0.0) -> DiskJoin:
    """The module docstring's law: `service_s[j - 1]` the mean service of a command started with j held,
    `scv[j - 1]` its squared coefficient of variation (the chain's Erlang mixture), `shape[j - 1]` its positioning
    quantiles about the mean (models.hdd.positioning_quantiles; the last one holds deeper), `customers` requests
    each with one piece at the disk at a time, back after `think_s` on average, `pieces` pieces a request waits for;
    `stay`: the share of completions whose request puts its next piece here at once (its last piece was this
    one), which then joins the draw for the next command; the rest come back after think_s / (1 - stay)."""
    import numpy as np
    from iowatt.models.closed_network import START_DEPTH_CAP, chain_distribution
    from scipy.sparse import coo_matrix

    n = int(customers)
    cap = max(1, min(len(service_s), n, START_DEPTH_CAP))
    service = np.array(service_s[:cap])
    shapes = _shapes(scv, cap)
    away_s = think_s / (1.0 - stay)
    arrivals = np.concatenate([(n - np.arange(n)) / away_s, [0.0]])
    pi, offset, ending = chain_distribution(service, shapes, arrivals, n, stay)
    levels = np.repeat(np.arange(n + 1), np.diff(offset))
    done, busy, held = float(pi @ ending), 1.0 - float(pi[0]), float(levels @ pi)
    size = int(offset[-1])
    # the piece's start, one column per number of others the disk holds when it comes (what the join mixes over)
    start = np.zeros((size + cap, n))
    # from away: the disk as the N - k sources away from it find it (each arrives at 1 / Z in every state)
    seen = (n - levels) * pi
    seen *= (1.0 - stay) / seen.sum()
    start[size, 0] = seen[0]  # the disk empty: the piece starts at once, one candidate (absorbed at depth 1)
    for k in range(1, n):           # else it joins k held: the same (start depth, phases left) at level k + 1
        start[offset[k + 1]:offset[k + 1] + offset[k + 1] - offset[k], k] = seen[offset[k]:offset[k + 1]]
    if stay > 0.0:  # at once after its own last piece here: k - 1 others held, the next drawn among k
        after = pi * ending
        after *= stay / after.sum()
        for k in range(1, n + 1):
            mass, j = float(after[offset[k]:offset[k + 1]].sum()), min(k, cap)
            start[size + j - 1, k - 1] += mass / k
            if k >= 2:
                top, p = shapes[j - 1]
                first = offset[k] + int(np.sum([t for t, _p in shapes[:j - 1]]))
                start[first + top - 1, k - 1] += mass * (k - 1) / k * (1.0 - p)
                if top > 1:
                    start[first + top - 2, k - 1] += mass * (k - 1) / k * p
    found = start.sum(axis=0)  # P(the piece finds k others held), k = 0..N-1
    # an empty disk starts the piece at once (every mass of that column is absorbed): only the busy one evolves
    empty, crowded = start[size:, 0], start[:, 1:].sum(axis=1)
    waiting = None
    if n > 1:
        src, dst, val = _waiting_chain(shapes, service, offset, n, away_s, stay)
        out = np.bincount(src, weights=val, minlength=size + cap)
        waiting = coo_matrix((np.concatenate([val, -out]), (np.concatenate([dst, np.arange(size + cap)]),
                                                             np.concatenate([src, np.arange(size + cap)]))),
                             shape=(size + cap, size + cap)).tocsr()
    sojourn_s = held / done
    horizon = 16.0 * sojourn_s + 2.0 * float(service.max())
    for _ in range(4):
        dt = horizon / (_GRID - 1)
        absorbed = _absorbed(waiting, crowded, dt)[:, size:]
        if float(crowded.sum()) - absorbed[-1].sum() < _LEFT_OVER:
            break
        horizon *= 2.0
    step = np.diff(absorbed, axis=0)  # mass starting service in each grid step, by depth: half to each end
    began = np.vstack([absorbed[:1], np.zeros((_GRID - 1, cap))])
    began[:-1] += 0.5 * step
    began[1:] += 0.5 * step
    late = max(0.0, float(crowded.sum()) - absorbed[-1].sum())  # not started yet: at the end
    began[-1] += late * absorbed[-1] / max(absorbed[-1].sum(), 1e-300)
    length = 2 * _GRID + int(np.ceil(2.0 * float(service.max()) / dt))
    sojourn = np.zeros((length, 2))  # the sojourn's law, the disk found empty or not (each with its own mass)
    for j in range(cap):
        pmf = _service_pmf(float(service[j]), shape[min(j, len(shape) - 1)], dt, length)
        sojourn[:, 0] += empty[j] * pmf
        if began[:, j].sum() > 0.0:
            spectrum = np.fft.rfft(began[:, j], 2 * length) * np.fft.rfft(pmf, 2 * length)
            sojourn[:, 1] += np.fft.irfft(spectrum, 2 * length)[:length]
    cdf = np.cumsum(sojourn, axis=0)
    slowest = associated_max(cdf, found, dt, max(1, int(pieces)))
    independent = associated_max(cdf, found[:1] + found[1:].sum(), dt, max(1, int(pieces)))
    return DiskJoin(slowest, done, busy, held, sojourn_s, independent)


def other_request_pending(cdf: np.ndarray, pieces: int) -> np.ndarray:
    """P(one other request still has m = 1..p of its pieces pending) when a tagged request comes: its age the
    equilibrium age of its phase (density P(R > a) / E[R], R the largest of its p sojourns), each of its pieces
    pending at age a with probability 1 - G(a), G = `cdf` of a piece's sojourn on a uniform grid:
    int Binomial(m; p, 1 - G(a)) da / E[R], the m = 0 term being the phase already over."""
    import numpy as np
    m = np.arange(1, pieces + 1)
    left = np.clip(1.0 - cdf, 0.0, 1.0)[:, None]
    ways = np.array([math.comb(pieces, int(i)) for i in m], dtype=float)
    pending = (ways * left ** m * (1.0 - left) ** (pieces - m)).sum(axis=0)
    return pending / pending.sum()


def associated_max(cdf: np.ndarray, found: np.ndarray, dt: float, pieces: int) -> float:
    """E[largest of `pieces` sojourns] whose disks share the other requests: `cdf[:, 0]` the sojourn's law (mass
    P(empty), on steps of dt) when the piece finds its disk empty, `cdf[:, 1]` when it finds others there,
    `found[k]` P(it finds k of the N - 1 others).

    The other requests are common to all the pieces' disks: one whose phase is young has pieces pending at many of
    them, an old one at few, so the pieces' sojourns are positively associated and their largest is stochastically
    smaller than that of independent copies (Esary, Proschan & Walkup 1967).  Conditioned on the others' pending
    pieces s = m_1 + .. + m_{N-1} (each m from `other_request_pending`, independent), the pieces are taken
    independent: a disk holds each other with probability theta_s = q s / E[s] (q its mean share, so the disk's
    own law stays the chain's), which tilts the chain's law of k: P(k | s) ~ found[k] (theta_s / q)^k
    ((1 - theta_s) / (1 - q))^(N-1-k); its k = 0 share is P(empty | s), rescaled so that its mean over s is the
    chain's P(empty) exactly.  E[max] = sum_s P(s) int 1 - H_s(t)^p dt, H_s the disk's law mixed by P(empty | s).
    Alone (N = 1), or one piece, that is the independent int 1 - F(t)^p dt."""
    import numpy as np
    total = cdf.sum(axis=1)
    others = len(found) - 1
    p_empty = float(found[0])
    if others == 0 or pieces == 1 or p_empty <= 0.0 or p_empty >= 1.0:
        return float(np.sum(1.0 - np.clip(total, 0.0, 1.0) ** pieces) * dt)
    law = np.clip(cdf / np.array([p_empty, 1.0 - p_empty]), 0.0, 1.0)  # each column's conditional law
    one = other_request_pending(np.clip(total, 0.0, 1.0), pieces)
    pending = np.array([1.0])
    for _ in range(others):
        pending = np.convolve(pending, np.concatenate([[0.0], one]))
    s = np.flatnonzero(pending > 1e-12)
    ps = pending[s] / pending[s].sum()
    k = np.arange(others + 1)
    q = float(k @ found) / others
    theta = np.clip(q * s / float(s @ ps), 1e-9, 1.0 - 1e-9)
    tilt = (np.log(np.maximum(found, 1e-300))[None, :] + k[None, :] * np.log(theta / q)[:, None]
            + (others - k)[None, :] * np.log((1.0 - theta) / (1.0 - q))[:, None])
    tilt = np.exp(tilt - tilt.max(axis=1, keepdims=True))
    empty = tilt[:, 0] / tilt.sum(axis=1)
    empty = np.clip(empty * p_empty / float(ps @ empty), 0.0, 1.0)
    mixed = empty[:, None] * law[None, :, 0] + (1.0 - empty)[:, None] * law[None, :, 1]
    return float(ps @ np.sum(1.0 - mixed ** pieces, axis=1) * dt)
