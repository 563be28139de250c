"""Interconnect payload bandwidth per direction.

PCIe: line rate x encoding x lanes, less TLP overhead at the max payload size
(Intel AN 708 / AN 855: 6 DW = 24 B per TLP without ECRC; PLX PEX8532
efficiency table).  Gen6 uses 256 B flits carrying 236 B of TLP (92.2 %,
Lockwood's PCIe Gen6 notes).  SATA and SAS-3 use 8b/10b (Intel CS-009260,
Thomas-Krenn).  InfiniBand and Ethernet rates are post-encoding data rates
(64b/66b); their protocol efficiency belongs to the fabric model.
Sources are the L* entries of ../shared/reference/devices_sources.md.
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
