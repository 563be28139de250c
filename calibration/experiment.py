"""Which measurements shrink a prediction's uncertainty most: greedy Bayesian experimental design, linearised.

The unknowns are standardised: z_i = 0 at an unknown's median and +-1.645 at its 5 % and 95 % quantiles, so a
prior of unit variance each (independent, as the sampler draws them).  Near the given values a log output is linear
in them: the quantity we want, log T = t0 + h . z, and a candidate measurement, log y_c = y0_c + g_c . z + e_c, with
e_c the measurement's relative noise (fio's run-to-run spread over its repeats).  h and g_c come from one-at-a-time
runs at the 5 % and 95 % quantiles (the sampler's screening points): h_i = (log T(95 %) - log T(5 %)) / (2 x 1.645).

Measuring c updates the unknowns' covariance exactly (Gaussian linear model; Sherman-Morrison):
    S' = S - S g g^T S / (sigma_c^2 + g^T S g),
and the variance of log T falls by (h^T S g)^2 / (sigma_c^2 + g^T S g).  The greedy design takes, step by step, the
candidate with the largest fall (Krause, Singh & Guestrin, JMLR 9, 2008: for variance reduction the greedy choice is
near-optimal when the measurements do not suppress each other).  What is left, sqrt(h^T S h / h^T h), scales the
sampler's interval: the expected interval after the measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.6448536269514722  # the 95 % quantile of the standard normal: an unknown's 5 %..95 % span is 2 x Z95 in z


@dataclass(frozen=True)
class Pick:
    candidate: int             # index into the candidates
    unknown: int               # the unknown whose contribution to the target's variance it removes most
    variance_after: float      # variance of log T after this and every earlier pick (linearised)
    unknown_sd_after: float    # that unknown's standard deviation after the picks, in units of its prior sd


def slope(low_value: float, high_value: float) -> float:
    """d log(output) / dz from the output at an unknown's 5 % and 95 % quantiles (module docstring); 0 where either run
    gave no positive value."""
    if not (low_value > 0 and high_value > 0 and math.isfinite(low_value) and math.isfinite(high_value)):
        return 0.0
    return (math.log(high_value) - math.log(low_value)) / (2 * Z95)


def greedy(h: np.ndarray, g: np.ndarray, noise: np.ndarray, max_picks: int, min_share: float = 0.01) -> list[Pick]:
    """Up to `max_picks` candidates (rows of g, relative noise `noise`), each the one that lowers h^T S h most given
    the earlier ones; stops when the best fall is below `min_share` of the prior variance h^T h."""
    k = len(h)
    cov = np.eye(k)
    prior = float(h @ h)
    picks: list[Pick] = []
    used: set[int] = set()
    for _ in range(max_picks):
        best, best_fall = -1, 0.0
        for c in range(len(g)):
            if c in used:
                continue
            sg = cov @ g[c]
            fall = float(h @ sg) ** 2 / (noise[c] ** 2 + float(g[c] @ sg))
            if fall > best_fall * (1 + 1e-12):
                best, best_fall = c, fall
        if best < 0 or prior <= 0 or best_fall < min_share * prior:
            break
        sg = cov @ g[best]
        updated = cov - np.outer(sg, sg) / (noise[best] ** 2 + float(g[best] @ sg))
        removed = (h**2) * (np.diag(cov) - np.diag(updated))  # each unknown's own share of the fall
        unknown = int(np.argmax(removed))
        cov = updated
        used.add(best)
        picks.append(Pick(best, unknown, float(h @ cov @ h), math.sqrt(max(cov[unknown, unknown], 0.0))))
    return picks
