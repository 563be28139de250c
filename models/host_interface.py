"""Where drives and GPUs attach: host-bus adapters, SAS expanders, PCIe switches, root ports and sockets.

A SAS/SATA drive reaches the CPU through a host-bus adapter (or a RAID
controller): the HBA's command processor serves a bounded number of commands
per second, and every byte crosses its PCIe host link; drives behind a SAS
expander (a backplane or JBOF) share the expander's wide port to the HBA
(`lanes` x 12 Gb/s, 8b/10b: 1.2 GB/s per lane, models.links).  NVMe drives
behind a PCIe switch (a JBOF, a switch card) share the switch's uplink to the
root port.  Each of these is a constraint per direction.

A GPU reading storage peer-to-peer (GPUDirect Storage) sends the DMA from the
drive to the GPU's BAR along the shortest path in the PCIe tree (NVIDIA
GPUDirect Storage Design Guide, "Paths from Storage to GPUs"):

  switch         drive and GPU under one PCIe switch: the switch routes it, the CPU sees nothing
  root_complex   under different root ports of one CPU: the root complex forwards the peer traffic
  cross_socket   under different CPUs: the traffic also crosses the socket interconnect (UPI,
                 xGMI); the design guide advises against it, and cuFile falls back to its
                 compatibility mode where the platform refuses such peer-to-peer transfers

The design guide states no bandwidth for the second and third paths; the
models here charge them only what is known: the links they cross (models.gds).
"""

from __future__ import annotations

from typing import Literal

from iowatt.models.links import LinkSpec, link_payload_Bps
from pydantic import BaseModel, ConfigDict, Field

GpuPath = Literal["switch", "root_complex", "cross_socket"]
GPU_PATHS: tuple[str, ...] = ("switch", "root_complex", "cross_socket")


class HbaSpec(BaseModel):
    """A SAS/SATA host-bus adapter or RAID controller as the catalog describes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    kind: Literal["hba", "raid"] = "hba"
    host_link: LinkSpec = Field(description="the adapter's PCIe link to the host")
    ports: int = Field(ge=1, le=64, description="SAS/SATA lanes (phys) on the adapter")
    port_link: LinkSpec = Field(default_factory=lambda: LinkSpec(kind="sas", lanes=1), description="one lane's link (SAS-3: 12 Gb/s)")
    max_iops: float = Field(gt=0, description="commands per second the adapter's processor completes")

    def host_Bps(self) -> float:
        return link_payload_Bps(self.host_link)

    def lanes_Bps(self, lanes: int) -> float:
        """Payload rate of a wide port of `lanes` lanes (an expander's uplink)."""
        return link_payload_Bps(self.port_link) * lanes
