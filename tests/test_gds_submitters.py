"""gdsio's threads are the servers of cuFile's CPU work (models.gds, issue 35).

Oracles: the utilisation law of a station (X <= servers / S: one gdsio thread submitting a batch of reads is one
server, however many cores the host has); an independent simulation of the same network, one read at a time
(simulator.per_request: an FCFS station of min(threads, cores) servers in front of the drives' flash units).
"""

from __future__ import annotations

import pytest
from iowatt.models import catalog
from iowatt.models.gds import cufile_cpu_s_per_io
from iowatt.scenarios.loader import load
from iowatt.simulator.per_request.run import simulate as per_request
from iowatt.simulator.run import simulate as fluid

# six Gen5 drives and 128 small reads in flight: the drives could serve millions of 16 KiB reads a second
SYSTEM = {"server": {"cpu": "intel-xeon-gold-6430", "sockets": 2, "memory": "512 GB"}, "gpus": {"count": 1, "model": "nvidia-l4"},
          "storage": {"device": "solidigm-d7-ps1010", "count": 6}}


def _scenario(threads: int, depth: int, reads_per_thread: int):
    return load({"name": "batch", "system": SYSTEM, "workload": {
        "kind": "gds_read", "api": "batch", "block_size": "16k", "threads": threads, "io_depth": depth,
        "size_per_thread": f"{16 * reads_per_thread}k", "pattern": "rand"}}, [])


def _bound_iops(threads: int) -> float:
    core_speed = catalog.spec_from("cpu", "intel-xeon-gold-6430").core_speed  # type: ignore[attr-defined]
    return threads * core_speed / cufile_cpu_s_per_io()


def test_one_batch_thread_is_one_cpu_server():
    """128 batched 16 KiB reads from one thread: the thread's own cuFile work bounds the rate (utilisation law),
    and with so many reads queued it binds: the rate sits at the bound."""
    one = fluid(_scenario(1, 128, 4096).system, _scenario(1, 128, 4096).workload, 1).metrics
    assert one["iops"] <= _bound_iops(1) * (1 + 1e-9)
    assert one["iops"] == pytest.approx(_bound_iops(1), rel=0.02)


def test_more_threads_lift_the_bound_with_the_same_reads_in_flight():
    """The same 128 reads in flight from 8 threads (16 each): eight servers, so the rate passes one thread's bound."""
    eight = fluid(_scenario(8, 16, 512).system, _scenario(8, 16, 512).workload, 1).metrics
    assert eight["iops"] > 2 * _bound_iops(1)
    assert eight["iops"] <= _bound_iops(8) * (1 + 1e-9)


def test_the_per_request_mode_agrees_on_one_batch_thread():
    """Oracle: the per-request simulation of one submitting thread (one FCFS server) before six drives."""
    scenario = _scenario(1, 128, 20000)
    sampled = per_request(scenario.system, scenario.workload, 7).metrics
    steady = fluid(scenario.system, scenario.workload, 1).metrics
    assert sampled["iops"] == pytest.approx(steady["iops"], rel=0.05)
