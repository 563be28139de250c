"""Checkpointing: save (and optionally restore) a model's state through the filesystem.

Shards.  From a model description (parameters, bytes per parameter of weights
and of optimizer state) and its parallelism (TP x PP x DP, ZeRO stage), each
rank writes: weights / (TP x PP) if it is data-parallel rank 0 (replicas hold
identical weights, one writes them; ZeRO 3 partitions them over DP too),
plus optimizer state / (TP x PP) divided by DP when ZeRO >= 1 shards it
across data-parallel ranks (otherwise DP rank 0 writes it).  This is how Megatron/DeepSpeed lay out checkpoint files and
how DLIO's checkpoint emulation sizes them.  A plain `size` splits evenly
over `ranks`; `size` with `parameters` makes the weights parameters x
weight_bytes_per_param and the rest optimizer state (a study that states
its checkpoint size but not its optimizer layout).

Save.  Each rank runs its save in one thread (torch.save), part by part:
first the optimizer state, then the model weights (DLIO's order in 2024).
A part's bytes cost that rank CPU time in series -- tensor creation when the
benchmark makes the tensors inside the timed save (`regenerate`), then
serialization (CRC-32 + copy into the page cache) -- on a per-rank core
constraint, so eight writers get at most eight cores whatever the drive can
take (models.host_io).  Each byte also crosses its GPU's device-to-host link
when the state is copied from the GPU (copy_from_gpu), host DRAM, and the
volume's write path.  With `io_path: buffered` (torch.save's default) each
part's first dirty-budget bytes land in the page cache while the drive
writes (the rank's core is shared by both, so the cache fills at host minus
drive rate, the fluid tank of models.host_io.phased_write_seconds); they are
written back later by a low-weight flow that takes the drive's spare rate,
and `fsync` waits for it.  The dirty budget is Linux's setpoint over the
memory the benchmark does not hold (models.host_io.dirty_buffer_bytes); a
rank whose earlier dirty bytes are still cached gets no new budget.  All
ranks start together; the checkpoint ends when the last rank's save
returns, as DLIO times it.

Passes.  Checkpoints keep landing on the drive until the next one would pass
`fill_target` of its capacity (or `checkpoints_per_pass` are stored); then
each new checkpoint replaces the one a pass before it, as in StorageReview's
fill study.  Every checkpoint is a file announced to the volume
(Volume.store): the filesystem deletes the one it replaces (discarding it
with `trim`, or as its own policy says) and places the new one, and each
drive's FTL works out what it costs (simulator/storage/ssd.py, models.ftl);
per pass the result gives the drives' write amplification, FTL-valid share
at the start, NAND bytes and endurance used.

Restore.  With `restore: true`, after the saves every rank reads its shard of
the last checkpoint back (host-to-device copy when copy_from_gpu).

MLPerf Storage v2.0/v3.0.  With `mlperf: {...}` the saves and reads follow the
benchmark's procedure and scoring instead (simulator/workloads/_mlperf_checkpoint.py).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Literal

import simpy
from iowatt.models import host_io
from iowatt.models.uncertainty import assumed_field, calibrated_field
from iowatt.models.units import Bytes, Fraction, Seconds
from iowatt.simulator.storage import Access, FileWrite, Usage
from iowatt.simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads._checkpoint_design import SaveDesign
from iowatt.simulator.workloads._fill_passes import drive_figures
from iowatt.simulator.workloads._mlperf_checkpoint import MlperfProcedure, run_procedure
from pydantic import BaseModel, ConfigDict, Field, model_validator

# MLPerf Storage checkpointing table: parallelism per model, and parameters
# derived from its model size column at fp16 (2 B/param): model_GB there is
# GiB (755 "GB" for 405B = 405e9 x 2 B / 2^30), so parameters = model_GB x
# 2^30 / 2; fp32 Adam state at 12 B/param then reproduces its optimizer column
# (../shared/reference/published_results.yaml dlio_workloads.llm_checkpoint).
_GiB = 2**30
MODEL_PRESETS = {
    "llama3_8b": {"parameters": 15 * _GiB / 2, "tp": 1, "pp": 1, "dp": 8, "zero_stage": 3},
    "llama3_70b": {"parameters": 130 * _GiB / 2, "tp": 8, "pp": 1, "dp": 8, "zero_stage": 3},
    "llama3_405b": {"parameters": 755 * _GiB / 2, "tp": 8, "pp": 32, "dp": 2, "zero_stage": 1},
    "llama3_1t": {"parameters": 2571 * _GiB / 2, "tp": 8, "pp": 64, "dp": 2, "zero_stage": 1},
}


class CheckpointParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["checkpoint"] = "checkpoint"
    model: Literal["llama3_8b", "llama3_70b", "llama3_405b", "llama3_1t"] | None = Field(
        default=None, description="MLPerf Storage model preset: parameters and parallelism (each can be overridden)"
    )
    size: Bytes | None = Field(default=None, gt=0, description="bytes per checkpoint, all ranks together (overrides the model)")
    parameters: float | None = Field(default=None, gt=0, description="model parameters, e.g. 405e9")
    weight_bytes_per_param: float = Field(default=2.0, gt=0, description="2 for fp16/bf16 weights")
    optimizer_bytes_per_param: float = Field(default=12.0, ge=0, description="12 for Adam: fp32 master + two moments")
    tp: int | None = Field(default=None, ge=1, description="tensor parallel degree")
    pp: int | None = Field(default=None, ge=1, description="pipeline parallel degree")
    dp: int | None = Field(default=None, ge=1, description="data parallel degree")
    zero_stage: int | None = Field(default=None, ge=0, le=3, description="ZeRO stage; >= 1 shards optimizer state over DP")
    ranks: int = Field(default=8, ge=1, le=100_000, description="writers when no parallelism is given")
    count: int = Field(default=1, ge=1, le=100_000, description="checkpoints to save (ignored when `passes` is set)")
    passes: int | None = Field(default=None, ge=1, le=100, description="fill passes: write until fill_target, then overwrite")
    fill_target: Fraction = Field(default=0.9, gt=0, le=1, description="share of capacity a pass fills")
    checkpoints_per_pass: int | None = Field(default=None, ge=1, description="fix the checkpoints per pass instead of fill_target")
    interval: Seconds = Field(default=0.0, ge=0, description="training compute time before each checkpoint")
    block_size: Bytes = Field(default=2**20, ge=512, description="write request size")
    copy_from_gpu: bool = Field(default=False, description="stage the state from GPU memory (DLIO emulation does not)")
    fsync_latency: Seconds = Field(default=0.0, ge=0, description="time to make a rank's file durable after its last write")
    fsync: bool = Field(
        default=False,
        description="each rank waits until its dirty pages are on the drive before its save returns "
        "(DLIO's checkpoint_fsync; DLIO before 2025 had none: torch.save returns from the page cache)",
    )
    io_path: Literal["buffered", "direct"] = Field(
        default="buffered", description="buffered: through the page cache (torch.save); direct: O_DIRECT, nothing is left dirty"
    )
    regenerate: Literal["none", "weights", "all"] = Field(
        default="none",
        description="state the benchmark creates inside the timed save: 'weights' for DLIO's 2024 transformer "
        "checkpointing (layer tensors made in checkpoint() when ZeRO < 3), 'none' when tensors are made once before",
    )
    generate_GBps_per_rank: float = calibrated_field(
        host_io.DLIO_GENERATE_GBps_PER_CORE, host_io.PROVENANCE["DLIO_GENERATE_GBps_PER_CORE"], gt=0,
        description="GB/s one rank creates tensors at on a reference core (torch.randint int8, serial CPU kernel); "
        "calibrated to StorageReview's D7-PS1010 pass 1 (464 s), see models.host_io",
    )
    save_GBps_per_rank: float | None = Field(
        default=None, gt=0,
        description="GB/s one rank serializes at on a reference core (torch.save: CRC-32 + copy into the page cache); "
        "default: from the host CPU's page-cache write rate (models.host_io.torch_save_GBps_per_core: 2.0 on the "
        "reference core, less on a host whose page faults are slow)",
    )
    dirty_ratio: Fraction = assumed_field(
        host_io.DEFAULT_DIRTY_RATIO, low=0.10, high=0.40, shape="log-uniform", gt=0, le=1,
        description="Linux vm.dirty_ratio (default 20 %)",
        note="the kernel's default (Documentation/admin-guide/sysctl/vm.rst): a study that does not state its host's "
        "sysctl settings is taken to run the default",
        range_note="low: 10 %, the tuning guides that cut writeback stalls (vm.dirty_ratio = 10 with background 5); "
        "high: 40 %, Red Hat's tuned throughput-performance profile (RHEL Performance Tuning Guide 7.2)")
    dirty_background_ratio: Fraction = assumed_field(
        host_io.DEFAULT_DIRTY_BACKGROUND_RATIO, low=0.05, high=0.20, shape="log-uniform", ge=0, le=1,
        description="Linux vm.dirty_background_ratio (default 10 %)",
        note="the kernel's default (Documentation/admin-guide/sysctl/vm.rst), as dirty_ratio",
        range_note="low: 5 %, the same latency-minded guides (background 5 with dirty_ratio 10); high: 20 %, guides "
        "for bursty writes of data that may be lost raise it with dirty_ratio (to 50/80 at the extreme); at or above "
        "dirty_ratio the kernel halves the limit instead, so more adds nothing")
    resident_memory: Bytes | None = Field(
        default=None, ge=0,
        description="DRAM the benchmark's processes hold (not page cache); default: the state kept between saves "
        "(all of it, or the optimizer state when the weights are regenerated), at most the installed memory",
    )
    trim: bool = Field(
        default=False,
        description="discard each replaced checkpoint's blocks when it is deleted (fstrim of its files); otherwise the "
        "filesystem's discard policy (storage.discard) decides",
    )
    restore: bool = Field(default=False, description="read the last checkpoint back after saving")
    mlperf: MlperfProcedure | None = Field(
        default=None, description="run MLPerf Storage v2.0/v3.0 checkpointing: N writes with fsync, N reads, scoring over ranks and runs"
    )
    save: SaveDesign | None = Field(
        default=None, description="the save design of a training (blocking, async, tiered; many hosts): simulator/workloads/_checkpoint_modes.py"
    )

    @model_validator(mode="after")
    def _sized(self) -> CheckpointParams:
        if self.size is None and self.model is None and self.parameters is None:
            raise ValueError("give the checkpoint `size` (e.g. '415 GB'), `parameters`, or a `model` preset")
        if self.mlperf is not None and (self.passes is not None or self.restore):
            raise ValueError("mlperf: the MLPerf procedure sets its own writes and reads; drop `passes` and `restore`")
        return self

    def _setting(self, key: str, default: float) -> float:
        value = getattr(self, key)
        if value is not None:
            return value
        if self.model is not None:
            return MODEL_PRESETS[self.model][key]
        return default

    def parallelism(self) -> dict[str, int]:
        """tp, pp, dp and ZeRO stage in effect: as given, else the model preset's, else 1, 1, 1 and 0."""
        return {k: int(self._setting(k, default)) for k, default in (("tp", 1), ("pp", 1), ("dp", 1), ("zero_stage", 0))}

    def shard_parts(self) -> list[tuple[float, float]]:
        """(weight bytes, optimizer bytes) each rank writes per checkpoint."""
        parallel = any(getattr(self, k) is not None for k in ("tp", "pp", "dp")) or (
            self.model is not None and self.size is None
        )
        per_param = self.weight_bytes_per_param + self.optimizer_bytes_per_param
        if self.size is not None and self.parameters is not None:
            # a stated size and parameter count: the weights are parameters x bytes each, the rest is optimizer state
            weights = self.parameters * self.weight_bytes_per_param
            if weights > self.size:
                raise ValueError(
                    f"parameters: {self.parameters:.4g} x {self.weight_bytes_per_param} B of weights = {weights / 1e9:.0f} GB "
                    f"exceeds the checkpoint size {self.size / 1e9:.0f} GB"
                )
            optimizer = self.size - weights
        elif self.size is not None:
            # a stated size: weights:optimizer split by the byte counts per parameter
            weights = self.size * self.weight_bytes_per_param / per_param
            optimizer = self.size - weights
        else:
            params = self._setting("parameters", 0.0)
            weights = params * self.weight_bytes_per_param
            optimizer = params * self.optimizer_bytes_per_param
        if self.size is not None and not parallel:
            return [(weights / self.ranks, optimizer / self.ranks)] * self.ranks
        tp, pp, dp = (int(self._setting(k, 1)) for k in ("tp", "pp", "dp"))
        zero = int(self._setting("zero_stage", 0))
        model_parallel = tp * pp
        parts = []
        for d in range(dp):
            for _ in range(model_parallel):
                if zero >= 3:  # ZeRO 3 partitions the parameters too: every data-parallel rank writes its slice
                    w = weights / model_parallel / dp
                else:
                    w = weights / model_parallel if d == 0 else 0.0
                if zero >= 1:
                    o = optimizer / model_parallel / dp
                else:
                    o = optimizer / model_parallel if d == 0 else 0.0
                parts.append((w, o))
        return parts

    def shards(self) -> list[float]:
        """Bytes each rank writes per checkpoint."""
        return [w + o for w, o in self.shard_parts()]

    @property
    def size_bytes(self) -> float:
        return sum(self.shards())


# max-min weight of a writeback flow relative to a writer: small, so a writer below its dirty budget is not
# slowed by the flusher (its bytes land in the page cache); the flusher gets the drive's spare rate
WRITEBACK_WEIGHT = 1e-3


def _checkpoints_per_pass(params: CheckpointParams, capacity: float, size: float) -> int:
    if params.checkpoints_per_pass is not None:
        return params.checkpoints_per_pass
    fits = math.floor(params.fill_target * capacity / size)
    if fits < 1:
        raise WorkloadConfigError(
            f"workload.fill_target: one checkpoint of {size / 1e9:.0f} GB does not fit in "
            f"{params.fill_target:.0%} of the volume's {capacity / 1e12:.2f} TB"
        )
    return fits


def _resident_bytes(params: CheckpointParams, parts: list[tuple[float, float]], memory: float) -> float:
    if params.resident_memory is not None:
        return params.resident_memory
    kept = {"none": sum(w + o for w, o in parts), "weights": sum(o for _w, o in parts), "all": 0.0}[params.regenerate]
    return min(kept, memory)


@dataclass(frozen=True)
class _ShardPlan:
    """What each rank writes and how the checkpoints fill the volume (no simulation state)."""

    parts: list[tuple[float, float]]  # (weight bytes, optimizer bytes) per rank
    shards: list[float]               # bytes each rank writes per checkpoint
    size: float                       # bytes of one checkpoint
    per_pass: int                     # checkpoint slots before the oldest is overwritten
    total: int                        # checkpoints saved
    writers: int                      # ranks that write something
    resident: float                   # bytes of host memory the benchmark holds
    dirty_budget: float               # page-cache bytes all ranks may dirty before writeback throttles them

    @classmethod
    def build(cls, ctx: RunContext, params: CheckpointParams) -> _ShardPlan:
        system = ctx.system
        if params.copy_from_gpu and not system.gpus:
            raise WorkloadConfigError("workload.copy_from_gpu: expected GPUs in system.gpus, found gpus.count = 0")
        try:
            parts = params.shard_parts()
        except ValueError as error:
            raise WorkloadConfigError(f"workload.{error}") from None
        shards = [w + o for w, o in parts]
        size = sum(shards)
        if params.passes is not None:
            per_pass = _checkpoints_per_pass(params, system.volume.capacity_bytes, size)
            total = per_pass * params.passes
        else:
            per_pass = params.count
            total = params.count
        memory = system.config.server.memory
        resident = _resident_bytes(params, parts, memory)
        dirty_budget = 0.0
        if params.io_path == "buffered":
            dirty_budget = host_io.dirty_buffer_bytes(memory, resident, params.dirty_ratio, params.dirty_background_ratio)
        writers = sum(1 for s in shards if s > 0)
        return cls(parts, shards, size, per_pass, total, writers, resident, dirty_budget)


class _RankSaver:
    """Each rank's save (optimizer state, then weights, through its core and the page cache) and restore."""

    def __init__(self, ctx: RunContext, params: CheckpointParams, plan: _ShardPlan) -> None:
        self.ctx, self.params, self.plan = ctx, params, plan
        system, engine = ctx.system, ctx.engine
        # every rank streams its own file: sequential requests, one outstanding per rank (torch.save / torch.load)
        self.read_usage = system.volume.usage(Access("read", params.block_size, "seq", max(1, plan.writers)))
        # host side (models.host_io): reference-core-seconds per byte of each part, one core per rank
        self.core_speed = system.host.cpu_spec.core_speed
        save_GBps = params.save_GBps_per_rank or host_io.torch_save_GBps_per_core(system.host.cpu_spec)
        save_cost = 1.0 / (save_GBps * 1e9)
        made_cost = host_io.serial_seconds_per_byte(params.generate_GBps_per_rank * 1e9, save_GBps * 1e9)
        self.weight_cost = made_cost if params.regenerate in ("weights", "all") else save_cost
        self.optimizer_cost = made_cost if params.regenerate == "all" else save_cost
        self.cores = [engine.constraint(f"ckpt.rank{r}.core", self.core_speed) for r in range(len(plan.parts))]
        self.memory_passes = 3.0 if params.io_path == "buffered" else 2.0  # serializer writes, (page-cache copy), DMA reads
        self.writeback: list[simpy.Event | None] = [None] * len(plan.parts)  # each rank's pending writeback of its last dirty bytes

    def host_usage(self, rank: int, cost: float) -> Usage:
        host, gpus = self.ctx.system.host, self.ctx.system.gpus
        usage = [(self.cores[rank], cost), (host.cpu, cost / self.core_speed), (host.memory, self.memory_passes)]
        if self.params.copy_from_gpu:
            usage.append((gpus[rank % len(gpus)].link_d2h, 1.0))
        return usage

    def _drain(self, rank: int, amount: float, drive: Usage, absorbed: simpy.Event) -> Generator[simpy.Event, object, None]:
        yield absorbed
        # writers fill the page cache at their own pace while it has room; writeback takes what the drive has left
        yield self.ctx.engine.transfer(f"ckpt.rank{rank}.writeback", amount, drive, weight=WRITEBACK_WEIGHT)

    def save(self, rank: int, drive: Usage) -> Generator[simpy.Event, object, None]:
        env, engine, params, plan = self.ctx.env, self.ctx.engine, self.params, self.plan
        part = plan.parts[rank]
        phases = [(a, c) for a, c in ((part[1], self.optimizer_cost), (part[0], self.weight_cost)) if a > 0.0]
        budget = plan.dirty_budget * plan.shards[rank] / plan.size  # this rank's share of the dirty pages
        for amount, cost in phases:
            pending = self.writeback[rank]
            # the page cache has room for `tail` bytes unless this rank's earlier dirty bytes still hold it
            tail = min(budget, amount) if pending is None or pending.processed else 0.0
            flows = [engine.transfer(f"ckpt.rank{rank}", amount - tail, self.host_usage(rank, cost) + drive)] if amount > tail else []
            if tail > 0.0:
                # the tank fills while the drive writes: the rank's core is shared by the bytes that land in the
                # page cache and the bytes the drive takes, so the cache fills at (host - drive) rate, as in the
                # closed form (models.host_io.phased_write_seconds); the cached bytes are written back afterwards
                absorb = engine.start(f"ckpt.rank{rank}.absorb", tail, self.host_usage(rank, cost))
                self.writeback[rank] = env.process(self._drain(rank, tail, drive, absorb.done))
                flows.append(absorb.done)
            if flows:
                yield simpy.AllOf(env, flows)
        last = self.writeback[rank]
        if params.fsync and last is not None and not last.processed:
            yield last
        if params.fsync_latency > 0.0:
            yield env.timeout(params.fsync_latency)

    def load(self, rank: int, amount: float) -> Generator[simpy.Event, object, None]:
        system = self.ctx.system
        usage = [(system.host.memory, 2.0), *self.read_usage]
        if self.params.copy_from_gpu:
            usage.append((system.gpus[rank % len(system.gpus)].link_h2d, 1.0))
        yield self.ctx.engine.transfer(f"ckpt.rank{rank}.load", amount, usage)


@dataclass
class _Timings:
    durations: list[float] = field(default_factory=list)       # each save, seconds
    starts: list[float] = field(default_factory=list)          # each save's start, seconds
    load_durations: list[float] = field(default_factory=list)  # the restore, seconds


def _training(ctx: RunContext, params: CheckpointParams, plan: _ShardPlan, saver: _RankSaver, out: _Timings) -> Generator[simpy.Event, object, None]:
    """Training steps between checkpoints, each checkpoint saved by every writing rank, then the restore."""
    env, engine, system = ctx.env, ctx.engine, ctx.system
    for number in range(plan.total):
        if params.interval > 0.0 and system.gpus:
            compute = [engine.transfer(f"step.{g.name}", params.interval, [(g.compute, 1.0)]) for g in system.gpus]
            yield simpy.AllOf(env, compute)
        elif params.interval > 0.0:
            yield env.timeout(params.interval)
        # the checkpoint of a pass before is replaced: the filesystem deletes it and places this one, and the
        # drives price exactly these bytes (their FTL state as of now)
        replaced = f"ckpt{number - plan.per_pass}" if number >= plan.per_pass else None
        saves = Access("write", params.block_size, "seq", max(1, plan.writers), file=f"ckpt{number}")
        system.volume.store(FileWrite(f"ckpt{number}", replaced, True if params.trim else None), plan.size, saves)
        drive_usage = system.volume.usage(saves)
        start = env.now
        ranks = [env.process(saver.save(r, drive_usage)) for r, amount in enumerate(plan.shards) if amount > 0]
        yield simpy.AllOf(env, ranks)
        out.starts.append(start)
        out.durations.append(env.now - start)
        system.volume.rest()  # the drives wait for the next checkpoint: their power policy may rest them
    if params.restore:
        pending = [w for w in saver.writeback if w is not None]
        if pending:
            yield simpy.AllOf(env, pending)  # a restore reads what is on the drive
        start = env.now
        ranks = [env.process(saver.load(r, amount)) for r, amount in enumerate(plan.shards) if amount > 0]
        yield simpy.AllOf(env, ranks)
        out.load_durations.append(env.now - start)


def run(ctx: RunContext, params: CheckpointParams) -> WorkloadOutcome:
    if params.save is not None:  # a training's save design (imported here: it builds on this module)
        from iowatt.simulator.workloads import _checkpoint_modes

        return _checkpoint_modes.run(ctx, params)
    plan = _ShardPlan.build(ctx, params)
    if params.mlperf is not None:  # the benchmark's procedure and scoring (_mlperf_checkpoint); its saves always fsync
        synced = params.model_copy(update={"fsync": True})
        kept = _resident_bytes(params, plan.parts, math.inf)
        return run_procedure(ctx, params.mlperf, params.model, plan, lambda p: _RankSaver(ctx, synced, p), params.block_size, params.interval,
                          kept, (params.dirty_ratio, params.dirty_background_ratio), params.io_path == "buffered")
    saver = _RankSaver(ctx, params, plan)
    timings = _Timings()
    ctx.env.process(_training(ctx, params, plan, saver, timings))
    ctx.engine.run()
    return _outcome(ctx, params, plan, timings)


def _outcome(ctx: RunContext, params: CheckpointParams, plan: _ShardPlan, timings: _Timings) -> WorkloadOutcome:
    durations, load_durations, size, per_pass = timings.durations, timings.load_durations, plan.size, plan.per_pass
    total_time = sum(durations)
    metrics = {
        "checkpoint_size_GB": size / 1e9,
        "checkpoint_count": float(len(durations)),
        "checkpoint_writer_ranks_count": float(plan.writers),
        "save_checkpoint_duration_mean_seconds": total_time / len(durations),
        "save_checkpoint_duration_max_seconds": max(durations),
        "save_checkpoint_io_mean_GB_per_second": size * len(durations) / total_time / 1e9,
        "bytes_written_total_GB": size * len(durations) / 1e9,
    }
    detail: dict = {
        "durations_seconds": durations,
        "start_seconds": timings.starts,
        "shard_GB": [s / 1e9 for s in plan.shards],
        "checkpoints_per_pass": per_pass,
        "dirty_budget_GB": plan.dirty_budget / 1e9,
        "resident_memory_GB": plan.resident / 1e9,
        "weights_GB": sum(w for w, _o in plan.parts) / 1e9,
        "optimizer_GB": sum(o for _w, o in plan.parts) / 1e9,
    }
    if params.passes is not None:
        means = [sum(durations[p * per_pass:(p + 1) * per_pass]) / per_pass for p in range(params.passes)]
        detail["pass_mean_seconds"] = means
        for p, mean in enumerate(means, start=1):
            metrics[f"save_checkpoint_pass{p}_mean_seconds"] = mean
    drive_figures(ctx.system.volume, len(durations), per_pass, params.passes, metrics, detail)
    if load_durations:
        metrics["load_checkpoint_duration_mean_seconds"] = sum(load_durations) / len(load_durations)
        metrics["load_checkpoint_io_mean_GB_per_second"] = size / metrics["load_checkpoint_duration_mean_seconds"] / 1e9
        detail["load_durations_seconds"] = load_durations
    drive_reports = ctx.system.volume.report()["drives"]
    if drive_reports:
        detail["drives"] = drive_reports
    return WorkloadOutcome(metrics, detail)


WORKLOAD = Workload("checkpoint", CheckpointParams, run)
