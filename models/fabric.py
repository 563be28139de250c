"""Storage fabrics: NICs on InfiniBand or Ethernet, and the file/block protocols over them.

A fabric is a network port type (models.links: data rate after 64b/66b, packet
framing per transport).  A storage protocol adds, per request:

- a header (RPC record mark + RPC header + NFSv4 COMPOUND, or an NVMe-oF
  capsule) that costs wire bytes but carries no data;
- a round-trip software latency (client stack, fabric, server dispatch);
- CPU time on the server and on the client, per byte (data copies: TCP copies
  every byte between socket buffers and the page cache; RDMA places data
  directly, RFC 5532 sect. 3-4) and per request (RPC dispatch, completion).

No measurement of these at 100-400 Gb/s is in the collected sources (docs/sources.md;
links.infiniband.achieved_payload and links.ethernet.measured are null), so every
protocol constant below is `assumed` (models.uncertainty.assumed_constant), with its
reasoning and its range next to it; a protocol's costs are read when it is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from iowatt.models.links import (
    IB_HEADER_BYTES,
    LinkSpec,
    Transport,
    ethernet_link,
    infiniband_link,
    link_payload_Bps,
    protocol_efficiency,
)
from iowatt.models.uncertainty import assumed_constant, constant

FabricName = Literal["ib-edr", "ib-hdr", "ib-ndr", "100gbe", "200gbe", "400gbe"]
FABRICS: tuple[str, ...] = ("ib-edr", "ib-hdr", "ib-ndr", "100gbe", "200gbe", "400gbe")

# IPoIB (RFC 4391 datagram mode): 4-byte IPoIB header + IPv4 20 + TCP 20 inside a 4096-B IB MTU
IPOIB_HEADER_BYTES = 4 + 40


def fabric_link(fabric: str) -> LinkSpec:
    """One NIC port of the named fabric (post-encoding data rate, models.links)."""
    name = fabric.lower()
    if name.startswith("ib-"):
        return infiniband_link(name[3:])
    return ethernet_link(name)


def wire_transport(fabric: str, rdma: bool) -> Transport:
    """What the packets on the wire carry: InfiniBand verbs, RoCEv2 or TCP."""
    if fabric.lower().startswith("ib-"):
        return "ib"
    return "roce" if rdma else "tcp"


def wire_efficiency(fabric: str, rdma: bool, mtu: int | None = None) -> float:
    """Payload share of the data rate for full-size packets.

    TCP over InfiniBand (IPoIB datagram mode) carries IP+TCP inside a 4096-B IB
    packet: (4096 - 44) / (4096 + 26) = 98.3 %.
    """
    link = fabric_link(fabric)
    if link.kind == "infiniband" and not rdma:
        payload = mtu or 4096
        return (payload - IPOIB_HEADER_BYTES) / (payload + IB_HEADER_BYTES)
    return protocol_efficiency(link, wire_transport(fabric, rdma), mtu)


def port_goodput_Bps(fabric: str, rdma: bool, ports: int = 1, mtu: int | None = None) -> float:
    """Payload bytes per second one direction of `ports` NIC ports can carry (bonded, evenly spread)."""
    return link_payload_Bps(fabric_link(fabric)) * wire_efficiency(fabric, rdma, mtu) * ports


@dataclass(frozen=True)
class ProtocolCost:
    """Per-request and per-byte costs of a storage protocol (one request = one RPC or NVMe command)."""

    name: str
    header_bytes: float          # wire bytes per request that carry no data
    latency_s: float             # added round-trip latency per request, beyond wire serialisation
    server_cpu_s_per_byte: float
    server_cpu_s_per_op: float
    client_cpu_s_per_byte: float
    client_cpu_s_per_op: float

    def bandwidth_efficiency(self, request_bytes: float) -> float:
        """Data share of the protocol bytes of one request (header per request)."""
        return request_bytes / (request_bytes + self.header_bytes)


# Per-byte CPU of TCP: one copy per byte per side (socket buffer <-> page cache) plus
# checksum/segmentation that NIC offloads (TSO/GRO) mostly remove.
TCP_CPU = assumed_constant(
    "models.fabric.tcp_cpu_seconds_per_byte", 0.25e-9, low=0.1e-9, high=0.6e-9, shape="log-uniform",
    note="0.25 ns/B per side, one core moves ~4 GB/s: a single TCP stream with offloads saturates a core at 30-40 Gb/s, "
    "and the copy alone runs at ~10 GB/s per core",
    range_note="low: the copy alone, ~10 GB/s per core (0.1 ns/B); high: ~1.7 GB/s per core, a stack without TSO/GRO "
    "at a 1500-B MTU, per-segment work on top of the copy (the pre-offload rule of Foong et al., ISPASS 2003, '1 Hz per bit/s', gives 3 ns/B, "
    "an upper bound offloads have since cut)")
# RDMA places data directly in registered memory (RFC 5532 sect. 4): no per-byte CPU.
RDMA_CPU_S_PER_BYTE = 0.0
# TCP_CPU is stated at the 1500-B Ethernet MTU.  Of it, the copy is paid per byte whatever the MTU; the rest is the
# stack's per-segment work (skb allocation, protocol processing, ACKs), paid once per MSS of payload.  A jumbo MTU
# carries 6.2x the payload per segment, so a connection's core moves more bytes (RFC 894 framing: MSS = MTU - 52 with
# TCP timestamps).
TCP_COPY = assumed_constant(
    "models.fabric.tcp_copy_seconds_per_byte", 0.1e-9, low=0.07e-9, high=0.15e-9, shape="log-uniform",
    note="the copy alone, ~10 GB/s per server core: TCP_CPU's own low end (one memcpy of each byte, socket buffer <-> "
    "page cache), the rest of TCP_CPU at 1500 B being per-segment work",
    range_note="a single core's streaming copy of data not in cache: low 7 GB/s (0.15 ns/B, a 2 GHz Skylake-SP core), "
    "high ~14 GB/s (0.07 ns/B, a Zen 4 or Golden Cove core at 3+ GHz); STREAM's per-core copy on server parts lies in this band")
TCP_REFERENCE_MSS_BYTES = 1500 - 52


def tcp_cpu_seconds_per_byte(mtu: int | None = None) -> float:
    """One side's TCP CPU per payload byte (reference core) at an Ethernet MTU: the copy plus the per-segment work
    TCP_CPU carries at 1500 B, spread over the MSS.  Without an MTU, TCP_CPU as stated (1500 B)."""
    at_1500 = constant(TCP_CPU.name)
    if mtu is None:
        return at_1500
    copy = min(constant(TCP_COPY.name), at_1500)
    per_segment_s = (at_1500 - copy) * TCP_REFERENCE_MSS_BYTES
    return copy + per_segment_s / max(1, mtu - 52)


def _protocol_constant(protocol: str, what: str, value: float, low: float, high: float, note: str, range_note: str) -> str:
    """Declare one assumed figure of a protocol; returns the name it is read by."""
    name = f"models.fabric.{protocol.replace('-', '_')}_{what}"
    assumed_constant(name, value, low=low, high=high, shape="log-uniform", note=note, range_note=range_note)
    return name


_US = 1e-6
# Per protocol: (header bytes, round-trip latency, server CPU per op, client CPU per op, CPU per byte): the names of
# the constants, declared with their reasoning.
_PROTOCOL_CONSTANTS: dict[str, tuple[str | float, str, str, str, bool]] = {
    # NFSv4.2 over TCP.  Header: RPC record mark 4 + RPC reply header ~28 (RFC 5531) + COMPOUND with SEQUENCE,
    # PUTFH, READ/WRITE results ~150 B in XDR (RFC 7862/8881).
    "nfs-tcp": (
        _protocol_constant(
            "nfs-tcp", "header_bytes", 200.0, 120.0, 320.0,
            "~200 B: RPC record mark 4 + RPC reply header ~28 (RFC 5531) + a COMPOUND of SEQUENCE, PUTFH and "
            "READ/WRITE results ~150 B in XDR (RFC 7862/8881)",
            "low: record mark + RPC header + the three ops' fixed XDR fields with a short file handle (~120 B); "
            "high: the largest NFSv4 file handle (128 B, RFC 8881) and a GETATTR in the COMPOUND (~320 B)"),
        _protocol_constant(
            "nfs-tcp", "latency_seconds", 60 * _US, 30 * _US, 120 * _US,
            "kernel TCP stack on both ends (~15 us each) plus nfsd dispatch",
            "low: the two kernel TCP stacks alone (~15 us each) with nfsd's dispatch overlapped; NVMe/TCP, a thinner "
            "protocol, is quoted at ~40 us (datastoragereport.com, NVMe-oF); high: 80-100 us above RDMA in early NVMe/TCP implementations (blocksandfiles.com "
            "2022-05-03) plus nfsd's VFS work"),
        _protocol_constant(
            "nfs-tcp", "server_cpu_seconds_per_op", 10 * _US, 5 * _US, 20 * _US,
            "nfsd thread wakeup, VFS, RPC reply",
            "low: two context switches and a VFS call (~5 us); high: twice the value, a wake-up across sockets and "
            "an uncached file-handle lookup"),
        _protocol_constant(
            "nfs-tcp", "client_cpu_seconds_per_op", 5 * _US, 2 * _US, 10 * _US,
            "the client's RPC marshalling, system call and completion wake-up",
            "low: one system call and one wake-up (~2 us); high: the server's per-op cost"),
        True),
    # NFSv4.2 over RPC/RDMA (RFC 8166): the same RPC header plus a ~28-B RPC-over-RDMA header and chunk lists.
    "nfs-rdma": (
        _protocol_constant(
            "nfs-rdma", "header_bytes", 250.0, 170.0, 400.0,
            "the NFS/TCP header plus a ~28-B RPC-over-RDMA header and chunk lists (RFC 8166)",
            "low: the TCP case's low plus the RPC-over-RDMA header and one chunk segment (16 B); high: the TCP "
            "case's high plus a write list of several segments"),
        _protocol_constant(
            "nfs-rdma", "latency_seconds", 20 * _US, 10 * _US, 40 * _US,
            "NVMe-oF over RDMA measures 20-30 us end to end (datacore.com, NVMe-oF) and NFS adds VFS work on the "
            "server but no copies",
            "low: NVMe-oF/RDMA's design goal, < 10 us over local (nvmexpress.org); high: twice the value, an "
            "untuned server with interrupt moderation on"),
        _protocol_constant(
            "nfs-rdma", "server_cpu_seconds_per_op", 5 * _US, 2 * _US, 10 * _US,
            "RPC dispatch and memory registration, no data copy",
            "low: an SPDK-class user-space target's few us; high: the NFS/TCP server's per-op cost (no less work)"),
        _protocol_constant(
            "nfs-rdma", "client_cpu_seconds_per_op", 2 * _US, 1 * _US, 5 * _US,
            "RPC dispatch and memory registration on the client, no data copy",
            "low: one completion (~1 us); high: the NFS/TCP client's per-op cost"),
        False),
    # NVMe-oF: 64-B command capsule + 16-B completion (NVMe-oF 1.1 spec sizes), plus an 8-B PDU header each way
    # on TCP: spec arithmetic, not assumed.
    "nvmeof-tcp": (
        96.0,
        _protocol_constant(
            "nvmeof-tcp", "latency_seconds", 40 * _US, 20 * _US, 100 * _US,
            "NVMe/TCP is quoted at ~40 us of fabric round trip (datastoragereport.com, NVMe-oF)",
            "low: twice NVMe/RDMA's 10 us (one kernel TCP stack per side); high: 80-100 us above RDMA in early "
            "implementations (blocksandfiles.com 2022-05-03)"),
        _protocol_constant(
            "nvmeof-tcp", "server_cpu_seconds_per_op", 3 * _US, 1 * _US, 8 * _US,
            "an NVMe/TCP target's PDU handling and submission, no file system",
            "low: an SPDK user-space target (~1 us); high: a kernel target with one wake-up per PDU"),
        _protocol_constant(
            "nvmeof-tcp", "client_cpu_seconds_per_op", 3 * _US, 1 * _US, 8 * _US,
            "the host driver's PDU build and completion",
            "as the server's: SPDK initiator (~1 us) to a kernel initiator with one wake-up per PDU"),
        True),
    "nvmeof-rdma": (
        80.0,
        _protocol_constant(
            "nvmeof-rdma", "latency_seconds", 10 * _US, 5 * _US, 25 * _US,
            "the design goal of NVMe-oF is < 10 us added over local NVMe",
            "low: a back-to-back RDMA round trip with the target's submission (~5 us); high: the 20-30 us "
            "end-to-end NVMe-oF/RDMA figure (datacore.com) less a fast drive's read"),
        _protocol_constant(
            "nvmeof-rdma", "server_cpu_seconds_per_op", 1 * _US, 0.5 * _US, 3 * _US,
            "an SPDK-class RDMA target: polled completion, no copy",
            "low: SPDK's sub-microsecond polled submission; high: a kernel target's interrupt and wake-up"),
        _protocol_constant(
            "nvmeof-rdma", "client_cpu_seconds_per_op", 1 * _US, 0.5 * _US, 3 * _US,
            "the host driver's capsule build and polled completion",
            "as the server's"),
        False),
}


def _cost(protocol: str) -> ProtocolCost:
    header, latency, server_op, client_op, tcp = _PROTOCOL_CONSTANTS[protocol]
    per_byte = constant(TCP_CPU.name) if tcp else RDMA_CPU_S_PER_BYTE
    return ProtocolCost(protocol, constant(header) if isinstance(header, str) else header, constant(latency),
                        per_byte, constant(server_op), per_byte, constant(client_op))


class _Protocols(Mapping[str, ProtocolCost]):
    """The protocols by name, each built from its constants when read (a sampler's draw takes effect)."""

    def __getitem__(self, protocol: str) -> ProtocolCost:
        if protocol not in _PROTOCOL_CONSTANTS:
            raise KeyError(protocol)
        return _cost(protocol)

    def __iter__(self) -> Iterator[str]:
        return iter(_PROTOCOL_CONSTANTS)

    def __len__(self) -> int:
        return len(_PROTOCOL_CONSTANTS)


PROTOCOLS: Mapping[str, ProtocolCost] = _Protocols()


def protocol_cost(protocol: str) -> ProtocolCost:
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(f"expected a storage protocol one of {', '.join(PROTOCOLS)}, found {protocol!r}") from None


def protocol_goodput_Bps(fabric: str, protocol: str, request_bytes: float, ports: int = 1) -> float:
    """Data bytes per second one direction of `ports` ports carries for requests of `request_bytes`.

    = data rate x wire framing efficiency x request / (request + protocol header).
    """
    cost = protocol_cost(protocol)
    rdma = protocol.endswith("rdma")
    return port_goodput_Bps(fabric, rdma, ports) * cost.bandwidth_efficiency(request_bytes)


def request_latency_s(fabric: str, protocol: str, request_bytes: float) -> float:
    """Added latency of one request over the fabric: protocol round trip + serialisation of its data.

    The data's serialisation at the port's goodput is part of the latency a client sees
    at queue depth 1; at depth the bandwidth constraint already accounts for it.
    """
    cost = protocol_cost(protocol)
    return cost.latency_s + request_bytes / protocol_goodput_Bps(fabric, protocol, request_bytes)
