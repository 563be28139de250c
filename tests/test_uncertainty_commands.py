"""`--uncertainty` on validate, compare, sweep and the oat method (docs/uncertainty.md).

Oracles: a ratio of a run to itself is 1 in every sample whatever is drawn (common random numbers), so its interval is
[1, 1] and it covers a published 1 and misses anything else; coverage and the mean interval score of a summary are
recomputed by hand from the rows; the oat surrogate is exact for a response additive in its inputs (a read's time is
size / rate with one uncertain input: its interval is the size range's quantiles over the rate).
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest
import yaml
from iowatt.models import catalog
from iowatt.models.uncertainty import Range
from iowatt.scenarios.loader import load
from iowatt.scenarios.uncertainty import Settings, propagate, summarise
from typer.testing import CliRunner

from iowatt.cli import app

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios" / "library"
CHECKPOINT = str(LIBRARY / "checkpoint_llama405b_8gpu.yaml")


def _table(tmp_path: Path) -> Path:
    itself = {"scenario": CHECKPOINT, "metric": "metrics.save_checkpoint_duration_mean_seconds"}
    rows = [
        {"id": "self.one", "ratio": {"numerator": itself, "denominator": itself}, "measured": 1.0, "source": "identity"},
        {"id": "self.two", "ratio": {"numerator": itself, "denominator": itself}, "measured": 2.0, "source": "identity"},
        {"id": "fio.bw", "scenario": str(LIBRARY / "amax" / "fio_5210.yaml"), "metric": "metrics.read_bw_bytes", "measured": 479e6,
         "source": "AMAX"},
    ]
    path = tmp_path / "table.yaml"
    path.write_text(yaml.safe_dump({"measurements": rows}))
    return path


def test_validate_scores_intervals(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(_table(tmp_path)), "--uncertainty", "--samples", "4", "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    rows = {r["id"]: r for r in document["rows"]}
    assert rows["self.one"]["interval"] == pytest.approx([1.0, 1.0]) and rows["self.one"]["covered"]
    assert not rows["self.two"]["covered"] and "mechanism is missing" in rows["self.two"]["interval_note"]
    # a miss by 1 with a zero-width interval at level 0.9 scores 2 / 0.1 x 1, over |x| = 2
    assert rows["self.two"]["interval_score"] == pytest.approx(2 / 0.1 * 1.0 / 2.0)
    low, high = rows["fio.bw"]["interval"]
    assert low < high  # the 5210's datasheet values carry their source's spread
    summary = document["summary"]["uncertainty"]
    assert summary["coverage"] == pytest.approx(sum(r["covered"] for r in rows.values()) / 3)
    assert summary["interval_score"] == pytest.approx(statistics.fmean(r["interval_score"] for r in rows.values()))
    assert set(summary) >= {"level", "n", "coverage", "median_relative_half_width", "interval_score", "predicted", "fitted", "restates"}


def test_bad_sampler_options_exit_2() -> None:
    for args in (["--method", "bootstrap"], ["--samples", "0"], ["--level", "0.3"]):
        result = CliRunner().invoke(app, ["run", CHECKPOINT, "--uncertainty", *args, "-f", "json"])
        assert result.exit_code == 2 and args[0] in result.output and "Traceback" not in result.output


def test_compare_and_sweep_gain_interval_columns(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["compare", CHECKPOINT, "--vary", "storage.fill=0,0.5", "--uncertainty", "--samples", "4",
                                      "--method", "oat", "-f", "json"])
    assert result.exit_code == 0, result.output
    for case in json.loads(result.stdout)["cases"]:
        metrics = case["metrics"]
        assert metrics["ssd_energy_J_low"] <= metrics["ssd_energy_J_high"] and metrics["uncertainty_failed"] == 0
    out = tmp_path / "s.csv"
    result = CliRunner().invoke(app, ["sweep", CHECKPOINT, "--grid", "storage.fill=0,0.5", "-o", str(out), "-j", "0", "--uncertainty",
                                      "--samples", "4", "--method", "oat"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 and all(float(r["ssd_energy_J_low"]) <= float(r["ssd_energy_J_high"]) for r in rows)


def test_oat_is_exact_for_an_additive_response() -> None:
    """A read's time is size / rate: additive (linear) in its one uncertain input, so the surrogate is the model."""
    scenario = load("amax/fio_9200", ["workload.rw=read", "workload.time_based=false", "workload.bs=1 MiB",
                                      "workload.size=8 GiB..32 GiB"])
    scenario.system.storage.device = catalog.drive_spec(scenario.system.storage.device).model_dump()
    result = propagate([scenario], Settings(method="oat"))
    time = summarise(result).metrics["job_runtime_seconds"]
    rate = result.baseline[0]["metrics"]["bw_bytes"]
    size = Range(8 * 2**30, 32 * 2**30)
    assert result.runs == 2 * len(result.inputs)  # the screening runs and nothing more
    # 4,096 Latin-hypercube draws: quantiles within one stratum (1/4096) of the exact ones
    assert time.low == pytest.approx(size.value_at(0.05) / rate, rel=2e-3)
    assert time.high == pytest.approx(size.value_at(0.95) / rate, rel=2e-3)
