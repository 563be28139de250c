"""The AI-workload library scenarios (dlio, gnn, dlrm_preprocess, gds_read): each runs and returns its headline metrics.

Each file is run once, shrunk with --set where the full run is long (the laws do not
change with the number of steps); the values are checked against the metric's
definition (DLIO's MiB/s, phase sums, Little's law), and a few published figures
that the model reproduces from datasheets are checked with a stated tolerance.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

LIB = Path(__file__).resolve().parent.parent / "scenarios" / "library"

OWNED = sorted(
    [
        *LIB.glob("mlperf_storage_v1/*.yaml"),
        *LIB.glob("micron9550_gnn/*.yaml"),
        *LIB.glob("micron6550_vs_p5336/unet3d_*.yaml"),
        *LIB.glob("micron6550_vs_p5336/dlrm_*.yaml"),
        *LIB.glob("storagereview/gdsio_l4_*.yaml"),
        *LIB.glob("amax/epoch_*.yaml"),
    ]
)

SHRINK = {
    "dlio": ["workload.total_training_steps=8", "workload.search_steps=8"],
    "gnn": ["workload.iterations=5"],
    "dlrm_preprocess": ["workload.rows=2.4e7"],
    "gds_read": ["workload.size_per_thread=64 MiB"],
}

HEADLINE = {
    "dlio": ["train_au_percentage", "train_throughput_mean_samples_per_second", "train_io_mean_MB_per_second", "epoch_time_mean_seconds"],
    "gnn": ["completion_time_seconds", "sampling_seconds", "aggregation_seconds", "training_seconds",
            "ssd_read_iops_aggregation", "ssd_energy_J", "system_energy_kJ"],
    "dlrm_preprocess": ["completion_time_seconds", "parquet_phase_seconds", "binary_phase_seconds", "ssd_energy_Wh"],
    "gds_read": ["bandwidth_GiB_per_second", "iops", "latency_mean_us"],
}


def _kind(path: Path) -> str:
    return load(path, []).workload.kind


def _run(path: Path, *overrides: str) -> dict:
    return run_scenario(load(path, list(overrides)))[0]


def test_every_owned_study_has_its_files():
    names = {p.relative_to(LIB).as_posix() for p in OWNED}
    for m in ("unet3d", "resnet50", "cosmoflow"):
        for a in ("h100", "a100"):
            assert f"mlperf_storage_v1/{m}_{a}_6500ion.yaml" in names
    for f in ("micron6550_vs_p5336/unet3d_max_h100_6550.yaml", "micron6550_vs_p5336/dlrm_6550_ps1.yaml", "micron6550_vs_p5336/dlrm_p5336_ps0.yaml",
              "storagereview/gdsio_l4_p5336.yaml", "storagereview/gdsio_l4_ps1010.yaml",
              "amax/epoch_9200.yaml", "amax/epoch_5210.yaml", "amax/epoch_hdd.yaml", "micron9550_gnn/gnn_igbh_9550_x4.yaml"):
        assert f in names


@pytest.mark.parametrize("path", OWNED, ids=lambda p: p.relative_to(LIB).as_posix())
def test_library_scenario_runs_and_reports_headline_metrics(path):
    kind = _kind(path)
    doc = _run(path, *SHRINK[kind])
    m = doc["metrics"]
    for key in HEADLINE[kind]:
        assert key in m and m[key] == m[key], key  # present and not NaN
        assert m[key] >= 0.0, key
    if kind == "dlio":
        wl = load(path, []).workload
        record = doc["dlio"]["resolved"]["record_length"]
        # DLIO's "MB/s" is MiB/s of mean-size samples
        assert m["train_io_mean_MB_per_second"] == pytest.approx(m["train_throughput_mean_samples_per_second"] * record / 2**20, rel=1e-9)
        assert 0.0 < m["train_au_percentage"] <= 100.0
        # efficiency = DLIO MiB/s over the drives' mean power from the run's energy report
        assert m["train_io_MB_per_second_per_ssd_W"] == pytest.approx(
            m["train_io_mean_MB_per_second"] / (m["ssd_energy_J"] / m["simulated_seconds"]), rel=1e-9)
        if wl.search_au:
            assert m["max_accelerators_au90"] >= 0.0
    elif kind == "gnn":
        assert m["sampling_seconds"] + m["aggregation_seconds"] + m["training_seconds"] == pytest.approx(m["completion_time_seconds"], rel=1e-9)
    elif kind == "dlrm_preprocess":
        assert m["parquet_phase_seconds"] + m["binary_phase_seconds"] == pytest.approx(m["completion_time_seconds"], rel=1e-9)
    elif kind == "gds_read":
        wl = load(path, []).workload
        assert m["latency_mean_us"] * 1e-6 == pytest.approx(wl.threads * wl.io_depth / m["iops"], rel=1e-9)  # Little's law


def test_gnn_one_and_two_9550_against_the_micron_brief():
    """Published 22.4 s (1 drive) and 14.1 s (2 drives); the model uses GIDS' logged loop and datasheet ceilings (tolerance 10 %)."""
    one = _run(LIB / "micron9550_gnn/gnn_igbh_9550_x1.yaml")["metrics"]["completion_time_seconds"]
    two = _run(LIB / "micron9550_gnn/gnn_igbh_9550_x2.yaml")["metrics"]["completion_time_seconds"]
    assert one == pytest.approx(22.4, rel=0.10)
    assert two == pytest.approx(14.1, rel=0.10)


def test_unet3d_6550_vs_p5336_throughput_ratio():
    """Published: the 6550 ION at PS1 delivers 1.30x the P5336's MB/s with 3 emulated H100 (tolerance 10 %)."""
    a = _run(LIB / "micron6550_vs_p5336/unet3d_3xh100_6550.yaml", "workload.search_au=false")["metrics"]["train_io_mean_MB_per_second"]
    b = _run(LIB / "micron6550_vs_p5336/unet3d_3xh100_p5336.yaml", "workload.search_au=false")["metrics"]["train_io_mean_MB_per_second"]
    assert a / b == pytest.approx(1.30, rel=0.10)


@pytest.mark.xfail(strict=True, reason="known miss: the model's unet3d loop on a submitter's client (fitted on YanRong's "
                   "one-rank run: 4.45 ms a step outside compute) stalls the emulated H100 1.5 % of the time (AU 98.5 %, "
                   "24 read threads on one 6500 ION never short of data); Micron's own host stalls it 3.56 %, 12 ms a step")
def test_mlperf_unet3d_h100_accelerator_waits_as_published():
    """Oracle: the published AU of MLPerf Storage v1.0 (Micron 6500 ION, unet3d, 1 emulated H100), 96.44 %, which no fit
    uses.  AU is a share of at most 100 %, so a relative tolerance would accept a loader that never stalls; the test
    asks for the stall share itself, 100 - AU = 3.56 %, within 1.5 percentage points."""
    m = _run(LIB / "mlperf_storage_v1/unet3d_h100_6500ion.yaml", "workload.search_au=false", "workload.total_training_steps=200")["metrics"]
    assert 100.0 - m["train_au_percentage"] == pytest.approx(100.0 - 96.44, abs=1.5)
