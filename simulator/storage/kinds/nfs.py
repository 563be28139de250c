"""`kind: nfs`: an export (local drives or a RAID array) on a storage server, reached over a fabric.

Server and client NIC constraints per direction (payload rate after framing,
with the protocol header per request as a coefficient), server CPU (per byte
and per RPC), server DRAM traffic (the data passes through server memory: DMA
in from the drives and out to the NIC, plus one copy on TCP), client CPU per
byte and per RPC on the host.  The closed loop (models.nfs_server): the client's
requests become RPCs, at most `client_slots` / the transport's (RPC/RDMA `rdma_credits`) of them on the
wire; each waits for one of `server_threads` nfsd threads, which holds it for
the server's CPU and, for a READ, the export's read at the depth the busy
threads give it (the export's own law: an array's members' network).  nfsd
threads and client slots are also engine constraints in thread-seconds per
second, at the loop's loaded holding times.  `clients`
identical client hosts are one aggregate, as in `kind: cluster`: their NIC ports and session slots
add up, and the host's CPU, DRAM and power are multiplied by `clients` (SystemRuntime).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from iowatt.models import fabric as fab
from iowatt.models.fabric import FabricName
from iowatt.models.nfs_server import NfsLoop, NfsPath, solve_path
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig, ServerNode, server_node
from iowatt.simulator.storage import registry
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage, Volume
from iowatt.simulator.storage.front import FrontVolume
from iowatt.simulator.storage.kinds import local, raid
from iowatt.simulator.storage.member_law import ceiling_per_second, sampled_rates
from iowatt.simulator.storage.registry import BuildContext, StorageKind, check_kind, kind_tag
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

# credits the Linux client asks for on an RPC/RDMA connection (net/sunrpc/xprtrdma: RPCRDMA_DEF_SLOT_TABLE 128)
RDMA_CLIENT_CREDITS = 128

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
    clients: int = Field(
        default=1, ge=1, le=4096,
        description="identical client hosts mounting the export, modelled as one aggregate (their NICs, slots, CPU and power x clients)",
    )
    rsize: Bytes = Field(default=2**20, ge=4096, le=2**20, description="largest READ per RPC (Linux default and maximum 1 MiB)")
    wsize: Bytes = Field(default=2**20, ge=4096, le=2**20, description="largest WRITE per RPC")
    server_threads: int = assumed_field(
        8, low=8, high=256, shape="log-uniform", point="documented default", ge=1, le=4096,
        description="nfsd threads: RPCs the server serves at once (each holds its RPC for the server's CPU and, for a "
        "READ, the export's read)",
        note="8, the server OS's default where a study states no tuning: rpc.nfsd starts 8 threads when given no count "
        "(nfs-utils: RPCNFSDCOUNT=${RPCNFSDCOUNT:-8}; RPCNFSDCOUNT=8 in RHEL/CentOS 6-7's /etc/sysconfig/nfs and Debian's "
        "/etc/default/nfs-kernel-server; `threads=8` in nfs.conf of RHEL 8-9)",
        range_note="low 8: the distributions' default (above); high 256: tuning guides raise it to 32-256 for busy or "
        "fast servers (svennd.be 2017: 128 on an 8-client cluster's backend, past which the load ran no faster; 128-256 "
        "for 10 Gb/s+ storage in harryvasanth.com's nfsd tuning note; 200 in BurrMill's Kaldi cluster config)",
    )
    client_slots: int = Field(
        default=64, ge=1, le=4096,
        description="RPCs the client keeps in flight on the session (Linux NFSv4.1+ client: nfs.max_session_slots default 64, "
        "fs/nfs/nfs4session.h NFS4_DEF_SLOT_TABLE_SIZE)",
    )
    rdma_credits: int = assumed_field(
        32, low=16, high=128, shape="log-uniform", point="documented default", ge=1, le=16384,
        description="RPC/RDMA credits per connection (RFC 8166 sect. 3.3.1): RPCs the server lets the client have "
        "outstanding.  The client asks for 128 (xprtrdma RPCRDMA_DEF_SLOT_TABLE); the server grants at most its "
        "sunrpc.svc_rdma.max_requests",
        note="32: the server's default max_requests (include/linux/sunrpc/svc_rdma.h RPCRDMA_MAX_REQUESTS 32 in 4.x "
        "kernels, the RHEL/CentOS 7 era of the studies)",
        range_note="low 16: RPCRDMA_MAX_REQUESTS in 3.x kernels' svc_rdma.h; high 128: the client's request "
        "(RPCRDMA_DEF_SLOT_TABLE), reached where the server's max_requests is raised or newer kernels grant more",
    )
    nconnect: int = Field(
        default=1, ge=1, le=16,
        description="TCP connections the client opens to the server (mount option nconnect, nfs(5): default 1, at most "
        "16).  One connection's bytes are handled by one core at a time on each side (the client's transport receive "
        "work item, xprtsock.c; the server's XPT_BUSY: one nfsd thread reads a socket at a time), so TCP's per-byte "
        "CPU binds at nconnect cores; RPC/RDMA moves no bytes through the CPU",
    )
    mtu: int | None = Field(
        default=None, ge=576, le=9216,
        description="Ethernet MTU of the TCP transport (jumbo frames: 9000).  TCP's per-segment CPU is spread over "
        "MTU - 52 payload bytes (models.fabric.tcp_cpu_seconds_per_byte); default: the 1500-B figure the per-byte "
        "cost is stated at.  RPC/RDMA moves no bytes through the CPU and ignores it",
    )
    transport_slots: int | None = Field(
        default=None, ge=1, le=65536,
        description="RPCs the transport carries at once; overrides the protocol's own.  Default by protocol: rdma the "
        "credits (min(128 the client asks for, rdma_credits the server grants)), tcp 65536 "
        "(sunrpc.tcp_max_slot_table_entries, RPC_MAX_SLOT_TABLE_LIMIT: slots grow on demand)",
    )

    @field_validator("export", mode="before")
    @classmethod
    def _export_kind(cls, value: Any) -> Any:
        return check_kind(value, ("local", "raid"))

    @property
    def window(self) -> int:
        """RPCs the client may have outstanding: the session's slots and the transport's, whichever is fewer."""
        transport = self.transport_slots or (min(RDMA_CLIENT_CREDITS, self.rdma_credits) if self.protocol == "rdma" else 65536)
        return min(self.client_slots, transport)


class NfsVolume(FrontVolume):
    """An NFS export of `inner` (a RAID or striped local volume) on a server, over a fabric."""

    def __init__(self, engine: FlowEngine, inner: Volume, server: ServerNode, host: HostRuntime, config: NfsStorageConfig) -> None:
        self.inner = inner
        self.server = server
        self.host = host
        self.fabric = config.fabric
        self.protocol = f"nfs-{config.protocol}"
        self.cost = fab.protocol_cost(self.protocol)
        # TCP's per-byte CPU at the stated MTU (the protocol cost carries it at 1500 B); RDMA's is zero
        self.per_byte_s = fab.tcp_cpu_seconds_per_byte(config.mtu) if config.protocol == "tcp" else self.cost.server_cpu_s_per_byte
        self.rsize = float(config.rsize)
        self.wsize = float(config.wsize)
        self.server_threads = int(config.server_threads)
        self.window = config.window * config.clients  # every client host keeps its own session slots
        self.threads = engine.constraint("nfs.server_threads", float(config.server_threads))
        self.slots = engine.constraint("nfs.client_slots", float(self.window))
        rdma = config.protocol == "rdma"
        # one core per TCP connection on each side (NfsStorageConfig.nconnect), at each side's own core speed
        self.connections = engine.constraint("nfs.tcp_connections", float(config.nconnect * config.clients))
        self.server_core_speed = config.server.cpu_spec().core_speed
        server_Bps = fab.port_goodput_Bps(self.fabric, rdma, config.server_nics)
        client_Bps = fab.port_goodput_Bps(self.fabric, rdma, config.client_nics) * config.clients
        self.wire_Bps = min(server_Bps, client_Bps)
        # tx = server -> client (reads), rx = client -> server (writes); full duplex
        self.server_tx = engine.constraint("nfs.server_nic_tx", server_Bps)
        self.server_rx = engine.constraint("nfs.server_nic_rx", server_Bps)
        self.client_rx = engine.constraint("nfs.client_nic_rx", client_Bps)
        self.client_tx = engine.constraint("nfs.client_nic_tx", client_Bps)
        # DRAM bytes per data byte on the server: DMA in + DMA out; TCP adds a copy (read + write)
        self.server_dram = 2.0 if rdma else 4.0
        self.last: tuple[NfsLoop, str] | None = None

    def stored_shares(self) -> list[tuple[Drive, float]]:
        return self.inner.stored_shares()

    def _rpc(self, access: Access) -> tuple[Access, float]:
        """One RPC of the request as the export sees it (requests larger than rsize/wsize are split, the
        pieces in flight together), and RPCs per request."""
        size = self.wsize if access.write else self.rsize
        rpcs = max(1.0, math.ceil(access.block_bytes / size))
        return access.with_(block_bytes=min(access.block_bytes, size), queue_depth=1.0), rpcs

    def _protocol_usage(self, access: Access) -> Usage:
        rpc = min(access.block_bytes, self.wsize if access.write else self.rsize)
        wire = 1.0 + self.cost.header_bytes / rpc
        c = self.cost
        server_cpu = self.per_byte_s + c.server_cpu_s_per_op / rpc
        # CPU costs are stated for the reference core (CPUSpec.core_speed 1.0): a slower core takes longer
        client_cpu = (self.per_byte_s + c.client_cpu_s_per_op / rpc) / self.host.core_speed
        nics = [(self.server_rx, wire), (self.client_tx, wire)] if access.write else [(self.server_tx, wire), (self.client_rx, wire)]
        # a connection's bytes: one core at a time on each side, whichever is slower per byte binds
        per_connection = max(self.per_byte_s / self.host.core_speed, self.per_byte_s / self.server_core_speed)
        return [*nics, (self.server.cpu, server_cpu), (self.server.memory, self.server_dram), (self.host.cpu, client_cpu),
                (self.connections, per_connection)]

    def cpu_seconds(self, rpc: Access) -> float:
        """Server CPU per RPC (reference-core seconds)."""
        return self.cost.server_cpu_s_per_op + self.per_byte_s * rpc.block_bytes

    def thread_seconds(self, rpc: Access) -> float:
        """Time an nfsd thread holds one RPC with nothing else queued: a READ waits for the export's read (the
        server's page cache misses on data sets larger than its RAM); a WRITE is UNSTABLE by default and only
        copies into the server's page cache (written back and COMMITted later), so it costs CPU only."""
        cpu = self.cpu_seconds(rpc)
        return cpu if rpc.write else cpu + self.inner.qd1_latency_s(rpc)

    def _export_rates(self, rpc: Access) -> tuple[float, ...]:
        """RPCs/s the export serves with 1..T reads outstanding: its own law, capped by its constraints."""

        def rate(k: int) -> float:
            at_k = rpc.with_(queue_depth=float(k))
            return min(self.inner.concurrency(at_k).requests_per_second(k), ceiling_per_second(self.inner.usage(at_k), rpc.block_bytes))

        return sampled_rates(rate, self.server_threads)

    def path(self, access: Access) -> NfsPath:
        rpc, _rpcs = self._rpc(access)
        wire_bytes = rpc.block_bytes + self.cost.header_bytes
        return NfsPath(
            export_rates=() if rpc.write else self._export_rates(rpc),
            threads=self.server_threads,
            cores=self.server.cpu.capacity,
            cpu_s=self.cpu_seconds(rpc),
            round_trip_s=self.cost.latency_s,
            wire_s=wire_bytes / self.wire_Bps,
            window=self.window,
            blocks_thread=not rpc.write,
        )

    def closed_loop(self, access: Access) -> NfsLoop:
        rpc, rpcs = self._rpc(access)
        loop = solve_path(self.path(access), math.ceil(max(1.0, access.queue_depth) * rpcs))
        export = "writes are UNSTABLE: written back later" if rpc.write else self._export_state(rpc, loop)
        self.last = (loop, export)
        return loop

    def _export_state(self, rpc: Access, loop: NfsLoop) -> str:
        depth = max(1.0, loop.threads_busy)
        self.inner.concurrency(rpc.with_(queue_depth=depth))
        state = self.inner.report().get("closed_loop")
        return str(state["binding"]) if isinstance(state, dict) else f"{self.inner.qd1_latency_s(rpc) * 1e3:.3g} ms per read"

    def usage(self, access: Access) -> Usage:
        rpc, _rpcs = self._rpc(access)
        loop = self.closed_loop(access)
        depth = max(1.0, loop.threads_busy) if not rpc.write else max(1.0, access.queue_depth)
        slot_s = loop.on_wire / loop.rpc_rate  # a slot is held for the RPC's whole loaded round trip (Little)
        return [
            *self.inner.usage(rpc.with_(queue_depth=depth)),
            *self._protocol_usage(access),
            (self.threads, loop.thread_hold_s / rpc.block_bytes),
            (self.slots, slot_s / rpc.block_bytes),
        ]

    def qd1_latency_s(self, access: Access) -> float:
        """The thread's time (the export's read for a READ, CPU only for an UNSTABLE WRITE) + the RPC round
        trip and the data's serialisation."""
        rpc, _rpcs = self._rpc(access)
        return self.thread_seconds(rpc) + fab.request_latency_s(self.fabric, self.protocol, rpc.block_bytes)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The loop of models.nfs_server at the access's queue depth, as the contract's law (exact at N)."""
        _rpc, rpcs = self._rpc(access)
        n = max(1.0, access.queue_depth)
        loop = self.closed_loop(access)
        host_rate = loop.rpc_rate / rpcs
        l0 = self.qd1_latency_s(access)
        s = 0.0 if n <= 1.0 else max(0.0, (n / host_rate - l0) / (n - 1.0))
        return ConcurrencyLaw(l0, s, None, units=False)

    def report(self) -> dict[str, object]:
        out = super().report()
        if self.last is not None:
            loop, export = self.last
            out["closed_loop"] = {
                "binding": loop.binding(self.server_threads, export),
                "rpcs_in_flight": loop.on_wire,
                "rpcs_per_second": loop.rpc_rate,
                "nfsd_threads_busy": loop.threads_busy,
                "thread_hold_s": loop.thread_hold_s,
                "utilisation": dict(loop.utilisation),
            }
        return out

    def client_side(self) -> list[Constraint]:
        return [self.client_tx, self.client_rx, self.slots]  # `clients` x one client's NIC ports and session slots


def build(ctx: BuildContext, config: NfsStorageConfig) -> Volume:
    server = server_node(ctx.engine, "nfs_server", config.server)
    # an exported array's md runs on the server's cores (ServerNode cores are reference-core equivalents)
    inner_ctx = BuildContext(ctx.engine, ctx.host, prefix="nfs.", software_cores=(server.cpu, 1.0))
    inner = registry.of(config.export).build(inner_ctx, config.export)
    return NfsVolume(ctx.engine, inner, server, ctx.host, config)


def _drives_bought(config: NfsStorageConfig) -> tuple[CatalogRef, int]:
    # the export's drives; the server itself is not priced
    return config.export.device, config.export.count


def _usable_fraction(config: NfsStorageConfig) -> float:
    return registry.of(config.export).usable_fraction(config.export)


KIND = StorageKind(
    name="nfs", config=NfsStorageConfig, build=build, drives_bought=_drives_bought, usable_fraction=_usable_fraction,
    client_nodes=lambda config: config.clients, servers=lambda config: [("system.storage.server", config.server)],
    stored_fill=lambda config: float(config.export.fill),
)
