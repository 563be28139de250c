"""Weighted least squares of positive parameters in log space (the drive fit and the cluster fit share it).

scipy.optimize.least_squares on log parameters with a robust (soft-L1) loss; a
parameter no measurement depends on (its Jacobian column is zero) is put back
to its base value and the rest refitted.  Where the base value would itself
bind (the fit drove a ceiling past where a job reaches it, and the base
ceiling is below what a job measured) the data do not say the value but bound
it: the parameter goes to the value nearest its base that leaves every
residual as it is (a bisection in log space), i.e. the base projected onto
the values the measurements allow.

The law's min() (latency law or ceiling) has kinks, and a local optimizer
started on the wrong side of one can stall with residuals the law could
remove.  A caller may ask for more starts: deterministic Halton points within
a factor e of its own start, the least cost kept.  On drives the law itself
made (tests/test_calibration_fit.py) one start reproduced 142 of 150, nine
starts all 150.  Standard errors come from the
Jacobian, cov = (J^T J)^-1 s^2 with s^2 = 2 cost / (m - p), s no smaller than the
scale the measurements' own repeats imply (`noise_floor`), and are relative
(a log-space standard error is a relative one); the same covariance gives the
parameters' correlations, which a profile keeps so a sampler draws them together.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import OptimizeResult, least_squares

ROBUST_SCALE = 2.0  # soft-L1 loss: residuals beyond 2 sigma (a burst from a neighbour on a shared VM) count linearly, not squared
DEAD_COLUMN = 1e-6  # a Jacobian column below this norm: no measurement depends on the parameter
UNCHANGED_RESIDUAL = 1e-9  # a weighted residual that moves less than this has not moved (float noise of the laws)
RESTARTS = 3  # restarts from the base values of parameters whose columns vanished (fit_log)
UNEVALUABLE = 1e3  # the weighted residual of a trial point the law cannot evaluate (_solve): 1000 sigma, never a fit
BISECTIONS = 60  # halvings of the log interval between the fitted and the base value: below 1e-15 relative


@dataclass
class LogFit:
    values: dict[str, float]        # every parameter: fitted, or back at its base value
    informed: list[str]             # the fitted ones
    dead: list[str]                 # the ones no measurement depends on, at their base values
    bounded: dict[str, float]       # the ones the measurements only bound: name -> the base value they exclude
    rel_stderr: dict[str, float]    # relative standard error of each informed parameter
    cost: float
    dof: int
    s: float                        # residual scale (1 when the weights are the noise)
    # correlation of the informed parameters' log values, from the same covariance: name -> {other name: rho}
    correlation: dict[str, dict[str, float]] = field(default_factory=dict)


def fit_log(residuals: Callable[[dict[str, float]], np.ndarray], start: dict[str, float], free: list[str],
            base: dict[str, float], measurements: int, loss: str = "soft_l1", starts: int = 0,
            noise_floor: float = 0.0) -> LogFit:
    """Fit the `free` parameters of `start` (the rest stay fixed) so that `residuals(values)` is least;
    `starts` more runs begin at Halton points within a factor e of `start` (module docstring), the least kept.
    `noise_floor`: the residual scale the measurements' own noise implies (the weighted residuals' expected root mean
    square were the law exact); the covariance uses max(s, noise_floor), so a fit whose few residuals happen to be
    small does not claim more than the repeats measured."""
    names = list(free)
    values, result = _solve(residuals, dict(start), names, loss)
    for point in _halton_starts(start, names, starts):
        other_values, other = _solve(residuals, point, names, loss)
        if other.cost < result.cost * (1.0 - 1e-9) - 1e-12:
            values, result = other_values, other
    for _ in range(RESTARTS):
        # A column that is zero at the solution may only mean the optimizer stepped past a kink of the law
        # (a latency lowered until the ceiling binds): restart with those parameters at their base values,
        # where they may bind again, and keep the restart if it fits no worse.
        gone = _dead_columns(result, names)
        if not gone:
            break
        restart_values, restart = _solve(residuals, {**values, **{n: base[n] for n in gone}}, names, loss)
        if restart.cost > result.cost * (1.0 + 1e-9) + 1e-12:
            break
        values, result = restart_values, restart
    dead: list[str] = []
    bounded: dict[str, float] = {}
    gone = _dead_columns(result, names)
    if gone:
        for n in gone:
            values[n] = _nearest_allowed(residuals, values, n, base[n])
            if values[n] == base[n]:
                dead.append(n)
            else:
                bounded[n] = base[n]
        names = [n for n in names if n not in gone]
        if names:  # the Jacobian and cost of the parameters still informed, the others placed
            values, result = _solve(residuals, values, names, loss)
    p = len(names)
    cost = float(result.cost) if names and result is not None else 0.0
    dof = max(measurements - p, 0)
    s2 = 2 * cost / dof if dof > 0 else float("nan")
    rel_stderr: dict[str, float] = {}
    correlation: dict[str, dict[str, float]] = {}
    if names and result is not None:
        scale2 = max(s2, noise_floor**2) if math.isfinite(s2) else s2
        cov = np.linalg.pinv(result.jac.T @ result.jac) * scale2
        for i, n in enumerate(names):
            rel_stderr[n] = float(math.sqrt(cov[i, i])) if cov[i, i] >= 0 and math.isfinite(cov[i, i]) else float("nan")
        correlation = _correlation(cov, names)
    return LogFit(values, names, dead, bounded, rel_stderr, cost, dof, math.sqrt(s2) if math.isfinite(s2) else float("nan"),
                  correlation)


def _correlation(cov: np.ndarray, names: list[str]) -> dict[str, dict[str, float]]:
    """Each pair's correlation from a covariance (pairs where either variance is zero or not finite are left out)."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    out: dict[str, dict[str, float]] = {}
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i != j and sd[i] > 0 and sd[j] > 0 and math.isfinite(float(cov[i, j])):
                out.setdefault(a, {})[b] = float(np.clip(cov[i, j] / (sd[i] * sd[j]), -1.0, 1.0))
    return out


def _solve(residuals: Callable[[dict[str, float]], np.ndarray], values: dict[str, float], names: list[str],
           loss: str) -> tuple[dict[str, float], OptimizeResult]:
    """One robust least-squares run over `names` in log space from `values`: (the values it ends at, scipy's result)."""

    size = len(residuals(values))

    def weighted(x: np.ndarray) -> np.ndarray:
        # a trial step that drives a parameter to 0 or infinity (e^x under- or overflows) is a point the law cannot
        # evaluate: a large residual makes the trust region reject it and shrink, where an exception ended the fit
        try:
            found = residuals({**values, **{n: math.exp(v) for n, v in zip(names, x, strict=True)}})
        except (ZeroDivisionError, OverflowError, ValueError):
            return np.full(size, UNEVALUABLE)
        return np.where(np.isfinite(found), found, UNEVALUABLE)

    result = least_squares(weighted, np.log([values[n] for n in names]), method="trf", loss=loss, f_scale=ROBUST_SCALE,
                           diff_step=1e-4, x_scale=1.0, max_nfev=3000)
    return {**values, **{n: math.exp(v) for n, v in zip(names, result.x, strict=True)}}, result


def _halton_starts(start: dict[str, float], names: list[str], count: int) -> list[dict[str, float]]:
    """`count` starting points spread evenly (a Halton sequence, deterministic) over start x e^[-1, 1] per parameter."""
    if count <= 0 or not names:
        return []
    from scipy.stats import qmc

    unit = qmc.Halton(d=len(names), scramble=False).random(count + 1)[1:]  # the first unscrambled point is the corner (0, ..., 0)
    return [{**start, **{n: start[n] * math.exp(2.0 * u - 1.0) for n, u in zip(names, row, strict=True)}} for row in unit]


def _dead_columns(result: OptimizeResult, names: list[str]) -> list[str]:
    norms = np.linalg.norm(result.jac, axis=0)
    return [n for n, c in zip(names, norms, strict=True) if c < DEAD_COLUMN]


def _nearest_allowed(residuals: Callable[[dict[str, float]], np.ndarray], values: dict[str, float], name: str,
                     base_value: float) -> float:
    """The value of `name` nearest `base_value` (log space, toward the fitted value) at which no residual moves."""
    at_fit = residuals(values)

    def unchanged(value: float) -> bool:
        return bool(np.max(np.abs(residuals({**values, name: value}) - at_fit)) < UNCHANGED_RESIDUAL)

    if unchanged(base_value):
        return base_value
    allowed, excluded = math.log(values[name]), math.log(base_value)
    for _ in range(BISECTIONS):
        middle = 0.5 * (allowed + excluded)
        if unchanged(math.exp(middle)):
            allowed = middle
        else:
            excluded = middle
    return math.exp(allowed)


def bound_note(value: float, base_value: float, jobs: int) -> str:
    """Why a field holds a bound: no job is limited by it, and the base value would have limited one."""
    side = "at least" if value > base_value else "at most"
    return (f"bounded, not measured: no training job is limited by it, and the base value {base_value:.6g} would "
            f"move some of the {jobs} jobs off their measurements; set to the nearest value the jobs allow ({side} {value:.6g})")
