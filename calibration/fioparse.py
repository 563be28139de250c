"""Read fio's JSON / JSON+ output (fio >= 3.x) into flat per-run records.

fio can print notes ("fio: ...") before the JSON document when --output is a
file; they are skipped.  One job per file is expected (the runner uses
--group_reporting, so numjobs > 1 appears as one entry).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iowatt.models.units import UnitError, fio_size_bytes


class FioParseError(ValueError):
    pass




def size_bytes(text: str | int) -> int:
    """fio sizes: 4k, 1M, 131072 (models.units.fio_size_bytes, fio's default kb_base=1024)."""
    try:
        return int(fio_size_bytes(text))
    except UnitError as error:
        raise FioParseError(f"cannot read the size {text!r}: {error}") from None


def load_document(text: str, name: str = "fio output") -> dict[str, Any]:
    start = text.find("{")
    if start < 0:
        raise FioParseError(f"{name}: no JSON document in the fio output")
    try:
        document = json.loads(text[start:])
    except json.JSONDecodeError as error:
        raise FioParseError(f"{name}: fio output is not valid JSON ({error})") from None
    if not isinstance(document, dict) or not document.get("jobs"):
        raise FioParseError(f"{name}: fio output has no jobs")
    return document


def _direction(section: dict[str, Any]) -> dict[str, float]:
    lat = section.get("lat_ns") or {}
    clat = section.get("clat_ns") or {}
    pct = clat.get("percentile") or {}
    return {
        "bytes": float(section.get("io_bytes", 0)),
        "bw_Bps": float(section.get("bw_bytes", 0)),
        "iops": float(section.get("iops", 0.0)),
        "lat_mean_us": float(lat.get("mean", 0.0)) / 1e3,
        "lat_stddev_us": float(lat.get("stddev", 0.0)) / 1e3,
        "clat_p50_us": float(pct.get("50.000000", 0.0)) / 1e3,
        "clat_p99_us": float(pct.get("99.000000", 0.0)) / 1e3,
        "runtime_ms": float(section.get("runtime", 0)),
    }


def parse(document: dict[str, Any]) -> dict[str, Any]:
    """One flat record: options (rw, bs, iodepth, numjobs, rwmixread) and read/write results."""
    job = document["jobs"][0]
    options = {**(document.get("global options") or {}), **(job.get("job options") or {})}
    if job.get("error"):
        raise FioParseError(f"fio job {job.get('jobname')!r} ended with error {job['error']}")
    rw = options.get("rw", options.get("readwrite", "read"))
    bs = size_bytes(options.get("bs", options.get("blocksize", "4k")).split(",")[0])
    read = _direction(job.get("read") or {})
    write = _direction(job.get("write") or {})
    total_bytes = read["bytes"] + write["bytes"]
    if total_bytes <= 0:
        raise FioParseError(f"fio job {job.get('jobname')!r} moved no data")
    total_iops = read["iops"] + write["iops"]
    lat_us = (read["lat_mean_us"] * read["iops"] + write["lat_mean_us"] * write["iops"]) / total_iops if total_iops else 0.0
    record: dict[str, Any] = {
        "jobname": job.get("jobname", ""),
        "rw": rw,
        "bs": bs,
        "iodepth": int(options.get("iodepth", 1)),
        "numjobs": int(options.get("numjobs", 1)),
        "rwmixread": int(options.get("rwmixread", 50)) if rw in ("randrw", "rw", "readwrite") else (100 if "read" in rw else 0),
        "runtime_s": float(job.get("job_runtime", max(read["runtime_ms"], write["runtime_ms"]))) / 1e3,
        "timestamp_ms": int(document.get("timestamp_ms", 0)),
        "fio_version": document.get("fio version", ""),
        "bw_Bps": read["bw_Bps"] + write["bw_Bps"],
        "iops": total_iops,
        "lat_mean_us": lat_us,
        "usr_cpu": float(job.get("usr_cpu", 0.0)),
        "sys_cpu": float(job.get("sys_cpu", 0.0)),
    }
    for name, values in (("read", read), ("write", write)):
        for key, value in values.items():
            record[f"{name}_{key}"] = value
    return record


def parse_file(path: Path) -> dict[str, Any]:
    return parse(load_document(path.read_text(errors="replace"), path.name))


def read_log(path: Path) -> list[tuple[float, float]]:
    """fio bw/lat/iops log: (time in s since the job start, value) per line."""
    samples = []
    for line in path.read_text().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit():
            samples.append((int(fields[0]) / 1e3, float(fields[1])))
    return samples
