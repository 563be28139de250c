"""Fit a cluster's storage-software parameters to fio runs made on its clients (`iowatt calibrate --kind cluster`).

What a client measures.  A bundle from `iowatt collect fio --target MOUNT` on one
client holds that client's fio results; the same jobs may have run on `clients`
clients at once (given per bundle).  For a job of block b, direction d, pattern p
and N = iodepth x numjobs requests per client, the cluster of the scenario
(simulator.storage.cluster_volume on its hardware) runs at
    X = min(its closed-loop solution for N x clients requests, the engine's ceiling for the access)
and each client gets X b / clients: what `iowatt run` predicts for the same fio job.

What is fitted (log space, calibration.leastsq): the per-core rates of the client's
frontend and of the nodes' drive processes, for reads and for writes (requests/s
and GB/s per reference core), and the one-way hop between client and node.  The
compute processes rarely bind and the hardware is the scenario's: they stay as
given.  A parameter no job depends on keeps its value and says so.  Jobs that mix
reads and writes are left out (each direction has its own rates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy
from iowatt.calibration.fit import FitError, pooled_spread, sigma
from iowatt.calibration.leastsq import bound_note, fit_log
from iowatt.calibration.model import Job
from iowatt.calibration.profile import fitted_range
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.storage.kinds.cluster import PROFILE_FORMAT, ClusterStorageConfig
from iowatt.simulator.system import SystemConfig, SystemRuntime

RATE_FIELDS = ("read_iops", "read_GBps", "write_iops", "write_GBps")
PARAMETERS = (*(f"frontend.{f}" for f in RATE_FIELDS), *(f"drive.{f}" for f in RATE_FIELDS), "client.hop")


@dataclass(frozen=True)
class Measured:
    """One job of a bundle, and how many clients ran it at once (the bundle holds one client's result)."""

    job: Job
    clients: int
    bundle: str = ""


@dataclass
class ClusterFit:
    values: dict[str, float]
    informed: list[str]
    not_informed: dict[str, str]
    rel_stderr: dict[str, float]
    residuals: list[dict[str, Any]]
    cost: float
    dof: int
    s: float
    bounded: dict[str, str] = field(default_factory=dict)  # parameter -> the bound the jobs set on it (leastsq docstring)


def cluster_of(system: SystemConfig) -> ClusterStorageConfig:
    if not isinstance(system.storage, ClusterStorageConfig):
        raise FitError(f"--scenario: expected a scenario whose system.storage is kind: cluster, found kind: {system.storage.kind}")  # type: ignore[union-attr]
    return system.storage


def values_of(storage: ClusterStorageConfig) -> dict[str, float]:
    fe, drive = storage.client.frontend.model_dump(), storage.software.drive.model_dump()
    out = {f"frontend.{f}": float(fe[f]) for f in RATE_FIELDS} | {f"drive.{f}": float(drive[f]) for f in RATE_FIELDS}
    return out | {"client.hop": storage.client.hop_s}


def storage_with(storage: ClusterStorageConfig, values: dict[str, float], clients: int) -> ClusterStorageConfig:
    """The cluster with these software values and client count (no re-validation: the optimizer's inner loop)."""
    fe = storage.client.frontend.model_copy(update={f: values[f"frontend.{f}"] for f in RATE_FIELDS})
    drive = storage.software.drive.model_copy(update={f: values[f"drive.{f}"] for f in RATE_FIELDS})
    client = storage.client.model_copy(update={"frontend": fe, "hop": values["client.hop"]})
    return storage.model_copy(update={"client": client, "software": storage.software.model_copy(update={"drive": drive}), "clients": clients})


def predict_Bps(system: SystemConfig, values: dict[str, float], measured: list[Measured]) -> np.ndarray:
    """Each job's bytes/s at one client (module docstring), one cluster built per client count."""
    built: dict[int, SystemRuntime] = {}
    out = []
    for m in measured:
        if m.clients not in built:
            config = system.model_copy(update={"storage": storage_with(cluster_of(system), values, m.clients)})
            built[m.clients] = SystemRuntime(FlowEngine(simpy.Environment()), config)
        volume = built[m.clients].volume
        job = m.job
        access = Access("read" if job.read_fraction >= 1.0 else "write", job.bs, job.pattern, float(job.inflight * m.clients))
        ceiling = min(c.capacity / k for c, k in volume.usage(access) if k > 0.0 and c.capacity < math.inf)
        out.append(min(volume.solve(access).throughput * job.bs, ceiling) / m.clients)  # type: ignore[attr-defined]
    return np.array(out)


def fit_cluster(measured: list[Measured], system: SystemConfig, loss: str = "soft_l1") -> ClusterFit:
    """Least squares of PARAMETERS over the jobs (mixes left out), weighted by each job's run-to-run noise."""
    usable = [m for m in measured if m.job.read_fraction in (0.0, 1.0)]
    not_informed: dict[str, str] = {}
    if not usable:
        raise FitError("no read-only or write-only jobs to fit (a cluster is fitted per direction; mixes are left out)")
    if len(usable) < len(PARAMETERS):
        raise FitError(f"{len(usable)} training jobs cannot determine {len(PARAMETERS)} parameters; collect more jobs or hold out fewer")
    base = values_of(cluster_of(system))
    free = list(PARAMETERS)
    for direction, share in (("read", 1.0), ("write", 0.0)):
        if not any(m.job.read_fraction == share for m in usable):
            for name in [p for p in free if p.split(".")[1].startswith(direction)]:
                free.remove(name)
                not_informed[name] = f"the bundles have no {direction} jobs"
    pooled = pooled_spread([m.job for m in usable])
    weights = np.array([1.0 / sigma(m.job, pooled) for m in usable])
    measured_log = np.log([m.job.bw_Bps for m in usable])

    def residuals(trial: dict[str, float]) -> np.ndarray:
        return (np.log(predict_Bps(system, trial, usable)) - measured_log) * weights

    solved = fit_log(residuals, base, free, base, len(usable), loss)
    for name in solved.dead:
        not_informed[name] = "no training job is limited by it (its Jacobian column is zero)"
    bounded = {n: bound_note(solved.values[n], excluded, len(usable)) for n, excluded in solved.bounded.items()}
    predicted = [float(p) for p in predict_Bps(system, solved.values, usable)]
    rows = [{"job": m.job.id, "bundle": m.bundle, "clients": m.clients, "measured_MBps": m.job.bw_Bps / 1e6, "predicted_MBps": p / 1e6,
             "error_pct": (p / m.job.bw_Bps - 1) * 100, "spread_pct": m.job.spread * 100} for m, p in zip(usable, predicted, strict=True)]
    return ClusterFit(solved.values, solved.informed, not_informed, solved.rel_stderr, rows, solved.cost, solved.dof, solved.s, bounded)


def profile_document(name: str, sources: list[dict[str, Any]], scenario: str, fit: ClusterFit, held_back: list[str]) -> dict[str, Any]:
    """The profile `storage.profile: PATH` reads: fitted values with provenance, and the calibration's record."""
    src = "; ".join(f"{s['bundle']} (manifest {s['manifest']}, {s['clients']} client{'s' if s['clients'] != 1 else ''} at once)" for s in sources)
    software: dict[str, Any] = {}
    client: dict[str, Any] = {}
    for key in [*fit.informed, *fit.bounded]:
        spread = fit.bounded.get(key) or f"+/- {100 * fit.rel_stderr.get(key, float('nan')):.2g} % (1 standard error)"
        entry = {"v": float(f"{fit.values[key]:.6g}"), "p": "calibrated", "src": src,
                 "fitted_on": [str(s["bundle"]) for s in sources],
                 "note": f"{spread}; cluster described by {scenario}"}
        entry |= fitted_range(fit.values[key], fit.rel_stderr.get(key, math.nan))  # the fit's log-normal range
        group, field = key.split(".")
        if group == "client":
            client[field] = entry
        else:
            (client.setdefault("frontend", {}) if group == "frontend" else software.setdefault("drive", {}))[field] = entry
    return {
        "format": PROFILE_FORMAT,
        "version": 1,
        "name": name,
        "software": software,
        "client": client,
        "calibration": {
            "bundles": sources,
            "scenario": scenario,
            "held_back": held_back,
            "not_informed": fit.not_informed,
            "bounded": fit.bounded,
            "uncertainty_rel": {k: v for k, v in fit.rel_stderr.items() if math.isfinite(v)},
            "residual_scale": fit.s if math.isfinite(fit.s) else None,
            "residuals": fit.residuals,
        },
    }


def calibrate(bundles: list[tuple[str, int]], system: SystemConfig, scenario: str, name: str,
              holdout: float = 0.0, seed: int = 0) -> tuple[dict[str, Any], list[str]]:
    """Fit the cluster of `system` to `bundles` (path, clients that ran its jobs at once): the profile and a summary."""
    from pathlib import Path

    from iowatt.calibration import bundle
    from iowatt.calibration.dataset import load_jobs
    from iowatt.calibration.fit import split_holdout

    cluster_of(system)
    training: list[Measured] = []
    held: list[str] = []
    sources = []
    for path, clients in bundles:
        if clients < 1:
            raise FitError(f"--clients: expected at least 1 client per bundle, found {clients} for {path}")
        manifest = bundle.load(Path(path))
        kept, back = split_holdout(load_jobs(Path(path), manifest), holdout, seed)
        training += [Measured(j, clients, path) for j in kept]
        held += [f"{path}:{j.id}" for j in back]
        sources.append({"bundle": path, "manifest": manifest.id, "clients": clients})
    fit = fit_cluster(training, system)
    lines = [f"{len(fit.residuals)} jobs fitted from {len(bundles)} bundle(s), {len(held)} held back"]
    lines += [f"  {key:20s} {fit.values[key]:14.6g}  +/- {fit.rel_stderr[key]:.1%}" for key in fit.informed]
    lines += [f"  {key:20s} {fit.values[key]:14.6g}  ({why})" for key, why in fit.bounded.items()]
    lines += [f"  {key:20s} kept ({why})" for key, why in fit.not_informed.items()]
    errors = sorted(abs(r["error_pct"]) for r in fit.residuals)
    lines.append(f"  training residuals: median |error| {errors[len(errors) // 2]:.1f} %, max {errors[-1]:.1f} %")
    return profile_document(name, sources, scenario, fit, held), lines
