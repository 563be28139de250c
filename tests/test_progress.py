"""Long commands show progress on a terminal and nothing elsewhere; parallel runs keep a fixed output (issue 18 item 7).

Oracles: a real pseudo-terminal (`script`, util-linux) for what a person sees;
the same command without a terminal for what logs and pipes get; the serial
run (--jobs 0) for what the parallel one must print, byte for byte.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from iowatt.cli import app

REPO = Path(__file__).resolve().parent.parent
AMAX = REPO / "scenarios" / "library" / "amax"
runner = CliRunner()


def tiny_study(tmp_path: Path) -> Path:
    """Three cheap fio scenarios of the AMAX study, in one section."""
    path = tmp_path / "tiny.yaml"
    runs = [{"label": d, "scenario": str(AMAX / f"fio_{d}.yaml")} for d in ("9200", "5210", "hdd")]
    path.write_text(yaml.safe_dump({"id": "tiny", "title": "Tiny", "sections": [
        {"title": "fio", "figure": "none", "runs": runs, "metrics": [{"label": "IOPS", "metric": "metrics.read_iops"}]}]}))
    return path


def on_a_terminal(command: list[str], cwd: Path) -> str:
    """Run `command` with stdout and stderr on a pseudo-terminal; return what the terminal received."""
    if shutil.which("script") is None:
        pytest.skip("`script` (util-linux) is not installed")
    line = " ".join(f"'{c}'" for c in command)
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    done = subprocess.run(["script", "-qec", line, "/dev/null"], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def iowatt() -> list[str]:
    return [sys.executable, "-m", "iowatt.cli"]


def test_reproduce_and_sweep_draw_progress_bars_on_a_terminal(tmp_path):
    shown = on_a_terminal([*iowatt(), "reproduce", str(tiny_study(tmp_path)), "--jobs", "0"], tmp_path)
    assert "reproduce" in shown and "3/3" in shown and "━" in shown, shown
    sweep = on_a_terminal([*iowatt(), "sweep", "checkpoint_llama405b_8gpu", "--grid", "storage.fill=0,0.5", "--set", "workload.size=4 GB",
                           "-o", str(tmp_path / "s.csv"), "--jobs", "0"], REPO)
    assert "sweep" in sweep and "2/2" in sweep and "━" in sweep, sweep


def test_no_bar_without_a_terminal(tmp_path):
    result = runner.invoke(app, ["reproduce", str(tiny_study(tmp_path)), "--jobs", "0"])
    assert result.exit_code == 0, result.output
    assert "━" not in result.stderr and "\x1b[" not in result.stderr and "\x1b[" not in result.stdout


def test_parallel_reproduce_prints_what_the_serial_one_prints(tmp_path):
    study = tiny_study(tmp_path)
    serial = runner.invoke(app, ["reproduce", str(study), "--jobs", "0", "--out", str(tmp_path / "a")])
    parallel = runner.invoke(app, ["reproduce", str(study), "--jobs", "2", "--out", str(tmp_path / "b")])
    assert serial.exit_code == parallel.exit_code == 0, serial.output + parallel.output
    assert serial.stdout == parallel.stdout
    assert (tmp_path / "a" / "tiny" / "fio.csv").read_bytes() == (tmp_path / "b" / "tiny" / "fio.csv").read_bytes()


def test_reproduce_offers_jobs_defaulting_to_the_core_count():
    result = runner.invoke(app, ["reproduce", "--help"])
    assert "--jobs" in result.stdout and "CPU count" in result.stdout
