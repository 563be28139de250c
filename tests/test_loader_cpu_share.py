"""The host's cores shared by the loader workers and the trainers (DLIO workload): the training loop's own cost per step
is CPU on those cores, a rank held at the step's barrier polls on one (`barrier_spin`), and a PyTorch worker collates
each batch into new shared memory at the host's measured rate (CPUSpec.shm_write_GBps_per_core).

Oracles: work conservation of a processor-sharing CPU (a saturated CPU finishes its work in work / cores, never
sooner), the theory that a poller on a core nobody else wants takes nothing from anyone, and unit conversion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import host_io
from iowatt.models.compute import CPUSpec
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

MiB = 2**20


def _run(cores: int, *, batch_cpu_s: float, loop_s: float, compute_s: float, files: int = 96, spin: bool = False,
         cv: float = 0.0, shm_GBps: float | None = None) -> dict:
    """2 ranks x 2 workers, batch of one, two epochs (the second from the page cache: a batch costs the worker
    batch_cpu_s of one core, record / cpu_bytes_per_core_second on a core of speed 1)."""
    record = 1 * MiB
    cpu: dict[str, object] = {"name": "host", "cores": cores, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 1e4}
    if shm_GBps is not None:
        cpu["shm_write_GBps_per_core"] = shm_GBps
    scenario = {"name": "share", "system": {"storage": {"device": "micron-7450-pro"}, "server": {"cpu": cpu, "memory": 64 * 2**30}},
                "workload": {"kind": "dlio", "model": "custom", "record_length": record, "batch_size": 1, "num_files": files,
                             "computation_time": compute_s, "read_threads": 2, "prefetch_size": 2, "accelerators": 2,
                             "epochs": 2, "cpu_bytes_per_core_second": record / batch_cpu_s, "loader_start": 0.0,
                             "epoch_overhead": 0.0, "step_overhead": loop_s, "barrier_spin": spin, "loader_cost_cv": cv,
                             "search_au": False, "mlperf_dataset_rule": False}}
    document, _ = run_scenario(load(scenario))
    return document


def _epoch2(document: dict) -> float:
    return float(document["dlio"]["epoch_time_seconds"][1])


@settings(max_examples=4, deadline=None)
@given(batch_ms=st.floats(20.0, 60.0), loop_ms=st.floats(0.5, 4.0), compute_ms=st.floats(1.0, 10.0))
def test_a_saturated_host_takes_the_loaders_and_the_loops_work_over_its_cores(batch_ms: float, loop_ms: float, compute_ms: float):
    """Oracle: work conservation.  With the loader behind (4 workers' batches on 2 cores take longer than the trainers'
    steps) the cores never idle until the last batch is loaded, so the cached epoch takes at least the work over the
    cores -- every batch's CPU and, now that the loop runs on the same cores, every step's loop -- and at most that plus
    the loop and compute of the steps whose batches were loaded last (one per worker of a rank, loaded together).  A
    loop that took no CPU (a plain wait, as before) would finish early."""
    files, cores, workers = 48, 2, 2
    steps = files // 2
    work = 2 * steps * (batch_ms + loop_ms) * 1e-3
    t = _epoch2(_run(cores, batch_cpu_s=batch_ms * 1e-3, loop_s=loop_ms * 1e-3, compute_s=compute_ms * 1e-3, files=files))
    assert work / cores * (1 - 1e-9) <= t <= work / cores + workers * (loop_ms + compute_ms) * 1e-3 * (1 + 1e-9)


@settings(max_examples=3, deadline=None)
@given(cv=st.floats(0.1, 0.8), batch_ms=st.floats(2.0, 40.0))
def test_polling_at_the_barrier_on_idle_cores_takes_nothing(cv: float, batch_ms: float):
    """Oracle: a poller on a core nobody else wants takes no CPU from anyone.  On 16 cores the 2 ranks' 4 workers, their
    loops and the spinning rank never fill the host, so the waits are those of the same run without the spin (the
    ranks still wait for each other at the barrier: the spread of a worker's time per batch, loader_cost_cv)."""
    kwargs = {"batch_cpu_s": batch_ms * 1e-3, "loop_s": 1e-3, "compute_s": 0.01, "cv": cv, "files": 48}
    still, spinning = _run(16, **kwargs), _run(16, spin=True, **kwargs)

    def by_rank(document: dict) -> list[float]:  # steps that end at one instant may be recorded in either order
        return [x for row in sorted(document["dlio"]["steps"]["rows"], key=lambda row: (row[0], row[1])) for x in row]
    assert by_rank(spinning) == pytest.approx(by_rank(still), abs=1e-9)


def test_polling_at_the_barrier_on_a_full_host_slows_the_loaders():
    """Oracle: processor sharing.  On 2 cores, loader-bound, a rank held at the barrier is one more runnable process
    beside the 4 workers, so the workers get less of the cores and the epoch cannot end sooner; it ends later
    whenever the ranks drift apart (loader_cost_cv: here by a few tenths of a percent, the loaders being behind keeps
    the ranks' arrivals close)."""
    kwargs = {"batch_cpu_s": 0.03, "loop_s": 1e-3, "compute_s": 0.01, "cv": 0.5, "files": 48}
    still, spinning = _epoch2(_run(2, **kwargs)), _epoch2(_run(2, spin=True, **kwargs))
    assert spinning > still


@settings(max_examples=20, deadline=None)
@given(rate=st.floats(0.05, 50.0), speed=st.floats(0.25, 4.0))
def test_shm_collate_cost_is_the_measured_seconds_on_the_host_core(rate: float, speed: float):
    """Oracle: unit conversion.  A host that fills new shared memory at `rate` GB/s on one core spends 1/rate ns per
    byte there, s/rate in reference-core seconds (a core of speed s delivers s per second); none without a measurement."""
    cpu = {"name": "h", "cores": 2, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 20.0, "core_speed": speed}
    assert host_io.shm_collate_seconds_per_byte(CPUSpec.model_validate(cpu)) == 0.0
    measured = CPUSpec.model_validate(cpu | {"shm_write_GBps_per_core": rate})
    assert host_io.shm_collate_seconds_per_byte(measured) / speed == pytest.approx(1.0 / (rate * 1e9))


def test_the_collate_adds_its_bytes_to_each_pytorch_batch():
    """Oracle: work conservation again: with the collate at 0.1 GB/s a 1 MiB batch costs its worker 10.5 ms more on
    the saturated host, so the cached epoch's lower bound rises by that over the cores."""
    files, cores, batch_s, loop_s, compute_s, workers = 48, 2, 0.03, 1e-3, 0.005, 2
    t = _epoch2(_run(cores, batch_cpu_s=batch_s, loop_s=loop_s, compute_s=compute_s, files=files, shm_GBps=0.1))
    work = 2 * (files // 2) * (batch_s + MiB / 0.1e9 + loop_s)
    assert work / cores * (1 - 1e-9) <= t <= work / cores + workers * (loop_s + compute_s) * (1 + 1e-9)


def test_the_hand_overs_cpu_on_idle_cores_is_the_plain_wait():
    """Oracle: the hand-over's CPU part on a core nobody else wants takes its own time, so the trainer waits as long
    as for a hand-over that is all wait (the DataLoader event simulation of tests/test_loader_handover.py holds)."""
    def waits(cpu_s: float) -> list[float]:
        cpu = {"name": "host", "cores": 16, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 1e4}
        scenario = {"name": "h", "system": {"storage": {"device": "micron-7450-pro"}, "server": {"cpu": cpu, "memory": 64 * 2**30}},
                    "workload": {"kind": "dlio", "model": "custom", "record_length": MiB, "batch_size": 1, "num_files": 24,
                                 "computation_time": 0.02, "read_threads": 2, "prefetch_size": 1, "accelerators": 2,
                                 "epochs": 2, "cpu_bytes_per_core_second": 1e9, "loader_start": 0.0, "epoch_overhead": 0.0,
                                 "step_overhead": 1e-3, "handover_seconds": 2e-3, "handover_cpu_seconds": cpu_s,
                                 "search_au": False, "mlperf_dataset_rule": False}}
        document, _ = run_scenario(load(scenario))
        return [x for row in sorted(document["dlio"]["steps"]["rows"], key=lambda r: (r[0], r[1])) for x in row]
    assert waits(0.7e-3) == pytest.approx(waits(0.0), abs=1e-9)


def test_a_saturated_host_also_takes_the_hand_overs_cpu():
    """Oracle: work conservation, as above, with the trainers' hand-over CPU in the work: the cached epoch of a
    loader-bound run on 2 cores lasts at least (batches + loops + hand-overs' CPU) / cores."""
    files, cores, batch_s, loop_s, ho_s, compute_s, workers = 48, 2, 0.03, 1e-3, 2e-3, 0.005, 2
    cpu = {"name": "host", "cores": cores, "tdp_W": 10.0, "idle_W": 2.0, "memory_bandwidth_GBps": 1e4}
    scenario = {"name": "h", "system": {"storage": {"device": "micron-7450-pro"}, "server": {"cpu": cpu, "memory": 64 * 2**30}},
                "workload": {"kind": "dlio", "model": "custom", "record_length": MiB, "batch_size": 1, "num_files": files,
                             "computation_time": compute_s, "read_threads": workers, "prefetch_size": 2, "accelerators": 2,
                             "epochs": 2, "cpu_bytes_per_core_second": MiB / batch_s, "loader_start": 0.0, "epoch_overhead": 0.0,
                             "step_overhead": loop_s, "handover_seconds": ho_s, "handover_cpu_seconds": ho_s,
                             "search_au": False, "mlperf_dataset_rule": False}}
    document, _ = run_scenario(load(scenario))
    t = _epoch2(document)
    work = 2 * (files // 2) * (batch_s + loop_s + ho_s)
    assert work / cores * (1 - 1e-9) <= t <= work / cores + workers * (loop_s + ho_s + compute_s) * (1 + 1e-9)


@settings(max_examples=4, deadline=None)
@given(cv=st.floats(0.1, 0.8), batch_ms=st.floats(2.0, 40.0))
def test_a_worker_never_holds_more_than_one_core(cv: float, batch_ms: float):
    """Oracle: a loader worker is one process, so it runs on at most one core whatever its batch costs (a batch cheaper
    than the mean finishes sooner on that core, it does not spread over more).  On 16 cores the 2 ranks' 4 workers and
    their 2 trainers can hold at most 6 cores at any instant, so the CPU's power never exceeds idle + 6 cores' share of
    the dynamic power (the CPU's power is linear in the cores busy, models.compute).  Before the batch's CPU per byte
    scaled with its cost, a cheap batch ran at several cores' rate and the peak reached the whole package's power."""
    cores, tdp_W, idle_W = 16, 10.0, 2.0
    document = _run(cores, batch_cpu_s=batch_ms * 1e-3, loop_s=1e-3, compute_s=0.05, cv=cv, files=48)
    peak_W = document["energy"]["components"]["cpu"]["peak_power_W"]
    assert peak_W <= idle_W + 6 * (tdp_W - idle_W) / cores + 1e-6
