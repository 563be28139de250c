"""The sweep-throughput row's cases: variants of the StorageReview fill study.

Each case is the 61.44 TB QLC fill study (scenarios/library/storagereview/
ckpt_p5336.yaml: 3 passes of checkpoints of 1,636 GB) with a different number
of checkpoints per pass and NVMe power state: ~100 checkpoints and ~200 engine
events per case, a few tens of milliseconds each, so the workers' time, not
the parent's bookkeeping, dominates a sweep.

`grid(count)` gives the axes as scenarios.sweep takes them (KEY, [values]);
`cases(count)` gives the same cases as `--set` lists, and `run_variant` runs
one in a pool process, for the fallback that uses concurrent.futures and
run_scenario directly.
"""

from __future__ import annotations

LIBRARY_SCENARIO = "storagereview/ckpt_p5336"
# the Solidigm D5-P5336's three power states, PS0 25 W, PS1 15 W, PS2 10 W (models/catalog/ssd.yaml)
STATES = ["PS0", "PS1", "PS2"]


def grid(count: int) -> list[tuple[str, list[str]]]:
    """About `count` distinct cases: up to 33 checkpoints per pass (as the study; 33 x 1,636 GB fills
    88 % of the drive) and fewer, times every power state."""
    per_state = min(33, max(1, -(-count // len(STATES))))
    return [("workload.checkpoints_per_pass", [str(n) for n in range(34 - per_state, 34)]), ("storage.power_state", list(STATES))]


def cases(count: int) -> list[tuple[str, ...]]:
    (pass_key, passes), (state_key, states) = grid(count)
    return [(f"{pass_key}={n}", f"{state_key}={p}") for n in passes for p in states]


def run_variant(overrides: tuple[str, ...]) -> float:
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    document, _ = run_scenario(load(LIBRARY_SCENARIO, list(overrides)))
    return document["metrics"]["simulated_seconds"]
