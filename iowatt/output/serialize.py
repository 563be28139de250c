"""Data as text: JSON documents and CSV rows."""

from __future__ import annotations

import csv
import io
import json
import numbers
from collections.abc import Iterable, Mapping


def to_json(document: object) -> str:
    """Indented JSON; NaN and infinity are refused (JSON has no such numbers), numpy scalars become numbers."""
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False, default=_jsonable) + "\n"


def _jsonable(value: object) -> object:
    # numpy scalars register as numbers.Integral / numbers.Real, so numpy stays out of this leaf
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def columns_of(rows: Iterable[Mapping[str, object]]) -> list[str]:
    """Every key of every row, in order of first appearance."""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    return columns


def to_csv(rows: list[Mapping[str, object]], columns: list[str] | None = None) -> str:
    """A header of `columns` (default: every key of every row, in order of first appearance), then one line per row."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns if columns is not None else columns_of(rows), lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow(csv_row(row))
    return out.getvalue()


def csv_row(row: Mapping[str, object]) -> dict[str, object]:
    """A row as CSV writes it: a whole-numbered float (a count the engine carries as float, e.g. 8.0 ranks) as an integer."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v for k, v in row.items()}
