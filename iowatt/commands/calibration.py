"""Calibration commands: `iowatt collect fio|dlio|passes`, `iowatt calibrate`, `iowatt validate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from iowatt.app import App
from iowatt.commands.ssd_profile import as_user_error as _as_user_error
from iowatt.commands.ssd_profile import calibration_errors as _errors
from iowatt.commands.ssd_profile import fit_ssd
from iowatt.errors import UserError, user_errors
from iowatt.uncertainty_options import LevelOption, MethodOption, SamplesOption, UncertaintyOption, settings

collect_app = App(help="Measure this machine into a trace bundle (fio jobs, or a DLIO run).", no_args_is_help=True)


def _default_out(prefix: str) -> Path:
    from datetime import datetime

    return Path(f"{prefix}-{datetime.now().strftime('%Y%m%d-%H%M%S')}")


@collect_app.command("fio")
@user_errors
@_as_user_error
def collect_fio(
    target: Annotated[Path, typer.Option("--target", "-t", help="Directory (a test file is created and removed), file, or block device to measure.")],
    plan: Annotated[str, typer.Option("--plan", help="quick (< 1 min), standard (< 15 min), or a plan YAML/JSON file.")] = "quick",
    repeat: Annotated[int, typer.Option("--repeat", "-r", help="Run every job N times, interleaved, and record each job's spread.")] = 1,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Bundle directory to create (default: fio-bundle-DATE).")] = None,
    destructive: Annotated[bool, typer.Option("--destructive", help="Allow writing to an existing file or a raw block device.")] = False,
    serial: Annotated[str | None, typer.Option("--serial", help="Serial number of the block device; required with --destructive on a device.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Run a plan of fio jobs on TARGET and save a trace bundle (raw fio JSON+, logs, inventory, power samples)."""
    from iowatt.calibration.plan import load_plan
    from iowatt.calibration.runner import collect

    chosen = load_plan(plan)
    out = out or _default_out("fio-bundle")
    if not quiet:
        print(f"{chosen.name}: {len(chosen.jobs)} jobs x {repeat}, about {chosen.estimated_seconds(repeat):.0f} s", file=sys.stderr)
    say = None if quiet else (lambda text: print(text, file=sys.stderr))
    manifest = collect(target, chosen, out, repeat=repeat, destructive=destructive, serial=serial, progress=say)
    absent = [k for k, v in manifest.power_sources.items() if not v.available]
    print(f"bundle {out} (manifest {manifest.id}): {len(manifest.jobs)} jobs, {sum(len(j.runs) for j in manifest.jobs)} runs; "
          f"power sources absent: {', '.join(absent) or 'none'}", file=sys.stderr)
    typer.echo(str(out))


@collect_app.command("dlio")
@user_errors
@_as_user_error
def collect_dlio(
    ingest: Annotated[Path | None, typer.Option("--ingest", help="An existing DLIO output folder (with summary.json) to turn into a bundle.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="A DLIO workload YAML to run (needs dlio_benchmark on PATH).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Bundle directory to create (default: dlio-bundle-DATE).")] = None,
    override: Annotated[
        list[str] | None,
        typer.Option("--override", metavar="KEY=VALUE", help="Hydra override passed to DLIO with --config, e.g. ++workload.dataset.data_folder=/scratch/d"),
    ] = None,
) -> None:
    """Ingest a DLIO output folder, or run DLIO, into a trace bundle."""
    from iowatt.calibration import dlio

    if (ingest is None) == (config is None):
        raise UserError("give exactly one of --ingest DIR or --config WORKLOAD.yaml")
    out = out or _default_out("dlio-bundle")
    if ingest is None and override and any("=" not in o for o in override):
        raise UserError(f"--override: expected KEY=VALUE, found {next(o for o in override if '=' not in o)!r}")
    manifest = dlio.ingest(ingest, out) if ingest is not None else dlio.run(config, out, override)  # type: ignore[arg-type]
    print(f"bundle {out} (manifest {manifest.id}): {len(manifest.files)} files", file=sys.stderr)
    typer.echo(str(out))


@collect_app.command("passes")
@user_errors
@_as_user_error
def collect_passes(
    target: Annotated[Path, typer.Option("--target", "-t", help="Folder on the filesystem to measure (a test folder is made and removed).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Bundle JSON file to create.")],
    writers: Annotated[int, typer.Option("--writers", help="Writer processes (DLIO's ranks).")] = 8,
    files: Annotated[int, typer.Option("--files", help="Files each writer writes one after another (DLIO: one per layer).")] = 1,
    file_mib: Annotated[int, typer.Option("--file-MiB", help="Size of each file, MiB.")] = 128,
    buffer_mib: Annotated[int, typer.Option("--buffer-MiB", help="Size of each write() call, MiB.")] = 64,
    repeats: Annotated[int, typer.Option("--repeats", "-r", help="Rounds; each runs every mode once, in a shuffled order.")] = 3,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the mode order.")] = 1,
    crc: Annotated[bool, typer.Option("--crc", help="CRC-32 every chunk before writing it, as torch.save does (CPU-bound writers).")] = False,
    modes: Annotated[str, typer.Option("--modes", help="Comma-separated subset of the modes (default: all five).")] = ",".join(
        ("fresh", "overwrite", "overwrite_cached", "filled", "delete_create")),
    keep_caches: Annotated[bool, typer.Option("--keep-caches", help="Do not drop the page cache before each save.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Time checkpoint-like saves into a fresh folder, over the previous pass's files (O_TRUNC), beside them, and after
    deleting them (calibration/pass_test.py)."""
    from iowatt.calibration import pass_test

    chosen = pass_test.parse_modes(modes)
    pass_test.check(target, out, writers, file_mib, buffer_mib, repeats, files)
    say = None if quiet else (lambda text: print(text, file=sys.stderr))
    shape = pass_test.SaveShape(writers, file_mib * 2**20, buffer_mib * 2**20, files, crc)
    bundle = pass_test.run(target, shape, repeats, seed, drop=not keep_caches, modes=chosen, progress=say)
    pass_test.write_bundle(out, bundle)
    typer.echo(str(out))


@user_errors
@_as_user_error
def calibrate(
    bundle_path: Annotated[Path, typer.Argument(metavar="BUNDLE", help="Trace bundle from `iowatt collect fio`.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Profile YAML to write.")],
    base: Annotated[str | None, typer.Option("--base", "-b", help="ssd: catalog SSD whose values the bundle does not inform are kept.")] = None,
    kind: Annotated[str, typer.Option("--kind", help="ssd: a drive profile; cluster: a cluster's software from its clients' fio runs.")] = "ssd",
    scenario: Annotated[Path | None, typer.Option("--scenario", help="cluster: a scenario whose system.storage is the measured cluster.")] = None,
    clients: Annotated[int, typer.Option("--clients", help="cluster: clients that ran BUNDLE's jobs at once (it holds one's results).")] = 1,
    more: Annotated[
        list[str] | None, typer.Option("--more", metavar="BUNDLE[=CLIENTS]", help="ssd: a further bundle of the same drive (e.g. the jobs "
                                       "`iowatt advise` named), fitted with BUNDLE's training jobs; cluster: a further BUNDLE=CLIENTS "
                                       "measured with another client count.")
    ] = None,
    holdout: Annotated[float, typer.Option("--holdout", help="Fraction of jobs held back for `iowatt validate` (drawn per rw kind).")] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the holdout draw.")] = 0,
    name: Annotated[str | None, typer.Option("--name", help="Profile name (default: from the output file name).")] = None,
) -> None:
    """Fit device parameters (or a cluster's software) to a bundle (least squares) and write a calibrated profile."""
    if kind == "cluster":
        _calibrate_cluster(bundle_path, output, scenario, [(str(bundle_path), clients), *_bundle_clients(more or [])], name, holdout, seed)
        return
    if kind != "ssd":
        raise UserError(f"--kind: expected ssd or cluster, found {kind!r}")
    fit_ssd(bundle_path, output, base, more, holdout, seed, name)


def _bundle_clients(pairs: list[str]) -> list[tuple[str, int]]:
    out = []
    for pair in pairs:
        path, sep, count = pair.rpartition("=")
        if not sep or not count.isdigit():
            raise UserError(f"--more: expected BUNDLE=CLIENTS, found {pair!r}")
        out.append((path, int(count)))
    return out


def _calibrate_cluster(bundle_path: Path, output: Path, scenario: Path | None, bundles: list[tuple[str, int]], name: str | None,
                       holdout: float, seed: int) -> None:
    import yaml

    from iowatt.calibration import cluster_fit, profile
    from iowatt.output import write_text
    from iowatt.scenarios.loader import load

    if scenario is None:
        raise UserError("--scenario: --kind cluster needs the scenario of the measured cluster (system.storage kind: cluster), found none")
    document, lines = cluster_fit.calibrate(bundles, load(scenario).system, str(scenario), name or profile.profile_name(output), holdout, seed)
    write_text(yaml.safe_dump(document, sort_keys=False), output)
    print(f"cluster profile {output}: " + "\n".join(lines), file=sys.stderr)


@user_errors
def validate(
    table: Annotated[Path | None, typer.Argument(metavar="[TABLE]", help="A validation table of published measurements (docs/validation-format.md).")] = None,
    bundle_path: Annotated[Path | None, typer.Option("--bundle", help="Trace bundle whose held-back jobs to predict.")] = None,
    profile_path: Annotated[Path | None, typer.Option("--profile", help="Profile YAML from `iowatt calibrate`.")] = None,
    all_jobs: Annotated[bool, typer.Option("--all", help="Predict every job of the bundle, not only the held-back ones.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="table or json, or markdown for a TABLE (default: table on a terminal).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a prediction misses (tables only).")] = False,
    cross: Annotated[bool, typer.Option("--cross-validate", help="Also refit the calibrated values leaving one study out at a time (tables only).")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Scenario runs in parallel processes (tables only); results keep the table's order.")] = 1,
    uncertainty: UncertaintyOption = False,
    samples: SamplesOption = 8,
    level: LevelOption = 0.9,
    method: MethodOption = "oat",
) -> None:
    """Predict measurements and print predicted vs measured with the error (--uncertainty: each row's interval, scored)."""
    from iowatt.output import choose_format, write_text

    if bundle_path is not None and table is not None:
        raise UserError(f"TABLE {table} and --bundle {bundle_path}: expected one of them (a validation table, or a bundle with --profile), found both")
    if bundle_path is None:
        if table is None:
            raise UserError("give --bundle BUNDLE --profile PROFILE.yaml, or a TABLE")
        from iowatt.commands.validation_table import validate_table

        validate_table(table, fmt, strict, cross, jobs, settings(samples, level, method) if uncertainty else None)
        return
    if uncertainty:
        raise UserError("--uncertainty: works on a TABLE of published measurements, not on --bundle")
    if cross:
        raise UserError("--cross-validate: works on a TABLE of published measurements, not on --bundle")
    from iowatt.calibration.realcheck_bundle import is_realcheck

    if not bundle_path.is_dir():  # say so before asking for --profile: a profile would not help
        found = "a file" if bundle_path.exists() else "no such folder"
        raise UserError(f"--bundle {bundle_path}: expected a trace bundle folder (from `iowatt collect` or `iowatt check-machine`), found {found}")
    if is_realcheck(bundle_path):  # a bundle of `iowatt check-machine`: it holds its own profile
        if profile_path is not None:
            raise UserError(f"--profile {profile_path}: expected none with --bundle {bundle_path}, a bundle from `iowatt check-machine`, "
                            "which is re-scored with the profile it holds (profile.yaml); found one")
        from iowatt.commands.realcheck import rescore

        try:
            rescore(bundle_path, fmt)
        except _errors() as error:
            raise UserError(str(error)) from None
        return
    if profile_path is None:
        raise UserError("--bundle needs --profile PROFILE.yaml (from `iowatt calibrate`)")
    chosen = choose_format(fmt, None, ("table", "json"))
    try:
        from iowatt.calibration.check import validate as run_check

        report = run_check(bundle_path, profile_path, all_jobs)
    except _errors() as error:
        raise UserError(str(error)) from None
    if chosen == "json":
        write_text(json.dumps(report, indent=2) + "\n", None)
        return
    from iowatt.output.tables import Table, render

    columns = ("job", "measured_MBps", "predicted_MBps", "error_pct", "spread_pct", "verdict", "simulator_MBps",
               "measured_p50_us", "predicted_p50_us", "measured_p99_us", "predicted_p99_us")
    rows = [["" if row[c] is None else (f"{row[c]:+.1f}" if c == "error_pct" else str(row[c])) for c in columns] for row in report["jobs"]]
    s = report["summary"]
    summary = (f"{s['jobs']} jobs: median |error| {s['median_abs_error_pct']:.1f} %, max |error| {s['max_abs_error_pct']:.1f} %, "
               f"{s['within_noise']} within run-to-run noise (2 sigma); median |error| of p50 {s['median_abs_p50_error_pct']} %, "
               f"of p99 {s['median_abs_p99_error_pct']} % (per-request mode); writes {'queue' if report['writes_queue'] else 'buffered'} "
               "(simulator_MBps: what `iowatt run` predicts with the profile as a device)")
    table = Table(columns, rows, title=f"{report['selection']} of {report['bundle']} predicted with {report['profile']}",
                  right=frozenset(c for c in columns if c not in ("job", "verdict")))
    write_text(render([table, summary], width=180), None)


def register(app: typer.Typer) -> None:
    app.add_typer(collect_app, name="collect")
    app.command("calibrate")(calibrate)
    app.command("validate")(validate)
