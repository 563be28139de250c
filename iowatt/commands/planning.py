"""`iowatt sweep`, `iowatt compare`, `iowatt plan`: many scenarios at once (docs/planning.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from iowatt.app import OutputOption
from iowatt.errors import UserError, user_errors
from iowatt.uncertainty_options import LevelOption, MethodOption, SamplesOption, UncertaintyOption, settings

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from iowatt.output.rows import RowFile
    from iowatt.scenarios.sweep import Case, Sweep, SweepResult

SetOption = Annotated[list[str] | None, typer.Option("--set", "-s", metavar="PATH=VALUE", help="Fixed override PATH=VALUE for every case (repeatable).")]
FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="table, json or csv (default: by --output extension, else table on a terminal, json otherwise).")
]
NodesOption = Annotated[int | None, typer.Option("--nodes", help="Failure model: nodes in the job (enables goodput metrics).")]
MtbfOption = Annotated[float | None, typer.Option("--node-mtbf-hours", help="Failure model: mean time between failures of one node, hours.")]
RestartOption = Annotated[float, typer.Option("--restart-seconds", help="Failure model: time to restart the job after a failure.")]
IntervalOption = Annotated[
    str | None,
    typer.Option("--interval", help="Checkpoint interval for derived metrics: seconds, '10 min', daly, young or simulated (these three need --nodes)."),
]


def register(app: typer.Typer) -> None:
    app.command()(sweep)
    app.command()(compare)
    app.command()(plan)


@user_errors
def sweep(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML (or library name), or a sweep YAML with scenario/grid/random.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Results file: .csv or .parquet; rows are added as they finish.")],
    grid: Annotated[
        list[str] | None,
        typer.Option("--grid", "-g", metavar="KEY=V1,V2,...", help="Axis KEY=V1,V2,... (same paths as --set); full factorial (repeatable)."),
    ] = None,
    random_: Annotated[int | None, typer.Option("--random", help="Draw N random cases instead of the full factorial.")] = None,
    range_: Annotated[
        list[str] | None,
        typer.Option("--range", metavar="KEY=LO:HI", help="Random axis KEY=LO:HI, uniform (integers when both ends are) (repeatable)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --random draws.")] = 0,
    set_: SetOption = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes (default: CPU count; 0 = run in this process).")] = None,
    address: Annotated[str | None, typer.Option("--address", help="Dask scheduler, e.g. tcp://host:8786.")] = None,
    scheduler_file: Annotated[str | None, typer.Option("--scheduler-file", help="Dask scheduler file (dask-jobqueue, dask-mpi).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Keep the rows already in --output and skip their scenario hashes.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="csv or parquet (default: by --output extension).")] = None,
    uncertainty: UncertaintyOption = False,
    samples: SamplesOption = 16,
    level: LevelOption = 0.9,
    method: MethodOption = "sobol",
) -> None:
    """Run a grid or random sample of variants of one scenario; one row per case, in case order (--uncertainty: each
    row gains METRIC_low and METRIC_high, the central interval of every metric).

    Exit status 1 when some cases failed (they are listed, and their `error` column says why), 2 when the input is invalid
    (every case is an invalid scenario, an axis is given twice, a bad option). Progress goes to stderr: a bar on a terminal, else
    a line at most every 5 s."""
    from iowatt.scenarios import sweep as sw
    from iowatt.scenarios.executors import open_executor

    chosen = fmt or {".csv": "csv", ".parquet": "parquet"}.get(output.suffix.lower())
    if chosen not in ("csv", "parquet"):
        raise UserError(f"--output {output}: sweeps write .csv or .parquet (or give --format csv|parquet)")
    base, origin = sw.load_base(scenario)
    if sw.is_sweep_file(base):
        spec = sw.sweep_from_file(sw.resolve_path(scenario), base)
    else:
        spec = sw.Sweep(base=base, origin=origin)
    spec.overrides += list(set_ or [])
    for text in grid or []:
        spec.grid.append(sw.parse_axis(text, "--grid", spec.base))
    for text in range_ or []:
        spec.ranges.append(sw.parse_range(text, "--range", spec.base))
    if random_ is not None:
        spec.samples, spec.seed = random_, seed
    if uncertainty:
        spec.uncertainty = settings(samples, level, method)
    cases = sw.expand(spec)
    with open_executor(jobs, address, scheduler_file) as executor:
        result = sweep_to_file(spec, executor, output, chosen, resume=resume, cases=cases)
    _sweep_verdict(result, output)


SWEEP_TEXT_COLUMNS = ("scenario_hash", "sweep_id", "error")


def sweep_to_file(spec: Sweep, executor: Executor, output: Path, fmt: str, *, resume: bool = False, cases: list[Case] | None = None,
                  chunk_size: int | None = None, progress: bool | None = None) -> SweepResult:
    """Run the sweep, streaming its rows to `output` in case order; with `resume`, keep this sweep's finished rows and skip them."""
    from iowatt.output.progress import ProgressBar
    from iowatt.output.rows import RowFile
    from iowatt.scenarios import sweep as sw

    cases = sw.expand(spec) if cases is None else cases
    sink = RowFile(output, fmt, text_columns=SWEEP_TEXT_COLUMNS)
    keep = sw.resumable(sink.existing(), spec, str(output)) if resume else []
    rows = _DeferredRows(sink, keep, ["case", *spec.keys, *SWEEP_TEXT_COLUMNS])
    result: SweepResult | None = None
    try:
        with ProgressBar("sweep", len(cases) - len(keep), enabled=progress) as bar:
            result = sw.run_sweep(spec, executor, done_hashes={str(r["scenario_hash"]) for r in keep}, on_row=rows.add,
                                  on_case=bar.advance, cases=cases, chunk_size=chunk_size)
    finally:
        rows.close(write=result is None or not result.all_invalid)
    if keep and result.done:
        sink.rewrite(sorted(sink.rows, key=lambda r: int(str(r["case"]))))  # kept and new rows in one case order
    return result


class _DeferredRows:
    """Rows reach the file from the first successful row on, so a sweep whose every case is invalid leaves --output untouched."""

    def __init__(self, sink: RowFile, keep: list[dict[str, object]], columns: list[str]) -> None:
        self.sink, self.keep, self.columns = sink, keep, columns
        self.pending: list[dict[str, object]] = []
        self.started = False
        if keep:
            self._start()

    def _start(self) -> None:
        self.sink.start(self.keep, self.columns)
        self.started = True
        for row in self.pending:
            self.sink.add(row)

    def add(self, row: dict[str, object]) -> None:
        if self.started:
            self.sink.add(row)
            return
        self.pending.append(row)
        if not row["error"]:
            self._start()

    def close(self, write: bool) -> None:
        """Write what is pending (unless `write` is false: every case was invalid and the file was never touched) and close."""
        if not self.started and write:
            self._start()
        if self.started:
            self.sink.close()


def _sweep_verdict(result: SweepResult, output: Path) -> None:
    """The summary on stderr, and the exit status: 2 when every case was invalid input, 1 when any case failed or was lost."""
    failures = result.failures()
    if result.all_invalid:
        raise UserError(f"every case of the sweep is an invalid scenario ({output} not written), e.g. {failures[0]}")
    rate = result.done / result.seconds if result.seconds > 0 else 0.0
    repeated = f", {result.repeated} repeating an earlier case (run once)" if result.repeated else ""
    print(
        f"sweep: {result.done} run ({result.failed} failed), {result.skipped} already in {output}{repeated}, "
        f"{len(result.lost)} lost; {result.seconds:.2f} s, {rate:.1f} scenarios/s",
        file=sys.stderr,
    )
    for line in failures[:10]:
        print(f"failed: {line}", file=sys.stderr)
    if len(failures) > 10:
        print(f"failed: ... and {len(failures) - 10} more (see the `error` column of {output})", file=sys.stderr)
    if result.lost:
        print(f"error: {len(result.lost)} case(s) lost with their worker ({result.lost[0]}); rerun with --resume", file=sys.stderr)
    if failures:
        print(f"error: {len(failures)} of {result.done} case(s) failed; their rows are in {output} with the reason", file=sys.stderr)
    if failures or result.lost:
        raise typer.Exit(1)


def _failure(nodes: int | None, mtbf: float | None, restart: float) -> Any:
    if (nodes is None) != (mtbf is None):
        raise UserError("--nodes and --node-mtbf-hours: give both to enable the failure model")
    if nodes is None:
        return None
    from iowatt.models.goodput import FailureModel

    try:
        return FailureModel(nodes=nodes, node_mtbf_hours=mtbf, restart_seconds=restart)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserError(str(error).replace("failure.nodes", "--nodes").replace("failure.node_mtbf_hours", "--node-mtbf-hours")) from None


@user_errors
def compare(
    scenario: Annotated[str, typer.Argument(help="Scenario YAML file, or a name in scenarios/library.")],
    vary: Annotated[
        list[str],
        typer.Option("--vary", "-v", metavar="KEY=V1,V2,...", help="KEY=V1,V2,... (repeatable); every combination of the lists, or paired with --zip. "
                     "A whole section may be a YAML file or an inline mapping: storage=local.yaml,raid5.yaml or storage={kind: raid, level: 5, ...}."),
    ],
    zip_: Annotated[bool, typer.Option("--zip", help="Pair the --vary lists by position (equal lengths) instead of every combination.")] = False,
    cross: Annotated[bool, typer.Option("--cross", help="Every combination of the --vary lists (the default; kept for old scripts).")] = False,
    set_: SetOption = None,
    nodes: NodesOption = None,
    node_mtbf_hours: MtbfOption = None,
    restart_seconds: RestartOption = 0.0,
    interval: IntervalOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    uncertainty: UncertaintyOption = False,
    samples: SamplesOption = 16,
    level: LevelOption = 0.9,
    method: MethodOption = "sobol",
) -> None:
    """Run the scenario once per case and show metrics side by side, with each one's ratio to the first
    (--uncertainty: each value as `value \\[low, high]`; JSON and CSV gain METRIC_low / METRIC_high).

    The cases are every combination of the --vary lists (2 x 2 values: 4 cases), or, with --zip, the lists paired by position."""
    import itertools
    import json

    from iowatt.models.uncertainty import recording_reads
    from iowatt.output import choose_format, write_text
    from iowatt.output.progress import ProgressBar
    from iowatt.output.serialize import to_csv
    from iowatt.scenarios import plan as pl
    from iowatt.scenarios import sweep as sw
    from iowatt.scenarios.loader import validate
    from iowatt.scenarios.run import run_scenario

    chosen = choose_format(fmt, output, ("table", "json", "csv"))
    failure = _failure(nodes, node_mtbf_hours, restart_seconds)
    tau = pl._interval(interval, "--interval") if interval is not None else None
    if isinstance(tau, str) and failure is None:
        raise UserError(f"--interval {interval}: daly/young/simulated need --nodes and --node-mtbf-hours")
    base, origin = sw.load_base(scenario)
    axes = [sw.parse_axis(text, "--vary", base) for text in vary]
    if zip_ and cross:
        raise UserError("--zip and --cross: expected one of them (pair the --vary lists, or every combination), found both")
    if zip_:
        lengths = {len(values) for _, values in axes}
        if len(lengths) > 1:
            shown = ", ".join(f"{k} has {len(v)}" for k, v in axes)
            raise UserError(f"--zip: lists of different lengths cannot be paired ({shown}); leave out --zip for every combination")
        combos = list(zip(*(values for _, values in axes), strict=True))
    else:
        combos = list(itertools.product(*(values for _, values in axes)))
    formed = _cases_line(axes, len(combos), zip_)
    if sys.stderr.isatty():  # a person watching; the output itself says it too (JSON `formed`, the table's title)
        print(f"compare: {formed}", file=sys.stderr)
    spec = sw.Sweep(base=base, origin=origin, grid=axes, overrides=list(set_ or []))
    sw.check_axes(spec, "--vary")
    sampling = settings(samples, level, method) if uncertainty else None
    cases = []
    with ProgressBar("compare", len(combos)) as bar:
        for index, combo in enumerate(combos):
            case = sw.Case(index, {k: v for (k, _), v in zip(axes, combo, strict=True)})
            resolved, _, error = sw.resolve_case(spec, case)
            if resolved is None:
                raise UserError(error)
            loaded = validate(resolved, origin)
            with recording_reads() as reads:
                document, _ = run_scenario(loaded)
            metrics = dict(document["metrics"])
            metrics.update({k: v for k, v in sw.drive_write_metrics(document).items() if k not in metrics})
            if sampling is not None:
                from iowatt.scenarios.executors import open_executor
                from iowatt.scenarios.uncertainty import interval_columns

                with open_executor(None) as executor:
                    metrics.update(interval_columns(loaded, sampling, document, reads, executor))
            metrics.update({k: v for k, v in pl.derived_metrics(metrics, resolved, failure=failure, interval=tau).items() if v is not None})
            label = ", ".join(f"{k}={v}" for k, v in case.values.items())
            cases.append({"label": label, "values": {k: sw._typed(v) for k, v in case.values.items()}, "metrics": metrics})
            bar.advance()
    first = cases[0]["metrics"]
    for case in cases:
        case["ratio"] = {k: _ratio(v, first.get(k)) for k, v in case["metrics"].items()}
    if chosen == "json":
        write_text(json.dumps({"scenario": origin, "formed": formed, "cases": cases}, indent=2, default=str) + "\n", output)
    elif chosen == "csv":
        rows = [
            {"metric": name, "case": c["label"], "value": c["metrics"].get(name), "ratio_to_first": c["ratio"].get(name)}
            for name in _metric_names(cases)
            for c in cases
        ]
        write_text(to_csv(rows), output)
    else:
        write_text(_compare_table(cases, formed), output)


def _cases_line(axes: list[tuple[str, list[Any]]], count: int, paired: bool) -> str:
    """How the cases were formed, e.g. '4 cases, every combination of storage.device (2) x storage.power_state (2)'."""
    sizes = [f"{key} ({len(values)})" for key, values in axes]
    if len(axes) == 1:
        how = f"one per value of {sizes[0]}"
    else:
        how = ("paired by position (--zip): " + " with ".join(sizes)) if paired else ("every combination of " + " x ".join(sizes))
    return f"{count} case{'s' if count != 1 else ''}, {how}"


def _ratio(value: Any, first: Any) -> float | None:
    if not isinstance(value, int | float) or not isinstance(first, int | float) or isinstance(value, bool) or first == 0:
        return None
    return value / first


def _metric_names(cases: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for case in cases:
        names.extend(k for k in case["metrics"] if k not in names)
    return names


def _compare_table(cases: list[dict[str, Any]], formed: str) -> str:
    from iowatt.output.intervals import interval_cell
    from iowatt.output.tables import Table, format_number, render

    rows = []
    names = _metric_names(cases)
    ends = {n.removesuffix("_low") for n in names if n.endswith("_low") and n.removesuffix("_low") + "_high" in names}
    for name in names:
        if (name.endswith("_low") and name.removesuffix("_low") in ends) or (name.endswith("_high") and name.removesuffix("_high") in ends) \
                or name.startswith("uncertainty_"):
            continue  # shown inside the metric's own cell
        cells = []
        for i, case in enumerate(cases):
            value = case["metrics"].get(name)
            ratio = case["ratio"].get(name)
            low, high = case["metrics"].get(f"{name}_low"), case["metrics"].get(f"{name}_high")
            text = "" if value is None else interval_cell(value, low, high) if name in ends else format_number(value)
            if i > 0 and ratio is not None:
                text += f" ({ratio:.3g}x)"
            cells.append(text)
        rows.append([name, *cells])
    labels = [case["label"] for case in cases]
    table = Table(["metric", *labels], rows, title=f"compare: {formed} (ratio to the first column)", right=frozenset(labels))
    return render([table], width=60 + 34 * len(cases))


@user_errors
def plan(
    spec_file: Annotated[Path, typer.Argument(help="Plan spec YAML: scenario, choices, constraints, objective, failure.")],
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes (default: CPU count; 0 = in this process).")] = None,
    address: Annotated[str | None, typer.Option("--address", help="Dask scheduler, e.g. tcp://host:8786.")] = None,
    scheduler_file: Annotated[str | None, typer.Option("--scheduler-file", help="Dask scheduler file.")] = None,
    top: Annotated[int, typer.Option("--top", help="Best configurations to show.")] = 5,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the cost-vs-time Pareto plot to this PNG (needs matplotlib).")] = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    uncertainty: UncertaintyOption = False,
    samples: SamplesOption = 16,
    level: LevelOption = 0.9,
    method: MethodOption = "sobol",
) -> None:
    """Search candidate configurations for the best one that meets the constraints (--uncertainty: each configuration
    gains METRIC_low / METRIC_high; constraints and ranking read the point prediction)."""
    import json
    import math

    from iowatt.output import choose_format, write_text
    from iowatt.output.progress import ProgressBar
    from iowatt.scenarios import plan as pl
    from iowatt.scenarios.executors import open_executor

    chosen = choose_format(fmt, output, ("table", "json", "csv"))
    if plot is not None:
        from iowatt.output.files import check_png_target

        check_png_target(plot)
    spec = pl.load_spec(spec_file)
    sampling = settings(samples, level, method) if uncertainty else None
    combinations = math.prod(len(values) for _, values in spec.choices)
    # the exhaustive search's cases are known up front (a monotone search's are not: it shows nothing)
    with open_executor(jobs, address, scheduler_file) as executor, \
            ProgressBar("plan", combinations if combinations <= spec.max_exhaustive else 0) as bar:
        result = pl.search(spec, executor, on_case=bar.advance, uncertainty=sampling)
    ranked = result.ranked()
    cost_axis = "cost_usd" if result.feasible and all(c.get("cost_usd") is not None for c in result.feasible) else "device_count"
    front = result.pareto(cost_axis)
    rejected = result.rejected_families()
    if plot is not None:
        _plot(result, front, cost_axis, plot)
    if chosen == "json":
        document = {
            "plan": spec.name,
            "objective": {"maximise" if spec.maximise else "minimise": spec.objective},
            "constraints": [str(c) for c in spec.constraints],
            "search": result.search,
            "simulations": result.simulations,
            "best": ranked[:top],
            "pareto": {"axes": [cost_axis, "save_checkpoint_duration_mean_seconds"], "points": front},
            "rejected_families": rejected,
            "notes": result.notes,
            "configurations": result.configs,
        }
        write_text(json.dumps(document, indent=2, default=str) + "\n", output)
        return
    if chosen == "csv":  # one row per configuration, as in the JSON's `configurations`; lists joined with '; '
        from iowatt.output.serialize import to_csv

        rows = [{k: "; ".join(map(str, v)) if isinstance(v, list) else v for k, v in c.items()} for c in result.configs]
        write_text(to_csv(rows), output)
        return
    write_text(_plan_text(result, ranked[:top], front, cost_axis, rejected), output)


def _plan_columns(spec: Any) -> list[str]:
    from iowatt.scenarios.plan import INTERVAL_KEY

    columns = [k for k, _ in spec.choices]
    if spec.intervals:
        columns.append(INTERVAL_KEY)
    shown = [spec.objective, "save_checkpoint_duration_mean_seconds", *(c.metric for c in spec.constraints)]
    for extra in ("cost_usd", "device_count", "checkpoint_interval_seconds", "goodput", "endurance_years", "ssd_energy_per_day_Wh"):
        shown.append(extra)
    for name in shown:
        if name not in columns:
            columns.append(name)
    return columns


def _plan_text(result: Any, best: list[dict[str, Any]], front: list[dict[str, Any]], cost_axis: str, rejected: list[dict[str, Any]]) -> str:
    from iowatt.output.intervals import interval_cell
    from iowatt.output.tables import Table, format_number, render

    spec = result.spec
    sense = "maximise" if spec.maximise else "minimise"
    blocks: list[Table | str] = [
        f"plan {spec.name}: {sense} {spec.objective} subject to {'; '.join(map(str, spec.constraints)) or 'no constraints'}",
        f"search: {result.search}; {result.simulations} simulation(s), {len(result.configs)} configuration(s), {len(result.feasible)} feasible",
    ]
    columns = [c for c in _plan_columns(spec) if any(row.get(c) is not None for row in result.configs)]

    def cell(row: dict[str, Any], column: str) -> str:
        value = row.get(column)
        if value is None:
            return "no price in catalog" if column == "cost_usd" else ""
        low, high = row.get(f"{column}_low"), row.get(f"{column}_high")  # plan --uncertainty
        return interval_cell(value, low, high) if low is not None and high is not None else format_number(value)

    def table(title: str, rows: list[dict[str, Any]]) -> Table:
        return Table(columns, [[cell(row, c) for c in columns] for row in rows], title=title)

    blocks.append(table("best configurations", best) if best else "no configuration meets every constraint")
    if front:
        blocks.append(table(f"Pareto front ({cost_axis} vs save_checkpoint_duration_mean_seconds, feasible only)", front))
    blocks += [f"rejected {family['family']}: bound by {'; '.join(family['bound_by'])}" for family in rejected]
    blocks += [f"note: {note}" for note in result.notes]
    return render(blocks, width=220)


def _plot(result: Any, front: list[dict[str, Any]], cost_axis: str, path: Path) -> None:
    from iowatt.output.figures import ScatterPoint, draw_pareto, plots_available

    if not plots_available():
        raise UserError(f"--plot {path}: matplotlib is not installed (pip install 'iowatt[plots]')")
    time_axis = "save_checkpoint_duration_mean_seconds"
    points = [ScatterPoint(c[cost_axis], c[time_axis], bool(c["feasible"])) for c in result.configs
              if c.get(cost_axis) is not None and c.get(time_axis) is not None]
    draw_pareto(points, [(c[cost_axis], c[time_axis]) for c in front], cost_axis, "checkpoint save time (s)", result.spec.name, path)
