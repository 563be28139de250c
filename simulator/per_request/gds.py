"""gdsio (GPUDirect Storage reads) in the per-request mode: the network models.gds solves, one read at a time.

`threads` gdsio threads each keep io_depth reads outstanding (loop.Streams).
What reaches the drives follows the cuFile API (models.gds.drive_requests):
batch puts every read at the drive, sync and async one per thread (an async
thread's reads wait on its CUDA stream in issue order: loop.StreamOrder).  A
read then holds one of the host's cores (at most one per gdsio thread) for cuFile's submission (an
exponential time of mean models.gds.cufile_cpu_s_per_io() on the host's cores, unless an
async stream hides it), crosses the volume's layout to the drives
(volume.py), and

- peer to peer: the GPU's PCIe link, a cut-through pacer at the link's copy
  rate (loop.LinkPacer), the fluid model's link constraint;
- in compatibility mode: the GPU's copy engine (one server, the link's copy
  rate) and the copy's launch delay (models.gds.compat_copy_latency_s()).

Metrics are gds_read's, plus the latency percentiles.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
from iowatt.models.gds import compat_copy_latency_s, cufile_cpu_s_per_io, drive_requests, submission_hidden
from iowatt.simulator.per_request import budget, histogram
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.per_request.loop import Delay, LinkPacer, Station, StreamOrder, Streams, Submit
from iowatt.simulator.per_request.result import Result
from iowatt.simulator.per_request.volume import pieces, volume_server
from iowatt.simulator.storage import Access
from iowatt.simulator.storage.contract import VolumeRequestServer
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads.gds_read import GdsReadParams, GiB

PERCENTILES = [50.0, 90.0, 99.0, 99.9]


def _then(first: Submit, second: Station) -> Submit:
    """A read through `first` (the drives), then `second` (the copy engine), then done."""

    def submit(request: object, size: float, write: bool, done: Callable[[object], None]) -> None:
        first(request, size, write, lambda r: second.submit(r, size, write, done))

    return submit


def _path(ctx: RunContext, params: GdsReadParams, striped: VolumeRequestServer, block: float,
          draw: random.Random) -> tuple[Submit, list[Station | Delay]]:
    """The read's stations in order (models.gds's network), and the stations for their event counts."""
    system, env = ctx.system, ctx.env
    stages: list[Station | Delay] = []
    storage: Submit = striped.submit
    if params.data_mode == "compat":
        launch = Delay(env, compat_copy_latency_s(), lambda r, _size, _write, done: done(r))
        copy = Station(env, 1, block / system.gpus[params.gpu].link_h2d.capacity, draw, launch.submit)
        stages += [launch, copy]
        storage = _then(striped.submit, copy)
    entry = storage
    if not submission_hidden(params.api, params.io_depth):
        # each gdsio thread does its own reads' cuFile work (models.gds): at most `threads` cores at once
        cpu = Station(env, min(system.host.cpu.capacity, params.threads), cufile_cpu_s_per_io() / system.host.core_speed, draw, storage)
        stages.append(cpu)
        entry = cpu.submit
    if params.api != "batch" and params.io_depth > 1:
        entry = StreamOrder(entry).submit
    return entry, stages


def run(ctx: RunContext, params: GdsReadParams) -> Result:
    system = ctx.system
    if not system.gpus:
        raise WorkloadConfigError("workload kind gds_read needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    if params.sweep:
        raise WorkloadConfigError("workload.sweep: the per-request mode runs one block size and thread count, found sweep: true")
    if params.gpus > 1:
        raise WorkloadConfigError(f"workload.gpus: the per-request mode reads into one GPU, found gpus: {params.gpus}")
    block, threads = float(params.block_size), params.threads
    per_thread = max(1, math.ceil(params.size_per_thread / block))
    count, _piece = pieces(len(system.volume.drives), block)
    events_estimate = budget.check(float(per_thread * threads), count, "this gdsio run", "give a smaller size_per_thread")
    draw = random.Random(int(ctx.rng.integers(2**62)))
    ledger = Ledger()
    striped = volume_server(ctx.env, system.volume, Access("read", block, params.pattern), ctx.rng, draw, ledger)
    entry, stages = _path(ctx, params, striped, block, draw)
    link = LinkPacer(system.gpus[params.gpu].link_h2d.capacity) if params.data_mode == "p2p" else None
    streams = Streams(ctx.env, entry, block, [params.io_depth] * threads, [float(per_thread)] * threads, 1.0, draw, link=link)
    streams.run()
    elapsed = max(streams.stream_end)
    done = streams.completed
    if elapsed <= 0.0 or done == 0:
        raise WorkloadConfigError("workload: the run completed no request")
    ledger.close(ctx.engine, elapsed)
    latencies = np.asarray(streams.latencies[0], dtype=np.float64)
    bw = done * block / elapsed
    events = striped.events + streams.events + sum(stage.events for stage in stages)
    metrics = {
        "bandwidth_GiB_per_second": bw / GiB,
        "bandwidth_MB_per_second": bw / 1e6,
        "iops": done / elapsed,
        "latency_mean_us": float(latencies.mean()) * 1e6,
        "elapsed_seconds": elapsed,
        "bytes_read_GB": done * block / 1e9,
        "qd1_latency_us": system.volume.qd1_latency_s(Access("read", block, params.pattern)) * 1e6,
        "outstanding_requests": float(threads * params.io_depth),
        "drive_requests": float(drive_requests(params.api, threads, params.io_depth)),
    }
    for p, ns in histogram.percentiles_ns(histogram.counts(latencies), PERCENTILES).items():
        metrics["latency_p" + f"{p:g}".replace(".", "_") + "_us"] = ns / 1e3
    detail = {"mode": params.data_mode, "path": params.path, "devices": striped.report(),
              "events": {"simpy_timeouts": events, "estimated_before_run": events_estimate}}
    return Result(WorkloadOutcome(metrics, detail, {"iops": "IOPS"}), elapsed, events, done)
