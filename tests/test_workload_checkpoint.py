"""Checkpoint workload: shard layout, conservation, passes, restore."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scenarios.loader import load
from scenarios.run import run_scenario
from simulator.workloads.checkpoint import CheckpointParams

DEMO = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"
GiB = 2**30


@pytest.mark.parametrize(
    ("model", "model_GiB", "optimizer_GiB", "ranks"),
    [("llama3_8b", 15, 90, 8), ("llama3_70b", 130, 781, 64), ("llama3_405b", 755, 4533, 512), ("llama3_1t", 2571, 15426, 1024)],
)
def test_presets_match_the_mlperf_storage_checkpoint_table(model, model_GiB, optimizer_GiB, ranks):
    """Oracle: MLPerf Storage's checkpointing table (published_results.yaml llm_checkpoint)."""
    params = CheckpointParams(model=model)
    shards = params.shards()
    assert len(shards) == ranks
    assert sum(shards) == pytest.approx((model_GiB + optimizer_GiB) * GiB, rel=0.01)


@given(
    tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2, 4]),
    zero=st.integers(0, 3), params=st.floats(1e9, 1e12),
)
def test_shards_conserve_weights_and_optimizer_state(tp, pp, dp, zero, params):
    """Whatever the layout, the ranks together write the weights once and the optimizer state once."""
    p = CheckpointParams(parameters=params, tp=tp, pp=pp, dp=dp, zero_stage=zero)
    shards = p.shards()
    assert len(shards) == tp * pp * dp
    assert sum(shards) == pytest.approx(params * 14.0, rel=1e-9)
    if zero == 0 and dp > 1:
        assert shards[-1] == 0.0  # replicas beyond DP rank 0 write nothing


def _run(*overrides: str) -> dict:
    return run_scenario(load(DEMO, list(overrides)))[0]


@settings(max_examples=15, deadline=None)
@given(count=st.integers(1, 6), size_GB=st.floats(1, 2000), ranks=st.integers(1, 16))
def test_bytes_written_equal_size_times_count(count, size_GB, ranks):
    doc = _run(f"workload.size={size_GB} GB", f"workload.count={count}", f"workload.ranks={ranks}")
    m = doc["metrics"]
    assert m["bytes_written_total_GB"] == pytest.approx(size_GB * count)
    assert m["checkpoint_count"] == count
    # throughput x total time = bytes (conservation), and time is at least bytes / the link's payload rate
    assert m["save_checkpoint_io_mean_GB_per_second"] * m["save_checkpoint_duration_mean_seconds"] * count == pytest.approx(size_GB * count)
    assert m["save_checkpoint_duration_mean_seconds"] >= size_GB / 14.4 * (1 - 1e-9)


def test_passes_fill_the_drive_then_overwrite():
    doc = _run("workload.size=1636 GB", "workload.passes=2", "storage.device=solidigm-d5-p5336", "storage.power_state=PS0")
    detail = doc["checkpoint"]
    # floor(0.9 x 61.44 TB / 1.636 TB) = 33 per pass, as in StorageReview's study
    assert detail["checkpoints_per_pass"] == 33
    assert len(detail["durations_seconds"]) == 66
    assert len(detail["pass_mean_seconds"]) == 2
    assert detail["pass_mean_seconds"][1] >= detail["pass_mean_seconds"][0] * (1 - 1e-9)


def test_restore_reads_the_checkpoint_back():
    doc = _run("workload.restore=true")
    m = doc["metrics"]
    assert m["load_checkpoint_io_mean_GB_per_second"] * m["load_checkpoint_duration_mean_seconds"] == pytest.approx(415.0)


def test_too_small_a_drive_for_one_checkpoint_is_a_clear_error():
    with pytest.raises(ValueError, match="does not fit"):
        _run("workload.size=70 TB", "workload.passes=1")
