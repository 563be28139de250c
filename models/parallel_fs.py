"""A Lustre-style parallel file system by request: RPCs, stripes over OSTs, the client's RPC window, metadata.

Layout (Lustre Operations Manual, ch. "Managing File Layout (Striping) and Free
Space", and "Lustre Parameters", osc.* tunables; doc/manual.git at git.whamcloud.com; docs/sources.md L14, and L18 for the 1 MB bulk RPCs):
  - a file's data is striped in `stripe_size` pieces round-robin over
    `stripe_count` OSTs (object storage targets), each an array on an OSS
    (object storage server); the defaults are stripe_count 1, stripe_size 1 MiB;
  - the client's OSC (one per OST) sends bulk RPCs of at most
    max_pages_per_rpc pages (default 256 x 4 KiB = 1 MiB, settable to 4 MiB
    and beyond) and keeps at most max_rpcs_in_flight RPCs outstanding per OST
    (default 8, 1..256); a request never spans a stripe boundary in one RPC;
  - the data path does not cross the MDS (metadata server): a file's open (and
    close) does, once per file; the layout is fetched with the open.
An OST is a RAID set of drives (k data + m parity: DDN's declustered and HPE's
GridRAID arrays are 8+2) of chunks sized so that k chunks hold one full RPC
(the manual's alignment advice): a read touches the chunks it spans, a
full-stripe write all k + m, a smaller write reads back and rewrites its
chunks and the parities (read-modify-write).
The RPC transport (ptlrpc over LNet: o2iblnd RDMA or socklnd TCP) is a kernel
RPC with bulk data by RDMA where the fabric allows, as NFS over RPC/RDMA: its
per-RPC CPU, header and round trip are models.fabric's NFS costs (an
assumption named in docs/scale-out.md), read where used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iowatt.models.uncertainty import assumed_constant, constant

PAGE_BYTES = 4096
# Lustre manual, "Lustre Parameters" (osc.*.max_pages_per_rpc, osc.*.max_rpcs_in_flight) and lfs setstripe defaults.
DEFAULT_MAX_PAGES_PER_RPC = 256          # 1 MiB RPCs
DEFAULT_MAX_RPCS_IN_FLIGHT = 8           # per OSC (per OST), range 1..256
MAX_RPCS_IN_FLIGHT = 256
DEFAULT_STRIPE_SIZE_BYTES = 2**20        # lfs setstripe -S default 1 MiB
DEFAULT_STRIPE_COUNT = 1                 # lfs setstripe -c default 1
MIN_STRIPE_SIZE_BYTES = 64 * 1024        # stripe_size must be a multiple of 64 KiB

MDS_OPEN = assumed_constant(
    "models.parallel_fs.mds_seconds_per_open", 150e-6, low=50e-6, high=400e-6, shape="log-uniform",
    note="MDS core-seconds per file open + close (lookup, layout, lock, close RPC): a 24-32 core MDS serves "
    "~100-200 k opens/s in mdtest-class file-open tests, so ~150 us of one core per open",
    range_note="low: ~500 k opens/s on a 24-core MDS with DNE and cached dentries (50 us per open); high: ~60 k "
    "opens/s on a 24-core MDS with cold lookups and ldiskfs journal commits (400 us)")
OSS_PER_RPC = assumed_constant(
    "models.parallel_fs.oss_cpu_seconds_per_rpc", 20e-6, low=8e-6, high=50e-6, shape="log-uniform",
    note="OSS service thread per bulk RPC: request handling, lock check, bulk RDMA setup and the OST's I/O "
    "submission through ldiskfs/osd: ~20 us of one core, about twice an NFS server's per-op CPU "
    "(models.fabric nfs-rdma 5 us) for the extra object-layer and lock work",
    range_note="low: the NFS/TCP server's per-op cost (~10 us) less the copy; high: 50 us, an OSS thread that "
    "also pays a journal commit share and a cross-socket wake-up per RPC")


@dataclass(frozen=True)
class RpcSplit:
    """One host request as the client's OSCs send it."""

    rpcs: float          # RPCs per host request
    rpc_bytes: float     # data per RPC
    osts: float          # distinct OSTs the request touches


def rpc_split(block_bytes: float, stripe_size: float, stripe_count: int, max_rpc_bytes: float) -> RpcSplit:
    """RPCs of one request of `block_bytes`: at most one stripe piece and `max_rpc_bytes` per RPC, the pieces
    round-robin over `stripe_count` OSTs (a request is taken to start at a stripe boundary: large sequential
    reads, as a data loader's or a checkpoint's, are aligned after their first)."""
    if block_bytes <= 0.0:
        raise ValueError(f"block_bytes: expected > 0, found {block_bytes!r}")
    piece = min(stripe_size, max_rpc_bytes)
    rpcs = max(1.0, math.ceil(block_bytes / piece))
    stripes_touched = max(1.0, math.ceil(block_bytes / stripe_size))
    return RpcSplit(rpcs, block_bytes / rpcs, min(float(stripe_count), stripes_touched))


def client_window(clients: int, osts_touched: float, max_rpcs_in_flight: int) -> float:
    """RPCs all clients may have in flight: max_rpcs_in_flight per OSC, one OSC per OST a client's files use."""
    return float(clients) * max(1.0, osts_touched) * float(max_rpcs_in_flight)


@dataclass(frozen=True)
class OstWork:
    """Drive pieces of one RPC on a k+m OST (foreground; a partial-stripe write's read-back included)."""

    reads: float         # drive pieces read
    writes: float        # drive pieces written
    piece_bytes: float   # bytes per piece


def ost_chunk_bytes(k: int, rpc_bytes: float) -> float:
    """The RAID chunk: a full stripe of k chunks holds one full RPC (the Lustre manual's alignment advice for
    OSTs on RAID: chunk x data disks = the 1 MiB RPC; 128 KiB for 8+2)."""
    return max(float(PAGE_BYTES), rpc_bytes / k)


def ost_work(op: str, rpc_bytes: float, k: int, m: int, chunk_bytes: float) -> OstWork:
    """Drive pieces of one RPC of `rpc_bytes` on a k+m OST of `chunk_bytes` chunks: a read touches the
    ceil(r / chunk) data chunks it spans (at most k); a full-stripe write writes all k + m; a partial-stripe
    write (RAID 5/6 read-modify-write) reads the chunks it changes and the m parities, then writes them all."""
    touched = min(float(k), max(1.0, math.ceil(rpc_bytes / chunk_bytes)))
    piece = max(rpc_bytes / touched, float(PAGE_BYTES))
    if op == "read":
        return OstWork(touched, 0.0, piece)
    if touched >= k or m == 0:
        return OstWork(0.0, touched + (m if touched >= k else 0.0), piece)
    return OstWork(touched + m, touched + m, piece)


def mds_seconds_per_open() -> float:
    return constant(MDS_OPEN.name)


def oss_seconds_per_rpc() -> float:
    return constant(OSS_PER_RPC.name)
