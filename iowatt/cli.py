"""The `iowatt` command.  Heavy modules are imported inside commands so `--help` stays instant."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from iowatt.errors import user_errors

app = typer.Typer(
    name="iowatt",
    help="Simulate storage and energy in AI servers: checkpoints, data loaders, GNN loaders, fio, "
    "on GPUs, PCIe, SSDs, HDDs, arrays and clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
catalog_app = typer.Typer(help="Devices the simulator knows, with the provenance of every number.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")

SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a field: PATH=VALUE, e.g. storage.power_state=PS1 (repeatable)."),
]
FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="table, json or csv (default: by --output extension, else table on a terminal and json otherwise).")
]
OutputOption = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")]


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


@app.command()
@user_errors
def run(
    scenario: Annotated[
        str | None, typer.Argument(help="Scenario YAML file, or a name in scenarios/library (optional with --fio).")
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
    fmt: FormatOption = None,
    output: OutputOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the resolved scenario and stop.")] = False,
    timing: Annotated[bool, typer.Option("--timing", help="Print engine wall time and event counts to stderr.")] = False,
    mode: Annotated[
        str, typer.Option("--mode", help="fluid (flows, the default) or per-request (one event per request: fio's latency "
                          "percentiles and histogram; fio, gds_read and the GNN feature aggregation)."),
    ] = "fluid",
) -> None:
    """Run one scenario and print its metrics and energy."""
    from iowatt.output import choose_format, write_text
    from iowatt.scenarios.loader import load

    if fio is not None:
        loaded = _load_with_fio(scenario, fio, set_ or [])
    elif scenario is None:
        raise typer.BadParameter("give a SCENARIO file, or --fio JOBFILE with --set storage.device=NAME", param_hint="SCENARIO")
    else:
        loaded = load(scenario, set_ or [])
    if dry_run:
        import yaml

        write_text(yaml.safe_dump(loaded.model_dump(mode="json"), sort_keys=False), output)
        return
    chosen = choose_format(fmt, output, ("table", "json", "csv"))
    if mode not in ("fluid", "per-request"):
        raise typer.BadParameter(f"expected fluid or per-request, found {mode!r}", param_hint="--mode")
    from iowatt.scenarios.run import run_scenario
    from iowatt.simulator import report

    document, sim = run_scenario(loaded, mode=mode)  # type: ignore[arg-type]
    if timing and mode == "per-request":
        print(f"per-request: {sim.wall_seconds * 1e3:.2f} ms wall, {sim.engine['requests']} requests, {sim.engine['events']} events",
              file=sys.stderr)
    elif timing:
        print(
            f"engine: {sim.wall_seconds * 1e3:.2f} ms wall, {sim.engine['events']} events, "
            f"{sim.engine['recomputes']} recomputes, {sim.engine['flows']} flows",
            file=sys.stderr,
        )
    if chosen == "json":
        text = report.to_json(document)
    elif chosen == "csv":
        text = report.to_csv([report.metrics_row(document)])
    else:
        text = report.render_table(document)
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


@catalog_app.command("list")
@user_errors
def catalog_list(
    kind: Annotated[str | None, typer.Option("--kind", "-k", help="Only this family: ssd, hdd, gpu, cpu, ...")] = None,
    fmt: FormatOption = None,
) -> None:
    """List catalog entries with counts of datasheet / measured / calibrated / assumed values."""
    from iowatt.models import catalog
    from iowatt.simulator import report

    entries = catalog.entries(kind)
    if kind is not None and not entries:
        known = sorted({e.kind for e in catalog.entries()})
        raise catalog.CatalogError(f"--kind: expected one of {', '.join(known)}, found {kind!r}")
    rows = [
        {"kind": e.kind, "name": e.name, "model": getattr(e.spec, "model", ""), **e.provenance_counts()} for e in entries
    ]
    from iowatt.output import choose_format, write_text

    chosen = choose_format(fmt, None, ("table", "json", "csv"))
    if chosen == "json":
        import json

        write_text(json.dumps(rows, indent=2) + "\n", None)
    elif chosen == "csv":
        write_text(report.to_csv(rows), None)
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="iowatt catalog (value counts by provenance)")
        for column in ("kind", "name", "model", "datasheet", "measured", "calibrated", "assumed"):
            table.add_column(column, justify="right" if column in ("datasheet", "measured", "calibrated", "assumed") else "left")
        for row in rows:
            table.add_row(*(str(row[c]) for c in ("kind", "name", "model", "datasheet", "measured", "calibrated", "assumed")))
        Console(width=120).print(table)


@catalog_app.command("show")
@user_errors
def catalog_show(
    name: Annotated[str, typer.Argument(help="Catalog name or alias, e.g. micron-6550-ion.")],
    fmt: FormatOption = None,
) -> None:
    """Show one entry: every value with where it comes from."""
    import json

    from iowatt.models import catalog
    from iowatt.output import choose_format, write_text

    entry = catalog.find(name)
    values = entry.spec.model_dump(mode="json")
    chosen = choose_format(fmt, None, ("table", "json"))
    if chosen == "json":
        document = {
            "kind": entry.kind,
            "name": entry.name,
            "aliases": list(entry.aliases),
            "values": values,
            "provenance": {k: v.model_dump() for k, v in entry.provenance.items()},
        }
        write_text(json.dumps(document, indent=2) + "\n", None)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{entry.kind} {entry.name} ({', '.join(entry.aliases) or 'no aliases'})")
    for column in ("field", "value", "provenance", "source / reasoning"):
        table.add_column(column, overflow="fold")
    for field, value in values.items():
        prov = entry.provenance.get(field)
        table.add_row(
            field,
            json.dumps(value) if not isinstance(value, str) else value,
            prov.p if prov else "",
            "; ".join(x for x in (prov.src, prov.note) if x) if prov else "",
        )
    Console(width=140).print(table)


def _register_extensions() -> None:
    """Commands that live in their own modules (one module per command family)."""
    import importlib
    import pkgutil

    import iowatt.commands as commands

    for info in pkgutil.iter_modules(commands.__path__):
        module = importlib.import_module(f"iowatt.commands.{info.name}")
        module.register(app)


_register_extensions()


if __name__ == "__main__":  # pragma: no cover
    app()
