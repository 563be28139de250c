"""GPU-initiated storage for GNN training (BaM + GIDS data loader).

Each training iteration runs three phases, one after the other as the GIDS
loader times them:
  1. sampling: neighbourhood sampling of a mini-batch over the graph structure
     pinned in host memory (UVA) (`sampling_time_per_batch` on the GPU's compute
     constraint, or on host cores with sampler: cpu);
  2. feature aggregation: the GPU reads the feature page of every sampled node
     that its caches do not hold, straight from the SSDs over its own PCIe link
     (BaM queues in GPU memory, no host DRAM or CPU on the data path);
  3. training: `train_time_per_batch` on the GPU's compute constraint.
While it aggregates, the GPU draws `gpu_busy_during_aggregation` of its
active-minus-idle power: GIDS' kernel fills every SM with warps that spin on
their completion queues (BaM polls; there are no interrupts).

Aggregation physics (closed queueing loop, DESIGN section 2).  GIDS' feature
kernel (read_feature_kernel, GIDS repository bam_nvme.cu) launches one 32-thread
block per node and each warp blocks on its own 4 KiB page read, so the requests
in flight are the resident blocks: SMs x blocks per SM (CUDA: at most 32
resident blocks per SM; H100 NVL: 132 SMs -> 4,224), capped by BaM's queues
(128 queue pairs x 1,024 entries per drive).  Pages are spread over the drives
(BaM stripes its address range), so each drive sees its share N_d and serves
    IOPS_d = N_d / (L0 + (N_d - 1) / C)   (models.ssd.closed_loop)
with L0 the drive's QD1 read latency and C its ceiling (block-size law at
`io_size`): the exact MVA of N_d requests on c = C x L0 flash units, each
request sent to the unit its page maps to (smooth knee, IOPS_d -> C).  The
GPU link and the GPU's own issue rate (`gpu_max_iops`) bound the sum.  With
thousands of requests in flight a Gen5 drive runs close to its ceiling; as
drives are added each holds fewer requests and sits lower on its knee, so
IOPS grow less than in proportion until the GPU link binds.  Small reads
cost energy per command as well as per NAND byte (models.ssd_power), so a
drive whose 4 KiB reads at that rate would draw more than its power-state
cap is held below it by the engine's power constraint; no catalog drive is
(each reaches its datasheet 4 KiB IOPS at PS0).  GPU energy is reported by
phase (gpu_energy_sampling_J, _aggregation_J, _training_J).

Dataset and loop defaults are IGB heterogeneous "full" as GIDS runs it (GIDS
repository, run_GIDS_IGBH.sh and its logged result GIDS_IGBH.txt): batch 1024,
fanout 10/5/5, 4 KiB pages (1024 float32 features per node), 4 GiB GPU
software cache, 20 % CPU buffer; the log counts 48,828,950 SSD page reads in a
100-iteration window (488,290 per iteration, measured) with 2.62 s of graph
sampling and 1.92 s of training per 100 iterations (measured on the GIDS
authors' GPU; assumed the same on an H100 NVL, whose sampling is bound by UVA
accesses over PCIe).  IGBH-full: 547 M nodes (269 M papers, 277 M authors,
0.7 M fields of study, 27 k institutes), 5.8 B edges (Khatua et al., KDD 2023).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Literal

import simpy
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes, Seconds
from iowatt.simulator.machine import GPURuntime
from iowatt.simulator.storage import Access, Drive, Usage
from iowatt.simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field

# GIDS log (GIDS_IGBH.txt): SSD page reads in the timed 100-iteration window, IGBH-full, batch 1024, fanout 10/5/5
IGBH_FULL_READS_PER_ITERATION = 48_828_950 / 100


class GnnParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["gnn"] = "gnn"
    dataset: Literal["igbh-full", "custom"] = Field(
        default="igbh-full", description="igbh-full: page reads per iteration measured by GIDS; custom: from batch, fanout, uniqueness and cache hits"
    )
    nodes: float = Field(default=547e6, gt=0, description="nodes in the graph (IGBH-full: ~547 M)")
    feature_dim: int = Field(default=1024, ge=1, description="features per node (IGB: 1024)")
    feature_dtype_bytes: int = Field(default=4, ge=1, le=8, description="bytes per feature (IGB: float32)")
    iterations: int = Field(default=100, ge=1, le=1_000_000, description="mini-batches timed (GIDS logs a 100-iteration window)")
    batch_size: int = Field(default=1024, ge=1, description="seed nodes per mini-batch (GIDS run_GIDS_IGBH.sh)")
    fanout: list[int] = Field(default_factory=lambda: [10, 5, 5], description="neighbours sampled per layer (GIDS run_GIDS_IGBH.sh)")
    unique_fraction: float = assumed_field(
        0.9, low=0.8, high=1.0, gt=0, le=1, description="custom: share of sampled nodes left after de-duplication",
        note="neighbour sampling from a batch of seeds in a graph of hundreds of millions of nodes draws few nodes twice",
        range_note="low: 0.8, a power-law graph whose hubs are drawn by many seeds; high: 1, no node drawn twice")
    cache_hit_ratio: float = Field(default=0.083, ge=0, lt=1, description="custom: share served by GIDS' GPU cache (GIDS log: hit rate 0.083)")
    io_size: Bytes = Field(default=4096, ge=512, le=2**20, description="bytes per GPU-issued read (BaM page; GIDS page_size 4096)")
    queues: int = Field(default=128, ge=1, description="BaM NVMe queue pairs per drive (GIDS log: n_qps 128)")
    queue_depth: int = Field(default=1024, ge=1, description="entries per BaM queue (BaM_Feature_Store queueDepth)")
    gpu_sms: int = Field(default=132, ge=1, description="streaming multiprocessors of the GPU (H100 NVL / SXM: 132)")
    blocks_per_sm: int = Field(default=32, ge=1, description="resident thread blocks per SM (CUDA limit on Ampere/Hopper: 32)")
    gpu_max_iops: float = assumed_field(
        40e6, low=20e6, high=80e6, shape="log-uniform", gt=0, description="GPU I/O-issue ceiling (40 M)",
        note="BaM reports tens of millions of IOPS per GPU",
        range_note="low: 20 M, the low end of 'tens of millions'; high: 80 M, twice the value, a GPU whose submission "
        "kernels are not its limit")
    sampler: Literal["gpu", "cpu"] = "gpu"
    sampling_time_per_batch: Seconds = Field(default=0.0262, ge=0, description="sampling per batch (GIDS log: 2.62 s per 100 iterations)")
    sampling_cores: int = Field(default=8, ge=1, description="host cores a CPU sampler uses")
    train_time_per_batch: Seconds = Field(default=0.0192, ge=0, description="forward+backward per batch (GIDS log: 1.92 s per 100 iterations)")
    gpu: int = Field(default=0, ge=0, description="index of the GPU that trains")
    gpu_busy_during_aggregation: float = assumed_field(
        1.0, low=0.7, high=1.0, point="estimate", ge=0, le=1,
        description="share of the GPU's active-minus-idle power drawn while BaM warps wait on reads (1: every SM busy)",
        note="every SM holds resident warps spinning on completion queues",
        range_note="high: 1, every SM as busy as in training; low: 0.7, spinning warps issue loads and compares but "
        "leave the tensor cores idle, which draw much of a training step's dynamic power",
    )

    @property
    def feature_bytes(self) -> int:
        return self.feature_dim * self.feature_dtype_bytes

    def nodes_per_batch(self) -> float:
        sampled, frontier = float(self.batch_size), float(self.batch_size)
        for f in self.fanout:
            frontier *= f
            sampled += frontier
        return min(sampled * self.unique_fraction, self.nodes)

    def fetched_nodes_per_batch(self) -> float:
        """Unique nodes whose features come from the SSDs in one iteration."""
        if self.dataset == "igbh-full":
            return IGBH_FULL_READS_PER_ITERATION * self.io_size / max(self.feature_bytes, self.io_size)
        return self.nodes_per_batch() * (1.0 - self.cache_hit_ratio)

    def in_flight(self) -> int:
        return self.gpu_sms * self.blocks_per_sm


def page_reads(io_size: float, outstanding: float) -> Access:
    """The feature-page reads one drive serves: random, `outstanding` in flight."""
    return Access("read", io_size, "rand", max(1.0, outstanding))


def flash_drives(drives: list[Drive], io_size: float) -> bool:
    """BaM reads pages straight from SSD queues: every drive's random reads must run on flash units (its
    concurrency law says so), as no hard disk's do."""
    return bool(drives) and all(d.concurrency(page_reads(io_size, 1.0)).units for d in drives)


def drive_iops(drive: Drive, io_size: float, outstanding: float) -> float:
    """Random-read IOPS one drive serves with `outstanding` requests in flight: its concurrency law (the flash units
    its power state lets work at once included, models.ssd.closed_loop's law otherwise), at most its ceiling 1 / S."""
    access = page_reads(io_size, outstanding)
    law = drive.concurrency(access)
    rate = law.requests_per_second(access.queue_depth)
    return rate if law.queue_seconds <= 0.0 else min(rate, 1.0 / law.queue_seconds)


class _Phases:
    """One GNN training loop on the GPU: sampling, feature aggregation (the SSD-bound phase) and training, with
    the time and the GPU energy of each phase."""

    def __init__(self, ctx: RunContext, params: GnnParams, gpu: GPURuntime) -> None:
        self.ctx, self.params, self.gpu = ctx, params, gpu
        self.seconds = {"sampling": 0.0, "aggregation": 0.0, "training": 0.0}
        self.gpu_J = dict.fromkeys(self.seconds, 0.0)
        self._mark_J = 0.0

    def _close(self, name: str) -> None:
        """The GPU energy since the last phase boundary belongs to phase `name`."""
        now_J = self.gpu.energy_now_J()
        self.gpu_J[name] += now_J - self._mark_J
        self._mark_J = now_J

    def loop(self, batch_bytes: float, agg_usage: Usage, max_rate: float) -> Generator[simpy.Event, object, None]:
        env, engine, system, params, g = self.ctx.env, self.ctx.engine, self.ctx.system, self.params, self.gpu
        for i in range(params.iterations):
            self._close("training")  # idle time before the first phase counts with training (none in this loop)
            t = env.now
            if params.sampling_time_per_batch > 0:
                if params.sampler == "gpu":
                    yield engine.transfer(f"gnn.sample{i}", params.sampling_time_per_batch, [(g.compute, 1.0)])
                else:
                    yield engine.transfer(
                        f"gnn.sample{i}", params.sampling_time_per_batch * params.sampling_cores,
                        [(system.host.cpu, 1.0)], max_rate=float(params.sampling_cores),
                    )
            self.seconds["sampling"] += env.now - t
            self._close("sampling")
            t = env.now
            engine.set_meter_extra(g.meter, params.gpu_busy_during_aggregation * (g.spec.active_W - g.spec.idle_W))
            yield engine.transfer(f"gnn.aggregate{i}", batch_bytes, agg_usage, max_rate=max_rate)
            engine.set_meter_extra(g.meter, 0.0)
            self.seconds["aggregation"] += env.now - t
            self._close("aggregation")
            t = env.now
            if params.train_time_per_batch > 0:
                yield engine.transfer(f"gnn.train{i}", params.train_time_per_batch, [(g.compute, 1.0)])
            self.seconds["training"] += env.now - t
        self._close("training")


def phase_metrics(phase: dict[str, float], total_s: float, reads: float, bytes_read: float, drives: int, iterations: int) -> dict[str, float]:
    """The run's times by phase and the aggregation's rates (both modes report these names)."""
    agg = phase["aggregation"]
    return {
        "completion_time_seconds": total_s,
        "sampling_seconds": phase["sampling"],
        "aggregation_seconds": agg,
        "training_seconds": phase["training"],
        "ssd_read_iops_aggregation": reads / agg if agg > 0 else 0.0,
        "ssd_read_iops_per_drive_aggregation": reads / agg / drives if agg > 0 else 0.0,
        "aggregation_GB_per_second": bytes_read / agg / 1e9 if agg > 0 else 0.0,
        "features_read_GB": bytes_read / 1e9,
        "ssd_reads": float(reads),
        "iterations_per_second": iterations / total_s if total_s > 0 else 0.0,
        "drives": float(drives),
    }


def run(ctx: RunContext, params: GnnParams) -> WorkloadOutcome:
    env, engine, system = ctx.env, ctx.engine, ctx.system
    if not system.gpus:
        raise WorkloadConfigError("workload kind gnn needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    g = system.gpus[params.gpu]
    drives = system.volume.drives
    if not flash_drives(drives, params.io_size):
        raise WorkloadConfigError("workload kind gnn reads features from local drives: expected system.storage with NVMe drives")
    n = len(drives)
    fetched_nodes = params.fetched_nodes_per_batch()
    # one feature vector spans ceil(feature / page) pages
    pages_per_node = max(1.0, params.feature_bytes / params.io_size)
    batch_bytes = fetched_nodes * pages_per_node * params.io_size
    ios_per_batch = fetched_nodes * pages_per_node
    per_drive_outstanding = min(params.in_flight() / n, params.queues * params.queue_depth)
    # pages are striped evenly, so the slowest drive sets the pace: n x its closed-loop IOPS (concurrency law);
    # the GPU's issue ceiling; the drives' own ceilings and power caps are constraints of the engine
    unique = system.volume.unique_drives
    slowest = min(drive_iops(d, params.io_size, per_drive_outstanding) for d in unique)
    max_rate = min(n * slowest * params.io_size, params.gpu_max_iops * params.io_size)
    pages = Access("read", params.io_size, "rand", int(n * per_drive_outstanding))
    agg_usage = [*system.volume.usage(pages), (g.link_h2d, 1.0)]
    phases = _Phases(ctx, params, g)
    env.process(phases.loop(batch_bytes, agg_usage, max_rate))
    engine.run()
    phase, gpu_J = phases.seconds, phases.gpu_J
    total = env.now
    reads = ios_per_batch * params.iterations
    system_J = sum(m.energy_J for m in engine.meters.values())
    metrics = {
        **phase_metrics(phase, total, reads, batch_bytes * params.iterations, n, params.iterations),
        "system_energy_kJ": system_J / 1e3,
        **{f"gpu_energy_{name}_J": joules for name, joules in gpu_J.items()},
    }
    detail = {
        "nodes_fetched_per_batch": fetched_nodes,
        "feature_bytes": params.feature_bytes,
        "dataset_feature_TB": params.nodes * params.feature_bytes / 1e12,
        "requests_in_flight_per_drive": per_drive_outstanding,
        "drive_iops_closed_loop": [drive_iops(d, params.io_size, per_drive_outstanding) for d in drives],
        "aggregation_rate_bound_Bps": max_rate,
    }
    return WorkloadOutcome(metrics, detail, {"ssd_read_iops_aggregation": "IOPS", "ssd_read_iops_per_drive_aggregation": "IOPS", "ssd_reads": "requests"})


WORKLOAD = Workload("gnn", GnnParams, run)
