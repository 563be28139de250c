"""Jobs of a fio bundle, re-parsed from the raw fio outputs (the CSV tables are for people)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iowatt.calibration import bundle, power
from iowatt.calibration.fioparse import FioParseError, load_document, parse
from iowatt.calibration.model import Job
from iowatt.calibration.runner import summarize


def load_jobs(root: Path | str, manifest: bundle.Manifest | None = None) -> list[Job]:
    root = Path(root)
    manifest = manifest or bundle.load(root)
    if manifest.kind != "fio":
        raise bundle.BundleError(f"bundle {root}: a {manifest.kind} bundle holds no fio jobs; calibrate and validate need a bundle from `iowatt collect fio`")
    run_rows: list[dict[str, Any]] = []
    for job in manifest.jobs:
        for run in job.runs:
            outputs = [f for f in run.files if f.startswith("raw/") and f.endswith(".json")]
            if not outputs:
                raise bundle.BundleError(f"bundle {root}: job {job.id} run {run.repeat} has no fio JSON output")
            try:
                record = parse(load_document((root / outputs[0]).read_text(errors="replace"), outputs[0]))
            except FioParseError as error:
                raise bundle.BundleError(f"bundle {root}: {error}") from None
            row = {"job_id": job.id, "repeat": run.repeat, **record}
            power_files = [f for f in run.files if f.startswith("power/")]
            if power_files:
                samples = [{k: float(v) for k, v in s.items() if v not in ("", None)} for s in bundle.read_csv(root / power_files[0])]
                row.update({f"power_{k}": v for k, v in power.mean_power(samples, 0.0, record["runtime_s"]).items()})
            run_rows.append(row)
    if not run_rows:
        raise bundle.BundleError(f"bundle {root}: the manifest lists no fio runs")
    jobs = []
    for row in summarize(run_rows):
        if float(row["bw_Bps"]) <= 0:
            continue
        power_values = {k[len("power_") :]: float(v) for k, v in row.items() if k.startswith("power_")}
        jobs.append(
            Job(
                id=row["job_id"],
                rw=row["rw"],
                bs=float(row["bs"]),
                iodepth=int(row["iodepth"]),
                numjobs=int(row["numjobs"]),
                read_fraction=float(row["rwmixread"]) / 100.0,
                bw_Bps=float(row["bw_Bps"]),
                lat_us=float(row["lat_mean_us"]),
                spread=float(row["bw_spread"]),
                runs=int(row["runs"]),
                read_bw_Bps=float(row["read_bw_Bps"]),
                write_bw_Bps=float(row["write_bw_Bps"]),
                power=power_values or None,
            )
        )
    return jobs
