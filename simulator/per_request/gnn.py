"""The GNN feature-aggregation phase (BaM + GIDS) in the per-request mode.

Each iteration is sampling, then feature aggregation, then training, as
simulator.workloads.gnn runs them.  Sampling and training are the same fixed
phases as there (the GPU's compute for their per-batch times); aggregation
runs request by request: the GPU keeps min(SMs x resident blocks, drives x
BaM queues x queue depth) page reads of io_size in flight, each to the drive
its page is striped on (volume.py: a random drive, one piece), through the
GPU's PCIe link and its I/O-issue ceiling (cut-through pacers, loop.py), until
the batch's pages are read.  The GPU draws gpu_busy_during_aggregation of its
active-minus-idle power while it aggregates (its warps spin on completions).
"""

from __future__ import annotations

import random

import numpy as np
from iowatt.simulator.per_request import budget, histogram
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.per_request.loop import LinkPacer, Streams
from iowatt.simulator.per_request.result import Result
from iowatt.simulator.per_request.volume import volume_server
from iowatt.simulator.storage import Access
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads.gnn import GnnParams, flash_drives, phase_metrics


def run(ctx: RunContext, params: GnnParams) -> Result:
    env, system = ctx.env, ctx.system
    if not system.gpus:
        raise WorkloadConfigError("workload kind gnn needs a GPU: expected system.gpus.count >= 1, found 0")
    if params.gpu >= len(system.gpus):
        raise WorkloadConfigError(f"workload.gpu: expected an index below {len(system.gpus)} (the GPUs in the system), found {params.gpu}")
    drives = system.volume.drives
    if not flash_drives(drives, params.io_size):
        raise WorkloadConfigError("workload kind gnn reads features from local drives: expected system.storage with NVMe drives")
    gpu = system.gpus[params.gpu]
    n = len(drives)
    pages_per_node = max(1.0, params.feature_bytes / params.io_size)
    pages = max(1, round(params.fetched_nodes_per_batch() * pages_per_node))
    in_flight = int(min(params.in_flight(), n * params.queues * params.queue_depth))
    events_estimate = budget.check(float(pages * params.iterations), 1, f"{params.iterations} iteration(s) of feature aggregation",
                                   "give fewer workload.iterations")
    draw = random.Random(int(ctx.rng.integers(2**62)))
    ledger = Ledger()
    striped = volume_server(env, system.volume, Access("read", params.io_size, "rand"), ctx.rng, draw, ledger)
    link, issue = LinkPacer(gpu.link_h2d.capacity), LinkPacer(params.gpu_max_iops * params.io_size)
    phase = {"sampling": 0.0, "aggregation": 0.0, "training": 0.0}
    busy_W = params.gpu_busy_during_aggregation * (gpu.spec.active_W - gpu.spec.idle_W)
    latencies: list[float] = []
    counted = {"events": 0}

    def compute(seconds: float, on_gpu: bool) -> float:
        """A fixed phase; its energy on the GPU (or the host's cores) as the fluid workload meters it."""
        if on_gpu:
            ledger.add([(gpu.meter, gpu.spec.active_W - gpu.spec.idle_W)], seconds)
        else:
            busy_core_W = (system.host.cpu_spec.tdp_W - system.host.cpu_spec.idle_W) / system.host.cpu_spec.cores
            ledger.add([(system.host.cpu_meter, busy_core_W * params.sampling_cores)], seconds)
        return seconds

    def loop():
        for _ in range(params.iterations):
            t = env.now
            if params.sampling_time_per_batch > 0:
                yield env.timeout(compute(params.sampling_time_per_batch, params.sampler == "gpu"))
            phase["sampling"] += env.now - t
            t = env.now
            streams = Streams(env, striped.submit, params.io_size, [in_flight], [float(pages)], 1.0, draw, link=link, issue_pacer=issue)
            yield streams.start()
            elapsed = max(streams.stream_end) - t
            ledger.add([(gpu.meter, busy_W)], elapsed)
            ledger.end_phase(elapsed)
            phase["aggregation"] += elapsed
            latencies.extend(streams.latencies[0])
            counted["events"] += streams.events
            t = env.now
            if params.train_time_per_batch > 0:
                yield env.timeout(compute(params.train_time_per_batch, True))
            phase["training"] += env.now - t

    done = env.process(loop())
    env.run(until=done)
    ledger.close(ctx.engine, env.now)
    events = striped.events + counted["events"]
    detail = {"devices": striped.report(), "events": {"simpy_timeouts": events, "estimated_before_run": events_estimate},
              "pages_per_iteration": pages}
    return _outcome(ctx, params, phase, pages * params.iterations, n, in_flight, latencies, detail, events)


def _outcome(ctx: RunContext, params: GnnParams, phase: dict[str, float], reads: int, drives: int, in_flight: int,
             latencies: list[float], detail: dict[str, object], events: int) -> Result:
    """gnn's metrics (simulator.workloads.gnn's names) and the reads' latency percentiles."""
    total = ctx.env.now
    metrics = {
        **phase_metrics(phase, total, reads, reads * params.io_size, drives, params.iterations),
        "system_energy_kJ": sum(m.energy_J for m in ctx.engine.meters.values()) / 1e3,
        "requests_in_flight": float(in_flight),
    }
    array = np.asarray(latencies, dtype=np.float64)
    metrics["read_latency_mean_us"] = float(array.mean()) * 1e6
    for p, ns in histogram.percentiles_ns(histogram.counts(array), [50.0, 99.0, 99.9]).items():
        metrics["read_latency_p" + f"{p:g}".replace(".", "_") + "_us"] = ns / 1e3
    units = {"ssd_read_iops_aggregation": "IOPS", "ssd_read_iops_per_drive_aggregation": "IOPS", "ssd_reads": "requests"}
    return Result(WorkloadOutcome(metrics, detail, units), total, events, int(array.size))
