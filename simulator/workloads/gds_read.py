"""GPUDirect Storage reads, as gdsio measures them (models.gds).

`threads` gdsio threads each read `size_per_thread` from the volume into GPU
memory in requests of `block_size`, with `io_depth` requests outstanding per
thread through cuFile's `api` (sync, batch or async: models.gds says how many
reach the drives).  The closed loop of models.gds (the volume's own law at each
depth, cuFile's CPU per request on the host's cores, and in compatibility mode
the bounce-buffer copy) gives the rate; every thread is a flow bounded by its
share of it, and the drives' ceilings and the GPU's link are shared max-min
fair.  Reported latency is Little's law over the threads x io_depth requests
the application keeps outstanding, R = N / IOPS.

Where the GPU sits relative to the drives (`path`: a shared PCIe switch, the
same root complex, across sockets) decides the mode by default: P2P on a
switch or a root complex, cuFile's compatibility mode across sockets
(models.gds.default_mode); `mode` overrides it.
"""

from __future__ import annotations

import math
from typing import Literal

import simpy
from iowatt.models.gds import (
    COMPAT_DRAM_BYTES_PER_BYTE,
    GdsApi,
    GdsLoop,
    GdsMode,
    cufile_cpu_s_per_io,
    default_mode,
    drive_requests,
    gds_loop,
    submission_hidden,
)
from iowatt.models.host_interface import GpuPath
from iowatt.models.units import Bytes
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import GPURuntime
from iowatt.simulator.storage import Access, Usage
from iowatt.simulator.storage.member_law import ceiling_per_second, sampled_rates
from iowatt.simulator.system import SystemRuntime
from iowatt.simulator.workloads import RunContext, Workload, WorkloadConfigError, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field, model_validator

GiB = 2**30
SWEEP_BLOCKS = [8 * 1024 * 2**k for k in range(8)]  # 8 KiB .. 1 MiB
SWEEP_THREADS = [2**k for k in range(8)]  # 1 .. 128


class GdsReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["gds_read"] = "gds_read"
    block_size: Bytes = Field(default=2**20, ge=512, le=2**30, description="request size (gdsio -i)")
    threads: int = Field(default=128, ge=1, le=4096, description="gdsio threads (-w)")
    io_depth: int = Field(default=1, ge=1, le=4096, description="requests outstanding per thread (batch size, or reads queued on the stream)")
    api: GdsApi = Field(
        default="sync",
        description="cuFile API gdsio drives: sync (cuFileRead, -x 0), batch (cuFileBatchIOSubmit, -x 6: io_depth reads at the "
        "drive per thread), async (cuFileReadAsync on one CUDA stream per thread, -x 5: stream-ordered, one read at the drive)",
    )
    size_per_thread: Bytes = Field(default=GiB, gt=0, description="bytes each thread reads (-s)")
    pattern: Literal["seq", "rand"] = Field(default="seq", description="gdsio -I 0 (sequential) or 2 (random)")
    gpu: int = Field(default=0, ge=0, description="index of the destination GPU (the first one when `gpus` > 1)")
    gpus: int = Field(
        default=1, ge=1, le=64,
        description="GPUs read into at once (indices gpu .. gpu + gpus - 1), each by its own `threads` threads: gdsio run on "
        "every GPU at the same time (-d per job); the drives serve all of them, each GPU's link carries its own share",
    )
    path: GpuPath = Field(
        default="root_complex",
        description="where the GPU sits relative to the drives: switch (a shared PCIe switch), root_complex (different root "
        "ports of one CPU: the one-socket default) or cross_socket (GPUDirect Storage Design Guide, paths from storage to GPUs)",
    )
    mode: Literal["auto", "p2p", "compat"] = Field(
        default="auto", description="cuFile's data path: p2p (DMA into GPU memory), compat (bounce buffer + cudaMemcpy); auto: by `path`"
    )
    sweep: bool = Field(default=False, description="also sweep block 8K..1M x threads 1..128 (detail table)")

    @model_validator(mode="after")
    def _depth_needs_an_api(self) -> GdsReadParams:
        if self.api == "sync" and self.io_depth > 1:
            raise ValueError(f"io_depth: cuFileRead (api sync) keeps one read per thread; use api batch or async, found io_depth {self.io_depth}")
        return self

    @property
    def data_mode(self) -> GdsMode:
        return default_mode(self.path) if self.mode == "auto" else self.mode


def _gpus(system: SystemRuntime, params: GdsReadParams) -> list[GPURuntime]:
    if not system.gpus:
        raise WorkloadConfigError("workload kind gds_read needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    if params.gpu + params.gpus > len(system.gpus):
        raise WorkloadConfigError(f"workload.gpus: expected at most {len(system.gpus) - params.gpu} (the GPUs from index "
                                  f"{params.gpu} on), found {params.gpus}")
    return system.gpus[params.gpu:params.gpu + params.gpus]


def storage_rates(system: SystemRuntime, access: Access, depth: int) -> tuple[float, ...]:
    """Requests/s the volume serves with 1..depth outstanding: its law, capped by its constraints."""
    volume = system.volume

    def rate(k: int) -> float:
        at_k = access.with_(queue_depth=float(k))
        return min(volume.concurrency(at_k).requests_per_second(k), ceiling_per_second(volume.usage(at_k), access.block_bytes))

    return sampled_rates(rate, depth)


def closed_loop(system: SystemRuntime, params: GdsReadParams, block: float, threads: int) -> GdsLoop:
    """`threads`: gdsio's threads on all the GPUs together."""
    gpus = _gpus(system, params)
    n = drive_requests(params.api, threads, params.io_depth)
    access = Access("read", block, params.pattern, n)
    cpu_s = 0.0 if submission_hidden(params.api, params.io_depth) else cufile_cpu_s_per_io()
    # cuFile's CPU cost is stated for the reference core; the host's cores run at core_speed of it
    ceiling = ceiling_per_second(system.volume.usage(access), block)
    # in compatibility mode each GPU's copy engine copies its own threads' reads: their rates add up
    copy_Bps = sum(g.link_h2d.capacity for g in gpus)
    return gds_loop(storage_rates(system, access, n), block, n, params.data_mode, system.host.cpu.capacity, copy_Bps,
                    cpu_s, system.host.core_speed, ceiling, submitters=threads)


def usage(system: SystemRuntime, params: GdsReadParams, gpu: GPURuntime, block: float, n: int) -> Usage:
    """A byte's path: the volume at depth N, its GPU's link, cuFile's CPU, and the bounce buffer's DRAM in compat mode."""
    out = [*system.volume.usage(Access("read", block, params.pattern, n)), (gpu.link_h2d, 1.0),
           (system.host.cpu, cufile_cpu_s_per_io() / block / system.host.core_speed)]
    if params.data_mode == "compat":
        out.append((system.host.memory, COMPAT_DRAM_BYTES_PER_BYTE))
    return out


def measure(env: simpy.Environment, engine: FlowEngine, system: SystemRuntime, params: GdsReadParams,
            block: float, threads: int) -> tuple[dict[str, float], GdsLoop]:
    """`threads` per GPU; every GPU's threads read at once."""
    gpus = _gpus(system, params)
    all_threads = threads * len(gpus)
    loop = closed_loop(system, params, block, all_threads)
    per_thread = loop.rate * block / all_threads
    n = drive_requests(params.api, all_threads, params.io_depth)
    start = env.now
    flows = [engine.start(f"gds.g{g}.t{t}", params.size_per_thread, usage(system, params, gpu, block, n), max_rate=per_thread)
             for g, gpu in enumerate(gpus) for t in range(threads)]
    env.run(simpy.AllOf(env, [f.done for f in flows]))
    elapsed = env.now - start
    total = params.size_per_thread * all_threads
    bw = total / elapsed
    iops = bw / block
    return {
        "bandwidth_GiB_per_second": bw / GiB,
        "bandwidth_MB_per_second": bw / 1e6,
        "iops": iops,
        "latency_mean_us": all_threads * params.io_depth / iops * 1e6,
        "elapsed_seconds": elapsed,
        "bytes_read_GB": total / 1e9,
    }, loop


def _sweep(ctx: RunContext, params: GdsReadParams) -> dict:
    """The study's grid: block 8K..1M x depth 1..128, the depth being gdsio's threads (sync) or its IO depth
    per thread (batch, async)."""
    axis = "threads" if params.api == "sync" else "io_depth"
    rows = []
    for block in SWEEP_BLOCKS:
        for depth in SWEEP_THREADS:
            cell = params.model_copy(update={axis: depth, "block_size": block})
            env = simpy.Environment()
            engine = FlowEngine(env)
            system = SystemRuntime(engine, ctx.system.config)
            m, loop = measure(env, engine, system, cell, float(block), cell.threads)
            rows.append([block, depth, m["bandwidth_GiB_per_second"], m["iops"], m["latency_mean_us"], loop.binding()])
    return {"columns": ["block_bytes", axis, "bandwidth_GiB_per_second", "iops", "latency_mean_us", "binding"], "rows": rows}


def run(ctx: RunContext, params: GdsReadParams) -> WorkloadOutcome:
    import numpy as np
    metrics, loop = measure(ctx.env, ctx.engine, ctx.system, params, params.block_size, params.threads)
    metrics["qd1_latency_us"] = ctx.system.volume.qd1_latency_s(Access("read", params.block_size, params.pattern)) * 1e6
    metrics["outstanding_requests"] = float(params.threads * params.gpus * params.io_depth)
    metrics["drive_requests"] = float(drive_requests(params.api, params.threads * params.gpus, params.io_depth))
    detail: dict = {"mode": params.data_mode, "path": params.path, "binding": loop.binding()}
    if params.sweep:
        detail["sweep"] = _sweep(ctx, params)
        metrics["sweep_max_bandwidth_GiB_per_second"] = float(np.max([r[2] for r in detail["sweep"]["rows"]]))
    if not math.isfinite(metrics["bandwidth_GiB_per_second"]):
        raise WorkloadConfigError("workload: the read moved no data")
    return WorkloadOutcome(metrics, detail, {"iops": "IOPS"})


WORKLOAD = Workload("gds_read", GdsReadParams, run)
