"""How `iowatt validate TABLE` shows its results: terminal tables or a markdown document (docs/validation.md).

The data come from iowatt.scenarios.validation (rows, roles, summaries) and
iowatt.scenarios.cross_validation; this module only lays them out: predicted
rows first (the headline), then rows a value was fitted on, then rows that
restate another, then scores by study, in-sample and cross-validated.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line imports this module at start; the simulator only when it renders
    from iowatt.scenarios.cross_validation import CrossValidation
    from iowatt.scenarios.validation import RowResult, ValidationReport

SECTIONS = (
    ("predicted", "predicted rows (the headline)"),
    ("fitted", "rows a calibrated value was fitted on (not predictions)"),
    ("restates", "rows that restate another row (scored apart)"),
)
SUMMARY_KEY = {"predicted": "predicted", "fitted": "fitted", "restates": "restating"}


def _pct(value: object, signed: bool = False) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    return f"{value * 100:+.1f} %" if signed else f"{value * 100:.1f} %"


def score_line(label: str, s: dict[str, object]) -> str:
    text = (f"{label}: rows {s['n']}, within tolerance {s['n_within']}, failed to run {s['n_failed']}, "
            f"median |error| {_pct(s['median_abs_error'])}, max |error| {_pct(s['max_abs_error'])}")
    if s["n_direction"]:
        text += f", ratio directions right {s['n_direction_ok']}/{s['n_direction']}"
    return text


def _unit(r: RowResult) -> str:
    return r.unit or ("ratio" if r.kind == "ratio" else "")


def _flag(r: RowResult) -> str:
    if r.failure:
        return "ERROR"
    return "yes" if r.within else "NO"


def _remark(r: RowResult) -> str:
    if r.failure:
        return r.failure
    parts = ["wrong direction"] if r.direction_ok is False else []
    if r.role == "restates" and r.restates:
        parts.append(f"restates {r.restates}")
    if r.role == "fitted":
        parts.append("fitted: " + "; ".join(r.fitted_by))
    return "; ".join(parts)


def format_number(value: float) -> str:
    from iowatt.output.tables import format_number as formatted

    if float(value).is_integer() and abs(value) < 1e6:
        return f"{int(value):,}"  # counts (a layout's pieces, a request window) read as whole numbers
    return formatted(value)


def _cells(r: RowResult) -> list[str]:
    if r.predicted is None or r.error is None:
        return [r.id, "-", format_number(r.measured), _unit(r), "-", f"{r.tolerance * 100:.0f}", _flag(r), _remark(r)]
    return [r.id, format_number(r.predicted), format_number(r.measured), _unit(r), f"{r.error * 100:+.1f}",
            f"{r.tolerance * 100:.0f}", _flag(r), _remark(r)]


def render_text(report: ValidationReport, cross: CrossValidation | None = None) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=io.StringIO(), width=180, force_terminal=False, color_system=None)
    for role, title in SECTIONS:
        rows = [r for r in report.rows if r.role == role]
        if not rows:
            continue
        table = Table(title=title)
        for column in ("id", "predicted", "measured", "unit", "error %", "tol %", "ok", "remark"):
            table.add_column(column, justify="left" if column in ("id", "remark", "unit") else "right", overflow="fold",
                             no_wrap=column != "remark")
        for r in rows:
            table.add_row(*_cells(r))
        console.print(table)
        console.print(score_line("headline, predicted rows only" if role == "predicted" else SUMMARY_KEY[role] + " rows",
                                 report.summary[SUMMARY_KEY[role]]))  # type: ignore[arg-type]
        console.print()
    console.print(_study_table(report, cross))
    console.print(score_line("all rows together (format 1.1 summary)", report.summary))
    if cross is not None:
        console.print(score_line("cross-validated, every study left out in turn (restating rows left out)", cross.cross_validated))
        values = Table(title="values used when each study is left out")
        for column in ("study", "value", "recorded", "used", "basis", "reason"):
            values.add_column(column, justify="right" if column in ("recorded", "used") else "left", overflow="fold",
                              no_wrap=column != "reason")
        for study in cross.studies:
            for v in study.values:
                values.add_row(study.study, v.fit, format_number(v.recorded), format_number(v.value), v.basis, v.reason)
        console.print(values)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _study_rows(report: ValidationReport, cross: CrossValidation | None) -> list[list[str]]:
    by_study = report.summary["by_study"]
    assert isinstance(by_study, dict)
    cv = {s.study: s for s in cross.studies} if cross is not None else {}
    out = []
    for study, s in by_study.items():
        row = [study, str(s["n"]), _pct(s["median_abs_error"]), _pct(s["max_abs_error"])]
        if cross is not None:
            c = cv[study]
            used = ", ".join(f"{v.fit} ({v.basis})" for v in c.values) or "none fitted on this study"
            row += [_pct(c.cross_validated["median_abs_error"]), _pct(c.cross_validated["max_abs_error"]), used]
        out.append(row)
    return out


def _study_headers(cross: CrossValidation | None) -> list[str]:
    headers = ["study", "rows", "in-sample median |error|", "in-sample max |error|"]
    if cross is not None:
        headers += ["cross-validated median |error|", "cross-validated max |error|", "values refitted or replaced by their prior"]
    return headers


def _study_table(report: ValidationReport, cross: CrossValidation | None):
    from rich.table import Table

    table = Table(title="by study (predicted and fitted rows; restating rows left out)")
    for column in _study_headers(cross):
        table.add_column(column, justify="left" if column in ("study", "values refitted or replaced by their prior") else "right",
                         overflow="fold")
    for row in _study_rows(report, cross):
        table.add_row(*row)
    return table


# ---- markdown --------------------------------------------------------------------------------------------------------

def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    def clean(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(h) for h in headers) + " |", "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(clean(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _md_rows(rows: list[RowResult], last: str) -> str:
    headers = ["row", "iowatt", "published", "unit", "error", "tolerance", "ok", last]
    body = []
    for r in rows:
        cells = _cells(r)
        extra = {"restates": r.restates or "", "fitted values": "; ".join(r.fitted_by), "remark": _remark(r)}[last]
        body.append([f"`{r.id}`", cells[1], cells[2], cells[3], cells[4] + (" %" if r.error is not None else ""),
                     f"{r.tolerance * 100:.0f} %", cells[6], extra])
    return _md_table(headers, body, [False, True, True, False, True, True, False, False])


def _running(table: str) -> str:
    return ("## Running it\n\n```\n"
            f"iowatt validate {table}                       # terminal tables: predicted, fitted, restating rows; scores by study\n"
            f"iowatt validate {table} --cross-validate -j 2 # also leave one study out at a time (2 processes)\n"
            f"iowatt validate {table} -f json               # rows with their roles, summary split by role\n"
            f"iowatt validate {table} --strict              # exit 1 if any row misses its tolerance\n"
            "```\n")


def render_markdown(report: ValidationReport, cross: CrossValidation | None, command: str, table: str) -> str:
    s = report.summary
    parts = [
        "# Validation against published measurements\n",
        f"Generated by `{command}`; do not edit by hand (the prose lives in the table's `description` and rows' `note`). "
        "Format of the table and of the JSON output: [validation-format.md](validation-format.md).\n",
        report.description.strip() + "\n" if report.description else "",
        _running(table),
        "## Headline: predicted rows only\n",
        "```\n" + score_line("predicted rows", s["predicted"]) + "\n" + score_line("fitted rows", s["fitted"]) + "\n"  # type: ignore[arg-type]
        + score_line("restating rows", s["restating"]) + "\n" + score_line("all rows together (format 1.1 summary)", s)  # type: ignore[arg-type]
        + ("\n" + score_line("cross-validated (leave one study out)", cross.cross_validated) if cross else "") + "\n```\n",
        _md_rows([r for r in report.rows if r.role == "predicted"], "remark"),
        "## Rows a calibrated value was fitted on\n",
        "These are not predictions: each row's published figure set a value (its `fitted_on` names the row). "
        "Cross-validation below predicts them with the value refitted without their study.\n",
        _md_rows([r for r in report.rows if r.role == "fitted"], "fitted values"),
        "## Rows that restate another row\n",
        "Each follows algebraically from the row named, so it is scored apart and left out of every median.\n",
        _md_rows([r for r in report.rows if r.role == "restates"], "restates"),
        "## Scores by study\n",
        _md_table(_study_headers(cross), [[f"`{r[0]}`", *r[1:]] for r in _study_rows(report, cross)],
                  [False, True, True, True, True, True, False][: len(_study_headers(cross))]),
    ]
    if cross is not None:
        parts += [
            "## Cross-validation (leave one study out)\n",
            "Each study is left out in turn: every value fitted on its rows is refitted on the other studies' rows, or, "
            "with none left, replaced by its prior (an assumed value with the reasoning below); the study's rows are then "
            "predicted with those values.\n",
            _md_table(["study left out", "value", "recorded", "used", "basis", "reason"],
                      [[f"`{st.study}`", f"`{v.fit}`", format_number(v.recorded), format_number(v.value), v.basis, v.reason]
                       for st in cross.studies for v in st.values], [False, False, True, True, False, False]),
            "Cross-validated rows of the studies that had a value refitted or replaced:\n",
            _md_rows([r for st in cross.studies if st.values for r in st.rows], "remark"),
        ]
    misses = [r for r in report.rows if not r.within]
    if misses:
        parts += ["## Rows outside their tolerance, and why\n",
                  _md_table(["row", "role", "error", "diagnosis"],
                            [[f"`{r.id}`", r.role, _pct(r.error, signed=True) if r.error is not None else "failed", r.note or r.failure or ""]
                             for r in misses], [False, False, True, False])]
    return "\n".join(p for p in parts if p)
