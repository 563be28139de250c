"""`iowatt validate --bundle B --profile P`: predict a bundle's held-back jobs with a profile and compare.

Each error is printed next to the job's own run-to-run spread: a miss within
NOISE_SIGMAS spreads is "within noise", not a model error.  The prediction
is models.ssd's law on the profile's SSDSpec with the profile's write-queueing
choice; `simulator_MBps` is models.ssd.closed_loop, what `iowatt run` gives.  Each
job's p50 and p99 completion latency, from `iowatt run --mode per-request` on
the profile, are printed beside fio's (calibration/latency.py).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from iowatt.calibration import bundle, latency, profile
from iowatt.calibration.dataset import load_jobs
from iowatt.calibration.model import predict, simulator_predict
from iowatt.models.ssd import SSDSpec

NOISE_SIGMAS = 2.0  # a miss within two run-to-run standard deviations is indistinguishable from noise (~95 % for normal noise)


def validate(bundle_path: Path, profile_path: Path, all_jobs: bool = False) -> dict[str, Any]:
    values, calibration, _ = profile.load(profile_path)
    spec = SSDSpec.model_validate(values)
    writes_queue = bool(calibration.get("writes_queue", False))
    manifest = bundle.load(bundle_path)
    jobs = load_jobs(bundle_path, manifest)
    held = set((calibration.get("holdout") or {}).get("jobs") or [])
    same_bundle = (calibration.get("bundle") or {}).get("id") == manifest.id
    if all_jobs or not same_bundle:
        chosen = jobs  # another bundle: every job is unseen by the fit
        selection = "all jobs" if same_bundle else "all jobs (the profile was fitted on another bundle)"
    else:
        chosen = [j for j in jobs if j.id in held]
        selection = "held-back jobs"
        if not chosen:
            raise bundle.BundleError(f"--profile {profile_path}: it holds back no jobs of this bundle; calibrate with --holdout > 0, or pass --all")
    rows = []
    seen = latency.measured(bundle_path, manifest)  # fio's clat percentiles, for the p50 / p99 check (calibration/latency.py)
    for job in chosen:
        p = predict(spec, job, writes_queue)
        error = (p["bw_Bps"] / job.bw_Bps - 1) * 100
        noise = NOISE_SIGMAS * job.spread * 100
        rows.append(
            {
                "job": job.id,
                "measured_MBps": round(job.bw_Bps / 1e6, 3),
                "predicted_MBps": round(p["bw_Bps"] / 1e6, 3),
                # what `iowatt run` predicts on the same SSDSpec (models.ssd.closed_loop, honouring spec.writes_queue)
                "simulator_MBps": round(simulator_predict(spec, job)["bw_Bps"] / 1e6, 3),
                "error_pct": round(error, 2),
                "spread_pct": round(job.spread * 100, 2) if job.runs > 1 else None,
                "runs": job.runs,
                "measured_lat_us": round(job.lat_us, 1),
                "predicted_lat_us": round(p["lat_us"], 1),
                "verdict": ("within noise" if abs(error) <= noise else "miss") if job.runs > 1 else "no spread (1 run)",
                **latency.check_row(spec, job, seen.get(job.id, {})),
            }
        )
    errors = [abs(r["error_pct"]) for r in rows]
    return {
        "bundle": str(bundle_path),
        "profile": str(profile_path),
        "selection": selection,
        "writes_queue": writes_queue,
        "jobs": rows,
        "summary": {
            "jobs": len(rows),
            "median_abs_error_pct": round(statistics.median(errors), 2),
            "max_abs_error_pct": round(max(errors), 2),
            "within_noise": sum(r["verdict"] == "within noise" for r in rows),
            **latency.summary(rows),
        },
    }
