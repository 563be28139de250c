"""The MLPerf Storage v3.0 library (scenarios/library/mlperf_storage_v3): each scenario runs and reports its headline.

Oracles: the metrics' definitions (DLIO's MiB/s, the AU ceiling c / (c + o), DLIO's GiB/s = size / duration) and
the drives' own laws: a drive that serves more bytes per second at the workload's request size (models.ssd, from
datasheet ceilings) cannot keep fewer accelerators at the target, nor save or load a checkpoint more slowly.
Runs are shrunk with --set (fewer steps, one run of two checkpoints): the laws do not change with the count.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from iowatt.models import catalog
from iowatt.models.ssd import read_seconds_per_byte, write_seconds_per_byte
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "mlperf_storage_v3"
TRAINING = sorted(LIB.glob("*_b200_gen*.yaml"))
CHECKPOINTS = sorted(LIB.glob("checkpoint_*.yaml"))
SHRINK = {"dlio": ["workload.total_training_steps=4", "workload.search_steps=8"],
          "checkpoint": ["workload.mlperf.runs=1", "workload.mlperf.writes=2", "workload.mlperf.reads=2"]}


def _run(path: Path) -> dict:
    scenario = load(path, [])
    return run_scenario(load(path, SHRINK[scenario.workload.kind]))[0]


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    return {p.stem: _run(p) for p in [*TRAINING, *CHECKPOINTS]}


def test_the_library_has_every_v3_workload_on_both_drives():
    names = {p.stem for p in TRAINING}
    for model in ("unet3d", "retinanet", "flux", "dlrm"):
        assert {f"{model}_b200_gen5", f"{model}_b200_gen4"} <= names
    assert {p.stem for p in CHECKPOINTS} >= {"checkpoint_llama3_8b_gen5", "checkpoint_llama3_8b_gen4", "checkpoint_llama3_70b_gen5"}


@pytest.mark.parametrize("model", ["unet3d", "retinanet", "flux", "dlrm"])
def test_training_headline_and_drive_order(results, model):
    gen5, gen4 = results[f"{model}_b200_gen5"], results[f"{model}_b200_gen4"]
    for doc in (gen5, gen4):
        m, resolved = doc["metrics"], doc["dlio"]["resolved"]
        assert m["train_io_mean_MB_per_second"] == pytest.approx(m["train_throughput_mean_samples_per_second"] * resolved["record_length"] / 2**20, rel=1e-9)
        c, o, sd = resolved["computation_time"], resolved["step_overhead"], resolved["step_overhead_sd"]
        # the ceiling: the compute over the compute and the slowest rank's loop (its expected maximum over the ranks,
        # here by Monte-Carlo: the mean of the largest of n draws floored at zero, as the loop's are drawn)
        n = int(m["accelerators"])
        slowest = o if sd == 0 else float(np.maximum(0.0, np.random.default_rng(1).normal(o, sd, (20_000, n))).max(axis=1).mean())
        assert m["train_au_ceiling_percentage"] == pytest.approx(100 * c / (c + slowest), rel=1e-12 if sd == 0 else 1e-2)
        # a run's own draws of the loop may beat the expected maximum by their noise
        assert 0.0 < m["train_au_percentage"] <= m["train_au_ceiling_percentage"] * (1.0 if sd == 0 else 1.01) + 1e-9
        assert m["max_accelerators_at_au_target"] >= 0.0
    block, pattern = gen5["dlio"]["resolved"]["read_block_size"], gen5["dlio"]["resolved"]["read_pattern"]
    faster = [1.0 / read_seconds_per_byte(catalog.spec_from("ssd", d), min(block, 2**20), pattern) for d in ("micron-6550-ion", "solidigm-d5-p5336")]
    assert faster[0] >= faster[1]
    assert gen5["metrics"]["max_accelerators_at_au_target"] >= gen4["metrics"]["max_accelerators_at_au_target"]


def test_checkpoints_follow_the_procedure_and_the_drives(results):
    gen5, gen4 = results["checkpoint_llama3_8b_gen5"]["metrics"], results["checkpoint_llama3_8b_gen4"]["metrics"]
    for m in (gen5, gen4, results["checkpoint_llama3_70b_gen5"]["metrics"]):
        assert m["closed_division_valid"] == 1.0 and m["page_cache_drop_required"] == 1.0
        assert m["save_checkpoint_io_mean_GB_per_second"] == pytest.approx(m["checkpoint_size_GB"] / m["save_checkpoint_duration_mean_seconds"], rel=1e-9)
    tlc, qlc = (catalog.spec_from("ssd", d) for d in ("micron-6550-ion", "solidigm-d5-p5336"))
    assert write_seconds_per_byte(tlc, 2**20, "seq") < write_seconds_per_byte(qlc, 2**20, "seq")
    assert gen5["save_checkpoint_duration_mean_seconds"] < gen4["save_checkpoint_duration_mean_seconds"]
    assert read_seconds_per_byte(tlc, 2**20, "seq") < read_seconds_per_byte(qlc, 2**20, "seq")
    assert gen5["load_checkpoint_duration_mean_seconds"] < gen4["load_checkpoint_duration_mean_seconds"]
    assert results["checkpoint_llama3_70b_gen5"]["metrics"]["processes"] == 64
