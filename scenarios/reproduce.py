"""Reproduce a published study: run its scenarios, print its comparison tables, draw its figures.

A study is a YAML file in scenarios/studies/: sections, each with runs
(scenario + overrides, a label, optionally a numeric x and a series name for
scaling lines), the metrics to show, what the study published (absolute
figures, or ratios between two runs), and the kind of figure the study drew:

- ``bars``: grouped bars, each metric normalised to the first run (as the
  vendor briefs draw relative claims); labels carry the absolute values;
- ``lines``: one panel per metric against x, one line per series (scaling over
  drive counts, fill passes, worker counts, block sizes);
- ``pairs``: one panel per metric, iowatt beside the published figure per run;
- ``stacked``: one stacked bar per run (phases of one run adding to its total);
- ``trace``: a list-valued metric against its index (per-checkpoint times).

A scenario that is missing or fails to run is reported in the table, the CSV
and index.md with its reason; the rest of the study still runs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from iowatt.scenarios.loader import ScenarioError, load, read_yaml
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


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    metric: str                     # a MetricSpec label
    value: float
    relative_to: str | None = None  # a run label: the study published a ratio run / relative_to
    source: str = ""


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

    id: str
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


def _short(error: Exception) -> str:
    text = str(error).replace(f"{Path.cwd()}/", "").replace(f"{_REPO}/", "")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {' | '.join(lines[:3])}"


class RunCache:
    """One run per distinct (scenario, overrides) for a whole `reproduce` call; failures are remembered too."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any] | Exception] = {}

    def document(self, scenario: Path | dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        assignments = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in overrides.items()]
        source = str(scenario) if isinstance(scenario, Path) else scenario
        key = hashlib.sha256(json.dumps([source, assignments], sort_keys=True, default=str).encode()).hexdigest()
        if key not in self.documents:
            try:
                self.documents[key] = run_scenario(load(scenario, assignments))[0]
            except Exception as error:  # a failing scenario is reported in its cells, never fatal to the study
                self.documents[key] = error
        found = self.documents[key]
        if isinstance(found, Exception):
            raise found
        return found


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


def run_section(section: Section, base: Path, cache: RunCache | None = None) -> SectionResult:
    cache = cache or RunCache()
    values: dict[tuple[str, str], Cell] = {}
    for run in section.runs:
        try:
            scenario = (base / run.scenario).resolve() if isinstance(run.scenario, str) else run.scenario
            document = cache.document(scenario, run.set)
        except Exception as error:  # reported per cell
            for m in section.metrics:
                values[(run.label, m.label)] = Cell(None, failure=_short(error))
            continue
        for m in section.metrics:
            try:
                values[(run.label, m.label)] = _cell(document, m, run.metrics.get(m.label, m.metric), section.figure == "trace", section.trace_span_metric)
            except (KeyError, ValueError, IndexError, TypeError) as error:
                values[(run.label, m.label)] = Cell(None, failure=_short(error))
    result = SectionResult(section, values)
    for p in section.published:
        comparable = _comparable(result, p)
        error = None if comparable is None or p.value == 0 else (comparable - p.value) / p.value
        result.claims.append(Claim(p, comparable, error))
    return result


def _comparable(result: SectionResult, p: Published) -> float | None:
    value = result.values[(p.run, p.metric)].predicted
    if value is None or p.relative_to is None:
        return value
    base = result.values[(p.relative_to, p.metric)].predicted
    return None if not base else value / base


def _published_absolute(result: SectionResult, p: Published) -> float | None:
    """The published figure in the run's own units: a ratio is applied to iowatt's prediction for its base run."""
    if p.relative_to is None:
        return p.value
    base = result.values[(p.relative_to, p.metric)].predicted
    return None if base is None else p.value * base


def claim_label(p: Published) -> str:
    return f"{p.run} / {p.relative_to}, {p.metric}" if p.relative_to else f"{p.run}, {p.metric}"


def comparison_rows(result: SectionResult) -> list[dict[str, Any]]:
    """The CSV beside a figure: one `data` row per (run, metric), then one `published` row per claim."""
    rows: list[dict[str, Any]] = []
    for run in result.section.runs:
        for m in result.section.metrics:
            cell = result.values[(run.label, m.label)]
            rows.append({"kind": "data", "run": run.label, "series": run.series or "", "x": run.x, "metric": m.label,
                         "predicted": cell.predicted, "relative_to": None, "published": None, "predicted_comparable": None,
                         "error_percent": None, "failure": cell.failure or "",
                         "trace": json.dumps(cell.trace) if cell.trace is not None else ""})
    for c in result.claims:
        p = c.published
        rows.append({"kind": "published", "run": p.run, "series": "", "x": None, "metric": p.metric,
                     "predicted": result.values[(p.run, p.metric)].predicted, "relative_to": p.relative_to,
                     "published": p.value, "predicted_comparable": c.predicted,
                     "error_percent": None if c.error is None else 100.0 * c.error,
                     "failure": "" if c.predicted is not None else "prediction missing", "trace": ""})
    return rows


def _fmt(value: float | None) -> str:
    from iowatt.simulator.report import format_number

    return "-" if value is None else format_number(value)


def failures(result: SectionResult) -> dict[str, str]:
    """Run label -> why it has no prediction (first failing metric)."""
    found: dict[str, str] = {}
    for (run, _), cell in result.values.items():
        if cell.failure and run not in found:
            found[run] = cell.failure
    return found


def render_section(result: SectionResult) -> str:
    """The study's own table (runs x metrics) and, below it, every published figure beside iowatt's."""
    from rich.console import Console
    from rich.table import Table

    section = result.section
    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    # the title goes on its own line: as a table title rich would wrap it to the table's width
    console.file.write(f"{section.title}\n")  # type: ignore[attr-defined]
    table = Table()
    show_x = any(r.x is not None for r in section.runs)
    table.add_column("run", overflow="fold")
    if show_x:
        table.add_column(section.x_label or "x", justify="right")
    for m in section.metrics:
        table.add_column(m.label + (" (mean)" if section.figure == "trace" else ""), justify="right", overflow="fold")
    for run in section.runs:
        cells = [result.values[(run.label, m.label)] for m in section.metrics]
        row = [run.label] + ([_fmt(run.x)] if show_x else [])
        row += ["ERROR" if c.failure else _fmt(c.predicted) for c in cells]
        table.add_row(*row)
    console.print(table)
    if result.claims:
        claims = Table(title="published vs iowatt", title_justify="left")
        for column in ("claim", "published", "iowatt", "error %", "source"):
            claims.add_column(column, justify="left" if column in ("claim", "source") else "right", overflow="fold")
        for c in result.claims:
            claims.add_row(claim_label(c.published), _fmt(c.published.value), _fmt(c.predicted),
                           "-" if c.error is None else f"{100 * c.error:+.1f}", c.published.source)
        console.print(claims)
    for run, why in failures(result).items():
        console.print(f"not run: {run}: {why}")
    if section.note:
        console.print(section.note)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_section(result: SectionResult) -> list[str]:
    section = result.section
    show_x = any(r.x is not None for r in section.runs)
    suffix = " (mean)" if section.figure == "trace" else ""
    head = ["run"] + ([section.x_label or "x"] if show_x else []) + [m.label + suffix for m in section.metrics]
    lines = ["| " + " | ".join(map(_md_escape, head)) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for run in section.runs:
        cells = [result.values[(run.label, m.label)] for m in section.metrics]
        row = [run.label] + ([_fmt(run.x)] if show_x else []) + ["ERROR" if c.failure else _fmt(c.predicted) for c in cells]
        lines.append("| " + " | ".join(map(_md_escape, row)) + " |")
    lines.append("")
    if result.claims:
        lines += ["| published claim | published | iowatt | error % | source |", "|---|---:|---:|---:|---|"]
        for c in result.claims:
            err = "-" if c.error is None else f"{100 * c.error:+.1f}"
            lines.append(f"| {_md_escape(claim_label(c.published))} | {_fmt(c.published.value)} | {_fmt(c.predicted)} | {err} | "
                         f"{_md_escape(c.published.source)} |")
        lines.append("")
    for run, why in failures(result).items():
        lines.append(f"- **not run**: {_md_escape(run)}: `{why}`")
    if failures(result):
        lines.append("")
    if section.note:
        lines += [section.note, ""]
    return lines


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]


def write_csv(result: SectionResult, path: Path) -> None:
    rows = comparison_rows(result)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _label(value: float | None) -> str:
    """Short absolute value for a bar: 8,597 rather than 8.6e+03."""
    if value is None or math.isnan(value):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _wrap(text: str, width: int = 14) -> str:
    """Break a long tick label over lines at spaces so neighbouring labels do not overlap."""
    words, lines, current = text.split(), [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return "\n".join([*lines, current])


def draw_figure(result: SectionResult, stem: Path) -> list[Path]:
    """The section's figure as PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawers = {"bars": _draw_bars, "lines": _draw_lines, "pairs": _draw_pairs, "stacked": _draw_stacked, "trace": _draw_trace}
    fig = drawers[result.section.figure](result, plt)
    fig.suptitle(result.section.title, fontsize=10)
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def _draw_bars(result: SectionResult, plt: Any) -> Any:
    """Grouped bars, each metric relative to the first run; published claims as black diamonds at their level."""
    import numpy as np

    section = result.section
    runs = [r.label for r in section.runs]
    metrics = [m.label for m in section.metrics]
    fig, ax = plt.subplots(figsize=(max(6.5, 1.9 * len(metrics) + 2.5), 4.4))
    width = 0.8 / len(runs)
    positions = np.arange(len(metrics))

    def offset(i: int) -> float:
        return (i - (len(runs) - 1) / 2) * width

    for i, run in enumerate(runs):
        heights = []
        for m in metrics:
            first = result.values[(runs[0], m)].predicted
            value = result.values[(run, m)].predicted
            heights.append(value / first if value is not None and first else 0.0)
        bars = ax.bar(positions + offset(i), heights, width, label=run)
        for bar, m in zip(bars, metrics, strict=True):
            # the absolute value sits inside the bar, so published diamonds at the bar's top stay readable
            value = result.values[(run, m)].predicted
            ax.annotate(_label(value), (bar.get_x() + bar.get_width() / 2, bar.get_height() / 2), ha="center", va="center",
                        fontsize=7, color="white" if bar.get_height() > 0.15 else "black", rotation=90 if len(runs) > 3 else 0)
    labelled = False
    for c in result.claims:
        p = c.published
        first = result.values[(runs[0], p.metric)].predicted
        if p.relative_to is not None and p.run == runs[0]:
            target, level = p.relative_to, 1.0 / p.value   # 'first is v x other' puts other at 1/v of first
        else:
            absolute = _published_absolute(result, p)
            target, level = p.run, (absolute / first if absolute is not None and first else None)
        if level is None:
            continue
        ax.plot([positions[metrics.index(p.metric)] + offset(runs.index(target))], [level], marker="D", color="black",
                linestyle="none", label=None if labelled else "published")
        labelled = True
    ax.set_xticks(positions, [_wrap(m, 18) for m in metrics], fontsize=8)
    ax.set_ylabel(f"relative to {runs[0]}\n(bar labels: absolute values)", fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _series(section: Section) -> dict[str, list[RunSpec]]:
    groups: dict[str, list[RunSpec]] = {}
    for r in section.runs:
        groups.setdefault(r.series or "iowatt", []).append(r)
    return groups


def _draw_lines(result: SectionResult, plt: Any) -> Any:
    """One panel per metric against x, one line per series; published absolute figures as filled diamonds,
    published ratios (applied to iowatt's prediction for their base run) as hollow ones."""
    section = result.section
    metrics = [m.label for m in section.metrics]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics) + 0.6, 3.9), squeeze=False)
    groups = _series(section)
    colours = {name: f"C{i}" for i, name in enumerate(groups)}
    by_label = {r.label: r for r in section.runs}
    for ax, m in zip(axes[0], metrics, strict=True):
        for name, runs in groups.items():
            ordered = sorted(runs, key=lambda r: r.x or 0.0)
            ax.plot([r.x for r in ordered], [_nan(result.values[(r.label, m)].predicted) for r in ordered],
                    marker="o", color=colours[name], label=f"iowatt: {name}" if len(groups) > 1 else "iowatt")
        shown: set[str] = set()
        for c in result.claims:
            p = c.published
            if p.metric != m:
                continue
            run = by_label[p.run]
            level = _published_absolute(result, p)
            if level is None:
                continue
            colour = colours[run.series or "iowatt"]
            kind = "published" if p.relative_to is None else f"published ratio x iowatt({p.relative_to})"
            kind = kind if len(kind) < 40 else "published ratio x iowatt base"
            if len(groups) > 1:
                kind = f"{kind}: {run.series}"
            # filled diamond in the series' colour: a published figure; hollow: a published ratio on iowatt's base
            ax.plot([run.x], [level], marker="D", linestyle="none", markersize=7,
                    color=colour if p.relative_to is None else "none", markeredgecolor="black",
                    label=None if kind in shown else kind)
            shown.add(kind)
        if section.x_log2:
            ax.set_xscale("log", base=2)
            ticks = sorted({r.x for r in section.runs if r.x})
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=7)
        elif all(float(r.x or 0).is_integer() for r in section.runs) and len({r.x for r in section.runs}) <= 12:
            ticks = sorted({r.x for r in section.runs if r.x is not None})
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        positive = [v for r in section.runs if (v := result.values[(r.label, m)].predicted) is not None and v > 0]
        if section.y_log and positive:
            _log_axis(ax, min(positive), max(positive))
        else:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        ax.set_xlabel(section.x_label or "x", fontsize=8)
        ax.set_ylabel(m, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def _draw_pairs(result: SectionResult, plt: Any) -> Any:
    """One panel per metric: for every run, iowatt's bar beside the published figure (where there is one)."""
    import numpy as np

    section = result.section
    runs = [r.label for r in section.runs]
    metrics = [m.label for m in section.metrics]
    fig, axes = plt.subplots(1, len(metrics), figsize=(max(4.2, 1.15 * len(runs) + 1.6) * len(metrics), 4.4), squeeze=False)
    positions = np.arange(len(runs))
    for ax, m in zip(axes[0], metrics, strict=True):
        published: dict[str, float] = {}
        for c in result.claims:
            if c.published.metric == m:
                level = _published_absolute(result, c.published)
                if level is not None:
                    published.setdefault(c.published.run, level)
        predicted = [_nan(result.values[(r, m)].predicted) for r in runs]
        width = 0.4 if published else 0.6
        shift = width / 2 if published else 0.0
        bars = ax.bar(positions - shift, [0.0 if math.isnan(v) else v for v in predicted], width, label="iowatt", color="C0")
        for bar, v in zip(bars, predicted, strict=True):
            ax.annotate(_label(v), (bar.get_x() + bar.get_width() / 2, bar.get_height() or 1e-9),
                        ha="center", va="bottom", fontsize=7)
        if published:
            xs = [positions[runs.index(r)] + shift for r in published]
            pub = ax.bar(xs, list(published.values()), width, label="published", color="0.55")
            for bar, v in zip(pub, published.values(), strict=True):
                ax.annotate(_label(v), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(positions, [_wrap(r) for r in runs], fontsize=7)
        ax.set_ylabel(m, fontsize=8)
        positive = [v for v in [*predicted, *published.values()] if not math.isnan(v) and v > 0]
        if section.y_log and positive:
            _log_axis(ax, min(positive), max(positive))
        else:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.legend(fontsize=7)
    return fig


def _log_axis(ax: Any, low: float, high: float) -> None:
    """Log y axis with plain-number labels, room below the smallest bar and above the tallest label."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.set_ylim(low / 3.0, high * 3.0)
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _draw_stacked(result: SectionResult, plt: Any) -> Any:
    """One stacked bar per run: the metrics are parts of one total (phases of a run), in the same unit."""
    import numpy as np

    section = result.section
    runs = [r.label for r in section.runs]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.3 * len(runs) + 3.0), 4.4))
    positions = np.arange(len(runs))
    bottom = np.zeros(len(runs))
    for m in section.metrics:
        heights = np.array([0.0 if result.values[(r, m.label)].predicted is None else result.values[(r, m.label)].predicted
                            for r in runs])
        ax.bar(positions, heights, 0.6, bottom=bottom, label=m.label)
        bottom += heights
    for x, total in zip(positions, bottom, strict=True):
        ax.annotate(_label(total), (x, total), ha="center", va="bottom", fontsize=8)
    labelled = False
    for c in result.claims:
        level = _published_absolute(result, c.published)
        if level is None:
            continue
        ax.plot([positions[runs.index(c.published.run)]], [level], marker="D", color="black", linestyle="none",
                label=None if labelled else "published total")
        labelled = True
    ax.set_xticks(positions, [_wrap(r) for r in runs], fontsize=7)
    ax.set_ylabel(section.x_label or "total", fontsize=8)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _draw_trace(result: SectionResult, plt: Any) -> Any:
    """A list-valued metric against its index, one line per run (e.g. every checkpoint's time as the drive fills)."""
    section = result.section
    metrics = [m.label for m in section.metrics]
    fig, axes = plt.subplots(1, len(metrics), figsize=(7.5 * len(metrics), 4.0), squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        for r in section.runs:
            cell = result.values[(r.label, m)]
            trace = cell.trace or []
            n = len(trace)
            # with a span, runs of different lengths share one axis (e.g. 3 fill passes of 9 or of 99 checkpoints)
            span = cell.span or section.trace_span
            xs = [span * (i + 1) / n for i in range(n)] if span else list(range(1, n + 1))
            ax.plot(xs, trace, marker=".", markersize=3, linewidth=1, label=r.label, drawstyle="steps-pre" if cell.span else "default")
        ax.set_xlabel(section.x_label or "index", fontsize=8)
        ax.set_ylabel(m, fontsize=8)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def reproduce(names: list[str], out: Path | None) -> tuple[str, list[Path]]:
    """Returns (the text to print, the files written)."""
    text: list[str] = []
    written: list[Path] = []
    index: list[str] = ["# iowatt reproductions of published studies", "",
                        "Made by `iowatt reproduce " + (" ".join(names) if len(names) < len(study_files()) else "all") + "`. "
                        "Each section shows the figure, the CSV behind it, the values iowatt predicts and, where the "
                        "study published a figure, the published value beside the comparable prediction with the "
                        "signed error ((iowatt - published) / published).", ""]
    summary: list[str] = ["| study | published figures | predicted | median abs error % | max abs error % |",
                          "|---|---:|---:|---:|---:|"]
    body: list[str] = []
    plots = plots_available()
    cache = RunCache()
    for name in names:
        study, path = load_study(name)
        text.append(f"== {study.title}")
        body += [f"## {study.title}", "", f"Study `{study.id}`. Source: {study.source}", ""]
        if study.note:
            body += [study.note, ""]
        errors: list[float] = []
        n_claims = 0
        stems: set[str] = set()
        for section in study.sections:
            result = run_section(section, path.parent, cache)
            text.append(render_section(result))
            n_claims += len(result.claims)
            errors += [abs(c.error) for c in result.claims if c.error is not None]
            body += [f"### {section.title}", ""]
            if out is None:
                body += markdown_section(result)
                continue
            folder = out / study.id
            folder.mkdir(parents=True, exist_ok=True)
            name_ = slug(section.title)
            while name_ in stems:   # two titles alike in their first 60 characters
                name_ += "_2"
            stems.add(name_)
            stem = folder / name_
            write_csv(result, stem.with_suffix(".csv"))
            written.append(stem.with_suffix(".csv"))
            if plots and section.figure != "none":
                written += draw_figure(result, stem)
                body += [f"![{section.title}]({study.id}/{stem.name}.png)", ""]
            body += markdown_section(result)
            body += [f"Data: [{stem.name}.csv]({study.id}/{stem.name}.csv)" +
                     (f", vector figure: [{stem.name}.svg]({study.id}/{stem.name}.svg)" if plots and section.figure != "none" else ""), ""]
        median = f"{100 * statistics.median(errors):.1f}" if errors else "-"
        worst = f"{100 * max(errors):.1f}" if errors else "-"
        summary.append(f"| {study.id} | {n_claims} | {len(errors)} | {median} | {worst} |")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.md").write_text("\n".join(index + summary + [""] + body) + "\n")
        written.append(out / "index.md")
        if not plots:
            text.append("figures need matplotlib: pip install 'iowatt[plots]' (make demo installs it); tables and CSVs were written")
    return "\n".join(text), written
