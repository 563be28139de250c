"""`kind: object`: an S3-like object store: gateways over erasure-coded drives, parts on a pool of connections.

Its laws are models.object_store (parts, connections, first-byte latency,
per-connection throughput); a host request is `parts` HTTP requests in flight
together, at most `connections` per client, each crossing these stations
(simulator.storage.stations, the closed loop of parts solved by MVA):

  host.cpu                  the client's HTTP/TCP stack (per part, per byte: models.fabric's TCP client costs)
  cluster.clients.nic_rx/tx each client's NIC ports
  node.nic_rx/tx            a gateway's NIC ports: the client's bytes, and the erasure set's pieces to and from its peers
  node.cpu                  the gateway's cores: per request (HTTP, signature, metadata), per byte, the code on writes
  node.memory               the gateway's DRAM
  node.ssdN.*               the gateway's drives (k data pieces read, k + m written)

and a part's delay: the first-byte latency plus its bytes at one connection's
throughput.  There is no POSIX metadata path.  Gateways are identical and
objects spread over all of them: one representative gateway stands for all.
"""

from __future__ import annotations

from typing import Literal

from iowatt.models import cluster_service as svc
from iowatt.models import erasure
from iowatt.models import object_store as obj
from iowatt.models.fabric import FabricName, port_goodput_Bps, protocol_cost
from iowatt.models.units import Bytes, Seconds
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig, ServerNode, server_node
from iowatt.simulator.storage.contract import Access, Volume
from iowatt.simulator.storage.drive_fields import DriveFields
from iowatt.simulator.storage.registry import BuildContext, StorageKind
from iowatt.simulator.storage.stations import Plan, PooledVolume, Station, watch
from iowatt.simulator.storage.striped import StripedVolume
from pydantic import Field, field_validator, model_validator


class ObjectStorageConfig(DriveFields):
    """`kind: object`: `gateways` nodes x drives with k+m erasure coding behind an S3 API, `clients` clients."""

    kind: Literal["object"]
    gateways: int = Field(ge=1, le=1024, description="S3 gateway nodes, each with its own drives (MinIO-style), identical")
    drives_per_gateway: int = Field(ge=1, le=256, description="drives in each gateway node")
    erasure_coding: str = Field(default="4+2", description="k+m of each object's erasure set over the nodes' drives")
    server: ServerConfig = Field(default_factory=ServerConfig, description="each gateway's CPU, DRAM and base power")
    gateway_nics: int = Field(default=2, ge=1, le=32, description="NIC ports per gateway")
    fabric: FabricName = Field(default="100gbe", description="NIC ports of gateways and clients (TCP)")
    clients: int = Field(default=1, ge=1, le=4096, description="identical client nodes, modelled as one aggregate")
    client_nics: int = Field(default=1, ge=1, le=16, description="NIC ports per client node")
    connections: int = Field(default=obj.DEFAULT_CONNECTIONS, ge=1, le=4096,
                             description="HTTP connections per client: parts in flight at once (boto3/.NET transfer managers: 10)")
    part_size: Bytes = Field(default=float(obj.DEFAULT_PART_BYTES), description="bytes per part: multipart upload and ranged GET (5 MiB..5 GiB; default 8 MiB)")
    first_byte: Seconds | None = Field(default=None, ge=0, description="first-byte latency per request (default: models.object_store's assumed 5 ms)")
    connection_throughput_GBps: float | None = Field(default=None, gt=0, description="one connection's streaming rate, GB/s (default: assumed 1 GB/s)")

    @field_validator("erasure_coding", mode="before")
    @classmethod
    def _ec(cls, value: object) -> str:
        return erasure.parse_k_plus_m("erasure_coding", value)

    @property
    def ec(self) -> tuple[int, int]:
        k, _, m = self.erasure_coding.partition("+")
        return int(k), int(m)

    @property
    def count(self) -> int:
        return self.gateways * self.drives_per_gateway

    @model_validator(mode="after")
    def _fits(self) -> ObjectStorageConfig:
        try:
            obj.check_part_bytes(self.part_size)
        except ValueError as error:
            raise ValueError(str(error)) from None
        k, m = self.ec
        if k + m > self.count:
            raise ValueError(f"erasure_coding: expected k+m of at most the {self.count} drives (gateways x drives_per_gateway), found {self.erasure_coding}")
        return self


class ObjectVolume(PooledVolume):
    """An S3-like store as service stations (module docstring)."""

    def __init__(self, engine: FlowEngine, config: ObjectStorageConfig, host: HostRuntime, server: ServerNode, pool: StripedVolume) -> None:
        super().__init__(engine, host, server, config.clients)
        self.config = config
        self.cost = protocol_cost("nfs-tcp")  # a kernel TCP request/response per part (HTTP's own parsing: gateway_cpu)
        self.first_byte_s = config.first_byte if config.first_byte is not None else obj.first_byte_s()
        self.connection_Bps = (config.connection_throughput_GBps * 1e9 if config.connection_throughput_GBps is not None
                               else obj.connection_Bps())
        self.request_s = obj.gateway_seconds_per_request()
        self.parity_s = svc.erasure_seconds_per_byte_per_parity()
        gateways = float(config.gateways)
        node_nic = port_goodput_Bps(config.fabric, False, config.gateway_nics)
        client_nic = port_goodput_Bps(config.fabric, False, config.client_nics)
        for name in ("nic_rx", "nic_tx"):
            self.station(f"node.{name}", 1, gateways, node_nic, lumped=True)
            self.station(f"cluster.clients.{name}", 1, config.clients, client_nic, lumped=False)
        self.stations["node.cpu"] = Station(server.cpu, server.cpu.capacity, gateways, 1.0, True, watch(server.cpu))
        self.watch_host(gateways)
        self.use_pool(pool, config.count, *config.ec, gateways)

    def plan(self, access: Access) -> Plan:
        c, op = self.config, access.op
        parts = obj.split(access.block_bytes, c.part_size)
        p = parts.part_bytes
        plan = Plan(p, units=parts.parts, window=float(c.clients * c.connections),
                    path=f"{op} {parts.parts:g} part(s) of {p / 2**20:.3g} MiB")
        cost = self.cost
        wire = p + cost.header_bytes
        self.add(plan, "host.cpu", (cost.client_cpu_s_per_op + cost.client_cpu_s_per_byte * p) / self.host.core_speed)
        self.add(plan, "cluster.clients.nic_tx" if op == "write" else "cluster.clients.nic_rx", wire)
        k, m = c.ec
        stored = p * (k + m) / k if op == "write" else p
        peers = stored * (1.0 - 1.0 / c.gateways)  # pieces that live on other gateways' drives
        client_side, other = ("node.nic_rx", "node.nic_tx") if op == "write" else ("node.nic_tx", "node.nic_rx")
        self.add(plan, client_side, wire + peers)
        self.add(plan, other, peers)
        parity = p * m * self.parity_s if op == "write" else 0.0
        self.add(plan, "node.cpu", self.request_s + cost.server_cpu_s_per_op + cost.server_cpu_s_per_byte * p + parity)
        self.add(plan, "node.memory", 2.0 * (p + peers))
        pieces = float(k + m if op == "write" else k)
        piece_bytes = max(p / k, 4096.0)
        depth = max(1.0, min(access.queue_depth * parts.parts, plan.window) * pieces / c.count)
        self.add_drives(plan, self.pool, Access(op, piece_bytes, access.pattern, depth, access.overwrite, access.file), pieces, self.drive_count)
        plan.delay_s += self.first_byte_s + p / self.connection_Bps
        return plan


def build(ctx: BuildContext, config: ObjectStorageConfig) -> Volume:
    server = server_node(ctx.engine, "node", config.server)
    pool = StripedVolume(config.build_drives(ctx.engine, "node.", 1))  # one representative drive: a piece stays on its drive
    return ObjectVolume(ctx.engine, config, ctx.host, server, pool)


def _drives_bought(config: ObjectStorageConfig) -> tuple[CatalogRef, int]:
    return config.device, config.count


KIND = StorageKind(
    name="object", config=ObjectStorageConfig, build=build, drives_bought=_drives_bought,
    usable_fraction=lambda config: config.ec[0] / sum(config.ec), client_nodes=lambda config: config.clients,
    servers=lambda config: [("system.storage.server", config.server)],
)
