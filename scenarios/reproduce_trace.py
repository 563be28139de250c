"""The `trace` figure of a study: list-valued metrics against their index (every checkpoint of a fill study).

Metrics on the `right` axis share the panel of the left ones (e.g. each checkpoint's write amplification beside
its time).  A published figure with a `span` is the mean of a trace over that stretch of the x axis (a pass's
mean checkpoint time): it is compared with the mean of the predicted trace over the same stretch and drawn as a
dashed segment over it.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iowatt.scenarios.reproduce import Published, Section, SectionResult


def trace_positions(section: Section, n: int) -> list[float]:
    """x of each of n trace points: with a span, runs of different lengths share one axis (3 passes of 9 or 99)."""
    return [section.trace_span * (i + 1) / n for i in range(n)] if section.trace_span else [float(i + 1) for i in range(n)]


def span_mean(section: Section, trace: list[float], span: tuple[float, float]) -> float | None:
    """Mean of the trace points with span[0] < x <= span[1]."""
    xs = trace_positions(section, len(trace))
    inside = [v for x, v in zip(xs, trace, strict=True) if span[0] < x <= span[1] + 1e-9]
    return statistics.fmean(inside) if inside else None


def comparable_on_trace(result: SectionResult, p: Published) -> float | None:
    """The prediction a published span figure compares with (None: not a span figure or no trace)."""
    cell = result.values[(p.run, p.metric)]
    if p.span is None or cell.trace is None:
        return None
    return span_mean(result.section, cell.trace, p.span)


def draw_trace(result: SectionResult, plt: Any) -> Any:
    """One panel per left-axis metric, one line per run; right-axis metrics on a twin axis, dashed; published
    span figures as dashed black-edged segments in the run's colour."""
    section = result.section
    left = [m for m in section.metrics if m.axis == "left"]
    right = [m for m in section.metrics if m.axis == "right"]
    fig, axes = plt.subplots(1, len(left), figsize=(8.0 * len(left), 5.2), squeeze=False)
    colours = {r.label: f"C{i}" for i, r in enumerate(section.runs)}
    for ax, m in zip(axes[0], left, strict=True):
        for r in section.runs:
            trace = result.values[(r.label, m.label)].trace or []
            ax.plot(trace_positions(section, len(trace)), trace, marker=".", markersize=3, linewidth=1, color=colours[r.label],
                    label=f"{r.label}: {m.label}")
        labelled = False
        for c in result.claims:
            p = c.published
            if p.metric != m.label or p.span is None:
                continue
            ax.plot(list(p.span), [p.value, p.value], linestyle="--", linewidth=2, color=colours[p.run],
                    label=None if labelled else "published mean over the stretch")
            labelled = True
        ax.set_xlabel(section.x_label or "index", fontsize=8)
        ax.set_ylabel(m.label, fontsize=8)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
        ax.grid(alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if right:
            twin = ax.twinx()
            for rm, style in zip(right, [":", "-.", (0, (1, 3)), (0, (5, 5))] * len(right), strict=False):
                for r in section.runs:
                    trace = result.values[(r.label, rm.label)].trace or []
                    twin.plot(trace_positions(section, len(trace)), trace, linestyle=style, linewidth=1.3, color=colours[r.label],
                              label=f"{r.label}: {rm.label}")
            twin.set_ylabel(", ".join(rm.label for rm in right), fontsize=8)
            high = twin.get_ylim()[1]
            twin.set_ylim(0, max(high * 1.15, 2.0))
            extra_h, extra_l = twin.get_legend_handles_labels()
            handles, labels = handles + extra_h, labels + extra_l
        ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return fig
