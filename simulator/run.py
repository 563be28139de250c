"""Run one workload on one system and assemble the result document."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy
from iowatt.simulator import workloads
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.system import SystemConfig, SystemRuntime
from pydantic import BaseModel

WH = 3600.0


@dataclass
class Simulation:
    """What one run produced, before it is written out."""

    metrics: dict[str, float]
    detail: dict[str, Any]
    energy: dict[str, Any]
    engine: dict[str, Any]
    units: dict[str, str]
    wall_seconds: float
    engine_obj: FlowEngine


def energy_report(system: SystemRuntime, duration: float) -> dict[str, Any]:
    components = {}
    groups: dict[str, float] = {}
    for m in system.engine.meters.values():
        components[m.name] = {
            "group": m.group,
            "energy_J": m.energy_J,
            "mean_power_W": m.energy_J / duration if duration > 0 else m.power_W,
            "peak_power_W": m.peak_W,
        }
        groups[m.group] = groups.get(m.group, 0.0) + m.energy_J
    return {
        "components": components,
        "by_group_J": groups,
        "storage_J": groups.get("storage", 0.0),
        "system_J": sum(groups.values()),
    }


def shared_metrics(system: SystemRuntime, workload_metrics: dict[str, float], duration: float) -> tuple[dict[str, float], dict[str, Any]]:
    """The workload's metrics plus those every run reports (duration, storage and system energy), and the energy report."""
    energy = energy_report(system, duration)
    metrics = dict(workload_metrics)
    metrics["simulated_seconds"] = duration
    metrics["ssd_energy_J"] = energy["storage_J"]
    metrics["ssd_energy_Wh"] = energy["storage_J"] / WH
    metrics["ssd_mean_power_W"] = energy["storage_J"] / duration / len(system.volume.drives) if duration > 0 else 0.0
    metrics["system_energy_J"] = energy["system_J"]
    metrics["system_energy_Wh"] = energy["system_J"] / WH
    metrics["system_mean_power_W"] = energy["system_J"] / duration if duration > 0 else 0.0
    return metrics, energy


def simulate(system_config: SystemConfig, params: BaseModel, seed: int, *, record: bool = False) -> Simulation:
    env = simpy.Environment()
    engine = FlowEngine(env, record=record)
    system = SystemRuntime(engine, system_config)
    workload = workloads.get(params.kind)  # type: ignore[attr-defined]
    ctx = workloads.RunContext(env, engine, system, np.random.default_rng(seed))
    started = time.perf_counter()
    outcome = workload.run(ctx, params)
    engine.finish()
    wall = time.perf_counter() - started
    duration = env.now
    metrics, energy = shared_metrics(system, outcome.metrics, duration)
    stats = engine.stats
    engine_report = {
        "events": stats.events,
        "stale_events": stats.stale_events,
        "batches": stats.batches,
        "recomputes": stats.recomputes,
        "flows": stats.flows_completed,
        "breakpoints": stats.breakpoints,
    }
    return Simulation(metrics, outcome.detail, energy, engine_report, outcome.units, wall, engine)
