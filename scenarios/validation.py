"""Validation tables: predicted vs measured, with the error printed beside every row.

The format is documented in docs/validation-format.md and kept stable so that
other teams can write their own tables.  A row either points at one metric of
one scenario run, or states a ratio between two runs (a relative claim such as
"the P5336 takes 2.51x as long").  Rows that fail to run are reported as
errors, never dropped.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from iowatt.scenarios.loader import ScenarioError, load, read_yaml
from iowatt.scenarios.run import run_scenario
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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


class MetricRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario: str | dict[str, Any] = Field(description="path relative to the table, or an inline scenario mapping")
    set: dict[str, Any] = Field(default_factory=dict, description="--set overrides, PATH: VALUE")
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


def _check_scale(value: float) -> float:
    if not math.isfinite(value) or value == 0:
        raise ValueError(f"`scale` must be a finite, non-zero number, found {value!r}")
    return value


class Measurement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    scenario: str | dict[str, Any] | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    metric: str | None = None
    scale: float = 1.0
    ratio: dict[str, MetricRef] | None = None
    measured: float
    unit: str | None = None
    tolerance: float = Field(default=0.10, gt=0, le=10)
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
        return self


class ValidationTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    measurements: list[Measurement] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> ValidationTable:
        seen: set[str] = set()
        for row in self.measurements:
            if row.id in seen:
                raise ValueError(f"measurement id {row.id!r} appears twice; ids must be unique")
            seen.add(row.id)
        return self


_REPO = Path(__file__).resolve().parent.parent  # failure messages name scenario files relative to it

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


def lookup_metric(document: dict[str, Any], path: str) -> float:
    node: Any = document
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

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class ValidationReport:
    rows: list[RowResult]
    summary: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [r.as_dict() for r in self.rows], "summary": self.summary}


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


class _RunCache:
    """One run per distinct (scenario, overrides): tables often read several metrics of one run."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.documents: dict[str, dict[str, Any]] = {}

    def document(self, scenario: str | dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        assignments = [f"{k}={_as_set_value(v)}" for k, v in overrides.items()]
        if isinstance(scenario, str):
            source: str | dict[str, Any] = str((self.base / scenario).resolve())
        else:
            source = scenario
        key = hashlib.sha256(json.dumps([source, assignments], sort_keys=True, default=str).encode()).hexdigest()
        if key not in self.documents:
            loaded = load(source, assignments)
            self.documents[key] = run_scenario(loaded)[0]
        return self.documents[key]


def _as_set_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _evaluate(row: Measurement, cache: _RunCache) -> RowResult:
    kind = "ratio" if row.ratio is not None else "value"
    result = RowResult(row.id, row.measured, row.tolerance, kind, source=row.source, unit=row.unit)
    try:
        if row.ratio is not None:
            num = row.ratio["numerator"]
            den = row.ratio["denominator"]
            top = lookup_metric(cache.document(num.scenario, num.set), num.metric) * num.scale
            bottom = lookup_metric(cache.document(den.scenario, den.set), den.metric) * den.scale
            if bottom == 0:
                raise ZeroDivisionError("the denominator's metric is 0")
            predicted = top / bottom
        else:
            assert row.scenario is not None and row.metric is not None
            # a row with a `scale` converts units itself; the metric's own name then tells the other unit
            if row.unit is not None and row.scale == 1.0 and unit_matches(row.unit, row.metric) is False:
                raise ValueError(f"unit {row.unit!r} does not match the metric {row.metric!r}")
            predicted = lookup_metric(cache.document(row.scenario, row.set), row.metric) * row.scale
    except Exception as error:  # any failure of one row is reported in that row, never fatal to the table
        result.failure = _describe_failure(error)
        return result
    result.predicted = predicted
    result.error = (predicted - row.measured) / row.measured if row.measured != 0 else math.inf
    result.within = abs(result.error) <= row.tolerance
    if kind == "ratio":
        # a claim of 'no difference' (measured exactly 1) has no direction: its tolerance alone judges it
        result.direction_ok = None if row.measured == 1 else (predicted > 1) == (row.measured > 1)
    return result


def _describe_failure(error: Exception) -> str:
    """One line: the error's kind and the last line of its message (scenario errors list fields first)."""
    message = str(error).strip().strip(chr(39)).replace(f"{Path.cwd()}/", "").replace(f"{_REPO}/", "")
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = lines[0] if len(lines) == 1 else " | ".join(lines[:3])
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def evaluate_table(table: ValidationTable, base: Path) -> ValidationReport:
    cache = _RunCache(base)
    rows = [_evaluate(row, cache) for row in table.measurements]
    errors = [abs(r.error) for r in rows if r.error is not None]
    ratio_rows = [r for r in rows if r.kind == "ratio"]
    summary = {
        "n": len(rows),
        "n_within": sum(1 for r in rows if r.within),
        "n_failed": sum(1 for r in rows if r.failure),
        "median_abs_error": statistics.median(errors) if errors else None,
        "max_abs_error": max(errors) if errors else None,
        "n_ratio": len(ratio_rows),
        "n_direction": sum(1 for r in ratio_rows if r.measured != 1),
        "n_direction_ok": sum(1 for r in ratio_rows if r.direction_ok),
    }
    return ValidationReport(rows, summary)


def validate_file(path: Path) -> ValidationReport:
    table = read_table(path)
    return evaluate_table(table, path.parent)


def render_report(report: ValidationReport) -> str:
    import io

    from iowatt.simulator.report import format_number
    from rich.console import Console
    from rich.table import Table

    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    table = Table(title="predicted vs measured")
    for column in ("id", "predicted", "measured", "unit", "error %", "tol %", "ok", "note"):
        table.add_column(column, justify="left" if column in ("id", "note", "unit") else "right", overflow="fold",
                         no_wrap=column != "note")
    for r in report.rows:
        if r.failure:
            table.add_row(r.id, "-", format_number(r.measured), r.unit or "", "-", f"{r.tolerance * 100:.0f}", "ERROR", r.failure)
            continue
        ok = "yes" if r.within else "NO"
        note = "" if r.direction_ok in (None, True) else "wrong direction"
        table.add_row(
            r.id, format_number(r.predicted), format_number(r.measured), r.unit or ("ratio" if r.kind == "ratio" else ""),
            f"{r.error * 100:+.1f}", f"{r.tolerance * 100:.0f}", ok, note,
        )
    console.print(table)
    s = report.summary
    med = "n/a" if s["median_abs_error"] is None else f"{s['median_abs_error'] * 100:.1f} %"
    mx = "n/a" if s["max_abs_error"] is None else f"{s['max_abs_error'] * 100:.1f} %"
    console.print(
        f"rows {s['n']}, within tolerance {s['n_within']}, failed to run {s['n_failed']}, "
        f"median |error| {med}, max |error| {mx}, ratio directions right {s['n_direction_ok']}/{s['n_direction']}"
    )
    return console.file.getvalue()  # type: ignore[attr-defined]


def dump_yaml(table: ValidationTable) -> str:
    return yaml.safe_dump(table.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
