"""`kind: cluster`: N storage nodes x M drives, k+m erasure coding, per-node and client NICs.

Erasure coding is done by the clients (as in DAOS, WEKA and Ceph's client-side
EC): a write sends (k+m)/k bytes per byte, spread evenly over the nodes; a
healthy read fetches 1 byte per byte.  The `clients` identical client nodes are
one aggregate: their NICs form one constraint of clients x NIC goodput, and the
host's CPU, DRAM, idle and base power are multiplied by `clients`
(SystemRuntime).  This is exact for symmetric clients under max-min fairness
(every client gets the same rate), and hides imbalance between them.  The
switch fabric is assumed non-blocking.

The nodes are identical and every stripe rotates over all of them, so under
max-min fairness each node (and each of its drives) carries the same load: one
representative node stands for all `nodes` (its constraints see one node's
share, its meters count for every live node), which keeps a flow's constraint
list short (a 6 x 10 cluster is 1 node and 1 drive, not 60 drives).  `drives`
still lists a runtime per drive (the representative, repeated) for counts and
per-drive means.
"""

from __future__ import annotations

from typing import Any, Literal

from iowatt.models import array as raid
from iowatt.models import fabric as fab
from iowatt.models.fabric import FabricName, port_goodput_Bps
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import CatalogRef, HostRuntime, ServerConfig, ServerNode, server_node
from iowatt.simulator.storage.contract import PAGE_BYTES, Access, ConcurrencyLaw, Drive, Usage, Volume
from iowatt.simulator.storage.drive_fields import DriveFields
from iowatt.simulator.storage.registry import BuildContext, StorageKind
from iowatt.simulator.storage.shared import scale_meter, summed_queue_limit
from iowatt.simulator.storage.striped import StripedVolume
from pydantic import Field, field_validator, model_validator

# Erasure-code arithmetic per core: Intel ISA-L Reed-Solomon encode runs at several GB/s of
# data per core with AVX2/AVX-512 for small m; assumed 5 GB/s of data per core per parity
# chunk (m = 2 -> 2.5 GB/s per core).  Decoding a lost chunk costs the same per byte read.
EC_BYTES_PER_CORE_SECOND_PER_PARITY = 5e9
# Storage-node software per byte served beyond the wire protocol (placement, checksums):
# assumed 0.1 ns/B (CRC32C runs at >10 GB/s per core with SSE4.2).
NODE_CPU_S_PER_BYTE = 0.1e-9


class ClusterStorageConfig(DriveFields):
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
            raid.check_erasure(k, m, self.nodes, self.failed_nodes)
        except ValueError as error:
            raise ValueError(f"nodes/erasure_coding/failed_nodes: {error}") from None
        return self

    @property
    def count(self) -> int:
        """Drives in the whole cluster (what `storage.count` means for the other kinds)."""
        return self.nodes * self.drives_per_node


class ClusterNode:
    """One storage node: its drives, CPU/DRAM/power and NIC ports."""

    def __init__(self, engine: FlowEngine, name: str, server: ServerNode, pool: StripedVolume, nic_Bps: float) -> None:
        self.name = name
        self.server = server
        self.pool = pool
        self.nic_tx = engine.constraint(f"{name}.nic_tx", nic_Bps)
        self.nic_rx = engine.constraint(f"{name}.nic_rx", nic_Bps)


class ClusterVolume(Volume):
    """A scale-out cluster: `nodes` x drives, k+m erasure coding, per-node and aggregate client NICs."""

    def __init__(self, engine: FlowEngine, node: ClusterNode, host: HostRuntime, config: ClusterStorageConfig) -> None:
        k, m = config.ec
        raid.check_erasure(k, m, config.nodes, config.failed_nodes)
        self.node = node
        self.node_count = config.nodes
        self.host = host
        self.k, self.m = k, m
        self.fabric = config.fabric
        # scale-out clients speak a thin block-like RPC to the nodes: NVMe-oF costs are the closest class
        self.protocol = f"nvmeof-{config.protocol}"
        self.cost = fab.protocol_cost(self.protocol)
        self.failed_nodes = config.failed_nodes
        client_Bps = port_goodput_Bps(config.fabric, config.protocol == "rdma", config.client_nics) * config.clients
        self.client_rx = engine.constraint("cluster.clients_nic_rx", client_Bps)
        self.client_tx = engine.constraint("cluster.clients_nic_tx", client_Bps)
        alive = config.nodes - config.failed_nodes  # failed nodes are down: they draw nothing
        for meter in (node.server.meter, node.server.base_meter):
            scale_meter(engine, meter, alive)
        for drive in node.pool.unique_drives:
            scale_meter(engine, drive.meter, alive * node.pool.copies)

    @property
    def drives(self) -> list[Drive]:
        return self.node.pool.drives * (self.node_count - self.failed_nodes)

    @property
    def capacity_bytes(self) -> float:
        raw = self.node.pool.capacity_bytes * self.node_count
        return raw * raid.ec_usable_fraction(self.k, self.m)

    def discard(self, nbytes: float) -> None:
        self.node.pool.discard(nbytes * raid.ec_write_expansion(self.k, self.m) / self.node_count)

    def stored_shares(self) -> list[tuple[Drive, float]]:
        """The representative node's drives: each node stores (k + m) / k of the data over the nodes."""
        per_node = raid.ec_write_expansion(self.k, self.m) / self.node_count
        return [(d, s * per_node) for d, s in self.node.pool.stored_shares()]

    def chunk_bytes(self, block_bytes: float) -> float:
        """A request is cut into k data chunks; a request smaller than k pages is one chunk (one node)."""
        return block_bytes / self.k if block_bytes >= self.k * PAGE_BYTES else block_bytes

    def wire_bytes_per_byte(self, op: str) -> float:
        """Bytes crossing the client NICs per byte of data: (k+m)/k for writes, 1 for healthy reads."""
        total, _alive = raid.ec_node_load(self.k, self.m, self.node_count, op, self.failed_nodes)  # type: ignore[arg-type]
        return total

    def usage(self, access: Access) -> Usage:
        total, alive = raid.ec_node_load(self.k, self.m, self.node_count, access.op, self.failed_nodes)
        chunk = self.chunk_bytes(access.block_bytes)
        c = self.cost
        header = 1.0 + c.header_bytes / chunk
        per_node = total / alive
        chunks_per_request = total * access.block_bytes / chunk
        node_access = access.with_(block_bytes=chunk, queue_depth=access.queue_depth * chunks_per_request / alive)
        node_cpu = c.server_cpu_s_per_byte + c.server_cpu_s_per_op / chunk + NODE_CPU_S_PER_BYTE
        node = self.node  # stands for each of the `alive` nodes, each carrying per_node bytes per host byte
        nic = node.nic_rx if access.write else node.nic_tx
        usage: Usage = [(nic, per_node * header), (node.server.cpu, per_node * node_cpu), (node.server.memory, per_node * 2.0)]
        # the pool's usage is per byte reaching the node: weight it by the node's share
        usage += [(con, per_node * k) for con, k in node.pool.usage(node_access)]
        client_nic = self.client_tx if access.write else self.client_rx
        client_cpu = total * (c.client_cpu_s_per_byte + c.client_cpu_s_per_op / chunk)
        # encode on writes; decode of the reconstructed share on degraded reads
        lost = self.failed_nodes / self.node_count
        coded = 1.0 if access.write else lost * self.k
        if self.m > 0:
            client_cpu += coded * self.m / EC_BYTES_PER_CORE_SECOND_PER_PARITY
        usage += [(client_nic, total * header), (self.host.cpu, client_cpu / self.host.core_speed)]
        return usage

    def qd1_latency_s(self, access: Access) -> float:
        """Chunks go to their nodes in parallel; one round trip + the chunk on a node's drives."""
        chunk = self.chunk_bytes(access.block_bytes)
        node = self.node.pool.qd1_latency_s(access.with_(block_bytes=chunk, queue_depth=1.0))
        return node + fab.request_latency_s(self.fabric, self.protocol, chunk)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        return ConcurrencyLaw(self.qd1_latency_s(access), 0.0, summed_queue_limit(self.drives))


def build(ctx: BuildContext, config: ClusterStorageConfig) -> Volume:
    # one representative node and drive stand for all (symmetric lumping, see the module docstring)
    server = server_node(ctx.engine, "node", config.node)
    pool = StripedVolume(config.build_drives(ctx.engine, "node.", 1), copies=config.drives_per_node)
    node = ClusterNode(ctx.engine, "node", server, pool, port_goodput_Bps(config.fabric, config.protocol == "rdma", config.node_nics))
    return ClusterVolume(ctx.engine, node, ctx.host, config)


def _drives_bought(config: ClusterStorageConfig) -> tuple[CatalogRef, int]:
    return config.device, config.nodes * config.drives_per_node


KIND = StorageKind(
    name="cluster",
    config=ClusterStorageConfig,
    build=build,
    drives_bought=_drives_bought,
    usable_fraction=lambda config: raid.ec_usable_fraction(*config.ec),  # k / (k + m)
    client_nodes=lambda config: config.clients,
)
