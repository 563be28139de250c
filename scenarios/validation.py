"""Validation tables: predicted vs measured, with the error printed beside every row.

The format is documented in docs/validation-format.md and kept stable so that
other teams can write their own tables.  A row either points at one metric of
one scenario run, or states a ratio between two runs (a relative claim such as
"the P5336 takes 2.51x as long").  Rows that fail to run are reported as
errors, never dropped.  Each row has a role (scenarios.validation_roles): the
headline scores the predicted rows only; rows a value was fitted on and rows
that restate another row are scored apart.  This module returns data; the
command line renders it (iowatt.commands.validation_view).
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from iowatt.scenarios.loader import ScenarioError, read_yaml
from iowatt.scenarios.validation_roles import CalibratedRecord, all_records, fitted_links, role_of
from iowatt.scenarios.validation_runs import Adjust, Progress, RunCache, RunKey, RunPlanner, describe_failure
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

FORMAT_VERSION = "1.2"

# units a row may state, and the metric-name suffixes that carry each
UNIT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "s": ("_seconds", "seconds"),
    "ms": ("_ms",),
    "us": ("_us",),
    "J": ("_J",),
    "Wh": ("_Wh",),
    "kJ": ("_kJ",),
    "W": ("_W",),
    "GB": ("_GB",),
    "MB/s": ("_MB_per_second", "_MBps"),
    "MiB/s": ("_MiB_per_second", "_MB_per_second"),
    "GB/s": ("_GB_per_second", "_GBps"),
    "GiB/s": ("_GiB_per_second", "_GiBps"),
    "IOPS": ("iops",),
    "%": ("_percentage", "_percent"),
}

Scenario = str | dict[str, object]


def _check_scale(value: float) -> float:
    if not math.isfinite(value) or value == 0:
        raise ValueError(f"`scale` must be a finite, non-zero number, found {value!r}")
    return value


class MetricRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: Scenario = Field(description="path relative to the table, or an inline scenario mapping")
    set: dict[str, object] = Field(default_factory=dict, description="--set overrides, PATH: VALUE")
    metric: str = Field(description="path into the run's JSON result: dots and [index]")
    scale: float = Field(default=1.0, description="multiply the metric by this before comparing (unit conversion)")

    @field_validator("metric")
    @classmethod
    def _path(cls, value: str) -> str:
        parse_metric_path(value)
        return value

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: float) -> float:
        return _check_scale(value)


class Measurement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    study: str | None = Field(default=None, min_length=1, description="the study the row comes from; default: the id up to its first dot")
    scenario: Scenario | None = None
    set: dict[str, object] = Field(default_factory=dict)
    metric: str | None = None
    scale: float = 1.0
    ratio: dict[str, MetricRef] | None = None
    measured: float
    unit: str | None = None
    tolerance: float | None = Field(default=None, gt=0, le=10, description="relative; default: the table's tolerance for the row's kind")
    restates: str | None = Field(default=None, min_length=1, description="id of the row whose prediction this row's follows from")
    source: str = ""
    note: str = ""

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: float) -> float:
        return _check_scale(value)

    @model_validator(mode="after")
    def _one_kind(self) -> Measurement:
        if self.ratio is not None:
            if self.scenario is not None or self.metric is not None or self.scale != 1.0:
                raise ValueError("a ratio row takes `ratio` only, not `scenario`/`metric`/`scale` (put `scale` inside numerator/denominator)")
            if set(self.ratio) != {"numerator", "denominator"}:
                raise ValueError(f"`ratio` needs exactly `numerator` and `denominator`, found {sorted(self.ratio)}")
        else:
            if self.scenario is None or self.metric is None:
                raise ValueError("a row needs `scenario` and `metric` (or a `ratio`)")
            parse_metric_path(self.metric)
        if self.unit is not None and self.unit not in UNIT_SUFFIXES:
            raise ValueError(f"`unit` must be one of {', '.join(UNIT_SUFFIXES)}, found {self.unit!r}")
        if not math.isfinite(self.measured):
            raise ValueError(f"`measured` must be a finite number, found {self.measured!r}")
        if self.measured == 0:  # the row's error (predicted - measured) / measured would be infinite
            raise ValueError("`measured` must be a nonzero number (the error is relative to it), found 0")
        return self

    @property
    def kind(self) -> str:
        return "ratio" if self.ratio is not None else "value"

    @property
    def study_name(self) -> str:
        return self.study or self.id.split(".")[0]


class Tolerance(BaseModel):
    """The table's one tolerance convention: relative error allowed for a one-run value and for a two-run ratio."""

    model_config = ConfigDict(extra="forbid")

    value: float = Field(default=0.10, gt=0, le=10)
    ratio: float = Field(default=0.10, gt=0, le=10)


class ValidationTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    tolerance: Tolerance = Field(default_factory=Tolerance, description="default tolerance by row kind (a number sets both)")
    measurements: list[Measurement] = Field(min_length=1)

    @field_validator("tolerance", mode="before")
    @classmethod
    def _one_number(cls, value: object) -> object:
        return {"value": value, "ratio": value} if isinstance(value, int | float) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _unique(self) -> ValidationTable:
        rows: dict[str, Measurement] = {}
        for row in self.measurements:
            if row.id in rows:
                raise ValueError(f"measurement id {row.id!r} appears twice; ids must be unique")
            rows[row.id] = row
        for row in self.measurements:
            target = rows.get(row.restates or "")
            if row.restates is None:
                continue
            if target is None or target.id == row.id:
                raise ValueError(f"{row.id}: `restates` must name another row of the table, found {row.restates!r}")
            if target.restates is not None:
                raise ValueError(f"{row.id}: restates {target.id}, which restates {target.restates}; name the row it follows from")
        return self

    def tolerance_of(self, row: Measurement) -> float:
        if row.tolerance is not None:
            return row.tolerance
        return self.tolerance.ratio if row.ratio is not None else self.tolerance.value


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def parse_metric_path(path: str) -> list[str | int]:
    """'checkpoint.pass_mean_seconds[1]' -> ['checkpoint', 'pass_mean_seconds', 1]."""
    if not path or path.startswith(".") or path.endswith(".") or ".." in path:
        raise ValueError(f"metric path must look like section.name[index], found {path!r}")
    parts: list[str | int] = []
    position = 0
    for match in _PATH_TOKEN.finditer(path):
        gap = path[position:match.start()]
        if gap not in ("", "."):
            raise ValueError(f"metric path must look like section.name[index], found {path!r}")
        parts.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        position = match.end()
    if position != len(path) or not parts:
        raise ValueError(f"metric path must look like section.name[index], found {path!r}")
    return parts


def lookup_metric(document: dict[str, object], path: str) -> float:
    node: object = document
    walked: list[str] = []
    for part in parse_metric_path(path):
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                size = len(node) if isinstance(node, list) else "no"
                raise KeyError(f"{'.'.join(walked) or 'result'} has {size} items; [{part}] is out of range")
            node = node[part]
            walked.append(f"[{part}]")
        else:
            if not isinstance(node, dict) or part not in node:
                keys = ", ".join(list(node)[:12]) if isinstance(node, dict) else type(node).__name__
                raise KeyError(f"`{part}` is not in {'.'.join(map(str, walked)) or 'the result'} (has: {keys})")
            node = node[part]
            walked.append(part)
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise KeyError(f"{path} is not a number (found {type(node).__name__})")
    return float(node)


def unit_matches(unit: str, metric_path: str) -> bool | None:
    """True/False when the metric's name tells its unit, None when it does not."""
    name = [p for p in parse_metric_path(metric_path) if isinstance(p, str)][-1]
    known = [u for u, suffixes in UNIT_SUFFIXES.items() if any(name.endswith(s) or s in name for s in suffixes)]
    if not known:
        return None
    return unit in known


@dataclass
class RowResult:
    id: str
    measured: float
    tolerance: float
    kind: str                       # "value" or "ratio"
    predicted: float | None = None
    error: float | None = None      # signed, fraction: (predicted - measured) / measured
    within: bool | None = None
    direction_ok: bool | None = None
    failure: str | None = None
    source: str = ""
    unit: str | None = None
    study: str = ""
    role: str = "predicted"         # predicted | fitted | restates (scenarios.validation_roles)
    restates: str | None = None
    fitted_by: tuple[str, ...] = ()  # the calibrated values whose fitted_on names this row
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["fitted_by"] = list(self.fitted_by)
        return data


@dataclass
class ValidationReport:
    rows: list[RowResult]
    summary: dict[str, object] = field(default_factory=dict)
    description: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"format_version": FORMAT_VERSION, "rows": [r.as_dict() for r in self.rows], "summary": self.summary}


class TableError(ValueError):
    """A validation table that cannot be read."""


def read_table(path: Path) -> ValidationTable:
    try:
        data = read_yaml(path)
    except ScenarioError as error:
        raise TableError(str(error).replace("scenario", "validation table")) from None
    try:
        return ValidationTable.model_validate(data)
    except ValidationError as error:
        lines = []
        for item in error.errors():
            loc = ".".join(str(p) for p in item["loc"])
            message = item["msg"].removeprefix("Value error, ")
            lines.append(f"{loc}: {message} (found {item.get('input')!r})" if "found" not in message else f"{loc}: {message}")
        raise TableError(f"{path}: invalid validation table\n  " + "\n  ".join(lines)) from None


def row_keys(row: Measurement, planner: RunPlanner) -> list[RunKey]:
    """The runs a row reads: one for a value, numerator and denominator for a ratio."""
    if row.ratio is not None:
        return [planner.key(row.ratio[side].scenario, row.ratio[side].set) for side in ("numerator", "denominator")]
    assert row.scenario is not None
    return [planner.key(row.scenario, row.set)]


class _FailedRunError(Exception):
    """The run a row reads failed: its reason is the failure already described."""


def _read(cache: RunCache, key: RunKey, metric: str) -> float:
    outcome = cache.get(key)
    if outcome.document is None:
        raise _FailedRunError(outcome.failure or "the run failed")
    return lookup_metric(outcome.document, metric)


def predict_row(row: Measurement, keys: list[RunKey], cache: RunCache) -> float:
    """The row's prediction from finished runs; raises with a one-line reason when it cannot be made."""
    for key in keys:
        failure = cache.get(key).failure
        if failure:
            raise _FailedRunError(failure)
    if row.ratio is not None:
        num, den = row.ratio["numerator"], row.ratio["denominator"]
        top = _read(cache, keys[0], num.metric) * num.scale
        bottom = _read(cache, keys[1], den.metric) * den.scale
        if bottom == 0:
            raise ZeroDivisionError("the denominator's metric is 0")
        return top / bottom
    assert row.metric is not None
    # a row with a `scale` converts units itself; the metric's own name then tells the other unit
    if row.unit is not None and row.scale == 1.0 and unit_matches(row.unit, row.metric) is False:
        raise ValueError(f"unit {row.unit!r} does not match the metric {row.metric!r}")
    return _read(cache, keys[0], row.metric) * row.scale


def _evaluate(row: Measurement, tolerance: float, keys: list[RunKey], cache: RunCache) -> RowResult:
    result = RowResult(row.id, row.measured, tolerance, row.kind, source=row.source, unit=row.unit, study=row.study_name,
                       restates=row.restates, note=row.note)
    try:
        predicted = predict_row(row, keys, cache)
    except _FailedRunError as failure:
        result.failure = str(failure)
        return result
    except Exception as error:  # any failure of one row is reported in that row, never fatal to the table
        result.failure = describe_failure(error)
        return result
    result.predicted = predicted
    result.error = (predicted - row.measured) / row.measured  # measured is nonzero (Measurement checks it)
    result.within = abs(result.error) <= tolerance
    if row.ratio is not None:
        # a claim of 'no difference' (measured exactly 1) has no direction: its tolerance alone judges it
        result.direction_ok = None if row.measured == 1 else (predicted > 1) == (row.measured > 1)
    return result


def score(rows: list[RowResult]) -> dict[str, object]:
    """Counts and |error| statistics of a set of rows (the keys of format 1.1's summary)."""
    errors = [abs(r.error) for r in rows if r.error is not None]
    ratio_rows = [r for r in rows if r.kind == "ratio"]
    return {
        "n": len(rows),
        "n_within": sum(1 for r in rows if r.within),
        "n_failed": sum(1 for r in rows if r.failure),
        "median_abs_error": statistics.median(errors) if errors else None,
        "max_abs_error": max(errors) if errors else None,
        "n_ratio": len(ratio_rows),
        "n_direction": sum(1 for r in ratio_rows if r.measured != 1),
        "n_direction_ok": sum(1 for r in ratio_rows if r.direction_ok),
    }


def summarize(rows: list[RowResult]) -> dict[str, object]:
    """Format 1.2: the headline over predicted rows (`predicted`), fitted and restating rows apart, and per study
    (rows that restate another are left out of a study's score: they would count one prediction twice).  The
    top-level keys of format 1.1 (all rows together) stay for this format version only."""
    studies = list(dict.fromkeys(r.study for r in rows))
    return {
        **score(rows),
        "headline": "predicted",
        "predicted": score([r for r in rows if r.role == "predicted"]),
        "fitted": score([r for r in rows if r.role == "fitted"]),
        "restating": score([r for r in rows if r.role == "restates"]),
        "by_study": {s: score([r for r in rows if r.study == s and r.role != "restates"]) for s in studies},
    }


def table_scenarios(table: ValidationTable, base: Path) -> list[Path]:
    refs: list[Scenario] = []
    for row in table.measurements:
        refs += [row.ratio["numerator"].scenario, row.ratio["denominator"].scenario] if row.ratio is not None else [row.scenario or ""]
    return [(base / ref).resolve() for ref in refs if isinstance(ref, str) and ref]


def evaluate_rows(
    table: ValidationTable, base: Path, cache: RunCache, *, adjust: Adjust | None = None, only: set[str] | None = None,
    jobs: int = 1, progress: Progress | None = None, records: list[CalibratedRecord] | None = None,
) -> list[RowResult]:
    """Predict the rows (all, or the ids in `only`), with `adjust` adding overrides to every run."""
    planner = RunPlanner(base, adjust)
    chosen = [row for row in table.measurements if only is None or row.id in only]
    keys = {row.id: row_keys(row, planner) for row in chosen}
    cache.ensure([k for ks in keys.values() for k in ks], jobs, progress)
    links = fitted_links(records if records is not None else all_records(table_scenarios(table, base)))
    results = []
    for row in chosen:
        result = _evaluate(row, table.tolerance_of(row), keys[row.id], cache)
        result.role = role_of(row.id, row.restates, links)
        result.fitted_by = links.get(row.id, ())
        results.append(result)
    return results


def evaluate_table(
    table: ValidationTable, base: Path, *, jobs: int = 1, progress: Progress | None = None, cache: RunCache | None = None
) -> ValidationReport:
    rows = evaluate_rows(table, base, cache if cache is not None else RunCache(), jobs=jobs, progress=progress)
    return ValidationReport(rows, summarize(rows), table.description)


def validate_file(path: Path, *, jobs: int = 1, progress: Progress | None = None) -> ValidationReport:
    table = read_table(path)
    return evaluate_table(table, path.parent, jobs=jobs, progress=progress)


def dump_yaml(table: ValidationTable) -> str:
    return yaml.safe_dump(table.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
