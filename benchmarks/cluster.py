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
from iowatt.simulator.flows import FlowEngine, run_until_idle

GPUS_PER_NODE = 8
GPU_LINK_Bps = 50e9                  # PCIe Gen5 x16 device-to-host copy, after copy efficiency
CLIENT_NIC_Bps = 200e9 / 8           # 200 GbE per client node
STORAGE_NODES = 6
EC_DATA, EC_PARITY = 4, 2
STORAGE_NIC_Bps = 2 * 200e9 / 8      # 2x 200 GbE per storage node
DRIVES_PER_NODE = 10
DRIVE_WRITE_Bps = 5.3e9              # Micron 7450 class sequential write
CHECKPOINT_BYTES = 5.29e12           # Llama3-405B, model + optimizer: MLPerf Storage checkpoint table (published_results.yaml)
SHARD_BYTES = CHECKPOINT_BYTES / 1000  # spread over 1,000 GPUs
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

    def launch():
        # the ranks start inside the run, as a scenario's workload starts them, so the engine's collector settings
        # (flow_network.fewer_young_collections) cover them too: 16,384 generators made before the run cost 0.04-0.4 s
        # of full collections over the harness's own heap
        for g in range(gpus):
            env.process(rank(g))
        yield env.timeout(0.0)

    env.process(launch())
    env.process(probe())
    run_until_idle(env, engine)
    wall = time.perf_counter() - began
    cpu = time.process_time() - began_cpu
    return {
        "gpus": gpus,
        "wall_s": wall,
        "cpu_s": cpu,
        "form": "primitives",
        "simulated_s": env.now,
        "concurrent_flows": concurrent[0],
        "recomputes": engine.stats.recomputes,
        "events": engine.stats.events + engine.stats.batches,
    }


def cluster_scenario(gpus: int) -> dict:
    """The same checkpoint as a scenario on `storage.kind: cluster` (the study-5 cluster of
    scenarios/library/cluster/: 6 nodes x 10 Micron 7450, EC 4+2, 2x 200 GbE per node), one
    client node per 8 GPUs, one rank per GPU.  The cluster kind lumps identical nodes and
    clients into one representative each (simulator/storage/cluster_volume.py), and all ranks
    start together, so this is the engine's easy case; run_cluster above is the hard one."""
    return {
        "name": f"bench_cluster_{gpus}_gpus",
        "seed": 1,
        "system": {
            "server": {"cpu": "amd-epyc-9654", "sockets": 1, "memory": "256 GB"},
            "gpus": {"model": "nvidia-h100-sxm", "count": GPUS_PER_NODE},
            "storage": {
                "kind": "cluster", "nodes": STORAGE_NODES, "drives_per_node": DRIVES_PER_NODE, "device": "micron-7450-pro",
                "erasure_coding": f"{EC_DATA}+{EC_PARITY}", "node": {"cpu": "amd-epyc-9654p", "sockets": 1, "memory": "384 GB"},
                "node_nics": 2, "fabric": "200gbe", "protocol": "tcp", "clients": -(-gpus // GPUS_PER_NODE), "client_nics": 1,
            },
        },
        "workload": {"kind": "checkpoint", "size": CHECKPOINT_BYTES, "ranks": gpus, "block_size": "1 MiB"},
    }


def run_cluster_scenario(gpus: int) -> dict[str, float]:
    """Wall time of run_scenario on cluster_scenario(gpus), and the flows moving at once (from a second, recorded run)."""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    scenario = load(cluster_scenario(gpus))
    began = time.perf_counter()
    began_cpu = time.process_time()
    document, _ = run_scenario(scenario)
    wall = time.perf_counter() - began
    cpu = time.process_time() - began_cpu
    _, recorded = run_scenario(scenario, record=True)
    trace = recorded.engine_obj.rate_trace
    first = min(t for t, _, _ in trace)
    moving = len({name for t, name, rate in trace if t == first and rate > 0.0 and name.startswith("ckpt.")})
    return {
        "gpus": gpus,
        "wall_s": wall,
        "cpu_s": cpu,
        "form": "scenario",
        "simulated_s": document["metrics"]["simulated_seconds"],
        "concurrent_flows": moving,
        "recomputes": document["engine"]["recomputes"],
        "events": document["engine"]["events"] + document["engine"]["batches"],
    }
