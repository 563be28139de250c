"""Worker for the sweep-throughput row: load and run one scenario variant in a pool process."""

from __future__ import annotations

LIBRARY_SCENARIO = "checkpoint_llama405b_8gpu"


def warm(_: int = 0) -> bool:
    import simulator.workloads.checkpoint  # noqa: F401

    return True


def run_variant(overrides: tuple[str, ...]) -> float:
    from scenarios.loader import load
    from scenarios.run import run_scenario

    document, _ = run_scenario(load(LIBRARY_SCENARIO, list(overrides)))
    return document["metrics"]["simulated_seconds"]


def variants(count: int) -> list[tuple[str, ...]]:
    sizes = ["100 GB", "415 GB", "912 GB", "1636 GB", "4 TB"]
    states = ["PS0", "PS1", "PS2", "PS3", "PS4", "PS5", "PS6", "PS7"]
    out = []
    for i in range(count):
        out.append((f"workload.size={sizes[i % len(sizes)]}", f"storage.power_state={states[(i // len(sizes)) % len(states)]}"))
    return out
