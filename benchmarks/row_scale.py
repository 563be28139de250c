"""Row 6 of benchmarks/run.py: how the engine scales with GPUs (docs/benchmarks.md)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from typing import Any

from checks import check
from cluster import run_cluster, run_cluster_scenario


def _cluster_kind_available() -> bool:
    from iowatt.scenarios.schema import scenario_model

    return '"cluster"' in json.dumps(scenario_model().model_json_schema())


def _fit_exponent(points: list[dict[str, Any]], key: str) -> float:
    """Least-squares exponent b of seconds = a x GPUs^b (log-log)."""
    xs = [math.log(p["gpus"]) for p in points]
    ys = [math.log(p[key]) for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def _scale_points(run: Callable[[int], dict[str, Any]], sizes: list[int], repeat: int, quick: bool) -> list[dict[str, Any]]:
    points = []
    for gpus in sizes:
        reps = 1 if (quick or gpus >= 2000) else max(1, min(repeat, 3))  # the largest sizes take seconds each
        runs = [run(gpus) for _ in range(reps)]
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        points.append({**runs[-1], "wall_s": wall, "cpu_s": cpu, "repetitions": reps})
    return points


def row_scale(repeat: int, quick: bool) -> dict[str, Any]:
    # issue 33: up to 16,384 GPUs, and the growth exponent from 1,000 GPUs up (the quick sizes' upper half)
    sizes = [16, 32, 64, 128] if quick else [250, 500, 1000, 2000, 4096, 16384]
    target_gpus = 128 if quick else 1000
    tail_from = 64 if quick else 1000
    largest = sizes[-1]
    points = _scale_points(run_cluster, sizes, repeat, quick)
    scenario_points = _scale_points(run_cluster_scenario, sizes, repeat, quick) if _cluster_kind_available() else []
    exponent = _fit_exponent(points, "wall_s")
    tail = [p for p in points if p["gpus"] >= tail_from]
    tail_exponent = _fit_exponent(tail, "wall_s")
    at_target = next(p for p in points if p["gpus"] == target_gpus)
    at_largest = points[-1]
    checks = [
        check(f"wall_seconds_{target_gpus}_gpus", at_target["wall_s"], "s", "<=", 2.0 if not quick else None),
        check("concurrent_flows", at_target["concurrent_flows"], "flows", ">=", 1000 if not quick else None),
        *([] if largest == target_gpus else [check(f"wall_seconds_{largest}_gpus", at_largest["wall_s"], "s", "<=", 2.0 if not quick else None)]),
        check(f"cpu_seconds_{largest}_gpus", at_largest["cpu_s"], "s", "info", None),
        check(f"wall_growth_exponent_from_{tail[0]['gpus']}", tail_exponent, "", "<=", 1.2 if not quick else None),
        check(f"cpu_growth_exponent_from_{tail[0]['gpus']}", _fit_exponent(tail, "cpu_s"), "", "info", None),
    ]
    detail: dict[str, Any] = {
        "points": points,
        "exponent": exponent,
        "cpu_exponent": _fit_exponent(points, "cpu_s"),
        "tail_sizes": [p["gpus"] for p in tail],
        "tail_exponent": tail_exponent,
        "built_from": "FlowEngine primitives (benchmarks/cluster.py run_cluster): one constraint per GPU link, client NIC, "
        "storage-node NIC and drive set; ranks start with a 2 s seeded skew, so every start and end reallocates the whole cluster",
    }
    if scenario_points:
        s_target = next(p for p in scenario_points if p["gpus"] == target_gpus)
        checks += [
            check(f"scenario_wall_seconds_{target_gpus}_gpus", s_target["wall_s"], "s", "<=", 2.0 if not quick else None),
            check("scenario_concurrent_flows", s_target["concurrent_flows"], "flows", ">=", 1000 if not quick else None),
        ]
        detail["scenario_points"] = scenario_points
        detail["scenario_exponent"] = _fit_exponent(scenario_points, "wall_s")
        detail["scenario_form"] = ("run_scenario on storage.kind: cluster (benchmarks/cluster.py cluster_scenario); the kind lumps "
                                   "identical nodes and clients and all ranks start together: the easy case")
    return {"id": 6, "name": f"scale: cluster checkpoint, {target_gpus} GPUs -> 6-node EC 4+2 store", "checks": checks, "detail": detail}
