"""Run a validated scenario and build its result document."""

from __future__ import annotations

from typing import Any

from iowatt.scenarios.schema import ScenarioBase
from iowatt.simulator.provenance import provenance
from iowatt.simulator.run import Simulation, simulate

RESULT_SCHEMA_VERSION = 1


def run_scenario(scenario: ScenarioBase, *, record: bool = False) -> tuple[dict[str, Any], Simulation]:
    """Returns (JSON-ready document, the simulation with its engine for inspection)."""
    sim = simulate(scenario.system, scenario.workload, scenario.seed, record=record)
    kind = scenario.workload.kind  # type: ignore[attr-defined]
    document: dict[str, Any] = {
        "result_schema": RESULT_SCHEMA_VERSION,
        "name": scenario.name,
        "scenario": scenario.model_dump(mode="json"),
        "metrics": sim.metrics,
        kind: sim.detail,
        "energy": sim.energy,
        "engine": sim.engine,
        "provenance": provenance(scenario.seed),
    }
    if sim.units:
        document["units"] = sim.units
    if sim.storage:
        document["storage"] = sim.storage
    return document, sim
