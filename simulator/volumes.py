"""Storage behind the filesystem as the flow engine sees it: RAID arrays, NFS exports, EC clusters.

Every volume offers what the workloads use: `write_usage(block_bytes)`,
`read_usage(block_bytes)` (lists of (constraint, coefficient per host byte)),
`discard(nbytes)`, `capacity_bytes` and `drives`; optional keyword arguments
`pattern` ('seq' | 'rand') and `queue_depth` (host requests outstanding) pass to
the drives (when they are not given, the hints a workload such as fio set on
the drives are used).  `request_latency_s(block_bytes, write)` is the unloaded
(QD1) latency of one request: the drives' own latency for the pieces they see
plus the fabric round trip; a closed-loop workload at queue depth QD runs at
most QD x block / request_latency_s (Little's law).

RaidVolume: per-drive device bytes per host byte from models.array (small-write
penalty, full-stripe writes, degraded reads); in rebuild mode a share of every
involved drive's bottleneck resource is reserved for the rebuild stream, as a
controller's rebuild-rate setting does.

NfsVolume: an inner volume on a storage server, reached over a fabric: server
and client NIC constraints per direction (payload rate after framing, with the
protocol header per request as a coefficient), server CPU (per byte and per
RPC), server DRAM traffic (the data passes through server memory: DMA in from
the drives and out to the NIC, plus one copy on TCP), client CPU per byte and
per RPC on the host.

ClusterVolume: N storage nodes with M drives each behind per-node NICs, k+m
erasure coding done by the clients (as in DAOS, WEKA and Ceph's client-side
EC): a write sends (k+m)/k bytes per byte, spread evenly over the nodes; a
healthy read fetches 1 byte per byte.  The `clients` identical client nodes are
one aggregate: their NICs form one constraint of clients x NIC goodput, and the
host's CPU, DRAM, idle and base power are multiplied by `clients`
(SystemRuntime).  This is exact for symmetric clients under max-min fairness
(every client gets the same rate), and hides imbalance between them.  The
switch fabric is assumed non-blocking.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from iowatt.models import array as raid
from iowatt.models import fabric as fab
from iowatt.models import hdd as hdd_model
from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import SSDSpec, unloaded_latency_s
from iowatt.simulator.flows import Constraint, FlowEngine, Meter
from iowatt.simulator.hdd_runtime import HddRuntime

Usage = list[tuple[Constraint, float]]

# Erasure-code arithmetic per core: Intel ISA-L Reed-Solomon encode runs at several GB/s of
# data per core with AVX2/AVX-512 for small m; assumed 5 GB/s of data per core per parity
# chunk (m = 2 -> 2.5 GB/s per core).  Decoding a lost chunk costs the same per byte read.
EC_BYTES_PER_CORE_SECOND_PER_PARITY = 5e9
# Storage-node software per byte served beyond the wire protocol (placement, checksums):
# assumed 0.1 ns/B (CRC32C runs at >10 GB/s per core with SSE4.2).
NODE_CPU_S_PER_BYTE = 0.1e-9
# Minimum request the drives see (4 KiB pages; smaller host writes are merged into a page).
PAGE = 4096.0


def _accepts(function: Any, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def drive_usage(drive: Any, op: str, block_bytes: float, share: float, pattern: str | None = None,
                queue_depth: int | None = None) -> Usage:
    """One drive's usage for `share` device bytes per host byte, whatever its runtime's keyword names."""
    if share <= 0.0:
        return []
    function = drive.write_usage if op == "write" else drive.read_usage
    kwargs: dict[str, Any] = {}
    if isinstance(drive, HddRuntime):
        if pattern is not None:
            kwargs["access"] = "sequential" if pattern == "seq" else "random"
        if queue_depth is not None:
            kwargs["queue_depth"] = max(1, round(queue_depth))
    else:
        if pattern is not None and _accepts(function, "pattern"):
            kwargs["pattern"] = pattern
        if queue_depth is not None and _accepts(function, "queue_depth"):
            kwargs["queue_depth"] = max(1, round(queue_depth))
    return list(function(max(block_bytes, PAGE), share, **kwargs))


def _discard(drive: Any, nbytes: float) -> None:
    trim = getattr(drive, "discard", None)
    if trim is not None and nbytes > 0.0:
        trim(nbytes)


def hinted_pattern(drives: list[Any]) -> str | None:
    """The access pattern a workload told the drives of (fio sets `access` / `write_pattern` hints), if any."""
    if not drives:
        return None
    d = drives[0]
    if isinstance(d, HddRuntime):
        return "seq" if getattr(d, "access", "random") == "sequential" else "rand"
    hint = getattr(d, "write_pattern", None)
    return hint if hint in ("seq", "rand") else None


def hinted_queue_depth(drives: list[Any]) -> int | None:
    """Host requests outstanding as hinted on the drives (fio sets it on disks), if any."""
    if drives and isinstance(drives[0], HddRuntime):
        return int(getattr(drives[0], "queue_depth", 1))
    return None


def drive_latency_s(drive: Any, block_bytes: float, pattern: str | None, write: bool) -> float:
    """Unloaded (QD1) latency of one request on one drive (models.ssd / models.hdd)."""
    spec = drive.spec
    block = max(block_bytes, PAGE)
    if isinstance(spec, SSDSpec):
        return unloaded_latency_s(spec, block, write)
    span = getattr(drive, "span_fraction", 1.0)
    if pattern == "seq":
        rate = min(hdd_model.media_rate_Bps(spec, span), link_payload_Bps(spec.link))
        return spec.command_overhead_ms / 1e3 + block / rate
    return float(hdd_model.random_service_seconds(spec, block, 1, span, write))


def reserve(engine: FlowEngine, usage: Usage, rate: float) -> None:
    """Take `rate` host bytes per second of `usage` out of its constraints for good (a background stream).

    Capacities shrink by rate x coefficient; meters on those constraints gain the
    matching power as extra watts.  Constraints with state dynamics (a drive's
    write-speed factor) are left alone: their capacity is reset at breakpoints.
    """
    for c, k in usage:
        load = rate * k
        if c.dynamics is None and not math.isinf(c.capacity):
            engine.set_capacity(c, max(c.capacity - load, 1e-6 * c.capacity))
        for m in c.meters:
            for term_c, joules in m.terms:
                if term_c is c:
                    engine.set_meter_extra(m, m.extra_W + joules * load)


def bottleneck_share(usage: Usage, rate: float) -> float:
    """Largest share of any finite constraint's capacity that `rate` of `usage` takes."""
    worst = 0.0
    for c, k in usage:
        if not math.isinf(c.capacity) and c.capacity > 0.0:
            worst = max(worst, rate * k / c.capacity)
    return worst


# ---------------------------------------------------------------------------- RAID


class RaidVolume:
    """RAID 0/1/5/6/10 over identical drives (models.array laws)."""

    def __init__(
        self,
        engine: FlowEngine,
        drives: list[Any],
        level: int,
        stripe_unit: float,
        degraded: bool = False,
        rebuild: bool = False,
        rebuild_share: float = 0.3,
    ) -> None:
        raid.check_geometry(level, len(drives))
        self.engine = engine
        self.drives = drives
        self.level = level
        self.stripe_unit = float(stripe_unit)
        # the failed drive is the last one; in rebuild mode it is the replacement being written
        self.failed: int | None = len(drives) - 1 if (degraded or rebuild) else None
        self.rebuild_rate_Bps = 0.0
        if rebuild:
            self._start_rebuild(rebuild_share)

    @property
    def n(self) -> int:
        return len(self.drives)

    @property
    def capacity_bytes(self) -> float:
        return raid.usable_capacity_bytes(self.level, self.n, self.drives[0].spec.capacity_bytes)

    def load(self, op: str, block_bytes: float, pattern: str | None = None) -> raid.ArrayLoad:
        return raid.io_load(self.level, self.n, op, block_bytes, self.stripe_unit,  # type: ignore[arg-type]
                            sequential=pattern == "seq", failed=self.failed)

    def _usage(self, op: str, block_bytes: float, pattern: str | None, queue_depth: int | None) -> Usage:
        pattern = pattern or hinted_pattern(self.drives)
        load = self.load(op, block_bytes, pattern)
        # host requests outstanding spread over the drives, times device I/Os per request
        host_qd = queue_depth if queue_depth is not None else hinted_queue_depth(self.drives)
        qd = None if host_qd is None else host_qd * max(1.0, load.drive_ios) / self.n
        out: Usage = []
        for i, drive in enumerate(self.drives):
            # reads inside a write are read-modify-write reads of old data/parity: random
            read_pattern = pattern if op == "read" else "rand"
            out += drive_usage(drive, "read", load.drive_block_bytes, load.read[i], read_pattern, qd)
            out += drive_usage(drive, "write", load.drive_block_bytes, load.write[i], pattern, qd)
        return out

    def read_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("read", block_bytes, pattern, queue_depth)

    def write_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("write", block_bytes, pattern, queue_depth)

    def discard(self, nbytes: float) -> None:
        """Deleted files free their data and parity: each drive drops its full-stripe share."""
        load = raid.io_load(self.level, self.n, "write", self.stripe_unit, self.stripe_unit, sequential=True)
        for drive, share in zip(self.drives, load.write, strict=True):
            _discard(drive, nbytes * share)

    def request_latency_s(self, block_bytes: float, write: bool = False, pattern: str | None = None) -> float:
        """QD1 latency: the slowest drive piece; a read-modify-write reads before it writes (two phases)."""
        pattern = pattern or hinted_pattern(self.drives)
        load = self.load("write" if write else "read", block_bytes, pattern)
        drive = self.drives[0]
        latency = drive_latency_s(drive, load.drive_block_bytes, pattern, write)
        if write and load.read_total > 0.0:
            latency += drive_latency_s(drive, load.drive_block_bytes, "rand", False)
        return latency

    def _start_rebuild(self, share: float) -> None:
        """Reserve the rebuild stream: it takes `share` of the busiest involved drive's bottleneck."""
        assert self.failed is not None
        reads = raid.rebuild_reads(self.level, self.n, self.failed)
        block = self.stripe_unit
        usage: Usage = []
        for i, drive in enumerate(self.drives):
            usage += drive_usage(drive, "read", block, reads[i], "seq")
        usage += drive_usage(self.drives[self.failed], "write", block, 1.0, "seq")
        worst = bottleneck_share(usage, 1.0)
        if worst <= 0.0:
            return
        self.rebuild_rate_Bps = share / worst
        reserve(self.engine, usage, self.rebuild_rate_Bps)

    def rebuild_seconds(self) -> float:
        """Time to rebuild the whole replacement drive at the reserved rate (md rebuilds every sector)."""
        if self.rebuild_rate_Bps <= 0.0:
            return 0.0
        return self.drives[0].spec.capacity_bytes / self.rebuild_rate_Bps


# ---------------------------------------------------------------------------- servers behind a fabric


def _core_speed(host: Any) -> float:
    spec = getattr(host, "cpu_spec", None)
    return float(getattr(spec, "core_speed", 1.0))


class ServerNode:
    """A storage server's CPU, DRAM and power (not the client host).

    `cores` are reference-core equivalents (cores x CPUSpec.core_speed), so the
    protocol CPU costs of models.fabric, stated for the reference core, apply as is."""

    def __init__(self, engine: FlowEngine, name: str, cores: int, memory_Bps: float, idle_W: float,
                 busy_core_W: float, base_W: float) -> None:
        self.name = name
        self.cpu = engine.constraint(f"{name}.cpu", float(cores))
        self.memory = engine.constraint(f"{name}.memory", memory_Bps)
        self.meter: Meter = engine.meter(f"{name}.cpu", idle_W, [(self.cpu, busy_core_W)], group="storage_server")
        self.base_meter: Meter = engine.meter(f"{name}.base", base_W, [], group="storage_server")


class NfsVolume:
    """An NFS export of `inner` (a RAID or striped local volume) on a server, over a fabric."""

    def __init__(
        self,
        engine: FlowEngine,
        inner: Any,
        server: ServerNode,
        host: Any,
        fabric: str,
        protocol: str,
        server_ports: int = 1,
        client_ports: int = 1,
        rsize: float = 2**20,
        wsize: float = 2**20,
        server_threads: int = 8,
        client_slots: int = 64,
    ) -> None:
        self.engine = engine
        self.inner = inner
        self.server_threads = int(server_threads)
        # nfsd threads serve one RPC each at a time (a READ blocks its thread on the disk read), and
        # the client's session slots bound the RPCs in flight: both are thread-seconds per second
        self.threads = engine.constraint("nfs.server_threads", float(server_threads))
        self.slots = engine.constraint("nfs.client_slots", float(client_slots))
        self.server = server
        self.host = host
        self.fabric = fabric
        self.protocol = protocol
        self.cost = fab.protocol_cost(protocol)
        self.rsize = float(rsize)
        self.wsize = float(wsize)
        rdma = protocol.endswith("rdma")
        server_Bps = fab.port_goodput_Bps(fabric, rdma, server_ports)
        client_Bps = fab.port_goodput_Bps(fabric, rdma, client_ports)
        # tx = server -> client (reads), rx = client -> server (writes); full duplex
        self.server_tx = engine.constraint("nfs.server_nic_tx", server_Bps)
        self.server_rx = engine.constraint("nfs.server_nic_rx", server_Bps)
        self.client_rx = engine.constraint("nfs.client_nic_rx", client_Bps)
        self.client_tx = engine.constraint("nfs.client_nic_tx", client_Bps)
        # DRAM bytes per data byte on the server: DMA in + DMA out; TCP adds a copy (read + write)
        self.server_dram = 2.0 if rdma else 4.0

    @property
    def drives(self) -> list[Any]:
        return self.inner.drives

    @property
    def capacity_bytes(self) -> float:
        return self.inner.capacity_bytes

    def discard(self, nbytes: float) -> None:
        self.inner.discard(nbytes)

    def _protocol_usage(self, block: float, write: bool) -> Usage:
        rpc = min(block, self.wsize if write else self.rsize)
        wire = 1.0 + self.cost.header_bytes / rpc
        c = self.cost
        server_cpu = c.server_cpu_s_per_byte + c.server_cpu_s_per_op / rpc
        client_cpu = c.client_cpu_s_per_byte + c.client_cpu_s_per_op / rpc
        nics = [(self.server_rx, wire), (self.client_tx, wire)] if write else [(self.server_tx, wire), (self.client_rx, wire)]
        # CPU costs are stated for the reference core (CPUSpec.core_speed 1.0): a slower core takes longer
        client_cpu /= _core_speed(self.host)
        return [*nics, (self.server.cpu, server_cpu), (self.server.memory, self.server_dram), (self.host.cpu, client_cpu)]

    def thread_seconds(self, rpc: float, write: bool, pattern: str | None = None) -> float:
        """Time an nfsd thread holds one RPC: a READ waits for the export's read (the server's page cache
        misses on data sets larger than its RAM); a WRITE is UNSTABLE by default and only copies into
        the server's page cache (written back and COMMITted later), so it costs CPU only."""
        c = self.cost
        cpu = c.server_cpu_s_per_op + c.server_cpu_s_per_byte * rpc
        return cpu if write else cpu + volume_latency_s(self.inner, rpc, False, pattern)

    def _usage(self, op: str, block_bytes: float, pattern: str | None, queue_depth: int | None) -> Usage:
        write = op == "write"
        rpc = min(block_bytes, self.wsize if write else self.rsize)
        host_qd = queue_depth if queue_depth is not None else hinted_queue_depth(self.drives)
        # the export sees at most one request per nfsd thread
        inner_qd = None if host_qd is None else min(host_qd, self.server_threads)
        thread = self.thread_seconds(rpc, write, pattern)
        round_trip = thread + fab.request_latency_s(self.fabric, self.protocol, rpc)
        return [
            *_inner_usage(self.inner, op, rpc, pattern, inner_qd),
            *self._protocol_usage(block_bytes, write),
            (self.threads, thread / rpc),
            (self.slots, round_trip / rpc),
        ]

    def read_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("read", block_bytes, pattern, queue_depth)

    def write_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("write", block_bytes, pattern, queue_depth)

    def request_latency_s(self, block_bytes: float, write: bool = False, pattern: str | None = None) -> float:
        """QD1 latency: the export's own request latency + the RPC round trip and the data's serialisation."""
        rpc = min(block_bytes, self.wsize if write else self.rsize)
        return volume_latency_s(self.inner, rpc, write, pattern) + fab.request_latency_s(self.fabric, self.protocol, rpc)


def _inner_usage(volume: Any, op: str, block: float, pattern: str | None, queue_depth: int | None) -> Usage:
    function = volume.write_usage if op == "write" else volume.read_usage
    kwargs: dict[str, Any] = {}
    if pattern is not None and _accepts(function, "pattern"):
        kwargs["pattern"] = pattern
    if queue_depth is not None and _accepts(function, "queue_depth"):
        kwargs["queue_depth"] = queue_depth
    return list(function(block, **kwargs))


class StripedDrives:
    """Drives striped evenly (RAID 0 without a stripe-unit law): a node's local pool.

    `copies` > 1 stands for that many identical drives per runtime given (symmetric
    lumping): each runtime takes 1/(len x copies) of the bytes, its meter must count for
    `copies` drives (scale_meter), and `drives` lists every runtime `copies` times so that
    counts and per-drive means stay right."""

    def __init__(self, drives: list[Any], copies: int = 1) -> None:
        self.unique = drives
        self.copies = copies

    @property
    def drives(self) -> list[Any]:
        return self.unique * self.copies

    @property
    def capacity_bytes(self) -> float:
        return sum(d.spec.capacity_bytes for d in self.unique) * self.copies

    def discard(self, nbytes: float) -> None:
        for drive in self.unique:
            _discard(drive, nbytes / (len(self.unique) * self.copies))

    def _usage(self, op: str, block_bytes: float, pattern: str | None, queue_depth: int | None) -> Usage:
        share = 1.0 / (len(self.unique) * self.copies)
        per_drive_block = max(block_bytes * share, PAGE)
        host_qd = queue_depth if queue_depth is not None else hinted_queue_depth(self.unique)
        qd = None if host_qd is None else host_qd * share
        return [u for d in self.unique for u in drive_usage(d, op, per_drive_block, share, pattern, qd)]

    def read_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("read", block_bytes, pattern, queue_depth)

    def write_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("write", block_bytes, pattern, queue_depth)

    def request_latency_s(self, block_bytes: float, write: bool = False, pattern: str | None = None) -> float:
        pattern = pattern or hinted_pattern(self.drives)
        piece = max(block_bytes / (len(self.unique) * self.copies), PAGE)
        return max(drive_latency_s(d, piece, pattern, write) for d in self.unique)


def volume_latency_s(volume: Any, block_bytes: float, write: bool, pattern: str | None = None) -> float:
    """QD1 latency of a volume: its own law, else that of the slowest of its drives (a striped local volume)."""
    own = getattr(volume, "request_latency_s", None)
    if callable(own):
        return float(own(block_bytes, write, pattern))
    drives = volume.drives
    pattern = pattern or hinted_pattern(drives)
    piece = max(block_bytes / len(drives), PAGE) if len(drives) > 1 else block_bytes
    return max(drive_latency_s(d, piece, pattern, write) for d in drives)


def scale_meter(engine: FlowEngine, meter: Meter, factor: float) -> None:
    """Make a meter count for `factor` identical components (symmetric lumping)."""
    meter.idle_W *= factor
    meter.terms = [(c, k * factor) for c, k in meter.terms]
    engine.set_meter_extra(meter, meter.extra_W * factor)  # refreshes the meter's power now


class ClusterNode:
    """One storage node: its drives, CPU/DRAM/power and NIC ports."""

    def __init__(self, engine: FlowEngine, name: str, server: ServerNode, pool: StripedDrives, nic_Bps: float) -> None:
        self.name = name
        self.server = server
        self.pool = pool
        self.nic_tx = engine.constraint(f"{name}.nic_tx", nic_Bps)
        self.nic_rx = engine.constraint(f"{name}.nic_rx", nic_Bps)


class ClusterVolume:
    """A scale-out cluster: `nodes` x drives, k+m erasure coding, per-node and aggregate client NICs.

    The nodes are identical and every stripe rotates over all of them, so under
    max-min fairness each node (and each of its drives) carries the same load: one
    representative node stands for all `nodes` (its constraints see one node's share,
    its meters count for every live node), which keeps a flow's constraint list short
    (a 6 x 10 cluster is 1 node and 1 drive, not 60 drives).  `drives` still lists a
    runtime per drive (the representative, repeated) for counts and per-drive means.
    """

    def __init__(
        self,
        engine: FlowEngine,
        node: ClusterNode,
        nodes: int,
        host: Any,
        k: int,
        m: int,
        client_Bps: float,
        fabric: str,
        protocol: str,
        failed_nodes: int = 0,
    ) -> None:
        raid.check_erasure(k, m, nodes, failed_nodes)
        self.engine = engine
        self.node = node
        self.node_count = nodes
        self.host = host
        self.k = k
        self.m = m
        self.fabric = fabric
        self.protocol = protocol
        self.cost = fab.protocol_cost(protocol)
        self.failed_nodes = failed_nodes
        self.client_rx = engine.constraint("cluster.clients_nic_rx", client_Bps)
        self.client_tx = engine.constraint("cluster.clients_nic_tx", client_Bps)
        alive = nodes - failed_nodes  # failed nodes are down: they draw nothing
        for meter in (node.server.meter, node.server.base_meter):
            scale_meter(engine, meter, alive)
        for drive in node.pool.unique:
            scale_meter(engine, drive.meter, alive * node.pool.copies)

    @property
    def drives(self) -> list[Any]:
        return self.node.pool.drives * (self.node_count - self.failed_nodes)

    @property
    def capacity_bytes(self) -> float:
        raw = self.node.pool.capacity_bytes * self.node_count
        return raw * raid.ec_usable_fraction(self.k, self.m)

    def discard(self, nbytes: float) -> None:
        self.node.pool.discard(nbytes * raid.ec_write_expansion(self.k, self.m) / self.node_count)

    def chunk_bytes(self, block_bytes: float) -> float:
        """A request is cut into k data chunks; a request smaller than k pages is one chunk (one node)."""
        return block_bytes / self.k if block_bytes >= self.k * PAGE else block_bytes

    def wire_bytes_per_byte(self, op: str) -> float:
        """Bytes crossing the client NICs per byte of data: (k+m)/k for writes, 1 for healthy reads."""
        total, _alive = raid.ec_node_load(self.k, self.m, self.node_count, op, self.failed_nodes)  # type: ignore[arg-type]
        return total

    def _usage(self, op: str, block_bytes: float, pattern: str | None, queue_depth: int | None) -> Usage:
        write = op == "write"
        total, alive = raid.ec_node_load(self.k, self.m, self.node_count, op, self.failed_nodes)  # type: ignore[arg-type]
        chunk = self.chunk_bytes(block_bytes)
        c = self.cost
        header = 1.0 + c.header_bytes / chunk
        per_node = total / alive
        chunks_per_request = total * block_bytes / chunk
        host_qd = queue_depth if queue_depth is not None else hinted_queue_depth(self.drives)
        qd = None if host_qd is None else host_qd * chunks_per_request / alive
        node_cpu = c.server_cpu_s_per_byte + c.server_cpu_s_per_op / chunk + NODE_CPU_S_PER_BYTE
        node = self.node  # stands for each of the `alive` nodes, each carrying per_node bytes per host byte
        nic = node.nic_rx if write else node.nic_tx
        usage: Usage = [(nic, per_node * header), (node.server.cpu, per_node * node_cpu), (node.server.memory, per_node * 2.0)]
        # the pool's usage is per byte reaching the node: weight it by the node's share
        usage += [(con, per_node * k) for con, k in _inner_usage(node.pool, op, chunk, pattern, qd)]
        client_nic = self.client_tx if write else self.client_rx
        client_cpu = total * (c.client_cpu_s_per_byte + c.client_cpu_s_per_op / chunk)
        # encode on writes; decode of the reconstructed share on degraded reads
        lost = self.failed_nodes / self.node_count
        coded = 1.0 if write else lost * self.k
        if self.m > 0:
            client_cpu += coded * self.m / EC_BYTES_PER_CORE_SECOND_PER_PARITY
        usage += [(client_nic, total * header), (self.host.cpu, client_cpu / _core_speed(self.host))]
        return usage

    def read_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("read", block_bytes, pattern, queue_depth)

    def write_usage(self, block_bytes: float, pattern: str | None = None, queue_depth: int | None = None) -> Usage:
        return self._usage("write", block_bytes, pattern, queue_depth)

    def request_latency_s(self, block_bytes: float, write: bool = False, pattern: str | None = None) -> float:
        """QD1 latency: chunks go to their nodes in parallel; one round trip + the chunk on a node's drives."""
        chunk = self.chunk_bytes(block_bytes)
        node = volume_latency_s(self.node.pool, chunk, write, pattern)
        return node + fab.request_latency_s(self.fabric, self.protocol, chunk)
