"""Shared by the calibration tests: the tiny fio plan the live bundle test measures, and a finite difference
through the drive law (calibration.model.predict) that says whether a field moves any job's prediction."""

from __future__ import annotations

from iowatt.calibration.model import Job, predict
from iowatt.calibration.plan import Plan
from iowatt.models.ssd import SSDSpec

TINY_PLAN = {
    "name": "tiny",
    "runtime_s": 0.2,
    "ramp_s": 0.05,
    "size": "16M",
    "jobs": [
        {"rw": "randread", "bs": "4k", "iodepth": 1},
        {"rw": "randread", "bs": "4k", "iodepth": 8},
        {"rw": "read", "bs": "1m", "iodepth": 2},
        {"rw": "randwrite", "bs": "4k", "iodepth": 1},
        {"rw": "randwrite", "bs": "4k", "iodepth": 8},
        {"rw": "write", "bs": "1m", "iodepth": 2},
    ],
}


def plan_jobs(plan: Plan) -> list[Job]:
    """A plan's jobs as the fit sees them, with nothing measured yet."""
    return [Job(j.id, j.rw, float(j.bs), j.iodepth, j.numjobs, j.read_fraction) for j in plan.jobs]


def tiny_plan_jobs() -> list[Job]:
    return plan_jobs(Plan.model_validate(TINY_PLAN))


def prediction_shift(spec: SSDSpec, name: str, factor: float, jobs: list[Job], writes_queue: bool) -> float:
    """The largest relative change of any job's predicted rate when field `name` is multiplied by `factor`."""
    moved = spec.model_copy(update={name: factor * spec.model_dump()[name]})
    return max(abs(predict(moved, j, writes_queue)["bw_Bps"] / predict(spec, j, writes_queue)["bw_Bps"] - 1) for j in jobs)
