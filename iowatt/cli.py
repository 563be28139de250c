"""The `iowatt` command.  Heavy modules are imported inside commands so `--help` stays instant."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from iowatt.app import App, OutputOption
from iowatt.errors import UserError, user_errors
from iowatt.uncertainty_options import LevelOption, MethodOption, SamplesOption, UncertaintyOption

if TYPE_CHECKING:
    from iowatt.scenarios.schema import ScenarioBase

app = App(
    name="iowatt",
    help="Simulate storage and energy in AI servers: checkpoints, data loaders, GNN loaders, fio, "
    "on GPUs, PCIe, SSDs, HDDs, arrays and clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", metavar="PATH=VALUE", help="Override a field: PATH=VALUE, e.g. storage.power_state=PS1 (repeatable)."),
]
FormatOption = Annotated[
    str | None,
    typer.Option("--format", "-f", help="table, json, csv, dlio (DLIO's summary.json and per_epoch_stats.json, with -o DIR), fio (fio's "
                 "JSON) or fio-terse (fio's terse v3 line) for a fio workload (default: by --output extension, else table on a "
                 "terminal and json otherwise)."),
]


def _version(value: bool) -> None:
    if value:
        from iowatt.simulator.provenance import version

        typer.echo(f"iowatt {version()}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """iowatt command line."""
    import os

    folder = os.environ.get("IOWATT_CATALOG_DIR")  # models.catalog.USER_CATALOG_ENV (not imported: start-up stays fast)
    if folder and not Path(folder).expanduser().is_dir():
        from iowatt.errors import fail

        fail(f"IOWATT_CATALOG_DIR={folder}: expected a folder of catalog YAML files (device profiles), found no such folder")


@app.command()
@user_errors
def run(
    scenario: Annotated[
        str | None, typer.Argument(help="Scenario YAML file, or a name in scenarios/library (optional with --fio and --dlio).")
    ] = None,
    set_: SetOption = None,
    fio: Annotated[
        Path | None,
        typer.Option(
            "--fio",
            help="Run a real fio job file (\\[global] + one job section, fio option names) as the workload. The storage comes from "
            "SCENARIO when one is given (its workload is replaced), else from --set storage.device=NAME "
            "(plus any other --set, e.g. storage.power_state=PS1). Unsupported fio options exit 2 naming the option.",
        ),
    ] = None,
    dlio: Annotated[
        Path | None,
        typer.Option("--dlio", help="Run a DLIO workload YAML (model, framework, workflow, dataset, reader, train, checkpoint, metric) "
                     "on the system of SCENARIO or --set; keys iowatt does not model exit 2 naming them."),
    ] = None,
    dlio_lenient: Annotated[bool, typer.Option("--dlio-lenient", help="With --dlio: warn about keys iowatt does not model instead.")] = False,
    fmt: FormatOption = None,
    output: OutputOption = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the resolved scenario and the values it implies (model size, parallelism, ranks, dataset, "
                     "usable capacity), then stop; YAML, or JSON with -f json or a .json --output."),
    ] = False,
    timing: Annotated[bool, typer.Option("--timing", help="Print engine wall time and event counts to stderr.")] = False,
    mode: Annotated[
        str, typer.Option("--mode", help="fluid (flows, the default) or per-request (one event per request: fio's latency "
                          "percentiles and histogram; fio, gds_read and the GNN feature aggregation)."),
    ] = "fluid",
    uncertainty: UncertaintyOption = False,
    samples: SamplesOption = 32,
    level: LevelOption = 0.9,
    method: MethodOption = "sobol",
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="With --uncertainty: worker processes (default: all cores; 0: this process).")] = None,
) -> None:
    """Run one scenario and print its metrics and energy (--format dlio -o DIR: DLIO's summary.json and per_epoch_stats.json)."""
    from iowatt.output import choose_format, write_text
    from iowatt.scenarios.loader import load

    if fio is not None and dlio is not None:
        raise UserError(f"--fio {fio} and --dlio {dlio}: expected one workload file, found both (run them one at a time)")
    if fio is not None:
        loaded = _load_with_fio(scenario, fio, set_ or [])
    elif dlio is not None:
        from iowatt.scenarios.dliojob import load_with_dlio

        loaded, warnings = load_with_dlio(scenario, dlio, set_ or [], dlio_lenient)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    elif scenario is None:
        raise typer.BadParameter("give a SCENARIO file, or --fio JOBFILE with --set storage.device=NAME", param_hint="SCENARIO")
    else:
        loaded = load(scenario, set_ or [])
    from iowatt.scenarios.derived import notes

    for note in notes(loaded):
        print(f"note: {note}", file=sys.stderr)
    if uncertainty:
        from iowatt.uncertainty_options import settings

        chosen_settings = settings(samples, level, method)
        if mode != "fluid":
            raise UserError("--uncertainty: samples the fluid model only; leave out --mode per-request")
    elif loaded.user_ranges:
        given = ", ".join(f"{r.path}={r.text}" for r in loaded.user_ranges)
        print(f"note: {given}: given as a range; this run uses each range's median (add --uncertainty for an interval)",
              file=sys.stderr)
    if dry_run:
        _dry_run(loaded, fmt, output)
        return
    chosen = choose_format(fmt, output if fmt != "dlio" else None, ("table", "json", "csv", "dlio", "fio", "fio-terse"))
    if chosen == "dlio" and output is None:
        raise UserError("--format dlio writes summary.json and per_epoch_stats.json: give -o DIR")
    if mode not in ("fluid", "per-request"):
        raise typer.BadParameter(f"expected fluid or per-request, found {mode!r}", param_hint="--mode")
    from iowatt.models.uncertainty import recording_reads
    from iowatt.output import serialize, tables
    from iowatt.scenarios.run import run_scenario

    with recording_reads() as reads:
        document, sim = run_scenario(loaded, mode=mode)  # type: ignore[arg-type]
    if uncertainty:
        from iowatt.scenarios.executors import open_executor
        from iowatt.scenarios.uncertainty import propagate, summarise

        with open_executor(jobs) as executor:
            propagation = propagate([loaded], chosen_settings, executor, baseline=[document], reads=[reads])
        document["uncertainty"] = summarise(propagation).as_dict()
        for failure in propagation.failures[:5]:
            print(f"warning: a sample failed: {failure}", file=sys.stderr)
    if timing and mode == "per-request":
        print(f"per-request: {sim.wall_seconds * 1e3:.2f} ms wall, {sim.engine['requests']} requests, {sim.engine['events']} events",
              file=sys.stderr)
    elif timing:
        print(
            f"engine: {sim.wall_seconds * 1e3:.2f} ms wall, {sim.engine['events']} events, "
            f"{sim.engine['recomputes']} recomputes, {sim.engine['flows']} flows",
            file=sys.stderr,
        )
    if chosen == "dlio" and output is not None:
        from iowatt.commands.dlio_output import write

        write(document, output)
        return
    if chosen in ("fio", "fio-terse"):
        from iowatt.commands.fio_output import fio_document, terse_line

        fio_json = fio_document(document)
        text = serialize.to_json(fio_json) if chosen == "fio" else terse_line(fio_json, int(loaded.workload.iodepth)) + "\n"  # type: ignore[union-attr]
    elif chosen == "json":
        text = serialize.to_json(document)
    elif chosen == "csv":
        text = serialize.to_csv([{"name": document.get("name", ""), **document["metrics"], **_interval_columns(document)}])
    else:
        from iowatt.output.result_view import result_tables

        text = tables.render(result_tables(document))
    write_text(text, output)
    if uncertainty and propagation.too_many_failed:
        print(f"error: {propagation.failed} of {propagation.runs} sampled runs failed "
              f"(more than {chosen_settings.max_failed_share:.0%}); the interval is not trustworthy", file=sys.stderr)
        raise typer.Exit(1)


def _interval_columns(document: dict[str, object]) -> dict[str, float]:
    """METRIC_low / METRIC_high columns for a CSV row, where the run sampled its uncertainty."""
    block = document.get("uncertainty")
    metrics = block.get("metrics") if isinstance(block, dict) else None
    if not isinstance(metrics, dict):
        return {}
    return {f"{name}_{end}": value[end] for name, value in metrics.items() for end in ("low", "high")}


def _dry_run(loaded: ScenarioBase, fmt: str | None, output: Path | None) -> None:
    """The resolved scenario and the values it implies: YAML (a scenario file again, the derived values as comments) or JSON."""
    import yaml

    from iowatt.output import choose_format, serialize, write_text
    from iowatt.scenarios.derived import derived

    chosen = choose_format(fmt if fmt is not None or (output is not None and str(output) != "-") else "yaml", output, ("yaml", "json"))
    resolved, implied = loaded.model_dump(mode="json"), derived(loaded)
    if chosen == "json":
        write_text(serialize.to_json({"scenario": resolved, "derived": implied}), output)
        return
    comments = yaml.safe_dump({"derived": implied}, sort_keys=False).splitlines()
    text = yaml.safe_dump(resolved, sort_keys=False) + "# values the scenario implies (not part of it):\n" + "".join(f"# {line}\n" for line in comments)
    write_text(text, output)


def _load_with_fio(scenario: str | None, jobfile: Path, overrides: list[str]):  # returns the validated scenario
    """The scenario (or a bare system) with its workload replaced by the fio job file."""
    from iowatt.scenarios.fiojob import parse_job_file
    from iowatt.scenarios.loader import ScenarioError, load, read_yaml, resolve_path

    workload = parse_job_file(jobfile)
    if scenario is not None:
        data = read_yaml(resolve_path(scenario))
    else:
        if not any(o.split("=", 1)[0].strip() in ("storage.device", "system.storage.device") for o in overrides):
            raise ScenarioError(
                f"--fio {jobfile}: the job needs a storage device: give a scenario file, or --set storage.device=NAME "
                "(see `iowatt catalog list`)"
            )
        data = {"name": f"fio_{workload.get('name', 'job')}", "system": {"storage": {}}}
    data["workload"] = workload
    return load(data, overrides)


@app.command()
@user_errors
def schema(output: OutputOption = None) -> None:
    """Print the JSON Schema of scenario files."""
    import json

    from iowatt.output import write_text
    from iowatt.scenarios.schema import json_schema

    write_text(json.dumps(json_schema(), indent=2) + "\n", output)


def _register_extensions() -> None:
    """Commands that live in their own modules (one module per command family)."""
    import importlib
    import pkgutil

    import iowatt.commands as commands

    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue  # helpers of the command modules
        module = importlib.import_module(f"iowatt.commands.{info.name}")
        register = vars(module).get("register")  # helper modules (validation_view, dlio_output) register nothing
        if register is not None:
            register(app)


def _needs_extensions(argv: list[str]) -> bool:
    """False when the console script runs a command this module defines (`iowatt run ...`, `iowatt schema`): click
    dispatches to that command alone, so importing and building the other families would only slow its start-up
    (about 0.04 s of a 0.5 s budget, issue 33).  Everything else (help, other commands, imports of `app` by tests and
    tools) registers them all."""
    return not (len(argv) > 1 and Path(argv[0]).name == "iowatt" and argv[1] in ("run", "schema"))


if _needs_extensions(sys.argv):
    _register_extensions()


if __name__ == "__main__":  # pragma: no cover
    app()
