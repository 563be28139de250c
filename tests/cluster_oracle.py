"""Per-request SimPy oracles for the cluster laws: a closed loop of fork-join stages, and erasure placements.

simulate_loop: `chains` clients each keep `per_chain` requests in flight; a request
crosses the stages in order; at a stage it forks into `branches` pieces on distinct
random stations (a private stage: the client's own station), each piece waits for one
of the station's servers (FCFS) and holds it an exponential time of mean service_s
(the product-form assumption MVA rests on); the request moves on when all its pieces
are done, then waits `delay_s`.  Independent of models.mva: it only reads the stages'
numbers.
"""

from __future__ import annotations

import numpy as np
import simpy
from iowatt.models.mva import Stage


def simulate_loop(stages: list[Stage], per_chain: int, chains: int, delay_s: float, requests: int = 20000, seed: int = 5) -> float:
    """Throughput (requests/s) after a 10 % warm-up."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    pools = {}
    for s in stages:
        count = chains if s.private else round(s.stations)
        pools[s.name] = [simpy.Resource(env, capacity=round(s.servers)) for _ in range(count)]
    done = [0]
    warm, t_warm = requests // 10, [0.0]

    def piece(station: simpy.Resource, mean: float):
        with station.request() as req:
            yield req
            yield env.timeout(float(rng.exponential(mean)))

    def customer(chain: int):
        while done[0] < requests:
            for s in stages:
                if s.private:
                    chosen = [pools[s.name][chain]]
                else:
                    chosen = [pools[s.name][i] for i in rng.choice(len(pools[s.name]), round(s.branches), replace=False)]
                yield simpy.AllOf(env, [env.process(piece(st, s.service_s)) for st in chosen])
            if delay_s > 0:
                yield env.timeout(delay_s)
            done[0] += 1
            if done[0] == warm:
                t_warm[0] = env.now

    for chain in range(chains):
        for _ in range(per_chain):
            env.process(customer(chain))
    env.run()
    return (done[0] - warm) / (env.now - t_warm[0])


def monte_carlo_degraded_reads(k: int, m: int, nodes: int, failed: int, pieces: int, trials: int = 40000, seed: int = 7) -> float:
    """Mean pieces read per request when `failed` of `nodes` are down: a stripe's k + m chunks sit on distinct
    random nodes; the request wants `pieces` of the k data chunks; if any wanted chunk is on a failed node the
    request reads k surviving chunks of the stripe (Reed-Solomon), else just its pieces."""
    rng = np.random.default_rng(seed)
    down = set(range(failed))
    total = 0
    for _ in range(trials):
        placement = rng.choice(nodes, k + m, replace=False)
        wanted = placement[:pieces]
        total += k if any(int(n) in down for n in wanted) else pieces
    return total / trials
