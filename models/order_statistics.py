"""The expected maximum of n independent normal draws: what a barrier waits for when n ranks' times each spread.

E[max of n iid N(0, 1)] = integral of z n phi(z) Phi(z)^(n-1) dz (the density of the largest of n draws; David &
Nagaraja, Order Statistics, 3rd ed., section 4.1), computed by quadrature on a fixed grid.  A barrier that closes
when the last of n ranks arrives, each rank's time mu + sigma Z, costs mu + sigma E[max of n] a step.
"""

from __future__ import annotations

import math
from functools import lru_cache


@lru_cache(maxsize=512)
def expected_max_standard_normal(n: int) -> float:
    """E[max of n iid standard normals]: 0 for one, 1/sqrt(pi) for two, about sqrt(2 ln n) for many."""
    if n < 1:
        raise ValueError(f"n: expected at least one draw, found {n}")
    if n == 1:
        return 0.0
    # the max's density n phi(z) Phi(z)^(n-1) is negligible outside [-8, 8 + sqrt(2 ln n)]; trapezoids of 1/200
    upper = 8.0 + math.sqrt(2.0 * math.log(n))
    steps = int((upper + 8.0) * 200)
    total = 0.0
    for i in range(steps + 1):
        z = -8.0 + i * (upper + 8.0) / steps
        density = n * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) * (0.5 * math.erfc(-z / math.sqrt(2.0))) ** (n - 1)
        total += (0.5 if i in (0, steps) else 1.0) * z * density
    return total * (upper + 8.0) / steps
