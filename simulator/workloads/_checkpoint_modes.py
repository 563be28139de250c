"""Checkpoint save designs in the flow engine: blocking, async and tiered saves by every rank of every host.

Timeline.  Compute for `interval` (one flow per GPU, and the data loader's reads when
`save.loader_rate` is set: a step ends when both are done), then a checkpoint, `count` times,
then one more interval of compute (training goes on while the last checkpoint is written), then
the run waits until every checkpoint is durable, then the restore when asked.

One rank's checkpoint (all ranks start together, each after its own jitter; the slowest decides):
  blocking  torch.save from the GPU state: device-to-host link, the rank's core (serialization),
            host DRAM, and system.storage in one flow, through the page cache (RankSaver).
            Training resumes when every rank's save has returned.
  async     the rank waits for its host buffer (its previous write must have returned), copies
            its state to it (device-to-host link and one DRAM pass: the stall), then writes it in
            the background exactly as a blocking save does, minus the GPU.
  tiered    the same copy, then: stage `memory` -- the drain serializes the host copy straight to
            system.storage (the buffer is busy until the drain ends); stage on drives -- a save
            to the host's own drives releases the buffer, the stage is flushed (a local
            checkpoint must survive a restart), and the drain copies the file from the stage
            drives to system.storage (DRAM twice, no serialization), one drain at a time per
            rank, at `drain_weight`.
A checkpoint is durable when its last byte is on system.storage (page-cache writeback included).

Restore: every rank of every host reads its shard at once, from system.storage or the stage, and
copies it to its GPU.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace

import simpy
from iowatt.models import host_io
from iowatt.simulator.storage import Access, Usage, Volume, registry
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads._checkpoint_design import SaveDesign
from iowatt.simulator.workloads._checkpoint_hosts import HostLayout
from iowatt.simulator.workloads._checkpoint_params import CheckpointParams
from iowatt.simulator.workloads._checkpoint_report import Marks, Tiers, outcome
from iowatt.simulator.workloads._checkpoint_save import RankSaver, ShardPlan


class _HostedSaver(RankSaver):
    """The rank saver with each rank on its host: its host's DRAM share and, for a blocking save, its GPU's copy."""

    def __init__(self, ctx: RunContext, params: CheckpointParams, plan: ShardPlan, layout: HostLayout, gpu_copy: bool) -> None:
        super().__init__(ctx, params.model_copy(update={"copy_from_gpu": False}), plan)
        self.layout, self.gpu_copy = layout, gpu_copy

    def host_usage(self, rank: int, cost: float) -> Usage:
        usage = super().host_usage(rank, cost) + self.layout.memory_usage(rank, self.memory_passes)
        if self.gpu_copy:
            usage += snapshot_usage(self.ctx, self.layout, rank)
        return usage


def snapshot_usage(ctx: RunContext, layout: HostLayout, rank: int) -> Usage:
    """One byte copied from the rank's GPU into host memory: the GPU's device-to-host link, one DRAM write."""
    gpu = ctx.system.gpus[layout.gpu_of(rank)]
    return [(gpu.link_d2h, 1.0), (ctx.system.host.memory, 1.0), *layout.memory_usage(rank, 1.0)]


def restore_usage(ctx: RunContext, layout: HostLayout, rank: int, passes: float) -> Usage:
    """One byte read into host memory (`passes` DRAM passes) and copied to the rank's GPU."""
    gpu = ctx.system.gpus[layout.gpu_of(rank)]
    return [(gpu.link_h2d, 1.0), (ctx.system.host.memory, passes), *layout.memory_usage(rank, passes)]


def _check(ctx: RunContext, params: CheckpointParams, design: SaveDesign) -> None:
    if not params.copy_from_gpu or not ctx.system.gpus:
        raise WorkloadConfigError("workload.save: a save design copies GPU state; set workload.copy_from_gpu: true and give system.gpus")
    if params.passes is not None:
        raise WorkloadConfigError("workload.passes: fill passes are for saves without workload.save; use workload.count")
    if params.regenerate != "none":
        raise WorkloadConfigError(f"workload.regenerate: a save design saves existing GPU state, expected 'none', found {params.regenerate!r}")
    if design.restore_from == "local" and design.mode != "tiered":
        raise WorkloadConfigError(f"workload.save.restore_from: 'local' reads the stage of a tiered save, found mode {design.mode!r}")


def _host_memory(ctx: RunContext, params: CheckpointParams, design: SaveDesign, plan: ShardPlan, layout: HostLayout) -> ShardPlan:
    """The plan with each host's pinned buffers held and the page cache the rest leaves (per host, then summed)."""
    memory = ctx.system.config.server.memory
    per_host = [0.0] * layout.hosts
    for rank, shard in enumerate(plan.shards):
        per_host[layout.host_of(rank)] += shard
    buffers = per_host if design.mode != "blocking" else [0.0] * layout.hosts
    extra = (params.resident_memory or 0.0) / layout.hosts
    resident = [b + extra for b in buffers]
    worst = max(range(layout.hosts), key=lambda h: resident[h])
    if resident[worst] > memory:
        raise WorkloadConfigError(
            f"workload.save.mode: {design.mode} keeps each host's shards in host memory; host {worst} needs "
            f"{resident[worst] / 1e9:.0f} GB, system.server.memory is {memory / 1e9:.0f} GB"
        )
    # summed over the hosts, as the ranks' dirty bytes are (the hosts hold alike shares)
    dirty, background = host_io.page_cache_bytes(resident, memory, params.dirty_ratio, params.dirty_background_ratio, params.io_path == "buffered")
    return replace(plan, resident=sum(resident), dirty_budget=dirty, background_bytes=background)


def _stages(ctx: RunContext, design: SaveDesign, layout: HostLayout, plan: ShardPlan) -> list[Volume]:
    """Each host's stage drives (registry kinds built with the prefix stage.hostN.); none for a memory stage."""
    if design.mode != "tiered" or design.stage == "memory":
        return []  # blocking and async saves have no stage (a stage in the scenario is ignored, so plans can vary the mode)
    volumes = [registry.build(ctx.engine, design.stage, ctx.system.host, prefix=f"stage.host{h}.") for h in range(layout.hosts)]
    need = 2.0 * max(sum(plan.shards[r] for r in range(h * layout.ranks_per_host, (h + 1) * layout.ranks_per_host)) for h in range(layout.hosts))
    if need > volumes[0].capacity_bytes:
        raise WorkloadConfigError(
            f"workload.save.stage: each host keeps two checkpoints on its stage (one draining, one new): {need / 1e9:.0f} GB, "
            f"the stage holds {volumes[0].capacity_bytes / 1e9:.0f} GB"
        )
    return volumes


@dataclass
class _Paths:
    """One checkpoint's usages per host, computed when it starts (drive fill states as of then)."""

    target: list[Usage]          # write to system.storage
    stage: list[Usage]           # write to the host's stage drives
    stage_read: list[Usage]      # read the stage drives back (drain, local restore)


class _Training:
    """Compute, checkpoints of one design, and the restore, as SimPy processes."""

    def __init__(self, ctx: RunContext, params: CheckpointParams, plan: ShardPlan, layout: HostLayout,
                 saver: _HostedSaver, stages: list[Volume], tiers: Tiers) -> None:
        self.ctx, self.params, self.plan, self.layout, self.saver, self.stages = ctx, params, plan, layout, saver, stages
        self.tiers = tiers
        self.design: SaveDesign = params.save  # type: ignore[assignment]
        ranks = len(plan.shards)
        self.buffer_free: list[simpy.Event | None] = [None] * ranks   # when the rank may overwrite its host buffer
        self.drain_done: list[simpy.Event | None] = [None] * ranks    # the rank's latest drain (one at a time)
        self.marks: list[Marks] = []
        self.pending: list[simpy.Event] = []
        self.compute_seconds = 0.0                                    # seconds the GPUs computed
        self.loader_delays: list[float] = []
        self.restores: dict[str, float] = {}                          # restore seconds from "durable" (and "local")

    # ------------------------------------------------------------------ usages
    def _paths(self, number: int) -> _Paths:
        system, layout, block = self.ctx.system, self.layout, self.params.block_size
        writers = max(1, self.plan.writers)
        target = layout.per_host(system.volume, system.volume.usage(Access("write", block, "seq", writers)))
        # the stage keeps two checkpoints: from the third on, each replaces the one before last (no TRIM)
        stage_write = Access("write", block, "seq", layout.ranks_per_host, overwrite=number >= 2)
        stage_read = Access("read", block, "seq", layout.ranks_per_host)
        return _Paths(target, [v.usage(stage_write) for v in self.stages], [v.usage(stage_read) for v in self.stages])

    def _drain_usage(self, rank: int, paths: _Paths) -> Usage:
        host = self.layout.host_of(rank)
        target = paths.target[host]
        if not self.stages:  # from the host copy: serialize it straight to system.storage
            return self.saver.host_usage(rank, self.saver.optimizer_cost) + target
        dram = [(self.ctx.system.host.memory, 2.0), *self.layout.memory_usage(rank, 2.0)]  # drive DMA in, NIC DMA out
        return paths.stage_read[host] + target + dram

    # ------------------------------------------------------------------ processes
    def run(self) -> Generator[simpy.Event, object, None]:
        env = self.ctx.env
        jitter = self.design.rank_jitter
        for number in range(self.plan.total):
            compute_start = env.now
            yield from self._compute()
            marks = Marks(number, compute_start, env.now)
            self.marks.append(marks)
            paths = self._paths(number)
            snapped = []
            draws = self.ctx.rng.uniform(0.0, jitter, size=len(self.plan.shards)) if jitter > 0.0 else None
            for rank, amount in enumerate(self.plan.shards):
                if amount <= 0.0:
                    continue
                done = env.event()
                snapped.append(done)
                delay = float(draws[rank]) if draws is not None else 0.0
                self.pending.append(env.process(self._rank(rank, amount, delay, marks, paths, done)))
            yield simpy.AllOf(env, snapped)
            marks.stall_end = env.now
        yield from self._compute()  # training goes on while the last checkpoint is written
        yield simpy.AllOf(env, self.pending)
        self.tiers.record(self.ctx)  # the saves' energy, before the restore
        if self.params.restore:
            yield from self._restore()

    def _compute(self) -> Generator[simpy.Event, object, None]:
        env, engine, system = self.ctx.env, self.ctx.engine, self.ctx.system
        interval = self.params.interval
        if interval <= 0.0:
            return
        start = env.now
        steps = [engine.transfer(f"step.{g.name}", interval, [(g.compute, 1.0)]) for g in system.gpus]
        rate = self.design.loader_rate
        if rate > 0.0:
            # the loader's reads: random records from system.storage into host memory, at most the rate training asks
            reads = system.volume.usage(Access("read", self.params.block_size, "rand", max(1, self.plan.writers)))
            steps.append(engine.transfer("loader", rate * interval, [*reads, (system.host.memory, 1.0)], max_rate=rate))
        yield simpy.AllOf(env, steps)
        self.compute_seconds += interval
        self.loader_delays.append(env.now - start - interval)

    def _written_back(self, rank: int) -> Generator[simpy.Event, object, None]:
        """Until the rank's dirty pages are on the drives (its page-cache writeback ends)."""
        pending = self.saver.writeback[rank]
        if pending is not None and not pending.processed:
            yield pending

    def _rank(self, rank: int, amount: float, delay: float, marks: Marks, paths: _Paths,
              snapped: simpy.Event) -> Generator[simpy.Event, object, None]:
        env, engine, mode = self.ctx.env, self.ctx.engine, self.design.mode
        host = self.layout.host_of(rank)
        previous, mine = self.buffer_free[rank], env.event()
        self.buffer_free[rank] = mine
        if delay > 0.0:
            yield env.timeout(delay)
        if previous is not None and not previous.processed:
            yield previous  # the previous checkpoint still holds this rank's buffer
        marks.snapshot_start = max(marks.snapshot_start, env.now)
        if mode == "blocking":
            yield env.process(self.saver.save(rank, paths.target[host]))
            snapped.succeed()
            marks.release(env.now)
            mine.succeed()
            yield from self._written_back(rank)
            marks.durable = max(marks.durable, env.now)
            return
        yield engine.transfer(f"ckpt.rank{rank}.snapshot", amount, snapshot_usage(self.ctx, self.layout, rank))
        snapped.succeed()
        if mode == "async":
            yield env.process(self.saver.save(rank, paths.target[host]))
            marks.written = max(marks.written, env.now)
            marks.release(env.now)
            mine.succeed()
            yield from self._written_back(rank)
        elif not self.stages:
            yield from self._drain(rank, amount, marks, paths)
            marks.release(env.now)
            mine.succeed()
        else:
            yield env.process(self.saver.save(rank, paths.stage[host]))
            marks.written = max(marks.written, env.now)
            marks.release(env.now)
            mine.succeed()
            if (flushed := self.saver.sync(rank)) is not None:  # the stage is flushed: a local checkpoint must survive a restart
                yield flushed
            marks.staged = max(marks.staged, env.now)
            yield from self._drain(rank, amount, marks, paths)
        marks.durable = max(marks.durable, env.now)

    def _drain(self, rank: int, amount: float, marks: Marks, paths: _Paths) -> Generator[simpy.Event, object, None]:
        env = self.ctx.env
        previous, mine = self.drain_done[rank], env.event()
        self.drain_done[rank] = mine
        if previous is not None and not previous.processed:
            yield previous  # one drain at a time per rank, in checkpoint order
        marks.drain_start = min(marks.drain_start, env.now)
        usage = self._drain_usage(rank, paths)
        yield self.ctx.engine.transfer(f"ckpt.rank{rank}.drain", amount, usage, weight=self.design.drain_weight)
        marks.drain_end = max(marks.drain_end, env.now)
        mine.succeed()

    def _restore(self) -> Generator[simpy.Event, object, None]:
        """Every rank reads its shard at once from system.storage; a tiered save's stage is read too, afterwards
        (a planner weighs both recoveries); `restore_from` says which one the load metrics report."""
        yield from self._restore_from(local=False)
        if self.design.mode == "tiered":
            yield from self._restore_from(local=True)

    def _restore_from(self, local: bool) -> Generator[simpy.Event, object, None]:
        env, engine, system, layout = self.ctx.env, self.ctx.engine, self.ctx.system, self.layout
        if local:
            stage = [v.usage(Access("read", self.params.block_size, "seq", layout.ranks_per_host)) for v in self.stages]
        else:
            read = Access("read", self.params.block_size, "seq", max(1, self.plan.writers))
            durable = layout.per_host(system.volume, system.volume.usage(read))
        start = env.now
        loads = []
        for rank, amount in enumerate(self.plan.shards):
            if amount <= 0.0:
                continue
            host = layout.host_of(rank)
            if local and not self.stages:  # the host copy is still in memory: only the copy to the GPU
                usage = restore_usage(self.ctx, layout, rank, 1.0)
            else:
                usage = (stage[host] if local else durable[host]) + restore_usage(self.ctx, layout, rank, 2.0)
            loads.append(engine.transfer(f"ckpt.rank{rank}.load", amount, usage))
        yield simpy.AllOf(env, loads)
        self.restores["local" if local else "durable"] = env.now - start


def run(ctx: RunContext, params: CheckpointParams) -> WorkloadOutcome:
    design: SaveDesign = params.save  # type: ignore[assignment]
    _check(ctx, params, design)
    plan = ShardPlan.build(ctx, params)
    layout = HostLayout(ctx.engine, ctx.system.host, len(plan.shards), len(ctx.system.gpus))
    plan = _host_memory(ctx, params, design, plan, layout)
    stages = _stages(ctx, design, layout, plan)
    saver = _HostedSaver(ctx, params, plan, layout, gpu_copy=design.mode == "blocking")
    tiers = Tiers.measure(ctx, stages)  # meters and idle power before anything runs
    training = _Training(ctx, params, plan, layout, saver, stages, tiers)
    ctx.env.process(training.run())
    ctx.engine.run()
    return outcome(ctx, params, plan, layout, tiers, training.marks, training.compute_seconds, training.loader_delays,
                   training.restores, stages)

