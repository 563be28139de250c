"""`iowatt run` from the console script registers only the commands iowatt/cli.py defines (start-up, issue 33).

Oracle: click's dispatch, which invokes the one command named on the command line; every other invocation (help,
another command, `from iowatt.cli import app` in tests and tools) must see every command family.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from iowatt.cli import _needs_extensions


def test_only_the_console_script_running_its_own_commands_skips_the_other_families():
    assert not _needs_extensions(["/venv/bin/iowatt", "run", "checkpoint_llama405b_8gpu"])
    assert not _needs_extensions(["/venv/bin/iowatt", "schema"])
    assert _needs_extensions(["/venv/bin/iowatt", "validate", "table.yaml"])
    assert _needs_extensions(["/venv/bin/iowatt", "--help"])
    assert _needs_extensions(["/venv/bin/iowatt"])
    assert _needs_extensions(["/usr/bin/pytest", "run"])  # not the console script


def test_a_run_from_the_console_script_still_works_and_help_still_lists_every_family():
    script = Path(sys.executable).with_name("iowatt")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "iowatt.cli"]
    ran = subprocess.run([*command, "run", "checkpoint_llama405b_8gpu", "-f", "csv"], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert "name" in ran.stdout.splitlines()[0]
    listed = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False)
    assert listed.returncode == 0
    for family in ("validate", "sweep", "calibrate", "reproduce"):
        assert family in listed.stdout


def test_a_checkpoint_run_without_jitter_never_loads_numpy():
    """numpy is ~0.1 s of a ~0.4 s `iowatt run`; a checkpoint that draws no jitter needs none of it (its seeded generator
    is made on first use, simulator.workloads.RunContext).  Oracle: sys.modules of a fresh process after the run."""
    probe = (
        "import sys\n"
        "sys.argv = ['iowatt', 'run', 'checkpoint_llama405b_8gpu', '-f', 'json', '-o', sys.argv[1]]\n"
        "from iowatt.cli import app\n"
        "try:\n    app()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('numpy' in sys.modules)\n"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        ran = subprocess.run([sys.executable, "-c", probe, str(Path(folder) / "out.json")], capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "False"
