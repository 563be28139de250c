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
protocol constant below is `assumed`, with its reasoning next to it.
"""

from __future__ import annotations

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
# checksum/segmentation that NIC offloads (TSO/GRO) mostly remove.  Assumed 0.25 ns/B
# per side, i.e. one core moves ~4 GB/s: a single TCP stream with offloads saturates a
# core at 30-40 Gb/s, and the copy alone runs at ~10 GB/s per core.  (The old "1 Hz
# per bit/s" rule of Foong et al., ISPASS 2003, predates offloads and would give 3 ns/B.)
TCP_CPU_S_PER_BYTE = 0.25e-9
# RDMA places data directly in registered memory (RFC 5532 sect. 4): no per-byte CPU.
RDMA_CPU_S_PER_BYTE = 0.0

PROTOCOLS: dict[str, ProtocolCost] = {
    # NFSv4.2 over TCP.  Header: RPC record mark 4 + RPC reply header ~28 (RFC 5531) +
    # COMPOUND with SEQUENCE, PUTFH, READ/WRITE results ~150 B in XDR (RFC 7862/8881):
    # ~200 B assumed.  Latency 60 us assumed: kernel TCP stack on both ends (~15 us
    # each) plus nfsd dispatch; NVMe/TCP, a thinner protocol, is quoted at ~40 us of
    # fabric RTT (datastoragereport.com, NVMe-oF) and 80-100 us above RDMA in early
    # implementations (blocksandfiles.com 2022-05-03).  Per-op CPU 10 us server
    # (nfsd thread wakeup, VFS, RPC reply) and 5 us client: assumed.
    "nfs-tcp": ProtocolCost("nfs-tcp", 200.0, 60e-6, TCP_CPU_S_PER_BYTE, 10e-6, TCP_CPU_S_PER_BYTE, 5e-6),
    # NFSv4.2 over RPC/RDMA (RFC 8166): the same RPC header plus a ~28-B RPC-over-RDMA
    # header and chunk lists; the data moves by RDMA Write/Read.  Latency 20 us
    # assumed: NVMe-oF over RDMA measures 20-30 us end to end (datacore.com, NVMe-oF)
    # and NFS adds VFS work on the server but no copies.  Per-op CPU 5 us server,
    # 2 us client: assumed (RPC dispatch and memory registration, no data copy).
    "nfs-rdma": ProtocolCost("nfs-rdma", 250.0, 20e-6, RDMA_CPU_S_PER_BYTE, 5e-6, RDMA_CPU_S_PER_BYTE, 2e-6),
    # NVMe-oF: 64-B command capsule + 16-B completion (NVMe-oF 1.1 spec sizes), plus an
    # 8-B PDU header each way on TCP.  RDMA target latency ~10 us: the design goal of
    # NVMe-oF is < 10 us added over local NVMe; TCP ~40 us (datastoragereport.com).
    # Per-op CPU: 1 us (RDMA target, SPDK-class) / 3 us (TCP); assumed.
    "nvmeof-tcp": ProtocolCost("nvmeof-tcp", 96.0, 40e-6, TCP_CPU_S_PER_BYTE, 3e-6, TCP_CPU_S_PER_BYTE, 3e-6),
    "nvmeof-rdma": ProtocolCost("nvmeof-rdma", 80.0, 10e-6, RDMA_CPU_S_PER_BYTE, 1e-6, RDMA_CPU_S_PER_BYTE, 1e-6),
}


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
