"""How `iowatt validate TABLE --uncertainty` shows each row's interval: a table after the usual ones (text or markdown)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iowatt.commands.validation_view import _md_table
from iowatt.output.intervals import interval_cell
from iowatt.output.tables import Table, render

if TYPE_CHECKING:
    from iowatt.scenarios.validation import ValidationReport
    from iowatt.scenarios.validation_intervals import RowInterval

_HEADERS = ["row", "role", "published", "median [interval]", "covered", "half-width", "score", "moved most by"]


def _rows(report: ValidationReport, intervals: dict[str, RowInterval]) -> list[list[str]]:
    out = []
    for r in report.rows:
        i = intervals.get(r.id)
        if i is None:
            continue
        mover = f"{i.top[0][0]} ({i.top[0][1]:.0%})" if i.top else ""
        out.append([r.id, r.role, f"{r.measured:.4g}", interval_cell(i.median, i.low, i.high), "yes" if i.covered else "NO: mechanism missing",
                    f"{i.relative_half_width:.1%}", f"{i.interval_score:.3f}", mover])
    return out


def _summary_lines(report: ValidationReport) -> list[str]:
    block = report.summary.get("uncertainty")
    if not isinstance(block, dict):
        return []
    lines = []
    for label, key in (("predicted rows", "predicted"), ("fitted rows", "fitted"), ("restating rows", "restates"), ("all rows", None)):
        s = block.get(key) if key else block
        if isinstance(s, dict) and s.get("n"):
            lines.append(f"{label}: coverage {s['coverage']:.0%} of {s['n']} at level {block['level']:g}, median relative "
                         f"half-width {s['median_relative_half_width']:.1%}, mean interval score {s['interval_score']:.3f}")
    return lines


def _named_misses(report: ValidationReport, intervals: dict[str, RowInterval]) -> list[str]:
    """Uncovered rows whose table names the missing mechanism: the row id and what is missing."""
    from iowatt.scenarios.validation_intervals import MISSING_MECHANISM

    return [f"{r.id}: {i.note}" for r in report.rows if (i := intervals.get(r.id)) is not None and not i.covered
            and i.note.startswith(f"{MISSING_MECHANISM}: ")]


def interval_text(report: ValidationReport, intervals: dict[str, RowInterval]) -> str:
    table = Table(_HEADERS, _rows(report, intervals), title="intervals (--uncertainty)", right=frozenset({"published", "median [interval]"}))
    return render([table, *_summary_lines(report), *_named_misses(report, intervals)], width=160)


def interval_markdown(report: ValidationReport, intervals: dict[str, RowInterval]) -> str:
    body = [[f"`{c[0]}`", *c[1:]] for c in _rows(report, intervals)]
    return ("\n## Intervals (`--uncertainty`)\n\n" + "\n".join(f"- {line}" for line in _summary_lines(report)) + "\n\n"
            + _md_table(_HEADERS, body, [False, False, True, True, False, True, True, False]))
