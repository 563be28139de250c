"""A cluster checkpoint built directly on FlowEngine: GPUs -> client NICs -> an erasure-coded store.

Every GPU writes its shard as one flow.  Per byte a flow crosses its GPU's
device-to-host link, its node's client NIC, and - because a 4+2 erasure code
writes 6 chunks for every 4 data chunks, spread evenly over 6 storage nodes -
each storage node's NIC and drive set at (6/4)/6 = 0.25 bytes per byte.
Ranks start with a seeded straggler skew, so flows start and finish at
distinct instants: every start and every completion is an allocation of the
whole cluster (they all share the store), which is the engine's worst case.
"""

from __future__ import annotations

import time

import numpy as np
import simpy

from simulator.flows import FlowEngine, run_until_idle

GPUS_PER_NODE = 8
GPU_LINK_Bps = 50e9                  # PCIe Gen5 x16 device-to-host copy, after copy efficiency
CLIENT_NIC_Bps = 200e9 / 8           # 200 GbE per client node
STORAGE_NODES = 6
EC_DATA, EC_PARITY = 4, 2
STORAGE_NIC_Bps = 2 * 200e9 / 8      # 2x 200 GbE per storage node
DRIVES_PER_NODE = 10
DRIVE_WRITE_Bps = 5.3e9              # Micron 7450 class sequential write
SHARD_BYTES = 5.29e12 / 1000         # a Llama3-405B checkpoint spread over 1,000 GPUs
START_SKEW_SECONDS = 2.0


def run_cluster(gpus: int, seed: int = 1) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    starts = np.sort(rng.uniform(0.0, START_SKEW_SECONDS, gpus))
    rng.shuffle(starts)
    env = simpy.Environment()
    engine = FlowEngine(env)
    began = time.perf_counter()
    began_cpu = time.process_time()
    nodes = -(-gpus // GPUS_PER_NODE)
    nics = [engine.constraint(f"client{n}.nic", CLIENT_NIC_Bps) for n in range(nodes)]
    per_node = (EC_DATA + EC_PARITY) / EC_DATA / STORAGE_NODES
    store = []
    for s in range(STORAGE_NODES):
        store.append((engine.constraint(f"store{s}.nic", STORAGE_NIC_Bps), per_node))
        store.append((engine.constraint(f"store{s}.drives", DRIVES_PER_NODE * DRIVE_WRITE_Bps), per_node))
    concurrent = [0]

    def rank(g: int):
        yield env.timeout(float(starts[g]))
        link = engine.constraint(f"gpu{g}.link_d2h", GPU_LINK_Bps)
        yield engine.transfer(f"ckpt.gpu{g}", SHARD_BYTES, [(link, 1.0), (nics[g // GPUS_PER_NODE], 1.0), *store])

    def probe():
        yield env.timeout(START_SKEW_SECONDS)
        concurrent[0] = len(engine.active_flows)

    for g in range(gpus):
        env.process(rank(g))
    env.process(probe())
    run_until_idle(env, engine)
    wall = time.perf_counter() - began
    cpu = time.process_time() - began_cpu
    return {
        "gpus": gpus,
        "wall_s": wall,
        "cpu_s": cpu,
        "simulated_s": env.now,
        "concurrent_flows": concurrent[0],
        "recomputes": engine.stats.recomputes,
        "events": engine.stats.events + engine.stats.batches,
    }
