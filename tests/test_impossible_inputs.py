"""Impossible scenarios are refused before they run (issue 18 item 4), and library names resolve in subfolders (item 9).

Oracles: capacity arithmetic from the catalog's datasheet capacities and the
definitions of RAID usable space ((n-1)/n for RAID 5) and of fill; the YAML
1.2 rule that mapping keys are unique; the file system for the library's
names.  Each refusal is exit 2 with one message naming the field and both
sizes, never a run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from iowatt.models import catalog, strict_yaml
from iowatt.scenarios import loader
from iowatt.scenarios.loader import ScenarioError, load
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()
DRIVE = "micron-7450-pro"


def capacity_bytes(name: str = DRIVE) -> float:
    return float(catalog.lookup("ssd", name).spec.capacity_TB) * 1e12


def scenario(storage: dict, workload: dict, server: dict | None = None) -> dict:
    return {"name": "t", "system": {"server": server or {}, "gpus": {"count": 8}, "storage": storage}, "workload": workload}


def checkpoint(size: float, **more) -> dict:
    return {"kind": "checkpoint", "size": size, "ranks": 8, **more}


def test_a_checkpoint_larger_than_the_drive_names_both_sizes():
    """The issue's case: a 70 TB checkpoint on one 61.44 TB drive ran (8,475 s) and printed a time."""
    result = runner.invoke(app, ["run", "checkpoint_llama405b_8gpu", "--set", "workload.size=70 TB"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "workload.size" in result.stderr and "70 TB" in result.stderr and "61.44 TB" in result.stderr


@pytest.mark.parametrize(("fraction", "fits"), [(0.99, True), (1.01, False)])
def test_raid5_holds_n_minus_one_drives_of_data(fraction, fits):
    usable = 3 * capacity_bytes()  # RAID 5 over 4 drives: one drive's worth of parity
    data = scenario({"kind": "raid", "level": 5, "count": 4, "device": DRIVE}, checkpoint(fraction * usable))
    if fits:
        load(data)
    else:
        with pytest.raises(ScenarioError, match=r"workload\.size: expected at most .* found one checkpoint"):
            load(data)


def test_fill_and_kept_checkpoints_count_against_the_space():
    half = 0.5 * capacity_bytes()
    load(scenario({"device": DRIVE, "fill": 0.5}, checkpoint(0.99 * half)))
    with pytest.raises(ScenarioError, match=r"50% of it already holding data \(system\.storage\.fill\)"):
        load(scenario({"device": DRIVE, "fill": 0.5}, checkpoint(1.01 * half)))
    with pytest.raises(ScenarioError, match=r"workload\.count: .* found 3 checkpoints kept side by side"):
        load(scenario({"device": DRIVE}, checkpoint(0.4 * capacity_bytes(), count=3)))


def test_a_dataset_larger_than_the_storage_is_refused():
    data = scenario({"device": DRIVE}, {"kind": "dlio", "model": "unet3d", "num_files": 10**7, "search_au": False})
    with pytest.raises(ScenarioError, match=r"workload\.num_files: expected at most .* found the dataset \(10000000 files"):
        load(data)


@pytest.mark.parametrize("memory", ["1 KB", "512 MiB", "5 PiB"])
def test_absurd_server_memory_is_bounded_with_the_reason(memory):
    result = runner.invoke(app, ["run", "checkpoint_llama405b_8gpu", "--set", f"server.memory={memory}"])
    assert result.exit_code == 2 and "system.server.memory: expected between 1 GiB" in result.stderr
    assert "physical address limit" in result.stderr and "Traceback" not in result.output


def test_duplicate_keys_are_an_error_with_their_lines(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(f"name: dup\nsystem:\n  storage:\n    device: {DRIVE}\nworkload:\n  kind: checkpoint\n  size: 415 GB\n  size: 70 TB\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2, result.output
    assert "line 8" in result.stderr and "duplicate key 'size' (first given at line 7)" in result.stderr
    assert yaml.safe_load(path.read_text())["workload"]["size"] == "70 TB"  # what PyYAML alone would have run


def test_duplicate_keys_in_a_sweep_file_and_the_catalog_loader(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("scenario: checkpoint_llama405b_8gpu\ngrid:\n  storage.fill: [0, 0.5]\n  storage.fill: [0.9]\n")
    result = runner.invoke(app, ["sweep", str(sweep), "-o", str(tmp_path / "s.csv"), "--jobs", "0"])
    assert result.exit_code == 2 and "duplicate key 'storage.fill'" in result.stderr and not (tmp_path / "s.csv").exists()
    with pytest.raises(strict_yaml.DuplicateKeyError, match="first given at line 1"):
        strict_yaml.load("a: 1\nb: {c: 2}\na: 3\n")
    assert strict_yaml.load("base: &b {x: 1}\nmore:\n  <<: *b\n  y: 2\n") == {"base": {"x": 1}, "more": {"x": 1, "y": 2}}


def test_a_bare_library_name_resolves_in_its_subfolder():
    """Before: `unet3d_max_h100_6550` (in scenarios/library/micron6550_vs_p5336/) was 'no such scenario file'."""
    result = runner.invoke(app, ["run", "unet3d_max_h100_6550", "--dry-run"])
    assert result.exit_code == 0, result.output
    found = sorted(loader.LIBRARY_DIR.rglob("unet3d_max_h100_6550.yaml"))
    assert len(found) == 1 and loader.resolve_path("unet3d_max_h100_6550") == found[0]


def test_an_ambiguous_bare_name_lists_the_candidates(tmp_path, monkeypatch):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.yaml").write_text("name: same\n")
    monkeypatch.setattr(loader, "LIBRARY_DIR", tmp_path)
    with pytest.raises(ScenarioError, match=r"same: expected one library scenario of that name, found 2: a/same\.yaml, b/same\.yaml"):
        loader.resolve_path("same")
    assert loader.resolve_path("nowhere") == Path("nowhere")  # unknown names still end in 'no such scenario file'
