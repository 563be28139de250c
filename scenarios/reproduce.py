"""Reproduce a published study: run its scenarios, print its comparison tables, draw its figures.

A study is a YAML file in scenarios/studies/: sections, each with runs
(scenario + overrides, a label, optionally a numeric x for scaling lines),
the metrics to show, what the study published for the same cells, and the
kind of figure the study drew (grouped bars or scaling lines).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scenarios.loader import ScenarioError, load, read_yaml
from scenarios.run import run_scenario
from scenarios.validation import lookup_metric

STUDIES_DIR = Path(__file__).parent / "studies"


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    scenario: str
    set: dict[str, Any] = Field(default_factory=dict)
    x: float | None = None


class MetricSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    metric: str
    scale: float = Field(default=1.0, description="multiply the metric by this for display")


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    metric: str                     # a MetricSpec label
    value: float
    relative_to: str | None = None  # a run label: the study published a ratio run / relative_to
    source: str = ""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    runs: list[RunSpec] = Field(min_length=1)
    metrics: list[MetricSpec] = Field(min_length=1)
    published: list[Published] = Field(default_factory=list)
    figure: Literal["bars", "lines", "none"] = "bars"
    x_label: str = ""

    @model_validator(mode="after")
    def _refs(self) -> Section:
        runs = {r.label for r in self.runs}
        metrics = {m.label for m in self.metrics}
        for p in self.published:
            if p.run not in runs or (p.relative_to is not None and p.relative_to not in runs):
                raise ValueError(f"published value names run {p.run!r}/{p.relative_to!r}; runs are {sorted(runs)}")
            if p.metric not in metrics:
                raise ValueError(f"published value names metric {p.metric!r}; metrics are {sorted(metrics)}")
        if self.figure == "lines" and any(r.x is None for r in self.runs):
            raise ValueError("a `lines` figure needs a numeric `x` on every run")
        return self


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    source: str = ""
    sections: list[Section] = Field(min_length=1)


def study_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(STUDIES_DIR.glob("*.yaml"))}


def load_study(name: str) -> tuple[Study, Path]:
    files = study_files()
    if name not in files:
        raise ScenarioError(f"expected a study name ({', '.join(files)} or all), found {name!r}")
    path = files[name]
    try:
        return Study.model_validate(read_yaml(path)), path
    except ValidationError as error:
        raise ScenarioError(f"{path}: invalid study definition: {error}") from None


@dataclass
class Cell:
    predicted: float | None
    published: float | None = None
    relative_to: str | None = None
    failure: str | None = None


@dataclass
class SectionResult:
    section: Section
    values: dict[tuple[str, str], Cell]   # (run label, metric label) -> cell


def run_section(section: Section, base: Path) -> SectionResult:
    values: dict[tuple[str, str], Cell] = {}
    for run in section.runs:
        overrides = [f"{k}={v}" for k, v in run.set.items()]
        try:
            document = run_scenario(load((base / run.scenario).resolve(), overrides))[0]
        except ScenarioError as error:
            for m in section.metrics:
                values[(run.label, m.label)] = Cell(None, failure=str(error).splitlines()[-1].strip())
            continue
        for m in section.metrics:
            try:
                values[(run.label, m.label)] = Cell(lookup_metric(document, m.metric) * m.scale)
            except KeyError as error:
                values[(run.label, m.label)] = Cell(None, failure=str(error))
    for p in section.published:
        cell = values[(p.run, p.metric)]
        cell.published = p.value
        cell.relative_to = p.relative_to
    return SectionResult(section, values)


def _predicted_for(result: SectionResult, run: str, metric: str) -> float | None:
    cell = result.values[(run, metric)]
    if cell.predicted is None:
        return None
    if cell.relative_to is None:
        return cell.predicted
    base = result.values[(cell.relative_to, metric)].predicted
    return None if not base else cell.predicted / base


def comparison_rows(result: SectionResult) -> list[dict[str, Any]]:
    """One row per (run, metric): the prediction and, where the study published the cell,
    its figure, the comparable prediction (a ratio when the study gave one) and the error."""
    rows = []
    for run in result.section.runs:
        for m in result.section.metrics:
            cell = result.values[(run.label, m.label)]
            row: dict[str, Any] = {"run": run.label}
            if run.x is not None:
                row["x"] = run.x
            row.update({"metric": m.label, "predicted": cell.predicted, "published": None, "compared": None,
                        "predicted_comparable": None, "error_percent": None})
            if cell.published is not None:
                comparable = _predicted_for(result, run.label, m.label)
                row["published"] = cell.published
                row["compared"] = f"ratio to {cell.relative_to}" if cell.relative_to else "absolute"
                row["predicted_comparable"] = comparable
                if comparable is not None:
                    row["error_percent"] = 100.0 * (comparable - cell.published) / cell.published
            if cell.failure:
                row["failure"] = cell.failure
            rows.append(row)
    return rows


def render_section(result: SectionResult) -> str:
    from rich.console import Console
    from rich.table import Table

    from simulator.report import format_number

    rows = comparison_rows(result)
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    console = Console(file=io.StringIO(), width=160, force_terminal=False, color_system=None)
    table = Table(title=result.section.title)
    for c in columns:
        table.add_column(c, justify="left" if c in ("run", "metric", "compared", "failure") else "right", overflow="fold")
    for row in rows:
        table.add_row(*(format_number(row[c]) if c in row and row[c] is not None else "-" for c in columns))
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]


def write_csv(result: SectionResult, path: Path) -> None:
    rows = comparison_rows(result)
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def draw_figure(result: SectionResult, stem: Path) -> list[Path]:
    """Grouped bars (each metric normalised to the first run, as the vendor briefs draw them)
    or scaling lines (one panel per metric against x).  PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    section = result.section
    runs = [r.label for r in section.runs]
    metrics = [m.label for m in section.metrics]
    if section.figure == "bars":
        fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(metrics) + 2), 4.2))
        width = 0.8 / len(runs)
        positions = np.arange(len(metrics))
        for i, run in enumerate(runs):
            heights = []
            for m in metrics:
                first = result.values[(runs[0], m)].predicted
                value = result.values[(run, m)].predicted
                heights.append(value / first if value is not None and first else 0.0)
            bars = ax.bar(positions + (i - (len(runs) - 1) / 2) * width, heights, width, label=run)
            for bar, m in zip(bars, metrics, strict=True):
                value = result.values[(run, m)].predicted
                if value is not None:
                    ax.annotate(f"{value:.3g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=7)
        for p in section.published:
            if p.relative_to == runs[0] or (p.relative_to is None and p.run == runs[0]):
                j = metrics.index(p.metric)
                i = runs.index(p.run)
                level = p.value if p.relative_to else 1.0
                ax.plot([positions[j] + (i - (len(runs) - 1) / 2) * width], [level], marker="D", color="black",
                        label="published" if "published" not in ax.get_legend_handles_labels()[1] else None)
        ax.set_xticks(positions, metrics, fontsize=8)
        ax.set_ylabel(f"relative to {runs[0]} (labels: absolute values)")
        ax.axhline(1.0, color="grey", linewidth=0.5)
        ax.legend(fontsize=8)
    else:
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.8), squeeze=False)
        xs = [r.x for r in section.runs]
        for ax, m in zip(axes[0], metrics, strict=True):
            ys = [result.values[(r, m)].predicted for r in runs]
            ax.plot(xs, [y if y is not None else np.nan for y in ys], marker="o", label="iowatt")
            pub = [(section.runs[runs.index(p.run)].x, p.value) for p in section.published if p.metric == m and p.relative_to is None]
            if pub:
                ax.plot([x for x, _ in pub], [v for _, v in pub], marker="D", linestyle="none", color="black", label="published")
            ax.set_xlabel(section.x_label or "x")
            ax.set_title(m, fontsize=9)
            ax.legend(fontsize=8)
    fig.suptitle(section.title, fontsize=10)
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


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
    index: list[str] = ["# iowatt reproductions of published studies", ""]
    plots = plots_available()
    for name in names:
        study, path = load_study(name)
        text.append(f"== {study.title}")
        index += [f"## {study.title}", "", study.source, ""]
        for section in study.sections:
            result = run_section(section, path.parent)
            table = render_section(result)
            text.append(table)
            if out is None:
                continue
            folder = out / study.id
            folder.mkdir(parents=True, exist_ok=True)
            stem = folder / slug(section.title)
            write_csv(result, stem.with_suffix(".csv"))
            written.append(stem.with_suffix(".csv"))
            index += [f"### {section.title}", ""]
            if plots and section.figure != "none":
                written += draw_figure(result, stem)
                index += [f"![{section.title}]({study.id}/{stem.name}.png)", ""]
            index += ["```", table.rstrip(), "```", "", f"Data: [{stem.name}.csv]({study.id}/{stem.name}.csv)", ""]
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.md").write_text("\n".join(index) + "\n")
        written.append(out / "index.md")
        if not plots:
            text.append("figures need matplotlib: pip install 'iowatt[plots]' (make demo installs it)")
    return "\n".join(text), written
