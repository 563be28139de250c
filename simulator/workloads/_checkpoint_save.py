"""The checkpoint workload's plan (what each rank writes, how the checkpoints fill the volume) and its ranks' saves
and restores through the host and the page cache (the model: simulator/workloads/checkpoint.py's docstring)."""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass

import simpy
from iowatt.models import host_io
from iowatt.simulator.storage import Access, Usage
from iowatt.simulator.workloads import RunContext, WorkloadConfigError
from iowatt.simulator.workloads._checkpoint_params import CheckpointParams

# max-min weight of a writeback flow relative to a writer: small, so a writer below its dirty budget is not
# slowed by the flusher (its bytes land in the page cache); the flusher gets the drive's spare rate
WRITEBACK_WEIGHT = 1e-3
# Linux leaves dirty pages alone until the dirty pages pass the background threshold (balance_dirty_pages starts
# the background flusher above vm.dirty_background_ratio of the dirtyable memory), a file is synced, or its pages
# are older than vm.dirty_expire_centisecs, 30 s by default (Documentation/admin-guide/sysctl/vm.rst).  Measured on
# the development VM (2026-11-28): 1 GiB written buffered stayed Dirty in /proc/meminfo for 3 s (its background
# threshold 2.3 GB), and fsync then wrote all of it.  The flusher's 5 s wake-up after the expiry is left out.
DIRTY_EXPIRE_SECONDS = 30.0


def checkpoints_per_pass(params: CheckpointParams, capacity: float, size: float) -> int:
    if params.checkpoints_per_pass is not None:
        return params.checkpoints_per_pass
    fits = math.floor(params.fill_target * capacity / size)
    if fits < 1:
        raise WorkloadConfigError(
            f"workload.fill_target: one checkpoint of {size / 1e9:.0f} GB does not fit in "
            f"{params.fill_target:.0%} of the volume's {capacity / 1e12:.2f} TB"
        )
    return fits


def resident_bytes(params: CheckpointParams, parts: list[tuple[float, float]], memory: float) -> float:
    if params.resident_memory is not None:
        return params.resident_memory
    kept = {"none": sum(w + o for w, o in parts), "weights": sum(o for _w, o in parts), "all": 0.0}[params.regenerate]
    return min(kept, memory)


@dataclass(frozen=True)
class ShardPlan:
    """What each rank writes and how the checkpoints fill the volume (no simulation state)."""

    parts: list[tuple[float, float]]  # (weight bytes, optimizer bytes) per rank
    shards: list[float]               # bytes each rank writes per checkpoint
    size: float                       # bytes of one checkpoint
    per_pass: int                     # checkpoint slots before the oldest is overwritten
    total: int                        # checkpoints saved
    writers: int                      # ranks that write something
    resident: float                   # bytes of host memory the benchmark holds
    dirty_budget: float               # page-cache bytes all ranks may dirty before writeback throttles them
    background_bytes: float           # dirty bytes above which the flusher writes back (below: a sync or the expiry)

    @classmethod
    def build(cls, ctx: RunContext, params: CheckpointParams) -> ShardPlan:
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
            per_pass = checkpoints_per_pass(params, system.volume.capacity_bytes, size)
            total = per_pass * params.passes
        else:
            per_pass = params.count
            total = params.count
        memory = system.config.server.memory
        resident = resident_bytes(params, parts, memory)
        dirty_budget, background = host_io.page_cache_bytes([resident], memory, params.dirty_ratio, params.dirty_background_ratio,
                                                     params.io_path == "buffered")
        writers = sum(1 for s in shards if s > 0)
        return cls(parts, shards, size, per_pass, total, writers, resident, dirty_budget, background)


class RankSaver:
    """Each rank's save (optimizer state, then weights, through its core and the page cache) and restore."""

    def __init__(self, ctx: RunContext, params: CheckpointParams, plan: ShardPlan) -> None:
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
        self.writeback: list[simpy.Event | None] = [None] * len(plan.parts)  # each rank's pending writeback of its dirty bytes
        # the page cache's dirty bytes: per rank (its budget), in all (the background threshold), and what wakes the flusher
        self.rank_dirty = [0.0] * len(plan.parts)
        self.dirty_total = 0.0
        self.over_background = ctx.env.event()
        self.synced = [ctx.env.event() for _ in plan.parts]
        # DLIO writes a rank's weights as one file per layer of its pipeline stage, its optimizer state as one file
        self.weight_files = 1 if params.layers is None else math.ceil(params.layers / params.parallelism()["pp"])
        self.flush_concurrency = host_io.flush_concurrency(params.flush_sync_share, max(1, plan.writers))

    def host_usage(self, rank: int, cost: float) -> Usage:
        host, gpus = self.ctx.system.host, self.ctx.system.gpus
        usage = [(self.cores[rank], cost), (host.cpu, cost / self.core_speed), (host.memory, self.memory_passes)]
        if self.params.copy_from_gpu:
            usage.append((gpus[rank % len(gpus)].link_d2h, 1.0))
        return usage

    def _drain(self, rank: int, amount: float, drive: Usage, absorbed: simpy.Event) -> Generator[simpy.Event, object, None]:
        env = self.ctx.env
        yield absorbed
        self.dirty_total += amount
        if self.dirty_total > self.plan.background_bytes:
            woken, self.over_background = self.over_background, env.event()
            woken.succeed()
        else:
            # below the background threshold the pages wait for a sync, the threshold or their expiry (DIRTY_EXPIRE_SECONDS).
            # A rank that fsyncs every save is released by it: no expiry timer then, since a timer left behind would
            # still move the clock (and the energy's idle time) when the run has ended; a save whose serialization
            # alone outlasts the expiry below the threshold is the case this leaves out
            wakes = [self.over_background, self.synced[rank]]
            if not self.params.fsync:
                wakes.append(env.timeout(DIRTY_EXPIRE_SECONDS))
            yield simpy.AnyOf(env, wakes)
        # writers fill the page cache at their own pace while it has room; writeback takes what the drive has left
        yield self.ctx.engine.transfer(f"ckpt.rank{rank}.writeback", amount, drive, weight=WRITEBACK_WEIGHT)
        self.dirty_total -= amount
        self.rank_dirty[rank] -= amount

    def sync(self, rank: int) -> simpy.Event | None:
        """The rank's dirty pages written back now (fsync, a flush at close): the event their writeback ends, None if none."""
        pending = self.writeback[rank]
        if pending is None or pending.processed:
            return None
        asked, self.synced[rank] = self.synced[rank], self.ctx.env.event()
        asked.succeed()
        return pending

    def close_flush_seconds(self, amount: float, files: int, cost: float, drive: Usage) -> float:
        """Seconds a rewritten part takes when each of its files is made, then flushed at close
        (models.host_io.close_flush_seconds, all writing ranks alike, at the drive's rate for this access)."""
        drive_Bps = min((c.capacity / k for c, k in drive if k > 0.0), default=math.inf)
        return host_io.close_flush_seconds(files, amount / files, max(1, self.plan.writers), self.core_speed / cost,
                                           drive_Bps, self.flush_concurrency)

    def save(self, rank: int, drive: Usage, rewrite: bool = False) -> Generator[simpy.Event, object, None]:
        """One rank's save; `rewrite`: its files replace the same names of a pass before (O_TRUNC), so each is
        flushed when it is closed (CheckpointParams.rewrite_names)."""
        env, engine, params, plan = self.ctx.env, self.ctx.engine, self.params, self.plan
        part = plan.parts[rank]
        phases = [(a, c, n) for a, c, n in ((part[1], self.optimizer_cost, 1), (part[0], self.weight_cost, self.weight_files))
                  if a > 0.0]
        budget = plan.dirty_budget * plan.shards[rank] / plan.size  # this rank's share of the dirty pages
        for amount, cost, files in phases:
            start = env.now
            pending = self.writeback[rank]
            # the page cache has room for `tail` bytes, less what this rank's earlier dirty bytes still hold of it
            tail = min(max(0.0, budget - self.rank_dirty[rank]), amount)
            flows = [engine.transfer(f"ckpt.rank{rank}", amount - tail, self.host_usage(rank, cost) + drive)] if amount > tail else []
            if tail > 0.0:
                # the tank fills while the drive writes: the rank's core is shared by the bytes that land in the
                # page cache and the bytes the drive takes, so the cache fills at (host - drive) rate, as in the
                # closed form (models.host_io.phased_write_seconds); the cached bytes are written back afterwards
                absorb = engine.start(f"ckpt.rank{rank}.absorb", tail, self.host_usage(rank, cost))
                self.rank_dirty[rank] += tail
                drain = env.process(self._drain(rank, tail, drive, absorb.done))
                self.writeback[rank] = drain if pending is None or pending.processed else simpy.AllOf(env, [pending, drain])
                flows.append(absorb.done)
            if flows:
                yield simpy.AllOf(env, flows)
            if not rewrite:
                continue
            if amount / files <= budget:
                # every file is dirty whole when it is closed: the rank makes it, then waits for its flush, so the
                # part takes at least the law's time (the bytes themselves went through the flows above; the close
                # flushes release this rank's dirty bytes to the drive now)
                self.sync(rank)
                wait = self.close_flush_seconds(amount, files, cost, drive) - (env.now - start)
                if wait > 0.0:
                    yield env.timeout(wait)
            elif (flushed := self.sync(rank)) is not None:
                # a file larger than the dirty budget: the flusher wrote most of it; its dirty remainder is
                # flushed at close while all ranks close theirs (the same at both ends of flush_sync_share)
                yield flushed
        if params.fsync and (synced := self.sync(rank)) is not None:
            yield synced
        if params.fsync_latency > 0.0:
            yield env.timeout(params.fsync_latency)

    def load(self, rank: int, amount: float) -> Generator[simpy.Event, object, None]:
        system = self.ctx.system
        usage = [(system.host.memory, 2.0), *self.read_usage]
        if self.params.copy_from_gpu:
            usage.append((system.gpus[rank % len(system.gpus)].link_h2d, 1.0))
        yield self.ctx.engine.transfer(f"ckpt.rank{rank}.load", amount, usage)

