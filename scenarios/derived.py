"""What a scenario implies but does not state, for `iowatt run --dry-run`: model sizes, parallelism, ranks, dataset, capacity.

A preset can carry choices a reader does not see in the file (the llama3_70b
preset writes from 64 ranks: tp 8 x dp 8); these values, computed by the same
methods the simulation uses, show them before anything runs.  `notes` flags
the combinations worth a second look.
"""

from __future__ import annotations

from dataclasses import asdict

from iowatt.models import catalog
from iowatt.scenarios.schema import ScenarioBase
from iowatt.simulator.storage import registry
from iowatt.simulator.workloads.checkpoint import CheckpointParams
from iowatt.simulator.workloads.dlio import DlioParams

Value = int | float | str | bool | None


def _storage(scenario: ScenarioBase) -> dict[str, Value]:
    device, count, usable = registry.planning_facts(scenario.system.storage)  # the storage kind's own facts
    spec = catalog.drive_spec(device)
    return {"device": str(spec.name), "drives": count, "capacity_TB_per_drive": float(spec.capacity_TB),
            "usable_capacity_TB": count * float(spec.capacity_TB) * usable}


def _checkpoint(work: CheckpointParams) -> dict[str, Value]:
    try:
        parts = work.shard_parts()
    except ValueError as error:  # reported by the workload when it runs; shown here as is
        return {"error": str(error)}
    layout = work.parallelism()
    parallel = len(parts) == layout["tp"] * layout["pp"] * layout["dp"] and (work.size is None or any(
        v is not None for v in (work.tp, work.pp, work.dp)))
    weights = sum(w for w, _ in parts)
    out: dict[str, Value] = {
        "sized_by": "size" if work.size is not None else ("parameters" if work.parameters is not None else f"model preset {work.model}"),
        "parameters": weights / work.weight_bytes_per_param,
        "ranks": len(parts),
        "checkpoint_bytes": sum(w + o for w, o in parts),
        "weight_bytes": weights,
        "optimizer_bytes": sum(o for _, o in parts),
        "largest_rank_bytes": max(w + o for w, o in parts),
    }
    if parallel:
        out.update(layout)
    return out


def _dlio(work: DlioParams, memory_bytes: float) -> dict[str, Value]:
    cfg = work.resolved(memory_bytes)
    samples = cfg.num_files * cfg.samples_per_file
    return {**{k: v for k, v in asdict(cfg).items() if isinstance(v, int | float | str | bool)},
            "dataset_samples": samples, "dataset_bytes": samples * cfg.record_length}


def derived(scenario: ScenarioBase) -> dict[str, dict[str, Value]]:
    """Section -> values: `storage` always, `workload` for the workloads with hidden choices (checkpoint, dlio)."""
    out: dict[str, dict[str, Value]] = {"storage": _storage(scenario), "gpus": {"count": scenario.system.gpus.count}}
    work = scenario.workload
    if isinstance(work, CheckpointParams):
        out["workload"] = _checkpoint(work)
    elif isinstance(work, DlioParams):
        out["workload"] = _dlio(work, scenario.system.server.memory)
    return out


def notes(scenario: ScenarioBase) -> list[str]:
    """Combinations a reader may not expect, each with how to change it."""
    work = scenario.workload
    gpus = scenario.system.gpus.count
    found: list[str] = []
    if isinstance(work, CheckpointParams) and gpus > 0:
        facts = _checkpoint(work)
        ranks = facts.get("ranks")
        if isinstance(ranks, int) and ranks > gpus:
            layout = " x ".join(f"{k} {facts[k]}" for k in ("tp", "pp", "dp") if k in facts)
            source = f"the {work.model} preset" if work.model is not None and work.size is None else "the workload"
            found.append(f"workload: {source} writes from {ranks} ranks ({layout or 'workload.ranks'}) on a server with "
                         f"system.gpus.count {gpus}: all {ranks} writers share this host's cores, memory and storage; "
                         "if this host runs fewer of them, set workload.tp/pp/dp (or workload.ranks with workload.size)")
    return found
