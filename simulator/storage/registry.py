"""Storage kinds as a registry: one module per kind under simulator/storage/kinds/.

A kind module defines `KIND = StorageKind(...)`: its config model (the
scenario's `system.storage` when `kind:` names it), its builder (config ->
Volume) and its planning facts (the drives bought and the share of their
capacity that holds user data, the client nodes it stands for).  The scenario
schema's storage union, the loader's error paths and `iowatt plan` are derived
from this registry, so a new kind is one module plus its test.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Generic, TypeVar, Union

from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig
from iowatt.simulator.storage.contract import Volume
from pydantic import BaseModel, Discriminator, Tag

ConfigT = TypeVar("ConfigT", bound=BaseModel)


@dataclass(frozen=True)
class BuildContext:
    """What a kind's builder may use: the engine, the client host, a prefix for its components' names, and the cores
    that run storage software such as md (None: the host's; an NFS server's when the volume is its export)."""

    engine: FlowEngine
    host: HostRuntime
    prefix: str = ""
    software_cores: tuple[Constraint, float] | None = None  # (the CPU constraint, its reference-core speed)


@dataclass(frozen=True)
class StorageKind(Generic[ConfigT]):
    name: str
    config: type[ConfigT]
    build: Callable[[BuildContext, ConfigT], Volume]
    drives_bought: Callable[[ConfigT], tuple[CatalogRef, int]]
    usable_fraction: Callable[[ConfigT], float]
    client_nodes: Callable[[ConfigT], int] = lambda _config: 1
    # the storage's own servers, each with the field path a message names (the client host is the scenario's)
    servers: Callable[[ConfigT], list[tuple[str, ServerConfig]]] = lambda _config: []
    # share of the drives' capacity already holding data (system.storage.fill; an NFS export's drives for nfs)
    stored_fill: Callable[[ConfigT], float] = lambda config: float(config.fill)


@cache
def _kinds() -> dict[str, StorageKind[Any]]:
    from iowatt.simulator.storage import kinds as package

    found: dict[str, StorageKind[Any]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        kind: StorageKind[Any] = module.KIND
        if kind.name != info.name:
            raise RuntimeError(f"{module.__name__} defines storage kind {kind.name!r}; the file must be named after it")
        found[kind.name] = kind
    return found


def kind_names() -> list[str]:
    # the default kind first, as scenario files and messages list them
    return sorted(_kinds(), key=lambda name: (name != "local", name))


def get(name: str) -> StorageKind[Any]:
    try:
        return _kinds()[name]
    except KeyError:
        raise ValueError(f"kind: expected one of {', '.join(kind_names())}, found {name!r}") from None


def of(config: BaseModel) -> StorageKind[Any]:
    """The kind a storage config belongs to."""
    for kind in _kinds().values():
        if type(config) is kind.config:
            return kind
    raise TypeError(f"{type(config).__name__} is not a registered storage kind's config")


def kind_tag(value: Any) -> str:
    """The discriminator of a storage mapping or config (`kind`, default local)."""
    if isinstance(value, dict):
        return str(value.get("kind", "local"))
    return str(getattr(value, "kind", "local"))


def check_kind(value: Any, allowed: tuple[str, ...] | None = None) -> Any:
    """Refuse an unknown `kind` with the list of known ones (before pydantic's union error)."""
    names = allowed or tuple(kind_names())
    if isinstance(value, dict) and value.get("kind", "local") not in names:
        raise ValueError(f"kind: expected one of {', '.join(names)}, found {value.get('kind')!r}")
    return value


def config_union(names: tuple[str, ...] | None = None) -> Any:
    """The pydantic union of the kinds' configs, discriminated by `kind` (default local)."""
    chosen = [get(n) for n in (names or tuple(kind_names()))]
    members = tuple(Annotated[k.config, Tag(k.name)] for k in chosen)
    union = members[0] if len(members) == 1 else Union[members]  # noqa: UP007 - built at run time
    return Annotated[union, Discriminator(kind_tag)]


def planning_facts(config: BaseModel) -> tuple[CatalogRef, int, float]:
    """(device, drives bought, share of their capacity that holds user data) of a storage config, its kind's own facts."""
    kind = of(config)
    device, count = kind.drives_bought(config)
    return device, count, kind.usable_fraction(config)


def build(engine: FlowEngine, config: BaseModel, host: HostRuntime, prefix: str = "") -> Volume:
    return of(config).build(BuildContext(engine, host, prefix), config)
