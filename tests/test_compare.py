"""`iowatt compare`: what-if runs side by side, crossed (the default) or paired (--zip), with each column's ratio to the first.

Oracle: independent single runs of the same scenario with the same --set
overrides (the simulator is deterministic), and ratios computed here from them;
derived checkpoint-interval metrics against Daly's closed form.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from pathlib import Path

import pytest
from iowatt.scenarios.loader import apply_set, read_yaml, validate
from iowatt.scenarios.run import run_scenario
from typer.testing import CliRunner

from iowatt.cli import app

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios" / "library"
BASE = str(LIBRARY / "checkpoint_llama405b_8gpu.yaml")
runner = CliRunner()


def single_run(*assignments: str) -> dict:
    data = read_yaml(Path(BASE))
    for assignment in assignments:
        data = apply_set(data, assignment)
    document, _ = run_scenario(validate(data, "test"))
    return document["metrics"]


def compare_json(*args: str) -> dict:
    result = runner.invoke(app, ["compare", BASE, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_zip_pairs_values_by_position_and_matches_single_runs():
    doc = compare_json("--vary", "storage.device=micron-6550-ion,solidigm-d5-p5336", "--vary", "storage.power_state=PS1,PS0", "--zip")
    assert doc["formed"] == "2 cases, paired by position (--zip): storage.device (2) with storage.power_state (2)"
    cases = doc["cases"]
    assert [c["values"] for c in cases] == [
        {"storage.device": "micron-6550-ion", "storage.power_state": "PS1"},
        {"storage.device": "solidigm-d5-p5336", "storage.power_state": "PS0"},
    ]
    first = single_run("storage.device=micron-6550-ion", "storage.power_state=PS1")
    second = single_run("storage.device=solidigm-d5-p5336", "storage.power_state=PS0")
    for case, independent in zip(cases, (first, second), strict=True):
        for name, value in independent.items():
            assert case["metrics"][name] == pytest.approx(value, rel=1e-12), name
    for name, value in second.items():
        if first[name]:
            assert cases[1]["ratio"][name] == pytest.approx(value / first[name], rel=1e-12), name
        assert cases[0]["ratio"][name] in (1.0, None)


def test_two_vary_lists_cross_by_default_and_say_so():
    """Issue 36 item 3: two --vary lists give every combination (2 x 3 = 6 cases, not pairs), and the output says how many and how formed.

    Oracle: itertools.product of the lists, and an independent single run of the last combination."""
    result = runner.invoke(app, ["compare", BASE, "--vary", "storage.device=micron-6550-ion,solidigm-d5-p5336",
                                 "--vary", "storage.power_state=PS0,PS1,PS2", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # the JSON says how the cases were formed; stderr repeats it only for a person at a terminal
    assert doc["formed"] == "6 cases, every combination of storage.device (2) x storage.power_state (3)"
    expected = list(itertools.product(["micron-6550-ion", "solidigm-d5-p5336"], ["PS0", "PS1", "PS2"]))
    assert [(c["values"]["storage.device"], c["values"]["storage.power_state"]) for c in doc["cases"]] == expected
    last = single_run("storage.device=solidigm-d5-p5336", "storage.power_state=PS2")
    assert doc["cases"][-1]["metrics"]["save_checkpoint_duration_mean_seconds"] == pytest.approx(last["save_checkpoint_duration_mean_seconds"], rel=1e-12)


def test_failure_model_adds_daly_interval_goodput_and_endurance():
    doc = compare_json("--vary", "storage.count=1,2", "--nodes", "2048", "--node-mtbf-hours", "6330", "--restart-seconds", "600")
    mtbf = 6330.0 * 3600.0 / 2048.0
    for case in doc["cases"]:
        m = case["metrics"]
        delta = m["save_checkpoint_duration_mean_seconds"]
        x = delta / (2 * mtbf)
        daly = math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - delta
        assert m["checkpoint_interval_seconds"] == pytest.approx(daly, rel=1e-12)
        assert m["goodput"] == pytest.approx(daly / (mtbf * math.exp(600 / mtbf) * math.expm1((daly + delta) / mtbf)), rel=1e-12)
        # 415 GB per (interval + write) over count x 61.44 TB, WA 1 for sequential checkpoint files
        dwpd = 415e9 * 86400 / (daly + delta) / (case["values"]["storage.count"] * 61.44e12)
        assert m["drive_writes_per_day"] == pytest.approx(dwpd, rel=1e-9)
        assert m["endurance_years"] == pytest.approx(1.0 * 5.0 / dwpd, rel=1e-9)  # micron-6550-ion: 1 DWPD, 5 years
    # two striped drives halve the write time
    t1, t2 = (c["metrics"]["save_checkpoint_duration_mean_seconds"] for c in doc["cases"])
    assert t2 < t1


def test_csv_and_table_formats_carry_the_same_numbers(tmp_path):
    args = ["compare", BASE, "--vary", "storage.power_state=PS0,PS1"]
    result = runner.invoke(app, [*args, "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    doc = compare_json("--vary", "storage.power_state=PS0,PS1")
    assert len(rows) == 2 * len({n for c in doc["cases"] for n in c["metrics"]})
    saved = [r for r in rows if r["metric"] == "ssd_energy_J"]
    assert float(saved[1]["value"]) == pytest.approx(doc["cases"][1]["metrics"]["ssd_energy_J"], rel=1e-9)
    assert float(saved[1]["ratio_to_first"]) == pytest.approx(doc["cases"][1]["ratio"]["ssd_energy_J"], rel=1e-9)
    out = tmp_path / "cmp.txt"
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "ratio to the first column" in text and "storage.power_state=PS1" in text


def test_bad_input_is_one_clear_message():
    result = runner.invoke(app, ["compare", BASE, "--vary", "storage.device=micron-6550-ion,solidigm-d5-p5336", "--vary", "storage.power_state=PS0,PS1,PS2",
                                 "--zip"])
    assert result.exit_code == 2 and "lists of different lengths" in result.stderr and "--zip" in result.stderr
    result = runner.invoke(app, ["compare", BASE, "--vary", "storage.wheels=3,4"])
    assert result.exit_code == 2 and "--vary storage.wheels=3,4" in result.stderr and "Traceback" not in result.output
    result = runner.invoke(app, ["compare", BASE, "--vary", "storage.count=1,2", "--interval", "daly"])
    assert result.exit_code == 2 and "--nodes" in result.stderr
    result = runner.invoke(app, ["compare", BASE, "--vary", "storage.count=1,2", "--nodes", "8"])
    assert result.exit_code == 2 and "--node-mtbf-hours" in result.stderr


# --- a whole section as a value: local drive vs RAID array (issue 18 item 8) ----------------------------------

# md's stripe workers (group_thread_cnt 8): with its one raid5d thread md's page-by-page write path, not the three
# data drives, would bind the checkpoint's writes (docs/arrays.md)
RAID5 = {"kind": "raid", "level": 5, "count": 4, "device": "micron-6550-ion", "power_state": "PS1", "md_group_threads": 8}


def replaced_storage(storage: dict) -> dict:
    """Oracle: the scenario with its storage section replaced by hand, run on its own."""
    data = read_yaml(Path(BASE))
    data["system"]["storage"] = storage
    return run_scenario(validate(data, "test"))[0]["metrics"]


def same(case: dict, independent: dict) -> None:
    for name, value in independent.items():
        assert case[name] == pytest.approx(value, rel=1e-12), name


def test_vary_a_storage_section_from_yaml_files(tmp_path):
    """Before: `level` is not a field of a local drive, and a file name was not read as the section it names."""
    import yaml

    local, raid = tmp_path / "local.yaml", tmp_path / "raid5.yaml"
    local.write_text(yaml.safe_dump(read_yaml(Path(BASE))["system"]["storage"]))
    raid.write_text(yaml.safe_dump(RAID5))
    doc = compare_json("--vary", f"storage={local},{raid}")
    first, second = (c["metrics"] for c in doc["cases"])
    same(first, single_run())
    same(second, replaced_storage(RAID5))
    assert second["save_checkpoint_duration_mean_seconds"] < first["save_checkpoint_duration_mean_seconds"]  # 3 data drives vs 1


def test_vary_inline_sections_keeps_their_commas():
    raid = "{kind: raid, level: 5, count: 4, device: micron-6550-ion, power_state: PS1, md_group_threads: 8}"
    doc = compare_json("--vary", f"storage={raid},{{device: micron-6550-ion}}")
    assert len(doc["cases"]) == 2
    same(doc["cases"][0]["metrics"], replaced_storage(RAID5))


def test_a_missing_section_file_is_one_clear_error(tmp_path):
    result = runner.invoke(app, ["compare", BASE, "--vary", f"storage={tmp_path / 'nope.yaml'},{tmp_path / 'nope.yaml'}"])
    assert result.exit_code == 2 and "no such section file" in result.stderr and "Traceback" not in result.output
