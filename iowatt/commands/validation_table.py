"""`iowatt validate TABLE.yaml`: predict every row of a table of published measurements (docs/validation-format.md).

Output goes to stdout in fixed row order whatever `--jobs`; a progress bar goes
to stderr only when stderr is a terminal.  Exit status: 2 for a table that
cannot be read, 1 when a row failed to run (a partial result) or, with
`--strict`, when a row is outside its tolerance; else 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from iowatt.errors import UserError

if TYPE_CHECKING:
    from iowatt.scenarios.uncertainty import Settings

FORMATS = ("table", "json", "markdown")


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr when it is a terminal; nothing otherwise (pipes and files get data only)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def validate_table(path: Path, fmt: str | None, strict: bool, cross: bool, jobs: int, uncertainty: Settings | None = None) -> None:
    from iowatt.commands.validation_intervals_view import interval_markdown, interval_text
    from iowatt.commands.validation_view import render_markdown, render_text
    from iowatt.output import choose_format, write_text
    from iowatt.output.serialize import to_json
    from iowatt.scenarios.validation import TableError, evaluate_table, read_table
    from iowatt.scenarios.validation_runs import RunCache

    chosen = choose_format(fmt, None, FORMATS)
    if not path.is_file():
        raise UserError(f"validation table: expected an existing YAML file, found {str(path)!r}")
    if jobs < 1:
        raise UserError(f"--jobs: expected a whole number >= 1, found {jobs}")
    try:
        table = read_table(path)
    except TableError as error:
        raise UserError(str(error)) from None
    cache = RunCache()
    with _progress("scenario runs") as progress:
        report = evaluate_table(table, path.parent, jobs=jobs, progress=progress, cache=cache)
    validation = None
    if cross:
        from iowatt.scenarios.cross_validation import cross_validate

        with _progress("cross-validation runs") as progress:
            validation = cross_validate(table, path.parent, report, cache, jobs=jobs, progress=progress)
    intervals = None
    if uncertainty is not None:
        from iowatt.scenarios.executors import open_executor
        from iowatt.scenarios.validation_intervals import interval_score_summary, row_intervals

        with _progress("uncertainty: rows sampled") as progress, open_executor(jobs) as executor:
            intervals = row_intervals(table, path.parent, report.rows, uncertainty, executor, progress)
        report.summary["uncertainty"] = {"level": uncertainty.level, **interval_score_summary(report.rows, intervals)}
    if chosen == "json":
        document = report.as_dict()
        if intervals is not None:
            for row in document["rows"]:  # type: ignore[union-attr]
                found = intervals.get(str(row["id"]))  # type: ignore[index]
                row.update(found.as_dict() if found is not None else {"interval": None, "covered": None})  # type: ignore[union-attr]
        if validation is not None:
            document["cross_validation"] = validation.as_dict()
        write_text(to_json(document), None)
    elif chosen == "markdown":
        command = f"iowatt validate {path.as_posix()}{' --cross-validate' if cross else ''}{' --uncertainty' if intervals else ''} --format markdown"
        text = render_markdown(report, validation, command, path.as_posix())
        write_text(text + (interval_markdown(report, intervals) if intervals is not None else ""), None)
    else:
        text = render_text(report, validation)
        write_text(text + (interval_text(report, intervals) if intervals is not None else ""), None)
    failed = any(r.failure for r in report.rows) or (validation is not None and any(r.failure for s in validation.studies for r in s.rows))
    unsampled = [i.id for i in (intervals or {}).values() if i.too_many_failed]
    if unsampled:
        print(f"error: more than 10 % of the sampled runs failed for {', '.join(unsampled)}: their intervals are not trustworthy",
              file=sys.stderr)
        failed = True
    if failed or (strict and any(not r.within for r in report.rows)):
        raise typer.Exit(1)
