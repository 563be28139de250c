"""`iowatt check-machine`: the real-hardware loop.  Measure this machine's disk with fio, calibrate a profile,
predict small DLIO checkpoint and training runs with it, run them for real (each several times), and print
predicted against measured with the run-to-run spread; everything lands in one bundle that
`iowatt validate --bundle` re-scores without hardware (calibration/realcheck_bundle.py, docs/realcheck.md)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from iowatt.errors import UserError, user_errors

if TYPE_CHECKING:
    from iowatt.calibration.realcheck_bundle import RealcheckManifest
    from iowatt.calibration.realcheck_runs import RunSpec

GB = 1e9
HEADROOM = 1.5  # free space asked for beyond the run's own bytes (filesystem metadata, DLIO's logs, fio's files)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _dlio_env(dlio_bin: Path | None, plugin_dir: Path) -> dict[str, str]:
    from iowatt.calibration.dlio import INSTALL_HINT

    env = dict(os.environ)
    if dlio_bin is not None:
        if not (dlio_bin / "dlio_benchmark").is_file():
            raise UserError(f"--dlio-bin {dlio_bin}: expected a folder holding dlio_benchmark, found none there")
        env["PATH"] = f"{dlio_bin}{os.pathsep}{env.get('PATH', '')}"
    if shutil.which("dlio_benchmark", path=env.get("PATH")) is None:
        raise UserError(INSTALL_HINT + "; or point --dlio-bin at the folder holding it")
    if shutil.which("fio") is None:
        raise UserError("fio is not on PATH (Debian: apt-get install fio)")
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(plugin_dir), env.get("PYTHONPATH", "")) if x)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def _bytes_needed(runs: list[RunSpec]) -> float:
    total = 2 * GB  # fio's test file (the quick plan's largest) and DLIO's small files
    for run in runs:
        if run.kind == "checkpoint":
            total += float(run.workload["checkpoint"]["model_size"]) * run.ranks * run.checkpoints  # type: ignore[index]
        else:
            total += float(run.workload["dataset"]["num_files_train"]) * float(run.workload["dataset"]["record_length"])  # type: ignore[index]
    return total * HEADROOM


def _check_places(out: Path, scratch: Path, need_bytes: float) -> None:
    if not scratch.is_dir():
        raise UserError(f"--scratch {scratch}: expected an existing directory on the disk to measure, found {'a file' if scratch.exists() else 'nothing'}")
    if not os.access(scratch, os.W_OK):
        raise UserError(f"--scratch {scratch}: expected a writable directory, found it read-only")
    free = shutil.disk_usage(scratch).free
    if free < need_bytes:
        raise UserError(f"--scratch {scratch}: expected at least {need_bytes / GB:.1f} GB free for the runs, found {free / GB:.1f} GB")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--output {out}: expected a new bundle directory, found one that exists and is not empty")
    parent = out.resolve().parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UserError(f"--output {out}: expected a writable parent directory, found {parent} {'read-only' if parent.is_dir() else 'missing'}")


def _prepare(spec: RunSpec, work: Path, scratch: Path, env: dict[str, str]) -> Path:
    """Write the run's DLIO configuration and generate its training data once; returns the configuration to run."""
    import yaml

    from iowatt.calibration import dlio

    configs = scratch / "configs" / "workload"
    configs.mkdir(parents=True, exist_ok=True)
    (work / "workloads").mkdir(exist_ok=True)
    (work / "workloads" / f"{spec.name}.yaml").write_text(yaml.safe_dump(spec.workload, sort_keys=False))
    if spec.generate:
        generate = configs / f"{spec.name}_generate.yaml"
        generate.write_text(yaml.safe_dump(spec.generate, sort_keys=False))
        shutil.rmtree(scratch / "generated" / spec.name, ignore_errors=True)  # a null run's second set generates anew
        dlio.launch(generate, scratch / "generated" / spec.name, ranks=spec.ranks, env=env)  # data only: no summary to ingest
    config = configs / f"{spec.name}.yaml"
    config.write_text(yaml.safe_dump(spec.workload, sort_keys=False))
    return config


def _run_once(spec: RunSpec, config: Path, work: Path, scratch: Path, env: dict[str, str], k: int, caches: list[bool]) -> str:
    """One real run of a prepared configuration through `collect dlio`'s runner, into dlio/NAME/r{k}."""
    from iowatt.calibration import dlio
    from iowatt.calibration.realcheck_runs import drop_caches

    if spec.kind == "checkpoint":
        shutil.rmtree(scratch / "ckpt" / spec.name, ignore_errors=True)  # each repeat writes new files, as the first did
    caches.append(drop_caches())
    relative = f"dlio/{spec.name}/r{k}"
    dlio.run(config, work / relative, ranks=spec.ranks, env=env)
    return relative


def _clean(spec: RunSpec, scratch: Path) -> None:
    shutil.rmtree(scratch / "ckpt" / spec.name, ignore_errors=True)
    shutil.rmtree(scratch / "data" / spec.name, ignore_errors=True)


def _run_dlio(runs: list[RunSpec], work: Path, scratch: Path, env: dict[str, str], repeats: int, caches: list[bool],
              first: int = 0) -> list[list[str]]:
    """Every run once, then again, `repeats` rounds (into dlio/NAME/r{first}, r{first + 1}, ...): each run's repeats
    then span the whole stretch the probes on either side bracket, so its min..max holds the machine's drift over it as
    the pooled probes do (run back to back, the first run's repeats saw only the first minutes and the last's only the
    last; calibration.runner and calibration.pass_test interleave their repeats for the same reason).  Each run's data
    is generated once before the first round and removed after the last."""
    configs = [_prepare(spec, work, scratch, env) for spec in runs]
    done: list[list[str]] = [[] for _ in runs]
    for k in range(first, first + repeats):
        for i, (spec, config) in enumerate(zip(runs, configs, strict=True)):
            done[i].append(_run_once(spec, config, work, scratch, env, k, caches))
        _say(f"  round {k + 1 - first}/{repeats} done ({', '.join(spec.name for spec in runs)})")
    for spec in runs:
        _clean(spec, scratch)
    return done


def _measure(work: Path, scratch: Path, runs: list[RunSpec], repeats: int, base: str, env: dict[str, str], quick: bool) -> RealcheckManifest:
    from iowatt.calibration.handover_probe import HandoverProbeError, dlio_python, handover_cpu
    from iowatt.calibration.host_probe import probe
    from iowatt.calibration.plan import load_plan
    from iowatt.calibration.realcheck_bundle import FORMAT, VERSION, RealcheckManifest, RunRecord
    from iowatt.calibration.realcheck_runs import FSYNC_MODULE, FSYNC_PLUGIN, PROBE_FACTS, machine_facts, null_runs, probe_drift, probe_facts
    from iowatt.calibration.runner import collect
    from iowatt.commands.ssd_profile import as_user_error, fit_ssd
    from iowatt.scenarios.realcheck_predict import predict, workload_for

    (scratch / "plugin").mkdir(exist_ok=True)
    (scratch / "plugin" / f"{FSYNC_MODULE}.py").write_text(FSYNC_PLUGIN)
    _say("(a) fio, quick plan")
    collect(scratch, load_plan("quick"), work / "fio", progress=None)
    _say("(b) calibrate")
    user_errors(as_user_error(fit_ssd))(work / "fio", work / "profile.yaml", base, None, 0.0, 0, "this-machine")
    _say("(c) probe the host: page-cache writes, cold reads and npz loads (host_probe), DLIO's own costs (null runs)")
    records = tuple(int(r.workload["dataset"]["record_length"]) for r in runs if r.kind == "training")  # type: ignore[index]
    facts: dict[str, Any] = {**machine_facts(), **probe(scratch, records=records)}
    null_repeats, cores = 1 if quick else 2, int(facts["cores"])
    before = [[work / d for d in dirs] for dirs in _run_dlio(null_runs(scratch), work, scratch, env, null_repeats, [])]
    facts.update(probe_facts(*before, cores))
    try:  # the trainer's CPU in the hand-over, with DLIO's own PyTorch
        facts.update(handover_cpu(dlio_python(Path(shutil.which("dlio_benchmark", path=env.get("PATH")) or "dlio_benchmark"))))
    except HandoverProbeError as error:
        _say(f"    no hand-over CPU probe ({error}): the hand-over stays a wait")
    _say(f"    page-cache writes {facts['page_cache_write_GBps_per_core']:.2f} GB/s per core, cold reads "
         f"{facts['page_cache_read_GBps_per_core']:.2f} GB/s of CPU, new shared memory "
         f"{facts['shm_write_GBps_per_core'] or 0:.2f} GB/s; npz {facts['npz_seconds_per_file'] * 1e3:.2f} ms "
         f"per file + {facts['npz_GBps_per_core']:.2f} GB/s; DLIO: loader start {facts['loader_start_seconds']:.2f} s, "
         f"{facts['step_overhead_seconds'] * 1e3:.1f} ms per step and {facts['epoch_overhead_seconds']:.2f} s per epoch outside compute, "
         f"{facts['loader_seconds_per_sample'] * 1e3:.2f} core-ms per 4 KiB sample in the loader, "
         f"{facts['handover_seconds'] * 1e3:.2f} ms to hand a loaded batch over")
    _say(f"(d) predict {len(runs)} runs on {facts['cores']} cores, {float(facts['memory_bytes'] or 0) / 2**30:.1f} GiB, "
         f"vm.dirty_ratio {facts['dirty_ratio']} %")
    predictions = {r.name: predict(r.name, r.kind, workload_for(r.kind, r.workload, r.ranks, r.fsync, r.checkpoints, facts), facts,
                                   str(work / "profile.yaml")) for r in runs}
    _say(f"(e) run DLIO, {repeats} rounds of every run")
    caches: list[bool] = []
    records = [RunRecord(name=spec.name, kind=spec.kind, ranks=spec.ranks, fsync=spec.fsync, checkpoints=spec.checkpoints,
                         workload=spec.workload, dlio=dlio_dirs)
               for spec, dlio_dirs in zip(runs, _run_dlio(runs, work, scratch, env, repeats, caches), strict=True)]
    # the null runs again after the scored runs: the machine's pace moves over minutes (docs/realcheck.md), so the
    # model's inputs are the probes on both sides of the runs it predicts, and how far they moved is kept
    # (in --quick too, once each, so the slow test runs this path)
    _say("(f) the null runs again, after the scored runs")
    after = [[work / d for d in dirs] for dirs in _run_dlio(null_runs(scratch), work, scratch, env, null_repeats, [], first=null_repeats)]
    facts["probes_before"] = {k: facts[k] for k in PROBE_FACTS}
    facts["probes_drift"] = probe_drift(facts["probes_before"], probe_facts(*after, cores))
    facts.update(probe_facts(*(b + a for b, a in zip(before, after, strict=True)), cores))
    from iowatt.calibration.bundle import now_iso

    return RealcheckManifest(format=FORMAT, version=VERSION, created=now_iso(), machine={**facts, "quick": quick}, caches_dropped=all(caches),
                             runs=records, predictions=predictions)


def score(root: Path, manifest: RealcheckManifest) -> dict[str, Any]:
    """Predict the bundle's runs again with its profile and machine (today's model), and score them against its DLIO runs."""
    from iowatt.calibration.realcheck_bundle import fio_reference, measured_by_repeat, score_rows, trace_hint
    from iowatt.scenarios.realcheck_predict import predict, workload_for

    fio = fio_reference(root, manifest.fio)
    rows, runs = [], []
    for run in manifest.runs:
        repeats = measured_by_repeat(root, run)
        workload = workload_for(run.kind, run.workload, run.ranks, run.fsync, run.checkpoints, manifest.machine)
        prediction = predict(run.name, run.kind, workload, manifest.machine, str(root / manifest.profile))
        scored = score_rows(run.name, prediction["values"], repeats)
        rows += scored
        runs.append({"run": run.name, "binding": prediction["binding"], "time_change_when_doubled": prediction["time_change_when_doubled"],
                     "trace": trace_hint(run, repeats, fio), "beyond_spread": any(r["beyond_spread"] for r in scored)})
    return {"bundle": str(root), "machine": manifest.machine, "caches_dropped": manifest.caches_dropped, "metrics": rows, "runs": runs,
            "predictions_as_made": manifest.predictions}


_PROBE_LABELS = {"step_overhead_seconds": ("loop per step", 1e3, "ms"), "handover_seconds": ("hand-over", 1e3, "ms"),
                 "loader_seconds_per_sample": ("loader per 4 KiB sample", 1e3, "core-ms"),
                 "loader_start_seconds": ("loader start", 1.0, "s"), "epoch_overhead_seconds": ("block once", 1.0, "s")}


def render_score(report: dict[str, Any]) -> str:
    from iowatt.output.tables import Table, format_number, render

    columns = ("run", "metric", "predicted", "measured_mean", "measured_range", "stdev", "error_pct", "beyond_spread")
    rows = [[r["run"], r["metric"], format_number(r["predicted"]), format_number(r["measured_mean"]),
             f"{format_number(r['measured_min'])}..{format_number(r['measured_max'])}", format_number(r["measured_stdev"]),
             f"{r['error_pct']:+.1f}", "yes" if r["beyond_spread"] else "no"] for r in report["metrics"]]
    table = Table(columns, rows, title=f"predicted vs measured ({report['metrics'][0]['repeats'] if rows else 0} real runs each): {report['bundle']}",
                  right=frozenset(columns[2:7]))
    notes = [f"page cache {'dropped before every run' if report['caches_dropped'] else 'NOT dropped (no permission): training may read cached data'}"]
    load = report["machine"].get("loadavg_1min")
    if load is not None:
        notes.append(f"load average {load:.1f} on {report['machine'].get('cores')} cores as the probes began (the model assumes DLIO alone on them)")
    drift = report["machine"].get("probes_drift") or {}
    if drift:
        moved = ", ".join(f"{label} {d['before'] * scale:.2f} -> {d['after'] * scale:.2f} {unit} ({d['change']:+.0%})"
                          for key, d in drift.items() for label, scale, unit in [_PROBE_LABELS.get(key, (key, 1.0, ""))])
        notes.append(f"DLIO's own costs, null runs before -> after the scored runs (the predictions use both): {moved}")
    for run in report["runs"]:
        if run["beyond_spread"]:
            moved = ", ".join(f"{k} {v:+.0%}" for k, v in run["time_change_when_doubled"].items())
            notes.append(f"{run['run']}: misses beyond the spread; the model was bound by {run['binding']} (run time when doubled: {moved}); "
                         f"the real trace: {run['trace']}")
    return render([table, *notes], width=150)


@user_errors
def check_machine(
    output: Annotated[Path, typer.Option("--output", "-o", help="Bundle directory to create (fio traces, profile, DLIO runs, predictions).")],
    scratch: Annotated[Path | None, typer.Option("--scratch", help="Directory on the disk to measure (default: a new one under $TMPDIR).")] = None,
    repeats: Annotated[int, typer.Option("--repeats", "-r", help="Real runs of every DLIO configuration, in rounds (every run once, then "
                                         "again; >= 2, for the spread; 5 by default: a prediction equal to the runs' true mean falls "
                                         "inside n runs' min..max with probability 1 - 2 x 0.5^n, 94 % at 5, 75 % at 3).")] = 5,
    quick: Annotated[bool, typer.Option("--quick", help="One checkpoint and one training run, smaller (about 4 minutes on 2 cores, "
                                        "with fio and the probes).")] = False,
    base: Annotated[str, typer.Option("--base", "-b", help="Catalog SSD whose values fio does not inform (as `iowatt calibrate --base`).")] = "micron-7450-pro",
    dlio_bin: Annotated[
        Path | None, typer.Option("--dlio-bin", envvar="IOWATT_DLIO_BIN", help="Folder holding dlio_benchmark (e.g. a venv's bin), if not on PATH.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
) -> None:
    """Measure this machine (fio for the disk, a host probe and null DLIO runs for the host side), calibrate, predict small DLIO
    checkpoint and training runs, run them, and score the predictions."""
    from iowatt.calibration.bundle import BundleError
    from iowatt.calibration.dlio import DlioError
    from iowatt.calibration.realcheck_bundle import finalize
    from iowatt.calibration.realcheck_runs import run_set
    from iowatt.calibration.runner import CollectError

    if repeats < 2:
        raise UserError(f"--repeats: expected at least 2 (the run-to-run spread needs two runs), found {repeats}")
    if fmt not in ("table", "json"):
        raise UserError(f"--format: expected table or json, found {fmt!r}")
    own_scratch = scratch is None
    # absolute: DLIO runs in its own folder and imports the fsync plugin from the scratch directory
    scratch = Path(tempfile.mkdtemp(prefix="iowatt-realcheck-")) if scratch is None else scratch.absolute()
    runs = run_set(scratch, quick)
    try:
        _check_places(output, scratch, _bytes_needed(runs))
        env = _dlio_env(dlio_bin, scratch / "plugin")
        work = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.resolve().parent))
        try:
            manifest = _measure(work, scratch, runs, repeats, base, env, quick)
            finalize(work, manifest)
            report = score(work, manifest)
        except (DlioError, CollectError, BundleError) as error:
            log = next(iter(sorted(work.rglob("dlio.stdout"))), None)
            kept = output.with_name(f"{output.name}.dlio-failure.log")
            if log is not None:
                shutil.copyfile(log, kept)
            shutil.rmtree(work, ignore_errors=True)
            print(f"error: {error}" + (f" (its output is kept in {kept})" if log is not None else ""), file=sys.stderr)
            raise typer.Exit(1) from None
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        if output.exists():
            output.rmdir()
        work.rename(output)
    finally:
        for name in ("configs", "generated", "plugin", "ckpt", "data", "iowatt-fio-test"):
            shutil.rmtree(scratch / name, ignore_errors=True)
        if own_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    report["bundle"] = str(output)
    typer.echo(json.dumps(report, indent=2) if fmt == "json" else render_score(report))


def rescore(root: Path, fmt: str | None) -> None:
    """`iowatt validate --bundle DIR` on a check-machine bundle: re-predict and re-score, no hardware."""
    from iowatt.calibration.realcheck_bundle import load

    report = score(root, load(root))
    typer.echo(json.dumps(report, indent=2) if fmt == "json" else render_score(report))


def register(app: typer.Typer) -> None:
    app.command("check-machine")(check_machine)
