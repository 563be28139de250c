"""Checkpointing: save (and optionally restore) a model's state through the filesystem.

Shards.  From a model description (parameters, bytes per parameter of weights
and of optimizer state) and its parallelism (TP x PP x DP, ZeRO stage), each
rank writes: weights / (TP x PP) if it is data-parallel rank 0 (replicas hold
identical weights, one writes them), plus optimizer state / (TP x PP) divided
by DP when ZeRO >= 1 shards it across data-parallel ranks (otherwise DP rank
0 writes it).  This is how Megatron/DeepSpeed lay out checkpoint files and
how DLIO's checkpoint emulation sizes them.  A plain `size` splits evenly
over `ranks`.

Save.  Each rank's shard is one flow that crosses, per byte written: its
GPU's device-to-host link when the state is copied from the GPU
(copy_from_gpu; pipelined with the write, as asynchronous checkpointers stage
it in chunks); host DRAM twice (written by the copy or the serializer, read
by the DMA to the drive); the volume's write path.  All ranks start together;
the checkpoint ends when the last rank's data is durable (torch.save + fsync),
as DLIO times `save_checkpoint`.

Passes.  Checkpoints keep landing on the drive until the next one would pass
`fill_target` of its capacity (or `checkpoints_per_pass` are stored); then the
oldest files are overwritten in order, as in StorageReview's fill study, so
the drive's fill state and garbage collection slow later passes.

Restore.  With `restore: true`, after the saves every rank reads its shard of
the last checkpoint back (host-to-device copy when copy_from_gpu).
"""

from __future__ import annotations

import math
from typing import Literal

import simpy
from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.units import Bytes, Fraction, Seconds
from simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome

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
    restore: bool = Field(default=False, description="read the last checkpoint back after saving")

    @model_validator(mode="after")
    def _sized(self) -> CheckpointParams:
        if self.size is None and self.model is None and self.parameters is None:
            raise ValueError("give the checkpoint `size` (e.g. '415 GB'), `parameters`, or a `model` preset")
        return self

    def _setting(self, key: str, default: float) -> float:
        value = getattr(self, key)
        if value is not None:
            return value
        if self.model is not None:
            return MODEL_PRESETS[self.model][key]
        return default

    def shards(self) -> list[float]:
        """Bytes each rank writes per checkpoint."""
        parallel = any(getattr(self, k) is not None for k in ("tp", "pp", "dp")) or (
            self.model is not None and self.size is None
        )
        if self.size is not None and not parallel:
            return [self.size / self.ranks] * self.ranks
        tp, pp, dp = (int(self._setting(k, 1)) for k in ("tp", "pp", "dp"))
        zero = int(self._setting("zero_stage", 0))
        if self.size is not None:
            # a stated size with stated parallelism: weights:optimizer split by the byte counts per parameter
            total_per_param = self.weight_bytes_per_param + self.optimizer_bytes_per_param
            weights = self.size * self.weight_bytes_per_param / total_per_param
            optimizer = self.size - weights
        else:
            params = self._setting("parameters", 0.0)
            weights = params * self.weight_bytes_per_param
            optimizer = params * self.optimizer_bytes_per_param
        model_parallel = tp * pp
        shards = []
        for d in range(dp):
            for _ in range(model_parallel):
                mine = weights / model_parallel if d == 0 else 0.0
                if zero >= 1:
                    mine += optimizer / model_parallel / dp
                elif d == 0:
                    mine += optimizer / model_parallel
                shards.append(mine)
        return shards

    @property
    def size_bytes(self) -> float:
        return sum(self.shards())


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


def run(ctx: RunContext, params: CheckpointParams) -> WorkloadOutcome:
    env, engine, system = ctx.env, ctx.engine, ctx.system
    if params.copy_from_gpu and not system.gpus:
        raise WorkloadConfigError("workload.copy_from_gpu: expected GPUs in system.gpus, found gpus.count = 0")
    shards = params.shards()
    size = sum(shards)
    if params.passes is not None:
        per_pass = _checkpoints_per_pass(params, system.volume.capacity_bytes, size)
        total = per_pass * params.passes
    else:
        per_pass = params.count
        total = params.count
    stored = [0.0] * per_pass        # bytes held in each checkpoint slot
    durations: list[float] = []
    starts: list[float] = []
    load_durations: list[float] = []
    write_usage = system.volume.write_usage(params.block_size)
    read_usage = system.volume.read_usage(params.block_size)

    def rank_io(index: int, amount: float, usage: list, fsync: bool):
        yield engine.transfer(f"ckpt.rank{index}", amount, usage)
        if fsync and params.fsync_latency > 0.0:
            yield env.timeout(params.fsync_latency)

    def usage_for(rank: int, base: list, gpu_link: str) -> list:
        usage = [*list(base), (system.host.memory, 2.0)]
        if params.copy_from_gpu:
            usage.append((getattr(system.gpus[rank % len(system.gpus)], gpu_link), 1.0))
        return usage

    def training():
        for number in range(total):
            if params.interval > 0.0 and system.gpus:
                compute = [engine.transfer(f"step.{g.name}", params.interval, [(g.compute, 1.0)]) for g in system.gpus]
                yield simpy.AllOf(env, compute)
            elif params.interval > 0.0:
                yield env.timeout(params.interval)
            slot = number % per_pass
            if stored[slot] > 0.0:
                system.volume.discard(stored[slot])  # the old checkpoint in this slot is replaced
            start = env.now
            ranks = [
                env.process(rank_io(r, amount, usage_for(r, write_usage, "link_d2h"), True))
                for r, amount in enumerate(shards) if amount > 0
            ]
            yield simpy.AllOf(env, ranks)
            stored[slot] = size
            starts.append(start)
            durations.append(env.now - start)
        if params.restore:
            start = env.now
            ranks = [
                env.process(rank_io(r, amount, usage_for(r, read_usage, "link_h2d"), False))
                for r, amount in enumerate(shards) if amount > 0
            ]
            yield simpy.AllOf(env, ranks)
            load_durations.append(env.now - start)

    env.process(training())
    env.run()
    total_time = sum(durations)
    metrics = {
        "checkpoint_size_GB": size / 1e9,
        "checkpoint_count": float(len(durations)),
        "checkpoint_writer_ranks_count": float(sum(1 for s in shards if s > 0)),
        "save_checkpoint_duration_mean_seconds": total_time / len(durations),
        "save_checkpoint_duration_max_seconds": max(durations),
        "save_checkpoint_io_mean_GB_per_second": size * len(durations) / total_time / 1e9,
        "bytes_written_total_GB": size * len(durations) / 1e9,
    }
    detail: dict = {
        "durations_seconds": durations,
        "start_seconds": starts,
        "shard_GB": [s / 1e9 for s in shards],
        "checkpoints_per_pass": per_pass,
    }
    if params.passes is not None:
        means = [sum(durations[p * per_pass:(p + 1) * per_pass]) / per_pass for p in range(params.passes)]
        detail["pass_mean_seconds"] = means
        for p, mean in enumerate(means, start=1):
            metrics[f"save_checkpoint_pass{p}_mean_seconds"] = mean
    if load_durations:
        metrics["load_checkpoint_duration_mean_seconds"] = sum(load_durations) / len(load_durations)
        metrics["load_checkpoint_io_mean_GB_per_second"] = size / metrics["load_checkpoint_duration_mean_seconds"] / 1e9
        detail["load_durations_seconds"] = load_durations
    drive_reports = [d.report() for d in system.volume.drives if hasattr(d, "report")]
    if drive_reports:
        detail["drives"] = drive_reports
    return WorkloadOutcome(metrics, detail)


WORKLOAD = Workload("checkpoint", CheckpointParams, run)
