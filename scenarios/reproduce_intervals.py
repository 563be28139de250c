"""`reproduce --uncertainty`: each predicted cell of a study as an interval (scenarios.uncertainty).

Every distinct run the studies need is sampled once, keeping the result paths its cells read; a cell's interval is its
value (the metric x scale, divided by `divide_by` where the section says so) over the samples.  Trace sections (a
series per run) are drawn as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from iowatt.scenarios.loader import load
from iowatt.scenarios.reproduce import MetricSpec, Source, Study, _request, _source
from iowatt.scenarios.uncertainty import Outputs, Settings, extract_outputs, propagate

CellKey = tuple[str, str, str, str]  # (study id, section title, run label, metric label)


@dataclass(frozen=True)
class CellInterval:
    low: float
    median: float
    high: float


def _value(spec: MetricSpec, path: str) -> Callable[[list[Outputs]], float]:
    def of(outputs: list[Outputs]) -> float:
        value = outputs[0][path] * spec.scale
        return value / outputs[0][spec.divide_by] if spec.divide_by is not None else value

    return of


def cell_intervals(studies: list[tuple[Study, Path]], settings: Settings, executor: Executor,
                   on_run: Callable[[bool], None] | None = None) -> dict[CellKey, CellInterval]:
    """The interval of every non-trace cell whose run could be sampled."""
    wanted: dict[str, tuple[Source, list[str], dict[str, None]]] = {}
    cells: list[tuple[CellKey, str, Callable[[list[Outputs]], float]]] = []
    for study, path in studies:
        for section in study.sections:
            if section.figure == "trace":
                continue
            for run in section.runs:
                scenario = _source(run, path.parent)
                key, assignments = _request(scenario, run.set)
                paths = wanted.setdefault(key, (scenario, assignments, {}))[2]
                for m in section.metrics:
                    metric = run.metrics.get(m.label, m.metric)
                    paths.update({metric: None, **({m.divide_by: None} if m.divide_by else {})})
                    cells.append(((study.id, section.title, run.label, m.label), key, _value(m, metric)))
    propagated = {}
    for key, (scenario, assignments, paths) in wanted.items():
        try:
            loaded = load(scenario, assignments)
            propagated[key] = propagate([loaded], settings, executor, paths=[tuple(paths)])
        except Exception:  # a run that cannot be loaded or sampled keeps its point value (reported by the plain run)
            if on_run is not None:
                on_run(True)
            continue
        if on_run is not None:
            on_run(False)
    out: dict[CellKey, CellInterval] = {}
    for cell, key, of in cells:
        result = propagated.get(key)
        if result is None:
            continue
        try:
            point = of([extract_outputs(result.baseline[0], tuple(wanted[key][2]))])
        except (KeyError, ZeroDivisionError):
            continue
        spread = result.interval(of, point)
        out[cell] = CellInterval(spread.low, spread.median, spread.high)
    return out
