"""DLIO without its per-step barrier (`step_barrier: false`, as Volumez's open MLPerf Storage v1.0 submission ran it).

Oracles: an independent Monte-Carlo (numpy, not the flow engine) of n ranks whose loop time per step is a normal
floored at zero: with the barrier a step costs the compute plus the largest of the n ranks' loops (order statistics);
without it each rank pays its own, so AU is the renewal-reward ratio c / (c + E[loop]) whatever n is.  The published
pair the option exists for (Volumez's 411 H100 ranks with and without the barrier) is a row of the validation table
(mlps1.open.volumez.*), scored with the rest by tests/test_published_table.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from iowatt.simulator.run import simulate

from tests.test_workload_dlio import _custom, _system

COMPUTE_S = 20e-3  # each step's compute: long beside the loop, so the AUs differ by the loop's order statistic


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 48), sd_ms=st.floats(0.5, 4.0))
@example(n=48, sd_ms=4.0)
def test_without_the_barrier_a_rank_pays_only_its_own_loop(n, sd_ms):
    """With idle storage and the loop spreading from step to step, n ranks without the barrier reach the one-rank AU
    c / (c + E[max(0, loop)]) (renewal-reward, the referee's mean over 200,000 draws), within 2 %; with the barrier they
    pay E[max of n] (referee: the mean largest of n draws), and the gap between the two runs is that order statistic's."""
    c, mu, sd = COMPUTE_S, 4e-3, sd_ms * 1e-3
    rng = np.random.default_rng(5)
    own = np.maximum(0.0, rng.normal(mu, sd, 200_000)).mean()
    slowest = np.maximum(0.0, rng.normal(mu, sd, (20_000, n))).max(axis=1).mean()
    free = _tf_like(n, mu, sd, barrier=False)
    held = _tf_like(n, mu, sd, barrier=True)
    assert free["train_au_percentage"] / 100.0 == pytest.approx(c / (c + own), rel=0.02)
    assert held["train_au_percentage"] / 100.0 == pytest.approx(c / (c + slowest), rel=0.02)
    assert free["train_au_ceiling_percentage"] / 100.0 == pytest.approx(c / (c + mu), rel=0.02)
    assert held["train_au_percentage"] < free["train_au_percentage"]


def _tf_like(n: int, mu: float, sd: float, barrier: bool) -> dict[str, float]:
    """A TensorFlow loop states its spread (tf_step_overhead_sd): n ranks of 4 KiB samples, storage idle.  Steps enough
    that the run's own draws pin the mean slowest loop: 2,000 for two ranks (at 200, one seed's draws alone sat 2.3 %
    off the referee at a 4 ms spread), fewer where more ranks' maximum spreads less (at least 100)."""
    steps = max(100, 4000 // n)
    p = _custom(record_length=4096, batch_size=1, computation_time=COMPUTE_S, num_files=n * steps, accelerators=n,
                framework="tensorflow", format="tfrecord", tf_step_overhead=mu, tf_step_overhead_sd=sd, read_threads=2,
                prefetch_size=4, step_barrier=barrier)
    return simulate(_system(), p, seed=7).metrics


def test_one_rank_does_not_notice_the_barrier():
    """A barrier of one rank opens as it arrives: the run is the same with and without it (the same draws)."""
    a = _tf_like(1, 4e-3, 2e-3, barrier=True)
    b = _tf_like(1, 4e-3, 2e-3, barrier=False)
    for key in ("train_au_percentage", "train_throughput_mean_samples_per_second"):
        assert a[key] == pytest.approx(b[key], rel=1e-9)
