"""Physical sense of a scenario that the schema's per-field types cannot see.

Each field may be valid on its own while the scenario is impossible: a 70 TB
checkpoint on one 61.44 TB drive, a dataset larger than the array holding
it, 1 KB of server memory.  Such a scenario would still run and print a
confident number; here it becomes a ScenarioError naming the field, the
sizes on both sides and the bound's reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from iowatt.models import catalog
from iowatt.scenarios.schema import ScenarioBase
from iowatt.simulator.machine import ServerConfig
from iowatt.simulator.storage import registry
from iowatt.simulator.workloads.checkpoint import CheckpointParams
from iowatt.simulator.workloads.dlio import DlioParams
from iowatt.simulator.workloads.fio import FioParams
from iowatt.simulator.workloads.gnn import GnnParams

GiB = 2**30
# assumed: current server Linux distributions state 1-2 GiB as their minimum RAM (RHEL 9: 1.5 GiB; Ubuntu Server: 1 GiB);
# below it there is no room for the page cache, the loaders or the checkpoint state the models need
MIN_SERVER_MEMORY_BYTES = 1 * GiB
# architectural: x86-64 and Armv8 address at most 2^52 bytes (4 PiB) of physical memory
MAX_SERVER_MEMORY_BYTES = 2.0**52


@dataclass(frozen=True)
class Stored:
    """What a workload keeps on the storage at once: `field` names it for the message."""

    field: str
    what: str
    bytes: float


def _size(value: float) -> str:
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if value >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.4g} B"


def _stored(scenario: ScenarioBase) -> list[Stored]:
    """The bytes each workload must hold on the volume at once (its checkpoints, its dataset, its files)."""
    work = scenario.workload
    if isinstance(work, CheckpointParams):
        try:
            size = work.size_bytes
        except ValueError:  # an inconsistent size/parameters pair: the workload reports it with its own message
            return []
        if work.passes is not None:  # fill passes overwrite slots sized to fill_target, checked when the run starts
            return [Stored("workload.size", "one checkpoint", size)]
        what = "one checkpoint" if work.count == 1 else f"{work.count} checkpoints kept side by side"
        return [Stored("workload.count" if work.count > 1 else "workload.size", what, size * work.count)]
    if isinstance(work, DlioParams):
        cfg = work.resolved(scenario.system.server.memory)
        dataset = cfg.num_files * cfg.samples_per_file * cfg.record_length
        return [Stored("workload.num_files", f"the dataset ({cfg.num_files} files x {cfg.samples_per_file} samples)", dataset)]
    if isinstance(work, GnnParams):
        return [Stored("workload.nodes", "the node features (nodes x feature bytes)", work.nodes * work.feature_bytes)]
    # a job that writes new data needs room for its file; one that only reads, or overwrites (`overwrite=1`, the file
    # is there already), works inside what the drives hold
    if isinstance(work, FioParams) and work.size is not None and work.read_share < 1.0 and not work.overwrite:
        return [Stored("workload.size", "the job's file", work.size)]
    return []


def _usable_bytes(scenario: ScenarioBase) -> tuple[float, str]:
    """(bytes the storage can hold for data, how that follows from its drives)."""
    device, count, usable = registry.planning_facts(scenario.system.storage)  # the storage kind's own facts
    spec = catalog.drive_spec(device)
    capacity = float(spec.capacity_TB) * 1e12
    how = f"{count} x {spec.name} {_size(capacity)}" + (f" at {usable:.0%} usable" if usable < 1 else "")
    return count * capacity * usable, how


def _fill(scenario: ScenarioBase) -> float:
    storage = scenario.system.storage
    return registry.of(storage).stored_fill(storage)


def check_capacity(scenario: ScenarioBase) -> None:
    stored = _stored(scenario)
    if not stored:
        return
    usable, how = _usable_bytes(scenario)
    fill = _fill(scenario)
    free = usable * (1.0 - fill)
    for item in stored:
        if item.bytes > free:
            held = f", {fill:.0%} of it already holding data (system.storage.fill)" if fill > 0 else ""
            raise ValueError(
                f"{item.field}: expected at most {_size(free)} of data on the storage ({_size(usable)} usable: {how}{held}), "
                f"found {item.what}: {_size(item.bytes)}"
            )


def _servers(scenario: ScenarioBase) -> list[tuple[str, ServerConfig]]:
    storage = scenario.system.storage
    return [("system.server", scenario.system.server), *registry.of(storage).servers(storage)]


def check_bounds(scenario: ScenarioBase) -> None:
    for where, server in _servers(scenario):
        if not MIN_SERVER_MEMORY_BYTES <= server.memory <= MAX_SERVER_MEMORY_BYTES:
            raise ValueError(
                f"{where}.memory: expected between 1 GiB (the least a server operating system runs in) and 4 PiB "
                f"(2^52 bytes, the physical address limit of x86-64 and Armv8), found {_size(server.memory)}"
            )


def check_resident_memory(scenario: ScenarioBase) -> None:
    """A checkpoint's processes cannot hold more DRAM than the host has (one host; a save design checks each host's share)."""
    work = scenario.workload
    if isinstance(work, CheckpointParams) and work.save is None and work.resident_memory is not None:
        memory = scenario.system.server.memory
        if work.resident_memory > memory:
            raise ValueError(f"workload.resident_memory: expected at most the host's memory (system.server.memory, {_size(memory)}), "
                             f"found {_size(work.resident_memory)}")


def check(scenario: ScenarioBase) -> None:
    """Raise ValueError (`field: expected ..., found ...`) when the scenario cannot exist."""
    check_bounds(scenario)
    check_resident_memory(scenario)
    check_capacity(scenario)


# a field set in the file that makes an override of another field a no-op: (override, kind) -> the fields that win over it
SHADOWS = {("workload.model", "checkpoint"): ("size", "parameters")}


def check_overrides(data: dict[str, object], overrides: list[str] | tuple[str, ...]) -> None:
    """A `--set` that the scenario's own fields would silently override is an error naming the fix."""
    paths = {a.partition("=")[0].strip(): a.partition("=")[2].strip() for a in overrides}
    workload = data.get("workload")
    if not isinstance(workload, dict):
        return
    for (path, kind), winners in SHADOWS.items():
        if path not in paths or workload.get("kind") != kind:
            continue
        shadowing = [f for f in winners if workload.get(f) is not None and f"workload.{f}" not in paths]
        if shadowing:
            stated = ", ".join(f"workload.{f} ({workload[f]})" for f in shadowing)
            fix = " ".join(f"--set workload.{f}=null" for f in shadowing)
            raise ValueError(f"--set {path}={paths[path]}: the scenario also sets {stated}, which takes precedence over the model preset, "
                             f"so the model would be ignored; add {fix} to size the checkpoint from the model")
