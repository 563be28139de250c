"""Closed queueing networks of service stages, solved by approximate mean value analysis.

A request of a closed loop (fio's iodepth, a loader's reader threads) crosses
*stages* one after the other: a client's frontend cores, its NIC, the storage
nodes' NICs, cores and drives.  At a stage the request splits into `branches`
parallel pieces (a 1 MiB read is four chunks on four nodes), each served for
`service_s` by one server of one of the stage's identical `stations`.  Besides
the stages, every request spends `delay_s` in pure delays (network hops).

The solution is Schweitzer's approximation of the mean-value recursion
(Schweitzer 1979; Bard 1979) of the exact MVA of Reiser & Lavenberg (J. ACM
27(2), 1980): a branch arriving at a station sees the station's mean queue
with its own request taken out, Q x (n - 1) / n, where n is the population
that can visit the station (all N requests for a shared station; the n = N /
chains requests of one client for a `private` station, one per client: the
symmetric-chain form of the approximation, since every client is alike).  A
station with c servers is Seidmann's two-part equivalent (Seidmann, Schweitzer
& Shalev-Oren, 1987): a delay of d (c - 1) / c and a single server of d / c.
A fork-join stage costs the request one branch's residence time (the branches
see the same mean queue; the stretch of the slowest of p branches, Nelson &
Tantawi 1988, is left out) while all p branches load the stations.  Work a
request leaves behind (`background_s`: a log's later destage) loads the
stations but is on nobody's response path: it is an open class whose
utilisation U stretches the closed class's residence by 1 / (1 - U) (mixed
networks, Lazowska et al., "Quantitative System Performance", 1984, ch. 7).

With all of that, for a throughput X the queue at one station's queueing part is
    Q = a / (1 - a b),   a = X p d / (c k (1 - U)),   b = (n - 1) / n
(k stations), the response time is R(X) = delay + sum over stages of
    d (c - 1) / c + d / c x (1 + b Q) / (1 - U),
and the solution is the X with X R(X) = N (Little's law over the loop), found
by bracketing: X R(X) rises with X from 0 to at least N where the busiest
station saturates.  At N = 1 it is exact (R = delay + sum of d); as N grows X
tends to the busiest station's capacity, the asymptotic bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """One kind of station a request crosses; times in seconds of one server."""

    name: str
    service_s: float          # one branch's service time at one server
    servers: float = 1.0      # servers per station (cores); 1 for a link or a flash unit
    stations: float = 1.0     # identical stations the branches spread over evenly
    branches: float = 1.0     # parallel branches of one request at this stage
    background_s: float = 0.0  # server-seconds per request left for later (not on the response path)
    private: bool = False     # one station per client, visited by that client's requests only

    def __post_init__(self) -> None:
        for field, value in (("service_s", self.service_s), ("background_s", self.background_s)):
            if not (value >= 0.0 and math.isfinite(value)):
                raise ValueError(f"stage {self.name}: {field} must be finite and >= 0, found {value!r}")
        for field, value in (("servers", self.servers), ("stations", self.stations), ("branches", self.branches)):
            if not (value > 0.0 and math.isfinite(value)):
                raise ValueError(f"stage {self.name}: {field} must be finite and > 0, found {value!r}")

    @property
    def demand_s(self) -> float:
        """Server-seconds one request takes from the stage, foreground and background."""
        return self.branches * self.service_s + self.background_s

    def capacity_per_s(self) -> float:
        """Requests per second that saturate the stage (its servers over its demand)."""
        demand = self.demand_s
        return math.inf if demand <= 0.0 else self.servers * self.stations / demand

    def utilisation(self, throughput: float) -> float:
        return throughput / self.capacity_per_s()


@dataclass(frozen=True)
class Solution:
    throughput: float         # requests per second, all chains together
    response_s: float         # mean time a request spends in the loop
    utilisation: dict[str, float]

    @property
    def bottleneck(self) -> str:
        """The busiest stage ('' when no stage has any demand)."""
        busy = [(u, name) for name, u in self.utilisation.items()]
        return max(busy)[1] if busy else ""


def _residence(stage: Stage, throughput: float, visitors: float) -> float:
    """One branch's mean time at the stage at throughput X (module docstring)."""
    d, c = stage.service_s, stage.servers
    if d <= 0.0:
        return 0.0
    stations = stage.stations
    background = throughput * stage.background_s / (c * stations)
    if background >= 1.0:
        return math.inf
    a = throughput * stage.branches * d / (c * stations * (1.0 - background))
    b = (visitors - 1.0) / visitors if visitors > 1.0 else 0.0
    if a * b >= 1.0:
        return math.inf
    queue = a / (1.0 - a * b)
    return d * (c - 1.0) / c + d / c * (1.0 + b * queue) / (1.0 - background)


def response_s(stages: list[Stage], throughput: float, population: float, chains: float = 1.0, delay_s: float = 0.0) -> float:
    """R(X): a request's mean response time when the loop runs at `throughput` (module docstring)."""
    per_chain = population / chains
    return delay_s + sum(_residence(s, throughput, per_chain if s.private else population) for s in stages)


def solve(stages: list[Stage], population: float, chains: float = 1.0, delay_s: float = 0.0) -> Solution:
    """Throughput and response time of `population` requests looping through `stages` (module docstring).

    `chains`: identical clients the population is spread over (private stages have one station each)."""
    if not population > 0.0:
        raise ValueError(f"population must be > 0, found {population!r}")
    if not chains > 0.0:
        raise ValueError(f"chains must be > 0, found {chains!r}")
    if not (delay_s >= 0.0 and math.isfinite(delay_s)):
        raise ValueError(f"delay_s must be finite and >= 0, found {delay_s!r}")
    stages = [_private(s, chains) for s in stages]
    base = response_s(stages, 0.0, population, chains, delay_s)
    if base <= 0.0:
        raise ValueError("a loop with no delay and no service time has no finite throughput")
    ceiling = min(s.capacity_per_s() for s in stages) if stages else math.inf
    hi = min(ceiling, population / base)

    def excess(x: float) -> float:
        return x * response_s(stages, x, population, chains, delay_s) - population

    x = _root(excess, 0.0, hi)
    r = population / x
    return Solution(x, r, {s.name: s.utilisation(x) for s in stages if s.demand_s > 0.0})


def _private(stage: Stage, chains: float) -> Stage:
    """A private stage has one station per chain (its branches never leave their client)."""
    if not stage.private or stage.stations == chains:
        return stage
    return Stage(stage.name, stage.service_s, stage.servers, chains, stage.branches, stage.background_s, True)


def _root(f, lo: float, hi: float, rel: float = 1e-12, iterations: int = 200) -> float:  # noqa: ANN001
    """The x in (lo, hi] with f(x) = 0 for f increasing, f(lo) < 0 (Illinois regula falsi; inf counts as > 0)."""
    f_hi = f(hi)
    if f_hi <= 0.0:
        return hi
    f_lo = f(lo)
    side = 0
    for _ in range(iterations):
        if math.isinf(f_hi):
            x = 0.5 * (lo + hi)
        else:
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            if not lo < x < hi:
                x = 0.5 * (lo + hi)
        fx = f(x)
        if fx > 0.0:
            hi, f_hi = x, fx
            if side == 1 and not math.isinf(f_lo):
                f_lo *= 0.5
            side = 1
        else:
            lo, f_lo = x, fx
            if side == -1 and not math.isinf(f_hi):
                f_hi *= 0.5
            side = -1
        if hi - lo <= rel * hi:
            break
    return 0.5 * (lo + hi)
