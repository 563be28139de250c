"""fio in the per-request mode: every job keeps its iodepth requests outstanding, one request at a time.

Each of `numjobs` jobs issues a request of `bs` bytes (a read with
probability rwmixread / 100 in a mix) whenever one of its requests
completes, until its bytes (io_size or size) are done or the runtime is up
(time_based: requests still in flight then are not counted, as fio stops at
runtime).  Requests travel through the volume's layout to the drives
(volume.py, ssd.py, hdd.py); the options, the metric names and the checks
of the job are fio's, as in the fluid fio workload (simulator.workloads.fio),
and the result also carries fio's own JSON document (fiojson.py) with the
completion-latency percentiles and histogram bins.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
from iowatt.simulator.per_request import budget, fiojson, histogram
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.per_request.loop import Streams
from iowatt.simulator.per_request.result import Result
from iowatt.simulator.per_request.volume import pieces, volume_server
from iowatt.simulator.storage import Access, FileWrite, Volume
from iowatt.simulator.storage.contract import VolumeRequestServer
from iowatt.simulator.workloads import RunContext, WorkloadConfigError, WorkloadOutcome
from iowatt.simulator.workloads.fio import FioParams, job_accesses, job_files, job_law, percentile_name


def _requests_per_job(params: FioParams, size_job: float) -> tuple[int | None, float | None]:
    """(requests each job issues, None when only the runtime bounds it; the runtime, None when none)."""
    if params.time_based:
        return None, params.runtime
    amount = params.io_size if params.io_size is not None else size_job
    return max(1, math.ceil(amount / params.bs)), params.runtime


def _estimate(ctx: RunContext, params: FioParams, per_job: int | None, runtime: float | None) -> float:
    """Requests the run will complete: its size, or the fluid law's rate over the runtime, whichever is fewer."""
    by_size = math.inf if per_job is None else per_job * params.numjobs
    by_time = math.inf
    if runtime is not None:
        rate = job_law(ctx.system.volume, params).requests_per_second(params.outstanding_per_job * params.numjobs)
        by_time = rate * runtime
    return min(by_size, by_time)


def _store_writes(volume: Volume, params: FioParams, size_job: float, requests: float) -> list[str]:
    """Lay out the jobs' files as the fluid job does (fio writes them before an overwrite job) and store the writes
    the run will make in the drives' FTL, so that every write request costs the WA the fluid job's writes get.  The
    drives' state is then read once (module docstring of simulator.per_request.ssd)."""
    files = job_files(volume, params, size_job)
    unique = list(dict.fromkeys(files))
    if math.isfinite(requests) and params.read_share < 1.0:
        for name in unique:
            for access, share in job_accesses(params, params.overwrite * 1.0, name):
                if access.write and share > 0.0:
                    volume.store(FileWrite(name), requests * params.bs * share / len(unique), access)
    return files


def run(ctx: RunContext, params: FioParams, ramp_s: float = 0.0) -> Result:
    """The job (module docstring); `ramp_s` > 0 (time-based runs) leaves the first seconds out, as fio's ramp_time."""
    env, volume = ctx.env, ctx.system.volume
    capacity = float(volume.capacity_bytes)
    size_job = params.size if params.size is not None else capacity
    if params.size is not None and params.size * (1 if params.filename else params.numjobs) > capacity * (1 + 1e-9):
        raise WorkloadConfigError(f"workload.size: {params.numjobs} job(s) x {params.size / 1e9:g} GB does not fit on the "
                                  f"volume's {capacity / 1e9:g} GB")
    volume.occupy(min(1.0, size_job * (1 if params.filename else params.numjobs) / capacity))
    per_job, runtime = _requests_per_job(params, size_job)
    width = len(volume.drives)
    count, _piece = pieces(width, params.bs)
    events_estimate = budget.check(_estimate(ctx, params, per_job, runtime), count, "this fio job",
                                   "give a smaller size, io_size or runtime")
    files = _store_writes(volume, params, size_job, _estimate(ctx, params, per_job, runtime))
    draw = random.Random(int(ctx.rng.integers(2**62)))
    ledger = Ledger()
    striped = volume_server(env, volume, Access("read", params.bs, params.pattern, overwrite=params.overwrite, file=files[0]), ctx.rng, draw, ledger)
    streams = Streams(env, striped.submit, params.bs, [params.outstanding_per_job] * params.numjobs,
                      [math.inf if per_job is None else float(per_job)] * params.numjobs, params.read_share, draw,
                      math.inf if runtime is None else runtime + ramp_s, ramp_s=ramp_s, on_ramp=ledger.mark)
    streams.run()
    unfinished = [per_job is None or streams.requests[j] > 0 for j in range(params.numjobs)]
    elapsed = [runtime if runtime is not None and unfinished[j] else streams.stream_end[j] for j in range(params.numjobs)]
    return _outcome(ctx, params, streams, max(elapsed), ramp_s, ledger, striped, events_estimate)


def _outcome(ctx: RunContext, params: FioParams, streams: Streams, runtime: float, ramp_s: float, ledger: Ledger,
             striped: VolumeRequestServer, events_estimate: float) -> Result:
    bs = params.bs
    latencies = streams.latencies
    done = streams.completed
    if runtime <= 0.0 or done == 0:
        raise WorkloadConfigError("workload: the job completed no request (size or runtime too small)")
    # energy per I/O over the counted window: what its requests added plus the storage's idle power meanwhile
    window_J = ledger.storage_joules_since_mark(runtime) + runtime * sum(
        m.idle_W + m.extra_W for m in ctx.engine.meters.values() if m.group == "storage")
    ledger.close(ctx.engine, runtime + ramp_s)  # the energy report covers the whole run, ramp included
    metrics: dict[str, float] = {
        "bw_bytes": done * bs / runtime,
        "iops": done / runtime,
        "job_runtime_seconds": runtime,
        "outstanding_ios": float(params.outstanding_per_job * params.numjobs),
        "requests_completed": float(done),
    }
    sections: dict[str, dict[str, Any]] = {}
    for name, values in (("read", latencies[0]), ("write", latencies[1])):
        array = np.asarray(values, dtype=np.float64)
        sections[name] = fiojson.direction(array, bs, runtime, params.percentile_list)
        if array.size == 0:
            continue
        io_bytes = array.size * bs
        metrics[f"{name}_io_bytes"] = io_bytes
        metrics[f"{name}_bw_bytes"] = io_bytes / runtime
        metrics[f"{name}_bw_MBps"] = io_bytes / runtime / 1e6
        metrics[f"{name}_iops"] = array.size / runtime
        metrics[f"{name}_clat_mean_us"] = float(array.mean()) * 1e6
        metrics[f"{name}_lat_mean_us"] = float(array.mean()) * 1e6  # submission latency is not modelled (slat 0)
        metrics[f"{name}_clat_stddev_us"] = float(array.std()) * 1e6
        for p, ns in histogram.percentiles_ns(histogram.counts(array), params.percentile_list).items():
            metrics[f"{name}_clat_{percentile_name(p)}_us"] = ns / 1e3
    metrics["storage_energy_per_io_uJ"] = window_J / done * 1e6
    metrics["storage_energy_per_GB_J"] = window_J / (done * bs / 1e9)
    options = {"rw": params.rw, "bs": str(int(bs)), "iodepth": str(params.iodepth), "numjobs": str(params.numjobs),
               "ioengine": params.ioengine, "direct": "1", "rwmixread": f"{params.rwmixread:g}"}
    detail: dict[str, Any] = {
        "fio_json": fiojson.document(params.name, options, sections["read"], sections["write"], runtime),
        "devices": striped.report(),
        "events": {"simpy_timeouts": striped.events + streams.events, "estimated_before_run": events_estimate},
        "latency_distribution": "per request: flash-unit times x lognormal factor (simulator/per_request/latency.py)",
    }
    return Result(WorkloadOutcome(metrics, detail), runtime + ramp_s, striped.events + streams.events, done)

