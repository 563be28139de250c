"""BaM's block benchmark (scenarios/library/gds/bam_block_bench_980pro.yaml): GPU threads reading 4 KiB pages at random
from striped NVMe drives through BaM's queues, run as the gnn workload's aggregation alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from iowatt.models.catalog import drive_spec
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "gds" / "bam_block_bench_980pro.yaml"


def _iops(*overrides: str) -> float:
    return run_scenario(load(SCENARIO, list(overrides)))[0]["metrics"]["ssd_read_iops_aggregation"]


@pytest.mark.parametrize("drives", [1, 2, 3, 4])
def test_each_drive_runs_at_its_ceiling_with_thousands_of_reads_in_flight(drives):
    """Oracle: the operational laws of a closed network (Denning and Buzen 1978): a drive's throughput never exceeds its
    ceiling (the utilisation law, here the datasheet 4 KiB random-read rate), and with N requests in flight far above
    the knee (N >> ceiling x QD1 latency: ~221 k resident threads against ~100 for a 980 PRO) it is within the
    asymptotic bound N / (L0 + N / ceiling) of it.  Pages are striped, so n drives serve n ceilings."""
    ceiling = drive_spec("samsung-980-pro-1tb").rand_read_iops
    per_drive = _iops(f"storage.count={drives}") / drives
    assert per_drive <= ceiling * (1 + 1e-9)
    assert per_drive >= 0.98 * ceiling


def test_the_run_is_the_262144_reads_of_the_benchmark():
    """Oracle: the benchmark's own count (nvm-block-bench --threads=262144 --reqs=1: one 4 KiB read per thread)."""
    doc = run_scenario(load(SCENARIO, []))[0]
    assert doc["metrics"]["ssd_reads"] == pytest.approx(262_144)
    assert doc["metrics"]["features_read_GB"] == pytest.approx(262_144 * 4096 / 1e9)
