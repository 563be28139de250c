"""The modelled machine: its configuration (pydantic) and its runtime in the flow engine.

Configuration names catalog entries (or inline specs); the runtime turns
each component into constraints and a power meter (simulator.machine for
servers and GPUs, simulator.storage for drives and volumes).  `system.storage`
is the config of one storage kind, chosen by its `kind` (local, raid, nfs,
cluster, ...: simulator.storage.registry); every kind offers the workloads the
same Volume contract (simulator.storage.contract).
"""

from __future__ import annotations

from typing import Any

from iowatt.simulator.flows import FlowEngine, Meter
from iowatt.simulator.machine import GPUConfig, GPURuntime, HostRuntime, ServerConfig
from iowatt.simulator.storage import registry
from pydantic import BaseModel, ConfigDict, Field, field_validator


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    gpus: GPUConfig = Field(default_factory=GPUConfig)
    storage: registry.config_union() = Field(description=f"`kind`: {', '.join(registry.kind_names())} (default local)")  # type: ignore[valid-type]

    @field_validator("storage", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        return registry.check_kind(value)


class SystemRuntime:
    """All components of one server, built into a flow engine."""

    def __init__(self, engine: FlowEngine, config: SystemConfig) -> None:
        self.engine = engine
        self.config = config
        kind = registry.of(config.storage)
        self.host = HostRuntime(engine, config.server, kind.client_nodes(config.storage))
        gpu_spec = config.gpus.spec()
        self.gpus = [GPURuntime(engine, f"gpu{i}", gpu_spec) for i in range(config.gpus.count)]
        self.volume = kind.build(registry.BuildContext(engine, self.host), config.storage)

    def meters_by_group(self) -> dict[str, list[Meter]]:
        groups: dict[str, list[Meter]] = {}
        for m in self.engine.meters.values():
            groups.setdefault(m.group, []).append(m)
        return groups
