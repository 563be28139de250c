"""`iowatt designs`: one scenario saved blocking, async and tiered, side by side, with the timeline figure.

The runs and their metrics come from scenarios.checkpoint_designs; this module prints them and draws
the training timeline of one checkpoint interval per design (matplotlib, Agg).  The drawing belongs in
the output package once iowatt/output/ is one (it is a single module on this branch).
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from iowatt.errors import UserError, user_errors

if TYPE_CHECKING:
    from iowatt.models.goodput import FailureModel
    from iowatt.scenarios.checkpoint_designs import DesignRun

COLOURS = {"compute": "#4c9a2a", "wait": "#b22222", "stall": "#e04f39", "write": "#3b75af", "writeback": "#9ecae1",
           "stage": "#6a51a3", "flush": "#bcbddc", "drain": "#f2a541"}


def register(app: typer.Typer) -> None:
    app.command()(designs)


@user_errors
def designs(
    scenario: Annotated[str, typer.Argument(help="A checkpoint scenario with workload.save (file or library name).")],
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", metavar="PATH=VALUE", help="Override PATH=VALUE for every design (repeatable).")] = None,
    modes: Annotated[str, typer.Option("--modes", help="Designs to run, comma-separated: blocking, async, tiered.")] = "blocking,async,tiered",
    nodes: Annotated[int | None, typer.Option("--nodes", help="Failure model: hosts in the job (enables goodput).")] = None,
    node_mtbf_hours: Annotated[float | None, typer.Option("--node-mtbf-hours", help="Failure model: MTBF of one host, hours.")] = None,
    restart_seconds: Annotated[float, typer.Option("--restart-seconds", help="Failure model: restart time before the restore.")] = 0.0,
    local_recovery_share: Annotated[
        float, typer.Option("--local-recovery-share", help="Failure model: share of failures a tiered save recovers from its hosts.")
    ] = 0.0,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the timeline of one checkpoint interval per design (PNG).")] = None,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="table, json or csv (default: by --output extension).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")] = None,
) -> None:
    """Compare checkpoint save designs: stall, durable-after, bytes and energy per tier, goodput at a failure rate."""
    from iowatt.output import choose_format, write_text
    from iowatt.output.serialize import to_csv
    from iowatt.scenarios import checkpoint_designs as cd

    chosen = choose_format(fmt, output, ("table", "json", "csv"))
    if plot is not None:
        from iowatt.output.files import check_png_target

        check_png_target(plot)
    failure = _failure(nodes, node_mtbf_hours, restart_seconds, local_recovery_share)
    runs = cd.compare(scenario, list(set_ or []), tuple(m.strip() for m in modes.split(",") if m.strip()), failure,
                      "daly" if failure is not None else None)
    rows = [run.summary() for run in runs]
    if plot is not None:
        _draw(runs, plot)
    if chosen == "json":
        timelines = [[asdict(s) for s in run.segments] for run in runs]
        data = {"scenario": scenario, "designs": [{**r, "timeline": t} for r, t in zip(rows, timelines, strict=True)]}
        write_text(json.dumps(data, indent=2) + "\n", output)
    elif chosen == "csv":
        write_text(to_csv(rows), output)
    else:
        write_text(_table(rows), output)


def _failure(nodes: int | None, mtbf: float | None, restart: float, local: float) -> FailureModel | None:
    if (nodes is None) != (mtbf is None):
        raise UserError("--nodes and --node-mtbf-hours: give both to enable the failure model")
    if nodes is None:
        return None
    from iowatt.models.goodput import FailureModel

    try:
        return FailureModel(nodes=nodes, node_mtbf_hours=mtbf, restart_seconds=restart, local_recovery_share=local)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserError(str(error).replace("failure.", "--").replace("_", "-")) from None


def _table(rows: list[dict[str, Any]]) -> str:
    from rich.console import Console
    from rich.table import Table

    from iowatt.output.tables import format_number

    table = Table(title="checkpoint designs")
    table.add_column("metric")
    for row in rows:
        table.add_column(str(row["design"]), justify="right")
    for name in rows[0]:
        if name == "design" or all(row.get(name) is None for row in rows):
            continue
        table.add_row(name, *("" if row.get(name) is None else format_number(row[name]) for row in rows))
    console = Console(file=io.StringIO(), width=140, force_terminal=False, color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _draw(runs: list[DesignRun], path: Path) -> None:
    """One panel per design: the training lane (compute, wait, stall) above the storage lane (write, stage, drain)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError(f"--plot {path}: matplotlib is not installed (pip install 'iowatt[plots]')") from None
    from iowatt.output import write_bytes

    horizon = max(s.end_s for run in runs for s in run.segments if s.phase != "compute") * 1.15
    lead = 0.12 * horizon
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 1.5 + 1.3 * len(runs)), sharex=True, squeeze=False)
    seen: dict[str, Any] = {}
    for ax, run in zip(axes[:, 0], runs, strict=True):
        for s in run.segments:
            y = 1 if s.lane == "training" else 0
            start, end = max(s.start_s, -lead), min(s.end_s, horizon)
            if end > start:
                seen[s.phase] = ax.barh(y, end - start, left=start, height=0.6, color=COLOURS[s.phase], edgecolor="none")
        stall, durable = run.metrics.get("checkpoint_stall_last_seconds"), run.metrics.get("checkpoint_durable_after_last_seconds")
        ax.set_yticks([0, 1], ["storage", "training"])
        ax.set_title(f"{run.mode}: stall {stall:.3g} s, durable after {durable:.3g} s", fontsize=9, loc="left")
        ax.axvline(0.0, color="0.3", lw=0.6)
    axes[-1, 0].set_xlim(-lead, horizon)
    axes[-1, 0].set_xlabel("seconds from the checkpoint's start (compute continues beyond the right edge)")
    fig.legend(list(seen.values()), list(seen), loc="upper center", ncol=len(seen), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    write_bytes(buffer.getvalue(), path, "--plot")
