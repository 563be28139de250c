"""Every `.venv/bin/iowatt ...` command in the README's code blocks runs as printed (issue 36 item 2).

Each command runs through bash, as a reader pastes it, in a fresh folder that holds what a clone has at its root
(`examples/`, `scenarios/`) and a `.venv/bin/iowatt` that runs this interpreter's iowatt.  A command that reads a
file an earlier command writes (`-o my.yaml`, then `--profile my.yaml`) gets that command run first.  Exit status
0 and no traceback is the oracle: the README's own promise.  Only what the issue allows is changed: a command that
needs fio is skipped where fio is missing, the Dask and check-machine ones are skipped with the reason, and a long
one may get a `--set` of a smaller size appended (never a change of the README).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
COMMAND = ".venv/bin/iowatt"
OUTPUT_OPTIONS = ("-o", "--output", "--out")
# (a piece of the command, why it is not run here)
SKIPPED = (
    ("--scheduler-file", "needs a running Dask scheduler and its scheduler file"),
    ("check-machine", "needs DLIO 2.0 and minutes of real fio and DLIO runs (tests/test_realcheck.py runs it, marked realhw)"),
)
NEEDS_FIO = ("collect fio",)
# (a piece of the command, --set appended to make it shorter): the issue allows only this
SHORTER = (("--dlio examples/retinanet_b200.yaml", "--set workload.total_training_steps=20"),)
# whole-table and whole-study commands: tens of seconds of CPU each
SLOW = ("validate scenarios/validation/published.yaml", "reproduce all", "collect fio")


def readme_commands() -> list[str]:
    """The README's command lines, in order, without their trailing comments."""
    commands, inside = [], False
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and COMMAND in line:
            commands.append(re.sub(r"\s+#\s.*$", "", line).strip())
    return commands


COMMANDS = readme_commands()


def _outputs(command: str) -> set[str]:
    words = shlex.split(command)
    return {words[i + 1].rstrip("/") for i, w in enumerate(words[:-1]) if w in OUTPUT_OPTIONS}


def prerequisites(command: str, earlier: list[str]) -> list[str]:
    """The earlier commands whose outputs this one reads, each after its own prerequisites."""
    needed: list[str] = []
    words = {w.rstrip("/") for w in shlex.split(command)} - _outputs(command)
    for i, before in enumerate(earlier):
        if _outputs(before) & words:
            needed += [c for c in prerequisites(before, earlier[:i]) if c not in needed] + [before]
    return needed


def _skip_reason(command: str, chain: list[str]) -> str | None:
    for step in chain:
        for piece, why in SKIPPED:
            if piece in step:
                return why if step == command else f"reads what `{step}` writes, which is not run here: {why}"
        if any(piece in step for piece in NEEDS_FIO) and shutil.which("fio") is None:
            return "needs fio (apt-get install fio)"
        if "--plot" in step and importlib.util.find_spec("matplotlib") is None:
            return "--plot needs matplotlib (pip install 'iowatt[plots]')"
    return None


def _case(index: int, command: str) -> object:
    chain = [*prerequisites(command, COMMANDS[:index]), command]
    marks = [pytest.mark.slow] if any(piece in step for step in chain for piece in SLOW) else []
    marks += [pytest.mark.live] if any(piece in step for step in chain for piece in NEEDS_FIO) else []
    words = shlex.split(command)
    return pytest.param(index, command, marks=marks, id=f"{index:02d}-{words[words.index(COMMAND) + 1]}")


def test_the_readme_has_commands_and_names_only_files_the_repository_has():
    """Item 2: the README named job.fio, retinanet_b200.yaml, local.yaml and raid5.yaml, none in the repository. Every
    file a command reads (a word ending .fio, .yaml or .yml, alone or in KEY=A,B) is in the repository or written
    by an earlier command."""
    assert len(COMMANDS) >= 15
    for index, command in enumerate(COMMANDS):
        written = {out for before in COMMANDS[:index] for out in _outputs(before)} | _outputs(command)
        for word in shlex.split(command):
            for path in re.split(r"[=,]", word):
                if path.endswith((".fio", ".yaml", ".yml")) and path not in written:
                    assert (REPO / path).is_file(), f"{command}: {path} is not in the repository"


def _shell(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    for piece, extra in SHORTER:
        if piece in command:
            command = f"{command} {extra}"
    env = {**os.environ, "COLUMNS": "160", "MPLBACKEND": "Agg"}
    return subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    """A folder laid out like the repository's root, whose `.venv/bin/iowatt` is this interpreter's iowatt."""
    for name in ("examples", "scenarios"):
        (tmp_path / name).symlink_to(REPO / name)
    script = tmp_path / ".venv" / "bin" / "iowatt"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "from iowatt.cli import app; app()" "$@"\n')
    script.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize(("index", "command"), [_case(i, c) for i, c in enumerate(COMMANDS)])
def test_a_readme_command_runs_as_printed(index: int, command: str, clone: Path):
    """Item 2: each command exits 0 with no traceback (after the earlier commands whose files it reads)."""
    chain = [*prerequisites(command, COMMANDS[:index]), command]
    why = _skip_reason(command, chain)
    if why:
        pytest.skip(why)
    if any(piece in step for step in chain for piece in NEEDS_FIO):
        from iowatt.calibration.target import backing_of

        if backing_of(clone).memory:
            pytest.skip(f"the temporary folder is memory-backed here ({backing_of(clone).describe()}); collect refuses it")
    for step in chain:
        done = _shell(step, clone)
        assert done.returncode == 0 and "Traceback" not in done.stderr, f"{step}\nexit {done.returncode}\n{done.stderr[-2000:]}"
