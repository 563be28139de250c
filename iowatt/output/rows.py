"""Rows written as they finish, so an interrupted run keeps what it finished.

CSV: each row is appended and flushed; a row with a column no earlier row had
rewrites the file (atomically) with the wider header.  Parquet: the whole file
is rewritten atomically at most every `flush_seconds` and at the end.  A
stream (FIFO, terminal, `-`) cannot be rewritten or read back, so it gets the
whole table once, at the end.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from iowatt.output.files import OutputError, target_kind, write_bytes
from iowatt.output.serialize import csv_row, to_csv

Row = dict[str, object]


class RowFile:
    """Rows to `path` in `fmt` (csv or parquet); `existing()` reads back the complete rows already there (for resume).

    In Parquet, `text_columns` are always text (a missing value is ""), and
    strings or booleans are written as text so a column never mixes types."""

    def __init__(self, path: Path, fmt: str, text_columns: tuple[str, ...] = (), option: str = "--output") -> None:
        if fmt not in ("csv", "parquet"):
            raise OutputError(f"{option} {path}: expected .csv or .parquet, found format {fmt!r}")
        self.kind = target_kind(path, option)
        if self.kind in ("new", "regular") and not (path.parent if str(path.parent) else Path(".")).is_dir():
            raise OutputError(f"{option} {path}: the folder {path.parent} does not exist")
        self.path, self.fmt, self.option = path, fmt, option
        self.text_columns = text_columns
        self.rows: list[Row] = []
        self.columns: list[str] = []
        self._handle: IO[str] | None = None
        self._writer: csv.DictWriter[str] | None = None
        self._last_flush = 0.0
        self.flush_seconds = 2.0

    @property
    def streaming(self) -> bool:
        """Rows reach the file as they finish (a regular file); a stream gets them at the end."""
        return self.kind in ("new", "regular")

    def existing(self) -> list[Row]:
        """The rows already in the file; a CSV line without its newline (a run killed mid-row) is left out."""
        if self.kind == "new" or (self.kind == "regular" and self.path.stat().st_size == 0):
            return []
        if not self.streaming:
            raise OutputError(f"--resume: {self.option} {self.path} is a stream (FIFO, terminal or '-'); only a file can be resumed")
        if self.fmt == "csv":
            text = self.path.read_text(errors="replace")
            if not text.endswith("\n"):
                text = text[: text.rfind("\n") + 1]
            return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
        import pyarrow.parquet as pq

        try:
            return [dict(r) for r in pq.read_table(self.path).to_pylist()]
        except (OSError, ValueError) as error:  # pyarrow raises ArrowInvalid (a ValueError) for a damaged file
            raise OutputError(f"--resume: {self.path} is not a readable Parquet file ({error}); move it away to start afresh") from None

    def start(self, keep: list[Row], columns: list[str]) -> None:
        """Begin with `keep` (rows from a previous run) and the columns known so far."""
        self.rows = list(keep)
        self.columns = list(columns)
        for row in keep:
            self._add_columns(row)
        if not self.streaming:
            return
        if self.fmt == "csv":
            self._rewrite_csv()
        elif keep:
            self._write_parquet()

    def _add_columns(self, row: Mapping[str, object]) -> bool:
        new = [k for k in row if k not in self.columns]
        self.columns.extend(new)
        return bool(new)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        widened = self._add_columns(row)
        if not self.streaming:
            return
        if self.fmt == "csv":
            if widened or self._writer is None or self._handle is None:
                self._rewrite_csv()  # a column no earlier row had: rewrite with the wider header
            else:
                self._writer.writerow(csv_row(row))
                self._handle.flush()
        elif time.monotonic() - self._last_flush >= self.flush_seconds:
            self._write_parquet()

    def _rewrite_csv(self) -> None:
        if self._handle is not None:
            self._handle.close()
        write_bytes(to_csv(self.rows, self.columns).encode(), self.path, self.option)
        self._handle = self.path.open("a", newline="")
        self._writer = csv.DictWriter(self._handle, fieldnames=self.columns, lineterminator="\n", restval="")

    def _parquet_bytes(self) -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([self._parquet_row(r) for r in self.rows])
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return buffer.getvalue()

    def _write_parquet(self) -> None:
        write_bytes(self._parquet_bytes(), self.path, self.option)
        self._last_flush = time.monotonic()

    def _parquet_row(self, row: Mapping[str, object]) -> Row:
        """Every column present, so every row has the same schema."""
        out: Row = {}
        for column in self.columns:
            value = row.get(column)
            if column in self.text_columns:
                value = "" if value is None else str(value)
            elif isinstance(value, bool | str):
                value = str(value)
            out[column] = value
        return out

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self.fmt == "parquet":
            self._write_parquet()
        elif self.fmt == "csv" and not self.streaming:
            write_bytes(to_csv(self.rows, self.columns).encode(), self.path, self.option)

    def rewrite(self, rows: list[Row]) -> None:
        """Replace every row (e.g. to put kept and new rows in one order at the end of a resumed run)."""
        self.rows = list(rows)
        if self.streaming:
            if self.fmt == "csv":
                self._rewrite_csv()
            else:
                self._write_parquet()
