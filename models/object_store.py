"""An S3-like object store by request: parts, connections, per-request latency, per-connection throughput.

A host request of b bytes is sent as HTTP requests of at most `part_size`
bytes (multipart uploads for writes, ranged GETs for reads), each on one of
the client's `connections` (one request per connection at a time, as an HTTP/1.1
connection pool works), so a client has at most `connections` parts in
flight.  Each part waits the store's first-byte latency and streams at no more
than one connection's throughput; there is no POSIX metadata path (no open,
no MDS: a GET names its object).

Sources:
  - AWS, "Amazon S3 multipart upload limits" (docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html):
    parts of 5 MiB to 5 GiB (the last may be smaller), at most 10,000 parts per upload;
  - AWS SDKs' transfer managers: 10 concurrent requests by default (.NET TransferUtilityConfig
    ConcurrentServiceRequests = 10; boto3 TransferConfig max_concurrency=10) and 8 MiB parts
    (boto3 TransferConfig multipart_chunksize=8388608; boto3 docs, S3 customization reference);
  - AWS S3 performance guidance as widely restated: first-byte latency 100-200 ms for the cloud service.
docs/sources.md keys: L15 (limits), L16 (.NET), L19 (boto3), L17 (latency notes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iowatt.models.uncertainty import assumed_constant, constant

MIB = 2**20
MIN_PART_BYTES = 5 * MIB              # S3: a part (other than the last) is at least 5 MiB
MAX_PART_BYTES = 5 * 2**30            # and at most 5 GiB
MAX_PARTS = 10_000
DEFAULT_PART_BYTES = 8 * MIB          # boto3 TransferConfig.multipart_chunksize
DEFAULT_CONNECTIONS = 10              # boto3 max_concurrency, .NET ConcurrentServiceRequests

FIRST_BYTE = assumed_constant(
    "models.object_store.first_byte_seconds", 5e-3, low=1e-3, high=200e-3, shape="log-uniform",
    note="an on-premises S3 service (gateways over local flash) answers a GET or PUT in a few ms: HTTP parsing, "
    "authentication (SigV4), the object's metadata lookup and the first chunk's read",
    range_note="low: ~1 ms, a local-flash gateway with cached metadata on a LAN; high: 200 ms, the top of the 100-200 ms "
    "first-byte latency quoted for the AWS service")
CONNECTION_GBPS = assumed_constant(
    "models.object_store.connection_GB_per_second", 1.0, low=0.09, high=3.0, shape="log-uniform",
    note="one HTTP(S) connection streams ~1 GB/s: one TCP stream with TLS on one core of each side",
    range_note="low: ~90 MB/s per connection, the rule of thumb for one connection to the AWS service; high: ~3 GB/s, "
    "one TCP stream without TLS on a 100 GbE LAN (a single core's copy and checksum work)")
GATEWAY_PER_REQUEST = assumed_constant(
    "models.object_store.gateway_cpu_seconds_per_request", 100e-6, low=30e-6, high=400e-6, shape="log-uniform",
    note="a gateway core per S3 request: HTTP parse, SigV4 signature check, metadata lookup and update, the erasure "
    "set's fan-out: ~100 us (an S3 server does ~10 k small requests/s per core)",
    range_note="low: 30 us, a C++ gateway with cached metadata; high: 400 us, a Go/Java gateway writing an object's "
    "metadata journal per PUT")


@dataclass(frozen=True)
class Parts:
    """One host request as the client sends it."""

    parts: float
    part_bytes: float


def split(block_bytes: float, part_bytes: float) -> Parts:
    """HTTP requests of one host request: ceil(b / part) parts of equal size (at most MAX_PARTS)."""
    if block_bytes <= 0.0:
        raise ValueError(f"block_bytes: expected > 0, found {block_bytes!r}")
    parts = min(float(MAX_PARTS), max(1.0, math.ceil(block_bytes / part_bytes)))
    return Parts(parts, block_bytes / parts)


def check_part_bytes(part_bytes: float) -> None:
    if not MIN_PART_BYTES <= part_bytes <= MAX_PART_BYTES:
        raise ValueError(f"part_size: expected 5 MiB to 5 GiB (S3 multipart limits), found {part_bytes:g} B")


def first_byte_s() -> float:
    return constant(FIRST_BYTE.name)


def connection_Bps() -> float:
    return constant(CONNECTION_GBPS.name) * 1e9


def gateway_seconds_per_request() -> float:
    return constant(GATEWAY_PER_REQUEST.name)
