"""The `trace` figure of a study: list-valued metrics against their index (every checkpoint of a fill study).

Metrics on the `right` axis share the panel of the left ones (e.g. each checkpoint's write amplification beside
its time).  A published figure with a `span` is the mean of a trace over that stretch of the x axis (a pass's
mean checkpoint time): it is compared with the mean of the predicted trace over the same stretch and drawn as a
dashed segment over it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Protocol

# The study's types (scenarios.reproduce) import this module, so it sees them through protocols of what it reads.


class TraceSection(Protocol):
    trace_span: float | None


class TraceCell(Protocol):
    trace: list[float] | None
    span: float | None


class TraceResult(Protocol):
    @property
    def section(self) -> TraceSection: ...

    @property
    def values(self) -> Mapping[tuple[str, str], TraceCell]: ...


class SpanClaim(Protocol):
    run: str
    metric: str
    span: tuple[float, float] | None


def trace_positions(section: TraceSection, n: int, span: float | None = None) -> list[float]:
    """x of each of n trace points: the i-th at span x (i + 1) / n, the span being the run's own (`span`: e.g. its simulated
    seconds, from trace_span_metric) or the section's; without one, the index.  With a span, runs of different lengths share
    one axis (3 passes of 9 or 99 checkpoints; power bins of runs that last different times)."""
    span = span or section.trace_span
    return [span * (i + 1) / n for i in range(n)] if span else [float(i + 1) for i in range(n)]


def span_mean(section: TraceSection, trace: list[float], span: tuple[float, float], run_span: float | None = None) -> float | None:
    """Mean of the trace points with span[0] < x <= span[1]."""
    xs = trace_positions(section, len(trace), run_span)
    inside = [v for x, v in zip(xs, trace, strict=True) if span[0] < x <= span[1] + 1e-9]
    return statistics.fmean(inside) if inside else None


def comparable_on_trace(result: TraceResult, p: SpanClaim) -> float | None:
    """The prediction a published span figure compares with (None: not a span figure or no trace)."""
    cell = result.values[(p.run, p.metric)]
    if p.span is None or cell.trace is None:
        return None
    return span_mean(result.section, cell.trace, p.span, cell.span)
