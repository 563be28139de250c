"""Erasure-coded scale-out storage by request size: the drive I/O, network bytes and coding work of one request.

Layout: k data + m parity chunks per stripe (a systematic code), stripes placed
over `nodes` storage nodes, `failed_nodes` of them down.  The stripe unit u is
the data of one chunk per stripe (Ceph's `stripe_unit`, 4 KiB by default); a
full stripe holds k u bytes of data.

Reads.  A request of at least one full stripe is read as k pieces of B / k, one
per data node of its stripe (contiguous chunks on a node are one I/O); a smaller
one touches ceil(B / u) chunks on as many nodes: a 4 KiB read is one chunk on
one node, not a stripe.  A piece on a failed node (probability f / N each) is
rebuilt from k pieces of the same stripe (a Reed-Solomon degraded read costs k
chunk reads: Huang et al., "Erasure Coding in Windows Azure Storage", USENIX
ATC 2012); a read that covers the whole stripe reads a parity piece instead of
the lost one.  Decoding works on k input bytes per rebuilt byte.

Writes.  The full-stripe part (floor(B / k u) stripes) writes k + m pieces of
B / k: (k + m) / k bytes per byte, nothing read (a write of the whole stripe
computes its parity from what it writes).  The rest is a partial-stripe write
of t = ceil(rest / u) chunks, done one of two ways:
  - `rmw`, in place (Ceph's EC overwrites, `allow_ec_overwrites`): the cheaper
    of read-modify-write (read the t old chunks and the m parities) and
    reconstruct-write (read the k - t untouched chunks), then write t + m
    chunks, as models.array.partial_write chooses for RAID; the reads come
    first, so the request takes two round trips;
  - `journal`, redirect-on-write (WEKA writes modified data to fresh space,
    docs.weka.io "Data lifecycle management"; DAOS replicates partial updates
    to the parity targets and encodes them later, its "EC aggregation"): the t
    chunks and m parities of the partial stripe are written at once (for one
    chunk that is m + 1 copies), and later read back and written again as full
    stripes (the destage: background work, on nobody's response path).
    Parity logging made the same trade for disk arrays (Stodolsky, Gibson &
    Holland, ISCA 1993).
Every write also logs its metadata (the extent pointer) on m + 1 nodes.
Sequential small writes are not coalesced: O_DIRECT acknowledges each write
once it is durable, so only the journal can gather them.  Pieces bound for a
failed node are not written (the stripe is degraded).

Where the code is computed.  `server` (WEKA's compute processes, Ceph's
primary OSD): the client sends the data once to the node that owns the stripe,
which encodes and forwards the pieces to the other nodes (peer bytes; the
owner's own piece stays local, 1/A of them); reads come straight back from the
nodes holding the pieces.  `client` (DAOS): the client encodes and sends every
piece itself.  Network hops on the response path: server reads 2 client hops +
1 node hop (client -> owner -> piece nodes -> client), server writes 2 + 2
(data to the owner, pieces to the nodes, acks back), each rmw read phase 2 node
hops more; client-side coding 2 client hops per phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from iowatt.models.array import partial_write
from iowatt.models.uncertainty import assumed_constant, constant

Op = Literal["read", "write"]
Pattern = Literal["seq", "rand"]
SmallWrites = Literal["journal", "rmw"]
ErasureAt = Literal["server", "client"]

# Ceph's default stripe unit (IBM Storage Ceph / docs.ceph.com "Erasure code profiles":
# stripe_unit defaults to osd_pool_erasure_code_stripe_unit, 4K).
STRIPE_UNIT_BYTES = 4096.0
# Metadata logged per write: one extent pointer of 20 B (docs.weka.io planning: 20 bytes of
# memory per metadata unit) written on m + 1 nodes; batched into pages, so it costs bytes, not I/Os.
METADATA_BYTES_PER_WRITE = 20.0
# I/O size of the destage (journal read back, full stripes written).
DESTAGE_IO = assumed_constant(
    "models.erasure.destage_io_bytes", 2.0**20, low=2.0**18, high=2.0**22, shape="log-uniform",
    note="1 MiB, the size a log-structured destage gathers before it writes (WEKA and DAOS do not publish theirs)",
    range_note="low: 256 KiB, a 4+2 stripe of 64 KiB chunks (one full stripe per destage I/O); high: 4 MiB, the "
    "object size Ceph's RBD and CephFS stripe data into (docs.ceph.com, striping), the largest unit such systems "
    "write as one")
PAGE_BYTES = 4096.0


def parse_k_plus_m(field: str, value: object, example: str = "4+2") -> str:
    """A layout written 'k+m' (k data and m parity chunks, k >= 1, m >= 0, spaces allowed), normalised; one message
    naming the field otherwise.  Cluster erasure sets, object erasure sets and Lustre OST RAID sets read it alike."""
    text = str(value).replace(" ", "")
    k, sep, m = text.partition("+")
    if not sep or not k.isdigit() or not m.isdigit() or int(k) < 1:
        raise ValueError(f"{field}: expected k+m such as '{example}', found {value!r}")
    return f"{int(k)}+{int(m)}"


def check_erasure(k: int, m: int, nodes: int, failed_nodes: int = 0) -> None:
    if k < 1 or m < 0:
        raise ValueError(f"erasure coding needs k >= 1 data and m >= 0 parity chunks, found {k}+{m}")
    if nodes < k + m:
        raise ValueError(f"erasure coding {k}+{m} places each stripe on {k + m} distinct nodes, found {nodes} nodes")
    if not 0 <= failed_nodes <= m:
        raise ValueError(f"a {k}+{m} code survives at most {m} failed nodes, found {failed_nodes}")


def usable_fraction(k: int, m: int) -> float:
    return k / (k + m)


def write_expansion(k: int, m: int) -> float:
    """Bytes stored per byte written in full stripes: (k+m)/k."""
    return (k + m) / k


@dataclass(frozen=True)
class Layout:
    k: int
    m: int
    nodes: int
    failed_nodes: int = 0
    stripe_unit_bytes: float = STRIPE_UNIT_BYTES
    small_writes: SmallWrites = "journal"
    erasure_at: ErasureAt = "server"

    def __post_init__(self) -> None:
        check_erasure(self.k, self.m, self.nodes, self.failed_nodes)
        if not self.stripe_unit_bytes >= 512.0:
            raise ValueError(f"stripe unit must be >= 512 B, found {self.stripe_unit_bytes!r}")

    @property
    def alive(self) -> int:
        return self.nodes - self.failed_nodes

    @property
    def lost(self) -> float:
        """Chance that a given chunk lies on a failed node."""
        return self.failed_nodes / self.nodes

    @property
    def full_stripe_bytes(self) -> float:
        return self.k * self.stripe_unit_bytes

    @property
    def remote(self) -> float:
        """Share of the pieces a node sends that leave it (its own piece stays local)."""
        return 1.0 - 1.0 / self.alive if self.alive > 1 else 0.0


@dataclass(frozen=True)
class Pieces:
    """Drive I/O of one kind per host request, over the whole cluster."""

    ios: float = 0.0
    bytes: float = 0.0

    @property
    def size(self) -> float:
        return self.bytes / self.ios if self.ios > 0 else 0.0

    def __add__(self, other: Pieces) -> Pieces:
        return Pieces(self.ios + other.ios, self.bytes + other.bytes)


@dataclass(frozen=True)
class RequestWork:
    """What one host request costs the cluster, on its response path and left for later."""

    reads: Pieces = Pieces()
    writes: Pieces = Pieces()
    background_reads: Pieces = Pieces()
    background_writes: Pieces = Pieces()
    fan_out: float = 1.0            # nodes the request's pieces go to at once
    owner_requests: float = 0.0     # requests the owning node's coding process handles
    client_out_bytes: float = 0.0   # client NIC transmit
    client_in_bytes: float = 0.0    # client NIC receive
    peer_bytes: float = 0.0         # node-to-node bytes on the response path
    background_peer_bytes: float = 0.0
    coded_bytes: float = 0.0        # data bytes through the encoder/decoder, where the code is computed
    background_coded_bytes: float = 0.0
    client_hops: float = 2.0        # one-way network hops client <-> nodes on the response path
    node_hops: float = 0.0          # one-way hops between nodes on the response path
    path: str = ""                  # which way the request went (for reports)
    rewrites: bool = False          # writes replace data in place (rmw overwrites)


def request_work(layout: Layout, op: Op, block_bytes: float, pattern: Pattern = "rand") -> RequestWork:
    """The work of one host request of `block_bytes` (module docstring)."""
    if not block_bytes > 0.0:
        raise ValueError(f"request size must be > 0, found {block_bytes!r}")
    if op == "read":
        return _read(layout, block_bytes)
    full_bytes = math.floor(block_bytes / layout.full_stripe_bytes + 1e-9) * layout.full_stripe_bytes
    rest = max(0.0, block_bytes - full_bytes)
    parts = ([_full_write(layout, full_bytes)] if full_bytes > 0 else []) + ([_partial_write(layout, rest)] if rest > 0 else [])
    work = parts[0] if len(parts) == 1 else _join(parts[0], parts[1])
    meta = Pieces((layout.m + 1) * METADATA_BYTES_PER_WRITE / PAGE_BYTES, (layout.m + 1) * METADATA_BYTES_PER_WRITE)
    return _with(work, writes=work.writes + _degraded(layout, meta))


def _with(work: RequestWork, **changes: object) -> RequestWork:
    return replace(work, **changes)  # type: ignore[arg-type]


def _degraded(layout: Layout, pieces: Pieces) -> Pieces:
    """Writes bound for failed nodes are not made."""
    share = 1.0 - layout.lost
    return Pieces(pieces.ios * share, pieces.bytes * share)


def _hops(layout: Layout, phases: int) -> tuple[float, float]:
    """(client hops, node hops) of a request with `phases` rounds to the piece nodes."""
    if layout.erasure_at == "client":
        return 2.0 * phases, 0.0
    return 2.0, 2.0 * phases


def _read(layout: Layout, b: float) -> RequestWork:
    k, u = layout.k, layout.stripe_unit_bytes
    full = b >= layout.full_stripe_bytes - 1e-9
    pieces = float(k) if full else float(min(k, math.ceil(b / u - 1e-9)))
    piece = b / pieces
    # a request with a piece on a failed node reads the stripe's k pieces: k - p more (none when it covers
    # the stripe); the chance is hypergeometric, the p pieces being on p distinct nodes
    rebuild = 1.0 - math.prod((layout.alive - i) / (layout.nodes - i) for i in range(int(pieces)))
    reads = pieces + rebuild * (k - pieces)
    lost_bytes = pieces * layout.lost * piece
    work = RequestWork(reads=Pieces(reads, reads * piece), fan_out=min(reads, layout.alive), client_in_bytes=b,
                       client_hops=2.0, node_hops=1.0, owner_requests=1.0, path="full-stripe read" if full else "chunk read")
    if layout.erasure_at == "client":
        return _with(work, client_in_bytes=reads * piece, coded_bytes=lost_bytes * k, node_hops=0.0, owner_requests=0.0)
    # the owner gathers the k pieces of a stripe it rebuilds and decodes them (one more node hop)
    return _with(work, peer_bytes=rebuild * k * piece * layout.remote, coded_bytes=lost_bytes * k, node_hops=1.0 + rebuild)


def _full_write(layout: Layout, b: float) -> RequestWork:
    k, m = layout.k, layout.m
    stored = b * write_expansion(k, m)
    writes = _degraded(layout, Pieces(k + m, stored))
    client_hops, node_hops = _hops(layout, 1)
    work = RequestWork(writes=writes, fan_out=min(writes.ios, layout.alive), coded_bytes=b,
                       client_hops=client_hops, node_hops=node_hops, path="full-stripe write")
    if layout.erasure_at == "client":
        return _with(work, client_out_bytes=writes.bytes)
    return _with(work, client_out_bytes=b, peer_bytes=writes.bytes * layout.remote, owner_requests=1.0)


def _partial_write(layout: Layout, b: float) -> RequestWork:
    k, m, u = layout.k, layout.m, layout.stripe_unit_bytes
    touched = min(k, math.ceil(b / u - 1e-9))
    chunk = b / touched
    if layout.small_writes == "rmw":
        return _rmw(layout, b, touched, chunk)
    # journal: the partial stripe (t chunks + m parities of them) now; read back and striped later
    writes = _degraded(layout, Pieces(touched + m, b + m * chunk))
    destage = constant(DESTAGE_IO.name)
    later_reads = Pieces(b / destage, b)
    later_writes = _degraded(layout, Pieces(write_expansion(k, m) * b / max(u, destage / k), write_expansion(k, m) * b))
    client_hops, node_hops = _hops(layout, 1)
    work = RequestWork(writes=writes, background_reads=later_reads, background_writes=later_writes,
                       fan_out=min(writes.ios, layout.alive), coded_bytes=b, background_coded_bytes=b,
                       background_peer_bytes=(b + later_writes.bytes) * layout.remote,
                       client_hops=client_hops, node_hops=node_hops, path="partial-stripe journal write")
    if layout.erasure_at == "client":
        return _with(work, client_out_bytes=writes.bytes)
    return _with(work, client_out_bytes=b, peer_bytes=writes.bytes * layout.remote, owner_requests=1.0)


def _rmw(layout: Layout, b: float, touched: int, chunk: float) -> RequestWork:
    """In-place partial-stripe write: models.array.partial_write's choice of rmw or rcw, then t + m writes."""
    k, m = layout.k, layout.m
    read_bytes, write_bytes, ios = partial_write(k, m, touched, b, chunk)
    write_ios = touched + m
    reads = Pieces(ios - write_ios, read_bytes)
    # an old chunk on a failed node is rebuilt from the k - 1 other chunks of its stripe
    reads = reads + Pieces(layout.lost * touched * (k - 1), layout.lost * touched * (k - 1) * chunk)
    writes = _degraded(layout, Pieces(write_ios, write_bytes))
    client_hops, node_hops = _hops(layout, 2)
    work = RequestWork(reads=reads, writes=writes, fan_out=min(max(reads.ios, writes.ios), layout.alive), coded_bytes=b,
                       client_hops=client_hops, node_hops=node_hops, rewrites=True,
                       path="partial-stripe read-modify-write" if reads.ios >= write_ios else "partial-stripe reconstruct-write")
    if layout.erasure_at == "client":
        return _with(work, client_out_bytes=writes.bytes, client_in_bytes=reads.bytes)
    return _with(work, client_out_bytes=b, peer_bytes=(reads.bytes + writes.bytes) * layout.remote, owner_requests=1.0)


def _join(a: RequestWork, b: RequestWork) -> RequestWork:
    """A request with a full-stripe part and a partial-stripe part: the work adds up, the slower part sets the hops."""
    return RequestWork(
        reads=a.reads + b.reads, writes=a.writes + b.writes,
        background_reads=a.background_reads + b.background_reads, background_writes=a.background_writes + b.background_writes,
        fan_out=max(a.fan_out, b.fan_out), owner_requests=max(a.owner_requests, b.owner_requests),
        client_out_bytes=a.client_out_bytes + b.client_out_bytes, client_in_bytes=a.client_in_bytes + b.client_in_bytes,
        peer_bytes=a.peer_bytes + b.peer_bytes, background_peer_bytes=a.background_peer_bytes + b.background_peer_bytes,
        coded_bytes=a.coded_bytes + b.coded_bytes, background_coded_bytes=a.background_coded_bytes + b.background_coded_bytes,
        client_hops=max(a.client_hops, b.client_hops), node_hops=max(a.node_hops, b.node_hops),
        path=f"{a.path} + {b.path}", rewrites=a.rewrites or b.rewrites,
    )
