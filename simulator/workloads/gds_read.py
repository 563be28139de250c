"""GPUDirect Storage reads, as gdsio measures them.

`threads` gdsio threads each read `size_per_thread` from the volume into GPU
memory in requests of `block_size`, DMA'd peer-to-peer over the GPU's PCIe link
(no host DRAM on the data path).  Each thread is a closed loop with `io_depth`
requests outstanding: its rate is bounded by io_depth x block / latency, with the
latency of one request at queue depth 1 taken from the drive's law
(models.ssd.unloaded_latency_s: datasheet QD1 4 KiB latency + the extra transfer
at the drive's internal streaming rate; a hard disk's seek + rotation + transfer),
and all threads share the drives' read path and the GPU link (max-min fair), so
    bandwidth = min(threads x io_depth x block / L0(block), drive ceiling, GPU link)
(the asymptotic bounds of a closed queueing network).  Reported latency is
Little's law over the outstanding requests, R = threads x io_depth / IOPS.

Platform P2P path.  Where the drive and the GPU share no PCIe switch, the
peer-to-peer DMA crosses the CPU root complex (and, across sockets, UPI), and
cuFile falls back to staging when P2P is refused (compat mode: POSIX read into
a host bounce buffer, then cudaMemcpy).  Such a path may not overlap requests
to one drive however many gdsio threads wait: `p2p_requests_per_drive` caps
the requests each drive holds (None: no cap, the PCIe-switch case), so
    N = min(threads x io_depth, drives x p2p_requests_per_drive)
and the closed-loop bound is N x block / L0(block) (Little's law with N
capped).  Bandwidth then grows with the block size and not with threads, so a
block x threads sweep tops out at the largest block.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import simpy
from iowatt.models.units import Bytes
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemRuntime
from iowatt.simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field

GiB = 2**30
SWEEP_BLOCKS = [8 * 1024 * 2**k for k in range(8)]  # 8 KiB .. 1 MiB
SWEEP_THREADS = [2**k for k in range(8)]  # 1 .. 128


class GdsReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["gds_read"] = "gds_read"
    block_size: Bytes = Field(default=2**20, ge=512, le=2**30, description="request size (gdsio -i)")
    threads: int = Field(default=128, ge=1, le=4096, description="gdsio threads (-w)")
    io_depth: int = Field(default=1, ge=1, le=4096, description="requests outstanding per thread")
    size_per_thread: Bytes = Field(default=GiB, gt=0, description="bytes each thread reads (-s)")
    pattern: Literal["seq", "rand"] = Field(default="seq", description="gdsio -I 0 (sequential) or 2 (random)")
    gpu: int = Field(default=0, ge=0, description="index of the destination GPU")
    p2p_requests_per_drive: int | None = Field(
        default=None, ge=1, le=65536, description="requests the platform's drive->GPU path overlaps per drive (None: no cap, PCIe switch)"
    )
    sweep: bool = Field(default=False, description="also sweep block 8K..1M x threads 1..128 (detail table)")


def qd1_latency_s(system: SystemRuntime, block: float, pattern: str = "rand") -> float:
    """One request's latency at queue depth 1 on the volume's drives."""
    return system.volume.qd1_latency_s(Access("read", block, pattern))  # type: ignore[arg-type]


def outstanding_per_thread(system: SystemRuntime, params: GdsReadParams, block: float, threads: int) -> float:
    """Requests one thread keeps in flight: io_depth, or its share of the path's cap over all drives."""
    total = threads * params.io_depth
    if params.p2p_requests_per_drive is not None:
        total = min(total, max(1, len(system.volume.drives)) * params.p2p_requests_per_drive)
    return total / threads


def measure(env: simpy.Environment, engine: FlowEngine, system: SystemRuntime, params: GdsReadParams,
            block: float, threads: int) -> dict[str, float]:
    if not system.gpus:
        raise WorkloadConfigError("workload kind gds_read needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    g = system.gpus[params.gpu]
    usage = [*system.volume.usage(Access("read", block, params.pattern, threads * params.io_depth)), (g.link_h2d, 1.0)]
    per_thread = outstanding_per_thread(system, params, block, threads) * block / qd1_latency_s(system, block, params.pattern)
    start = env.now
    flows = [engine.start(f"gds.t{t}", params.size_per_thread, usage, max_rate=per_thread) for t in range(threads)]
    env.run(simpy.AllOf(env, [f.done for f in flows]))
    elapsed = env.now - start
    total = params.size_per_thread * threads
    bw = total / elapsed
    iops = bw / block
    return {
        "bandwidth_GiB_per_second": bw / GiB,
        "bandwidth_MB_per_second": bw / 1e6,
        "iops": iops,
        "latency_mean_us": threads * params.io_depth / iops * 1e6,
        "elapsed_seconds": elapsed,
        "bytes_read_GB": total / 1e9,
    }


def run(ctx: RunContext, params: GdsReadParams) -> WorkloadOutcome:
    metrics = measure(ctx.env, ctx.engine, ctx.system, params, params.block_size, params.threads)
    metrics["qd1_latency_us"] = qd1_latency_s(ctx.system, params.block_size, params.pattern) * 1e6
    detail: dict = {}
    if params.sweep:
        rows = []
        for block in SWEEP_BLOCKS:
            for threads in SWEEP_THREADS:
                env = simpy.Environment()
                engine = FlowEngine(env)
                system = SystemRuntime(engine, ctx.system.config)
                m = measure(env, engine, system, params, float(block), threads)
                rows.append([block, threads, m["bandwidth_GiB_per_second"], m["iops"], m["latency_mean_us"]])
        detail["sweep"] = {"columns": ["block_bytes", "threads", "bandwidth_GiB_per_second", "iops", "latency_mean_us"],
                           "rows": rows}
        metrics["sweep_max_bandwidth_GiB_per_second"] = float(np.max([r[2] for r in rows]))
    return WorkloadOutcome(metrics, detail, {"iops": "IOPS"})


WORKLOAD = Workload("gds_read", GdsReadParams, run)
