"""Compare checkpoint save designs on one scenario: each design's run, its planning metrics under a
failure model, and the timeline of one checkpoint interval (the data behind `iowatt designs` and its
figure; drawing is the CLI's).

The scenario is run once per design (`workload.save.mode`); a scenario without a stage runs the
tiered design with the host-memory stage.  The timeline is the run's last checkpoint (the steady
state): the compute before it, the stall (waiting for the previous checkpoint's buffers, then the
copy or the save), training resumed, and the background work on storage -- the write and its
page-cache writeback (blocking, async), the stage write, its flush and the drain (tiered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatt.models import goodput as gp
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.plan_costs import derived_metrics
from iowatt.scenarios.run import run_scenario

MODES = ("blocking", "async", "tiered")
# columns of the comparison: the run's own metrics, then the planner's under the failure model
SUMMARY = (
    "checkpoint_stall_last_seconds", "checkpoint_durable_after_last_seconds", "checkpoint_staged_after_last_seconds",
    "restore_durable_seconds", "restore_local_seconds", "checkpoint_energy_J", "tier_durable_energy_per_checkpoint_J",
    "tier_stage_energy_per_checkpoint_J", "checkpoint_size_GB", "tier_host_memory_bytes_total_GB", "tier_stage_bytes_written_total_GB",
    "tier_durable_bytes_written_total_GB",
    "checkpoint_interval_seconds", "goodput", "training_time_lost_per_hour_seconds", "system_energy_per_useful_hour_kWh",
    "cost_usd", "endurance_years",
)


@dataclass(frozen=True)
class Segment:
    """One bar of the timeline: `lane` (training or storage), `phase`, seconds from the checkpoint's start."""

    lane: str
    phase: str
    start_s: float
    end_s: float


@dataclass
class DesignRun:
    mode: str
    metrics: dict[str, Any]
    segments: list[Segment] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"design": self.mode, **{k: self.metrics.get(k) for k in SUMMARY}}


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def timeline(marks: dict[str, Any], interval: float) -> list[Segment]:
    """One checkpoint interval from a run's checkpoint instants (detail `checkpoints`), relative to its start."""
    t0 = float(marks["start_s"])

    def seg(lane: str, phase: str, a: float | None, b: float | None) -> list[Segment]:
        return [Segment(lane, phase, a - t0, b - t0)] if _finite(a) and _finite(b) and b > a else []  # type: ignore[operator]

    stall_end, snapshot = marks["stall_end_s"], marks["snapshot_start_s"]
    written, staged, durable = marks["written_s"], marks["staged_s"], marks["durable_s"]
    out = seg("training", "compute", marks["compute_start_s"], t0)
    out += seg("training", "wait", t0, snapshot) + seg("training", "stall", snapshot, stall_end)
    out += seg("training", "compute", stall_end, stall_end + interval)
    if not _finite(written) and not _finite(marks["drain_start_s"]):  # blocking: the page cache drains after the save
        return out + seg("storage", "writeback", stall_end, durable)
    if _finite(staged):  # tiered on drives: stage write, flush, drain
        return out + seg("storage", "stage", stall_end, written) + seg("storage", "flush", written, staged) + \
            seg("storage", "drain", marks["drain_start_s"], marks["drain_end_s"])
    if _finite(marks["drain_start_s"]):  # tiered in host memory: the drain writes the host copy
        return out + seg("storage", "drain", marks["drain_start_s"], durable)
    return out + seg("storage", "write", stall_end, written) + seg("storage", "writeback", written, durable)


def compare(source: str | Path | dict[str, Any], overrides: list[str], modes: tuple[str, ...] = MODES,
            failure: gp.FailureModel | None = None, interval: float | str | None = None) -> list[DesignRun]:
    """Run the scenario once per design; each with its metrics, the planner's under `failure`, and its timeline."""
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ScenarioError(f"--modes: expected some of {', '.join(MODES)}, found {', '.join(unknown) or 'none'}")
    for assignment in overrides:
        if assignment.partition("=")[0].strip() in ("workload.save.mode", "workload.save", "workload"):
            # each design sets the mode itself: a --set of it would be replaced (or, for the whole section, fought over)
            raise ScenarioError(f"--set {assignment}: the save mode of each design comes from --modes (expected some of "
                                f"{', '.join(MODES)} there), not from --set")
    out = []
    for mode in modes:
        scenario = load(source, [*overrides, f"workload.save.mode={mode}"])
        doc, _sim = run_scenario(scenario)
        metrics = dict(doc["metrics"])
        resolved = scenario.model_dump(mode="json")
        metrics.update(derived_metrics(metrics, resolved, failure=failure, interval=interval if failure or interval else None))
        marks = doc["checkpoint"]["checkpoints"][-1]
        out.append(DesignRun(mode, metrics, timeline(marks, float(doc["checkpoint"]["interval_seconds"]))))
    return out
