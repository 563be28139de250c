"""`iowatt reproduce`: the published studies, as tables, CSVs, figures and an index.md.

`iowatt.scenarios.reproduce` runs the studies and returns their results; this
module turns them into text, CSV, Markdown and figures with `iowatt.output`.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from iowatt.errors import user_errors
from iowatt.output.figures import FigureClaim, FigureRun, StudyFigure
from iowatt.output.intervals import interval_cell
from iowatt.output.tables import Table, format_number
from iowatt.uncertainty_options import LevelOption, MethodOption, SamplesOption, UncertaintyOption, settings

if TYPE_CHECKING:
    from iowatt.scenarios.reproduce import Claim, SectionResult, StudyResult
    from iowatt.scenarios.reproduce_intervals import CellInterval, CellKey

    Bounds = Mapping[tuple[str, str], tuple[float, float]]


def register(app: typer.Typer) -> None:
    @app.command()
    @user_errors
    def reproduce(
        study: Annotated[str, typer.Argument(help="A study name (micron_6550ion_vs_p5336, micron_9550_gnn_bam, amax_5210ion_vs_hdd, "
                                                   "storagereview_ckpt_fill, mlperf_storage_v1, ssd_power_states; see scenarios/studies/), a study "
                                                   "YAML file, or `all`.")] = "all",
        out: Annotated[Path | None, typer.Option("--out", help="Write figures (PNG, SVG), their CSVs and index.md here.")] = None,
        jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes for the studies' scenarios (default: CPU count; "
                                                                      "0 = run in this process). The output is the same in any case.")] = None,
        uncertainty: UncertaintyOption = False,
        samples: SamplesOption = 4,
        level: LevelOption = 0.9,
        method: MethodOption = "oat",
    ) -> None:
        """Run a published study's scenarios; print its comparison tables (published vs predicted) and draw its figures.

        Figures need matplotlib (pip install 'iowatt\\[plots]'); without it the tables, CSVs and index.md are still written.
        A scenario that is missing or fails is reported in the tables and the rest still run; the exit status is then 1.
        A progress bar goes to stderr when it is a terminal.
        """
        from iowatt.output import figures
        from iowatt.output.progress import ProgressBar
        from iowatt.scenarios import reproduce as rp
        from iowatt.scenarios.executors import open_executor

        every = study == "all"
        studies = rp.load_studies(list(rp.study_files()) if every else [study])
        with open_executor(jobs) as executor, ProgressBar("reproduce", len(rp.distinct_runs(studies))) as bar:
            results = rp.run_studies(studies, executor, bar.advance)
        intervals = None
        if uncertainty:
            from iowatt.scenarios.reproduce_intervals import cell_intervals

            with open_executor(jobs) as executor, ProgressBar("uncertainty", len(rp.distinct_runs(studies))) as bar:
                intervals = cell_intervals(studies, settings(samples, level, method), executor, bar.advance)
        text, written = present(results, out, "all" if every else study, intervals)
        sys.stdout.write(text + "\n")
        if out is not None:
            kind = "figures, CSVs" if figures.plots_available() else "CSVs (no figures: matplotlib missing)"
            print(f"wrote {len(written)} files ({kind}); open {out / 'index.md'}", file=sys.stderr)
        else:
            print("add --out DIR to write figures, their CSVs and index.md", file=sys.stderr)
        failed = sorted({run for r in results for s in r.sections for run in rp.failures(s)})
        if failed:  # the tables and files are complete apart from these runs; the exit status says some are missing
            print(f"error: {len(failed)} run(s) failed (their cells read ERROR), e.g. {failed[0]}", file=sys.stderr)
            raise typer.Exit(1)


def _fmt(value: float | None) -> str:
    return "-" if value is None else format_number(value)


def _cell(value: float | None, bound: tuple[float, float] | None) -> str:
    return _fmt(value) if value is None or bound is None else interval_cell(value, *bound)


def section_tables(result: SectionResult, bounds: Bounds | None = None) -> tuple[Table, Table | None]:
    """The study's own table (runs x metrics) and the published figures beside iowatt's (None when the section has none);
    with `bounds` (reproduce --uncertainty), each prediction as `value [low, high]`."""
    bounds = bounds or {}
    section = result.section
    show_x = any(r.x is not None for r in section.runs)
    suffix = " (mean)" if section.figure == "trace" else ""
    numbers = ["run", *([section.x_label or "x"] if show_x else []), *(m.label + suffix for m in section.metrics)]
    columns = [*numbers, *section.labels]  # text columns (e.g. what binds each run) after the numbers
    rows = []
    for run in section.runs:
        cells = [result.values[(run.label, m.label)] for m in section.metrics]
        rows.append([run.label, *([_fmt(run.x)] if show_x else []),
                     *("ERROR" if c.failure else _cell(c.predicted, bounds.get((run.label, m.label))) for c, m in zip(cells, section.metrics, strict=True)),
                     *(result.labels.get((run.label, name), "") for name in section.labels)])
    runs = Table(columns, rows, right=frozenset(numbers[1:]))
    if not result.claims:
        return runs, None
    from iowatt.scenarios.reproduce import claim_label

    def absolute(c: Claim) -> tuple[float, float] | None:  # an interval where the claim is the cell itself
        p = c.published
        return bounds.get((p.run, p.metric)) if p.relative_to is None and p.span is None else None

    claim_rows = [[claim_label(c.published), _fmt(c.published.value), _cell(c.predicted, absolute(c)),
                   "-" if c.error is None else f"{100 * c.error:+.1f}", c.published.source] for c in result.claims]
    claims = Table(["claim", "published", "iowatt", "error %", "source"], claim_rows, title="published vs iowatt",
                   right=frozenset({"published", "iowatt", "error %"}), title_left=True)
    return runs, claims


def section_text(result: SectionResult, bounds: Bounds | None = None) -> str:
    from iowatt.output.tables import render
    from iowatt.scenarios.reproduce import failures

    runs, claims = section_tables(result, bounds)
    # the title goes on its own line: as a table title rich would wrap it to the table's width
    blocks: list[Table | str] = [result.section.title, runs, *([claims] if claims else [])]
    blocks += [f"not run: {run}: {why}" for run, why in failures(result).items()]
    blocks += [result.section.note] if result.section.note else []
    return render(blocks, width=160)


def section_markdown(result: SectionResult, bounds: Bounds | None = None) -> list[str]:
    from iowatt.output.tables import markdown
    from iowatt.scenarios.reproduce import failures

    runs, claims = section_tables(result, bounds)
    lines = markdown(runs)
    if claims is not None:
        lines += markdown(Table(["published claim", *claims.columns[1:]], claims.rows, right=claims.right))
    lines += [f"- **not run**: {run.replace('|', chr(92) + '|')}: `{why}`" for run, why in failures(result).items()]
    if failures(result):
        lines.append("")
    return lines + ([result.section.note, ""] if result.section.note else [])


def section_figure(result: SectionResult, bounds: Bounds | None = None) -> StudyFigure:
    from iowatt.scenarios.reproduce import published_absolute
    from iowatt.scenarios.reproduce_trace import trace_positions

    s = result.section
    return StudyFigure(
        kind=s.figure, title=s.title, x_label=s.x_label, x_log2=s.x_log2, y_log=s.y_log,
        runs=[FigureRun(r.label, r.x, r.series) for r in s.runs],
        metrics=[m.label for m in s.metrics],
        values={key: cell.predicted for key, cell in result.values.items()},
        traces={key: cell.trace for key, cell in result.values.items() if cell.trace is not None},
        trace_xs={key: trace_positions(s, len(cell.trace), cell.span) for key, cell in result.values.items() if cell.trace is not None},
        note=s.note,
        claims=[FigureClaim(c.published.run, c.published.metric, c.published.value, c.published.relative_to,
                            published_absolute(result, c.published), c.published.span) for c in result.claims],
        intervals=dict(bounds or {}),
    )


def present(results: list[StudyResult], out: Path | None, asked: str,
            intervals: Mapping[CellKey, CellInterval] | None = None) -> tuple[str, list[Path]]:
    """(the text to print, the files written under `out`): tables always; with `out`, CSVs, figures and index.md;
    with `intervals` (reproduce --uncertainty), each prediction's interval in the tables and as error bars."""
    from iowatt.output import figures
    from iowatt.output.files import write_text
    from iowatt.output.serialize import to_csv
    from iowatt.scenarios.reproduce import comparison_rows, slug

    text: list[str] = []
    written: list[Path] = []
    plots = figures.plots_available()
    summary = ["| study | published figures | predicted | median abs error % | max abs error % |", "|---|---:|---:|---:|---:|"]
    body: list[str] = []
    for study in results:
        text.append(f"== {study.study.title}")
        body += [f"## {study.study.title}", "", f"Study `{study.study.id}`. Source: {study.study.source}", ""]
        body += [study.study.note, ""] if study.study.note else []
        stems: set[str] = set()
        for result in study.sections:
            section = result.section
            bounds = {(run, metric): (i.low, i.high) for (sid, title, run, metric), i in (intervals or {}).items()
                      if sid == study.study.id and title == section.title}
            text.append(section_text(result, bounds))
            body += [f"### {section.title}", ""]
            if out is None:
                body += section_markdown(result, bounds)
                continue
            folder = out / study.study.id
            folder.mkdir(parents=True, exist_ok=True)
            name = slug(section.title)
            while name in stems:  # two titles alike in their first 60 characters
                name += "_2"
            stems.add(name)
            stem = folder / name
            write_text(to_csv(comparison_rows(result)), stem.with_suffix(".csv"), "--out")
            written.append(stem.with_suffix(".csv"))
            drawn = plots and section.figure != "none"
            if drawn:
                written += figures.draw_study_figure(section_figure(result, bounds), stem)
                body += [f"![{section.title}]({study.study.id}/{name}.png)", ""]
            body += section_markdown(result, bounds)
            body += [f"Data: [{name}.csv]({study.study.id}/{name}.csv)"
                     + (f", vector figure: [{name}.svg]({study.study.id}/{name}.svg)" if drawn else ""), ""]
        errors = study.abs_errors()
        median = f"{100 * statistics.median(errors):.1f}" if errors else "-"
        worst = f"{100 * max(errors):.1f}" if errors else "-"
        summary.append(f"| {study.study.id} | {len(study.claims)} | {len(errors)} | {median} | {worst} |")
    if out is not None:
        index = ["# iowatt reproductions of published studies", "",
                 f"Made by `iowatt reproduce {asked}`. Each section shows the figure, the CSV behind it, the values iowatt predicts and, "
                 "where the study published a figure, the published value beside the comparable prediction with the signed error "
                 "((iowatt - published) / published).", ""]
        out.mkdir(parents=True, exist_ok=True)
        write_text("\n".join(index + summary + [""] + body) + "\n", out / "index.md", "--out")
        written.append(out / "index.md")
        if not plots:
            text.append("figures need matplotlib: pip install 'iowatt[plots]' (make demo installs it); tables and CSVs were written")
    return "\n".join(text), written
