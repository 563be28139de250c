"""DLIO (argonne-lcf/dlio_benchmark) output folders as trace bundles.

`ingest` copies a finished DLIO output folder into a bundle untouched and parses
what DLIO documents it writes:

- summary.json: {num_accelerators, hostname, start, end, epochs?, metric: {train_au_percentage: [...per epoch],
  train_au_mean_percentage, train_throughput_samples_per_second: [...], train_throughput_mean_samples_per_second,
  train_io_mean_MB_per_second, train_io_MB_per_second?: [...], eval_*...}}
- per_epoch_stats.json (or {rank}_per_epoch_stats.json): {"1": {start, end, duration, "block1": {...}, ...}, ...};
  checkpointing adds "save_ckpt<N>" / "load_ckpt<N>": {start, end, duration, throughput} per checkpoint
  (statscounter end_save_ckpt / end_load_ckpt: throughput = checkpoint_size / duration, GiB/s)
- checkpointing summaries: metric {save_checkpoint_io_mean_GB_per_second, save_checkpoint_duration_mean_seconds,
  their _stdev_, load_checkpoint_* alike, checkpoint_size_GB} (scalars, DLIO's GB = GiB)
- per-rank files: {rank}_output.json (trace events), {rank}_per_epoch_stats.json, {rank}_load_and_proc_times.json
- .hydra/config.yaml and overrides.yaml (the resolved workload), dlio.log

`run` runs dlio_benchmark when it is on PATH, then ingests its output folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from iowatt.calibration import bundle


class DlioError(ValueError):
    pass


INSTALL_HINT = (
    "dlio_benchmark is not installed or not on PATH; install it with `pip install dlio_benchmark` "
    "(it needs MPI: `apt-get install libopenmpi-dev openmpi-bin`, and pulls PyTorch/TensorFlow), "
    "or run DLIO elsewhere and use `iowatt collect dlio --ingest OUTPUT_DIR`"
)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DlioError(f"--ingest {path.parent}: {path.name} is not valid JSON ({error})") from None


def parse_summary(summary: dict[str, Any]) -> dict[str, Any]:
    metric = summary.get("metric")
    if not isinstance(metric, dict):
        raise DlioError("summary.json has no `metric` mapping (not a DLIO summary)")
    flat = {k: v for k, v in summary.items() if not isinstance(v, dict | list)}
    for key, value in metric.items():
        if not isinstance(value, list):
            flat[key] = value
    return flat


def epoch_rows(summary: dict[str, Any], per_epoch: dict[str, Any] | None) -> list[dict[str, Any]]:
    metric = summary.get("metric") or {}
    series = {k: v for k, v in metric.items() if isinstance(v, list)}
    count = max([len(v) for v in series.values()] + [len(per_epoch or {})] + [0])
    rows = []
    for i in range(count):
        row: dict[str, Any] = {"epoch": i + 1}
        for key, values in series.items():
            if i < len(values):
                row[key] = values[i]
        stats = (per_epoch or {}).get(str(i + 1)) or {}
        for key in ("start", "end", "duration"):
            if key in stats:
                row[f"epoch_{key}"] = stats[key]
        blocks = [b for b in stats if b.startswith("block")]
        row["blocks"] = len(blocks)
        rows.append(row)
    return rows


# DLIO 2.0 (PyPI) checkpoints only during training and times rank 0's save as "ckpt<block>" (duration a string, no throughput)
CHECKPOINT_TAGS = (("save_ckpt", "save"), ("load_ckpt", "load"), ("ckpt", "save"))


def checkpoint_rows(per_epoch: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per checkpoint saved or loaded: DLIO's own duration (seconds) and throughput (GiB/s)."""
    rows = []
    for epoch, stats in sorted((per_epoch or {}).items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0):
        if not isinstance(stats, dict):
            continue
        for key, entry in stats.items():
            for tag, operation in CHECKPOINT_TAGS:
                if key.startswith(tag) and key[len(tag):].isdigit() and isinstance(entry, dict):
                    try:
                        duration = float(entry["duration"])
                        throughput = float(entry["throughput"]) if tag != "ckpt" else None
                    except (KeyError, TypeError, ValueError):
                        raise DlioError(f"per_epoch_stats: epoch {epoch} {key}: expected duration and throughput numbers") from None
                    rows.append({"epoch": int(epoch), "operation": operation, "checkpoint": int(key[len(tag):]),
                                 "duration_seconds": duration, "throughput_GiB_per_second": throughput})
    return rows


def rank_rows(rank: int, document: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (epoch, block) of a per-rank output ({rank}_output.json): DLIO's per-step load, processing and compute
    times (seconds), and the block's throughput (samples/s) and accelerator utilisation (%)."""
    rows = []
    for epoch in sorted((k for k in document if k.isdigit()), key=int):
        stats = document[epoch]
        if not isinstance(stats, dict):
            raise DlioError(f"{rank}_output.json: epoch {epoch} is not a mapping")
        load, proc, compute = (stats.get(k) or {} for k in ("load", "proc", "compute"))
        for block in sorted(set(load) | set(proc), key=lambda b: (len(b), b)):
            steps_load = [float(x) for x in load.get(block, [])]
            steps_proc = [float(x) for x in proc.get(block, [])]
            steps_compute = [float(x) for x in compute.get(block, [])]
            rows.append(
                {
                    "rank": rank,
                    "epoch": int(epoch),
                    "block": block,
                    "steps": len(steps_proc) or len(steps_load),
                    "load_seconds": sum(steps_load),
                    "first_load_seconds": steps_load[0] if steps_load else None,  # the loader's start-up; DLIO's AU leaves it out
                    "proc_seconds": sum(steps_proc),
                    "compute_seconds": sum(steps_compute),
                    "throughput_samples_per_second": (stats.get("throughput") or {}).get(block),
                    "au_percentage": (stats.get("au") or {}).get(block),
                }
            )
    return rows


def ingest(source: Path, out: Path) -> bundle.Manifest:
    if not source.is_dir():
        raise DlioError(f"--ingest {source}: no such directory")
    summary_path = source / "summary.json"
    if not summary_path.is_file():
        raise DlioError(f"--ingest {source}: summary.json is missing; expected a DLIO output folder (hydra_log/.../summary.json)")
    summary = _load_json(summary_path)
    if not isinstance(summary, dict):
        raise DlioError(f"--ingest {source}: summary.json must hold a JSON object")
    try:
        flat = parse_summary(summary)
    except DlioError as error:
        raise DlioError(f"--ingest {source}: {error}") from None
    # DLIO 2.0 writes per_epoch_stats.json; later versions write one per rank ({rank}_per_epoch_stats.json): rank 0's times
    stats_path = next((p for p in (source / "per_epoch_stats.json", source / "0_per_epoch_stats.json") if p.is_file()), None)
    per_epoch = _load_json(stats_path) if stats_path is not None else None
    if per_epoch is not None and not isinstance(per_epoch, dict):
        raise DlioError(f"--ingest {source}: {stats_path.name if stats_path else ''} must hold a JSON object")
    try:
        checkpoints = checkpoint_rows(per_epoch)
    except DlioError as error:
        raise DlioError(f"--ingest {source}: {error}") from None
    ranks = sorted(p.name for p in source.glob("*_output.json"))
    per_rank: list[dict[str, Any]] = []
    for name in ranks:
        document = _load_json(source / name)
        if not isinstance(document, dict):
            raise DlioError(f"--ingest {source}: {name} must hold a JSON object")
        try:
            per_rank += rank_rows(int(name.split("_", 1)[0]), document)
        except (ValueError, TypeError) as error:
            raise DlioError(f"--ingest {source}: {name} is not a DLIO per-rank output ({error})") from None
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DlioError(f"--out {out}: already exists and is not empty; choose a new bundle directory")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, out / "raw", symlinks=False)
    bundle.write_csv(out / "tables" / "summary.csv", [flat])
    bundle.write_csv(out / "tables" / "epochs.csv", epoch_rows(summary, per_epoch) or [{"epoch": 0}])
    if per_rank:
        bundle.write_csv(out / "tables" / "ranks.csv", per_rank)
    if checkpoints:
        bundle.write_csv(out / "tables" / "checkpoints.csv", checkpoints)
    config = source / ".hydra" / "config.yaml"
    workload: dict[str, Any] = {}
    if config.is_file():
        import yaml

        try:
            loaded = yaml.safe_load(config.read_text()) or {}
            workload = loaded.get("workload", loaded) if isinstance(loaded, dict) else {}
        except yaml.YAMLError:
            workload = {}
    manifest = bundle.new_manifest(
        "dlio",
        tools={"iowatt": "ingest", "dlio_benchmark": str(summary.get("version", "unknown")), "python": sys.version.split()[0]},
        plan=str(workload.get("model", {}).get("name", "") if isinstance(workload.get("model"), dict) else workload.get("model", "")),
        target={"source": str(source), "hostname": summary.get("hostname"), "num_accelerators": summary.get("num_accelerators"), "ranks": len(ranks)},
        jobs=[
            bundle.JobEntry(
                id="dlio-run",
                params={"workload": workload},
                runs=[bundle.RunEntry(repeat=0, files=sorted(p.relative_to(out).as_posix() for p in (out / "raw").rglob("*") if p.is_file()))],
            )
        ],
    )
    return bundle.finalize(out, manifest)


def launch(config: Path, workdir: Path, extra: list[str] | None = None, ranks: int = 1, env: dict[str, str] | None = None) -> None:
    """Run dlio_benchmark on CONFIG (as `ranks` MPI processes when more than one) with its output in WORKDIR (new)."""
    exe = shutil.which("dlio_benchmark", path=(env or {}).get("PATH"))
    if exe is None:
        raise DlioError(INSTALL_HINT)
    if not config.is_file():
        raise DlioError(f"--config {config}: no such file")
    if workdir.exists():
        raise DlioError(f"--out: the run folder {workdir} already exists; choose a new bundle directory")
    workdir.mkdir(parents=True)
    # DLIO (hydra) reads workloads from CONFIG_DIR/workload/NAME.yaml: use the file's own folder when it is laid out
    # that way, else copy the file into such a layout inside the run folder
    if config.parent.name == "workload":
        config_dir = config.parent.parent
    else:
        config_dir = workdir / "config"
        (config_dir / "workload").mkdir(parents=True)
        shutil.copyfile(config, config_dir / "workload" / config.name)
    launcher: list[str] = []
    if ranks > 1:
        mpirun = shutil.which("mpirun", path=(env or {}).get("PATH"))
        if mpirun is None:
            raise DlioError(f"{ranks} ranks need mpirun on PATH (Debian: apt-get install openmpi-bin)")
        # --bind-to none: OpenMPI binds each rank to one core when np <= 2 (to a socket above), and the DataLoader
        # workers a rank forks inherit it, so two ranks would each run with their workers on one core of their own.
        # MLPerf Storage's benchmark.sh launches with MPICH's mpirun (its README installs mpich), which binds
        # nothing by default, and the model shares the host's cores among every rank and worker: run it that way.
        launcher = [mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    args = [*launcher, exe, f"--config-dir={config_dir.resolve()}", f"workload={config.stem}", f"++hydra.run.dir={workdir.resolve()}", *(extra or [])]
    done = subprocess.run(args, capture_output=True, text=True, cwd=workdir, env=env)
    (workdir / "dlio.stdout").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise DlioError(f"dlio_benchmark failed (exit {done.returncode}); see {workdir / 'dlio.stdout'}")


def run(config: Path, out: Path, extra: list[str] | None = None, ranks: int = 1, env: dict[str, str] | None = None) -> bundle.Manifest:
    """Run DLIO on CONFIG and ingest its output folder into the bundle OUT."""
    workdir = out.with_name(out.name + ".dlio-run")
    launch(config, workdir, extra, ranks, env)
    manifest = ingest(workdir, out)
    shutil.rmtree(workdir)  # its files are now the bundle's raw/ (a failed run keeps it, with dlio.stdout, for a look)
    return manifest
