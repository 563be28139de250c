"""Weighted least squares of positive parameters in log space (the drive fit and the cluster fit share it).

scipy.optimize.least_squares on log parameters with a robust (soft-L1) loss; a
parameter no measurement depends on (its Jacobian column is zero) is put back
to its base value and the rest refitted.  Standard errors come from the
Jacobian, cov = (J^T J)^-1 s^2 with s^2 = 2 cost / (m - p), and are relative
(a log-space standard error is a relative one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

ROBUST_SCALE = 2.0  # soft-L1 loss: residuals beyond 2 sigma (a burst from a neighbour on a shared VM) count linearly, not squared
DEAD_COLUMN = 1e-6  # a Jacobian column below this norm: no measurement depends on the parameter


@dataclass
class LogFit:
    values: dict[str, float]        # every parameter: fitted, or back at its base value
    informed: list[str]             # the fitted ones
    dead: list[str]                 # the ones no measurement depends on
    rel_stderr: dict[str, float]    # relative standard error of each informed parameter
    cost: float
    dof: int
    s: float                        # residual scale (1 when the weights are the noise)


def fit_log(residuals: Callable[[dict[str, float]], np.ndarray], start: dict[str, float], free: list[str],
            base: dict[str, float], measurements: int, loss: str = "soft_l1") -> LogFit:
    """Fit the `free` parameters of `start` (the rest stay fixed) so that `residuals(values)` is least."""
    values = dict(start)
    names = list(free)
    dead: list[str] = []
    result = None
    for _ in range(3):  # drop parameters no measurement depends on, then refit

        def weighted(x: np.ndarray, names: list[str] = names) -> np.ndarray:
            return residuals({**values, **{n: math.exp(v) for n, v in zip(names, x, strict=True)}})

        result = least_squares(weighted, np.log([values[n] for n in names]), method="trf", loss=loss, f_scale=ROBUST_SCALE,
                               diff_step=1e-4, x_scale=1.0, max_nfev=3000)
        values.update({n: math.exp(v) for n, v in zip(names, result.x, strict=True)})
        norms = np.linalg.norm(result.jac, axis=0)
        gone = [n for n, c in zip(names, norms, strict=True) if c < DEAD_COLUMN]
        if not gone:
            break
        for n in gone:
            values[n] = base[n]
        dead += gone
        names = [n for n in names if n not in gone]
        if not names:
            break
    p = len(names)
    cost = float(result.cost) if names and result is not None else 0.0
    dof = max(measurements - p, 0)
    s2 = 2 * cost / dof if dof > 0 else float("nan")
    rel_stderr: dict[str, float] = {}
    if names and result is not None:
        cov = np.linalg.pinv(result.jac.T @ result.jac) * s2
        for i, n in enumerate(names):
            rel_stderr[n] = float(math.sqrt(cov[i, i])) if cov[i, i] >= 0 and math.isfinite(cov[i, i]) else float("nan")
    return LogFit(values, names, dead, rel_stderr, cost, dof, math.sqrt(s2) if math.isfinite(s2) else float("nan"))
