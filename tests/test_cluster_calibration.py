"""`iowatt calibrate --kind cluster`: the cluster's software fitted from its clients' fio runs, by parameter recovery.

Oracle: data made by the cluster law itself with known parameters (the frontend's and drive
processes' per-core rates, the client hop) and lognormal noise of a known run-to-run
spread, from one client and from eight at once, 1 MiB and 4 KiB jobs at QD 1..64.  The
fit must return the truth exactly from noise-free data, land within 4 of its reported
standard errors on noisy data, and cover the truth with +/- 2 standard errors about 95 %
of the time (accept 75 %).  End to end, a bundle of fio JSON outputs written from the
same law goes through the CLI, and the profile it writes makes `iowatt run` predict the
measured jobs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from iowatt.calibration import bundle
from iowatt.calibration.cluster_fit import Measured, cluster_of, fit_cluster, predict_Bps, values_of
from iowatt.calibration.model import Job
from iowatt.simulator.system import SystemConfig
from typer.testing import CliRunner

from iowatt.cli import app

STORAGE = {"kind": "cluster", "nodes": 6, "drives_per_node": 2, "device": "micron-7450-pro", "erasure_coding": "4+2",
           "node": {"cpu": "amd-epyc-9654p"}, "clients": 8, "software": {"drive_cores": 3}, "client": {"frontend_cores": 4}}
SYSTEM = SystemConfig.model_validate({"server": {"cpu": "amd-epyc-9654"}, "storage": STORAGE})
BASE = values_of(cluster_of(SYSTEM))
FACTORS = {"frontend.read_iops": 0.7, "frontend.read_GBps": 1.3, "frontend.write_iops": 1.2, "frontend.write_GBps": 0.8,
           "drive.read_iops": 1.25, "drive.read_GBps": 0.75, "drive.write_iops": 0.8, "drive.write_GBps": 1.2, "client.hop": 1.5}
TRUTH = {k: BASE[k] * FACTORS[k] for k in BASE}
KINDS = (("read", 2**20), ("write", 2**20), ("randread", 4096), ("randwrite", 4096))


def plan(client_counts: tuple[int, ...] = (1, 8), kinds: tuple[tuple[str, int], ...] = KINDS) -> list[Measured]:
    return [Measured(Job(f"{rw}-{bs}-qd{qd}-c{c}", rw, float(bs), qd, 1, 1.0 if "read" in rw else 0.0), c, f"c{c}")
            for c in client_counts for rw, bs in kinds for qd in (1, 4, 16, 64)]


def synthetic(noise: float, seed: int, measured: list[Measured] | None = None) -> list[Measured]:
    rng = np.random.default_rng(seed)
    measured = measured or plan()
    bw = predict_Bps(SYSTEM, TRUTH, measured) * np.exp(rng.normal(0.0, noise, len(measured)))
    return [Measured(Job(m.job.id, m.job.rw, m.job.bs, m.job.iodepth, 1, m.job.read_fraction, bw_Bps=float(b), spread=noise, runs=3),
                     m.clients, m.bundle) for m, b in zip(measured, bw, strict=True)]


def test_noise_free_data_return_the_truth():
    fit = fit_cluster(synthetic(0.0, 0), SYSTEM)
    assert set(fit.informed) == set(TRUTH)
    for name in fit.informed:
        assert fit.values[name] == pytest.approx(TRUTH[name], rel=1e-3), name


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_noisy_data_truth_within_four_standard_errors(seed: int):
    fit = fit_cluster(synthetic(0.05, seed), SYSTEM, loss="linear")
    for name in fit.informed:
        deviation = abs(math.log(fit.values[name] / TRUTH[name]))
        assert deviation <= 4.0 * fit.rel_stderr[name] + 1e-3, (name, fit.values[name] / TRUTH[name], fit.rel_stderr[name])
    assert 0.5 < fit.s < 2.0  # the residual scale estimates the noise the weights assume


def test_two_standard_errors_cover_the_truth_about_as_often_as_they_should():
    hits = total = 0
    for seed in range(10, 14):
        fit = fit_cluster(synthetic(0.06, seed), SYSTEM, loss="linear")
        for name in fit.informed:
            total += 1
            hits += abs(math.log(fit.values[name] / TRUTH[name])) <= 2.0 * fit.rel_stderr[name]
    assert hits / total >= 0.75


def test_a_read_only_bundle_keeps_the_write_rates_and_says_why():
    fit = fit_cluster(synthetic(0.0, 0, plan(kinds=(("read", 2**20), ("randread", 4096)))), SYSTEM)
    for name in ("frontend.write_iops", "frontend.write_GBps", "drive.write_iops", "drive.write_GBps"):
        assert name not in fit.informed and "no write jobs" in fit.not_informed[name]
        assert fit.values[name] == BASE[name]
    assert fit.values["frontend.read_iops"] == pytest.approx(TRUTH["frontend.read_iops"], rel=1e-3)


# ---------------------------------------------------------------------------- end to end through the CLI


def write_bundle(root: Path, measured: list[Measured], runs: int = 2) -> Path:
    """A bundle of fio JSON outputs as `iowatt collect fio` writes them, with the measured rates of `measured`."""
    jobs = []
    for m in measured:
        job, entries = m.job, []
        direction = "read" if job.read_fraction == 1.0 else "write"
        for r in range(runs):
            bw = job.bw_Bps * (1.0 + (0.01 if r else -0.01))
            section = {"io_bytes": int(bw * 10), "bw_bytes": bw, "iops": bw / job.bs, "runtime": 10000,
                       "lat_ns": {"mean": job.iodepth / (bw / job.bs) * 1e9}, "clat_ns": {"percentile": {}}}
            document = {"fio version": "fio-3.35", "timestamp_ms": 0, "global options": {},
                        "jobs": [{"jobname": job.id, "job options": {"rw": job.rw, "bs": str(int(job.bs)), "iodepth": str(job.iodepth), "numjobs": "1"},
                                  direction: section, "job_runtime": 10000, "usr_cpu": 0.0, "sys_cpu": 0.0}]}
            name = f"raw/{job.id}-r{r}.json"
            (root / "raw").mkdir(parents=True, exist_ok=True)
            (root / name).write_text(json.dumps(document))
            entries.append(bundle.RunEntry(repeat=r, files=[name]))
        jobs.append(bundle.JobEntry(id=job.id, params={"rw": job.rw, "bs": int(job.bs), "iodepth": job.iodepth}, runs=entries))
    bundle.finalize(root, bundle.new_manifest("fio", {"fio": "fio-3.35"}, plan="synthetic", repeat=runs, jobs=jobs))
    return root


def test_calibrate_kind_cluster_end_to_end(tmp_path: Path):
    data = synthetic(0.0, 0)
    one = write_bundle(tmp_path / "one", [m for m in data if m.clients == 1])
    eight = write_bundle(tmp_path / "eight", [m for m in data if m.clients == 8])
    scenario = tmp_path / "cluster.yaml"
    scenario.write_text(yaml.safe_dump({"name": "c", "system": {"server": {"cpu": "amd-epyc-9654"}, "storage": STORAGE},
                                        "workload": {"kind": "fio", "rw": "randread", "bs": "4k", "iodepth": 16, "numjobs": 8, "runtime": "1 s"}}))
    profile = tmp_path / "fitted.yaml"
    result = CliRunner().invoke(app, ["calibrate", str(one), "--kind", "cluster", "--scenario", str(scenario), "--clients", "1",
                                      "--more", f"{eight}=8", "-o", str(profile)])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(profile.read_text())
    assert document["format"] == "iowatt-cluster-profile"
    assert document["software"]["drive"]["read_iops"]["p"] == "calibrated" and str(one) in document["software"]["drive"]["read_iops"]["src"]
    # the profile makes `iowatt run` predict the 8-client 4 KiB QD16 read that was measured
    out = CliRunner().invoke(app, ["run", str(scenario), "--set", f"storage.profile={profile}", "--format", "json"])
    assert out.exit_code == 0, out.output
    measured = next(m for m in data if m.job.id == "randread-4096-qd16-c8").job.bw_Bps * 8
    assert json.loads(out.stdout)["metrics"]["read_bw_bytes"] == pytest.approx(measured, rel=2e-3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "cluster"], "--scenario: --kind cluster needs the scenario"),
        (["--kind", "tape"], "--kind: expected ssd or cluster, found 'tape'"),
        ([], "--base: --kind ssd needs the catalog SSD"),
        (["--kind", "cluster", "--scenario", "SCENARIO", "--more", "nowhere"], "--more: expected BUNDLE=CLIENTS, found 'nowhere'"),
        (["--kind", "cluster", "--scenario", "scenarios/library/checkpoint_llama405b_8gpu.yaml"], "expected a scenario whose system.storage is kind: cluster"),
    ],
)
def test_bad_calibrate_input_names_the_option(tmp_path: Path, args: list[str], message: str):
    bundle_dir = write_bundle(tmp_path / "b", synthetic(0.0, 0, plan((1,)))[:12])
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "cluster" / "fio_ec42_6node_12clients.yaml"
    args = [str(scenario) if a == "SCENARIO" else a for a in args]
    result = CliRunner().invoke(app, ["calibrate", str(bundle_dir), "-o", str(tmp_path / "p.yaml"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "p.yaml").exists()
