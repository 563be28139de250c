"""Reproduce a published study: run its scenarios and compare their predictions with what the study published.

A study is a YAML file in scenarios/studies/: sections, each with runs
(scenario + overrides, a label, optionally a numeric x and a series name for
scaling lines), the metrics to show, what the study published (absolute
figures, or ratios between two runs), and the kind of figure the study drew:

``bars``, ``lines`` (against x, one line per series: scaling over drive
counts, fill passes, worker counts, block sizes), ``pairs``, ``stacked`` or
``trace`` (see `iowatt.output.figures`, which draws them).

This module returns data (`StudyResult`); the command line renders it.  A
scenario that is missing or fails to run is a failed cell with its reason;
the rest of the study still runs.  Distinct scenario runs are independent, so
`run_studies` runs them on an executor, and the results come back in the
studies' own order whatever order the runs finish in.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Callable
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from iowatt.scenarios.loader import ScenarioError, load, read_yaml
from iowatt.scenarios.reproduce_trace import comparable_on_trace, trace_positions
from iowatt.scenarios.run import run_scenario
from iowatt.scenarios.validation import lookup_metric, parse_metric_path
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

STUDIES_DIR = Path(__file__).parent / "studies"
_REPO = Path(__file__).resolve().parent.parent


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    scenario: str | dict[str, Any] = Field(description="path relative to the study file, or an inline scenario mapping")
    set: dict[str, Any] = Field(default_factory=dict, description="--set overrides, PATH: VALUE")
    x: float | None = Field(default=None, description="position on the x axis of a `lines` figure")
    series: str | None = Field(default=None, description="line this run belongs to in a `lines` figure (default: one line)")
    metrics: dict[str, str] = Field(default_factory=dict, description="per-run metric path, by metric label (e.g. pass 2's mean)")


class MetricSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="shown in tables and on axes; carries the unit, e.g. 'time (s)'")
    metric: str = Field(description="path into the run's JSON result")
    scale: float = Field(default=1.0, description="multiply the metric by this for display (unit conversion)")
    divide_by: str | None = Field(default=None, description="path of a metric to divide by (e.g. MB/s per SSD watt)")
    axis: Literal["left", "right"] = Field(default="left", description="`trace` figures: the y axis it is drawn on")


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    metric: str                     # a MetricSpec label
    value: float
    relative_to: str | None = None  # a run label: the study published a ratio run / relative_to
    source: str = ""
    span: tuple[float, float] | None = Field(
        default=None, description="`trace` figures: the published figure is the mean of the trace over this stretch of the x axis"
    )


FigureKind = Literal["bars", "lines", "pairs", "stacked", "trace", "none"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    runs: list[RunSpec] = Field(min_length=1)
    metrics: list[MetricSpec] = Field(min_length=1)
    published: list[Published] = Field(default_factory=list)
    figure: FigureKind = "bars"
    x_label: str = ""
    x_log2: bool = False
    y_log: bool = False
    trace_span: float | None = Field(default=None, gt=0, description="`trace` x axis: the i-th of n points sits at span x i / n")
    labels: dict[str, str] = Field(default_factory=dict, description="text columns, by name: the path of a string in the run's result "
                                   "(e.g. what binds the run: storage.closed_loop.binding); shown in tables and CSVs, not drawn")
    trace_span_metric: str | None = Field(
        default=None, description="`trace` x axis from each run's result instead (e.g. metrics.simulated_seconds for a power-over-time trace)"
    )
    note: str = ""

    @model_validator(mode="after")
    def _refs(self) -> Section:
        runs = [r.label for r in self.runs]
        metrics = {m.label for m in self.metrics}
        if len(set(runs)) != len(runs):
            raise ValueError(f"run labels must be unique, found {runs}")
        for p in self.published:
            if p.run not in runs or (p.relative_to is not None and p.relative_to not in runs):
                raise ValueError(f"published value names run {p.run!r}/{p.relative_to!r}; runs are {sorted(runs)}")
            if p.metric not in metrics:
                raise ValueError(f"published value names metric {p.metric!r}; metrics are {sorted(metrics)}")
        for r in self.runs:
            unknown = set(r.metrics) - metrics
            if unknown:
                raise ValueError(f"run {r.label!r} overrides unknown metrics {sorted(unknown)}; metrics are {sorted(metrics)}")
            for path in r.metrics.values():
                parse_metric_path(path)
        for m in self.metrics:
            parse_metric_path(m.metric)
        if self.figure == "lines" and any(r.x is None for r in self.runs):
            raise ValueError("a `lines` figure needs a numeric `x` on every run")
        return self


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # the id names the study's folder under --out: one plain name, never a path (no '/', no leading '.' or '..')
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    title: str
    source: str = ""
    note: str = ""
    sections: list[Section] = Field(min_length=1)


def study_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(STUDIES_DIR.glob("*.yaml"))}


def load_study(name: str | Path) -> tuple[Study, Path]:
    """A study by name (scenarios/studies/NAME.yaml) or by path."""
    files = study_files()
    path = Path(name) if str(name).endswith((".yaml", ".yml")) else files.get(str(name))
    if path is None or not path.is_file():
        raise ScenarioError(f"expected a study name ({', '.join(files)} or all), found {str(name)!r}")
    try:
        return Study.model_validate(read_yaml(path)), path
    except ValidationError as error:
        lines = [f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in error.errors()]
        raise ScenarioError(f"{path}: invalid study definition\n  " + "\n  ".join(lines)) from None


@dataclass
class Cell:
    predicted: float | None
    failure: str | None = None
    trace: list[float] | None = None
    span: float | None = None  # the trace's x span, when the section takes it from the run


@dataclass
class Claim:
    """One published figure beside the prediction comparable with it (a ratio when the study gave one)."""
    published: Published
    predicted: float | None
    error: float | None  # signed fraction


@dataclass
class SectionResult:
    section: Section
    values: dict[tuple[str, str], Cell]   # (run label, metric label) -> cell
    claims: list[Claim] = field(default_factory=list)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)  # (run label, label name) -> text


def _lookup_text(document: dict[str, Any], path: str) -> str:
    node: Any = document
    for part in parse_metric_path(path):
        node = node[part] if isinstance(node, list) and isinstance(part, int) else node.get(part, "") if isinstance(node, dict) else ""
    return node if isinstance(node, str) else ""


class RunError(Exception):
    """A run that failed, as its short description: the message crosses process boundaries, where not every exception can."""


def _short(error: Exception) -> str:
    if isinstance(error, RunError):
        return str(error)
    text = str(error).replace(f"{Path.cwd()}/", "").replace(f"{_REPO}/", "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {' | '.join(lines[:3])}"


Source = Path | dict[str, Any]


def run_document(scenario: Source, assignments: list[str]) -> dict[str, Any] | RunError:
    """One scenario run's result document, or why it failed.  Never raises (it runs in worker processes)."""
    try:
        return run_scenario(load(scenario, assignments))[0]
    except Exception as error:  # a failing scenario is reported in its cells, never fatal to the study
        return RunError(_short(error))


def _request(scenario: Source, overrides: dict[str, Any]) -> tuple[str, list[str]]:
    """(cache key, --set assignments) of one run."""
    assignments = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in overrides.items()]
    source = str(scenario) if isinstance(scenario, Path) else scenario
    return hashlib.sha256(json.dumps([source, assignments], sort_keys=True, default=str).encode()).hexdigest(), assignments


class RunCache:
    """One run per distinct (scenario, overrides) for a whole `reproduce` call; failures are remembered too."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any] | RunError] = {}

    def document(self, scenario: Source, overrides: dict[str, Any]) -> dict[str, Any]:
        key, assignments = _request(scenario, overrides)
        if key not in self.documents:
            self.documents[key] = run_document(scenario, assignments)
        found = self.documents[key]
        if isinstance(found, RunError):
            raise found
        return found

    def prefetch(self, runs: dict[str, tuple[Source, list[str]]], executor: Executor, on_done: Callable[[bool], None] | None = None) -> None:
        """Run every not yet cached run of `runs` (key -> (scenario, assignments)) on `executor`; `on_done(failed)` after each."""
        pending = {executor.submit(run_document, scenario, assignments): key
                   for key, (scenario, assignments) in runs.items() if key not in self.documents}
        for future in as_completed(pending):
            try:
                found = future.result()
            except Exception as error:  # the worker died (BrokenProcessPool): this run failed, the others go on
                found = RunError(f"{type(error).__name__}: the worker running it was lost ({error})")
            self.documents[pending[future]] = found
            if on_done is not None:
                on_done(isinstance(found, RunError))


def _lookup_list(document: dict[str, Any], path: str) -> list[float]:
    node: Any = document
    for part in parse_metric_path(path):
        if isinstance(part, int):
            node = node[part]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"`{part}` is not in the result at {path}")
    if not isinstance(node, list) or not all(isinstance(v, int | float) for v in node):
        raise KeyError(f"{path} is not a list of numbers")
    return [float(v) for v in node]


def _cell(document: dict[str, Any], spec: MetricSpec, path: str, trace: bool, span_path: str | None = None) -> Cell:
    if trace:
        values = [v * spec.scale for v in _lookup_list(document, path)]
        span = lookup_metric(document, span_path) if span_path else None
        return Cell(statistics.fmean(values) if values else None, trace=values, span=span)
    value = lookup_metric(document, path) * spec.scale
    if spec.divide_by is not None:
        divisor = lookup_metric(document, spec.divide_by)
        if divisor == 0:
            raise KeyError(f"{spec.divide_by} is 0")
        value /= divisor
    return Cell(value)


def _source(run: RunSpec, base: Path) -> Source:
    return (base / run.scenario).resolve() if isinstance(run.scenario, str) else run.scenario


def run_section(section: Section, base: Path, cache: RunCache | None = None) -> SectionResult:
    cache = cache or RunCache()
    values: dict[tuple[str, str], Cell] = {}
    texts: dict[tuple[str, str], str] = {}
    for run in section.runs:
        try:
            document = cache.document(_source(run, base), run.set)
        except Exception as error:  # reported per cell
            for m in section.metrics:
                values[(run.label, m.label)] = Cell(None, failure=_short(error))
            continue
        for m in section.metrics:
            try:
                values[(run.label, m.label)] = _cell(document, m, run.metrics.get(m.label, m.metric), section.figure == "trace", section.trace_span_metric)
            except (KeyError, ValueError, IndexError, TypeError) as error:
                values[(run.label, m.label)] = Cell(None, failure=_short(error))
        for name, path in section.labels.items():
            texts[(run.label, name)] = _lookup_text(document, path)
    result = SectionResult(section, values, labels=texts)
    for p in section.published:
        comparable = _comparable(result, p)
        error = None if comparable is None or p.value == 0 else (comparable - p.value) / p.value
        result.claims.append(Claim(p, comparable, error))
    return result


def _comparable(result: SectionResult, p: Published) -> float | None:
    if p.span is not None:
        return comparable_on_trace(result, p)
    value = result.values[(p.run, p.metric)].predicted
    if value is None or p.relative_to is None:
        return value
    base = result.values[(p.relative_to, p.metric)].predicted
    return None if not base else value / base


def published_absolute(result: SectionResult, p: Published) -> float | None:
    """The published figure in the run's own units: a ratio is applied to iowatt's prediction for its base run."""
    if p.relative_to is None:
        return p.value
    base = result.values[(p.relative_to, p.metric)].predicted
    return None if base is None else p.value * base


def claim_label(p: Published) -> str:
    where = f" over x {p.span[0]:g}-{p.span[1]:g}" if p.span is not None else ""
    return f"{p.run} / {p.relative_to}, {p.metric}" if p.relative_to else f"{p.run}, {p.metric}{where}"


def comparison_rows(result: SectionResult) -> list[dict[str, Any]]:
    """The CSV beside a figure: one `data` row per (run, metric), then one `published` row per claim."""
    rows: list[dict[str, Any]] = []
    for run in result.section.runs:
        for m in result.section.metrics:
            cell = result.values[(run.label, m.label)]
            rows.append({"kind": "data", "run": run.label, "series": run.series or "", "x": run.x, "metric": m.label,
                         "predicted": cell.predicted, "relative_to": None, "published": None, "predicted_comparable": None,
                         "error_percent": None, "failure": cell.failure or "",
                         "trace": json.dumps(cell.trace) if cell.trace is not None else "",
                         # each trace point's x (time in seconds for a power trace): the figure's x axis
                         "trace_x": json.dumps(trace_positions(result.section, len(cell.trace), cell.span)) if cell.trace is not None else "",
                         **{name: result.labels.get((run.label, name), "") for name in result.section.labels}})
    for c in result.claims:
        p = c.published
        rows.append({"kind": "published", "run": p.run, "series": "", "x": None, "metric": p.metric,
                     "predicted": result.values[(p.run, p.metric)].predicted, "relative_to": p.relative_to,
                     "published": p.value, "predicted_comparable": c.predicted,
                     "error_percent": None if c.error is None else 100.0 * c.error,
                     "failure": "" if c.predicted is not None else "prediction missing", "trace": "", "trace_x": "",
                     **dict.fromkeys(result.section.labels, "")})
    return rows


def failures(result: SectionResult) -> dict[str, str]:
    """Run label -> why it has no prediction (first failing metric)."""
    found: dict[str, str] = {}
    for (run, _), cell in result.values.items():
        if cell.failure and run not in found:
            found[run] = cell.failure
    return found


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]




@dataclass
class StudyResult:
    study: Study
    path: Path
    sections: list[SectionResult]

    @property
    def claims(self) -> list[Claim]:
        return [c for s in self.sections for c in s.claims]

    def abs_errors(self) -> list[float]:
        """|signed error| of every published figure that has a prediction."""
        return [abs(c.error) for c in self.claims if c.error is not None]


def load_studies(names: list[str]) -> list[tuple[Study, Path]]:
    """Every study, checked before anything runs (a bad study name or definition is an input error)."""
    return [load_study(name) for name in names]


def distinct_runs(studies: list[tuple[Study, Path]]) -> dict[str, tuple[Source, list[str]]]:
    """Cache key -> (scenario, assignments) of every distinct run the studies need, in study order."""
    runs: dict[str, tuple[Source, list[str]]] = {}
    for study, path in studies:
        for section in study.sections:
            for run in section.runs:
                scenario = _source(run, path.parent)
                key, assignments = _request(scenario, run.set)
                runs.setdefault(key, (scenario, assignments))
    return runs


def run_studies(
    studies: list[tuple[Study, Path]], executor: Executor | None = None, on_run: Callable[[bool], None] | None = None
) -> list[StudyResult]:
    """Run every distinct scenario once (on `executor` when given, else here) and compare; results in the studies' order."""
    cache = RunCache()
    if executor is not None:
        cache.prefetch(distinct_runs(studies), executor, on_run)
    return [StudyResult(study, path, [run_section(s, path.parent, cache) for s in study.sections]) for study, path in studies]
