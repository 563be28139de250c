"""`iowatt plan` over checkpoint save designs (scenarios/plan_designs.py), and the library's design scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from iowatt.models import goodput as gp
from iowatt.scenarios import plan as pl
from iowatt.scenarios.executors import InlineExecutor
from iowatt.scenarios.loader import load
from iowatt.scenarios.plan_costs import derived_metrics
from iowatt.scenarios.run import run_scenario

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios" / "library" / "checkpoint_designs"
PRICES = ROOT / "models" / "catalog" / "prices.yml"
SMALL = {
    "name": "small_designs",
    "seed": 1,
    "system": {
        "server": {"cpu": "amd-epyc-9654", "sockets": 2, "memory": "512 GB"},
        "gpus": {"model": "nvidia-h100-sxm", "count": 16},
        "storage": {"kind": "cluster", "nodes": 4, "drives_per_node": 2, "device": "micron-7450-pro", "erasure_coding": "2+1",
                    "fabric": "200gbe", "clients": 2},
    },
    "workload": {"kind": "checkpoint", "size": "400 GB", "ranks": 16, "count": 2, "interval": "5 min", "copy_from_gpu": True,
                 "restore": True, "save": {"mode": "tiered", "stage": {"kind": "local", "device": "micron-7450-pro", "count": 4}}},
}
FAILURE = gp.FailureModel(nodes=2, node_mtbf_hours=20.0, restart_seconds=300.0, local_recovery_share=0.5)


def _design(*overrides: str) -> tuple[dict, dict]:
    scenario = load(SMALL, list(overrides))
    doc, _sim = run_scenario(scenario)
    return doc["metrics"], scenario.model_dump(mode="json")


def test_a_blocking_save_that_waits_for_durability_plans_like_daly():
    """Oracle: Daly's exact goodput (models.goodput.goodput), the model of blocking saves.  With fsync the save
    returns when the checkpoint is durable (A = s), so the design's goodput, interval and lost time are Daly's
    for the save time with the restart plus the simulated restore."""
    metrics, resolved = _design("workload.save.mode=blocking", "workload.fsync=true")
    stall = metrics["checkpoint_stall_last_seconds"]
    assert metrics["checkpoint_durable_after_last_seconds"] == pytest.approx(stall, rel=1e-9)
    out = derived_metrics(metrics, resolved, failure=FAILURE, interval="daly")
    mtbf = FAILURE.mtbf_seconds
    tau = gp.daly_interval(stall, mtbf)
    restart = FAILURE.restart_seconds + metrics["restore_durable_seconds"]
    assert out["checkpoint_interval_seconds"] == pytest.approx(tau, rel=1e-12)
    assert out["goodput"] == pytest.approx(gp.goodput(tau, stall, mtbf, restart), rel=1e-12)
    assert out["training_time_lost_per_hour_seconds"] == pytest.approx((1 - out["goodput"]) * 3600.0, rel=1e-12)


def test_a_tiered_save_prices_its_stage_on_every_host_and_recovers_locally():
    """Oracle: cost by definition (drives x capacity x the price list, read here with yaml) and the recovery
    paths: local copies are restorable once staged, and they only help (local restore and staging are faster
    than the durable ones here), so goodput with a local share is at least goodput without."""
    metrics, resolved = _design()
    prices = {name: entry["usd_per_TB"]["v"] for name, entry in yaml.safe_load(PRICES.read_text())["entries"].items()}
    out = derived_metrics(metrics, resolved, failure=FAILURE, interval="daly")
    assert out["stage_device_count"] == 8  # four drives in each of the two client hosts
    assert out["cost_usd"] == pytest.approx((8 + 8) * 7.68 * prices["micron-7450-pro"], rel=1e-9)
    assert metrics["restore_local_seconds"] < metrics["restore_durable_seconds"]
    assert metrics["checkpoint_staged_after_last_seconds"] < metrics["checkpoint_durable_after_last_seconds"]
    durable_only = derived_metrics(metrics, resolved, failure=gp.FailureModel(2, 20.0, 300.0), interval="daly")
    assert out["goodput"] > durable_only["goodput"]
    # the interval leaves room for the design's background work
    assert out["checkpoint_interval_seconds"] >= metrics["checkpoint_period_min_seconds"] - metrics["checkpoint_stall_last_seconds"]


def test_plan_picks_among_designs(tmp_path):
    """The planner compares blocking, async and tiered saves and ranks them by the objective; every feasible
    configuration's goodput is at most 1 and the stall-free designs lose less training time than blocking."""
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(SMALL))
    spec = {
        "name": "designs", "scenario": str(base),
        "choices": {"workload.save.mode": ["blocking", "async", "tiered"], "checkpoint_interval": ["daly"]},
        "failure": {"nodes": 2, "node_mtbf_hours": 20.0, "restart_seconds": 300.0, "local_recovery_share": 0.5},
        "constraints": ["cost_usd <= 1e7"],
        "objective": {"minimise": "training_time_lost_per_hour_seconds"},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = pl.search(pl.load_spec(path), InlineExecutor())
    lost = {c["workload.save.mode"]: c["training_time_lost_per_hour_seconds"] for c in result.configs}
    assert lost["async"] < lost["blocking"] and lost["tiered"] < lost["blocking"]
    assert result.ranked()[0]["workload.save.mode"] in ("async", "tiered")
    assert all(0.0 < c["goodput"] <= 1.0 for c in result.feasible)


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*.yaml")), ids=lambda p: p.stem)
def test_library_design_scenarios_run(path):
    """The three designs of the library (Llama3-405B, 64 hosts x 8 GPUs, the 6-node cluster), one checkpoint each:
    512 writing ranks; async and tiered stall for one heavy shard's copy to host memory (12.7 GB at 53 GB/s)."""
    doc, _sim = run_scenario(load(path, ["workload.count=1"]))
    m = doc["metrics"]
    assert m["checkpoint_writer_ranks_count"] == 512 and m["client_hosts_count"] == 64
    heavy_shard = m["checkpoint_size_GB"] * 16 / (14 * 512)  # weights/256 + optimizer/512 of 14 B/param
    if doc["checkpoint"]["save_mode"] != "blocking":
        assert m["checkpoint_stall_last_seconds"] == pytest.approx(heavy_shard * 1e9 / (57.6e9 * 0.92), rel=1e-3)
    assert m["checkpoint_durable_after_last_seconds"] > m["checkpoint_stall_last_seconds"]


def test_library_plan_spec_loads():
    spec = pl.load_spec(ROOT / "scenarios" / "plans" / "checkpoint_designs_405b_64x8.yaml")
    assert spec.failure is not None and spec.failure.local_recovery_share == pytest.approx(0.3)
    assert ("workload.save.mode", ["blocking", "async", "tiered"]) in spec.choices
