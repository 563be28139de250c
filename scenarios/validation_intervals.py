"""`validate --uncertainty`: each row's prediction as an interval, scored against the published value.

A row's runs (one for a value, numerator and denominator for a ratio) are sampled together by scenarios.uncertainty:
inputs the two runs of a ratio share get the same draw in every sample (common random numbers), so a ratio's interval
is not widened by unknowns that cancel.  Each row gains its interval, whether it covers the measurement, and the
interval score of Gneiting & Raftery (JASA 2007, eq. 43) relative to the measurement; the summary gives, overall and
per role, the coverage, the median relative half-width ((high - low) / 2 / |median|) and the mean interval score.
A published value outside its interval says a mechanism is missing, not a constant: no value in its range reaches it.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from iowatt.scenarios.interval_stats import covered, interval_score
from iowatt.scenarios.loader import load
from iowatt.scenarios.uncertainty import Outputs, Settings, extract_outputs, propagate
from iowatt.scenarios.validation import Measurement, RowResult, ValidationTable, row_keys
from iowatt.scenarios.validation_runs import RunKey, RunPlanner

MISSING_MECHANISM = "the published value lies outside the interval: a mechanism is missing, not a constant"


@dataclass
class RowInterval:
    id: str
    low: float
    median: float
    high: float
    covered: bool
    interval_score: float         # relative to the measured value
    relative_half_width: float
    samples: int
    failed: int
    top: list[tuple[str, float]]  # the inputs that move the row most, with their share
    note: str = ""

    @property
    def too_many_failed(self) -> bool:
        return self.samples > 0 and self.failed / self.samples > Settings().max_failed_share

    def as_dict(self) -> dict[str, object]:
        return {"interval": [self.low, self.high], "median": self.median, "covered": self.covered,
                "interval_score": self.interval_score, "relative_half_width": self.relative_half_width,
                "samples": self.samples, "failed": self.failed,
                "moved_most_by": [{"parameter": p, "share": s} for p, s in self.top], "interval_note": self.note}


def miss_note(row: Measurement) -> str:
    """What an uncovered row says: a mechanism is missing, and which one where the table names it ("known miss: ...")."""
    _, marked, known = (row.note or "").partition("known miss:")
    return f"{MISSING_MECHANISM}: {known.strip()}" if marked and known.strip() else MISSING_MECHANISM


def _quantity(row: Measurement) -> tuple[list[tuple[str, ...]], Callable[[list[Outputs]], float]]:
    """The metric path each run must keep, and the row's prediction from one sample's outputs."""
    if row.ratio is not None:
        num, den = row.ratio["numerator"], row.ratio["denominator"]

        def ratio(outputs: list[Outputs]) -> float:
            return outputs[0][num.metric] * num.scale / (outputs[1][den.metric] * den.scale)

        return [(num.metric,), (den.metric,)], ratio
    metric, scale = row.metric or "", row.scale

    def value(outputs: list[Outputs]) -> float:
        return outputs[0][metric] * scale

    return [(metric,)], value


def _scenario(key: RunKey):  # the validated scenario a run key names
    source: str | dict[str, object] = json.loads(key.source) if key.inline else key.source
    return load(source, list(key.assignments))


def row_intervals(table: ValidationTable, base: Path, results: list[RowResult], settings: Settings, executor: Executor,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, RowInterval]:
    """An interval for every row that ran (rows that failed to run have none).  Rows that read the same runs (a
    scenario's bandwidth, IOPS and latency) share one propagation, which keeps every metric they read."""
    planner = RunPlanner(base)
    ran = {r.id for r in results if r.predicted is not None}
    groups: dict[tuple[RunKey, ...], list[Measurement]] = {}
    for row in table.measurements:
        if row.id in ran:
            groups.setdefault(tuple(row_keys(row, planner)), []).append(row)
    out: dict[str, RowInterval] = {}
    for done, (keys, rows) in enumerate(groups.items(), start=1):
        quantities = [_quantity(row) for row in rows]
        paths = [tuple(dict.fromkeys(p for paths, _ in quantities for p in paths[i])) for i in range(len(keys))]
        try:
            scenarios = [_scenario(key) for key in keys]
        except ValueError:
            continue
        result = propagate(scenarios, settings, executor, origins=[k.source for k in keys], paths=paths)
        base_outputs = [extract_outputs(d, ps) for d, ps in zip(result.baseline, paths, strict=True)]
        for row, (_, of) in zip(rows, quantities, strict=True):
            spread = result.interval(of, of(base_outputs))
            inside = covered(spread.low, spread.high, row.measured)
            out[row.id] = RowInterval(
                row.id, spread.low, spread.median, spread.high, inside,
                interval_score(spread.low, spread.high, row.measured, settings.level), spread.relative_half_width(),
                result.samples, result.failed, result.sensitivity(of)[:3], "" if inside else miss_note(row))
        if progress:
            progress(done, len(groups))
    return out


def interval_score_summary(results: list[RowResult], intervals: dict[str, RowInterval]) -> dict[str, object]:
    """Coverage, median relative half-width and mean relative interval score: all rows, then by role."""
    def score(rows: list[RowResult]) -> dict[str, object]:
        found = [intervals[r.id] for r in rows if r.id in intervals]
        if not found:
            return {"n": 0, "coverage": None, "median_relative_half_width": None, "interval_score": None}
        widths = [i.relative_half_width for i in found if math.isfinite(i.relative_half_width)]
        scores = [i.interval_score for i in found if math.isfinite(i.interval_score)]
        return {"n": len(found), "coverage": sum(i.covered for i in found) / len(found),
                "median_relative_half_width": statistics.median(widths) if widths else None,
                "interval_score": statistics.fmean(scores) if scores else None}

    return {**score(results), **{role: score([r for r in results if r.role == role]) for role in ("predicted", "fitted", "restates")}}
