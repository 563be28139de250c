"""Fit drive parameters to a bundle's jobs: weighted least squares on log throughput (calibration.leastsq).

The law is calibration.model.predict (models.ssd's law on an SSDSpec); it is
fitted with writes buffered and with writes queueing, and the lower weighted
cost wins.

Residual of job i: log(predicted_i / measured_i) / sigma_i, sigma_i = sqrt(spread_i^2 + floor^2),
with spread_i the job's run-to-run relative spread, so noisy jobs weigh less.
Parameters are fitted in log space; standard errors come from the Jacobian,
cov = (J^T J)^-1 s^2 with s^2 = sum(r^2) / (m - p), s no smaller than the
repeats' own noise implies (noise_floor), and are reported
relative (a log-space standard error is a relative one).  A parameter no
training job depends on (its Jacobian column is zero: e.g. the IOPS ceiling
when every job ran at QD1) is not informed and keeps the base device's value.

Power, when the bundle measured it: P = P0 + e_r x read B/s + e_w x write B/s by
linear least squares; active_*_W = idle_W + e_d x BW_d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from iowatt.calibration.leastsq import bound_note, fit_log
from iowatt.calibration.model import ALL_FIELDS, FIELDS, Job, predict
from iowatt.models.ssd import SSDSpec

SPREAD_FLOOR = 0.03  # assumed: 3 %, below the smallest run-to-run spread a 1 s fio job shows on any machine we measured
EXTRA_STARTS = 8  # assumed: Halton starts beside the data's own guess (calibration.leastsq docstring: 150 of 150 self-made drives)
PRIOR_DOF = 4.0  # assumed: the pooled spread counts as four extra runs of each job (see sigma)


class FitError(ValueError):
    pass


@dataclass
class FitResult:
    values: dict[str, float]  # the fitted fields (fitted or base)
    informed: list[str]
    not_informed: dict[str, str]  # field -> why (the field keeps the base value)
    rel_stderr: dict[str, float]
    residuals: list[dict[str, Any]]
    cost: float
    dof: int
    s: float
    spec: SSDSpec | None = None
    writes_queue: bool = True
    costs: dict[str, float] = field(default_factory=dict)  # weighted cost with writes "buffered" / "queueing"
    power: dict[str, Any] = field(default_factory=dict)
    bounded: dict[str, str] = field(default_factory=dict)  # field -> the bound the jobs set on it (value from the jobs)
    correlation: dict[str, dict[str, float]] = field(default_factory=dict)  # fitted fields' log-value correlations


def pooled_spread(jobs: list[Job]) -> float:
    """Run-to-run relative spread pooled over every job with repeats (root mean square, weighted by degrees of freedom)."""
    dof = [(j.runs - 1, j.spread) for j in jobs if j.runs > 1]
    total = sum(k for k, _ in dof)
    return math.sqrt(sum(k * s * s for k, s in dof) / total) if total else 0.0


def sigma(job: Job, pooled: float = 0.0) -> float:
    """A job's relative noise: its own spread moderated toward the pooled one, with a floor.

    Two or three runs estimate a spread poorly (a job can show 0.1 % by luck),
    so the job's variance is shrunk toward the pooled variance as if the pool
    were PRIOR_DOF extra runs (moderated variance, Smyth, Stat. Appl. Genet.
    Mol. Biol. 3(1), 2004); SPREAD_FLOOR keeps any job from dominating."""
    return math.sqrt(_moderated(job, pooled) + SPREAD_FLOOR**2)


def _moderated(job: Job, pooled: float) -> float:
    """The job's per-run relative variance, shrunk toward the pooled one (sigma)."""
    k = max(job.runs - 1, 0)
    return (k * job.spread**2 + PRIOR_DOF * pooled**2) / (k + PRIOR_DOF)


def noise_floor(jobs: list[Job], pooled: float) -> float:
    """The weighted residuals' root mean square were the law exact: a job's mean over its runs varies by its per-run
    variance / runs, weighed by 1 / sigma^2.  A fit's residual scale below this is luck of few residuals, not knowledge
    (calibration.leastsq.fit_log takes the larger)."""
    if not jobs:
        return 0.0
    return math.sqrt(sum(_moderated(j, pooled) / max(j.runs, 1) / sigma(j, pooled) ** 2 for j in jobs) / len(jobs))


def _initial(base: dict[str, float], jobs: list[Job], direction: str) -> dict[str, float]:
    """Starting point from the data: best bandwidth, best small-block rate, lowest latency of the direction."""
    mine = [j for j in jobs if (j.read_fraction == 1.0 if direction == "read" else j.read_fraction == 0.0)] or jobs
    lat_name = FIELDS[direction][-1]
    lats = [j.lat_us for j in mine if j.lat_us > 0 and j.inflight == 1 and j.bs <= 8192]
    guess = {
        FIELDS[direction][0]: max(j.bw_Bps for j in mine) / 1e6 * 1.2,
        lat_name: min(lats) if lats else float(base[lat_name]),
    }
    if direction == "read":
        small = [j for j in mine if j.bs <= 8192] or mine
        guess["rand_read_iops"] = max(j.bw_Bps / j.bs for j in small) * 1.2
    return guess


def residual_rows(spec: SSDSpec, jobs: list[Job], writes_queue: bool = True) -> list[dict[str, Any]]:
    rows = []
    for job in jobs:
        p = predict(spec, job, writes_queue)
        rows.append(
            {
                "job": job.id,
                "measured_MBps": job.bw_Bps / 1e6,
                "predicted_MBps": p["bw_Bps"] / 1e6,
                "error_pct": (p["bw_Bps"] / job.bw_Bps - 1) * 100,
                "spread_pct": job.spread * 100,
                "runs": job.runs,
                "bound": p["bound"],
            }
        )
    return rows


def fit(jobs: list[Job], base: SSDSpec, loss: str = "soft_l1", writes_queue: bool | None = None) -> FitResult:
    """Least squares of the fields the jobs inform (the others keep `base`'s values), with writes buffered and
    queueing (or only the one given), keeping the lower weighted cost."""
    if not jobs:
        raise FitError("no jobs to fit (is the holdout fraction too large?)")
    choices = (False, True) if writes_queue is None else (writes_queue,)
    results = [_fit_one(jobs, base, loss, queue) for queue in choices]
    best = min(results, key=lambda r: r.cost)
    best.costs = {("queueing" if r.writes_queue else "buffered"): r.cost for r in results}
    return best


def _fit_one(jobs: list[Job], base: SSDSpec, loss: str, writes_queue: bool) -> FitResult:
    base_values = base.model_dump()
    has_read = any(j.read_fraction > 0 for j in jobs)
    has_write = any(j.read_fraction < 1 for j in jobs)
    values = {k: float(base_values[k]) for k in ALL_FIELDS}
    free: list[str] = []
    not_informed: dict[str, str] = {}
    for direction, present in (("read", has_read), ("write", has_write)):
        if present:
            values.update(_initial(base_values, jobs, direction))
            free += list(FIELDS[direction])
        else:
            for name in FIELDS[direction]:
                not_informed[name] = f"the bundle has no {direction} jobs"
    if len(jobs) < len(free):
        raise FitError(f"{len(jobs)} training jobs cannot determine {len(free)} parameters; collect more jobs or hold out fewer")
    pooled = pooled_spread(jobs)
    weights = np.array([1.0 / sigma(j, pooled) for j in jobs])
    measured = np.log([j.bw_Bps for j in jobs])

    def residuals(trial: dict[str, float]) -> np.ndarray:
        spec = base.model_copy(update=trial)  # no re-validation inside the optimizer loop
        predicted = np.log([predict(spec, j, writes_queue)["bw_Bps"] for j in jobs])
        return (predicted - measured) * weights

    base_floats = {k: float(base_values[k]) for k in ALL_FIELDS}
    solved = fit_log(residuals, values, free, base_floats, len(jobs), loss, starts=EXTRA_STARTS,
                     noise_floor=noise_floor(jobs, pooled))
    values = solved.values
    for n in solved.dead:
        not_informed[n] = "no training job is limited by it (its Jacobian column is zero)"
    bounded = {n: bound_note(values[n], excluded, len(jobs)) for n, excluded in solved.bounded.items()}
    not_informed.setdefault("rand_write_iops", "random writes to fio's fresh test file do not reach the steady-state garbage collection it describes")
    spec = SSDSpec.model_validate({**base_values, **values})
    return FitResult(
        values=values,
        informed=solved.informed,
        not_informed=not_informed,
        rel_stderr=solved.rel_stderr,
        residuals=residual_rows(spec, jobs, writes_queue),
        cost=solved.cost,
        dof=solved.dof,
        s=solved.s,
        spec=spec,
        writes_queue=writes_queue,
        bounded=bounded,
        correlation=solved.correlation,
    )


def fit_power(jobs: list[Job], column: str) -> dict[str, Any] | None:
    """Linear fit of measured power against read and write bytes/s; None when too few jobs carry the column."""
    rows = [j for j in jobs if j.power and column in j.power]
    if len(rows) < 4:
        return None
    a = np.array([[1.0, j.read_bw_Bps, j.write_bw_Bps] for j in rows])
    y = np.array([j.power[column] for j in rows])  # type: ignore[index]
    keep = [0] + [i for i in (1, 2) if np.any(a[:, i] > 0)]
    a = a[:, keep]
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    dof = max(len(rows) - len(keep), 1)
    s2 = float(resid @ resid) / dof
    cov = np.linalg.pinv(a.T @ a) * s2
    out: dict[str, Any] = {"column": column, "jobs": len(rows), "P0_W": float(coef[0]), "P0_stderr_W": float(math.sqrt(cov[0, 0])), "rms_W": math.sqrt(s2)}
    for i, name in enumerate(keep[1:], start=1):
        key = "read_J_per_byte" if name == 1 else "write_J_per_byte"
        out[key] = float(coef[i])
        out[key.replace("J_per_byte", "stderr_J_per_byte")] = float(math.sqrt(cov[i, i]))
    return out


def stratum(job: Job) -> tuple[str, str]:
    """Holdout stratum: the rw kind, and whether the job ran at QD1 (latency-bound) or queued."""
    return job.rw, "qd1" if job.inflight == 1 else "queued"


def split_holdout(jobs: list[Job], fraction: float, seed: int) -> tuple[list[Job], list[Job]]:
    """Hold back `fraction` of the jobs, drawn per stratum (rw kind x QD1/queued) so every stratum stays in the training set."""
    if not 0 <= fraction < 1:
        raise FitError(f"--holdout: expected a fraction in [0, 1), found {fraction}")
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, str], list[Job]] = {}
    for job in sorted(jobs, key=lambda j: j.id):
        groups.setdefault(stratum(job), []).append(job)
    held: set[str] = set()
    for key in sorted(groups):
        members = groups[key]
        order = rng.permutation(len(members))
        count = round(fraction * len(members))
        count = min(count, len(members) - 1)
        held |= {members[i].id for i in order[:count]}
    return [j for j in jobs if j.id not in held], [j for j in jobs if j.id in held]
