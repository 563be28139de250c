"""The README and docs answer a newcomer's first questions with commands that work (issue 18 items 12 and 14).

Oracles: the Makefile's own demo recipe (what `make demo` runs); DLIO's
definition of its "MB/s" (samples/s x record bytes / 2^20, MiB/s); the commands
the docs print, run as written.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from iowatt.models import catalog
from typer.testing import CliRunner

from iowatt.cli import app

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
runner = CliRunner()


def demo_recipe() -> list[str]:
    lines = (REPO / "Makefile").read_text().splitlines()
    start = lines.index(next(x for x in lines if x.startswith("demo:")))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_the_readme_says_everything_make_demo_runs():
    """Before: 'runs the headline checkpoint scenario and prints its table', silent about `reproduce all` (~27 s)."""
    said = README[README.index("make demo"):README.index("make test")]
    for command in demo_recipe():
        verb = re.search(r"iowatt (\w+( all)?)", command)
        assert verb and verb.group(1) in said, (command, said)
    assert re.search(r"\d+(-\d+)? s", said), "the README gives the demo's duration"


def test_how_many_accelerators_a_drive_feeds_as_the_readme_asks():
    answer = README[README.index("How many accelerators"):]
    assert "max_accelerators_au90" in answer
    command = re.search(r"`\.venv/bin/iowatt (run [^`]+)`", answer).group(1)
    result = runner.invoke(app, shlex.split(command))
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["max_accelerators_au90"] >= 1 and metrics["train_au_percentage"] > 0


def test_the_profile_commands_of_docs_calibration_run(tmp_path):
    """Before: docs/calibration.md said profiles were not usable in scenarios."""
    text = (REPO / "docs" / "calibration.md").read_text()
    block = text[text.index("## Using a profile"):]
    block = block[block.index("```sh") + 5: block.index("```", block.index("```sh") + 5)]
    spec = catalog.lookup("ssd", "micron-7450-pro").spec.model_dump(mode="json", exclude={"name"})
    (tmp_path / "my-disk.yaml").write_text(yaml.safe_dump({"kind": "ssd", "entries": {"my-disk": spec}}))
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines() if line.strip()]
    assert len(commands) >= 3
    for command in commands:
        words = shlex.split(command.replace("~/profiles", str(tmp_path)).replace("profile:my-disk.yaml", f"profile:{tmp_path / 'my-disk.yaml'}"))
        env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=.*", w))
        args = [w for w in words if not re.fullmatch(r"[A-Z_]+=.*", w)][1:]  # drop the env assignments and `iowatt`
        result = runner.invoke(app, [*args, "-f", "json"] if args[0] == "run" else args, env=env)
        assert result.exit_code == 0, (command, result.output)
    assert "not usable" not in text and "needs the catalog to read profile files" not in text


@pytest.fixture(scope="module")
def dlio_document() -> dict:
    result = runner.invoke(app, ["run", "unet3d_max_h100_6550", "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_dlio_throughput_has_a_twin_named_for_its_unit(dlio_document):
    """DLIO's train_io_mean_MB_per_second is MiB/s; the twin holds the same value and says so."""
    metrics, units = dlio_document["metrics"], dlio_document["units"]
    record = dlio_document["dlio"]["resolved"]["record_length"]
    expected = metrics["train_throughput_mean_samples_per_second"] * record / 2**20
    assert metrics["train_io_mean_MiB_per_second"] == pytest.approx(expected, rel=1e-12)
    assert metrics["train_io_mean_MB_per_second"] == metrics["train_io_mean_MiB_per_second"]  # DLIO's key, kept for compatibility
    assert units["train_io_mean_MiB_per_second"] == "MiB/s" and "MiB/s" in units["train_io_mean_MB_per_second"]
    assert "train_io_mean_MiB_per_second" in README and "2^20" in README


def test_the_table_names_the_unit_of_the_mib_metrics():
    text = runner.invoke(app, ["run", "unet3d_max_h100_6550", "-f", "table"], terminal_width=120).stdout
    line = next(x for x in text.splitlines() if "train_io_mean_MB_per_second" in x)
    assert "MiB/s" in line
