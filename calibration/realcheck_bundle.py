"""The real-hardware check's bundle, and the score of predicted against measured.

Layout::

    BUNDLE/
      realcheck.json         this module's manifest: machine facts, runs, predictions as made, every file's sha256
      profile.yaml           the profile `iowatt calibrate` fitted to fio/
      fio/                   the fio trace bundle (`iowatt collect fio`; may be left out of a slimmed copy)
      workloads/NAME.yaml    each run's DLIO workload file, as DLIO read it
      dlio/NAME/rK/          one DLIO trace bundle (`iowatt collect dlio`) per run and repeat

Scoring: each metric's real runs give a mean and a range (min..max); the error is (predicted - mean) / mean; a
prediction outside the range misses beyond the run-to-run spread.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from iowatt.calibration import bundle
from iowatt.calibration.realcheck_runs import RunSpec, measured
from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = "iowatt-realcheck"
VERSION = 1
MANIFEST = "realcheck.json"


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    ranks: int = Field(ge=1)
    fsync: bool = False
    checkpoints: int = Field(default=0, ge=0)
    workload: dict[str, Any]
    dlio: list[str] = Field(description="the run's DLIO trace bundles, one per repeat, relative to the bundle")

    def spec(self) -> RunSpec:
        return RunSpec(self.name, "checkpoint" if self.kind == "checkpoint" else "training", self.ranks, self.workload, self.fsync, self.checkpoints)


class RealcheckManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str
    version: int
    created: str
    machine: dict[str, Any]
    caches_dropped: bool
    profile: str = "profile.yaml"
    fio: str | None = "fio"
    runs: list[RunRecord]
    predictions: dict[str, dict[str, Any]]
    files: list[bundle.FileEntry] = Field(default_factory=list)


def finalize(root: Path, manifest: RealcheckManifest) -> RealcheckManifest:
    """List every file of the bundle with its checksum and write realcheck.json."""
    files = [bundle.FileEntry(path=p.relative_to(root).as_posix(), sha256=bundle.sha256_file(p), bytes=p.stat().st_size)
             for p in sorted(root.rglob("*")) if p.is_file() and p.name != MANIFEST]
    manifest = manifest.model_copy(update={"files": files})
    (root / MANIFEST).write_text(json.dumps(manifest.model_dump(mode="json"), indent=2) + "\n")
    return manifest


def is_realcheck(root: Path) -> bool:
    return (root / MANIFEST).is_file()


def load(root: Path) -> RealcheckManifest:
    """Read and check a realcheck bundle: its manifest, and every file it lists against its sha256."""
    path = root / MANIFEST
    if not path.is_file():
        raise bundle.BundleError(f"bundle {root}: {MANIFEST} is missing (not a bundle from `iowatt check-machine`)")
    try:
        raw = json.loads(path.read_text())
        manifest = RealcheckManifest.model_validate(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise bundle.BundleError(f"bundle {root}: {MANIFEST} is not valid JSON ({error})") from None
    except ValidationError as error:
        first = error.errors()[0]
        raise bundle.BundleError(f"bundle {root}: {MANIFEST}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None
    if manifest.format != FORMAT or manifest.version != VERSION:
        raise bundle.BundleError(f"bundle {root}: expected {FORMAT} version {VERSION}, found {manifest.format} version {manifest.version}")
    for entry in manifest.files:
        file = root / entry.path
        if not file.resolve().is_relative_to(root.resolve()):
            raise bundle.BundleError(f"bundle {root}: {MANIFEST} lists {entry.path!r}, outside the bundle")
        if not file.is_file():
            raise bundle.BundleError(f"bundle {root}: {entry.path} is listed in {MANIFEST} but missing (truncated bundle)")
        if file.stat().st_size != entry.bytes or bundle.sha256_file(file) != entry.sha256:
            raise bundle.BundleError(f"bundle {root}: {entry.path} does not match its sha256 in {MANIFEST} (corrupt or edited)")
    if not (root / manifest.profile).is_file():
        raise bundle.BundleError(f"bundle {root}: {manifest.profile} is missing (the profile the predictions used)")
    return manifest


def measured_by_repeat(root: Path, run: RunRecord) -> list[dict[str, float]]:
    if not run.dlio:
        raise bundle.BundleError(f"bundle {root}: run {run.name} has no DLIO bundle")
    return [measured(run.spec(), root / relative) for relative in run.dlio]


def score_rows(name: str, predicted: dict[str, float], repeats: list[dict[str, float]]) -> list[dict[str, Any]]:
    """One row per predicted metric: the real runs' mean, range and stdev, the error, and whether it is beyond the range."""
    rows = []
    for metric, value in predicted.items():
        real = [r[metric] for r in repeats if metric in r]
        if not real:
            continue
        mean = statistics.fmean(real)
        low, high = min(real), max(real)
        rows.append({
            "run": name, "metric": metric, "predicted": value, "measured_mean": mean, "measured_min": low, "measured_max": high,
            "measured_stdev": statistics.stdev(real) if len(real) > 1 else 0.0, "repeats": len(real),
            "error_pct": 100.0 * (value - mean) / mean if mean else None,
            "spread_pct": 100.0 * (high - low) / mean if mean else None,
            "beyond_spread": not low <= value <= high,
        })
    return rows


def fio_reference(root: Path, fio: str | None) -> dict[str, float]:
    """From the fio bundle's jobs table: the best sequential write and read bandwidth (B/s) and the mean completion
    latency of its large sequential reads (us); empty when the bundle was slimmed of fio/."""
    if fio is None or not (root / fio / "tables" / "jobs.csv").is_file():
        return {}
    rows = bundle.read_csv(root / fio / "tables" / "jobs.csv")
    out: dict[str, float] = {}
    for rw, key in (("write", "seq_write_Bps"), ("read", "seq_read_Bps")):
        values = [float(r["bw_Bps"]) for r in rows if r.get("rw") == rw and r.get("bw_Bps")]
        if values:
            out[key] = max(values)
    for r in rows:
        if r.get("rw") == "read" and r.get("bs") == str(2**20) and r.get("iodepth") == "1" and r.get("lat_mean_us"):
            out["read_1MiB_qd1_lat_us"] = float(r["lat_mean_us"])
    return out


def trace_hint(run: RunRecord, repeats: list[dict[str, float]], fio: dict[str, float]) -> str:
    """What the real run's trace says bound it: a checkpoint's per-rank write rate against fio's sequential writes,
    a training step's wait for data (DLIO's per-step load time) against its emulated compute."""
    if run.kind == "checkpoint":
        seconds = statistics.fmean(r["save_seconds"] for r in repeats)
        shard = float(run.workload["checkpoint"]["model_size"])  # type: ignore[index]
        rate = shard * run.ranks / seconds
        text = f"ranks wrote {rate / 1e9:.2f} GB/s together"
        if "seq_write_Bps" in fio:
            share = rate / fio["seq_write_Bps"]
            text += f", {share:.0%} of fio's best sequential write ({fio['seq_write_Bps'] / 1e9:.2f} GB/s)"
            text += ": the drive" if share >= 0.7 else ": not the drive (CPU side: torch.save serialization, page-cache copies" + (
                ", fsync's write-back)" if run.fsync else ")")
        return text
    load = [r["step_load_seconds"] for r in repeats if "step_load_seconds" in r]
    compute = [r["step_compute_seconds"] for r in repeats if "step_compute_seconds" in r]
    if not load or not compute:
        return "DLIO's per-step times are not in the bundle"
    step_load, step_compute = statistics.fmean(load), statistics.fmean(compute)
    first = [r["first_step_load_seconds"] for r in repeats if "first_step_load_seconds" in r]
    text = f"first step waits {statistics.fmean(first):.2f} s (the loader's start-up); later steps " if first else "per step: "
    text += f"wait {step_load * 1e3:.1f} ms for data, compute {step_compute * 1e3:.1f} ms"
    barrier = [r["step_barrier_seconds"] for r in repeats if "step_barrier_seconds" in r]
    if barrier:
        text += f", then {statistics.fmean(barrier) * 1e3:.1f} ms at the step's barrier (the slower rank's step)"
    if step_load <= 0.1 * step_compute:
        return text + ": compute bound"
    if "seq_read_Bps" not in fio:
        return text + ": I/O or data-loader bound"
    # all ranks' batches of a step, read at fio's best sequential rate: the drive's share of the wait
    batch = float(run.workload["reader"]["batch_size"]) * float(run.workload["dataset"]["record_length"]) * run.ranks  # type: ignore[index]
    drive_s = batch / fio["seq_read_Bps"]
    text += f"; the drive reads a step's {batch / 2**20:.1f} MiB in {drive_s * 1e3:.1f} ms at fio's {fio['seq_read_Bps'] / 1e9:.2f} GB/s"
    # the loader prefetches while the step computes: the drive binds when reading a step's data takes most of a step
    busy = drive_s / (step_load + step_compute)
    return text + (f" (busy {busy:.0%} of a step)" + (": the drive" if busy >= 0.7 else ": the data loader (CPU: opening, reading, decoding and "
                                                              "collating samples), not the drive"))


def slim(source: Path, target: Path) -> RealcheckManifest:
    """A copy of a bundle without the raw tool outputs (fio's JSON+ and logs, DLIO's per-rank traces): the parsed
    tables, the profile and the manifest stay, so the copy re-scores as the original does (a small test fixture)."""
    import shutil

    manifest = load(source)
    raw = ("/raw/", "/power/")  # and the sub-bundles' own manifests, which list the raw files left out
    for entry in manifest.files:
        if not any(part in f"/{entry.path}" for part in raw) and not entry.path.endswith("/manifest.json"):
            (target / entry.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / entry.path, target / entry.path)
    return finalize(target, manifest)
