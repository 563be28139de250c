"""Device families as a registry: the runtime of each storage-device family, found from the catalog's list.

models.catalog.DRIVE_FAMILIES names each family (its catalog kind, its spec class, the order names are looked up
in); the family's runtime is the module simulator/storage/<kind>.py, which defines `FAMILY = DriveRuntime(...)`:
how it builds one drive (both faces: the fluid one and `request_server`) from a scenario's drive fields, and
which of those fields it refuses (power states on a disk).  Nothing else names a family, so a new one is its
runtime module, one registry line, its catalog file and its test.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, Protocol, TypeVar

from iowatt.models import catalog
from iowatt.models.filesystem import FilesystemSpec
from iowatt.models.ftl import Precondition
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage.contract import Drive
from iowatt.simulator.storage.power_policy import PowerPolicy
from pydantic import BaseModel

SpecT = TypeVar("SpecT", bound=BaseModel)


class DriveChoice(Protocol):
    """What a scenario says about its drives besides the device (simulator.storage.drive_fields.DriveFields)."""

    power_state: int
    fill: float
    ftl_valid: float | None
    precondition: Precondition
    power_policy: PowerPolicy
    layout_clusters: int

    def filesystem_spec(self) -> FilesystemSpec: ...


@dataclass(frozen=True)
class DriveRuntime(Generic[SpecT]):
    """A family's runtime: `build(engine, name, spec, choice)` one drive; `check(spec, choice)` raises ValueError
    naming a field the family does not take; `prefix` starts its drives' names (ssd0, hdd3)."""

    kind: str
    prefix: str
    build: Callable[[FlowEngine, str, SpecT, DriveChoice], Drive]
    check: Callable[[SpecT, DriveChoice], None]


def refuse_nvme_power(device: str, what: str, choice: DriveChoice) -> None:
    """A family without NVMe power states (a hard disk, a SATA SSD) refuses a state other than PS0 or a policy."""
    if choice.power_state != 0:
        raise ValueError(f"power_state: {device} is {what}; it has no NVMe power states, expected PS0, found PS{choice.power_state}")
    if choice.power_policy != PowerPolicy():
        raise ValueError(f"power_policy: {device} is {what}; expected no NVMe power policy, found {choice.power_policy.kind}")


@cache
def _runtimes() -> dict[str, DriveRuntime[Any]]:
    found: dict[str, DriveRuntime[Any]] = {}
    for kind in catalog.DRIVE_FAMILIES:
        module = importlib.import_module(f"iowatt.simulator.storage.{kind}")
        runtime: DriveRuntime[Any] = module.FAMILY
        if runtime.kind != kind:
            raise RuntimeError(f"{module.__name__} defines the runtime of family {runtime.kind!r}; the file must be named after it")
        found[kind] = runtime
    return found


def runtime(kind: str) -> DriveRuntime[Any]:
    """The runtime of the family whose catalog kind is `kind`."""
    return _runtimes()[kind]
