"""`kind: parallel_fs`: a Lustre-style parallel file system: OSS servers with OSTs, an MDS, striping, kernel clients.

Its laws are models.parallel_fs (RPCs, stripes, the client's RPC window,
metadata); a request is `rpcs` bulk RPCs in flight together, each crossing
these stations (simulator.storage.stations; the closed loop of RPCs solved by
MVA, at most max_rpcs_in_flight per OST a client uses):

  host.cpu                  the Lustre client in each client's kernel (per RPC, and per byte over TCP)
  cluster.clients.nic_rx/tx each client's NIC ports
  node.nic_rx/tx            an OSS's NIC ports
  node.cpu                  the OSS's cores: its service threads per RPC, parity of the OSTs' RAID on writes
  node.memory               the OSS's DRAM (each byte in from a drive or the NIC and out again)
  node.ssdN.*               the OSS's drives: OSTs of k+m RAID sets (reads k pieces, writes k + m)
  mds.cpu                   the metadata servers, once per file (an open and a close), when `mean_file` is given

The servers are identical and files' stripes spread over all OSTs, so one
representative OSS stands for all `servers` (symmetric lumping, as the cluster
kind); the identical clients are one aggregate.
"""

from __future__ import annotations

from typing import Literal

from iowatt.models import cluster_service as svc
from iowatt.models import erasure
from iowatt.models import parallel_fs as pfs
from iowatt.models.fabric import FabricName, port_goodput_Bps, protocol_cost
from iowatt.models.units import Bytes
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig, ServerNode, server_node
from iowatt.simulator.storage.contract import Access, Volume
from iowatt.simulator.storage.drive_fields import DriveFields
from iowatt.simulator.storage.registry import BuildContext, StorageKind
from iowatt.simulator.storage.stations import Plan, PooledVolume, Station, watch
from iowatt.simulator.storage.striped import StripedVolume
from pydantic import Field, field_validator, model_validator


class ParallelFsStorageConfig(DriveFields):
    """`kind: parallel_fs`: `servers` OSS x drives in k+m OSTs, `mds` metadata servers, `clients` kernel clients."""

    kind: Literal["parallel_fs"]
    servers: int = Field(ge=1, le=1024, description="object storage servers (OSS), identical")
    drives_per_server: int = Field(ge=1, le=256, description="drives behind each OSS")
    osts_per_server: int = Field(default=1, ge=1, le=64, description="OSTs (object storage targets) per OSS, sharing its drives")
    ost_raid: str = Field(default="8+2", description="k+m of each OST's RAID set (DDN declustered RAID, HPE GridRAID: 8+2; '1+0': no RAID)")
    server: ServerConfig = Field(default_factory=ServerConfig, description="each OSS's CPU, DRAM and base power")
    server_nics: int = Field(default=2, ge=1, le=32, description="NIC ports per OSS")
    mds: int = Field(default=1, ge=1, le=256, description="metadata servers (MDS/MDT pairs, DNE), each a `server`")
    fabric: FabricName = Field(default="ib-hdr", description="NIC ports of servers and clients")
    protocol: Literal["rdma", "tcp"] = Field(default="rdma", description="LNet: o2iblnd (rdma) or socklnd (tcp)")
    clients: int = Field(default=1, ge=1, le=4096, description="identical client nodes, modelled as one aggregate")
    client_nics: int = Field(default=1, ge=1, le=16, description="NIC ports per client node")
    stripe_count: int = Field(default=pfs.DEFAULT_STRIPE_COUNT, ge=1, le=4096, description="OSTs a file is striped over (lfs setstripe -c; default 1)")
    stripe_size: Bytes = Field(default=float(pfs.DEFAULT_STRIPE_SIZE_BYTES), ge=pfs.MIN_STRIPE_SIZE_BYTES,
                               description="bytes per stripe piece (lfs setstripe -S; default 1 MiB)")
    max_rpcs_in_flight: int = Field(default=pfs.DEFAULT_MAX_RPCS_IN_FLIGHT, ge=1, le=pfs.MAX_RPCS_IN_FLIGHT,
                                    description="osc.*.max_rpcs_in_flight: RPCs a client keeps in flight per OST (default 8)")
    max_pages_per_rpc: int = Field(default=pfs.DEFAULT_MAX_PAGES_PER_RPC, ge=1, le=16384,
                                   description="osc.*.max_pages_per_rpc: 4 KiB pages per bulk RPC (default 256 = 1 MiB)")
    mean_file: Bytes | None = Field(default=None, gt=0, description="mean file size of the workload: each file costs the MDS an open and a close "
                                    "(default: none; the data path does not cross the MDS)")

    @field_validator("ost_raid", mode="before")
    @classmethod
    def _raid(cls, value: object) -> str:
        return erasure.parse_k_plus_m("ost_raid", value, "8+2")

    @property
    def raid(self) -> tuple[int, int]:
        k, _, m = self.ost_raid.partition("+")
        return int(k), int(m)

    @property
    def osts(self) -> int:
        return self.servers * self.osts_per_server

    @property
    def count(self) -> int:
        return self.servers * self.drives_per_server

    @model_validator(mode="after")
    def _fits(self) -> ParallelFsStorageConfig:
        if self.stripe_count > self.osts:
            raise ValueError(f"stripe_count: expected at most the {self.osts} OSTs (servers x osts_per_server), found {self.stripe_count}")
        k, m = self.raid
        per_ost = self.drives_per_server / self.osts_per_server
        if k + m > per_ost:
            raise ValueError(f"ost_raid: expected k+m of at most the {per_ost:g} drives of an OST (drives_per_server / osts_per_server), "
                             f"found {self.ost_raid}")
        if self.stripe_size % pfs.MIN_STRIPE_SIZE_BYTES:
            raise ValueError(f"stripe_size: expected a multiple of 64 KiB, found {self.stripe_size:g} B")
        return self


class ParallelFsVolume(PooledVolume):
    """A Lustre-style file system as service stations (module docstring)."""

    def __init__(self, engine: FlowEngine, config: ParallelFsStorageConfig, host: HostRuntime, server: ServerNode, pool: StripedVolume) -> None:
        super().__init__(engine, host, server, config.clients)
        self.config = config
        self.rdma = config.protocol == "rdma"
        self.cost = protocol_cost(f"nfs-{config.protocol}")  # ptlrpc/LNet as a kernel RPC (models.parallel_fs)
        self.oss_rpc_s = pfs.oss_seconds_per_rpc()
        self.mds_open_s = pfs.mds_seconds_per_open()
        self.parity_s = svc.erasure_seconds_per_byte_per_parity()
        servers = float(config.servers)
        node_nic = port_goodput_Bps(config.fabric, self.rdma, config.server_nics)
        client_nic = port_goodput_Bps(config.fabric, self.rdma, config.client_nics)
        for name in ("nic_rx", "nic_tx"):
            self.station(f"node.{name}", 1, servers, node_nic, lumped=True)
            self.station(f"cluster.clients.{name}", 1, config.clients, client_nic, lumped=False)
        self.stations["node.cpu"] = Station(server.cpu, server.cpu.capacity, servers, 1.0, True, watch(server.cpu))
        mds_cores = config.server.cpu_spec().cores * config.server.sockets * config.server.cpu_spec().core_speed
        self.station("mds.cpu", mds_cores, config.mds, 1.0, lumped=True)
        self.watch_host(servers)
        self.use_pool(pool, config.count, *config.raid, servers)

    def plan(self, access: Access) -> Plan:
        c, b, op = self.config, access.block_bytes, access.op
        split = pfs.rpc_split(b, c.stripe_size, c.stripe_count, c.max_pages_per_rpc * pfs.PAGE_BYTES)
        r = split.rpc_bytes
        per_client = max(1.0, access.queue_depth / c.clients)
        osts_used = min(float(c.osts), per_client * split.osts)
        plan = Plan(r, units=split.rpcs, window=pfs.client_window(c.clients, osts_used, c.max_rpcs_in_flight),
                    path=f"{op} {split.rpcs:g} RPC(s) of {r / 1024:g} KiB over {split.osts:g} OST(s)")
        cost = self.cost
        wire = r + cost.header_bytes
        client_cpu = cost.client_cpu_s_per_op + cost.client_cpu_s_per_byte * r
        self.add(plan, "host.cpu", client_cpu / self.host.core_speed)
        self.add(plan, "cluster.clients.nic_tx" if op == "write" else "cluster.clients.nic_rx", wire)
        self.add(plan, "node.nic_rx" if op == "write" else "node.nic_tx", wire)
        k, m = c.raid
        parity = r * m * self.parity_s if op == "write" else 0.0
        self.add(plan, "node.cpu", self.oss_rpc_s + cost.server_cpu_s_per_byte * r + parity)
        self.add(plan, "node.memory", 2.0 * r)
        ost = pfs.ost_work(op, r, k, m, pfs.ost_chunk_bytes(k, c.max_pages_per_rpc * pfs.PAGE_BYTES))
        in_flight = min(access.queue_depth * split.rpcs, plan.window)
        drives = float(c.servers * c.drives_per_server)
        for piece_op, pieces in (("read", ost.reads), ("write", ost.writes)):
            if pieces > 0.0:
                depth = max(1.0, in_flight * pieces / drives)
                piece = Access(piece_op, ost.piece_bytes, access.pattern, depth, access.overwrite or op != piece_op, access.file)
                self.add_drives(plan, self.pool, piece, pieces, self.drive_count)
        plan.delay_s += cost.latency_s
        if c.mean_file is not None:
            files = min(1.0, r / c.mean_file)  # opens per RPC
            self.add(plan, "mds.cpu", files * self.mds_open_s)
            plan.delay_s += files * 2.0 * cost.latency_s  # the open and the close round trips
        return plan


def build(ctx: BuildContext, config: ParallelFsStorageConfig) -> Volume:
    server = server_node(ctx.engine, "node", config.server)
    pool = StripedVolume(config.build_drives(ctx.engine, "node.", 1))  # one representative drive: a piece stays on its drive
    return ParallelFsVolume(ctx.engine, config, ctx.host, server, pool)


def _drives_bought(config: ParallelFsStorageConfig) -> tuple[CatalogRef, int]:
    return config.device, config.count


KIND = StorageKind(
    name="parallel_fs", config=ParallelFsStorageConfig, build=build, drives_bought=_drives_bought,
    usable_fraction=lambda config: config.raid[0] / sum(config.raid), client_nodes=lambda config: config.clients,
    servers=lambda config: [("system.storage.server", config.server)],
)
