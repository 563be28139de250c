"""A preset the scenario silently overrides is an error; `--dry-run` shows what the scenario implies (issue 18 item 5).

Oracles: MLPerf Storage's llama3-70b checkpoint preset (130 GiB of bf16
weights, so 130 GiB / 2 parameters; tp 8 x dp 8 = 64 ranks) and the byte
counts per parameter (2 for bf16 weights, 12 for Adam state) by definition;
a YAML dry run loads back as the same scenario.
"""

from __future__ import annotations

import json

import pytest
import yaml
from iowatt.scenarios.loader import load
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()
DEMO = "checkpoint_llama405b_8gpu"
GiB = 2**30


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_a_model_override_shadowed_by_the_scenarios_size_is_an_error_naming_the_fix():
    """Before: the 415 GB `size` of the scenario won and the llama3_70b answer was the 405B one."""
    result = invoke("run", DEMO, "--set", "workload.model=llama3_70b")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "workload.size (415 GB)" in result.stderr and "--set workload.size=null" in result.stderr
    compare = invoke("compare", DEMO, "--vary", "workload.model=llama3_70b,llama3_8b")
    assert compare.exit_code == 2 and "workload.size=null" in compare.stderr


def test_dry_run_json_shows_the_presets_hidden_choices(tmp_path):
    result = invoke("run", DEMO, "--set", "workload.model=llama3_70b", "--set", "workload.size=null", "--dry-run", "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    work = document["derived"]["workload"]
    assert (work["tp"], work["pp"], work["dp"], work["ranks"]) == (8, 1, 8, 64)
    assert work["parameters"] == pytest.approx(130 * GiB / 2)
    assert work["checkpoint_bytes"] == pytest.approx(130 * GiB / 2 * (2 + 12))
    assert document["scenario"]["workload"]["model"] == "llama3_70b"
    assert "64 ranks" in result.stderr and "system.gpus.count 8" in result.stderr  # the note on a 64-writer job on 8 GPUs


@pytest.mark.parametrize(("name", "fmt"), [("plan.json", "json"), ("plan.yaml", "yaml")])
def test_dry_run_honours_the_output_file_and_its_format(tmp_path, name, fmt):
    out = tmp_path / name
    result = invoke("run", DEMO, "--dry-run", "-o", str(out))
    assert result.exit_code == 0 and result.stdout == "", result.output
    text = out.read_text()
    if fmt == "json":
        document = json.loads(text)
        assert document["derived"]["workload"]["checkpoint_bytes"] == pytest.approx(415e9)
        assert document["derived"]["storage"]["usable_capacity_TB"] == pytest.approx(61.44)
    else:
        again = load(yaml.safe_load(text))  # the YAML is a scenario file again; the derived values are comments
        assert again.model_dump(mode="json") == load(DEMO).model_dump(mode="json")
        assert "#     ranks: 8" in text


def test_dry_run_refuses_a_table():
    result = invoke("run", DEMO, "--dry-run", "-f", "table")
    assert result.exit_code == 2 and "--format: expected one of yaml, json" in result.stderr
