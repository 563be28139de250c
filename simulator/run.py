"""Run one workload on one system and assemble the result document."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

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
    storage: dict[str, Any] = field(default_factory=dict)  # the volume's closed loop (what binds), when it has one


# metric names of an earlier release, kept one release for the tests and documents that read them
DEPRECATED_ALIASES = {"ssd_mean_power_W": "ssd_mean_power_W_per_drive"}


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
    drives = {d.name: d.power_report() for d in system.volume.unique_drives}
    return {
        "components": components,
        "by_group_J": groups,
        "storage_J": groups.get("storage", 0.0),
        "system_J": sum(groups.values()),
        "drives": {name: report for name, report in drives.items() if report},
    }


def energy_metrics(energy: dict[str, Any], duration: float, drives: int) -> dict[str, float]:
    """The run's energy metrics, unit and scope in every name: `ssd_` = all drives together unless `_per_drive`."""
    storage, system = energy["storage_J"], energy["system_J"]
    out = {
        "ssd_energy_J": storage,
        "ssd_energy_Wh": storage / WH,
        "storage_power_W": storage / duration if duration > 0 else 0.0,
        "ssd_mean_power_W_per_drive": storage / duration / drives if duration > 0 and drives else 0.0,
        "system_energy_J": system,
        "system_energy_Wh": system / WH,
        "system_mean_power_W": system / duration if duration > 0 else 0.0,
    }
    for group, joules in energy["by_group_J"].items():
        if group != "storage":
            out[f"{group}_energy_J"] = joules
    for old, new in DEPRECATED_ALIASES.items():
        out[old] = out[new]
    return out


def shared_metrics(system: SystemRuntime, workload_metrics: dict[str, float], duration: float) -> tuple[dict[str, float], dict[str, Any]]:
    """The workload's metrics plus those every run reports (duration, storage and system energy), and the energy report."""
    energy = energy_report(system, duration)
    metrics = dict(workload_metrics)
    metrics["simulated_seconds"] = duration
    metrics.update(energy_metrics(energy, duration, len(system.volume.drives)))
    return metrics, energy


def simulate(system_config: SystemConfig, params: BaseModel, seed: int, *, record: bool = False) -> Simulation:
    env = simpy.Environment()
    engine = FlowEngine(env, record=record)
    system = SystemRuntime(engine, system_config)
    workload = workloads.get(params.kind)  # type: ignore[attr-defined]
    ctx = workloads.RunContext(env, engine, system, seed=seed)
    started = time.perf_counter()
    outcome = workload.run(ctx, params)
    engine.settle()  # the one point where the run's results are read (FlowEngine's lifecycle)
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
    # the volume's own account of the run: what bound its closed loop, its stations' utilisation, erasure paths
    report = system.volume.report()
    storage = {k: report[k] for k in ("closed_loop", "binding_constraint", "station_utilisation", "erasure_paths") if k in report}
    return Simulation(metrics, outcome.detail, energy, engine_report, outcome.units, wall, engine, storage)
