"""Mean latency of a closed loop over c service units and a fixed delay (exact MVA).

The network: N requests circulate with zero think time.  Each passes a pure
delay of d seconds (an infinite server) and one service unit of the c
"effective" units that S = 1 / C (the time per request at the ceiling C) and
the unit occupancy u give, c = u / S.  c need not be whole: there are
floor(c) full units, each visited by a share 1 / c of the requests, and one
partial unit visited by the rest, (c - floor(c)) / c; every visit holds its
unit for u seconds.  So a full unit's demand per request is u / c = S, the
partial unit's (c - floor(c)) S, one request alone takes L0 = d + u, and the
units together serve at most 1 / S requests per second.  Units are single
servers, FCFS with exponential service or processor sharing with any service
distribution: both are product-form (Baskett, Chandy, Muntz & Palacios,
J. ACM 22(2), 1975), so mean value analysis is exact (Reiser & Lavenberg,
J. ACM 27(2), 1980).  With q and p the mean queues at a full and at the
partial unit when n - 1 requests circulate:

    R(n) = d + c S + S q + (c - floor(c)) S p,   X(n) = n / R(n),
    q' = X(n) S (1 + q),   p' = X(n) (c - floor(c)) S (1 + p).

With a whole c and d = 0 symmetry gives the closed form R(n) = L0 + (n - 1) S;
the partial unit makes R continuous in c (a whole number of units with the
remainder of L0 as a delay would jump by up to 17 % where c crosses an
integer).  Between integers of N the latency is interpolated linearly (a
fractional number of requests in flight is a time average).  Past EXACT_LIMIT
requests each further one waits one S more (X -> 1 / S), a relative error
below 1 / EXACT_LIMIT.  simulator.per_request realises this network one
request at a time and is its test oracle.
"""

from __future__ import annotations

import math
from functools import lru_cache

EXACT_LIMIT = 4096  # requests up to which the recursion runs (beyond: R grows by S per request, relative error < 1 / 4096)
MANY_UNITS = 1e6  # beyond this many units the queueing terms are exact to 1e-6 in the closed form


@lru_cache(maxsize=65536)
def _recursion(delay_s: float, units: float, service_s: float, n: int) -> float:
    whole = math.floor(units)
    part = units - whole
    q = p = 0.0
    r = delay_s + units * service_s
    # the loop-invariant products, hoisted: Python evaluates a + b * c + d * e * q left to right, so
    # (a + b * c) + (d * e) * q is the same arithmetic, bit for bit (the loop runs up to EXACT_LIMIT times per call)
    alone, full_s, part_s = r, whole * service_s, part * service_s
    for k in range(1, n + 1):
        r = alone + full_s * q + part_s * p
        x = k / r
        q = x * service_s * (1.0 + q)
        p = x * part * service_s * (1.0 + p)
    return r


def _integer_latency(delay_s: float, units: float, service_s: float, n: int) -> float:
    if n <= EXACT_LIMIT:
        return _recursion(delay_s, units, service_s, n)
    return _recursion(delay_s, units, service_s, EXACT_LIMIT) + (n - EXACT_LIMIT) * service_s


def latency_s(l0_s: float, service_s: float, outstanding: float, units: float | None = None) -> float:
    """R(N): mean latency with `outstanding` requests in flight (module docstring).

    `units` is c (None: L0 / S, no delay); it is capped at L0 / S so the delay d = L0 - c S is never negative."""
    if outstanding < 1:
        raise ValueError(f"outstanding requests must be >= 1, found {outstanding!r}")
    if l0_s <= 0 or service_s < 0:
        raise ValueError(f"latency must be > 0 and service time >= 0, found L0 {l0_s!r}, S {service_s!r}")
    if service_s == 0.0:
        return l0_s
    most = l0_s / service_s
    c = most if units is None else max(1e-12, min(float(units), most))
    if c >= MANY_UNITS or (c == most and c == math.floor(c)):
        return l0_s + (outstanding - 1.0) * service_s  # whole units, no delay: the closed form
    delay = max(0.0, l0_s - c * service_s)
    low = math.floor(outstanding)
    r_low = _integer_latency(delay, c, service_s, low)
    if outstanding == low:
        return r_low
    r_high = _integer_latency(delay, c, service_s, low + 1)
    return r_low + (outstanding - low) * (r_high - r_low)
