"""fio's JSON output shape (as `fio --output-format=json+ --group_reporting` prints it) for a per-request run.

Only what the per-request mode knows is filled: per direction io_bytes,
io_kbytes, bw_bytes, bw (KiB/s), iops, runtime (ms), total_ios, and the
latency blocks slat_ns (zero: submission is not modelled), clat_ns (min, max,
mean, stddev, N, percentile, bins) and lat_ns (= clat + slat).  The document
is data; it is returned to the CLI layer, which writes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from iowatt.simulator.per_request import histogram

FIO_VERSION = "iowatt per-request"


def _stats(latencies_ns: np.ndarray) -> dict[str, Any]:
    n = int(latencies_ns.size)
    if n == 0:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    return {
        "min": int(latencies_ns.min()),
        "max": int(latencies_ns.max()),
        "mean": float(latencies_ns.mean()),
        "stddev": float(latencies_ns.std(ddof=1)) if n > 1 else 0.0,
        "N": n,
    }


def direction(latencies_s: np.ndarray, block_bytes: float, runtime_s: float, percentiles: list[float]) -> dict[str, Any]:
    """One of fio's "read" / "write" sections."""
    ns = np.rint(np.asarray(latencies_s, dtype=np.float64) * 1e9)
    n = int(ns.size)
    io_bytes = n * block_bytes
    counts = histogram.counts(latencies_s)
    clat = _stats(ns)
    if n:
        values = histogram.percentiles_ns(counts, percentiles)
        clat["percentile"] = {histogram.percentile_key(p): int(v) for p, v in values.items()}
        clat["bins"] = histogram.bins(counts)
    bw = io_bytes / runtime_s if runtime_s > 0 else 0.0
    return {
        "io_bytes": int(io_bytes),
        "io_kbytes": int(io_bytes // 1024),
        "bw_bytes": int(bw),
        "bw": int(bw // 1024),
        "iops": n / runtime_s if runtime_s > 0 else 0.0,
        "runtime": round(runtime_s * 1e3),
        "total_ios": n,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": clat,
        "lat_ns": _stats(ns),
    }


def document(job_name: str, options: dict[str, str], read: dict[str, Any], write: dict[str, Any], runtime_s: float) -> dict[str, Any]:
    """The whole fio document: one job (group reporting), its options and both directions."""
    return {
        "fio version": FIO_VERSION,
        "global options": {},
        "jobs": [
            {
                "jobname": job_name,
                "groupid": 0,
                "error": 0,
                "job options": options,
                "read": read,
                "write": write,
                "job_runtime": round(runtime_s * 1e3),
            }
        ],
    }
