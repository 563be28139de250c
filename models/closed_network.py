"""Closed queueing networks solved exactly: load-dependent stations and delays, one customer class.

N customers (requests in flight) cycle through the stations with zero think time.
A load-dependent station serves mu(j) requests per second while it holds j of
them (a drive at j outstanding through its concurrency law, a pool of c nfsd
threads: min(j, c) / s); a delay holds each visit for Z seconds whatever the
load (a fabric round trip).  Product form (Gordon & Newell 1967; Baskett,
Chandy, Muntz & Palacios 1975) gives the probability of n_i customers at
station i as prod_i f_i(n_i) / G(N) with

    f_i(k) = prod_{j=1..k} v_i / mu_i(j)      load-dependent station, v_i visits per cycle
    f_i(k) = (v_i Z_i)^k / k!                 delay (infinite server)

G(N) the convolution of the f_i (Buzen 1973).  The cycle rate is X(N) = G(N-1) / G(N);
a station's marginal is P_i(k) = f_i(k) G_{-i}(N - k) / G(N), with G_{-i} the
network without station i (Lazowska, Zahorjan, Graham & Sevcik, Quantitative
System Performance, 1984, ch. 8 and 20).  `copies` identical stations (the
members of an array, requests placed uniformly at random) enter as the
copies-fold convolution of one station's f.

The vectors are kept in logarithms: G grows like the number of ways to place
N customers, beyond the range of a double for a few hundred customers.  A
subnetwork replaced by its throughput as a function of its population (a
flow-equivalent server, Chandy, Herzog & Woo 1975) is exact in product form;
models.nfs_server builds the NFS server that way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


# Largest population solved exactly (one log-domain convolution costs MAX^2); larger ones move in bundles.
MAX_EXACT_CUSTOMERS = 512
_BLOCK_CELLS = 1 << 21  # cells per block of the log-domain convolution (memory bound)


@dataclass(frozen=True)
class Station:
    """A load-dependent station: `rates[j-1]` requests per second while it holds j (the last rate holds beyond).

    `visits`: visits per customer cycle (per copy); `copies`: identical stations sharing the visits."""

    name: str
    rates: tuple[float, ...]
    visits: float = 1.0
    copies: int = 1

    def __post_init__(self) -> None:
        if not self.rates or any(not r > 0.0 for r in self.rates):
            raise ValueError(f"station {self.name}: rates must be > 0, found {self.rates[:4]}...")
        if self.visits < 0.0 or self.copies < 1:
            raise ValueError(f"station {self.name}: visits >= 0 and copies >= 1, found {self.visits}, {self.copies}")

    def rate(self, j: int) -> float:
        return self.rates[min(j, len(self.rates)) - 1]


@dataclass(frozen=True)
class Delay:
    """An infinite-server station: each visit takes `seconds` whatever else is there."""

    name: str
    seconds: float
    visits: float = 1.0


@dataclass(frozen=True)
class Solution:
    """The network at `customers`: cycle rate, cycle time, and per-station figures (per copy)."""

    customers: int
    throughput: float                 # customer cycles per second
    cycle_s: float                    # N / X (Little's law)
    mean_queue: dict[str, float] = field(default_factory=dict)
    utilisation: dict[str, float] = field(default_factory=dict)   # its rate / its highest rate (busy servers / servers)
    occupied: dict[str, float] = field(default_factory=dict)      # P(station holds >= 1)
    busy_queue: dict[str, float] = field(default_factory=dict)    # E[held | held >= 1]
    residence_s: dict[str, float] = field(default_factory=dict)   # time per cycle spent at the station (all copies)

    def busiest(self) -> tuple[str, float]:
        """The station with the highest utilisation and that utilisation."""
        if not self.utilisation:
            return "", 0.0
        name = max(self.utilisation, key=lambda k: self.utilisation[k])
        return name, self.utilisation[name]


def log_convolve(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """log of (exp(a) * exp(b))[0..n], the truncated convolution of two log-vectors (-inf for zero)."""
    import numpy as np
    out = np.full(n + 1, -np.inf)
    la, lb = min(len(a), n + 1), min(len(b), n + 1)
    a = a[:la]
    b_pad = np.full(n + 1, -np.inf)
    b_pad[:lb] = b[:lb]
    rows = max(1, _BLOCK_CELLS // max(1, la))
    k = np.arange(la)
    for start in range(0, n + 1, rows):
        m = np.arange(start, min(n + 1, start + rows))[:, None]
        idx = m - k[None, :]
        valid = idx >= 0
        terms = np.where(valid, a[None, :] + b_pad[np.clip(idx, 0, n)], -np.inf)
        peak = terms.max(axis=1)
        finite = np.isfinite(peak)
        sums = np.zeros(len(peak))
        if finite.any():
            sums[finite] = np.log(np.exp(terms[finite] - peak[finite, None]).sum(axis=1))
        out[start:start + len(peak)] = np.where(finite, peak + sums, -np.inf)
    return out


def _log_power(f: np.ndarray, copies: int, n: int) -> np.ndarray:
    """The copies-fold convolution of f, by repeated squaring."""
    import numpy as np
    result: np.ndarray | None = None
    base = f[: n + 1]
    while copies:
        if copies & 1:
            result = base if result is None else log_convolve(result, base, n)
        copies >>= 1
        if copies:
            base = log_convolve(base, base, n)
    if result is None:
        result = np.full(n + 1, -np.inf)
        result[0] = 0.0
    return result


def log_factor(station: Station | Delay, n: int) -> np.ndarray:
    """log f(k), k = 0..n, of one copy (module docstring)."""
    import numpy as np
    k = np.arange(1, n + 1)
    out = np.zeros(n + 1)
    if isinstance(station, Delay):
        if station.visits <= 0.0 or station.seconds <= 0.0:
            out[1:] = -np.inf
            return out
        out[1:] = np.cumsum(math.log(station.visits * station.seconds) - np.log(k))
        return out
    if station.visits <= 0.0:
        out[1:] = -np.inf
        return out
    rates = np.array([station.rate(int(j)) for j in k])
    out[1:] = np.cumsum(math.log(station.visits) - np.log(rates))
    return out


def _bundled(station: Station | Delay, size: float) -> Station | Delay:
    """The station as seen by bundles of `size` requests (a population too large to solve exactly): a
    station holding j bundles holds j x size requests and completes mu(j x size) / size bundles per second."""
    if isinstance(station, Delay) or size == 1.0:
        return station
    n = max(1, math.ceil(len(station.rates) / size))
    rates = tuple(station.rate(max(1, round(j * size))) / size for j in range(1, n + 1))
    return Station(station.name, rates, station.visits, station.copies)


def _powers(parts: list[tuple[Station | Delay, np.ndarray]], n: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """For each station: the convolution of all its copies, and of all but one."""
    full, but_one = [], []
    for s, f in parts:
        copies = s.copies if isinstance(s, Station) else 1
        rest = _log_power(f, copies - 1, n)
        but_one.append(rest)
        full.append(log_convolve(rest, f, n) if copies > 1 else f)
    return full, but_one


def _product(vectors: list[np.ndarray], n: int) -> np.ndarray:
    import numpy as np
    total = np.full(n + 1, -np.inf)
    total[0] = 0.0
    for v in vectors:
        total = log_convolve(total, v, n)
    return total


@lru_cache(maxsize=256)
def solve(stations: tuple[Station, ...], delays: tuple[Delay, ...], customers: int) -> Solution:
    """The network with `customers` in it: exact up to MAX_EXACT_CUSTOMERS; beyond, customers move in
    bundles of N / MAX_EXACT_CUSTOMERS (`_bundled`), the same network at a coarser grain."""
    import numpy as np
    if customers < 1:
        raise ValueError(f"a closed network needs >= 1 customer, found {customers}")
    n = min(int(customers), MAX_EXACT_CUSTOMERS)
    size = customers / n
    parts = [(b, log_factor(b, n)) for b in (_bundled(s, size) for s in [*stations, *delays])]
    full, but_one = _powers(parts, n)
    total = _product(full, n)
    x = math.exp(total[n - 1] - total[n]) * size
    sol = Solution(customers=int(customers), throughput=x, cycle_s=customers / x)
    k = np.arange(n + 1)
    for i, (s, f) in enumerate(parts):
        if not isinstance(s, Station) or s.visits <= 0.0:
            continue
        rest = _product([p for j, p in enumerate(full) if j != i] + [but_one[i]], n)
        p_k = np.exp(f + rest[::-1] - total[n])
        p_k /= p_k.sum()
        mean = float((k * p_k).sum()) * size
        busy = 1.0 - float(p_k[0])
        sol.mean_queue[s.name] = mean
        sol.occupied[s.name] = busy
        sol.utilisation[s.name] = min(1.0, x * s.visits / (max(s.rates) * size))
        sol.busy_queue[s.name] = mean / busy if busy > 0.0 else 0.0
        sol.residence_s[s.name] = mean * s.copies / x
    return sol


def throughput_curve(stations: tuple[Station, ...], delays: tuple[Delay, ...], customers: int) -> np.ndarray:
    """X(1..customers) of the network from one pass (X(m) = G(m-1) / G(m)): a flow-equivalent server's
    rates.  Populations beyond MAX_EXACT_CUSTOMERS keep the rate at that population."""
    import numpy as np
    n = min(int(customers), MAX_EXACT_CUSTOMERS)
    parts = [(s, log_factor(s, n)) for s in [*stations, *delays]]
    total = _product(_powers(parts, n)[0], n)
    x = np.exp(total[:-1] - total[1:])
    if customers > n:
        x = np.concatenate([x, np.full(customers - n, x[-1])])
    return x


# ---------------------------------------------------------------------------- start-dependent servers


def erlang_mixture(scv: float) -> tuple[int, float]:
    """(k, p): a service of squared coefficient of variation `scv` < 1 as Erlang(k - 1) with probability p, else
    Erlang(k), all phases at one rate (Tijms, A First Course in Stochastic Models, 2003, sec. 2.4: matches the
    mean and the variance for 1/k <= scv <= 1/(k - 1)).  scv >= 1 (or no value) is kept exponential: k = 1, p = 0;
    one below 1 / MAX_PHASES takes MAX_PHASES phases (the chain's size)."""
    if not 0.0 < scv < 1.0:
        return 1, 0.0
    c2 = max(scv, 1.0 / MAX_PHASES)
    k = min(MAX_PHASES, max(2, math.ceil(1.0 / c2 - 1e-12)))
    p = (k * c2 - math.sqrt(max(0.0, k * (1.0 + c2) - k * k * c2))) / (1.0 + c2)
    return k, min(1.0, max(0.0, p))


# Erlang phases a command's service may take (squared coefficient of variation down to 1/12; a disk's is ~0.15-0.7)
MAX_PHASES = 12
# States of one tagged chain beyond which its phases are coarsened (the sparse solve's cost)
_CHAIN_STATES = 60_000


def _tagged_chain(service_s: np.ndarray, arrivals: np.ndarray, customers: int, stay: float,
                  scv: np.ndarray | None = None) -> np.ndarray:
    """Completion rate of one single server, given k present, when a command's service time is fixed
    when it starts: of mean service_s[j - 1] for the j commands present at its start, with squared
    coefficient of variation scv[j - 1] (a mixture of Erlangs, `erlang_mixture`; exponential without scv).

    State (k, j, r): k present, the command in service started with j (1 <= j <= k) and has r phases left;
    arrivals at arrivals[k] (from the rest of the network holding N - k); a completed command comes straight
    back with probability `stay` (the layout sends the next request to the same drive).  Returns mu_eff(1..N) =
    (completions per second | k), from the chain's stationary distribution (scipy sparse solve)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    n, cap = customers, len(service_s)
    shapes = [erlang_mixture(float(c)) for c in (scv if scv is not None else np.ones(cap))]
    base = sum(min(k, cap) for k in range(1, n + 1))
    most = max(1, _CHAIN_STATES // max(1, base))
    if max(k for k, _p in shapes) > most:  # a coarser mixture keeps the solve small: toward exponential
        shapes = [erlang_mixture(max(float(c), 1.0 / most)) if most > 1 else (1, 0.0)
                  for c in (scv if scv is not None else np.ones(cap))]
    phase_rate = [(k - p) / float(service_s[j]) for j, (k, p) in enumerate(shapes)]
    index: dict[tuple[int, int, int], int] = {(0, 0, 0): 0}
    for k in range(1, n + 1):
        for j in range(1, min(k, cap) + 1):
            for r in range(1, shapes[j - 1][0] + 1):
                index[(k, j, r)] = len(index)
    rows, cols, vals = [], [], []

    def move(src: int, dst: int, rate: float) -> None:
        if dst != src and rate > 0.0:
            rows.extend((dst, src))
            cols.extend((src, src))
            vals.extend((rate, -rate))

    def start(src: int, k: int, rate: float) -> None:
        """A service starts with k present: its phases left are k_j - 1 with probability p_j, else k_j."""
        if k == 0:
            move(src, 0, rate)
            return
        j = min(k, cap)
        phases, p = shapes[j - 1]
        if phases > 1:
            move(src, index[(k, j, phases - 1)], rate * p)
        move(src, index[(k, j, phases)], rate * (1.0 - p))

    start(0, 1, float(arrivals[0]))
    for (k, j, r), i in index.items():
        if k == 0:
            continue
        if k < n:
            move(i, index[(k + 1, j, r)], float(arrivals[k]))
        rate = phase_rate[j - 1]
        if r > 1:
            move(i, index[(k, j, r - 1)], rate)
            continue
        start(i, k - 1, rate * (1.0 - stay))
        if stay > 0.0:
            start(i, k, rate * stay)
    size = len(index)
    q = coo_matrix((vals, (rows, cols)), shape=(size, size)).tocsr().tolil()
    q[0, :] = 1.0  # replace one balance equation by the normalisation
    b = np.zeros(size)
    b[0] = 1.0
    pi = spsolve(q.tocsr(), b)
    done = np.zeros(n + 1)
    held = np.zeros(n + 1)
    for (k, j, r), i in index.items():
        if k:
            held[k] += pi[i]
            if r == 1:
                done[k] += pi[i] * phase_rate[j - 1]
    # states the network almost never reaches carry round-off only: there the start depth is the present one
    plain = 1.0 / service_s[np.minimum(np.arange(n), cap - 1)]
    rates = np.where(held[1:] > 1e-12, done[1:] / np.maximum(held[1:], 1e-300), plain)
    return np.clip(rates, 1.0 / service_s.max(), 1.0 / service_s.min())


# Start depths a single server distinguishes: a disk picking among more than this many commands is taken
# to gain no more (models.hdd's reordering law is flat there); it bounds the chain to N x 64 states.
START_DEPTH_CAP = 64


@lru_cache(maxsize=128)
def start_dependent_rates(station: Station, others: tuple[Station, ...], customers: int, rounds: int = 8,
                          scv: tuple[float, ...] = ()) -> tuple[float, ...]:
    """Effective load-dependent rates of `station` (all its copies) when each copy is one server whose
    command's service time is set when it starts: 1 / rates[j - 1] for the j commands it then holds (a
    hard disk choosing its next command among those queued, models.hdd).  Arrivals during a service do
    not shorten it, which the load-dependent station of the product form would assume.  `scv[j - 1]`: the
    squared coefficient of variation of that service (a disk's seek + rotation: ~0.2, models.hdd); without
    it the service is exponential.  A less variable server leaves its peers idle less often (the
    product form's exponential servers read ~9 % slow for 4 disks at QD4).

    Marie's method (Marie, IEEE TSE 1980; Lazowska et al. 1984 ch. 9): one copy is solved exactly as the
    Markov chain above, fed by the rest of the network replaced by its flow-equivalent server (the
    network with that copy short-circuited, models.closed_network.throughput_curve, times the copy's
    visits); its conditional completion rates replace the copies' rates, and the two are iterated."""
    import numpy as np
    n = min(int(customers), MAX_EXACT_CUSTOMERS)
    service = 1.0 / np.array(station.rates[: max(1, min(len(station.rates), n, START_DEPTH_CAP))])
    spread = np.array([scv[min(j, len(scv) - 1)] for j in range(len(service))]) if scv else None
    mu = tuple(station.rate(k) for k in range(1, n + 1))
    if station.copies == 1 and not others:
        return mu
    for _ in range(rounds):
        peers = (Station(station.name, mu, station.visits, station.copies - 1),) if station.copies > 1 else ()
        rest = throughput_curve((*peers, *others), (), n)  # X_short(m), m = 1..n
        # fresh arrivals: the rest completes (1 - v) of a cycle's visits per cycle and sends v of them here
        share = station.visits / (station.visits * station.copies + sum(o.visits * o.copies for o in others))
        arrivals = np.concatenate([share * (1.0 - share) * rest[::-1], [0.0]])  # index k: the rest holds n - k
        new = tuple(float(r) for r in _tagged_chain(service, arrivals, n, share, spread))
        if max(abs(a / b - 1.0) for a, b in zip(new, mu, strict=True)) < 1e-4:
            return new
        mu = new
    return mu


# ---------------------------------------------------------------------------- identical disks, solved level by level


def _chain_states(shapes: list[tuple[int, float]], cap: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of the levels k = 0..n of a tagged chain (state 0: empty; level k: (start depth j, phases left r)
    for j <= min(k, cap)), and of each start depth's phases within a level."""
    import numpy as np
    phases = np.array([k for k, _p in shapes])
    within = np.concatenate([[0], np.cumsum(phases)])
    sizes = np.array([0] + [int(within[min(k, cap)]) for k in range(1, n + 1)])
    return np.concatenate([[0, 1], 1 + np.cumsum(sizes[1:])]), within


def _chain(service_s: np.ndarray, shapes: list[tuple[int, float]], arrivals: np.ndarray, n: int,
           stay: float) -> tuple[float, float, float]:
    """The tagged single server of `_tagged_chain`, built with arrays: (completions per second, P(it holds >= 1),
    E[what it holds]) at `n` customers in the whole network, arrivals[k] while it holds k."""
    import numpy as np
    pi, offset, ending = chain_distribution(service_s, shapes, arrivals, n, stay)
    levels = np.repeat(np.arange(n + 1), np.diff(offset))
    return float(pi @ ending), 1.0 - float(pi[0]), float(levels @ pi)


def chain_distribution(service_s: np.ndarray, shapes: list[tuple[int, float]], arrivals: np.ndarray, n: int,
                       stay: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_chain`'s stationary distribution over its states (level k: offset[k] + the position of (start depth j,
    phases left r), `_chain_states`), the levels' offsets, and each state's completion rate."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    cap = len(service_s)
    offset, within = _chain_states(shapes, cap, n)
    size = int(offset[-1])
    rate = np.array([(k - p) / s for (k, p), s in zip(shapes, service_s, strict=True)])
    src, dst, val = [], [], []

    def start(frm: np.ndarray, k: int, r: np.ndarray) -> None:
        """A service starts with k present (state 0 when k = 0): k_j or k_j - 1 phases left (`erlang_mixture`)."""
        if k == 0:
            src.append(frm), dst.append(np.zeros_like(frm)), val.append(r)
            return
        j = min(k, cap)
        top, p = shapes[j - 1]
        first = offset[k] + within[j - 1]
        src.append(frm), dst.append(np.full_like(frm, first + top - 1)), val.append(r * (1.0 - p))
        if top > 1 and p > 0.0:
            src.append(frm), dst.append(np.full_like(frm, first + top - 2)), val.append(r * p)

    start(np.array([0]), 1, np.array([float(arrivals[0])]))
    depth = np.repeat(np.arange(cap), np.diff(within))        # start depth (0-based) of each position in a level
    left = np.concatenate([np.arange(1, k + 1) for k, _p in shapes])  # phases left at each position
    for k in range(1, n + 1):
        m = int(within[min(k, cap)])
        idx = offset[k] + np.arange(m)
        mu = rate[depth[:m]]
        if k < n:
            src.append(idx), dst.append(offset[k + 1] + np.arange(m)), val.append(np.full(m, float(arrivals[k])))
        more = left[:m] > 1
        src.append(idx[more]), dst.append(idx[more] - 1), val.append(mu[more])
        last = idx[~more]
        start(last, k - 1, mu[~more] * (1.0 - stay))
        if stay > 0.0:
            start(last, k, mu[~more] * stay)
    s, d, v = (np.concatenate(a) for a in (src, dst, val))
    keep = (s != d) & (v > 0.0)
    s, d, v = s[keep], d[keep], v[keep]
    q = coo_matrix((np.concatenate([v, -v]), (np.concatenate([d, s]), np.concatenate([s, s]))), shape=(size, size)).tolil()
    q[0, :] = 1.0  # one balance equation replaced by the normalisation
    b = np.zeros(size)
    b[0] = 1.0
    pi = np.maximum(spsolve(q.tocsr(), b), 0.0)
    pi /= pi.sum()
    ending = np.concatenate([[0.0], *[np.where(left[:int(within[min(k, cap)])] == 1, rate[depth[:int(within[min(k, cap)])]], 0.0)
                                      for k in range(1, n + 1)]])  # the completion rate out of each state
    return pi, offset, ending


def sampled_populations(top: int) -> list[int]:
    """Populations a curve is solved at: every one up to 16, then steps of 1/8 (smooth there; interpolated between)."""
    out = list(range(1, min(top, 16) + 1))
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, round(out[-1] * 1.125))))
    return out


@dataclass(frozen=True)
class DiskGroup:
    """M identical single-server disks, requests sent to them uniformly, at populations 1..N: the group's
    completions per second, and one disk's P(holds >= 1) and mean held."""

    throughput: tuple[float, ...]
    occupied: tuple[float, ...]
    mean_queue: tuple[float, ...]


@lru_cache(maxsize=256)
def identical_disks(service_s: tuple[float, ...], scv: tuple[float, ...], disks: int, customers: int) -> DiskGroup:
    """The closed network of `disks` identical disks whose command takes service_s[j - 1] (squared coefficient of
    variation scv[j - 1]) when it starts with j present, each completion sent to a disk drawn uniformly.

    One disk is the tagged chain (`_chain`); the rest, L - 1 disks holding m - k when it holds k, send it
    X_{L-1}(m - k) / L requests per second, X_{L-1} the throughput of the network of L - 1 such disks, solved the
    same way: a recursion on the number of disks from one disk (X_1(m) = 1 / service_s[m - 1]) up, each level a
    flow-equivalent rest (Chandy, Herzog & Woo 1975) whose own disks keep their start-dependent service, where
    Marie's method (`start_dependent_rates`) takes the rest as product form over effective rates.  That product
    form is what overshoots the exact chain (tests/disk_network_oracle.py: +5 % at 4 disks x QD4, +6 % at 8 x 8);
    the recursion is exact with one or two disks and within ~1.5 % of the exact chain where that can be solved
    (tests/test_disk_service_spread.py).  Not for exponential commands (no scv): the one-disk base restarts at the
    depth it holds, which a disk in the network did not (-> +4.6 % at 2 x 3 there); Marie's method is exact for them.
    Each level's throughput is `_chain`'s completion rate times L at the
    populations of `sampled_populations`, interpolated between."""
    import numpy as np
    n = int(customers)
    cap = max(1, min(len(service_s), n, START_DEPTH_CAP))
    service = np.array(service_s[:cap])
    shapes = [erlang_mixture(float(scv[min(j, len(scv) - 1)])) if scv else (1, 0.0) for j in range(cap)]
    points = sampled_populations(n)
    grid = np.arange(1, n + 1)
    curve = 1.0 / service[np.minimum(grid, cap) - 1]        # X_1(m): one disk always restarts with all m present
    occupied, held = np.ones(n), grid.astype(float)
    for level in range(2, disks + 1):
        rest = np.concatenate([[0.0], curve])                 # X_{L-1}(0..n)
        solved = [_chain(service[:min(m, cap)], shapes[:min(m, cap)],
                         np.concatenate([rest[m - np.arange(m)] / level, [0.0]]), m, 1.0 / level) for m in points]
        x, busy, mean = (np.array(v) for v in zip(*solved, strict=True))
        curve = np.interp(grid, points, level * x)
        occupied, held = np.interp(grid, points, busy), np.interp(grid, points, mean)
    return DiskGroup(tuple(float(v) for v in curve), tuple(float(v) for v in occupied), tuple(float(v) for v in held))


@lru_cache(maxsize=4096)
def finite_source_disk(service_s: tuple[float, ...], scv: tuple[float, ...], customers: int, think_s: float) -> tuple[float, float, float]:
    """One disk (start-dependent service, as `identical_disks`) visited by `customers` sources that each come back
    after an exponential think time of `think_s` once their command is done: (completions per second, P(it holds
    >= 1), E[what it holds]).  The machine-repairman loop (Lazowska et al. 1984 ch. 8) with `_chain`'s server."""
    import numpy as np
    n = int(customers)
    cap = max(1, min(len(service_s), n, START_DEPTH_CAP))
    shapes = [erlang_mixture(float(scv[min(j, len(scv) - 1)])) if scv else (1, 0.0) for j in range(cap)]
    arrivals = np.concatenate([(n - np.arange(n)) / think_s, [0.0]])
    return _chain(np.array(service_s[:cap]), shapes, arrivals, n, 0.0)
