"""Tables for people: plain text drawn by rich (no colour, fixed width, so files and pipes get the same text) and Markdown."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Table:
    """Cells are text already; `right` names the columns aligned right (numbers)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[str]]
    title: str = ""
    right: frozenset[str] = field(default_factory=frozenset)
    title_left: bool = False


def format_number(value: object) -> str:
    """Whole numbers from 100 up in full with thousands separators; else four significant digits, thousands separators
    from 100 up, scientific notation outside [1e-3, 1e6)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if value == 0 or math.isnan(value):
        return f"{value:g}"
    magnitude = abs(value)
    if float(value).is_integer() and 100 <= magnitude < 1e15:
        return f"{value:,.0f}"  # a count reads 1,170,301, not 1.17e+06 or 1,680.0
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.4g}"
    if magnitude >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def render(blocks: Sequence[Table | str], width: int = 100) -> str:
    """Tables and lines of text, in order, as plain text `width` characters wide."""
    from rich.console import Console
    from rich.table import Table as RichTable

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    for block in blocks:
        if isinstance(block, str):
            # markup off: text such as '[global]' or 'x[0]' is shown as written
            console.print(block, markup=False, highlight=False)
            continue
        table = RichTable(title=block.title or None, title_justify="left" if block.title_left else "center")
        for column in block.columns:
            table.add_column(column, justify="right" if column in block.right else "left", overflow="fold")
        for row in block.rows:
            table.add_row(*row)
        console.print(table)
    return buffer.getvalue()


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(table: Table) -> list[str]:
    """A GitHub-flavoured Markdown table (title omitted), then an empty line."""
    aligns = "|" + "".join("---:|" if c in table.right else "---|" for c in table.columns)
    lines = ["| " + " | ".join(map(_md_escape, table.columns)) + " |", aligns]
    lines += ["| " + " | ".join(map(_md_escape, row)) + " |" for row in table.rows]
    return [*lines, ""]
