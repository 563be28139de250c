"""Figures (matplotlib, imported only when drawing): a study section's figure and a planner's Pareto plot.

Study figures, by kind:

- ``bars``: grouped bars, each metric normalised to the first run (as the
  vendor briefs draw relative claims); labels carry the absolute values;
- ``lines``: one panel per metric against x, one line per series;
- ``pairs``: one panel per metric, the prediction beside the published figure per run;
- ``stacked``: one stacked bar per run (phases of one run adding to its total);
- ``trace``: a list-valued metric against its index (per-checkpoint times).

Files are written through `files.write_bytes`: atomically, with the usual mode.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from iowatt.output.files import write_bytes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FIGURE_KINDS = ("bars", "lines", "pairs", "stacked", "trace")


@dataclass(frozen=True)
class FigureRun:
    label: str
    x: float | None = None
    series: str | None = None


@dataclass(frozen=True)
class FigureClaim:
    """A published figure: `value` as published (absolute, or the ratio run / relative_to); `absolute` in the run's units."""

    run: str
    metric: str
    value: float
    relative_to: str | None
    absolute: float | None
    span: tuple[float, float] | None = None  # `trace` figures: the stretch of the x axis the published mean covers


@dataclass(frozen=True)
class StudyFigure:
    kind: str
    title: str
    runs: Sequence[FigureRun]
    metrics: Sequence[str]
    values: Mapping[tuple[str, str], float | None]  # (run label, metric label) -> prediction
    claims: Sequence[FigureClaim] = ()
    traces: Mapping[tuple[str, str], Sequence[float]] = field(default_factory=dict)
    x_label: str = ""
    x_log2: bool = False
    y_log: bool = False
    trace_xs: Mapping[tuple[str, str], Sequence[float]] = field(default_factory=dict)  # `trace`: each point's x (else its index)
    note: str = ""  # the section's note: `pairs` prints it under a panel where some runs have no published figure
    # `reproduce --uncertainty`: (run label, metric label) -> the prediction's interval (low, high), drawn as error bars
    intervals: Mapping[tuple[str, str], tuple[float, float]] = field(default_factory=dict)


def plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path, fmt: str) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=120)
    write_bytes(buffer.getvalue(), path)


def draw_study_figure(figure: StudyFigure, stem: Path) -> list[Path]:
    """The section's figure as STEM.png and STEM.svg."""
    plt = _pyplot()
    drawers = {"bars": _draw_bars, "lines": _draw_lines, "pairs": _draw_pairs, "stacked": _draw_stacked, "trace": _draw_trace}
    fig = drawers[figure.kind](figure)
    fig.suptitle(figure.title, fontsize=10)
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for path in paths:
        _save(fig, path, path.suffix[1:])
    plt.close(fig)
    return paths


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
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return "\n".join([*lines, current])


def _error_bars(ax: Axes, xs: Sequence[float], values: Sequence[float], bounds: Sequence[tuple[float, float] | None],
                label: bool = True) -> None:
    """Each prediction's interval as a black error bar on its bar or point (where it has one)."""
    shown = [(x, v, b) for x, v, b in zip(xs, values, bounds, strict=True) if b is not None and not math.isnan(v)]
    if not shown:
        return
    ax.errorbar([x for x, _, _ in shown], [v for _, v, _ in shown],
                yerr=[[max(v - b[0], 0.0) for _, v, b in shown], [max(b[1] - v, 0.0) for _, v, b in shown]],
                fmt="none", ecolor="black", elinewidth=1.0, capsize=3, label="iowatt interval" if label else None)


def _draw_bars(data: StudyFigure) -> Figure:
    """Grouped bars, each metric relative to the first run; published claims as black diamonds at their level."""
    plt = _pyplot()
    runs = [r.label for r in data.runs]
    metrics = list(data.metrics)
    fig, ax = plt.subplots(figsize=(max(6.5, 1.9 * len(metrics) + 2.5), 4.4))
    width = 0.8 / len(runs)
    positions = [float(i) for i in range(len(metrics))]

    def offset(i: int) -> float:
        return (i - (len(runs) - 1) / 2) * width

    for i, run in enumerate(runs):
        heights = []
        for m in metrics:
            first = data.values[(runs[0], m)]
            value = data.values[(run, m)]
            heights.append(value / first if value is not None and first else 0.0)
        bars = ax.bar([p + offset(i) for p in positions], heights, width, label=run)
        relative = []
        for m in metrics:
            first, bound = data.values[(runs[0], m)], data.intervals.get((run, m))
            relative.append((bound[0] / first, bound[1] / first) if bound is not None and first else None)
        _error_bars(ax, [p + offset(i) for p in positions], heights, relative, label=i == 0)
        for bar, m in zip(bars, metrics, strict=True):
            # the absolute value sits inside the bar, so published diamonds at the bar's top stay readable
            ax.annotate(_label(data.values[(run, m)]), (bar.get_x() + bar.get_width() / 2, bar.get_height() / 2), ha="center",
                        va="center", fontsize=7, color="white" if bar.get_height() > 0.15 else "black", rotation=90 if len(runs) > 3 else 0)
    labelled = False
    # absolute published figures are drawn relative to the *published* first run where the study gives one, so the
    # diamonds compare published with published (a ratio claim already is one); else relative to iowatt's first run
    published_first = {c.metric: c.value for c in data.claims if c.run == runs[0] and c.relative_to is None and c.value}
    for c in data.claims:
        first = published_first.get(c.metric, data.values[(runs[0], c.metric)])
        if c.relative_to is not None and c.run == runs[0]:
            target, level = c.relative_to, 1.0 / c.value   # 'first is v x other' puts other at 1/v of first
        else:
            target, level = c.run, (c.absolute / first if c.absolute is not None and first else None)
            if c.relative_to is None and c.metric in published_first:
                level = c.value / published_first[c.metric]
        if level is None:
            continue
        ax.plot([positions[metrics.index(c.metric)] + offset(runs.index(target))], [level], marker="D", color="black",
                linestyle="none", label=None if labelled else "published")
        labelled = True
    ax.set_xticks(positions, [_wrap(m, 18) for m in metrics], fontsize=8)
    mixed = " (diamonds: to the published one)" if published_first else ""
    ax.set_ylabel(f"relative to {runs[0]}{mixed}\n(bar labels: absolute values)", fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.5)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _series(data: StudyFigure) -> dict[str, list[FigureRun]]:
    groups: dict[str, list[FigureRun]] = {}
    for r in data.runs:
        groups.setdefault(r.series or "iowatt", []).append(r)
    return groups


def _x_ticks(ax: Axes, data: StudyFigure) -> None:
    if data.x_log2:
        ax.set_xscale("log", base=2)
        ticks = sorted({r.x for r in data.runs if r.x})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=7)
    elif all(float(r.x or 0).is_integer() for r in data.runs) and len({r.x for r in data.runs}) <= 12:
        ticks = sorted({r.x for r in data.runs if r.x is not None})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])


def _draw_lines(data: StudyFigure) -> Figure:
    """One panel per metric against x, one line per series; published absolute figures as filled diamonds,
    published ratios (applied to the prediction for their base run) as hollow ones."""
    plt = _pyplot()
    metrics = list(data.metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics) + 0.6, 3.9), squeeze=False)
    groups = _series(data)
    colours = {name: f"C{i}" for i, name in enumerate(groups)}
    by_label = {r.label: r for r in data.runs}
    for ax, m in zip(axes[0], metrics, strict=True):
        for name, runs in groups.items():
            ordered = sorted(runs, key=lambda r: r.x or 0.0)
            ax.plot([r.x for r in ordered], [_nan(data.values[(r.label, m)]) for r in ordered],
                    marker="o", color=colours[name], label=f"iowatt: {name}" if len(groups) > 1 else "iowatt")
            _error_bars(ax, [r.x or 0.0 for r in ordered], [_nan(data.values[(r.label, m)]) for r in ordered],
                        [data.intervals.get((r.label, m)) for r in ordered], label=name == next(iter(groups)))
        shown: set[str] = set()
        for c in data.claims:
            if c.metric != m or c.absolute is None:
                continue
            run = by_label[c.run]
            kind = "published" if c.relative_to is None else f"published ratio x iowatt({c.relative_to})"
            kind = kind if len(kind) < 40 else "published ratio x iowatt base"
            if len(groups) > 1:
                kind = f"{kind}: {run.series}"
            # filled diamond in the series' colour: a published figure; hollow: a published ratio on iowatt's base
            ax.plot([run.x], [c.absolute], marker="D", linestyle="none", markersize=7,
                    color=colours[run.series or "iowatt"] if c.relative_to is None else "none", markeredgecolor="black",
                    label=None if kind in shown else kind)
            shown.add(kind)
        _x_ticks(ax, data)
        positive = [v for r in data.runs if (v := data.values[(r.label, m)]) is not None and v > 0]
        if data.y_log and positive:
            _log_axis(ax, min(positive), max(positive))
        else:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        ax.set_xlabel(data.x_label or "x", fontsize=8)
        ax.set_ylabel(m, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def _draw_pairs(data: StudyFigure) -> Figure:
    """One panel per metric: for every run, iowatt's bar beside the published figure (where there is one)."""
    plt = _pyplot()
    runs = [r.label for r in data.runs]
    metrics = list(data.metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(max(4.2, 1.15 * len(runs) + 1.6) * len(metrics), 4.4), squeeze=False)
    positions = [float(i) for i in range(len(runs))]
    for ax, m in zip(axes[0], metrics, strict=True):
        published: dict[str, float] = {}
        for c in data.claims:
            if c.metric == m and c.absolute is not None:
                published.setdefault(c.run, c.absolute)
        predicted = [_nan(data.values[(r, m)]) for r in runs]
        width = 0.4 if published else 0.6
        shift = width / 2 if published else 0.0
        bars = ax.bar([p - shift for p in positions], [0.0 if math.isnan(v) else v for v in predicted], width, label="iowatt", color="C0")
        _error_bars(ax, [p - shift for p in positions], predicted, [data.intervals.get((r, m)) for r in runs])
        for bar, v in zip(bars, predicted, strict=True):
            ax.annotate(_label(v), (bar.get_x() + bar.get_width() / 2, bar.get_height() or 1e-9), ha="center", va="bottom", fontsize=7)
        if published:
            xs = [positions[runs.index(r)] + shift for r in published]
            pub = ax.bar(xs, list(published.values()), width, label="published", color="0.55")
            for bar, v in zip(pub, published.values(), strict=True):
                ax.annotate(_label(v), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=7)
            # an empty published slot says so, and the section's note (under the panel) says why
            for r in (r for r in runs if r not in published):
                ax.annotate("no published\nfigure", (positions[runs.index(r)] + shift, 0), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, color="0.35")
            if data.note and len(published) < len(runs):
                ax.set_xlabel(_wrap(data.note, 95), fontsize=7, loc="left", color="0.25")
        ax.set_xticks(positions, [_wrap(r) for r in runs], fontsize=7)
        ax.set_ylabel(m, fontsize=8)
        positive = [v for v in [*predicted, *published.values()] if not math.isnan(v) and v > 0]
        if data.y_log and positive:
            _log_axis(ax, min(positive), max(positive))
        else:
            ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.legend(fontsize=7)
    return fig


def _log_axis(ax: Axes, low: float, high: float) -> None:
    """Log y axis with plain-number labels, room below the smallest bar and above the tallest label."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.set_ylim(low / 3.0, high * 3.0)
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _draw_stacked(data: StudyFigure) -> Figure:
    """One stacked bar per run: the metrics are parts of one total (phases of a run), in the same unit."""
    plt = _pyplot()
    runs = [r.label for r in data.runs]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.3 * len(runs) + 3.0), 4.4))
    positions = [float(i) for i in range(len(runs))]
    bottom = [0.0] * len(runs)
    for m in data.metrics:
        heights = [v if (v := data.values[(r, m)]) is not None else 0.0 for r in runs]
        ax.bar(positions, heights, 0.6, bottom=list(bottom), label=m)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for x, total in zip(positions, bottom, strict=True):
        ax.annotate(_label(total), (x, total), ha="center", va="bottom", fontsize=8)
    labelled = False
    for c in data.claims:
        if c.absolute is None:
            continue
        ax.plot([positions[runs.index(c.run)]], [c.absolute], marker="D", color="black", linestyle="none",
                label=None if labelled else "published total")
        labelled = True
    ax.set_xticks(positions, [_wrap(r) for r in runs], fontsize=7)
    ax.set_ylabel(data.x_label or "total", fontsize=8)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _draw_trace(data: StudyFigure) -> Figure:
    """A list-valued metric against its index, one line per run (e.g. every checkpoint's time as the drive fills)."""
    plt = _pyplot()
    metrics = list(data.metrics)
    # one panel per metric, stacked on a shared x axis: side by side, three panels made a 2700 x 480 strip of tiny text
    fig, axes = plt.subplots(len(metrics), 1, figsize=(8.0, 0.6 + 3.2 * len(metrics)), squeeze=False, sharex=True)
    for ax, m in zip(axes[:, 0], metrics, strict=True):
        for r in data.runs:
            trace = list(data.traces.get((r.label, m), ()))
            xs = list(data.trace_xs.get((r.label, m), range(1, len(trace) + 1)))
            line, = ax.plot(xs, trace, marker=".", markersize=3, linewidth=1, label=r.label)
            # a published mean over a stretch of the axis (e.g. a fill pass), as a dashed segment in the run's colour
            for c in data.claims:
                if c.run == r.label and c.metric == m and c.span is not None and c.absolute is not None:
                    ax.hlines(c.absolute, c.span[0], c.span[1], colors=line.get_color(), linestyles="--", linewidth=1.5)
        if any(c.metric == m and c.span is not None for c in data.claims):
            ax.plot([], [], color="black", linestyle="--", label="published mean over the stretch")
        ax.set_ylabel(m, fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel(data.x_label or "index", fontsize=9)
    return fig


@dataclass(frozen=True)
class ScatterPoint:
    x: float
    y: float
    feasible: bool


def draw_pareto(points: Sequence[ScatterPoint], front: Sequence[tuple[float, float]], x_label: str, y_label: str,
                title: str, path: Path, option: str = "--plot") -> None:
    """Feasible and rejected configurations as dots, the Pareto front as a line, to a PNG."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for feasible, colour, label in ((False, "0.7", "rejected"), (True, "tab:blue", "feasible")):
        chosen = [p for p in points if p.feasible is feasible]
        ax.scatter([p.x for p in chosen], [p.y for p in chosen], c=colour, label=label, s=24)
    if front:
        ax.plot([x for x, _ in front], [y for _, y in front], "r-o", label="Pareto front", ms=4)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    write_bytes(buffer.getvalue(), path, option)
