"""Latency distributions from a fio bundle: fit the per-request mode's spreads, and check p50 / p99.

Source.  Every run of a bundle saved fio's json+ output, whose clat_ns block
holds the completion-latency percentiles and the full histogram (bins) of
every request.  (The runner's clat logs, --write_lat_log with
--log_avg_msec=100, average each 100 ms window: they keep the mean and lose
the tail, so the json+ percentiles are what is fitted.)

Fit.  At queue depth 1 a request is alone at its flash unit, so in the
per-request mode its latency is its mean times a lognormal factor F of mean
one (simulator.per_request.latency): the ratio of a quantile to the mean is
exp(sigma z_q - sigma^2 / 2), whatever the mean.  The QD1 read jobs' measured
ratios p_q / mean at FIT_QUANTILES, pooled over jobs and runs, give
read_latency_sigma by least squares in log (latency.sigma_from_quantiles);
the QD1 write jobs give write_latency_sigma.  A bundle with no QD1 job of a
direction does not inform its sigma.

Check.  `iowatt validate --bundle` runs each held-back job in the per-request
mode on the profile (one drive of the profile's spec, the job's rw, bs,
iodepth, numjobs) and prints its p50 and p99 beside fio's.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from iowatt.calibration import bundle
from iowatt.calibration.fioparse import FioParseError, load_document
from iowatt.calibration.model import Job, predict
from iowatt.models.ssd import SSDSpec
from iowatt.simulator.per_request.latency import sigma_from_quantiles

FIT_QUANTILES = (10.0, 50.0, 90.0, 99.0)  # the body and the 99th percentile; the 99.9th and beyond rest on few requests
CHECK_REQUESTS = 20_000  # requests of one job's per-request run (its p99 then rests on ~200 requests)
SIGMA_FIELDS = {"read": "read_latency_sigma", "write": "write_latency_sigma"}


def measured(bundle_path: Path, manifest: bundle.Manifest) -> dict[str, dict[str, dict[str, float]]]:
    """{job id: {direction: {"mean": us, "p10": us, ...}}}: fio's clat mean and percentiles, averaged over the job's runs."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for job in manifest.jobs:
        runs: dict[str, list[dict[str, float]]] = {}
        for run in job.runs:
            outputs = [f for f in run.files if f.startswith("raw/") and f.endswith(".json")]
            if not outputs:
                continue
            try:
                document = load_document((bundle_path / outputs[0]).read_text(errors="replace"), outputs[0])
            except FioParseError as error:
                raise bundle.BundleError(f"bundle {bundle_path}: {error}") from None
            for direction in ("read", "write"):
                clat = (document["jobs"][0].get(direction) or {}).get("clat_ns") or {}
                if clat.get("N", 0) > 0 and clat.get("percentile"):
                    row = {"mean": float(clat["mean"]) / 1e3}
                    row.update({f"p{float(k):g}": float(v) / 1e3 for k, v in clat["percentile"].items()})
                    runs.setdefault(direction, []).append(row)
        out[job.id] = {d: {k: statistics.fmean(r[k] for r in rows if k in r) for k in rows[0]} for d, rows in runs.items()}
    return out


def fit_spreads(jobs: list[Job], percentiles: dict[str, dict[str, dict[str, float]]]) -> dict[str, tuple[float, str]]:
    """{SSDSpec field: (sigma, note)} from the training jobs at QD1 (module docstring)."""
    fits: dict[str, tuple[float, str]] = {}
    for direction, field in SIGMA_FIELDS.items():
        share = 1.0 if direction == "read" else 0.0
        chosen = [j for j in jobs if j.inflight == 1 and j.read_fraction == share and direction in percentiles.get(j.id, {})]
        points = []
        for job in chosen:
            row = percentiles[job.id][direction]
            points += [(q / 100.0, row[f"p{q:g}"] / row["mean"]) for q in FIT_QUANTILES if f"p{q:g}" in row and row["mean"] > 0]
        if points:
            sigma = sigma_from_quantiles(1.0, points)
            note = (f"fitted by iowatt calibrate to fio's clat p{'/p'.join(f'{q:g}' for q in FIT_QUANTILES)} over the mean "
                    f"of {len(chosen)} QD1 {direction} job(s) ({', '.join(j.id for j in chosen)}); calibration/latency.py")
            fits[field] = (sigma, note)
    return fits


def record(document: dict[str, Any], fits: dict[str, tuple[float, str]], bundle_path: str, manifest_id: str) -> None:
    """Write the fitted spreads into a profile document (calibration.profile.build's), with their provenance."""
    ((_name, fields),) = document["entries"].items()
    for field, (sigma, note) in fits.items():
        fields[field] = {"v": float(f"{sigma:.6g}"), "p": "calibrated", "src": f"{bundle_path} (manifest {manifest_id})", "note": note,
                         "fitted_on": [bundle_path]}
    document["calibration"]["latency_spreads"] = {field: float(f"{sigma:.6g}") for field, (sigma, _note) in fits.items()}


def predicted_percentiles(spec: SSDSpec, job: Job, seed: int = 0) -> dict[str, dict[str, float]]:
    """{direction: {"p50": us, "p99": us}} of the job run in the per-request mode on one drive of `spec`."""
    from iowatt.simulator.per_request.run import simulate
    from iowatt.simulator.system import SystemConfig
    from iowatt.simulator.workloads.fio import FioParams

    rate = predict(spec, job, spec.writes_queue)["iops"]
    params = FioParams(rw=job.rw, bs=job.bs, iodepth=job.iodepth, numjobs=job.numjobs, rwmixread=job.read_fraction * 100.0,  # type: ignore[arg-type]
                       size=min(spec.capacity_bytes / max(1, job.numjobs), 2**30), runtime=CHECK_REQUESTS / rate, time_based=True,
                       percentile_list=[50.0, 99.0])
    system = SystemConfig.model_validate({"storage": {"device": spec.model_dump(mode="json")}})
    metrics = simulate(system, params, seed).metrics
    return {d: {"p50": metrics[f"{d}_clat_p50_us"], "p99": metrics[f"{d}_clat_p99_us"]}
            for d in ("read", "write") if f"{d}_clat_p50_us" in metrics}


def check_row(spec: SSDSpec, job: Job, measured_job: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """Measured and predicted p50 / p99 (us) of a job's main direction, with the errors in percent."""
    direction = "read" if job.read_fraction >= 0.5 else "write"
    seen = measured_job.get(direction)
    if not seen or "p50" not in seen or "p99" not in seen:
        return {"measured_p50_us": None, "predicted_p50_us": None, "p50_error_pct": None,
                "measured_p99_us": None, "predicted_p99_us": None, "p99_error_pct": None}
    guess = predicted_percentiles(spec, job)[direction]
    return {
        "measured_p50_us": round(seen["p50"], 1),
        "predicted_p50_us": round(guess["p50"], 1),
        "p50_error_pct": round((guess["p50"] / seen["p50"] - 1) * 100, 2),
        "measured_p99_us": round(seen["p99"], 1),
        "predicted_p99_us": round(guess["p99"], 1),
        "p99_error_pct": round((guess["p99"] / seen["p99"] - 1) * 100, 2),
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Median |error| of p50 and p99 over the rows that have them."""
    out: dict[str, float | None] = {}
    for key in ("p50_error_pct", "p99_error_pct"):
        errors = sorted(abs(r[key]) for r in rows if r.get(key) is not None)
        out[f"median_abs_{key}"] = round(statistics.median(errors), 2) if errors else None
    return out
