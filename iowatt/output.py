"""Where results go: stdout (data only) or a file, in the format asked for or implied by its extension."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from iowatt.errors import UserError

EXTENSIONS = {".json": "json", ".csv": "csv", ".txt": "table", ".parquet": "parquet"}


def choose_format(fmt: str | None, output: Path | None, allowed: tuple[str, ...]) -> str:
    if fmt is None and output is not None:
        fmt = EXTENSIONS.get(output.suffix.lower())
        if fmt is None:
            raise UserError(
                f"--output {output}: cannot tell the format from the extension {output.suffix!r}; "
                f"use .json, .csv or .txt, or give --format"
            )
    if fmt is None:
        fmt = "table" if sys.stdout.isatty() else "json"
    if fmt not in allowed:
        raise UserError(f"--format: expected one of {', '.join(allowed)}, found {fmt!r}")
    return fmt


def write_text(text: str, output: Path | None) -> None:
    """Write atomically: a failed run never leaves a half-written file."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_bytes(text.encode(), output)


def write_bytes(data: bytes, output: Path) -> None:
    directory = output.parent if str(output.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"--output {output}: the folder {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
