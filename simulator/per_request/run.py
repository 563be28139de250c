"""Run one scenario in the per-request mode and assemble the same Simulation the fluid mode returns."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import simpy
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.per_request import fio, gds, gnn
from iowatt.simulator.per_request.result import Result
from iowatt.simulator.run import Simulation, shared_metrics
from iowatt.simulator.system import SystemConfig, SystemRuntime
from iowatt.simulator.workloads import RunContext, WorkloadConfigError
from pydantic import BaseModel

RUNNERS: dict[str, Callable[[RunContext, BaseModel], Result]] = {
    "fio": fio.run,  # type: ignore[dict-item]
    "gds_read": gds.run,  # type: ignore[dict-item]
    "gnn": gnn.run,  # type: ignore[dict-item]
}


def simulate(system_config: SystemConfig, params: BaseModel, seed: int, ramp_s: float = 0.0) -> Simulation:
    """The scenario run request by request; `ramp_s` (fio only) leaves a warm-up out of the rates, as fio's ramp_time."""
    kind = str(params.model_dump().get("kind", ""))
    runner = RUNNERS.get(kind)
    if runner is None:
        raise WorkloadConfigError(
            f"--mode per-request: expected a workload of kind {', '.join(sorted(RUNNERS))}, found {kind!r} (it runs in the fluid mode)"
        )
    env = simpy.Environment()
    engine = FlowEngine(env)
    system = SystemRuntime(engine, system_config)
    ctx = RunContext(env, engine, system, np.random.default_rng(seed))
    started = time.perf_counter()
    result = fio.run(ctx, params, ramp_s) if kind == "fio" else runner(ctx, params)  # type: ignore[arg-type]
    wall = time.perf_counter() - started
    metrics, energy = shared_metrics(system, result.outcome.metrics, result.duration_s)
    report = {"mode": "per-request", "events": result.events, "requests": result.requests,
              "requests_per_wall_second": result.requests / wall if wall > 0 else 0.0}
    return Simulation(metrics, result.outcome.detail, energy, report, result.outcome.units, wall, engine)
