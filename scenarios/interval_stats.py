"""The statistics of a sample of predictions: its interval, which inputs move it (Sobol' total effects), and how an
interval is scored against a measurement.  Pure functions on numbers; the sampler (scenarios.uncertainty) feeds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    low: float
    median: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"low": self.low, "median": self.median, "high": self.high}

    def relative_half_width(self) -> float:
        """(high - low) / 2 / |median|."""
        return (self.high - self.low) / 2 / abs(self.median) if self.median else math.inf


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile with Hazen's plotting positions (Hyndman & Fan 1996, type 5: the k-th of n values sits at
    (k - 1/2) / n), interpolated linearly and clamped at the ends.  A Latin hypercube puts one point in each 1/n slice
    of every input, so its k-th value sits near (k - 1/2) / n: type 5 reads such a sample without the bias numpy's
    default (type 7) has in the tails."""
    n = len(sorted_values)
    position = min(max(q * n - 0.5, 0.0), n - 1.0)
    below = math.floor(position)
    above = min(below + 1, n - 1)
    return sorted_values[below] + (position - below) * (sorted_values[above] - sorted_values[below])


def interval(values: Sequence[float], level: float) -> Interval:
    """The central `level` interval and the median of a sample (the 5 % and 95 % quantiles for level 0.9)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("an interval needs at least one value")
    alpha = 1.0 - level
    return Interval(quantile(ordered, alpha / 2), quantile(ordered, 0.5), quantile(ordered, 1 - alpha / 2))


def jansen_total_effects(f_a: Sequence[float], f_b: Sequence[float], f_ab: Sequence[Sequence[float]]) -> list[float]:
    """Sobol' total-effect indices by Jansen's estimator on a Saltelli design (Saltelli et al. 2010, Comput. Phys.
    Commun. 181, table 2 (f)): S_Ti = mean((f(A) - f(A_B^i))^2) / 2 / Var(f), where A_B^i is A with column i taken
    from B and Var is over A and B together.  Pairs where a run failed (NaN) are left out of that input's mean."""
    pooled = [v for v in (*f_a, *f_b) if math.isfinite(v)]
    if len(pooled) < 2:
        return [0.0] * len(f_ab)
    mean = sum(pooled) / len(pooled)
    variance = sum((v - mean) ** 2 for v in pooled) / (len(pooled) - 1)
    if variance <= 0:
        return [0.0] * len(f_ab)
    totals = []
    for column in f_ab:
        diffs = [(a - ab) ** 2 for a, ab in zip(f_a, column, strict=True) if math.isfinite(a) and math.isfinite(ab)]
        totals.append(sum(diffs) / len(diffs) / 2 / variance if diffs else 0.0)
    return totals


def shares(totals: Sequence[float]) -> list[float]:
    """Total effects as shares that sum to 1 (where any is positive): how much of the spread each input carries."""
    positive = [max(t, 0.0) for t in totals]
    whole = sum(positive)
    return [t / whole if whole > 0 else 0.0 for t in positive]


def interval_score(low: float, high: float, measured: float, level: float) -> float:
    """Gneiting & Raftery (JASA 2007, eq. 43): (u - l) + 2/alpha (l - x) 1{x < l} + 2/alpha (x - u) 1{x > u}, for the
    central (1 - alpha) interval [l, u]; lower is better.  Divided by |x| so rows of different units compare."""
    alpha = 1.0 - level
    score = (high - low) + 2 / alpha * max(low - measured, 0.0) + 2 / alpha * max(measured - high, 0.0)
    return score / abs(measured) if measured else math.inf


def covered(low: float, high: float, measured: float) -> bool:
    return low <= measured <= high
