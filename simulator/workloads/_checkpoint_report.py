"""What a checkpoint design run reports: each checkpoint's instants, the stall and durable-after
times, bytes and energy per tier, and the training power the goodput planner charges.

Energy.  The training power is the system's power while every GPU computes and no checkpoint
I/O runs: every meter's idle (and state) power plus each GPU's active-minus-idle power.  A
checkpoint's energy is what the run spends beyond that: all energy up to the moment the last
checkpoint is durable, minus the training power x the seconds the GPUs computed, per checkpoint
(the stall at its own power, plus the background writes' power on top of training).  A tier's
energy per checkpoint is its meters' energy above their idle power (drives; storage servers for
system.storage), per checkpoint.  Host memory has no meter of its own (its power is in the
server's base power): its tier reports bytes only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iowatt.simulator.flows import Meter
from iowatt.simulator.storage import Volume
from iowatt.simulator.workloads import RunContext, WorkloadOutcome
from iowatt.simulator.workloads._checkpoint_hosts import HostLayout
from iowatt.simulator.workloads._checkpoint_params import CheckpointParams
from iowatt.simulator.workloads._checkpoint_save import ShardPlan


@dataclass
class Marks:
    """One checkpoint's instants, seconds since the run began, job-wide (the last rank, or the first for starts)."""

    number: int
    compute_start: float              # the interval of compute before it began
    start: float                      # compute ended: the save begins
    snapshot_start: float = -math.inf  # the last rank had its buffer back and began its copy or save
    stall_end: float = math.nan       # training resumed
    written: float = -math.inf        # async: the last write returned; tiered: the last stage write returned
    staged: float = -math.inf         # tiered on drives: the last stage byte on the stage drives
    drain_start: float = math.inf     # tiered: the first drain began
    drain_end: float = -math.inf      # tiered: the last drain ended
    released: float = -math.inf       # the last rank's host buffer was free for the next checkpoint
    durable: float = -math.inf        # the last byte on system.storage

    def release(self, now: float) -> None:
        self.released = max(self.released, now)

    @property
    def stall_seconds(self) -> float:
        return self.stall_end - self.start

    @property
    def durable_after_seconds(self) -> float:
        return self.durable - self.start

    @property
    def period_min_seconds(self) -> float:
        """The shortest compute + stall period at which the next checkpoint would not wait: its buffer must be
        free again, and (tiered) one rank's drains run one at a time."""
        busy = self.released - self.start
        if math.isfinite(self.drain_start):
            busy = max(busy, self.drain_end - self.drain_start)
        return max(busy, self.stall_seconds)

    def as_dict(self) -> dict[str, float | int | None]:
        """The instants as `NAME_s`, None where the design has no such instant."""
        instants = {
            "compute_start": self.compute_start, "start": self.start, "snapshot_start": self.snapshot_start,
            "stall_end": self.stall_end, "written": self.written, "staged": self.staged, "drain_start": self.drain_start,
            "drain_end": self.drain_end, "released": self.released, "durable": self.durable,
        }
        out: dict[str, float | int | None] = {"number": self.number}
        out.update({f"{name}_s": value if math.isfinite(value) else None for name, value in instants.items()})
        return out


@dataclass
class Tiers:
    """The meters of each tier and the power of the system while it trains with no checkpoint I/O."""

    durable: list[Meter]
    stage: list[Meter]
    training_power_W: float
    energy_at_durable_J: dict[str, float] = field(default_factory=dict)  # per tier and "system", when the last checkpoint was durable
    seconds_at_durable: float = 0.0

    @classmethod
    def measure(cls, ctx: RunContext, stages: list[Volume]) -> Tiers:
        engine, system = ctx.engine, ctx.system
        durable = [d.meter for d in system.volume.unique_drives] + [m for m in engine.meters.values() if m.group == "storage_server"]
        stage = [d.meter for v in stages for d in v.unique_drives]
        gpus = sum(g.spec.active_W - g.spec.idle_W for g in system.gpus)
        training = sum(m.idle_W + m.extra_W for m in engine.meters.values()) + gpus
        return cls(durable, stage, training)

    def record(self, ctx: RunContext) -> None:
        """Read every meter now (the engine settles first): the saves' energy, before any restore."""
        ctx.engine.settle()
        self.seconds_at_durable = ctx.env.now
        self.energy_at_durable_J = {
            "durable": sum(m.energy_J for m in self.durable),
            "stage": sum(m.energy_J for m in self.stage),
            "system": sum(m.energy_J for m in ctx.engine.meters.values()),
        }

    def above_idle_J(self, tier: str) -> float:
        meters = self.durable if tier == "durable" else self.stage
        idle = sum(m.idle_W for m in meters) * self.seconds_at_durable
        return max(0.0, self.energy_at_durable_J[tier] - idle)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _time_metrics(marks: list[Marks]) -> dict[str, float]:
    stalls = [m.stall_seconds for m in marks]
    durable = [m.durable_after_seconds for m in marks]
    out = {
        "save_checkpoint_duration_mean_seconds": _mean(stalls),  # the save call as training sees it
        "checkpoint_stall_mean_seconds": _mean(stalls),
        "checkpoint_stall_max_seconds": max(stalls),
        "checkpoint_stall_last_seconds": stalls[-1],
        "checkpoint_durable_after_mean_seconds": _mean(durable),
        "checkpoint_durable_after_max_seconds": max(durable),
        "checkpoint_durable_after_last_seconds": durable[-1],
        "checkpoint_period_min_seconds": marks[-1].period_min_seconds,
    }
    staged = [m.staged - m.start for m in marks if math.isfinite(m.staged)]
    if staged:
        out["checkpoint_staged_after_mean_seconds"] = _mean(staged)
        out["checkpoint_staged_after_last_seconds"] = staged[-1]
    return out


def _drive_bytes(volumes: list[Volume]) -> float:
    """Bytes the drives themselves received (every drive of a lumped volume counted), from their own counters."""
    total = 0.0
    for volume in volumes:
        for drive in volume.drives:
            total += float(drive.report().get("host_bytes_written", 0.0))
    return total


def outcome(ctx: RunContext, params: CheckpointParams, plan: ShardPlan, layout: HostLayout, tiers: Tiers, marks: list[Marks],
            compute_seconds: float, loader_delays: list[float], restores: dict[str, float], stages: list[Volume]) -> WorkloadOutcome:
    design = params.save
    assert design is not None
    count = len(marks)
    checkpoint_bytes = plan.size * count
    staged_bytes = checkpoint_bytes if stages else 0.0
    metrics = {
        "checkpoint_size_GB": plan.size / 1e9,
        "checkpoint_count": float(count),
        "checkpoint_writer_ranks_count": float(plan.writers),
        "client_hosts_count": float(layout.hosts),
        "ranks_per_host_count": float(layout.ranks_per_host),
        **_time_metrics(marks),
        "bytes_written_total_GB": checkpoint_bytes / 1e9,
        "tier_host_memory_bytes_total_GB": (checkpoint_bytes if design.mode != "blocking" else 0.0) / 1e9,
        "tier_stage_bytes_written_total_GB": staged_bytes / 1e9,
        "tier_durable_bytes_written_total_GB": checkpoint_bytes / 1e9,
        "tier_stage_drive_bytes_written_total_GB": _drive_bytes(stages) / 1e9,
        "tier_durable_drive_bytes_written_total_GB": _drive_bytes([ctx.system.volume]) / 1e9,
        "tier_durable_energy_per_checkpoint_J": tiers.above_idle_J("durable") / count,
        "tier_stage_energy_per_checkpoint_J": tiers.above_idle_J("stage") / count,
        "training_power_W": tiers.training_power_W,
        "checkpoint_energy_J": (tiers.energy_at_durable_J["system"] - tiers.training_power_W * compute_seconds) / count,
    }
    if design.loader_rate > 0.0 and loader_delays:
        metrics["loader_delay_mean_seconds"] = _mean(loader_delays)
    if restores:
        for tier, seconds in restores.items():
            metrics[f"restore_{tier}_seconds"] = seconds
        chosen = restores[design.restore_from]
        metrics["load_checkpoint_duration_mean_seconds"] = chosen
        metrics["load_checkpoint_io_mean_GB_per_second"] = plan.size / chosen / 1e9
    detail: dict[str, object] = {
        "save_mode": design.mode,
        "checkpoints": [m.as_dict() for m in marks],
        "interval_seconds": params.interval,
        "shard_GB": [s / 1e9 for s in plan.shards],
        "dirty_budget_GB": plan.dirty_budget / 1e9,
        "resident_memory_GB": plan.resident / 1e9,
        "weights_GB": sum(w for w, _o in plan.parts) / 1e9,
        "optimizer_GB": sum(o for _w, o in plan.parts) / 1e9,
    }
    drive_reports = ctx.system.volume.report()["drives"]
    if drive_reports:
        detail["drives"] = drive_reports
    return WorkloadOutcome(metrics, detail)
