"""Where results go: stdout, a regular file, or a stream, in the format asked for or implied by the extension.

A regular file (or a new path) is written to a temporary file beside it and
renamed over it, so a failed run never leaves a half-written file.  Anything
else is written in place as a stream: renaming over a FIFO, a terminal or a
device node would replace it with a regular file (as root, `-o /dev/null`
would replace /dev/null), and the reader of a FIFO (`-o >(jq .)`) would wait
forever.  A symlink is followed: the file it points at is replaced and the
link stays.  New files get mode 0666 & ~umask, like every other tool; a
replaced file keeps its mode.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Literal

EXTENSIONS = {".json": "json", ".csv": "csv", ".txt": "table", ".parquet": "parquet", ".yaml": "yaml", ".yml": "yaml", ".md": "markdown"}
STDOUT = "-"

TargetKind = Literal["stdout", "new", "regular", "stream"]


class OutputError(ValueError):
    """An output that cannot be written; the message names the option, the path and why."""


def is_stdout(output: Path | None) -> bool:
    return output is None or str(output) == STDOUT


def target_kind(output: Path | None, option: str = "--output") -> TargetKind:
    """What writing to `output` means: stdout, a new file, a regular file to replace, or a stream to write into."""
    if output is None or str(output) == STDOUT:
        return "stdout"
    try:
        mode = os.stat(output).st_mode  # follows symlinks: what a link points at is what gets written
    except FileNotFoundError:
        return "new"
    except OSError as error:
        raise OutputError(f"{option} {output}: cannot use this path ({error.strerror or error})") from None
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    if stat.S_ISDIR(mode):
        raise OutputError(f"{option} {output}: expected a file name, found a directory")
    found = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file"
    raise OutputError(f"{option} {output}: expected a regular file, a FIFO, a terminal or '-', found {found}; refused")


def choose_format(fmt: str | None, output: Path | None, allowed: tuple[str, ...], option: str = "--output") -> str:
    """The format asked for; else the output's extension; else table on a terminal and JSON otherwise."""
    if fmt is None and output is not None and str(output) != STDOUT:
        fmt = EXTENSIONS.get(output.suffix.lower())
        if fmt is None and target_kind(output, option) != "stream":
            shown = ", ".join(sorted(k for k, v in EXTENSIONS.items() if v in allowed))
            raise OutputError(f"{option} {output}: cannot tell the format from the extension {output.suffix!r}; use {shown}, or give --format")
    if fmt is None:
        fmt = "table" if is_stdout(output) and sys.stdout.isatty() and "table" in allowed else "json"
    if fmt not in allowed:
        raise OutputError(f"--format: expected one of {', '.join(allowed)}, found {fmt!r}")
    return fmt


def check_png_target(path: Path, option: str = "--plot") -> None:
    """Before any work: a figure goes to a .png file (or a stream), never into a .txt or a folder."""
    kind = target_kind(path, option)
    if kind == "stdout":
        raise OutputError(f"{option} {path}: expected a .png file name, found '-' (a figure is not written to stdout)")
    if kind != "stream" and path.suffix.lower() != ".png":
        raise OutputError(f"{option} {path}: the figure is a PNG: expected a file name ending in .png, found {path.suffix or 'no extension'!r}")


def write_text(text: str, output: Path | None, option: str = "--output") -> None:
    if output is None or str(output) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_bytes(text.encode(), output, option)


def write_bytes(data: bytes, output: Path | None, option: str = "--output") -> None:
    kind = target_kind(output, option)
    if kind == "stdout" or output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    if kind == "stream":
        with open(output, "wb") as handle:  # O_TRUNC is ignored by FIFOs and character devices
            handle.write(data)
        return
    replace_file(data, output, option)


def creation_mode() -> int:
    """0666 & ~umask: the mode open(2) gives a new file.  The umask can only be read by setting it, so it is set back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def replace_file(data: bytes, output: Path, option: str = "--output") -> None:
    """Write `data` to a temporary file beside the target and rename it over the target (symlinks resolved first)."""
    target = Path(os.path.realpath(output))
    directory = target.parent
    if not directory.is_dir():
        raise OutputError(f"{option} {output}: the folder {directory} does not exist")
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    except OSError as error:  # a read-only folder: the error would name the temporary file
        raise OSError(error.errno, f"cannot write in {directory} ({error.strerror or error})", f"{option} {output}") from None
    try:
        os.fchmod(fd, stat.S_IMODE(existing.st_mode) if existing else creation_mode())
        if existing is not None and os.geteuid() == 0:
            os.fchown(fd, existing.st_uid, existing.st_gid)  # root rewriting someone's file leaves it theirs
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except OSError as error:  # the temporary file's name means nothing to the user: name the option and the target
        Path(tmp).unlink(missing_ok=True)
        raise OSError(error.errno, f"cannot write ({error.strerror or error})", f"{option} {output}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
