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
and `fsync` waits for it.  Linux's flusher starts only once all ranks' dirty
bytes pass the background threshold (vm.dirty_background_ratio of the same
memory); below it a rank's dirty bytes wait for its sync (fsync, a flush at
close) or their 30 s expiry, so a save far smaller than the host's memory
writes nothing until its fsync.  The dirty budget is Linux's setpoint over the
memory the benchmark does not hold (models.host_io.dirty_buffer_bytes); a
rank's earlier dirty bytes still cached hold their share of it.  All
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
at the start, NAND bytes and endurance used.  With `rewrite_names` a later
pass opens the same names again (O_TRUNC, a rerun of DLIO): ext4 and XFS
flush each rewritten file when it is closed, in the rank's thread, so a
rank makes a file, then waits for its flush; the part takes at least
models.host_io.close_flush_seconds for the rank's files (`layers` / pp
weight files), with the ranks' flushes `flush_sync_share` synchronised
(assumed 0..1); a file above the dirty budget waits for its dirty remainder.

Restore.  With `restore: true`, after the saves every rank reads its shard of
the last checkpoint back (host-to-device copy when copy_from_gpu).

MLPerf Storage v2.0/v3.0.  With `mlperf: {...}` the saves and reads follow the
benchmark's procedure and scoring instead (simulator/workloads/_mlperf_checkpoint.py).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field

import simpy
from iowatt.simulator.storage import Access, FileWrite
from iowatt.simulator.workloads import RunContext, Workload, WorkloadOutcome, _checkpoint_modes
from iowatt.simulator.workloads._checkpoint_params import MODEL_PRESETS, CheckpointParams, ModelPreset
from iowatt.simulator.workloads._checkpoint_save import RankSaver, ShardPlan, resident_bytes
from iowatt.simulator.workloads._fill_passes import drive_figures
from iowatt.simulator.workloads._mlperf_checkpoint import run_procedure

__all__ = ["MODEL_PRESETS", "WORKLOAD", "CheckpointParams", "ModelPreset", "run"]

@dataclass
class _Timings:
    durations: list[float] = field(default_factory=list)       # each save, seconds
    starts: list[float] = field(default_factory=list)          # each save's start, seconds
    load_durations: list[float] = field(default_factory=list)  # the restore, seconds


def _training(ctx: RunContext, params: CheckpointParams, plan: ShardPlan, saver: RankSaver, out: _Timings) -> Generator[simpy.Event, object, None]:
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
        rewrite = params.rewrite_names and replaced is not None  # the same names again: flushed at close
        ranks = [env.process(saver.save(r, drive_usage, rewrite)) for r, amount in enumerate(plan.shards) if amount > 0]
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
    if params.save is not None:  # a training's save design
        return _checkpoint_modes.run(ctx, params)
    plan = ShardPlan.build(ctx, params)
    if params.mlperf is not None:  # the benchmark's procedure and scoring (_mlperf_checkpoint); its saves always fsync
        synced = params.model_copy(update={"fsync": True})
        kept = resident_bytes(params, plan.parts, math.inf)
        return run_procedure(ctx, params.mlperf, params.model, plan, lambda p: RankSaver(ctx, synced, p), params.block_size, params.interval,
                          kept, (params.dirty_ratio, params.dirty_background_ratio), params.io_path == "buffered")
    saver = RankSaver(ctx, params, plan)
    timings = _Timings()
    ctx.env.process(_training(ctx, params, plan, saver, timings))
    ctx.engine.run()
    return _outcome(ctx, params, plan, timings)


def _outcome(ctx: RunContext, params: CheckpointParams, plan: ShardPlan, timings: _Timings) -> WorkloadOutcome:
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
