"""MLPerf Storage v3.0 training in the DLIO workload: the accelerators, the new workloads and the loop's overhead.

Oracles: the benchmark's published configs and rules (the catalog must carry their numbers with a citation of
file and commit; Rules.md Table 3 for memory), a real DLIO run (tests/fixtures/dlio/unet3d_tiny: the per-step
overhead is measured there), DLIO's AU definition worked by hand (compute over step time, the loop's own time
counted), conservation of bytes (parquet column selection), and a throughput bound: N accelerators at AU a
need N x a x batch bytes / compute time from storage, which cannot exceed what the drive's law serves.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.models.ssd import read_seconds_per_byte
from iowatt.simulator.run import simulate
from iowatt.simulator.system import SystemConfig
from iowatt.simulator.workloads._dlio_timing import DLIO_STEP_OVERHEAD_SECONDS
from iowatt.simulator.workloads.dlio import PRESETS, DlioParams, accelerator_step

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dlio" / "unet3d_tiny"


def _system(device: str = "micron-6550-ion") -> SystemConfig:
    return SystemConfig.model_validate({"server": {"cpu": "amd-epyc-9654", "memory": "256 GB"}, "storage": {"device": device}})


def test_step_overhead_is_the_fixtures_measurement():
    """DLIO's loop time outside the loader wait and the compute: proc - load - compute of each step after the first,
    in both ranks and epochs of the real run; the constant is their median."""
    gaps = []
    for rank in (0, 1):
        document = json.loads((FIXTURE / f"{rank}_output.json").read_text())
        for epoch in ("1", "2"):
            stats = document[epoch]
            for load, proc, compute in list(zip(stats["load"]["block1"], stats["proc"]["block1"], stats["compute"]["block1"], strict=True))[1:]:
                gaps.append(proc - load - compute)
    assert len(gaps) == 12
    assert DLIO_STEP_OVERHEAD_SECONDS == pytest.approx(statistics.median(gaps), abs=0.01e-3)


def test_b200_and_mi355_carry_the_benchmarks_steps_with_their_source():
    """Rules.md Table 3: b200 180 GB, mi355 288 GB; every batch size and compute time cites a workload config and commit."""
    b200, mi355 = catalog.lookup("gpu", "b200"), catalog.lookup("gpu", "mi355")
    assert b200.spec.memory_GB == 180 and mi355.spec.memory_GB == 288
    names = {e.name for e in catalog.entries("gpu")}
    assert {"nvidia-b200", "amd-mi355x"} <= names
    for entry, workloads in ((b200, {"unet3d", "retinanet", "flux", "dlrm"}), (mi355, {"retinanet", "flux", "dlrm"})):
        assert set(entry.spec.dlio_steps) == workloads
        for workload in workloads:
            for field in ("batch_size", "computation_time_s"):
                src = entry.provenance[f"dlio_steps.{workload}.{field}"].src
                assert src.startswith(f"mlcommons/storage configs/dlio/workload/{workload}_") and " @" in src, src
    # the configs scale the MI355's batch and step time together: the same time per sample as the B200
    for workload in ("retinanet", "flux"):
        b, m = b200.spec.dlio_steps[workload], mi355.spec.dlio_steps[workload]
        assert b.computation_time_s / b.batch_size == pytest.approx(m.computation_time_s / m.batch_size, rel=0.01)


def test_presets_need_a_step_for_their_accelerator():
    with pytest.raises(ValueError, match="b200, mi355"):
        DlioParams(model="retinanet", accelerator="h100")
    assert DlioParams(model="retinanet", accelerator="h100", batch_size=16, computation_time=0.18).model == "retinanet"


def test_au_with_idle_storage_is_capped_by_the_loop_overhead():
    """Compute-bound (a page-cached, tiny dataset): every step is o + c with no wait after the first, so
    AU = c / (c + o) exactly, and a target above that ceiling admits no accelerator at all."""
    c, o = 2e-3, 1e-3
    p = DlioParams(model="custom", accelerator="other", record_length=4096, batch_size=1, computation_time=c, num_files=400,
                   step_overhead=o, epoch_overhead=0.0, read_threads=2, epochs=2, au_target=0.7, search_au=True, search_steps=20,
                   search_max_accelerators=8)
    m = simulate(_system(), p, seed=1).metrics
    assert m["train_au_ceiling_percentage"] == pytest.approx(100 * c / (c + o), rel=1e-12)
    assert m["train_au_percentage"] <= m["train_au_ceiling_percentage"] + 1e-9
    assert m["train_au_percentage"] == pytest.approx(100 * c / (c + o), rel=0.02)  # only the first epoch's loads wait
    assert m["max_accelerators_at_au_target"] == 0.0  # 66.7 % < 70 %


def test_dlrm_reads_only_its_selected_columns():
    """Conservation: the bytes read from storage are the samples read x record x the selected share (160 of 761 B)."""
    p = DlioParams(model="dlrm", accelerator="b200", accelerators=2, total_training_steps=3, search_au=False, page_cache=False)
    sim = simulate(_system(), p, seed=1)
    m, fraction = sim.metrics, PRESETS["dlrm"].bytes_read_fraction
    assert fraction == pytest.approx(160 / 761)
    assert m["bytes_read_from_storage_GB"] * 1e9 == pytest.approx(m["samples_read"] * 761 * fraction, rel=1e-9)
    # DLIO's MiB/s counts whole records whatever the reader fetched
    assert m["train_io_mean_MB_per_second"] == pytest.approx(m["train_throughput_mean_samples_per_second"] * 761 / 2**20, rel=1e-9)


@pytest.mark.parametrize("device", ["micron-6550-ion", "solidigm-d5-p5336"])
def test_flux_accelerators_at_target_are_bounded_by_the_drive(device):
    """N accelerators at AU a need N a B / c bytes/s (B the batch bytes, c the compute per step); the drive's read law
    at the request size bounds it, and a storage-bound search lands within a few accelerators of the bound."""
    step = accelerator_step("b200", "flux")
    p = DlioParams(model="flux", accelerator="b200", accelerators=8, total_training_steps=4, search_steps=12)
    m = simulate(_system(device), p, seed=1).metrics
    n, a = m["max_accelerators_at_au_target"], 0.90
    batch = step.batch_size * PRESETS["flux"].record_length
    drive_Bps = 1.0 / read_seconds_per_byte(catalog.spec_from("ssd", device), 2**20, "seq")
    bound = drive_Bps * step.computation_time_s / (a * batch)
    assert 0.9 * bound <= n <= bound * 1.02 + 1


def test_v3_workloads_report_au_and_the_headline():
    for model in ("retinanet", "flux", "dlrm", "unet3d"):
        m = simulate(_system(), DlioParams(model=model, accelerator="b200", accelerators=2, total_training_steps=3, search_steps=4,
                                           search_max_accelerators=16), seed=1).metrics
        assert 0.0 < m["train_au_percentage"] <= 100.0
        assert m["au_target_percentage"] == pytest.approx(100 * PRESETS[model].au_target)
        assert m["max_accelerators_at_au_target"] >= 0.0
