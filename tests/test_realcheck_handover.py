"""check-machine's hand-over probe: a null DLIO run whose compute sleeps (calibration.realcheck_runs.handover_seconds)
and its way into the prediction (scenarios.realcheck_predict.measured_loader)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from iowatt.calibration.handover_probe import HandoverProbeError, dlio_python, handover_cpu
from iowatt.calibration.realcheck_runs import NULL_BATCH, NULL_BATCH_STEPS, NULL_SLEEP_SECONDS, handover_seconds, loader_start_seconds, null_runs
from iowatt.scenarios.realcheck_predict import measured_loader


def _dlio_bundle(root: Path, ranks: list[list[float]], compute_s: float) -> Path:
    """A DLIO trace bundle's raw/{rank}_output.json as DLIO 2.0 writes it: per block, each step's load and proc times."""
    (root / "raw").mkdir(parents=True)
    for rank, loads in enumerate(ranks):
        proc = [load + compute_s + 0.5e-3 for load in loads]
        epoch = {"load": {"block1": loads}, "proc": {"block1": proc}, "throughput": {"block1": len(loads) / (sum(proc) + 0.01)}}
        (root / "raw" / f"{rank}_output.json").write_text(json.dumps({"1": epoch}))
    return root


def test_hand_over_is_the_mean_later_wait_of_the_sleeping_null_runs(tmp_path: Path):
    """Oracle: DLIO's own trace (per-step load times, raw/{rank}_output.json): the first step's wait is the workers'
    start-up and is left out; the later steps' waits, averaged over every rank and run as DLIO's AU sums them."""
    one = _dlio_bundle(tmp_path / "r0", [[0.4, 0.002, 0.004], [0.3, 0.003, 0.003]], NULL_SLEEP_SECONDS)
    two = _dlio_bundle(tmp_path / "r1", [[0.5, 0.001, 0.001], [0.35, 0.002, 0.004]], NULL_SLEEP_SECONDS)
    later = [0.002, 0.004, 0.003, 0.003, 0.001, 0.001, 0.002, 0.004]
    assert handover_seconds([one, two])["handover_seconds"] == pytest.approx(sum(later) / len(later))


@given(st.lists(st.lists(st.floats(0.05, 2.0), min_size=2, max_size=2), min_size=1, max_size=6))
def test_loader_start_is_the_median_first_wait_over_every_null_run(firsts: list[list[float]]):
    """Oracle: DLIO's own trace: every rank of every null run (short, long, batched, sleeping alike) waits for its
    loader workers' start-up at its first step; the start-up is the median of all those first waits, however many
    runs and whatever their lengths, and a later step's wait never enters it."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        runs = [_dlio_bundle(Path(folder) / f"r{k}", [[first, 0.002, 0.9] for first in pair], 0.0)
                for k, pair in enumerate(firsts)]
        every = sorted(f for pair in firsts for f in pair)
        middle = (every[(len(every) - 1) // 2] + every[len(every) // 2]) / 2.0
        assert loader_start_seconds(runs)["loader_start_seconds"] == pytest.approx(middle)


def test_the_sleeping_null_run_keeps_the_loader_ahead(tmp_path: Path):
    """Oracle: what the run must be to measure the hand-over alone: 4 KiB samples (the loader's cost per sample, under
    a millisecond on the development VM, is far below the sleep) with the scored runs' ranks and loader workers."""
    spec = next(s for s in null_runs(tmp_path) if s.name == "null_sleep")
    workload = spec.workload
    assert workload["train"] == {"epochs": 1, "computation_time": NULL_SLEEP_SECONDS}  # type: ignore[comparison-overlap]
    assert workload["dataset"]["record_length"] == 4096  # type: ignore[index]
    assert workload["reader"]["read_threads"] == 2 and workload["reader"]["batch_size"] == 1  # type: ignore[index]


def test_a_bundle_without_the_probe_predicts_as_before():
    """Oracle: the bundles made before the probe (tests/fixtures/realcheck/bundle) hold no hand-over, and the workload
    gets none (the field's default, none: the model as it was); a bundle that measured it passes it on as measured."""
    facts = {"cores": 2, "cpu_MHz": 2400.0, "step_overhead_seconds": 1.8e-3}
    assert "handover_seconds" not in measured_loader(facts)
    assert measured_loader(facts | {"handover_seconds": 2.5e-3})["handover_seconds"] == 2.5e-3


@given(samples=st.integers(1, 100_000), entry_us=st.floats(0.1, 2.0))
def test_the_index_map_cost_follows_the_runs_samples_per_rank(samples: int, entry_us: float):
    """Oracle: DLIO 2.0.0's reader (reader/reader_handler.py, read_index) builds f"{self.global_index_map}" for every
    sample, the repr of the rank's map of one entry per sample, so a sample's cost is linear in the rank's samples and
    the null runs' figure holds at their own count (NULL_BATCH x NULL_BATCH_STEPS per rank).  A bundle without the
    probe keeps the null runs' figure whatever the run."""
    null_samples = NULL_BATCH * NULL_BATCH_STEPS
    facts = {"cores": 2, "cpu_MHz": 2400.0, "npz_seconds_per_file": 1e-4, "npz_GBps_per_core": 2.0,
             "loader_seconds_per_sample": 0.6e-3}
    assert measured_loader(facts, samples)["cpu_seconds_per_sample"] == pytest.approx(0.6e-3)
    probed = facts | {"index_map_seconds_per_entry": entry_us * 1e-6}
    assert measured_loader(probed, null_samples)["cpu_seconds_per_sample"] == pytest.approx(0.6e-3)
    more, fewer = measured_loader(probed, samples + 1)["cpu_seconds_per_sample"], measured_loader(probed, samples)["cpu_seconds_per_sample"]
    assert more - fewer == pytest.approx(entry_us * 1e-6) or fewer == 0.0


def test_a_cold_sample_costs_its_own_sizes_cold_load_beyond_the_null_runs():
    """Oracle: the probe's cold loads (calibration.host_probe.npz_cold_seconds): a sample of the run's size costs the
    loader the null runs' figure plus its cold load less the null's 4 KiB one, all told: the model's per-byte charges
    (the warm npz rate, the cold read's page) included.  A size the probe did not load, or a bundle without the
    probe, keeps the null runs' figure."""
    facts = {"cores": 2, "cpu_MHz": 2400.0, "npz_seconds_per_file": 1e-4, "npz_GBps_per_core": 2.0,
             "page_cache_read_GBps_per_core": 4.0, "loader_seconds_per_sample": 0.6e-3,
             "npz_cold_seconds_by_record": {"4096": 0.2e-3, "114688": 0.5e-3}}
    record = 114688
    charged = measured_loader(facts, None, record)["cpu_seconds_per_sample"] + (record - 4096) * (1 / 2.0e9 + 1 / 4.0e9)
    assert charged == pytest.approx(0.6e-3 + 0.5e-3 - 0.2e-3)
    assert measured_loader(facts, None, 4096)["cpu_seconds_per_sample"] == pytest.approx(0.6e-3)
    assert measured_loader(facts, None, 65536)["cpu_seconds_per_sample"] == pytest.approx(0.6e-3)
    assert measured_loader(facts, None, None)["cpu_seconds_per_sample"] == pytest.approx(0.6e-3)


def test_the_hand_overs_cpu_grows_with_the_runs_batch(tmp_path: Path):
    """Oracle: the probe's line (calibration.handover_probe): the trainer's CPU per hand-over is a + b x the batch's
    bytes (DLIO's samples are int(sqrt(record))^2 bytes), and the null run measured the wait at its own 4 KiB batch,
    so a larger batch adds b x the difference to the wait; the CPU part never exceeds the wait."""
    facts = {"cores": 2, "cpu_MHz": 2400.0, "handover_seconds": 1.3e-3, "handover_cpu_seconds": 0.6e-3,
             "handover_cpu_seconds_per_byte": 7e-11}
    out = measured_loader(facts, None, 4 * 2**20, 2)
    assert out["handover_cpu_seconds"] == pytest.approx(0.6e-3 + 7e-11 * 8 * 2**20)
    assert out["handover_seconds"] == pytest.approx(1.3e-3 + 7e-11 * (8 * 2**20 - 4096))
    assert measured_loader(facts | {"handover_cpu_seconds": 5e-3}, None, 4096, 1)["handover_cpu_seconds"] == pytest.approx(1.3e-3)
    assert "handover_cpu_seconds" not in measured_loader({k: v for k, v in facts.items() if "cpu_seconds" not in k}, None, 4096, 1)


def test_the_hand_over_probe_names_what_failed(tmp_path: Path):
    """DLIO's interpreter is the one its script's #! line names; a missing one is one error naming it."""
    script = tmp_path / "dlio_benchmark"
    script.write_text("#!/opt/dlio/bin/python3 -u\nimport sys\n")
    assert dlio_python(script) == Path("/opt/dlio/bin/python3")
    with pytest.raises(HandoverProbeError, match="no-such-python"):
        handover_cpu(tmp_path / "no-such-python")
