"""The hand-over of a loaded batch (DLIO workload `handover_seconds`) and the loader's finite prefetch queue.

Oracle: an independent event simulation of PyTorch's DataLoader as DLIO drives it (`_dataloader_steps` below: plain
Python, no SimPy, no flow engine): w worker processes, each on a core of its own, at most P = w x prefetch batches
handed out and not yet taken, batch j on worker j mod w (PyTorch's round robin); a batch takes L seconds to load;
the trainer waits for its batch in index order, then for the hand-over h, frees the batch's slot (PyTorch sends
the next index once the batch is in hand), then spends the loop's overhead o and computes c.  The model builds the
same loader from flows on a host's CPU constraint; the two must agree on every step's wait wherever the loader is
ahead, behind or in between.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

MiB = 2**20
FILES = 24


def _dataloader_steps(steps: int, workers: int, prefetch: int, load_s: float, handover_s: float, overhead_s: float,
                      compute_s: float) -> list[float]:
    """Each step's wait for its batch (from the trainer's request to the batch in hand), one rank, from time 0."""
    slots = workers * prefetch
    worker_free = [0.0] * workers
    ready = [0.0] * steps
    for j in range(min(slots, steps)):  # the first P indices go out at once, in PyTorch's round robin: batch j on j mod w
        ready[j] = worker_free[j % workers] = worker_free[j % workers] + load_s
    waits, asked = [], 0.0
    for step in range(steps):  # batches are taken in index order
        got = max(asked, ready[step]) + handover_s
        waits.append(got - asked)
        nxt = step + slots
        if nxt < steps:  # the slot this batch held goes to the next index, on the same worker (nxt = step mod w)
            k = nxt % workers
            ready[nxt] = worker_free[k] = max(worker_free[k], got) + load_s
        asked = got + overhead_s + compute_s
    return waits


def _model_waits(workers: int, prefetch: int, load_s: float, handover_s: float, overhead_s: float, compute_s: float) -> list[float]:
    """The model's waits of the second epoch (read from the page cache: the loader's time per batch is the parsing
    alone, record / cpu_bytes_per_core_second on a host core of speed 1, with more cores than workers)."""
    record = 4 * MiB
    scenario = {"name": "handover", "system": {"storage": {"device": "micron-7450-pro"},
                "server": {"cpu": {"name": "host", "cores": 8, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 1e4},
                           "memory": 64 * 2**30}},
                "workload": {"kind": "dlio", "model": "custom", "record_length": record, "batch_size": 1, "num_files": FILES,
                             "computation_time": compute_s, "read_threads": workers, "prefetch_size": workers * prefetch,
                             "accelerators": 1, "epochs": 2, "cpu_bytes_per_core_second": record / load_s,
                             "loader_start": 0.0, "epoch_overhead": 0.0, "step_overhead": overhead_s,
                             "handover_seconds": handover_s, "search_au": False, "mlperf_dataset_rule": False}}
    document, _ = run_scenario(load(scenario))
    return [row[2] for row in document["dlio"]["steps"]["rows"] if row[0] == 1]


@settings(max_examples=25, deadline=None)
@given(workers=st.integers(1, 4), prefetch=st.integers(1, 3), load_ratio=st.floats(0.05, 4.0),
       handover_ms=st.floats(0.0, 5.0), overhead_ms=st.floats(0.0, 2.0))
def test_every_wait_matches_an_event_simulation_of_the_dataloader(workers: int, prefetch: int, load_ratio: float,
                                                                 handover_ms: float, overhead_ms: float):
    """Oracle: the independent event simulation above.  Every step's wait within 1 us + 0.1 %, loader ahead
    (L much less than a step), behind (L several steps) or in between."""
    compute_s = 0.02
    args = (workers, prefetch, load_ratio * compute_s, handover_ms * 1e-3, overhead_ms * 1e-3, compute_s)
    model = _model_waits(*args)
    oracle = _dataloader_steps(FILES, *args)
    assert len(model) == FILES
    for step, (m, o) in enumerate(zip(model, oracle, strict=True)):
        assert m == pytest.approx(o, rel=1e-3, abs=1e-6), f"step {step}"


def test_a_loader_far_ahead_waits_the_hand_over_alone():
    """Oracle: with the loader always ahead no step queues (a deterministic cycle), so every later step's wait is the
    hand-over h and the AU over the later steps is c / (c + o + h): DLIO 2.0's definition (statscounter: compute over
    the block's time less the first step)."""
    c, o, h = 0.02, 1.0e-3, 2.5e-3
    waits = _model_waits(2, 1, 1.0e-3, h, o, c)
    assert waits[1:] == pytest.approx([h] * (FILES - 1), abs=1e-9)
    later = (FILES - 1) * (c + o + h)
    assert c * (FILES - 1) / later == pytest.approx(c / (c + o + h))


def test_without_a_measured_hand_over_nothing_changes():
    """Oracle: the field's default (none) is the model before the field existed: the same waits as a hand-over of 0
    given explicitly, so library scenarios and bundles made before the probe measured it keep their numbers."""
    explicit = _model_waits(2, 1, 0.03, 0.0, 1e-3, 0.02)  # DLIO's prefetch_size 2 over 2 workers: one batch each
    record = 4 * MiB
    scenario = {"name": "default", "system": {"storage": {"device": "micron-7450-pro"},
                "server": {"cpu": {"name": "host", "cores": 8, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 1e4},
                           "memory": 64 * 2**30}},
                "workload": {"kind": "dlio", "model": "custom", "record_length": record, "batch_size": 1, "num_files": FILES,
                             "computation_time": 0.02, "read_threads": 2, "prefetch_size": 2, "accelerators": 1, "epochs": 2,
                             "cpu_bytes_per_core_second": record / 0.03, "loader_start": 0.0, "epoch_overhead": 0.0,
                             "step_overhead": 1e-3, "search_au": False, "mlperf_dataset_rule": False}}
    document, _ = run_scenario(load(scenario))
    assert [row[2] for row in document["dlio"]["steps"]["rows"] if row[0] == 1] == pytest.approx(explicit, abs=1e-12)
