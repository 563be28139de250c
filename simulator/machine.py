"""The machine around the storage: servers (client hosts and storage servers) and GPUs,
their configuration (pydantic) and their runtime in the flow engine.

  host.cpu / host.memory             the client host's core-seconds and DRAM bandwidth per second
  gpuN.link_d2h / gpuN.link_h2d      host<->device copies at the measured copy efficiency
  gpuN.compute                       1 GPU-second per second; compute phases are flows on it
  NAME.cpu / NAME.memory             a storage server's (NFS server, cluster node) CPU and DRAM
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iowatt.models import catalog, compute
from iowatt.models.compute import CPUSpec, GPUSpec
from iowatt.models.links import link_payload_Bps
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes, Watts
from iowatt.simulator.flows import FlowEngine, Meter
from pydantic import BaseModel, ConfigDict, Field, field_validator

CatalogRef = str | dict[str, Any]


@dataclass(frozen=True)
class CatalogOf:
    """What a field naming a catalog device puts in its json_schema_extra: which catalog (`drive`: any device family,
    looked up in the families' order), so a reader finds the scenario's devices from the schema, not from classes.
    Called by pydantic when it writes the JSON Schema, it adds nothing (the schema keeps to the standard keywords)."""

    kind: str

    def __call__(self, schema: dict[str, Any]) -> None:
        del schema


def check_catalog_ref(kind: str, value: CatalogRef) -> CatalogRef:
    try:
        catalog.spec_from(kind, value)
    except catalog.CatalogError as error:
        raise ValueError(str(error)) from None
    return value


# what parse_power_state accepts, for the JSON Schema: 0..31 or 'PS0'..'PS31' (any case)
POWER_STATE_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 31},
                                {"type": "string", "pattern": "^\\s*([Pp][Ss])?0*([0-9]|[12][0-9]|3[01])\\s*$"}]}


def parse_power_state(value: Any) -> int:
    """'PS1' -> 1; 1 -> 1."""
    if isinstance(value, bool):
        raise ValueError(f"expected a power state such as 'PS1' or 1, found {value!r}")
    if isinstance(value, int):
        index = value
    elif isinstance(value, str) and value.strip().upper().startswith("PS") and value.strip()[2:].isdigit():
        index = int(value.strip()[2:])
    elif isinstance(value, str) and value.strip().isdigit():
        index = int(value.strip())
    else:
        raise ValueError(f"expected a power state such as 'PS1' or 1, found {value!r}")
    if not 0 <= index <= 31:
        raise ValueError(f"NVMe power states are PS0..PS31, found PS{index}")
    return index


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cpu: CatalogRef = Field(default="amd-epyc-9654", description="CPU catalog name or inline spec", json_schema_extra=CatalogOf("cpu"))
    sockets: int = Field(default=1, ge=1, le=8)
    memory: Bytes = Field(default=256e9, gt=0, description="installed DRAM")
    base_power: Watts = assumed_field(
        150.0, low=75.0, high=300.0, shape="log-uniform", ge=0,
        description="power outside CPU, GPU, DRAM, NICs and storage: fans, BMC, board, PSU loss (150 W)",
        note="C07 puts a server's fans at 10-150 W and its PSU waste at 100-300 W; 150 W for fans, BMC, board and loss",
        range_note="low: 75 W, a lightly loaded server's fans at tens of W and its PSU loss near C07's low end at part "
        "load; high: 300 W, C07's highest PSU waste alone (fans included in a GPU server's loss budget)",
    )
    nics: int = Field(default=0, ge=0, le=64, description="network adapters drawing models.compute's NIC_W each (0: none metered)")

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: CatalogRef) -> CatalogRef:
        return check_catalog_ref("cpu", value)

    def cpu_spec(self) -> CPUSpec:
        return catalog.spec_from("cpu", self.cpu)  # type: ignore[return-value]


class GPUConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: CatalogRef = Field(default="nvidia-h100-sxm", description="GPU catalog name or inline spec", json_schema_extra=CatalogOf("gpu"))
    count: int = Field(default=0, ge=0, le=4096)

    @field_validator("model")
    @classmethod
    def _model(cls, value: CatalogRef) -> CatalogRef:
        return check_catalog_ref("gpu", value)

    def spec(self) -> GPUSpec:
        return catalog.spec_from("gpu", self.model)  # type: ignore[return-value]


class GPURuntime:
    def __init__(self, engine: FlowEngine, name: str, spec: GPUSpec) -> None:
        self.name = name
        self.spec = spec
        copy = link_payload_Bps(spec.link) * spec.copy_efficiency
        self.link_d2h = engine.constraint(f"{name}.link_d2h", copy)
        self.link_h2d = engine.constraint(f"{name}.link_h2d", copy)
        self.compute = engine.constraint(f"{name}.compute", 1.0)
        self.meter = engine.meter(name, spec.idle_W, [(self.compute, spec.active_W - spec.idle_W)], group="gpu")
        self.env = engine.env

    def energy_now_J(self) -> float:
        """The GPU's energy up to now (its power is constant since its last change, so this is exact)."""
        self.meter.integrate_to(self.env.now)
        return self.meter.energy_J


class HostRuntime:
    """The client host.  `nodes` > 1 stands for that many identical hosts as one aggregate
    (a cluster's clients): cores, DRAM bandwidth, idle and base power scale with it."""

    def __init__(self, engine: FlowEngine, config: ServerConfig, nodes: int = 1) -> None:
        cpu = config.cpu_spec()
        self.config = config
        self.cpu_spec = cpu
        self.nodes = nodes
        self.cores = cpu.cores * config.sockets * nodes
        self.cpu = engine.constraint("host.cpu", float(self.cores))
        self.memory = engine.constraint("host.memory", cpu.memory_bandwidth_GBps * 1e9 * config.sockets * nodes)
        # package power is linear in the busy cores (models.compute.cpu_package_W), so a meter term per core-second
        busy_core_W = (compute.cpu_package_W(cpu, 1.0) - compute.cpu_package_W(cpu, 0.0)) / cpu.cores
        self.cpu_meter = engine.meter("cpu", cpu.idle_W * config.sockets * nodes, [(self.cpu, busy_core_W)], group="cpu")
        self.dram_meter = engine.meter(
            "dram", compute.dram_W(config.memory * nodes, 0.0), [(self.memory, compute.dram_J_per_byte())], group="dram"
        )
        if config.nics:
            engine.meter("nic", compute.nic_W_per_adapter() * config.nics * nodes, [], group="nic")
        self.base_meter = engine.meter("server_base", config.base_power * nodes, [], group="server")

    @property
    def core_speed(self) -> float:
        """Reference-core equivalents of one of its cores (CPU costs in models.fabric are per reference core)."""
        return float(self.cpu_spec.core_speed)


class ServerNode:
    """A storage server's CPU, DRAM and power (not the client host).

    `cores` are reference-core equivalents (cores x CPUSpec.core_speed), so the
    protocol CPU costs of models.fabric, stated for the reference core, apply as is."""

    def __init__(self, engine: FlowEngine, name: str, cores: float, memory_Bps: float, idle_W: float,
                 busy_core_W: float, base_W: float) -> None:
        self.name = name
        self.cpu = engine.constraint(f"{name}.cpu", float(cores))
        self.memory = engine.constraint(f"{name}.memory", memory_Bps)
        self.meter: Meter = engine.meter(f"{name}.cpu", idle_W, [(self.cpu, busy_core_W)], group="storage_server")
        self.base_meter: Meter = engine.meter(f"{name}.base", base_W, [], group="storage_server")


def server_node(engine: FlowEngine, name: str, config: ServerConfig) -> ServerNode:
    cpu = config.cpu_spec()
    # busy power per reference-core-second: a slower core is busy longer for the same work
    return ServerNode(
        engine,
        name,
        cores=cpu.cores * config.sockets * cpu.core_speed,
        memory_Bps=cpu.memory_bandwidth_GBps * 1e9 * config.sockets,
        idle_W=cpu.idle_W * config.sockets,
        busy_core_W=(cpu.tdp_W - cpu.idle_W) / (cpu.cores * cpu.core_speed),
        base_W=config.base_power,
    )


