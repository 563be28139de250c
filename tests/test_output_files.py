"""`-o` writes into what it names (issue 18 item 2).

Oracles: POSIX file semantics, read back with os.stat/os.lstat: a regular
file is replaced atomically (rename) and a new one gets mode 0666 & ~umask
(open(2)); a symlink stays a symlink and its target gets the data; a FIFO, a
pipe (`-o >(jq .)` is /dev/fd/N) and a character device stay what they are and
receive the bytes as a stream; `-` is stdout.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.output import write_text

runner = CliRunner()
SCENARIO = "checkpoint_llama405b_8gpu"


def schema_text() -> str:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    return result.stdout


class Reader(threading.Thread):
    """Reads a FIFO or pipe to its end, as `jq` would."""

    def __init__(self, path: Path | None = None, fd: int | None = None) -> None:
        super().__init__(daemon=True)
        self.path, self.fd, self.data = path, fd, b""

    def run(self) -> None:
        if self.fd is not None:
            with os.fdopen(self.fd, "rb") as handle:
                self.data = handle.read()
        else:
            with open(self.path, "rb") as handle:  # type: ignore[arg-type]
                self.data = handle.read()


def test_a_symlink_stays_a_link_and_its_target_gets_the_output(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    result = runner.invoke(app, ["schema", "-o", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == schema_text()


def test_a_fifo_stays_a_fifo_and_its_reader_gets_the_output(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    reader.start()
    result = runner.invoke(app, ["schema", "-o", str(fifo)])
    reader.join(60)  # a guard against a hang, not a timing assertion
    assert result.exit_code == 0, result.output
    assert not reader.is_alive() and reader.data.decode() == schema_text()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_process_substitution_is_a_pipe_written_as_a_stream():
    """`iowatt run X -o >(jq .)` hands iowatt /dev/fd/N, a pipe with no extension: JSON goes into it."""
    read_end, write_end = os.pipe()
    reader = Reader(fd=read_end)
    reader.start()
    try:
        result = runner.invoke(app, ["run", SCENARIO, "-o", f"/dev/fd/{write_end}"])
    finally:
        os.close(write_end)
    reader.join(60)
    assert result.exit_code == 0, result.output
    assert json.loads(reader.data)["metrics"]["checkpoint_size_GB"] == pytest.approx(415.0)


def test_a_character_device_stays_a_device(tmp_path):
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the same device as /dev/null
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs root")
    result = runner.invoke(app, ["schema", "-o", str(node)])
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 3)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_get_0666_minus_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_text("x\n", tmp_path / "new.txt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o666 & ~umask


def test_a_replaced_regular_file_keeps_its_mode_and_a_failed_write_leaves_it_whole(tmp_path, monkeypatch):
    path = tmp_path / "kept.json"
    path.write_text("previous")
    path.chmod(0o640)
    assert runner.invoke(app, ["schema", "-o", str(path)]).exit_code == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640 and path.read_text() == schema_text()
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]  # no temporary file left beside it

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_text("new text that never lands", path)
    assert path.read_text() == schema_text() and [p.name for p in tmp_path.iterdir()] == ["kept.json"]


def test_dash_is_stdout():
    result = runner.invoke(app, ["schema", "-o", "-"])
    assert result.exit_code == 0 and result.stdout == schema_text()


def test_a_directory_is_refused(tmp_path):
    result = runner.invoke(app, ["run", SCENARIO, "-o", str(tmp_path), "-f", "json"])
    assert result.exit_code == 2 and "found a directory" in result.stderr and "Traceback" not in result.output


def test_a_sweep_streams_its_csv_into_a_fifo(tmp_path):
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    reader.start()
    result = runner.invoke(app, ["sweep", SCENARIO, "-o", str(fifo), "--grid", "storage.fill=0,0.5", "--set", "workload.size=4 GB", "--jobs", "0"])
    reader.join(60)
    assert result.exit_code == 0, result.output
    lines = reader.data.decode().splitlines()
    assert lines[0].startswith("case,storage.fill,scenario_hash") and len(lines) == 3
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
