"""MLPerf Storage v2.0/v3.0 checkpointing: model table, procedure, scoring, several hosts.

Oracles: Rules.md Table 2 (checkpoint sizes in GiB; TP x PP x DP and ZeRO), ZeRO's partitioning (stage 3
partitions parameters and optimizer state over data-parallel ranks, so every rank writes the same share),
the scoring rule itself (Submission_guidelines.md 2.2.3: duration = maximum over ranks, throughput = minimum
over ranks, result = mean over runs) applied to the per-rank times the run reports, and conservation at the
drive: with fsync a save cannot return before every byte is on the drive, so it takes at least size / the
drive's sequential write rate, and a read at least size / its read rate.
"""

from __future__ import annotations

import numpy as np
import pytest
from iowatt.models import catalog
from iowatt.models.ssd import read_seconds_per_byte, write_seconds_per_byte
from iowatt.simulator.run import simulate
from iowatt.simulator.system import SystemConfig
from iowatt.simulator.workloads import WorkloadConfigError
from iowatt.simulator.workloads.checkpoint import CheckpointParams

GiB = 2**30
# Table 2's "GB" are GiB and its "TB" thousands of them: 5.29 TB = 755 + 4,533 GiB of model and optimizer state
TABLE2_GiB = {"llama3_8b": 105, "llama3_70b": 912, "llama3_405b": 5290, "llama3_1t": 18000}


def _system(device: str = "solidigm-d5-p5336", memory: str = "256 GB", clients: int | None = None) -> SystemConfig:
    storage: dict = {"device": device}
    if clients is not None:
        storage = {"kind": "cluster", "nodes": 6, "drives_per_node": 2, "device": device, "clients": clients}
    return SystemConfig.model_validate({"server": {"cpu": "amd-epyc-9654", "memory": memory}, "storage": storage})


def _params(model: str = "llama3_8b", **procedure) -> CheckpointParams:
    return CheckpointParams.model_validate({"kind": "checkpoint", "model": model, "mlperf": {"writes": 2, "reads": 2, "runs": 1, **procedure}})


@pytest.mark.parametrize("model", sorted(TABLE2_GiB))
def test_checkpoint_sizes_are_table2s_in_GiB(model):
    p = _params(model)
    assert p.size_bytes / GiB == pytest.approx(TABLE2_GiB[model], rel=0.01)


def test_zero3_spreads_weights_and_optimizer_over_all_ranks():
    shards = _params("llama3_8b").shards()
    assert len(shards) == 8 and max(shards) == pytest.approx(min(shards), rel=1e-12)
    # ZeRO 1 (405B, 8 x 32 x 2): the weights are written by the first data-parallel replica only
    parts = _params("llama3_405b").shard_parts()
    assert len(parts) == 512 and sum(1 for w, _o in parts if w > 0) == 256


def test_scoring_is_max_over_ranks_and_mean_over_runs():
    sim = simulate(_system("micron-6550-ion"), _params(writes=3, reads=2, runs=2), seed=1)
    m, d = sim.metrics, sim.detail
    size = m["checkpoint_size_GB"]  # GiB, as DLIO reports it
    ranks = np.array(d["save_rank_seconds_last_run"])  # [checkpoint][rank]
    assert d["save_durations_seconds_by_run"][-1] == pytest.approx(list(ranks.max(axis=1)), rel=1e-12)
    # throughput: the minimum over ranks of size / rank time
    rank_rates = [min(size / s for s in row) for row in ranks]
    assert [size / t for t in d["save_durations_seconds_by_run"][-1]] == pytest.approx(rank_rates, rel=1e-12)
    runs = d["save_durations_seconds_by_run"]
    assert len(runs) == 2 and all(len(r) == 3 for r in runs)
    assert m["save_checkpoint_duration_mean_seconds"] == pytest.approx(np.mean([np.mean(r) for r in runs]), rel=1e-12)
    assert m["load_checkpoint_duration_mean_seconds"] == pytest.approx(np.mean([np.mean(r) for r in d["load_durations_seconds_by_run"]]), rel=1e-12)
    assert m["checkpoint_count"] == 6 and m["checkpoint_read_count"] == 4


@pytest.mark.parametrize("device", ["micron-6550-ion", "solidigm-d5-p5336"])
def test_fsync_saves_and_reads_are_bounded_by_the_drive(device):
    spec = catalog.spec_from("ssd", device)
    p = _params()
    m = simulate(_system(device), p, seed=1).metrics
    write_floor = p.size_bytes * write_seconds_per_byte(spec, 2**20, "seq")
    read_floor = p.size_bytes * read_seconds_per_byte(spec, 2**20, "seq")
    assert write_floor * (1 - 1e-9) <= m["save_checkpoint_duration_mean_seconds"] <= write_floor * 1.10
    assert read_floor * (1 - 1e-9) <= m["load_checkpoint_duration_mean_seconds"] <= read_floor * 1.10


def test_page_cache_drop_follows_the_3x_rule():
    """Rules.md 4.3.1: unless each host wrote >= 3x its memory, the cache must be dropped before reading."""
    big = simulate(_system(memory="256 GB"), _params(writes=1, reads=1), seed=1).metrics
    small = simulate(_system(memory="32 GB"), _params(writes=1, reads=1), seed=1).metrics
    assert big["page_cache_drop_required"] == 1.0 and small["page_cache_drop_required"] == 0.0
    assert big["checkpoint_data_per_host_to_memory_ratio"] == pytest.approx(105 * GiB / 256e9, rel=1e-9)


def test_ranks_spread_over_hosts_each_with_its_page_cache():
    one = simulate(_system("micron-6550-ion", clients=1), _params(writes=1, reads=1), seed=1)
    two = simulate(_system("micron-6550-ion", clients=2), _params(writes=1, reads=1), seed=1)
    assert two.metrics["hosts"] == 2 and two.metrics["processes_per_host"] == 4
    assert two.metrics["closed_division_valid"] == 1.0
    # each host holds half the state, so each has the dirty budget of a host holding 52.5 GiB, not 105
    assert two.detail["dirty_budget_GB"] > one.detail["dirty_budget_GB"]
    four = simulate(_system("micron-6550-ion", clients=4), _params(writes=1, reads=1), seed=1)
    assert four.metrics["closed_division_valid"] == 0.0
    assert any("4.6.2" in rule for rule in four.detail["closed_division_rules_broken"])
    with pytest.raises(WorkloadConfigError, match="spread evenly over 3 hosts"):
        simulate(_system("micron-6550-ion", clients=3), _params(writes=1, reads=1), seed=1)


def test_closed_rules_name_what_breaks():
    m = simulate(_system(), CheckpointParams.model_validate(
        {"kind": "checkpoint", "model": "llama3_8b", "dp": 4, "mlperf": {"writes": 1, "reads": 0, "runs": 1}}), seed=1)
    assert m.metrics["closed_division_valid"] == 0.0
    assert any("4.6.1" in rule and "8 processes" in rule for rule in m.detail["closed_division_rules_broken"])


def test_procedure_refuses_its_own_knobs_elsewhere():
    with pytest.raises(ValueError, match="passes"):
        CheckpointParams.model_validate({"kind": "checkpoint", "model": "llama3_8b", "passes": 2, "mlperf": {}})
