"""The modelled machine: its configuration (pydantic) and its runtime in the flow engine.

Configuration names catalog entries (or inline specs); the runtime turns
each component into constraints and a power meter:

  ssdN.link_write / ssdN.link_read   PCIe (or SATA/SAS) payload rate, per direction
  ssdN.read / ssdN.write             drive service time: capacity 1 device-second per second,
                                     each byte costs the block-size law's seconds per byte
  ssdN.power                         dynamic power budget = power-state cap - idle (W)
  gpuN.link_d2h / gpuN.link_h2d      host<->device copies at the measured copy efficiency
  gpuN.compute                       1 GPU-second per second; compute phases are flows on it
  host.cpu                           core-seconds per second
  host.memory                        DRAM bandwidth
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from models import catalog
from models.compute import CPUSpec, GPUSpec
from models.hdd import HDDSpec
from models.links import link_payload_Bps
from models.ssd import SSDSpec, power_cap_W
from models.units import Bytes, Fraction, Watts
from simulator.flows import Constraint, FlowEngine, Meter
from simulator.hdd_runtime import HddRuntime
from simulator.ssd_runtime import SSDRuntime

CatalogRef = str | dict[str, Any]


def _check_ref(kind: str, value: CatalogRef) -> CatalogRef:
    try:
        catalog.spec_from(kind, value)
    except catalog.CatalogError as error:
        raise ValueError(str(error)) from None
    return value


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

    cpu: CatalogRef = Field(default="amd-epyc-9654", description="CPU catalog name or inline spec")
    sockets: int = Field(default=1, ge=1, le=8)
    memory: Bytes = Field(default=256e9, gt=0, description="installed DRAM")
    base_power: Watts = Field(
        default=150.0,
        ge=0,
        description="power outside CPU, GPU and storage: fans, DRAM, NICs, BMC, PSU loss "
        "(assumed 150 W: C07 puts fans at 10-150 W and PSU waste at 100-300 W)",
    )

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: CatalogRef) -> CatalogRef:
        return _check_ref("cpu", value)

    def cpu_spec(self) -> CPUSpec:
        return catalog.spec_from("cpu", self.cpu)  # type: ignore[return-value]


class GPUConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: CatalogRef = Field(default="nvidia-h100-sxm", description="GPU catalog name or inline spec")
    count: int = Field(default=0, ge=0, le=4096)

    @field_validator("model")
    @classmethod
    def _model(cls, value: CatalogRef) -> CatalogRef:
        return _check_ref("gpu", value)

    def spec(self) -> GPUSpec:
        return catalog.spec_from("gpu", self.model)  # type: ignore[return-value]


class StorageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["local"] = "local"
    device: CatalogRef = Field(description="SSD (or HDD) catalog name or inline spec; SSDs are looked up first")
    count: int = Field(default=1, ge=1, le=256, description="drives; more than one are striped (RAID 0)")
    power_state: int = Field(default=0, description="NVMe power state, 'PS0'..'PS31'")
    fill: Fraction = Field(default=0.0, ge=0.0, le=1.0, description="share of user capacity already holding data")

    @field_validator("device")
    @classmethod
    def _device(cls, value: CatalogRef) -> CatalogRef:
        try:
            return _check_ref("ssd", value)
        except ValueError as ssd_error:
            try:
                return _check_ref("hdd", value)
            except ValueError:
                raise ssd_error from None

    @field_validator("power_state", mode="before")
    @classmethod
    def _power_state(cls, value: Any) -> int:
        return parse_power_state(value)

    @model_validator(mode="after")
    def _state_exists(self) -> StorageConfig:
        spec = self.device_spec()
        if isinstance(spec, HDDSpec):
            if self.power_state != 0:
                raise ValueError(f"{spec.name} is a hard disk; it has no NVMe power states, found PS{self.power_state}")
            return self
        power_cap_W(spec, self.power_state)  # raises with the valid range
        return self

    def device_spec(self) -> SSDSpec | HDDSpec:
        try:
            return catalog.spec_from("ssd", self.device)  # type: ignore[return-value]
        except (catalog.CatalogError, ValueError):
            return catalog.spec_from("hdd", self.device)  # type: ignore[return-value]


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    gpus: GPUConfig = Field(default_factory=GPUConfig)
    storage: StorageConfig


# ---------------------------------------------------------------------------- runtime


class VolumeRuntime:
    """Drives behind one filesystem; with several drives each byte is striped evenly (RAID 0)."""

    def __init__(self, drives: list[SSDRuntime] | list[HddRuntime]) -> None:
        self.drives = drives

    @property
    def capacity_bytes(self) -> float:
        return sum(d.spec.capacity_bytes for d in self.drives)

    def discard(self, nbytes: float) -> None:
        """Files deleted or about to be overwritten: drives that track valid data
        (fill state, garbage collection) are told, striped like the data was."""
        for drive in self.drives:
            trim = getattr(drive, "discard", None)
            if trim is not None:
                trim(nbytes / len(self.drives))

    def write_usage(self, block_bytes: float) -> list[tuple[Constraint, float]]:
        share = 1.0 / len(self.drives)
        # a request larger than the stripe unit is split across drives; each drive sees
        # requests of at least the stripe share of the block
        per_drive_block = max(block_bytes * share, 4096.0)
        return [u for d in self.drives for u in d.write_usage(per_drive_block, share)]

    def read_usage(self, block_bytes: float) -> list[tuple[Constraint, float]]:
        share = 1.0 / len(self.drives)
        per_drive_block = max(block_bytes * share, 4096.0)
        return [u for d in self.drives for u in d.read_usage(per_drive_block, share)]


class GPURuntime:
    def __init__(self, engine: FlowEngine, name: str, spec: GPUSpec) -> None:
        self.name = name
        self.spec = spec
        copy = link_payload_Bps(spec.link) * spec.copy_efficiency
        self.link_d2h = engine.constraint(f"{name}.link_d2h", copy)
        self.link_h2d = engine.constraint(f"{name}.link_h2d", copy)
        self.compute = engine.constraint(f"{name}.compute", 1.0)
        self.meter = engine.meter(name, spec.idle_W, [(self.compute, spec.active_W - spec.idle_W)], group="gpu")


class HostRuntime:
    def __init__(self, engine: FlowEngine, config: ServerConfig) -> None:
        cpu = config.cpu_spec()
        self.config = config
        self.cpu_spec = cpu
        self.cores = cpu.cores * config.sockets
        self.cpu = engine.constraint("host.cpu", float(self.cores))
        self.memory = engine.constraint("host.memory", cpu.memory_bandwidth_GBps * 1e9 * config.sockets)
        busy_core_W = (cpu.tdp_W - cpu.idle_W) / cpu.cores
        self.cpu_meter = engine.meter("cpu", cpu.idle_W * config.sockets, [(self.cpu, busy_core_W)], group="cpu")
        self.base_meter = engine.meter("server_base", config.base_power, [], group="server")


class SystemRuntime:
    """All components of one server, built into a flow engine."""

    def __init__(self, engine: FlowEngine, config: SystemConfig) -> None:
        self.engine = engine
        self.config = config
        self.host = HostRuntime(engine, config.server)
        gpu_spec = config.gpus.spec()
        self.gpus = [GPURuntime(engine, f"gpu{i}", gpu_spec) for i in range(config.gpus.count)]
        spec = config.storage.device_spec()
        drives: list[SSDRuntime] | list[HddRuntime]
        if isinstance(spec, HDDSpec):
            drives = [HddRuntime(engine, f"hdd{i}", spec, config.storage.fill) for i in range(config.storage.count)]
        else:
            drives = [
                SSDRuntime(engine, f"ssd{i}", spec, config.storage.power_state, config.storage.fill)
                for i in range(config.storage.count)
            ]
        self.volume = VolumeRuntime(drives)

    def meters_by_group(self) -> dict[str, list[Meter]]:
        groups: dict[str, list[Meter]] = {}
        for m in self.engine.meters.values():
            groups.setdefault(m.group, []).append(m)
        return groups
