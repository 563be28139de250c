"""The scale-out cluster as a Volume: service stations per node and per client, erasure coding by request size.

A host request (models.erasure.request_work: its drive pieces, network bytes,
coding work and hops) crosses these stations, each an engine constraint with
the matching stage of the closed loop (models.mva):

  cluster.clients.frontend   each client's dedicated frontend cores (DPDK stack); a kernel or
                             FUSE client works on host.cpu instead (shared with the application)
  cluster.clients.nic_tx/rx  each client's NIC ports, and cluster.clients.pcie_tx/rx their cards' PCIe links
  node.nic_rx/tx, node.pcie_rx/tx   a storage node's NIC ports and their cards' PCIe host links
  node.compute               the node's compute-process cores (the request at the stripe's owner, the code)
  node.drive_cores           the node's drive-process cores (every piece read or written)
  node.memory                the node's DRAM (every byte DMA'd in from the NIC or a drive, and out)
  node.ssdN.*                the drives (simulator.storage.ssd), striped within the node

Costs per host byte are the station's work per request / request bytes.  The
nodes are identical and stripes rotate over all of them, so one representative
node stands for all `nodes` (its constraints carry one node's share, its meters
count for every live node); the identical clients are one aggregate (their
constraints hold every client's capacity; the MVA gives each client a private
station).  The closed loop of `queue_depth` requests spread evenly over the
clients is solved by models.mva; the law handed to workloads reproduces that
solution at the access's queue depth, and the engine's constraints cap the
rest.  Storage cores of a DPDK design poll: they draw busy power all the time
(DPDK poll-mode drivers spin on their queues; WEKA dedicates them, "not
available to run any other user processes", docs.weka.io planning).

Each station integrates its own load over time (a breakpoint-free Dynamics),
and so do the client hosts' CPU and DRAM, which the workload shares with the
storage stack; report() gives every station's mean utilisation over the run
and names the busiest as the binding constraint.
"""

from __future__ import annotations

import math

from iowatt.models import cluster_service as svc
from iowatt.models import erasure, incast, mva
from iowatt.models.fabric import port_goodput_Bps, protocol_cost
from iowatt.models.links import link_payload_Bps
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import HostRuntime, ServerNode, server_node
from iowatt.simulator.storage.cluster_config import ClusterStorageConfig
from iowatt.simulator.storage.contract import Access, Drive
from iowatt.simulator.storage.registry import BuildContext
from iowatt.simulator.storage.shared import scale_meter
from iowatt.simulator.storage.stations import Plan, StationVolume
from iowatt.simulator.storage.striped import StripedVolume


class ClusterVolume(StationVolume):
    """A scale-out cluster: `nodes` x drives, k+m erasure coding, software service stations, `clients` clients."""

    paths_key = "erasure_paths"

    def __init__(self, engine: FlowEngine, config: ClusterStorageConfig, host: HostRuntime, server: ServerNode, pool: StripedVolume) -> None:
        super().__init__(engine, host, server, config.clients)
        self.config = config
        self.pool = pool
        self.layout = config.layout()
        alive = self.layout.alive
        self.rdma = config.protocol == "rdma"
        self.header_bytes = protocol_cost(f"nvmeof-{config.protocol}").header_bytes
        self.compute_rates = config.software.compute_rates()  # assumed constants, read once per build
        node_cpu = config.node.cpu_spec()
        nic_card = link_payload_Bps(svc.NIC_HOST_LINK[config.fabric])
        node_nic = port_goodput_Bps(config.fabric, self.rdma, config.node_nics, config.mtu)
        client_nic = port_goodput_Bps(config.fabric, self.rdma, config.client_nics, config.mtu)
        node_cards = -(-config.node_nics // config.nic_ports_per_card)
        client_cards = -(-config.client_nics // config.nic_ports_per_card)
        node = {"compute": (config.compute_cores, node_cpu.core_speed), "drive_cores": (config.drive_cores, node_cpu.core_speed),
                "nic_rx": (1, node_nic), "nic_tx": (1, node_nic), "pcie_rx": (1, node_cards * nic_card),
                "pcie_tx": (1, node_cards * nic_card)}
        for name, (servers, rate) in node.items():
            self.station(f"node.{name}", servers, alive, rate, lumped=True)
        clients = {"nic_rx": (1, client_nic), "nic_tx": (1, client_nic), "pcie_rx": (1, client_cards * nic_card),
                   "pcie_tx": (1, client_cards * nic_card)}
        if config.client.stack == "dpdk":
            clients["frontend"] = (config.client.frontend_cores, host.core_speed)
        for name, (servers, rate) in clients.items():
            self.station(f"cluster.clients.{name}", servers, config.clients, rate, lumped=False)
        self.watch_host(alive)
        self._spin_power(config, node_cpu.tdp_W, node_cpu.idle_W, node_cpu.cores)
        for meter in (server.meter, server.base_meter):
            scale_meter(engine, meter, alive)  # failed nodes are down: they draw nothing
        for drive in pool.unique_drives:
            scale_meter(engine, drive.meter, alive * pool.copies)

    def _spin_power(self, config: ClusterStorageConfig, tdp_W: float, idle_W: float, cores: int) -> None:
        """Dedicated DPDK cores poll: busy power whatever the load (module docstring)."""
        node_cores = config.compute_cores + config.drive_cores
        self.engine.set_meter_extra(self.server.meter, self.server.meter.extra_W + node_cores * (tdp_W - idle_W) / cores)
        if config.client.stack == "dpdk":
            cpu = self.host.cpu_spec
            spin = config.clients * config.client.frontend_cores * (cpu.tdp_W - cpu.idle_W) / cpu.cores
            self.engine.set_meter_extra(self.host.cpu_meter, self.host.cpu_meter.extra_W + spin)

    # ------------------------------------------------------------ contract
    @property
    def drives(self) -> list[Drive]:
        return self.pool.drives * self.layout.alive

    @property
    def capacity_bytes(self) -> float:
        raw = self.pool.capacity_bytes * self.layout.nodes
        return raw * erasure.usable_fraction(self.layout.k, self.layout.m)

    def discard(self, nbytes: float) -> None:
        self.pool.discard(nbytes * erasure.write_expansion(self.layout.k, self.layout.m) / self.layout.nodes)

    def stored_shares(self) -> list[tuple[Drive, float]]:
        """The representative node's drives: each node stores (k + m) / k of the data over the nodes."""
        per_node = erasure.write_expansion(self.layout.k, self.layout.m) / self.layout.nodes
        return [(d, s * per_node) for d, s in self.pool.stored_shares()]

    # ------------------------------------------------------------ one access
    def plan(self, access: Access) -> Plan:
        b = access.block_bytes
        work = erasure.request_work(self.layout, access.op, b, access.pattern)
        plan = Plan(b, path=work.path)
        self._client_stages(plan, access, work)
        self._network_stages(plan, access, work)
        self._node_stages(plan, access, work)
        self._drive_stages(plan, access, work)
        c = self.config
        plan.delay_s += work.client_hops * c.client.hop_s + work.node_hops * c.software.hop_s + svc.stack_latency_s(c.client.stack, b)
        if c.incast is not None and access.op == "read" and work.fan_out > 0:
            plan.delay_s += incast.stall_s(work.fan_out, work.client_in_bytes / work.fan_out, c.incast)
        return plan

    def _coding_s(self, coded: float, op: str) -> float:
        """Reference-core seconds of the code: m parities per data byte written, k inputs per rebuilt byte (counted in `coded`)."""
        return coded * (self.layout.m if op == "write" else 1.0) * svc.erasure_seconds_per_byte_per_parity()

    def _client_stages(self, plan: Plan, access: Access, work: erasure.RequestWork) -> None:
        c, b = self.config, access.block_bytes
        coding = self._coding_s(work.coded_bytes, access.op) if self.layout.erasure_at == "client" else 0.0
        if c.client.stack == "dpdk":
            splits = svc.client_request_split(c.client.stack, b)
            fe = c.client.frontend.seconds(access.op, splits, svc.frontend_bytes(access.op, b, self.rdma))
            self.add(plan, "cluster.clients.frontend", fe + coding)
        else:
            self.add(plan, "host.cpu", (svc.host_cpu_s(c.client.stack, b) + coding) / self.host.core_speed)

    def _network_stages(self, plan: Plan, access: Access, work: erasure.RequestWork) -> None:
        b = access.block_bytes
        piece = b / max(work.fan_out, 1.0)
        wire = 1.0 + self.header_bytes / piece
        out_b, in_b = work.client_out_bytes * wire, work.client_in_bytes * wire
        for name, nbytes in (("nic_tx", out_b), ("pcie_tx", out_b), ("nic_rx", in_b), ("pcie_rx", in_b)):
            self.add(plan, f"cluster.clients.{name}", nbytes)
        node_in = (work.client_out_bytes + work.peer_bytes) * wire
        node_out = (work.client_in_bytes + work.peer_bytes) * wire
        later = work.background_peer_bytes * wire
        for name, nbytes in (("nic_rx", node_in), ("pcie_rx", node_in), ("nic_tx", node_out), ("pcie_tx", node_out)):
            self.add(plan, f"node.{name}", nbytes / work.fan_out, work.fan_out, later)
        moved = node_in + node_out + work.reads.bytes + work.writes.bytes
        moved_later = 2.0 * later + work.background_reads.bytes + work.background_writes.bytes
        self.add(plan, "node.memory", moved / work.fan_out, work.fan_out, moved_later)

    def _node_stages(self, plan: Plan, access: Access, work: erasure.RequestWork) -> None:
        s, op = self.config.software, access.op
        if self.layout.erasure_at == "server":
            handled = work.client_out_bytes if op == "write" else 0.0
            owner = self.compute_rates.seconds(op, work.owner_requests, handled) + self._coding_s(work.coded_bytes, op)
            later = self.compute_rates.seconds("write", 0.0, work.background_coded_bytes) + self._coding_s(work.background_coded_bytes, "write")
            self.add(plan, "node.compute", owner, 1.0, later)
        drive = s.drive.seconds("read", work.reads.ios, work.reads.bytes) + s.drive.seconds("write", work.writes.ios, work.writes.bytes)
        later = s.drive.seconds("read", work.background_reads.ios, work.background_reads.bytes)
        later += s.drive.seconds("write", work.background_writes.ios, work.background_writes.bytes)
        self.add(plan, "node.drive_cores", drive / work.fan_out, work.fan_out, later)

    def _drive_stages(self, plan: Plan, access: Access, work: erasure.RequestWork) -> None:
        """The pieces on the nodes' drives: engine usage per kind of piece, the drives' own law as the MVA stage."""
        b, alive = access.block_bytes, self.layout.alive
        log = self.layout.small_writes == "journal" and not work.rewrites
        kinds = (
            ("read", work.reads, "rand" if work.rewrites else access.pattern, access.overwrite, True),
            ("write", work.writes, "seq" if log else access.pattern, access.overwrite or work.rewrites, True),
            ("read", work.background_reads, "seq", False, False),
            ("write", work.background_writes, "seq", False, False),
        )
        busy = 0.0
        for op, pieces, pattern, overwrite, foreground in kinds:
            if pieces.ios <= 0.0:
                continue
            depth = max(1.0, access.queue_depth * pieces.ios / alive)
            piece = Access(op, pieces.size, pattern, depth, overwrite)  # type: ignore[arg-type]
            share = pieces.bytes / (b * alive)
            drive_usage = self.pool.usage(piece)
            plan.usage += [(con, k * share) for con, k in drive_usage]
            busy += share * max((k / con.capacity for con, k in drive_usage if 0.0 < con.capacity < math.inf), default=0.0)
            if foreground:
                self._drive_stage(plan, piece, pieces.ios)
        if busy > 0.0:
            plan.usage.append((self.drives_probe, busy))

    def _drive_stage(self, plan: Plan, piece: Access, pieces: float) -> None:
        """The pool's law (models.ssd: L0 over c = L0 / S flash units) as c units per node; no queueing law: a delay."""
        law = self.pool.concurrency(piece)
        if law.queue_seconds <= 0.0:
            plan.delay_s += law.qd1_latency_s
            return
        units = law.qd1_latency_s / law.queue_seconds
        plan.stages.append(mva.Stage(f"node.drives.{piece.op}", law.qd1_latency_s, 1.0, self.layout.alive * units, pieces))


def build_cluster(ctx: BuildContext, config: ClusterStorageConfig) -> ClusterVolume:
    # one representative node and drive stand for all (symmetric lumping, see the module docstring)
    server = server_node(ctx.engine, "node", config.node)
    pool = StripedVolume(config.build_drives(ctx.engine, "node.", 1), copies=config.drives_per_node)
    return ClusterVolume(ctx.engine, config, ctx.host, server, pool)
