"""GPU-initiated storage for GNN training (BaM + GIDS data loader).

Each training iteration runs three phases, one after the other as the GIDS
loader times them:
  1. sampling: neighbourhood sampling of a mini-batch (`sampling_time_per_batch`
     on the GPU's compute constraint, or on host cores with sampler: cpu);
  2. feature aggregation: the GPU reads the feature vector of every sampled node
     that its caches do not hold, straight from the SSDs over its own PCIe link
     (BaM queues in GPU memory, no host DRAM or CPU on the data path): one flow on
     gpu.link_h2d + the volume's random-read path at `io_size`, with the rate bound
     Little's law gives for the queues BaM keeps (queues x depth x io_size / latency)
     and the GPU's own I/O-issue ceiling (`gpu_max_iops`);
  3. training: `train_time_per_batch` on the GPU's compute constraint.
Several drives are striped (RAID 0 in the volume; BaM spreads pages over its
drives the same way), so more drives add IOPS until the GPU link binds.

Dataset defaults are IGB heterogeneous "full" (IGBH-full, Khatua et al., KDD 2023,
public IGB description): ~547 M nodes (269 M papers, 277 M authors, ~0.7 M fields
of study, institutes, journals, conferences), ~5.8 B edges, 1024-dim float32
features = 4 KiB per node (~2.2 TB of features, far beyond GPU and host caches).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from models.units import Bytes, Seconds
from simulator.workloads import RunContext, Workload, WorkloadOutcome
from simulator.workloads.dlio import read_usage


class GnnParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["gnn"] = "gnn"
    dataset: Literal["igbh-full", "custom"] = Field(default="igbh-full", description="feature store preset")
    nodes: float = Field(default=547e6, gt=0, description="nodes in the graph (IGBH-full: ~547 M)")
    feature_dim: int = Field(default=1024, ge=1, description="features per node (IGB: 1024)")
    feature_dtype_bytes: int = Field(default=4, ge=1, le=8, description="bytes per feature (IGB: float32)")
    iterations: int = Field(default=100, ge=1, le=1_000_000, description="mini-batches timed (assumed: 100)")
    batch_size: int = Field(default=1024, ge=1, description="seed nodes per mini-batch (assumed GIDS default)")
    fanout: list[int] = Field(default_factory=lambda: [10, 5, 5], description="neighbours sampled per layer")
    unique_fraction: float = Field(default=0.9, gt=0, le=1, description="share of sampled nodes left after de-duplication within a batch (assumed)")
    cache_hit_ratio: float = Field(default=0.1, ge=0, lt=1, description="share served by GIDS' GPU software cache and constant CPU buffer (assumed)")
    io_size: Bytes = Field(default=4096, ge=512, le=2**20, description="bytes per GPU-issued read (BaM page; one feature vector)")
    queues: int = Field(default=128, ge=1, description="BaM NVMe queue pairs per drive")
    queue_depth: int = Field(default=1024, ge=1, description="entries per BaM queue")
    gpu_max_iops: float = Field(default=40e6, gt=0, description="GPU I/O-issue ceiling (BaM paper: ~45 M IOPS per GPU; assumed 40 M)")
    sampler: Literal["gpu", "cpu"] = "gpu"
    sampling_time_per_batch: Seconds = Field(default=0.02, ge=0, description="sampling compute per batch (assumed)")
    sampling_cores: int = Field(default=8, ge=1, description="host cores a CPU sampler uses")
    train_time_per_batch: Seconds = Field(default=0.03, ge=0, description="forward+backward per batch on the GPU (assumed)")
    gpu: int = Field(default=0, ge=0, description="index of the GPU that trains")

    @property
    def feature_bytes(self) -> int:
        return self.feature_dim * self.feature_dtype_bytes

    def nodes_per_batch(self) -> float:
        sampled, frontier = float(self.batch_size), float(self.batch_size)
        for f in self.fanout:
            frontier *= f
            sampled += frontier
        return min(sampled * self.unique_fraction, self.nodes)


def run(ctx: RunContext, params: GnnParams) -> WorkloadOutcome:
    env, engine, system = ctx.env, ctx.engine, ctx.system
    if not system.gpus:
        raise ValueError("workload kind gnn needs a GPU: set system.gpus.count >= 1")
    if params.gpu >= len(system.gpus):
        raise ValueError(f"workload.gpu is {params.gpu} but the system has {len(system.gpus)} GPU(s)")
    g = system.gpus[params.gpu]
    drives = len(system.volume.drives)
    fetched_nodes = params.nodes_per_batch() * (1.0 - params.cache_hit_ratio)
    batch_bytes = fetched_nodes * params.feature_bytes
    ios_per_batch = batch_bytes / params.io_size
    latency_s = min(d.spec.read_latency_us for d in system.volume.drives) * 1e-6
    outstanding = params.queues * params.queue_depth * drives
    max_rate = min(outstanding * params.io_size / latency_s, params.gpu_max_iops * params.io_size)
    agg_usage = [*read_usage(system.volume, params.io_size, "rand"), (g.link_h2d, 1.0)]
    phase = {"sampling": 0.0, "aggregation": 0.0, "training": 0.0}

    def loop():
        for i in range(params.iterations):
            t = env.now
            if params.sampling_time_per_batch > 0:
                if params.sampler == "gpu":
                    yield engine.transfer(f"gnn.sample{i}", params.sampling_time_per_batch, [(g.compute, 1.0)])
                else:
                    yield engine.transfer(
                        f"gnn.sample{i}", params.sampling_time_per_batch * params.sampling_cores,
                        [(system.host.cpu, 1.0)], max_rate=float(params.sampling_cores),
                    )
            phase["sampling"] += env.now - t
            t = env.now
            yield engine.transfer(f"gnn.aggregate{i}", batch_bytes, agg_usage, max_rate=max_rate)
            phase["aggregation"] += env.now - t
            t = env.now
            if params.train_time_per_batch > 0:
                yield engine.transfer(f"gnn.train{i}", params.train_time_per_batch, [(g.compute, 1.0)])
            phase["training"] += env.now - t

    env.process(loop())
    env.run()
    engine.finish()
    total = env.now
    reads = ios_per_batch * params.iterations
    agg = phase["aggregation"]
    system_J = sum(m.energy_J for m in engine.meters.values())
    metrics = {
        "completion_time_seconds": total,
        "sampling_seconds": phase["sampling"],
        "aggregation_seconds": agg,
        "training_seconds": phase["training"],
        "ssd_read_iops_aggregation": reads / agg if agg > 0 else 0.0,
        "ssd_read_iops_per_drive_aggregation": reads / agg / drives if agg > 0 else 0.0,
        "aggregation_GB_per_second": batch_bytes * params.iterations / agg / 1e9 if agg > 0 else 0.0,
        "features_read_GB": batch_bytes * params.iterations / 1e9,
        "iterations_per_second": params.iterations / total if total > 0 else 0.0,
        "system_energy_kJ": system_J / 1e3,
        "drives": float(drives),
    }
    detail = {
        "nodes_fetched_per_batch": fetched_nodes,
        "feature_bytes": params.feature_bytes,
        "dataset_feature_TB": params.nodes * params.feature_bytes / 1e12,
        "aggregation_rate_bound_Bps": max_rate,
    }
    return WorkloadOutcome(metrics, detail, {"ssd_read_iops_aggregation": "IOPS", "ssd_read_iops_per_drive_aggregation": "IOPS"})


WORKLOAD = Workload("gnn", GnnParams, run)
