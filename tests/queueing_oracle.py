"""Per-request SimPy oracle for the SSD concurrency law, shared by the law and fio tests.

n clients in a closed loop, each request sent to one of `units` FCFS flash units chosen
at random, exponential service of mean unit_s: the network models.ssd's law solves by MVA.
"""

from __future__ import annotations

import numpy as np
import simpy


def per_io_units(n: int, units: int, unit_s: float, requests: int = 12000, seed: int = 11) -> float:
    """Throughput (requests/s) after a 10 % warm-up."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    servers = [simpy.Resource(env, capacity=1) for _ in range(units)]
    done = [0]
    warm, t_warm = requests // 10, [0.0]

    def client():
        while done[0] < requests:
            with servers[int(rng.integers(units))].request() as req:
                yield req
                yield env.timeout(float(rng.exponential(unit_s)))
            done[0] += 1
            if done[0] == warm:
                t_warm[0] = env.now

    for _ in range(n):
        env.process(client())
    env.run()
    return (done[0] - warm) / (env.now - t_warm[0])


def mva(demands_s: list[float], delay_s: float, n: int) -> float:
    """Exact single-class MVA (Lazowska et al., Quantitative System Performance, 1984, ch. 6): mean latency of n
    customers over queueing stations of the given demands (seconds per visit x visits) and a pure delay."""
    queues = [0.0] * len(demands_s)
    latency = delay_s + sum(demands_s)
    for k in range(1, n + 1):
        times = [d * (1.0 + q) for d, q in zip(demands_s, queues, strict=True)]
        latency = delay_s + sum(times)
        x = k / latency
        queues = [x * t for t in times]
    return latency


def law_latency(l0: float, service: float, n: float, units: float | None = None) -> float:
    """The SSD concurrency law's mean latency by the textbook MVA: c = L0 / S (or `units`) units, floor(c) of demand
    S and one of demand (c - floor(c)) S, plus a delay L0 - c S; a fractional n interpolates between integers."""
    if service <= 0.0:
        return l0
    c = l0 / service if units is None else min(units, l0 / service)
    whole = int(c)
    demands = [service] * whole + ([(c - whole) * service] if c > whole else [])
    delay = l0 - c * service
    low = int(n)
    r_low = mva(demands, delay, low)
    if n == low:
        return r_low
    return r_low + (n - low) * (mva(demands, delay, low + 1) - r_low)
