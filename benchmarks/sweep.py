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

import os
import time
from typing import Any

from checks import check

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


# ------------------------------------------------------------------------------------------ row 8 of run.py


def _sweep_api(count: int, jobs: int) -> tuple[float, int, int]:
    """(seconds including pool start-up, cases done, cases failed) through scenarios.sweep."""
    from iowatt.scenarios.executors import open_executor
    from iowatt.scenarios.sweep import Sweep, load_base, run_sweep

    base, origin = load_base(LIBRARY_SCENARIO)
    began = time.perf_counter()
    with open_executor(jobs=jobs) as executor:
        result = run_sweep(Sweep(base=base, origin=origin, grid=grid(count)), executor)
    return time.perf_counter() - began, result.done, result.failed


def _sweep_futures(count: int, jobs: int) -> tuple[float, int, int]:
    """The same with concurrent.futures and run_scenario directly (used if the sweep API is unavailable)."""
    from concurrent.futures import ProcessPoolExecutor

    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(run_variant, cases(count)))
    return time.perf_counter() - began, len(results), 0


def row_sweep(quick: bool) -> dict[str, Any]:
    count = 6 if quick else 60  # fill-study variants: checkpoints per pass x power states; see benchmarks/sweep.py
    runner = _sweep_api
    how = "scenarios.sweep.run_sweep on open_executor(jobs)"
    try:
        _sweep_api(2, 1)
    except Exception as error:  # the sweep API is someone else's and may be mid-change: fall back, and say so
        runner = _sweep_futures
        how = f"concurrent.futures + run_scenario (scenarios.sweep failed: {type(error).__name__}: {error})"
    per_jobs = {}
    for jobs in (1, 2):
        seconds, done, failed = runner(count, jobs)
        per_jobs[jobs] = {"seconds": seconds, "done": done, "failed": failed, "scenarios_per_second": done / seconds}
    speedup = per_jobs[2]["scenarios_per_second"] / per_jobs[1]["scenarios_per_second"]
    return {
        "id": 8,
        "name": "sweep throughput, fill-study variants",
        "checks": [
            check("scenarios_per_second_1_worker", per_jobs[1]["scenarios_per_second"], "1/s", "info", None),
            check("scenarios_per_second_2_workers", per_jobs[2]["scenarios_per_second"], "1/s", "info", None),
            check("speedup_2_vs_1", speedup, "x", "info", None),
        ],
        "detail": {"how": how, "cases": count, "jobs": {str(k): v for k, v in per_jobs.items()}, "speedup_2_vs_1": speedup,
                   "cpu_count": os.cpu_count(), "note": "seconds include the worker pool's start-up"},
    }
