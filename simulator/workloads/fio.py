"""fio as a workload: the flexible I/O tester's job, predicted with fio's own output names.

Law (fluid closed loop, not per-I/O events).  Each of `numjobs` jobs keeps
d = iodepth requests of `bs` bytes outstanding (d = 1 for the synchronous
engines: sync, psync, pvsync, pvsync2).  A request that finds the volume idle
takes L0, the unloaded (QD1) latency of the slowest drive piece it is striped
over (models.ssd.unloaded_latency_s; models.hdd QD1 service time).  A closed
queueing network with N = d x numjobs customers and zero think time runs at
    X = N / (L0 + (N - 1) x S)      (plain SSD volumes: models.ssd concurrency law)
    X = N / L0                      (hard disks, routed volumes: asymptotic bound)
capped by whatever the flow engine allows the job's bytes through the
volume's constraints (block-size law, power cap, link, GC, other jobs); S is
the drive's time per request at its block-size ceiling, so c = L0 / S flash
units serve the N requests (exact MVA, smooth knee).  Each job is one flow
with rate bound d/N of X; the engine supplies the
ceiling, so the mean latency follows from Little's law per job,
    R = d / IOPS_job,
and fio's identity iops x mean latency = iodepth x numjobs holds by
construction.  In a rw/randrw mix the read and write latencies keep the ratio
of their unloaded latencies, weighted so that the mix satisfies Little's law.

Latency percentiles (clat_pXX) assume the completion latency is
Gamma-distributed with mean R.  Plain SSD volumes: shape k = R / L0, i.e.
a request waits for the (N - 1) / c others at its flash unit plus its own
L0 (1 + (N - 1) / c exponential stages of L0 under the concurrency law;
c = 1 gives Erlang-N, a saturated single server).  Hard disks and routed
volumes: k = max(1, N x u), u the utilisation of the busiest resource the
job crosses (a saturated server with N requests always queued gives
Erlang-N; a lightly loaded one is one exponential stage).  This is an assumption (exponential service times, FCFS),
stated so the percentiles can be checked against measured fio output; command
reordering (HDD SATF) makes the real tail longer.

Fill.  Writes are split into segments of 1 % of the volume's capacity, each
announced to the volume as part of the job's file (Volume.store) so that the
drives' FTL state, garbage collection and pSLC cache follow the job as it
fills them (models.ftl): sequential writes and random writes with fio's
random map (every block once per pass) write new data; `overwrite=1` (fio
lays the file out before the job starts), later passes over the same file,
and `norandommap=1` (blocks drawn with replacement: after w bytes a share
1 - exp(-w / size) of the file holds data) rewrite it in place.  The write
rate per fill decile is reported as fill_write_GBps_by_decile.

Only `system.volume` is used: plain drives are reached per drive (pattern,
queue depth, overwrite), any other volume (array, NFS, cluster) through its
read_usage / write_usage; its request latency is `volume.request_latency_s(bs,
write)` when it has one, else that of the drives it is built from.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Literal

import simpy
from iowatt.models.units import Bytes, Seconds
from iowatt.simulator.flows import Constraint, Flow
from iowatt.simulator.storage import Access, ConcurrencyLaw, Drive, FileWrite, Usage, Volume, mix_laws
from iowatt.simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field, model_validator

Rw = Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"]
IoEngine = Literal["libaio", "io_uring", "posixaio", "sync", "psync", "pvsync", "pvsync2"]
SYNC_ENGINES = ("sync", "psync", "pvsync", "pvsync2")
FILL_SEGMENT = 0.01  # share of the volume capacity written per segment (fill state re-read between)


class FioParams(BaseModel):
    """One fio job (options named as in fio; `iowatt run --fio JOBFILE` reads a job file into this)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["fio"] = "fio"
    name: str = Field(default="fio", description="job name (fio's [section])")
    rw: Rw = Field(default="read", description="fio rw: read, write, randread, randwrite, rw/readwrite, randrw")
    bs: Bytes = Field(default=4096, ge=512, description="block size, e.g. 128k (fio's default 4k)")
    iodepth: int = Field(default=1, ge=1, le=65536, description="outstanding requests per job (async engines)")
    numjobs: int = Field(default=1, ge=1, le=4096, description="jobs running in parallel, each with its own iodepth")
    size: Bytes | None = Field(default=None, gt=0, description="bytes per job (default: the whole volume)")
    io_size: Bytes | None = Field(default=None, gt=0, description="bytes of I/O per job, looping over `size` (fio's io_size)")
    direct: bool = Field(default=True, description="O_DIRECT; only direct=1 is modelled (no page cache)")
    runtime: Seconds | None = Field(default=None, gt=0, description="stop after this long (fio's runtime)")
    time_based: bool = Field(default=False, description="run for `runtime` even when `size` is done (loops over the file)")
    rwmixread: float = Field(default=50.0, ge=0, le=100, description="percent of I/Os that are reads in rw/randrw")
    ioengine: IoEngine = Field(default="libaio", description="sync engines keep one request outstanding per job")
    overwrite: bool = Field(default=False, description="writes replace data already on the drive (steady-state GC)")
    norandommap: bool = Field(default=False, description="random offsets drawn with replacement (blocks can repeat)")
    filename: str | None = Field(default=None, description="target as in the job file (informational: the volume is the target)")
    percentile_list: list[float] = Field(
        default_factory=lambda: [50.0, 90.0, 99.0, 99.9], description="clat percentiles to report (0 < p < 100)"
    )

    @model_validator(mode="after")
    def _check(self) -> FioParams:
        if not self.direct:
            raise ValueError(
                "direct: only direct=1 (O_DIRECT) is modelled; buffered I/O goes through the page cache, found direct=0"
            )
        if self.time_based and self.runtime is None:
            raise ValueError("time_based: needs a runtime, found none")
        for p in self.percentile_list:
            if not 0.0 < p < 100.0:
                raise ValueError(f"percentile_list: expected percentiles in (0, 100), found {p!r}")
        return self

    @property
    def outstanding_per_job(self) -> int:
        return 1 if self.ioengine in SYNC_ENGINES else self.iodepth

    @property
    def read_share(self) -> float:
        if self.rw in ("read", "randread"):
            return 1.0
        if self.rw in ("write", "randwrite"):
            return 0.0
        return self.rwmixread / 100.0

    @property
    def pattern(self) -> Literal["seq", "rand"]:
        return "rand" if self.rw.startswith("rand") else "seq"


# ---------------------------------------------------------------------------- volume access


def job_accesses(params: FioParams, overwrite_share: float, file: str | None = None) -> list[tuple[Access, float]]:
    """The job's request classes with their shares of its bytes: reads, new writes, overwrites (of `file`)."""
    bs, pattern, rs = params.bs, params.pattern, params.read_share
    queue = params.outstanding_per_job * params.numjobs
    parts: list[tuple[Access, float]] = []
    if rs > 0:
        parts.append((Access("read", bs, pattern, queue), rs))
    if rs < 1:
        for overwrite, part in ((False, 1.0 - overwrite_share), (True, overwrite_share)):
            if part > 0:
                parts.append((Access("write", bs, pattern, queue, overwrite=overwrite, file=file), (1 - rs) * part))
    return parts


def job_usage(volume: Volume, params: FioParams, overwrite_share: float, file: str | None = None, amount: float = 0.0) -> Usage:
    """Constraints one byte of the job's I/O crosses (reads and writes in the job's mix); the `amount` bytes'
    writes are announced to the volume as part of `file` first."""
    parts = job_accesses(params, overwrite_share, file)
    if file is not None:
        for access, w in parts:
            if access.write and amount * w > 0.0:
                volume.store(FileWrite(file), amount * w, access)
    return [(c, k * w) for access, w in parts for c, k in volume.usage(access)]


def job_law(volume: Volume, params: FioParams) -> ConcurrencyLaw:
    """The volume's closed-loop law for the job's mix (the law `iowatt calibrate` validates, models.ssd)."""
    return mix_laws([(volume.concurrency(access), share) for access, share in job_accesses(params, params.overwrite * 1.0)])


def job_files(volume: Volume, params: FioParams, size_job: float) -> list[str]:
    """Each job's file (one for all when a filename is given); with overwrite=1 fio lays it out before the job."""
    files = [f"fio.{params.name}" if params.filename else f"fio.{params.name}.{j}" for j in range(params.numjobs)]
    if params.overwrite and params.read_share < 1.0:
        for name in dict.fromkeys(files):
            volume.store(FileWrite(name), size_job, Access("write", max(params.bs, 2**20), "seq", file=name))
    return files


# ---------------------------------------------------------------------------- latency distribution


def gamma_percentiles_s(mean_s: float, shape: float, percentiles: list[float]) -> dict[float, float]:
    """Percentiles of a Gamma(shape, mean/shape) latency (see the module docstring)."""
    from scipy.special import gammaincinv

    return {p: float(gammaincinv(shape, p / 100.0)) * mean_s / shape for p in percentiles}


def percentile_name(p: float) -> str:
    """The metric-name form of a percentile: 99.9 -> 'p99_9' (read_clat_p99_9_us)."""
    text = f"{p:g}".replace(".", "_")
    return f"p{text}"


# ---------------------------------------------------------------------------- run


@dataclass
class _FioJobs:
    """The fio job model: `numjobs` closed-loop jobs on one volume, each a chain of flow segments.

    Each job is one flow at a time, bounded by its share d / N of the volume's
    closed-loop rate X(N); writes are cut into FILL_SEGMENT segments so the
    drives' fill state is re-read between them.  A gate constraint stops every
    job at `runtime`."""

    ctx: RunContext
    params: FioParams
    volume: Volume
    size_job: float          # bytes of each job's file (`size`, or the whole volume)
    per_job_amount: float    # bytes each job moves (time-based: more than it can move in `runtime`)
    law: ConcurrencyLaw      # the volume's closed-loop law for the job's mix
    bound: float | None      # each job's rate bound, bytes/s (None: the engine alone limits it)
    gate: Constraint
    stop: simpy.Event
    flows: list[list[Flow]] = field(default_factory=list)
    job_end: list[float] = field(default_factory=list)
    written: list[float] = field(default_factory=list)     # host bytes each job has written (all segments started)
    ssd_drives: list[Drive] = field(default_factory=list)
    fill_trace: list[tuple[float, float, float]] = field(default_factory=list)  # (time, mean SSD fill, bytes written)
    files: list[str] = field(default_factory=list)          # each job's file, as the volume knows it (Volume.store)

    @classmethod
    def plan(cls, ctx: RunContext, params: FioParams) -> tuple[_FioJobs, float, float]:
        """The job model on ctx.system.volume, and the volume's QD1 read and write latencies."""
        engine, volume = ctx.engine, ctx.system.volume
        capacity = float(volume.capacity_bytes)
        size_job = params.size if params.size is not None else capacity
        if params.size is not None and params.size * (1 if params.filename else params.numjobs) > capacity * (1 + 1e-9):
            total = params.size * params.numjobs
            raise WorkloadConfigError(
                f"workload.size: {params.numjobs} job(s) x {params.size / 1e9:g} GB = {total / 1e9:g} GB does not fit "
                f"on the volume's {capacity / 1e9:g} GB (give `filename` to share one file/device among the jobs)"
            )
        bs, d = params.bs, params.outstanding_per_job
        n_out = d * params.numjobs
        # the job's file: `size` per job (one shared file when a filename is given); hard disks sweep it
        volume.occupy(min(1.0, size_job * (1 if params.filename else params.numjobs) / capacity))
        files = job_files(volume, params, size_job)
        lat_r = volume.qd1_latency_s(Access("read", bs, params.pattern))
        lat_w = volume.qd1_latency_s(Access("write", bs, params.pattern))
        # closed loop: N outstanding requests get X(N) from the volume's law; each job keeps its share d / N
        law = job_law(volume, params)
        x = law.requests_per_second(n_out)
        bound = d * bs * x / n_out if math.isfinite(x) else None
        deadline = params.runtime
        if params.time_based and deadline is not None:
            per_job_amount = bound * deadline * 1.01 + bs if bound is not None else 1e18
        else:
            per_job_amount = params.io_size if params.io_size is not None else size_job
        gate = engine.constraint(f"fio.{params.name}.gate", math.inf)
        jobs = cls(ctx, params, volume, size_job, per_job_amount, law, bound, gate, ctx.env.event(),
                   flows=[[] for _ in range(params.numjobs)], job_end=[0.0] * params.numjobs, written=[0.0] * params.numjobs,
                   ssd_drives=[x for x in volume.unique_drives if x.tracks_writes], files=files)
        return jobs, lat_r, lat_w

    def mean_fill(self) -> float:
        return sum(x.fill for x in self.ssd_drives) / len(self.ssd_drives) if self.ssd_drives else 0.0

    def overwrite_share(self, j: int) -> float:
        params = self.params
        if params.read_share >= 1.0:
            return 0.0
        # jobs given one `filename` share one file: its coverage grows with what all of them wrote
        mine = sum(self.written) if params.filename else self.written[j]
        if params.overwrite:
            return 1.0  # the file exists already
        if params.pattern == "rand" and params.norandommap:
            return 1.0 - math.exp(-mine / self.size_job)
        return 1.0 if mine >= self.size_job * (1 - 1e-9) else 0.0  # a later pass over the file overwrites it

    def job(self, j: int) -> Generator[simpy.Event, object, None]:
        env, engine, params = self.ctx.env, self.ctx.engine, self.params
        bs, rs = params.bs, params.read_share
        remaining = self.per_job_amount
        segment = math.inf if rs >= 1.0 else max(bs, FILL_SEGMENT * float(self.volume.capacity_bytes) / (1 - rs))
        while remaining > bs * 1e-9 and not self.stop.triggered:
            amount = min(remaining, segment)
            usage = [*job_usage(self.volume, params, self.overwrite_share(j), self.files[j], amount), (self.gate, 1.0)]
            flow = engine.start(f"fio.{params.name}.job{j}", amount, usage, max_rate=self.bound)
            self.flows[j].append(flow)
            self.written[j] += amount * (1 - rs)
            yield flow.done | self.stop
            if flow.done.triggered:
                remaining -= amount
                self.job_end[j] = env.now
                if rs < 1.0:
                    engine.settle()  # a time series of results: read the drives' fill and bytes delivered now
                    delivered = sum(f.delivered for fl in self.flows for f in fl)
                    self.fill_trace.append((env.now, self.mean_fill(), delivered * (1 - rs)))

    def control(self, finished: simpy.Event) -> Generator[simpy.Event, object, None]:
        deadline = self.params.runtime
        if deadline is None:
            yield finished
            return
        yield finished | self.ctx.env.timeout(deadline)
        if not finished.triggered:
            # runtime reached: the gate stops every job's flow now (fio stops at runtime)
            self.ctx.engine.set_capacity(self.gate, 0.0)
            self.stop.succeed()

    def run(self) -> tuple[list[float], list[float]]:
        """Run the jobs to the end (or `runtime`): (bytes each job moved, each job's runtime in seconds)."""
        env = self.ctx.env
        self.fill_trace.append((0.0, self.mean_fill(), 0.0))
        start = env.now
        finished = env.all_of([env.process(self.job(j)) for j in range(self.params.numjobs)])
        self.ctx.engine.run(until=env.process(self.control(finished)))
        end = env.now
        elapsed_job = [(end if self.stop.triggered else self.job_end[j]) - start for j in range(self.params.numjobs)]
        moved = [sum(f.delivered for f in fl) for fl in self.flows]
        return moved, elapsed_job


def run(ctx: RunContext, params: FioParams) -> WorkloadOutcome:
    jobs, lat_r, lat_w = _FioJobs.plan(ctx, params)
    moved, elapsed_job = jobs.run()
    return _outcome(jobs, moved, elapsed_job, (lat_r, lat_w))


def _utilisation(flows: list[list[Flow]], elapsed: float) -> float:
    loads: dict[Constraint, float] = {}
    for fl in flows:
        for f in fl:
            if elapsed <= 0 or f.delivered <= 0:
                continue
            rate = f.delivered / elapsed
            for c, k in f.usage.items():
                loads[c] = loads.get(c, 0.0) + k * rate
    u = 0.0
    for c, load in loads.items():
        if 0.0 < c.capacity < math.inf:
            u = max(u, load / c.capacity)
    return min(1.0, u)


def _outcome(jobs: _FioJobs, moved: list[float], elapsed_job: list[float], latencies: tuple[float, float]) -> WorkloadOutcome:
    ctx, params, flows, fill_trace, ssd_drives = jobs.ctx, jobs.params, jobs.flows, jobs.fill_trace, jobs.ssd_drives
    bs, rs, d = params.bs, params.read_share, params.outstanding_per_job
    lat_r, lat_w = latencies
    law = jobs.law
    l0, units_law = law.qd1_latency_s, law.units
    runtime = max(elapsed_job) if elapsed_job else 0.0
    total = sum(moved)
    metrics: dict[str, float] = {}
    if runtime <= 0 or total <= 0:
        raise WorkloadConfigError("workload: the job moved no data (size or runtime too small)")
    # Little's law per job: mean latency = outstanding / the job's IOPS
    job_lat = [d * bs * t / m for m, t in zip(moved, elapsed_job, strict=True) if m > 0 and t > 0]
    mean_lat = sum(job_lat) / len(job_lat)
    n_out = d * params.numjobs
    if units_law and l0 > 0:
        # SSD: a request waits for the (N - 1) / c others at its flash unit, then its own L0: Erlang with
        # k = R / L0 = 1 + (N - 1) / c stages (k = N for one unit, the saturated single server)
        shape = max(1.0, mean_lat / l0)
    else:
        shape = max(1.0, n_out * _utilisation(flows, runtime))
    metrics["bw_bytes"] = total / runtime
    metrics["iops"] = total / runtime / bs
    metrics["job_runtime_seconds"] = runtime
    metrics["outstanding_ios"] = float(n_out)
    metrics["unloaded_latency_us"] = l0 * 1e6
    metrics["latency_shape_k"] = shape
    for direction, share, lat_dir in (("read", rs, lat_r), ("write", 1 - rs, lat_w)):
        if share <= 0:
            continue
        io_bytes = total * share
        mean = mean_lat * lat_dir / l0 if l0 > 0 else mean_lat
        metrics[f"{direction}_io_bytes"] = io_bytes
        metrics[f"{direction}_bw_bytes"] = io_bytes / runtime
        metrics[f"{direction}_bw_MBps"] = io_bytes / runtime / 1e6
        metrics[f"{direction}_iops"] = io_bytes / runtime / bs
        metrics[f"{direction}_clat_mean_us"] = mean * 1e6
        metrics[f"{direction}_lat_mean_us"] = mean * 1e6  # libaio submission latency is not modelled (slat 0)
        for p, value in gamma_percentiles_s(mean, shape, params.percentile_list).items():
            metrics[f"{direction}_clat_{percentile_name(p)}_us"] = value * 1e6
    storage_J = sum(m.energy_J for m in ctx.engine.meters.values() if m.group == "storage")
    ios = total / bs
    metrics["storage_energy_per_io_uJ"] = storage_J / ios * 1e6
    metrics["storage_energy_per_GB_J"] = storage_J / (total / 1e9)
    detail: dict[str, Any] = {
        "latency_source": "the volume's QD1 latency (simulator.storage contract)",
        "latency_distribution": f"Gamma(shape k={shape:.3g}, mean = Little's-law mean); see simulator/workloads/fio.py",
        "job_bytes": moved,
        "job_runtime_seconds": elapsed_job,
    }
    if rs < 1.0 and ssd_drives:
        deciles = _deciles(fill_trace)
        detail["fill_write_GBps_by_decile"] = deciles
        detail["fill_trace"] = [{"time_s": t, "fill": f, "written_GB": w / 1e9} for t, f, w in fill_trace]
        for i, v in enumerate(deciles):
            if v is not None:
                metrics[f"fill_write_GBps_decile{i}"] = v
    reports = [x.report() for x in ssd_drives]
    if reports:
        detail["drives"] = reports
        host = sum(r["host_bytes_written"] for r in reports)
        nand_b = sum(r["nand_bytes_written"] for r in reports)
        if host > 0:
            metrics["nand_bytes_written"] = nand_b
            metrics["write_amplification_mean"] = nand_b / host
            metrics["drive_writes_per_day"] = sum(r["dwpd_at_rate"] for r in reports) / len(reports)
            years = [r["years_to_rated_endurance"] for r in reports if "years_to_rated_endurance" in r]
            if years:
                metrics["endurance_years_left"] = min(years)
        metrics["fill_end"] = sum(r["fill_end"] for r in reports) / len(reports)
    return WorkloadOutcome(metrics, detail)


def _deciles(trace: list[tuple[float, float, float]]) -> list[float | None]:
    """Host write rate (GB/s) while the mean fill was in each tenth of the capacity."""
    seconds = [0.0] * 10
    written = [0.0] * 10
    for (t0, f0, w0), (t1, f1, w1) in itertools.pairwise(trace):
        if t1 <= t0:
            continue
        k = min(9, int((f0 + f1) / 2 * 10))
        seconds[k] += t1 - t0
        written[k] += w1 - w0
    return [w / s / 1e9 if s > 0 else None for w, s in zip(written, seconds, strict=True)]


WORKLOAD = Workload(kind="fio", params=FioParams, run=run)
