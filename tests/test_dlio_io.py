"""DLIO files in and out: `iowatt run --dlio CONFIG.yaml`, `--format dlio -o DIR`, and ingesting DLIO checkpoint output.

Oracles: the real DLIO run in tests/fixtures/dlio/unet3d_tiny (its summary.json and per_epoch_stats.json give
the key sets and shapes a DLIO reader expects: which values are lists, strings, numbers, mappings); DLIO's
statscounter key set for checkpointing (save_/load_checkpoint_io_mean_GB_per_second, _stdev_,
_duration_mean_seconds, _stdev_, checkpoint_size_GB); DLIO's arithmetic (a summary mean is the mean of the
per-checkpoint entries); the workload files under tests/fixtures/dlio/workloads are written for these tests
in DLIO's format, with their expected mapping worked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from iowatt.calibration import bundle
from iowatt.scenarios.dliojob import parse_workload, read_workload_file
from iowatt.scenarios.loader import ScenarioError

from tests.test_calibration_dlio import invoke, refused

DLIO = Path(__file__).resolve().parent / "fixtures" / "dlio"
REAL = DLIO / "unet3d_tiny"
WORKLOADS = DLIO / "workloads"
DEVICE = ["--set", "storage.device=micron-6550-ion"]
CHECKPOINT_KEYS = {f"{op}_checkpoint_{k}" for op in ("save", "load")
                   for k in ("io_mean_GB_per_second", "io_stdev_GB_per_second", "duration_mean_seconds", "duration_stdev_seconds")}
def _shape(value: object) -> object:
    """A JSON value's shape: mappings by key, lists by their items' type, scalars by type (ints count as numbers)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return ["list", sorted({type(x).__name__.replace("int", "float") for x in value})]
    return type(value).__name__.replace("int", "float")


def test_the_fixture_workload_maps_key_by_key():
    workload, warnings = read_workload_file(REAL.parent / "unet3d_tiny_workload.yaml")
    assert warnings == []
    assert workload == {
        "kind": "dlio", "accelerator": "other", "model": "unet3d", "framework": "pytorch", "num_files": 16, "samples_per_file": 1,
        "record_length": 1048576.0, "record_length_stdev": 262144.0, "format": "npz", "batch_size": 2, "read_threads": 2, "epochs": 2,
        "computation_time": 0.05, "au_target": 0.9,
    }


def test_parquet_column_selection_sets_the_bytes_and_requests():
    """2 of 4 columns read: (1 + 4 x 4) of 26 bytes a row; a selected column chunk is 4096 rows x 17 B / 2 columns."""
    workload, _ = read_workload_file(WORKLOADS / "parquet_columns.yaml")
    assert workload["bytes_read_fraction"] == pytest.approx(17 / 26)
    assert workload["read_block_size"] == pytest.approx(4096 * 17 / 2)
    assert workload["read_pattern"] == "rand" and workload["record_length"] == 26


def test_transformer_checkpoint_maps_to_the_mlperf_procedure():
    workload, _ = read_workload_file(WORKLOADS / "transformer_checkpoint.yaml")
    assert workload["kind"] == "checkpoint" and workload["mlperf"] == {"writes": 2, "reads": 2, "runs": 1}
    assert (workload["tp"], workload["pp"], workload["dp"], workload["zero_stage"]) == (1, 1, 8, 3)
    # embedding + LM head 2 x 32000 x 2048, 16 layers of (2 x 2048 norms + 2048 x (2048 + 2 x 512) QKV + 2048^2 + 3 x 8192 x 2048), final norm
    per_layer = 2 * 2048 + 2048 * (2048 + 2 * 512) + 2048 * 2048 + 3 * 8192 * 2048
    assert workload["parameters"] == 2 * 32000 * 2048 + 16 * per_layer + 2048
    assert workload["interval"] == 1 and workload["weight_bytes_per_param"] == 2 and workload["optimizer_bytes_per_param"] == 12


def test_unknown_keys_are_named_or_warned():
    data = {"model": {"name": "unet3d"}, "workflow": {"train": True}, "reader": {"batch_size": 2, "fancy_cache": 3},
            "train": {"computation_time": 0.1, "computation_time_stdev": 0.01}}
    with pytest.raises(ScenarioError) as error:
        parse_workload(data, "w.yaml")
    assert "reader.fancy_cache" in str(error.value) and "train.computation_time_stdev" in str(error.value)
    workload, warnings = parse_workload(data, "w.yaml", lenient=True)
    assert workload["batch_size"] == 2 and any("reader.fancy_cache" in w for w in warnings)
    with pytest.raises(ScenarioError, match=r"dataset\.compression"):
        parse_workload({**data, "reader": {"batch_size": 2}, "train": {"computation_time": 0.1}, "dataset": {"compression": "gzip"}}, "w.yaml")


def test_cli_refuses_bad_dlio_input(tmp_path):
    refused(invoke("run", "--dlio", tmp_path / "missing.yaml", *DEVICE), "no such workload file")
    refused(invoke("run", "--dlio", WORKLOADS / "small_files.yaml"), "storage.device")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {name: unet3d}\nworkflow: {train: False}\n")
    refused(invoke("run", "--dlio", bad, *DEVICE), "workflow")
    extra = tmp_path / "extra.yaml"
    extra.write_text((WORKLOADS / "small_files.yaml").read_text() + "\nprofiler:\n  iostat_devices: [nvme0n1]\n")
    refused(invoke("run", "--dlio", extra, *DEVICE), "profiler.iostat_devices")
    lenient = invoke("run", "--dlio", extra, "--dlio-lenient", *DEVICE, "--set", "workload.search_au=false", "--format", "json")
    assert lenient.exit_code == 0 and "profiler.iostat_devices" in lenient.stderr


def test_format_dlio_needs_a_folder(tmp_path):
    refused(invoke("run", "--dlio", WORKLOADS / "small_files.yaml", *DEVICE, "--format", "dlio"), "-o DIR")
    file = tmp_path / "f.json"
    file.write_text("{}")
    refused(invoke("run", "--dlio", WORKLOADS / "small_files.yaml", *DEVICE, "--format", "dlio", "-o", file), "found a file")


def test_training_output_has_dlios_keys_and_shapes(tmp_path):
    out = tmp_path / "run"
    result = invoke("run", "--dlio", REAL.parent / "unet3d_tiny_workload.yaml", *DEVICE, "--set", "workload.accelerators=2",
                    "--set", "workload.search_au=false", "--format", "dlio", "-o", out)
    assert result.exit_code == 0, result.output
    mine, real = json.loads((out / "summary.json").read_text()), json.loads((REAL / "summary.json").read_text())
    assert set(mine) == set(real) and set(mine["metric"]) == set(real["metric"])
    for key in ("metric", "num_accelerators", "num_hosts", "epochs", "host_memory_GB", "potential_caching", "host_cpu_count", "data_size_per_host_GB"):
        assert _shape(mine[key]) == _shape(real[key]), key
    assert mine["metric"]["train_au_meet_expectation"] in ("success", "fail") and len(mine["metric"]["train_au_percentage"]) == 2
    epochs, real_epochs = json.loads((out / "per_epoch_stats.json").read_text()), json.loads((REAL / "per_epoch_stats.json").read_text())
    assert _shape(epochs) == _shape(real_epochs)


def test_checkpoint_output_round_trips_through_ingest(tmp_path):
    out, ingested = tmp_path / "run", tmp_path / "bundle"
    result = invoke("run", "--dlio", WORKLOADS / "transformer_checkpoint.yaml", *DEVICE, "--format", "dlio", "-o", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["metric"]) == CHECKPOINT_KEYS | {"checkpoint_size_GB"}
    assert summary["num_accelerators"] == 8
    result = invoke("collect", "dlio", "--ingest", out, "--out", ingested)
    assert result.exit_code == 0, result.output
    rows = bundle.read_csv(ingested / "tables" / "checkpoints.csv")
    assert [r["operation"] for r in rows] == ["save", "save", "load", "load"]
    flat = bundle.read_csv(ingested / "tables" / "summary.csv")[0]
    for op in ("save", "load"):
        mine = [r for r in rows if r["operation"] == op]
        mean_rate = sum(float(r["throughput_GiB_per_second"]) for r in mine) / len(mine)
        mean_seconds = sum(float(r["duration_seconds"]) for r in mine) / len(mine)
        assert float(flat[f"{op}_checkpoint_io_mean_GB_per_second"]) == pytest.approx(mean_rate, rel=1e-9)
        assert float(flat[f"{op}_checkpoint_duration_mean_seconds"]) == pytest.approx(mean_seconds, rel=1e-9)
        # DLIO's rate is the checkpoint's size over the duration, in GiB
        for r in mine:
            assert float(r["throughput_GiB_per_second"]) * float(r["duration_seconds"]) == pytest.approx(float(flat["checkpoint_size_GB"]), rel=1e-9)
