"""models.mva: the closed loop of service stages (Schweitzer's approximate MVA, Seidmann's multi-server stations).

Oracles: the exact mean-value recursion of Reiser & Lavenberg (1980) for single-server
stations (Schweitzer's approximation is known to stay within a few per cent of it); the
exact MVA of c balanced flash units (models.ssd's concurrency law, whose own oracle is a
per-request simulation); a per-request SimPy simulation of the same network
(tests/cluster_oracle.py: exponential service, FCFS servers, private client stations,
fork-join); and the asymptotic bounds of operational analysis (Denning & Buzen 1978):
N / (Z + N sum D) <= X(N) <= min(N / (Z + sum D), 1 / D_max).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models.mva import Stage, response_s, solve
from iowatt.simulator.storage.contract import ConcurrencyLaw

from tests.cluster_oracle import simulate_loop


def exact_mva(demands: list[float], population: int, delay_s: float) -> float:
    """Reiser & Lavenberg's exact recursion for single-server, single-chain networks."""
    queue = np.zeros(len(demands))
    d = np.array(demands)
    x = 0.0
    for n in range(1, population + 1):
        r = d * (1.0 + queue)
        x = n / (delay_s + r.sum())
        queue = x * r
    return x


def test_one_request_sees_no_queue():
    """N = 1: the response time is the delay plus every stage's one-branch service (exact)."""
    stages = [Stage("fe", 10e-6, servers=2, private=True), Stage("node", 30e-6, servers=4, stations=6, branches=4), Stage("ssd", 80e-6, stations=60)]
    sol = solve(stages, 1.0, chains=1.0, delay_s=40e-6)
    assert sol.response_s == pytest.approx(40e-6 + 10e-6 + 30e-6 + 80e-6, rel=1e-9)
    assert response_s(stages, 0.0, 1.0, 1.0, 40e-6) == pytest.approx(sol.response_s, rel=1e-9)


def test_a_saturated_single_server_is_exact():
    """One server, no delay: it is always busy, X = 1 / d for every N (exact MVA: R(N) = N d)."""
    for n in (1, 2, 7, 50):
        assert solve([Stage("q", 2e-3)], float(n)).throughput == pytest.approx(500.0, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 8, 32, 128])
def test_balanced_flash_units_give_the_ssd_concurrency_law(n: int):
    """c = L0 / S units of service L0, one request per unit at random: N / (L0 + (N - 1) S), the exact MVA."""
    l0, s = 80e-6, 10e-6
    x = solve([Stage("units", l0, stations=l0 / s)], float(n)).throughput
    assert x == pytest.approx(ConcurrencyLaw(l0, s).requests_per_second(n), rel=1e-9)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(demands=st.lists(st.floats(0.05, 1.0), min_size=1, max_size=5), delay=st.floats(0.0, 3.0), n=st.integers(1, 60))
def test_schweitzer_within_eight_percent_of_exact_mva(demands: list[float], delay: float, n: int):
    x = solve([Stage(f"s{i}", d) for i, d in enumerate(demands)], float(n), 1.0, delay).throughput
    assert x == pytest.approx(exact_mva(demands, n, delay), rel=0.08)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(d1=st.floats(1e-6, 1e-3), c1=st.integers(1, 8), d2=st.floats(1e-6, 1e-3), c2=st.integers(1, 16), k2=st.integers(1, 12),
       p=st.integers(1, 4), delay=st.floats(0.0, 1e-3), n=st.integers(1, 200), extra=st.integers(1, 50), chains=st.integers(1, 12))
def test_asymptotic_bounds_and_monotone_in_n(d1, c1, d2, c2, k2, p, delay, n, extra, chains):
    stages = [Stage("client", d1, servers=c1, private=True), Stage("node", d2, servers=c2, stations=k2, branches=min(p, k2))]
    x = solve(stages, float(n), float(chains), delay).throughput
    r0 = delay + d1 + d2
    capacity = min(s.capacity_per_s() * (chains if s.private else 1.0) for s in stages)
    assert x <= min(n / r0, capacity) * (1 + 1e-9)
    assert x >= n / (delay + n * (d1 + min(p, k2) * d2)) * (1 - 1e-9)
    assert solve(stages, float(n + extra), float(chains), delay).throughput >= x * (1 - 1e-9)


@pytest.mark.parametrize(
    ("stages", "per_chain", "chains", "delay"),
    [
        # two clients with private two-core frontends, a shared four-node tier with two cores each
        ([Stage("fe", 20e-6, servers=2, private=True), Stage("node", 50e-6, servers=2, stations=4)], 8, 2, 30e-6),
        # a single-core frontend that saturates against a wide node tier
        ([Stage("fe", 40e-6, servers=1, private=True), Stage("node", 30e-6, servers=4, stations=3)], 16, 3, 100e-6),
        # balanced: three tiers near each other
        ([Stage("fe", 15e-6, servers=1, private=True), Stage("nic", 10e-6, stations=2), Stage("disk", 60e-6, stations=4)], 6, 2, 20e-6),
    ],
)
def test_solution_matches_a_per_request_simulation(stages, per_chain, chains, delay):
    """Private and multi-server stations against the SimPy oracle (exponential service): within 8 %."""
    x = solve(stages, float(per_chain * chains), float(chains), delay).throughput
    assert x == pytest.approx(simulate_loop(stages, per_chain, chains, delay), rel=0.08)


def test_fork_join_reaches_the_busiest_stage_at_depth():
    """A request forked over 4 of 6 nodes: at depth the loop runs at the node tier's capacity, as the oracle does."""
    stages = [Stage("fe", 5e-6, servers=4, private=True), Stage("node", 40e-6, servers=2, stations=6, branches=4)]
    capacity = stages[1].capacity_per_s()
    x = solve(stages, 96.0, 2.0, 10e-6).throughput
    assert x == pytest.approx(capacity, rel=0.03)
    assert simulate_loop(stages, 48, 2, 10e-6, requests=12000) == pytest.approx(capacity, rel=0.05)


def test_background_work_takes_capacity_but_no_response_time():
    """Work left behind (a destage) lowers the saturation throughput to servers / (foreground + background); with
    nothing flowing it adds nothing to a request's time (mixed networks: open-class load only stretches queueing)."""
    fg = Stage("drive", 10e-6, servers=2, stations=3)
    bg = Stage("drive", 10e-6, servers=2, stations=3, background_s=10e-6)
    assert response_s([bg], 0.0, 1.0) == pytest.approx(response_s([fg], 0.0, 1.0), rel=1e-12)
    assert solve([bg], 1.0).response_s > solve([fg], 1.0).response_s
    assert solve([bg], 500.0).throughput == pytest.approx(6 / 20e-6, rel=0.02)
    assert solve([bg], 500.0).throughput < solve([fg], 500.0).throughput


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="population must be > 0"):
        solve([Stage("q", 1.0)], 0.0)
    with pytest.raises(ValueError, match="servers must be finite and > 0"):
        Stage("q", 1.0, servers=0.0)
    with pytest.raises(ValueError, match="service_s must be finite"):
        Stage("q", math.inf)
