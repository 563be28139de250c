"""`iowatt run --format fio | fio-terse`: a fio workload's prediction as fio itself prints it.

`fio`: fio's JSON (`fio --output-format=json`): `jobs[]` with `read` / `write`, `io_bytes`, `bw_bytes`, `bw` (KiB/s),
`iops`, `runtime` (ms), `total_ios`, `clat_ns` / `lat_ns` with `percentile`, so tools that parse fio's JSON read
iowatt's prediction unchanged.  The per-request mode's document (simulator/per_request/fiojson.py: min, max, stddev,
json+ bins) is written as it is; the fluid mode knows each direction's mean latency and percentiles only, so min, max
and stddev are 0 there and the top-level `iowatt` block lists what is not modelled.

`fio-terse`: fio's terse line, version 3 (fio(1), "TERSE OUTPUT"; checked against fio 3.33's own line): fields 1-121,
up to the latency distribution.  The 9 disk-utilisation fields fio appends when it can read /sys/block are left out
(iowatt models no kernel block layer), as fio itself leaves them out in client/server mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iowatt.errors import UserError

NOT_MODELLED_FLUID = ["slat_ns", "clat_ns.min", "clat_ns.max", "clat_ns.stddev", "lat_ns.min", "lat_ns.max", "lat_ns.stddev",
                      "clat_ns.bins", "bw_min", "bw_max", "iops_min", "iops_max", "usr_cpu", "sys_cpu", "iodepth_level",
                      "latency_us", "latency_ms", "disk_util"]


def fio_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """fio's JSON for a run of a fio workload; a UserError (exit 2) naming --format for any other workload."""
    from iowatt.simulator.per_request import fiojson

    workload = document["scenario"]["workload"]
    if workload.get("kind") != "fio":
        raise UserError(f"--format fio: expected a fio workload (workload.kind: fio, or --fio JOBFILE), found workload.kind "
                        f"{workload.get('kind')!r}; use --format json or csv for this workload")
    detail = document.get("fio") or {}
    if "fio_json" in detail:  # the per-request mode built it request by request
        return {**detail["fio_json"], "iowatt": {"mode": "per-request", "not_modelled": ["slat_ns", "usr_cpu", "sys_cpu", "disk_util"]}}
    metrics = document["metrics"]
    runtime_s = float(metrics["job_runtime_seconds"])
    percentiles = [float(p) for p in workload.get("percentile_list") or []]
    sections = {name: _fluid_direction(metrics, name, runtime_s, percentiles) for name in ("read", "write")}
    options = {k: f"{workload[k]:g}" if isinstance(workload[k], float) else str(workload[k])
               for k in ("rw", "iodepth", "numjobs", "ioengine", "rwmixread") if workload.get(k) is not None}
    options["bs"] = str(int(float(workload["bs"])))
    fio = fiojson.document(str(workload.get("name") or "job"), options, sections["read"], sections["write"], runtime_s)
    return {**fio, "fio version": "iowatt fluid", "iowatt": {"mode": "fluid", "not_modelled": NOT_MODELLED_FLUID}}


def _fluid_direction(metrics: Mapping[str, float], name: str, runtime_s: float, percentiles: list[float]) -> dict[str, Any]:
    """One of fio's "read" / "write" sections from the fluid run's metrics (zeros for a direction the job does not do)."""
    from iowatt.simulator.per_request.histogram import percentile_key
    from iowatt.simulator.workloads.fio import percentile_name

    io_bytes = float(metrics.get(f"{name}_io_bytes", 0.0))
    bw = float(metrics.get(f"{name}_bw_bytes", 0.0))
    iops = float(metrics.get(f"{name}_iops", 0.0))
    total_ios = round(iops * runtime_s)
    clat_ns = float(metrics.get(f"{name}_clat_mean_us", 0.0)) * 1e3
    clat: dict[str, Any] = {"min": 0, "max": 0, "mean": clat_ns, "stddev": 0.0, "N": total_ios}
    found = {percentile_key(p): round(float(metrics[key]) * 1e3) for p in percentiles
             if (key := f"{name}_clat_{percentile_name(p)}_us") in metrics}
    if found:
        clat["percentile"] = found
    lat_ns = float(metrics.get(f"{name}_lat_mean_us", clat_ns / 1e3)) * 1e3
    return {
        "io_bytes": int(io_bytes), "io_kbytes": int(io_bytes // 1024), "bw_bytes": int(bw), "bw": int(bw // 1024), "iops": iops,
        "runtime": round(runtime_s * 1e3) if total_ios else 0, "total_ios": total_ios, "short_ios": 0, "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": clat,
        "lat_ns": {"min": 0, "max": 0, "mean": lat_ns, "stddev": 0.0, "N": total_ios},
    }


# fio's latency distribution buckets (stat.c): microseconds, then milliseconds; the last ms bucket is ">= 2000"
_LAT_US = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)
_LAT_MS = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000)
_DEPTHS = (1, 2, 4, 8, 16, 32, 64)


def terse_line(fio: Mapping[str, Any], iodepth: int) -> str:
    """fio's terse v3 line for the document's first job (group reporting: one job)."""
    from iowatt.simulator.provenance import version

    job = fio["jobs"][0]
    fields: list[str] = ["3", f"iowatt-{version()}", str(job["jobname"]), str(job.get("groupid", 0)), str(job.get("error", 0))]
    for name in ("read", "write"):
        fields += _terse_direction(job[name])
    fields += ["0.000000%", "0.000000%", "0", "0", "0"]  # usr_cpu, sys_cpu, ctx, majf, minf: not modelled
    level = min(len(_DEPTHS) - 1, max(i for i, d in enumerate(_DEPTHS) if d <= max(1, iodepth)))
    fields += [f"{100.0 if i == level else 0.0:.1f}%" for i in range(len(_DEPTHS))]  # a fixed-depth job: all at its depth
    fields += [f"{share:.2f}%" for share in _latency_shares(job)]
    return ";".join(fields)


def _terse_direction(section: Mapping[str, Any]) -> list[str]:
    """41 fields: status (KiB, KiB/s, IOPS, ms), slat, clat (us), 20 clat percentiles, lat (us), bandwidth (KiB/s)."""
    def us(block: Mapping[str, Any]) -> list[str]:
        return [str(int(block.get("min", 0)) // 1000), str(int(block.get("max", 0)) // 1000),
                f"{float(block.get('mean', 0.0)) / 1e3:.6f}", f"{float(block.get('stddev', 0.0)) / 1e3:.6f}"]

    percentiles = [f"{float(k):.6f}%={int(v) // 1000}" for k, v in (section["clat_ns"].get("percentile") or {}).items()][:20]
    percentiles += ["0%=0"] * (20 - len(percentiles))
    bw_KiBps = int(section.get("bw", 0))
    status = [str(int(section["io_bytes"]) >> 10), str(bw_KiBps), str(round(float(section["iops"]))), str(int(section["runtime"]))]
    # bandwidth min, max, share of the group's total, mean, stddev: one steady rate for the whole job
    bandwidth = [str(bw_KiBps), str(bw_KiBps), f"{100.0 if bw_KiBps else 0.0:.6f}%", f"{float(bw_KiBps):.6f}", "0.000000"]
    return [*status, *us(section["slat_ns"]), *us(section["clat_ns"]), *percentiles, *us(section["lat_ns"]), *bandwidth]


def _latency_shares(job: Mapping[str, Any]) -> list[float]:
    """The 22 latency-distribution percentages (10 us buckets, 12 ms buckets) from the json+ clat bins, if the run has them."""
    counts = [0] * (len(_LAT_US) + len(_LAT_MS) + 1)
    edges_ns = [u * 1e3 for u in _LAT_US] + [m * 1e6 for m in _LAT_MS]
    for name in ("read", "write"):
        for key, n in (job[name]["clat_ns"].get("bins") or {}).items():
            index = next((i for i, edge in enumerate(edges_ns) if float(key) <= edge), len(edges_ns))
            counts[index] += int(n)
    total = sum(counts)
    return [100.0 * c / total if total else 0.0 for c in counts]
