"""`iowatt collect fio`: run a plan of fio jobs on a target and write a trace bundle.

Safety (`calibration.target`): the target is checked before anything runs
(memory-backed filesystems and devices, raw devices without --destructive and
--serial, mounted filesystems are refused), and fio writes only to that one
file or device.  The bundle records the target's filesystem and backing device.
"""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iowatt.calibration import bundle, inventory, power
from iowatt.calibration.fioparse import parse_file
from iowatt.calibration.plan import FioJob, Plan
from iowatt.calibration.target import TEST_FILE, CollectError, Target, resolve_target

__all__ = ["TEST_FILE", "CollectError", "collect", "fio_args", "resolve_target"]

def find_fio() -> str:
    found = shutil.which("fio")
    if found is None:
        raise CollectError("fio is not installed or not on PATH; install it with `apt-get install fio` (or `dnf install fio`, `brew install fio`)")
    return found


def fio_version(fio: str) -> str:
    try:
        return subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _check_space(target: Target, plan: Plan) -> None:
    if target.raw_device:
        return
    folder = target.fio_filename.parent
    free = shutil.disk_usage(folder).free
    if target.created and free < 2 * plan.size:
        raise CollectError(f"--target {target.path}: needs {2 * plan.size >> 20} MiB free for the {plan.size >> 20} MiB test file, found {free >> 20} MiB")


def fio_args(fio: str, job: FioJob, plan: Plan, filename: Path, prefix: Path, raw_device: bool = False) -> list[str]:
    args = [
        fio,
        f"--name={job.id}",
        f"--filename={filename}",
        f"--rw={job.rw}",
        f"--bs={job.bs}",
        f"--iodepth={job.iodepth}",
        f"--numjobs={job.numjobs}",
        "--group_reporting",
        f"--ioengine={plan.ioengine}",
        "--direct=1",
        "--time_based",
        # in milliseconds: fio reads "0.7s" as 0 s, drops time_based and runs through the whole file instead
        f"--runtime={round(plan.runtime_s * 1000)}ms",
        f"--ramp_time={round(plan.ramp_s * 1000)}ms",
        "--randrepeat=0",
        "--norandommap",
        "--output-format=json+",
        f"--output={prefix}.json",
        f"--write_bw_log={prefix}",
        f"--write_lat_log={prefix}",
        "--log_avg_msec=100",
    ]
    if not raw_device:  # on a device fio uses its whole size
        args.append(f"--size={plan.size}")
    if job.rw == "randrw":
        args.append(f"--rwmixread={job.rwmixread}")
    return args


def relative_spread(values: list[float]) -> float:
    """Run-to-run spread: sample standard deviation / mean (0 with one run)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else 0.0


def collect(
    target_path: Path,
    plan: Plan,
    out: Path,
    repeat: int = 1,
    destructive: bool = False,
    serial: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> bundle.Manifest:
    target = resolve_target(target_path, destructive, serial)
    fio = find_fio()
    if repeat < 1:
        raise CollectError(f"--repeat: expected at least 1, found {repeat}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CollectError(f"--out {out}: already exists and is not empty; choose a new bundle directory")
    if not out.parent.resolve().is_dir():
        raise CollectError(f"--out {out}: expected a new folder in an existing directory, found no directory {out.parent}")
    out_real = out.resolve()
    if not target.raw_device and (out_real == target.fio_filename or out_real.is_relative_to(target.fio_filename)):
        raise CollectError(f"--out {out}: must not be the fio test file")
    _check_space(target, plan)
    say = progress or (lambda _text: None)  # the command line passes a printer; this layer never prints

    say(f"target {target.path}: {target.backing.describe()}")
    info = inventory.collect(target.path)
    info["backing"] = target.backing.record()
    nvme_states = [s["max_W"] for s in info["nvme"].get("power_states", [])] if info["nvme"].get("available") else None
    sources, source_record = power.detect(info["block_device"].get("name"), nvme_states)
    # built in a hidden sibling folder and renamed into place only when whole: a failed run leaves no half bundle at --out
    work = Path(tempfile.mkdtemp(prefix=f".{out_real.name}.partial-", dir=out_real.parent))
    try:
        manifest = _measure(target, plan, work, fio, repeat, sources, source_record, info, say)
        if out_real.is_dir():
            out_real.rmdir()  # the empty folder the user made for it
        work.rename(out_real)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return manifest


def _measure(target: Target, plan: Plan, out: Path, fio: str, repeat: int, sources: list[power.Source], source_record: dict[str, Any],
             info: dict[str, Any], say: Callable[[str], None]) -> bundle.Manifest:
    """Run every job into the (absolute) folder `out` and write the bundle's tables and manifest there."""
    import json

    (out / "raw").mkdir()
    (out / "power").mkdir()
    (out / "inventory.json").write_text(json.dumps(info, indent=2) + "\n")
    jobs = {job.id: bundle.JobEntry(id=job.id, params={**job.model_dump(), "read_fraction": job.read_fraction}) for job in plan.jobs}
    run_rows: list[dict[str, Any]] = []
    total = repeat * len(plan.jobs)
    try:
        step = 0
        for r in range(repeat):  # interleaved: every job once, then again
            for job in plan.jobs:
                step += 1
                stem = f"{job.id}.r{r}"
                prefix = out / "raw" / stem
                say(f"[{step}/{total}] {stem}")
                with power.Sampler(sources) as sampler:
                    done = subprocess.run(
                        fio_args(fio, job, plan, target.fio_filename, prefix, target.raw_device), capture_output=True, text=True, cwd=out / "raw"
                    )
                if done.returncode != 0:
                    detail = (done.stderr or done.stdout).strip().splitlines()
                    raise CollectError(f"fio failed on job {job.id}: {detail[-1] if detail else f'exit status {done.returncode}'}")
                record = parse_file(Path(f"{prefix}.json"))
                start_epoch = record["timestamp_ms"] / 1e3 - record["runtime_s"]
                samples = [{**s, "t_s": round(s["epoch_s"] - start_epoch, 4)} for s in sampler.samples]
                files = sorted(p.relative_to(out).as_posix() for p in (out / "raw").glob(f"{stem}[._]*"))
                if samples:
                    bundle.write_csv(out / "power" / f"{stem}.csv", samples)
                    files.append(f"power/{stem}.csv")
                means = power.mean_power(samples, 0.0, record["runtime_s"])
                run_rows.append(
                    {"job_id": job.id, "repeat": r, **{k: v for k, v in record.items() if k != "jobname"}, **{f"power_{k}": v for k, v in means.items()}}
                )
                jobs[job.id].runs.append(bundle.RunEntry(repeat=r, files=files))
    finally:
        if target.created:
            target.fio_filename.unlink(missing_ok=True)
    bundle.write_csv(out / "tables" / "runs.csv", run_rows)
    bundle.write_csv(out / "tables" / "jobs.csv", summarize(run_rows))
    manifest = bundle.new_manifest(
        "fio",
        tools={"iowatt": _iowatt_version(), "fio": fio_version(fio), "python": sys.version.split()[0]},
        plan=plan.name,
        repeat=repeat,
        target=_target_record(target, plan, info),
        power_sources={k: bundle.PowerSource(available=bool(v["available"]), detail=str(v["detail"])) for k, v in source_record.items()},
        jobs=list(jobs.values()),
    )
    return bundle.finalize(out, manifest)


def _target_record(target: Target, plan: Plan, info: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `target`: what was measured (file or device, its filesystem and backing device) and how."""
    return {
        "path": str(target.path),
        "fio_filename": str(target.fio_filename),
        "raw_device": target.raw_device,
        "device": info["block_device"].get("name"),
        "model": info["block_device"].get("model"),
        "filesystem": target.backing.filesystem,
        "mount_point": target.backing.mount_point,
        "backing_device": target.backing.device,
        "backing_device_kind": target.backing.device_kind,
        "runtime_s": plan.runtime_s,
        "ramp_s": plan.ramp_s,
        "size": plan.size,
        "ioengine": plan.ioengine,
    }


def _iowatt_version() -> str:
    try:
        from iowatt.simulator.provenance import version

        return version()
    except Exception:  # the version string is informative only
        return "unknown"


def summarize(run_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per job: mean throughput and latency over its runs, and their run-to-run spread."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for row in run_rows:
        by_job.setdefault(row["job_id"], []).append(row)
    rows = []
    for job_id, runs in by_job.items():
        bw = [float(r["bw_Bps"]) for r in runs]
        lat = [float(r["lat_mean_us"]) for r in runs]
        first = runs[0]
        row = {
            "job_id": job_id,
            "rw": first["rw"],
            "bs": first["bs"],
            "iodepth": first["iodepth"],
            "numjobs": first["numjobs"],
            "rwmixread": first["rwmixread"],
            "runs": len(runs),
            "bw_Bps": statistics.fmean(bw),
            "bw_spread": relative_spread(bw),
            "read_bw_Bps": statistics.fmean(float(r["read_bw_Bps"]) for r in runs),
            "write_bw_Bps": statistics.fmean(float(r["write_bw_Bps"]) for r in runs),
            "iops": statistics.fmean(float(r["iops"]) for r in runs),
            "lat_mean_us": statistics.fmean(lat),
            "lat_spread": relative_spread(lat),
        }
        for key in sorted({k for r in runs for k in r if k.startswith("power_")}):
            values = [float(r[key]) for r in runs if key in r and r[key] not in ("", None) and not math.isnan(float(r[key]))]
            if values:
                row[key] = statistics.fmean(values)
        rows.append(row)
    return rows
