"""`kind: nfs`: an export (local drives or a RAID array) on a storage server, reached over a fabric.

Server and client NIC constraints per direction (payload rate after framing,
with the protocol header per request as a coefficient), server CPU (per byte
and per RPC), server DRAM traffic (the data passes through server memory: DMA
in from the drives and out to the NIC, plus one copy on TCP), client CPU per
byte and per RPC on the host.  nfsd threads serve one RPC each at a time (a
READ blocks its thread on the export's read) and the client's session slots
bound the RPCs in flight: both are thread-seconds per second.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from iowatt.models import fabric as fab
from iowatt.models.fabric import FabricName
from iowatt.models.units import Bytes
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig, ServerNode, server_node
from iowatt.simulator.storage import registry
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage, Volume
from iowatt.simulator.storage.kinds import local, raid
from iowatt.simulator.storage.registry import BuildContext, StorageKind, check_kind, kind_tag
from iowatt.simulator.storage.shared import summed_queue_limit
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

ExportConfig = Annotated[
    Annotated[local.LocalStorageConfig, Tag("local")] | Annotated[raid.RaidStorageConfig, Tag("raid")],
    Discriminator(kind_tag),
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
        return check_kind(value, ("local", "raid"))


class NfsVolume(Volume):
    """An NFS export of `inner` (a RAID or striped local volume) on a server, over a fabric."""

    def __init__(self, engine: FlowEngine, inner: Volume, server: ServerNode, host: HostRuntime, config: NfsStorageConfig) -> None:
        self.inner = inner
        self.server = server
        self.host = host
        self.fabric = config.fabric
        self.protocol = f"nfs-{config.protocol}"
        self.cost = fab.protocol_cost(self.protocol)
        self.rsize = float(config.rsize)
        self.wsize = float(config.wsize)
        self.server_threads = int(config.server_threads)
        self.threads = engine.constraint("nfs.server_threads", float(config.server_threads))
        self.slots = engine.constraint("nfs.client_slots", float(config.client_slots))
        rdma = config.protocol == "rdma"
        server_Bps = fab.port_goodput_Bps(self.fabric, rdma, config.server_nics)
        client_Bps = fab.port_goodput_Bps(self.fabric, rdma, config.client_nics)
        # tx = server -> client (reads), rx = client -> server (writes); full duplex
        self.server_tx = engine.constraint("nfs.server_nic_tx", server_Bps)
        self.server_rx = engine.constraint("nfs.server_nic_rx", server_Bps)
        self.client_rx = engine.constraint("nfs.client_nic_rx", client_Bps)
        self.client_tx = engine.constraint("nfs.client_nic_tx", client_Bps)
        # DRAM bytes per data byte on the server: DMA in + DMA out; TCP adds a copy (read + write)
        self.server_dram = 2.0 if rdma else 4.0

    @property
    def drives(self) -> list[Drive]:
        return self.inner.drives

    @property
    def unique_drives(self) -> list[Drive]:
        return self.inner.unique_drives

    @property
    def capacity_bytes(self) -> float:
        return self.inner.capacity_bytes

    def discard(self, nbytes: float) -> None:
        self.inner.discard(nbytes)

    def stored_shares(self) -> list[tuple[Drive, float]]:
        return self.inner.stored_shares()

    def _rpc(self, access: Access) -> Access:
        """One RPC of the request (requests larger than rsize/wsize are split) as the export sees it:
        at most one request per nfsd thread reaches it."""
        size = self.wsize if access.write else self.rsize
        return access.with_(block_bytes=min(access.block_bytes, size), queue_depth=min(access.queue_depth, self.server_threads))

    def _protocol_usage(self, access: Access) -> Usage:
        rpc = min(access.block_bytes, self.wsize if access.write else self.rsize)
        wire = 1.0 + self.cost.header_bytes / rpc
        c = self.cost
        server_cpu = c.server_cpu_s_per_byte + c.server_cpu_s_per_op / rpc
        # CPU costs are stated for the reference core (CPUSpec.core_speed 1.0): a slower core takes longer
        client_cpu = (c.client_cpu_s_per_byte + c.client_cpu_s_per_op / rpc) / self.host.core_speed
        nics = [(self.server_rx, wire), (self.client_tx, wire)] if access.write else [(self.server_tx, wire), (self.client_rx, wire)]
        return [*nics, (self.server.cpu, server_cpu), (self.server.memory, self.server_dram), (self.host.cpu, client_cpu)]

    def thread_seconds(self, rpc: Access) -> float:
        """Time an nfsd thread holds one RPC: a READ waits for the export's read (the server's page cache
        misses on data sets larger than its RAM); a WRITE is UNSTABLE by default and only copies into
        the server's page cache (written back and COMMITted later), so it costs CPU only."""
        c = self.cost
        cpu = c.server_cpu_s_per_op + c.server_cpu_s_per_byte * rpc.block_bytes
        return cpu if rpc.write else cpu + self.inner.qd1_latency_s(rpc)

    def usage(self, access: Access) -> Usage:
        rpc = self._rpc(access)
        thread = self.thread_seconds(rpc)
        round_trip = thread + fab.request_latency_s(self.fabric, self.protocol, rpc.block_bytes)
        return [
            *self.inner.usage(rpc),
            *self._protocol_usage(access),
            (self.threads, thread / rpc.block_bytes),
            (self.slots, round_trip / rpc.block_bytes),
        ]

    def qd1_latency_s(self, access: Access) -> float:
        """The export's own request latency + the RPC round trip and the data's serialisation."""
        rpc = self._rpc(access)
        return self.inner.qd1_latency_s(rpc) + fab.request_latency_s(self.fabric, self.protocol, rpc.block_bytes)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        return ConcurrencyLaw(self.qd1_latency_s(access), 0.0, summed_queue_limit(self.drives))


def build(ctx: BuildContext, config: NfsStorageConfig) -> Volume:
    server = server_node(ctx.engine, "nfs_server", config.server)
    inner = registry.build(ctx.engine, config.export, ctx.host, prefix="nfs.")
    return NfsVolume(ctx.engine, inner, server, ctx.host, config)


def _drives_bought(config: NfsStorageConfig) -> tuple[CatalogRef, int]:
    # the export's drives; the server itself is not priced
    return config.export.device, config.export.count


def _usable_fraction(config: NfsStorageConfig) -> float:
    return registry.of(config.export).usable_fraction(config.export)


KIND = StorageKind(name="nfs", config=NfsStorageConfig, build=build, drives_bought=_drives_bought, usable_fraction=_usable_fraction)
