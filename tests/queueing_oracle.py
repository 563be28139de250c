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
