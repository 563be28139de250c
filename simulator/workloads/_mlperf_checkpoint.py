"""MLPerf Storage v2.0 / v3.0 checkpointing: the benchmark's procedure and scoring on top of the rank saver of
simulator/workloads/checkpoint.py (`workload: {kind: checkpoint, mlperf: {...}}`).

Models (Rules.md 4.3.3, Table 2; Submission_guidelines.md 2.2.1): llama3 8B on TP x PP x DP = 1x1x8 with ZeRO 3,
70B 8x1x8 ZeRO 3, 405B 8x32x2 ZeRO 1, 1T 8x64x2 ZeRO 1; checkpoints of 105 GB, 912 GB, 5.29 TB and 18 TB, where
the table's GB are GiB (its units note: DLIO's `checkpoint_size_GB` is binary) and its TB thousands of them
(5.29 TB = 755 GiB of fp16 weights + 4,533 GiB of fp32 Adam state), so parameters are Table 2's model GiB x
2^30 / 2 B (_checkpoint_params.MODEL_PRESETS).

Procedure (Submission_guidelines.md 2.2.2, Rules.md 4.3.1-4.3.2 and 4.7.1): one run writes `writes` checkpoints
(10), each rank's save ending with fsync, then reads `reads` checkpoints (10) back.  Between the two phases the
client's page cache is cleared unless the data each host wrote is at least 3x its memory, so every read comes
from the drives: the read phase here always reads the drives and `page_cache_drop_required` says whether the
rules demand the drop for this host size.  A benchmark result is the mean of `runs` runs (5: Submission_guidelines
section 3, "benchmark result"); runs after the first overwrite the checkpoint files the first one wrote (no TRIM:
the drive still holds the data it replaces).

Scoring (Submission_guidelines.md 2.2.3): per checkpoint, duration = the maximum over ranks of their save (load)
time and throughput = the minimum over ranks; DLIO's rank throughput is the checkpoint's size over the rank's time
(statscounter end_save_ckpt: checkpoint_size / duration, checkpoint_size summed over ranks, in GiB), so the minimum
is size / the maximum time.  DLIO writes the mean over the checkpoints of an invocation as
save_checkpoint_duration_mean_seconds and save_checkpoint_io_mean_GB_per_second (GiB/s) (load_* for reads);
the result is their mean over runs.

Several hosts: the ranks are spread evenly over the client hosts of the storage (`clients` of a cluster, one
host otherwise).  Each host has its own page cache, so the dirty budget and the memory the benchmark holds are
per host.  The CLOSED rules checked (Rules.md 4.6.1, 4.6.2, 4.3.4): total processes as in Table 2, at least 4
processes per host, and the emulated accelerators' memory (Table 3) at least the checkpoint size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from typing import Literal, Protocol

import simpy
from iowatt.models import catalog, host_io
from iowatt.simulator.storage import Access, Usage
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field

GiB = 2.0**30

# Rules.md Table 2: processes (TP x PP x DP) per model, the CLOSED division's
TABLE2_PROCESSES = {"llama3_8b": 8, "llama3_70b": 64, "llama3_405b": 512, "llama3_1t": 1024}
# Rules.md Table 3: the emulated accelerator of `checkpointing run --accelerator-type` -> its catalog GPU
ACCELERATOR_GPUS = {"b200": "nvidia-b200", "mi355": "amd-mi355x", "h100": "nvidia-h100-sxm", "a100": "nvidia-a100-sxm-80gb"}
# Rules.md 4.3.1: the data each host writes must be at least this many times its memory, else caches are dropped
CACHE_RATIO = 3.0
MIN_PROCESSES_PER_HOST = 4  # Rules.md 4.6.2 / Table 3 (--ppn: minimal 4)


class MlperfProcedure(BaseModel):
    """`checkpoint.mlperf`: run the checkpoint workload as MLPerf Storage v2.0 / v3.0 checkpointing does."""

    model_config = ConfigDict(extra="forbid")

    writes: int = Field(default=10, ge=0, le=1000, description="checkpoints written per run (--num-checkpoints-write; CLOSED: 10)")
    reads: int = Field(default=10, ge=0, le=1000, description="checkpoints read back per run (--num-checkpoints-read; CLOSED: 10)")
    runs: int = Field(default=5, ge=1, le=100, description="runs whose mean is the benchmark result (5)")
    accelerator: Literal["b200", "mi355", "h100", "a100"] = Field(
        default="b200", description="emulated accelerator (--accelerator-type): its memory bounds the checkpoint (Rules.md 4.3.4)"
    )


class SavePlan(Protocol):
    """What the procedure needs of checkpoint.py's shard plan."""

    parts: list[tuple[float, float]]
    shards: list[float]
    size: float
    writers: int
    resident: float
    dirty_budget: float
    background_bytes: float


class RankSaver(Protocol):
    """What the procedure needs of checkpoint.py's rank saver."""

    writeback: list[simpy.Event | None]

    def save(self, rank: int, drive: Usage) -> Generator[simpy.Event, object, None]: ...

    def load(self, rank: int, amount: float) -> Generator[simpy.Event, object, None]: ...


@dataclasses.dataclass
class _Phase:
    """Per checkpoint of one phase: duration (max over ranks) and each rank's time."""

    durations: list[float] = dataclasses.field(default_factory=list)
    rank_seconds: list[list[float]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Runs:
    saves: list[_Phase] = dataclasses.field(default_factory=list)
    loads: list[_Phase] = dataclasses.field(default_factory=list)


def hosts_plan(plan: SavePlan, hosts: int, memory: float, kept_total: float, dirty_ratio: float, background_ratio: float,
               buffered: bool) -> SavePlan:
    """The plan with the page cache and resident state of `hosts` hosts of `memory` bytes each (one budget per host)."""
    resident = min(kept_total / hosts, memory)
    budget, background = host_io.page_cache_bytes([resident] * hosts, memory, dirty_ratio, background_ratio, buffered)
    return dataclasses.replace(plan, resident=resident * hosts, dirty_budget=budget, background_bytes=background)  # type: ignore[type-var]


def _timed(env: simpy.Environment, steps: Generator[simpy.Event, object, None], out: list[float], rank: int
           ) -> Generator[simpy.Event, object, None]:
    start = env.now
    yield from steps
    out[rank] = env.now - start


class _Procedure:
    def __init__(self, ctx: RunContext, procedure: MlperfProcedure, plan: SavePlan, saver: RankSaver, block: float,
                 interval: float) -> None:
        self.ctx, self.procedure, self.plan, self.saver, self.block, self.interval = ctx, procedure, plan, saver, block, interval
        self.out = _Runs()

    def _phase(self, make: Callable[[int, float], Generator[simpy.Event, object, None]], phase: _Phase
               ) -> Generator[simpy.Event, object, None]:
        env = self.ctx.env
        ranks = [r for r, amount in enumerate(self.plan.shards) if amount > 0]
        seconds = [0.0] * len(self.plan.shards)
        start = env.now
        yield simpy.AllOf(env, [env.process(_timed(env, make(r, self.plan.shards[r]), seconds, r)) for r in ranks])
        phase.durations.append(env.now - start)  # the barrier after the slowest rank: DLIO times on rank 0 after it
        phase.rank_seconds.append([seconds[r] for r in ranks])

    def run(self) -> Generator[simpy.Event, object, None]:
        env, volume = self.ctx.env, self.ctx.system.volume
        writers = max(1, self.plan.writers)
        for run in range(self.procedure.runs):
            saves, loads = _Phase(), _Phase()
            for _ in range(self.procedure.writes):
                if self.interval > 0.0:
                    yield env.timeout(self.interval)  # DLIO's time_between_checkpoints
                # the first run's files are new; later runs rewrite them without TRIM
                drive = volume.usage(Access("write", self.block, "seq", writers, overwrite=run > 0))
                yield from self._phase(lambda r, _a, d=drive: self.saver.save(r, d), saves)
            pending = [w for w in self.saver.writeback if w is not None]
            if pending:
                yield simpy.AllOf(env, pending)  # fsync returned: nothing is left dirty before the read phase
            for _ in range(self.procedure.reads):
                yield from self._phase(self.saver.load, loads)
            self.out.saves.append(saves)
            self.out.loads.append(loads)


def _closed_rules(model: str | None, processes: int, hosts: int, size: float, accelerator_memory: float) -> list[str]:
    """The CLOSED-division rules this configuration breaks (empty: it is a valid CLOSED run)."""
    broken = []
    if model is None:
        broken.append("Rules.md 4.3.3: the model must be one of Table 2 (llama3_8b, llama3_70b, llama3_405b, llama3_1t)")
    elif processes != TABLE2_PROCESSES[model]:
        broken.append(f"Rules.md 4.6.1: {model} needs {TABLE2_PROCESSES[model]} processes, found {processes}")
    if processes / hosts < MIN_PROCESSES_PER_HOST:
        broken.append(f"Rules.md 4.6.2: at least {MIN_PROCESSES_PER_HOST} processes per host, found {processes / hosts:g}")
    if accelerator_memory < size:
        broken.append(f"Rules.md 4.3.4: accelerator memory {accelerator_memory / 1e9:.0f} GB < checkpoint {size / 1e9:.0f} GB")
    return broken


def _series(phases: list[_Phase], size: float) -> dict[str, float]:
    """DLIO's per-invocation mean and stdev, then the mean over runs (Submission_guidelines.md 2.2.3)."""
    import numpy as np
    seconds = [np.asarray(p.durations) for p in phases if p.durations]
    if not seconds:
        return {}
    rates = [size / GiB / s for s in seconds]
    return {
        "duration_mean_seconds": float(np.mean([s.mean() for s in seconds])),
        "duration_stdev_seconds": float(np.mean([s.std() for s in seconds])),
        "duration_max_seconds": float(max(s.max() for s in seconds)),
        "io_mean_GB_per_second": float(np.mean([r.mean() for r in rates])),
        "io_stdev_GB_per_second": float(np.mean([r.std() for r in rates])),
    }


def run_procedure(ctx: RunContext, procedure: MlperfProcedure, model: str | None, plan: SavePlan,
        make_saver: Callable[[SavePlan], RankSaver], block: float, interval: float, kept: float,
        dirty: tuple[float, float], buffered: bool) -> WorkloadOutcome:
    """Run the procedure; `kept` is the state the benchmark holds in host memory, all hosts together."""
    hosts = ctx.system.host.nodes
    processes = len(plan.shards)
    if processes % hosts:
        raise WorkloadConfigError(f"workload.mlperf: {processes} processes do not spread evenly over {hosts} hosts (system.storage.clients)")
    memory = ctx.system.config.server.memory
    plan = hosts_plan(plan, hosts, memory, kept, dirty[0], dirty[1], buffered)
    procedure_run = _Procedure(ctx, procedure, plan, make_saver(plan), block, interval)
    ctx.env.process(procedure_run.run())
    ctx.engine.run()
    accelerator_memory = catalog.gpu_spec(ACCELERATOR_GPUS[procedure.accelerator]).memory_GB * 1e9 * processes
    per_host_ratio = plan.size / hosts / memory
    broken = _closed_rules(model, processes, hosts, plan.size, accelerator_memory)
    metrics = {
        "checkpoint_size_GB": plan.size / GiB,
        "checkpoint_count": float(procedure.writes * procedure.runs),
        "checkpoint_read_count": float(procedure.reads * procedure.runs),
        "runs": float(procedure.runs),
        "processes": float(processes),
        "hosts": float(hosts),
        "processes_per_host": processes / hosts,
        "checkpoint_writer_ranks_count": float(plan.writers),
        "checkpoint_data_per_host_to_memory_ratio": per_host_ratio,
        "page_cache_drop_required": float(per_host_ratio < CACHE_RATIO),
        "accelerator_memory_total_GB": accelerator_memory / 1e9,
        "closed_division_valid": float(not broken),
        "bytes_written_total_GB": plan.size * procedure.writes * procedure.runs / 1e9,
    }
    out = procedure_run.out
    for prefix, phases in (("save_checkpoint_", out.saves), ("load_checkpoint_", out.loads)):
        metrics.update({prefix + k: v for k, v in _series(phases, plan.size).items()})
    detail = {
        "procedure": "mlperf_v2",
        "closed_division_rules_broken": broken,
        "shard_GB": [s / 1e9 for s in plan.shards],
        "dirty_budget_GB": plan.dirty_budget / 1e9,
        "resident_memory_GB": plan.resident / 1e9,
        "save_durations_seconds_by_run": [p.durations for p in out.saves],
        "load_durations_seconds_by_run": [p.durations for p in out.loads],
        "save_rank_seconds_last_run": out.saves[-1].rank_seconds if out.saves else [],
        "load_rank_seconds_last_run": out.loads[-1].rank_seconds if out.loads else [],
    }
    drive_reports = ctx.system.volume.report()["drives"]
    if drive_reports:
        detail["drives"] = drive_reports
    units = {k: "GiB/s (DLIO's GB)" for k in metrics if k.endswith("_GB_per_second")}
    units["checkpoint_size_GB"] = "GiB (DLIO's GB; Rules.md Table 2 units note)"
    return WorkloadOutcome(metrics, detail, units)

