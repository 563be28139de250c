"""Interconnect payload bandwidth per direction.

PCIe: line rate x encoding x lanes, less TLP overhead at the max payload size
(Intel AN 708 / AN 855: 6 DW = 24 B per TLP without ECRC; PLX PEX8532
efficiency table).  Gen6 uses 256 B flits carrying 236 B of TLP (92.2 %,
Lockwood's PCIe Gen6 notes).  SATA and SAS-3 use 8b/10b (Intel CS-009260,
Thomas-Krenn).  InfiniBand and Ethernet rates are post-encoding data rates
(64b/66b); their protocol efficiency belongs to the fabric model.
Sources are the L* entries of docs/sources.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# GT/s per lane and line-code efficiency by PCIe generation (PCI-SIG base specs).
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 1.0}
# bytes of TLP framing + sequence + header + LCRC per packet, no ECRC (Intel AN 855: 6 DW)
TLP_OVERHEAD_BYTES = 24
# Gen6 FLIT: 236 B of TLP bytes per 256 B flit (Lockwood, PCIe Gen6)
PCIE6_FLIT_EFFICIENCY = 236 / 256

LinkKind = Literal["pcie", "sata", "sas", "infiniband", "ethernet"]
# data rates after line coding, bytes/s per lane (SATA/SAS) or per port (IB/Ethernet 4x)
SERIAL_LINK_Bps = {
    "sata": 6e9 * 0.8 / 8,     # SATA 6 Gb/s, 8b/10b -> 600 MB/s
    "sas": 12e9 * 0.8 / 8,     # SAS-3 12 Gb/s, 8b/10b -> 1200 MB/s per lane
}
NETWORK_GBITPS = {"edr": 100.0, "hdr": 200.0, "ndr": 400.0}


class LinkSpec(BaseModel):
    """A point-to-point link; `generation` and `lanes` apply to PCIe (lanes also to SAS wide ports)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: LinkKind = "pcie"
    generation: int | None = Field(default=None, description="PCIe generation 1..6")
    lanes: int = Field(default=4, ge=1, le=32, description="lanes (PCIe x1..x16, SAS port width)")
    max_payload_bytes: int = Field(default=256, ge=128, le=4096, description="PCIe max payload size (MPS)")
    rate_Gbps: float | None = Field(default=None, gt=0, description="InfiniBand/Ethernet data rate per port")

    @model_validator(mode="after")
    def _consistent(self) -> LinkSpec:
        if self.kind == "pcie":
            if self.generation not in PCIE_GT_PER_S:
                raise ValueError(f"PCIe generation must be 1..6, found {self.generation!r}")
            if self.lanes not in (1, 2, 4, 8, 16, 32):
                raise ValueError(f"PCIe lanes must be 1, 2, 4, 8, 16 or 32, found {self.lanes}")
        if self.kind in ("infiniband", "ethernet") and self.rate_Gbps is None:
            raise ValueError(f"a {self.kind} link needs rate_Gbps")
        return self


def pcie_raw_Bps(generation: int, lanes: int) -> float:
    """Per-direction bandwidth after line coding, before packet overhead."""
    return PCIE_GT_PER_S[generation] * 1e9 * PCIE_ENCODING[generation] / 8 * lanes


def pcie_payload_Bps(generation: int, lanes: int, max_payload_bytes: int = 256) -> float:
    """Per-direction payload bandwidth: raw x MPS / (MPS + TLP overhead); Gen6 by flit efficiency.

    Gen5 x4 at MPS 256: 15.754 GB/s x 256/280 = 14.40 GB/s (devices.yaml links.pcie.gen5).
    DLLP and SKP traffic cost a few % more; measured SSD ceilings already include it.
    """
    raw = pcie_raw_Bps(generation, lanes)
    if generation >= 6:
        return raw * PCIE6_FLIT_EFFICIENCY
    return raw * max_payload_bytes / (max_payload_bytes + TLP_OVERHEAD_BYTES)


def link_payload_Bps(link: LinkSpec) -> float:
    """Payload bandwidth of one direction of the link."""
    if link.kind == "pcie":
        assert link.generation is not None
        return pcie_payload_Bps(link.generation, link.lanes, link.max_payload_bytes)
    if link.kind in SERIAL_LINK_Bps:
        return SERIAL_LINK_Bps[link.kind] * (link.lanes if link.kind == "sas" else 1)
    assert link.rate_Gbps is not None
    return link.rate_Gbps * 1e9 / 8


# ---------------------------------------------------------------------------- network protocol efficiency
#
# Payload share of the post-encoding data rate, per packet, for a full-size packet.
# Ethernet/IP/TCP (L12): 1,460 B of TCP payload per 1,538 B on the wire at 1500 MTU
# (preamble+SFD 8, header 14, FCS 4, inter-frame gap 12 = 38 B; IP 20 + TCP 20 = 40 B
# inside the MTU) -> 94.93 %; 8,960 / 9,038 = 99.14 % at 9000 MTU.
# RoCEv2: the same 38 B of Ethernet framing plus IP 20, UDP 8, BTH 12, ICRC 4 = 44 B
# inside the frame; RDMA MTU 4096 B of payload (IBTA RoCEv2 annex; header sizes are
# protocol constants, not in devices_sources).
# InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per packet, 4096 B MTU (IBTA
# vol. 1 header sizes, not in devices_sources); link-level credits and the 16-B RETH
# of the first packet of an RDMA write are ignored (< 0.5 %).
# No RDMA or iperf goodput measurement at 100-400 Gb/s was found (devices.yaml
# links.infiniband.achieved_payload and links.ethernet.measured are null), so these
# are ceilings; hosts rarely reach them (PCIe, memory, CPU limits are modelled apart).

ETHERNET_FRAMING_BYTES = 38  # preamble/SFD 8 + MAC header 14 + FCS 4 + IFG 12
IP_TCP_HEADER_BYTES = 40
ROCE_HEADER_BYTES = 44  # IPv4 20 + UDP 8 + BTH 12 + ICRC 4
IB_HEADER_BYTES = 26  # LRH 8 + BTH 12 + ICRC 4 + VCRC 2
ETHERNET_GBITPS = {"100gbe": 100.0, "200gbe": 200.0, "400gbe": 400.0}

Transport = Literal["tcp", "roce", "ib"]


def infiniband_link(speed: str) -> LinkSpec:
    """A 4x InfiniBand port: 'edr' (100), 'hdr' (200), 'ndr' (400 Gb/s data rate after 64b/66b, L10)."""
    return LinkSpec(kind="infiniband", rate_Gbps=NETWORK_GBITPS[speed.lower()])


def ethernet_link(speed: str) -> LinkSpec:
    """An Ethernet port: '100gbe', '200gbe', '400gbe' (nominal rate is the post-64b/66b data rate, L13)."""
    return LinkSpec(kind="ethernet", rate_Gbps=ETHERNET_GBITPS[speed.lower()])


def protocol_efficiency(link: LinkSpec, transport: Transport | None = None, mtu: int | None = None) -> float:
    """Payload bytes per data-rate byte for full-size packets of `transport` on `link`.

    Ethernet defaults to TCP at 1500 MTU; transport 'roce' uses a 4096-B RDMA MTU
    (needs an Ethernet MTU of at least 4096 + 44).  InfiniBand uses its own
    transport with a 4096-B MTU.
    """
    if link.kind == "infiniband":
        if transport not in (None, "ib"):
            raise ValueError(f"an InfiniBand link carries the 'ib' transport, found {transport!r}")
        payload = mtu or 4096
        return payload / (payload + IB_HEADER_BYTES)
    if link.kind == "ethernet":
        transport = transport or "tcp"
        if transport == "tcp":
            frame = mtu or 1500
            return (frame - IP_TCP_HEADER_BYTES) / (frame + ETHERNET_FRAMING_BYTES)
        if transport == "roce":
            payload = mtu or 4096
            return payload / (payload + ROCE_HEADER_BYTES + ETHERNET_FRAMING_BYTES)
        raise ValueError(f"an Ethernet link carries 'tcp' or 'roce', found {transport!r}")
    raise ValueError(f"protocol efficiency applies to infiniband and ethernet links, found {link.kind!r}")


def network_goodput_Bps(link: LinkSpec, transport: Transport | None = None, mtu: int | None = None) -> float:
    """Payload bytes per second one direction of a network port can carry."""
    return link_payload_Bps(link) * protocol_efficiency(link, transport, mtu)


# Commands a device can hold at once: SATA native command queueing has 32 tags (Serial ATA rev 2.6+,
# "Native Command Queuing": tags 0..31); NVMe queues hold up to 64 Ki commands each and SAS tagged
# queueing is limited by the host, so only SATA caps the device's concurrency.  Requests beyond the
# limit wait in the host's queue: they add latency (Little's law over all N) but no throughput.
# Hard disks reorder only what they hold (models.hdd), so the same limit caps their reordering.
QUEUE_LIMIT = {"sata": 32}


def device_queue_limit(interface: str) -> int | None:
    return QUEUE_LIMIT.get(interface)
