"""Run a validated scenario and build its result document."""

from __future__ import annotations

from typing import Any, Literal

from iowatt.scenarios.schema import ScenarioBase
from iowatt.simulator.provenance import provenance
from iowatt.simulator.run import Simulation, simulate

RESULT_SCHEMA_VERSION = 1
Mode = Literal["fluid", "per-request"]


def run_scenario(scenario: ScenarioBase, *, record: bool = False, mode: Mode = "fluid") -> tuple[dict[str, Any], Simulation]:
    """Returns (JSON-ready document, the simulation with its engine for inspection).

    mode "per-request" runs the workload one request at a time (simulator.per_request) instead of as flows."""
    if mode == "per-request":
        from iowatt.simulator.per_request.run import simulate as simulate_per_request

        sim = simulate_per_request(scenario.system, scenario.workload, scenario.seed)  # type: ignore[attr-defined]
    else:
        sim = simulate(scenario.system, scenario.workload, scenario.seed, record=record)  # type: ignore[attr-defined]
    kind = scenario.workload.kind  # type: ignore[attr-defined]
    document: dict[str, Any] = {
        "result_schema": RESULT_SCHEMA_VERSION,
        "name": scenario.name,
        "scenario": scenario.model_dump(mode="json"),
        "metrics": sim.metrics,
        kind: sim.detail,
        "energy": sim.energy,
        "engine": sim.engine,
        "mode": mode,
        "provenance": provenance(scenario.seed),
    }
    if sim.units:
        document["units"] = sim.units
    if sim.storage:
        document["storage"] = sim.storage
    return document, sim
