"""The SATA SSD family's runtime: the SSD's flash laws (simulator.storage.ssd) behind a SATA link.

What differs from an NVMe drive, as mechanisms:
  * the link is half duplex: SATA sends one frame information structure (FIS) at a time and the opposite
    direction carries only primitives meanwhile (Serial ATA Revision 3.x, link layer), so reads and writes share
    one 6 Gb/s payload rate (`ssdN.link_duplex`, crossed by every byte) where PCIe gives each direction its own;
    the per-direction constraints stay (a host interface reads them), each at the same rate;
  * AHCI's 32 NCQ tags cap the commands the drive holds (models.links.device_queue_limit, as for any SATA spec);
  * there are no NVMe power states or APST: a scenario that sets one is refused naming the field (SATA link power
    management, partial / slumber / DevSleep, is not modelled).
Both faces read these laws: the per-request face (SsdDrive.request_server) prices each request on its busiest
constraint, the shared link included; it does not make reads and writes queue for the link together, so a mix
near the link rate is the fluid face's alone.
"""

from __future__ import annotations

from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import SSDSpec
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage.contract import Access, Drive, Usage
from iowatt.simulator.storage.families import DriveChoice, DriveRuntime, refuse_nvme_power
from iowatt.simulator.storage.ssd import SsdDrive


class SataSsdDrive(SsdDrive):
    """One SATA SSD: an SsdDrive whose reads and writes share one half-duplex link."""

    def __init__(self, engine: FlowEngine, name: str, spec: SSDSpec, choice: DriveChoice) -> None:
        super().__init__(engine, name, spec, 0, choice.fill, choice.filesystem_spec(), choice.ftl_valid, choice.precondition)
        self.link_duplex = engine.constraint(f"{name}.link_duplex", link_payload_Bps(spec.link))

    def usage(self, access: Access, share: float = 1.0) -> Usage:
        return [*super().usage(access, share), (self.link_duplex, share)]


def _check(spec: SSDSpec, choice: DriveChoice) -> None:
    refuse_nvme_power(spec.name, "a SATA SSD", choice)


def _build(engine: FlowEngine, name: str, spec: SSDSpec, choice: DriveChoice) -> Drive:
    return SataSsdDrive(engine, name, spec, choice)


FAMILY = DriveRuntime("sata_ssd", "ssd", _build, _check)
