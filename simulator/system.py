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

Storage kinds (`system.storage.kind`, a union discriminated by `kind`):
  local    drives in the server, several striped (RAID 0): VolumeRuntime, unchanged
  raid     RAID 0/1/5/6/10 with stripe unit, degraded and rebuild modes (models.array,
           simulator.volumes.RaidVolume)
  nfs      an export (local drives or a RAID array) on a storage server with its own CPU,
           DRAM and power, over a fabric with TCP or RDMA (models.fabric, NfsVolume)
  cluster  N storage nodes x M drives, k+m erasure coding, per-node and client NICs; the
           `clients` identical client nodes are this host times `clients` (ClusterVolume)
Every kind offers the same volume interface to the workloads (read_usage, write_usage,
discard, capacity_bytes, drives, request_latency_s).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from iowatt.models import catalog
from iowatt.models.array import check_erasure, check_geometry
from iowatt.models.compute import CPUSpec, GPUSpec
from iowatt.models.fabric import FabricName, port_goodput_Bps
from iowatt.models.hdd import HDDSpec
from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import SSDSpec, power_cap_W
from iowatt.models.units import Bytes, Fraction, Watts
from iowatt.simulator.flows import Constraint, FlowEngine, Meter
from iowatt.simulator.hdd_runtime import HddRuntime
from iowatt.simulator.ssd_runtime import SSDRuntime
from iowatt.simulator.volumes import ClusterNode, ClusterVolume, NfsVolume, RaidVolume, ServerNode, StripedDrives
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, WithJsonSchema, field_validator, model_validator

CatalogRef = str | dict[str, Any]


def _check_ref(kind: str, value: CatalogRef) -> CatalogRef:
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


class _DriveFields(BaseModel):
    """The drives of a volume: which device, its NVMe power state and how full it is."""

    model_config = ConfigDict(extra="forbid")

    device: CatalogRef = Field(description="SSD (or HDD) catalog name or inline spec; SSDs are looked up first")
    power_state: Annotated[int, WithJsonSchema(POWER_STATE_SCHEMA)] = Field(default=0, description="NVMe power state, 'PS0'..'PS31'")
    fill: Fraction = Field(default=0.0, ge=0.0, le=1.0, description="share of user capacity already holding data")
    layout_clusters: int = Field(
        default=1, ge=1, le=1024,
        description="hard disks: equal pieces the data lie in, spread evenly over the disk (filesystem allocation groups); "
        "1 = contiguous from the outer edge",
    )

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
    def _state_exists(self) -> _DriveFields:
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


class StorageConfig(_DriveFields):
    """`kind: local` (the default): drives in the server; more than one are striped (RAID 0)."""

    kind: Literal["local"] = "local"
    count: int = Field(default=1, ge=1, le=256, description="drives; more than one are striped (RAID 0)")


class RaidStorageConfig(_DriveFields):
    """`kind: raid`: RAID 0/1/5/6/10 over `count` drives (models.array)."""

    kind: Literal["raid"]
    level: Literal[0, 1, 5, 6, 10] = Field(description="RAID level: 0, 1, 5, 6 or 10")
    count: int = Field(ge=1, le=256, description="drives in the array")
    stripe_unit: Bytes = Field(
        default=512 * 1024, ge=4096, description="chunk per drive per stripe (mdadm's default chunk is 512 KiB)"
    )
    degraded: bool = Field(default=False, description="one drive has failed; reads of its data are reconstructed")
    rebuild: bool = Field(default=False, description="a failed drive is being rebuilt onto a replacement (implies degraded)")
    rebuild_share: Fraction = Field(
        default=0.3,
        gt=0.0,
        lt=1.0,
        description="share of the busiest drive's bottleneck the rebuild takes "
        "(assumed 0.3: Broadcom MegaRAID's default rebuild rate is 30 %)",
    )

    @model_validator(mode="after")
    def _geometry(self) -> RaidStorageConfig:
        try:
            check_geometry(self.level, self.count)
        except ValueError as error:
            raise ValueError(f"count: {error}") from None
        if self.level == 0 and (self.degraded or self.rebuild):
            raise ValueError("degraded/rebuild: a RAID 0 array does not survive a failed drive, found level 0")
        return self


def _storage_kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "local"))
    return str(getattr(value, "kind", "local"))


_KINDS = ("local", "raid", "nfs", "cluster")


def _check_kind(value: Any, allowed: tuple[str, ...] = _KINDS) -> Any:
    if isinstance(value, dict) and value.get("kind", "local") not in allowed:
        raise ValueError(f"kind: expected one of {', '.join(allowed)}, found {value.get('kind')!r}")
    return value


ExportConfig = Annotated[
    Annotated[StorageConfig, Tag("local")] | Annotated[RaidStorageConfig, Tag("raid")],
    Discriminator(_storage_kind),
]


class NfsStorageConfig(BaseModel):
    """`kind: nfs`: an export (local drives or a RAID array) on a storage server, over a fabric."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["nfs"]
    server: ServerConfig = Field(default_factory=ServerConfig, description="the NFS server: CPU, sockets, DRAM, base power")
    export: ExportConfig = Field(description="what the server exports: `kind: local` drives or a `kind: raid` array")
    protocol: Literal["tcp", "rdma"] = Field(default="rdma", description="RPC transport: tcp, or rdma (RPC/RDMA, RFC 8166)")
    fabric: FabricName = Field(default="ib-edr", description="NIC ports: ib-edr, ib-hdr, ib-ndr, 100gbe, 200gbe, 400gbe")
    server_nics: int = Field(default=1, ge=1, le=16, description="server NIC ports (evenly loaded)")
    client_nics: int = Field(default=1, ge=1, le=16, description="client (this host) NIC ports")
    rsize: Bytes = Field(default=2**20, ge=4096, le=2**20, description="largest READ per RPC (Linux default and maximum 1 MiB)")
    wsize: Bytes = Field(default=2**20, ge=4096, le=2**20, description="largest WRITE per RPC")
    server_threads: int = Field(
        default=8, ge=1, le=4096, description="nfsd threads: RPCs the server serves at once (nfs-utils default 8: RPCNFSDCOUNT / nfs.conf threads)"
    )
    client_slots: int = Field(
        default=64, ge=1, le=4096, description="RPCs the client keeps in flight (Linux NFSv4.1 max_session_slots default 64)"
    )

    @field_validator("export", mode="before")
    @classmethod
    def _export_kind(cls, value: Any) -> Any:
        return _check_kind(value, ("local", "raid"))


class ClusterStorageConfig(_DriveFields):
    """`kind: cluster`: N storage nodes x M drives, k+m erasure coding, per-node NICs, `clients` client nodes."""

    kind: Literal["cluster"]
    nodes: int = Field(ge=1, le=1024, description="storage nodes")
    drives_per_node: int = Field(ge=1, le=64, description="drives in each storage node (striped)")
    erasure_coding: str = Field(default="4+2", description="k+m: data and parity chunks per stripe, e.g. '4+2'")
    node: ServerConfig = Field(default_factory=ServerConfig, description="each storage node's CPU, DRAM and base power")
    node_nics: int = Field(default=2, ge=1, le=16, description="NIC ports per storage node")
    fabric: FabricName = Field(default="200gbe", description="NIC ports of nodes and clients")
    protocol: Literal["tcp", "rdma"] = Field(
        default="tcp", description="client-node transport; costs of NVMe-oF over that transport (models.fabric)"
    )
    clients: int = Field(default=1, ge=1, le=4096, description="identical client nodes, modelled as one aggregate")
    client_nics: int = Field(default=1, ge=1, le=16, description="NIC ports per client node")
    failed_nodes: int = Field(default=0, ge=0, description="storage nodes down (degraded reads reconstruct their chunks)")

    @field_validator("erasure_coding", mode="before")
    @classmethod
    def _ec(cls, value: Any) -> str:
        text = str(value).replace(" ", "")
        k, sep, m = text.partition("+")
        if not sep or not k.isdigit() or not m.isdigit() or int(k) < 1:
            raise ValueError(f"expected k+m such as '4+2', found {value!r}")
        return f"{int(k)}+{int(m)}"

    @property
    def ec(self) -> tuple[int, int]:
        k, _, m = self.erasure_coding.partition("+")
        return int(k), int(m)

    @model_validator(mode="after")
    def _fits(self) -> ClusterStorageConfig:
        k, m = self.ec
        try:
            check_erasure(k, m, self.nodes, self.failed_nodes)
        except ValueError as error:
            raise ValueError(f"nodes/erasure_coding/failed_nodes: {error}") from None
        return self

    @property
    def count(self) -> int:
        """Drives in the whole cluster (what `storage.count` means for the other kinds)."""
        return self.nodes * self.drives_per_node


AnyStorageConfig = Annotated[
    Annotated[StorageConfig, Tag("local")]
    | Annotated[RaidStorageConfig, Tag("raid")]
    | Annotated[NfsStorageConfig, Tag("nfs")]
    | Annotated[ClusterStorageConfig, Tag("cluster")],
    Discriminator(_storage_kind),
]


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    gpus: GPUConfig = Field(default_factory=GPUConfig)
    storage: AnyStorageConfig = Field(description="`kind`: local (default), raid, nfs or cluster")

    @field_validator("storage", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        return _check_kind(value)


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
        busy_core_W = (cpu.tdp_W - cpu.idle_W) / cpu.cores
        self.cpu_meter = engine.meter("cpu", cpu.idle_W * config.sockets * nodes, [(self.cpu, busy_core_W)], group="cpu")
        self.base_meter = engine.meter("server_base", config.base_power * nodes, [], group="server")


def _drive_runtimes(engine: FlowEngine, prefix: str, drives: _DriveFields, count: int) -> list[Any]:
    spec = drives.device_spec()
    if isinstance(spec, HDDSpec):
        return [HddRuntime(engine, f"{prefix}hdd{i}", spec, drives.fill, data_clusters=drives.layout_clusters) for i in range(count)]
    return [SSDRuntime(engine, f"{prefix}ssd{i}", spec, drives.power_state, drives.fill) for i in range(count)]


def _server_node(engine: FlowEngine, name: str, config: ServerConfig) -> ServerNode:
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


def _array(engine: FlowEngine, prefix: str, config: StorageConfig | RaidStorageConfig) -> Any:
    drives = _drive_runtimes(engine, prefix, config, config.count)
    if isinstance(config, RaidStorageConfig):
        return RaidVolume(engine, drives, config.level, config.stripe_unit, config.degraded, config.rebuild, config.rebuild_share)
    return VolumeRuntime(drives) if not prefix else StripedDrives(drives)


def build_volume(engine: FlowEngine, storage: Any, host: HostRuntime) -> Any:
    """The runtime of any storage kind (local, raid, nfs, cluster)."""
    if isinstance(storage, StorageConfig | RaidStorageConfig):
        return _array(engine, "", storage)
    if isinstance(storage, NfsStorageConfig):
        server = _server_node(engine, "nfs_server", storage.server)
        inner = _array(engine, "nfs.", storage.export)
        protocol = f"nfs-{storage.protocol}"
        return NfsVolume(engine, inner, server, host, storage.fabric, protocol, storage.server_nics, storage.client_nics,
                         storage.rsize, storage.wsize, storage.server_threads, storage.client_slots)
    assert isinstance(storage, ClusterStorageConfig)
    rdma = storage.protocol == "rdma"
    # one representative node and drive stand for all (symmetric lumping, see ClusterVolume)
    server = _server_node(engine, "node", storage.node)
    pool = StripedDrives(_drive_runtimes(engine, "node.", storage, 1), copies=storage.drives_per_node)
    node = ClusterNode(engine, "node", server, pool, port_goodput_Bps(storage.fabric, rdma, storage.node_nics))
    k, m = storage.ec
    clients_Bps = port_goodput_Bps(storage.fabric, rdma, storage.client_nics) * storage.clients
    # scale-out clients speak a thin block-like RPC to the nodes: NVMe-oF costs are the closest class
    protocol = f"nvmeof-{storage.protocol}"
    return ClusterVolume(engine, node, storage.nodes, host, k, m, clients_Bps, storage.fabric, protocol, storage.failed_nodes)


class SystemRuntime:
    """All components of one server, built into a flow engine."""

    def __init__(self, engine: FlowEngine, config: SystemConfig) -> None:
        self.engine = engine
        self.config = config
        clients = config.storage.clients if isinstance(config.storage, ClusterStorageConfig) else 1
        self.host = HostRuntime(engine, config.server, clients)
        gpu_spec = config.gpus.spec()
        self.gpus = [GPURuntime(engine, f"gpu{i}", gpu_spec) for i in range(config.gpus.count)]
        self.volume = build_volume(engine, config.storage, self.host)

    def meters_by_group(self) -> dict[str, list[Meter]]:
        groups: dict[str, list[Meter]] = {}
        for m in self.engine.meters.values():
            groups.setdefault(m.group, []).append(m)
        return groups
