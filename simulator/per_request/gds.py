"""gdsio (GPUDirect Storage reads) in the per-request mode.

`threads` gdsio threads each keep io_depth reads of `block_size` outstanding
and read size_per_thread each; the platform's peer-to-peer path carries at
most p2p_requests_per_drive x drives of them at once (loop.Gate; the rest
wait, as simulator.workloads.gds_read counts it).  A
read crosses the volume's layout to the drives (volume.py) and, peer to
peer, the GPU's PCIe link, a cut-through pacer at the link's copy rate
(loop.LinkPacer).  Metrics are gds_read's, plus the latency percentiles.
"""

from __future__ import annotations

import math
import random

import numpy as np
from iowatt.simulator.per_request import budget, histogram
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.per_request.loop import Gate, LinkPacer, Streams
from iowatt.simulator.per_request.result import Result
from iowatt.simulator.per_request.volume import StripedRequests, pieces
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads.gds_read import GdsReadParams, GiB, outstanding_per_thread, qd1_latency_s

PERCENTILES = [50.0, 90.0, 99.0, 99.9]


def run(ctx: RunContext, params: GdsReadParams) -> Result:
    system = ctx.system
    if not system.gpus:
        raise WorkloadConfigError("workload kind gds_read needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    if params.sweep:
        raise WorkloadConfigError("workload.sweep: the per-request mode runs one block size and thread count, found sweep: true")
    block, threads = float(params.block_size), params.threads
    in_flight = max(1, round(outstanding_per_thread(system, params, block, threads) * threads))
    per_thread = max(1, math.ceil(params.size_per_thread / block))
    count, _piece = pieces(len(system.volume.drives), block)
    events_estimate = budget.check(float(per_thread * threads), count, "this gdsio run", "give a smaller size_per_thread")
    draw = random.Random(int(ctx.rng.integers(2**62)))
    ledger = Ledger()
    striped = StripedRequests(ctx.env, system.volume, block, params.pattern, False, ctx.rng, draw, ledger)
    gpu = system.gpus[params.gpu]
    # every thread keeps io_depth requests outstanding; the platform's P2P path carries at most `in_flight` (the rest wait)
    path = Gate(striped.submit, in_flight).submit if in_flight < threads * params.io_depth else striped.submit
    streams = Streams(ctx.env, path, block, [params.io_depth] * threads, [float(per_thread)] * threads, 1.0, draw,
                      link=LinkPacer(gpu.link_h2d.capacity))
    streams.run()
    elapsed = max(streams.stream_end)
    done = streams.completed
    if elapsed <= 0.0 or done == 0:
        raise WorkloadConfigError("workload: the run completed no request")
    ledger.close(ctx.engine, elapsed)
    latencies = np.asarray(streams.latencies[0], dtype=np.float64)
    bw = done * block / elapsed
    metrics = {
        "bandwidth_GiB_per_second": bw / GiB,
        "bandwidth_MB_per_second": bw / 1e6,
        "iops": done / elapsed,
        "latency_mean_us": float(latencies.mean()) * 1e6,
        "elapsed_seconds": elapsed,
        "bytes_read_GB": done * block / 1e9,
        "qd1_latency_us": qd1_latency_s(system, block, params.pattern) * 1e6,
        "requests_in_flight": float(in_flight),
    }
    for p, ns in histogram.percentiles_ns(histogram.counts(latencies), PERCENTILES).items():
        metrics["latency_p" + f"{p:g}".replace(".", "_") + "_us"] = ns / 1e3
    detail = {"devices": striped.report(), "events": {"simpy_timeouts": striped.events + streams.events,
                                                      "estimated_before_run": events_estimate}}
    return Result(WorkloadOutcome(metrics, detail, {"iops": "IOPS"}), elapsed, striped.events + streams.events, done)
