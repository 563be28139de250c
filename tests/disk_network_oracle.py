"""An exact solution of a closed network of identical single-server disks, for tests: the oracle of
models.closed_network.start_dependent_rates.

M disks, N requests, each completion sends its request to a disk drawn uniformly (1/M each, itself included).
A disk's command takes a time fixed when it starts, of mean service_s[j - 1] and squared coefficient of
variation scv[j - 1] for the j commands then present (models.closed_network.erlang_mixture's phases).  The
state is the multiset of the disks' (present, start depth, phases left): identical disks are exchangeable, so
the sorted tuple is an exact lumping (Kemeny & Snell).  The whole network's Markov chain is solved (scipy
sparse), no decomposition: small N only.
"""

from __future__ import annotations

import numpy as np
from iowatt.models.closed_network import erlang_mixture


def exact_throughput(disks: int, requests: int, service_s: list[float], scv: list[float] | None = None) -> float:
    """Completions per second of the whole network (module docstring)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    shapes = [erlang_mixture(c) for c in (scv or [1.0] * len(service_s))]
    rate = [(k - p) / s for (k, p), s in zip(shapes, service_s, strict=True)]

    def starts(c: int) -> list[tuple[tuple[int, int, int], float]]:
        if c == 0:
            return [((0, 0, 0), 1.0)]
        k, p = shapes[c - 1]
        out = [((c, c, k), 1.0 - p)]
        if k > 1 and p > 0.0:
            out.append(((c, c, k - 1), p))
        return out

    first = tuple(sorted([(requests, requests, shapes[requests - 1][0])] + [(0, 0, 0)] * (disks - 1)))
    index = {first: 0}
    stack = [first]
    moves: list[tuple[int, int, float, bool]] = []
    while stack:
        state = stack.pop()
        i = index[state]
        for a, (c, j, r) in enumerate(state):
            if c == 0:
                continue
            mu = rate[j - 1]
            outs: list[tuple[list[tuple[int, int, int]], float]] = []
            if r > 1:
                nxt = list(state)
                nxt[a] = (c, j, r - 1)
                outs.append((nxt, mu))
            else:
                for b in range(disks):
                    if b == a:  # back to the same disk: it starts again with c present
                        for s, p in starts(c):
                            nxt = list(state)
                            nxt[a] = s
                            outs.append((nxt, mu * p / disks))
                        continue
                    cb, jb, rb = state[b]
                    for s, p in starts(c - 1):
                        nxt = list(state)
                        nxt[a] = s
                        if cb == 0:
                            for sb, pb in starts(1):
                                both = list(nxt)
                                both[b] = sb
                                outs.append((both, mu * p * pb / disks))
                        else:
                            nxt[b] = (cb + 1, jb, rb)
                            outs.append((nxt, mu * p / disks))
            for nxt, rt in outs:
                key = tuple(sorted(nxt))
                if key not in index:
                    index[key] = len(index)
                    stack.append(key)
                moves.append((i, index[key], rt, r == 1))
    n = len(index)
    rows, cols, vals = [], [], []
    for i, j, rt, _done in moves:
        rows += [j, i]
        cols += [i, i]
        vals += [rt, -rt]
    q = coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr().tolil()
    q[0, :] = 1.0
    b = np.zeros(n)
    b[0] = 1.0
    pi = spsolve(q.tocsr(), b)
    return float(sum(pi[i] * rt for i, _j, rt, done in moves if done))
