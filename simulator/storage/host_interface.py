"""The host interface of a volume's drives in the flow engine: HBA, SAS expander, PCIe switch (models.host_interface).

`attach:` in a storage config says where the drives sit; the default (nothing)
is a one-socket server with the drives on the CPU's own lanes (NVMe) or ports.
The wrapper adds, to every byte the volume moves, the constraints of what it
crosses: the HBA's command processor (one command per device I/O) and host
link, the expander's wide port, the switch's uplink, each per direction.
"""

from __future__ import annotations

import math

from iowatt.models import catalog
from iowatt.models.host_interface import HbaSpec
from iowatt.models.links import LinkSpec, link_payload_Bps
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.machine import CatalogOf, CatalogRef, check_catalog_ref
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Usage, Volume
from iowatt.simulator.storage.front import FrontVolume
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class HostInterfaceConfig(BaseModel):
    """Where the drives attach (default: the CPU's own lanes of a one-socket server, nothing shared)."""

    model_config = ConfigDict(extra="forbid")

    hba: CatalogRef | None = Field(default=None, description="host-bus adapter or RAID controller (catalog `hba`), e.g. broadcom-9300-16i",
                                       json_schema_extra=CatalogOf("hba"))
    expander_lanes: int | None = Field(
        default=None, ge=1, le=16,
        description="SAS lanes from the HBA to an expander backplane or JBOF that all drives share (None: a port per drive)",
    )
    switch_uplink: LinkSpec | None = Field(
        default=None, description="PCIe switch (JBOF, switch card) uplink the NVMe drives share, e.g. {generation: 4, lanes: 16}",
    )

    @field_validator("hba")
    @classmethod
    def _hba(cls, value: CatalogRef | None) -> CatalogRef | None:
        return None if value is None else check_catalog_ref("hba", value)

    @model_validator(mode="after")
    def _expander_needs_hba(self) -> HostInterfaceConfig:
        if self.expander_lanes is not None and self.hba is None:
            raise ValueError("expander_lanes: an expander hangs off an HBA; give `hba` too, found none")
        return self

    def hba_spec(self) -> HbaSpec | None:
        return None if self.hba is None else catalog.spec_from("hba", self.hba)  # type: ignore[return-value]

    @property
    def empty(self) -> bool:
        return self.hba is None and self.switch_uplink is None


class AttachedVolume(FrontVolume):
    """`inner` with the host interface's constraints added to its usage; everything else is the inner volume's."""

    def __init__(self, engine: FlowEngine, inner: Volume, config: HostInterfaceConfig, prefix: str = "") -> None:
        self.inner = inner
        self.links: list[tuple[Constraint, Constraint, str]] = []  # (toward the host, toward the drives, what)
        self.commands: Constraint | None = None
        spec = config.hba_spec()
        if spec is not None:
            self.commands = engine.constraint(f"{prefix}hba.commands", spec.max_iops)
            self._link(engine, f"{prefix}hba.host_link", spec.host_Bps(), f"HBA {spec.model or spec.name} PCIe link")
            if config.expander_lanes is not None:
                self._link(engine, f"{prefix}expander.uplink", spec.lanes_Bps(config.expander_lanes),
                           f"SAS expander x{config.expander_lanes} wide port")
        if config.switch_uplink is not None:
            up = config.switch_uplink
            self._link(engine, f"{prefix}switch.uplink", link_payload_Bps(up), f"PCIe switch uplink Gen{up.generation} x{up.lanes}")
        self.last: Access | None = None

    def _link(self, engine: FlowEngine, name: str, capacity: float, what: str) -> None:
        self.links.append((engine.constraint(f"{name}_up", capacity), engine.constraint(f"{name}_down", capacity), what))

    def device_bytes(self, access: Access) -> tuple[float, float, float]:
        """(bytes up to the host, bytes down to the drives, device commands) per host byte, read off the
        drives' own link constraints in the inner usage."""
        up = down = 0.0
        for c, k in self.inner.usage(access):
            if c.name.endswith(".link_read"):
                up += k
            elif c.name.endswith(".link_write"):
                down += k
        # one command per device I/O; a command carries at most 1 MiB (the block layer splits larger ones;
        # a stripe unit splits them further, which only matters where the command rate binds: small I/Os)
        return up, down, (up + down) / min(access.block_bytes, 2.0**20)

    def interface_usage(self, access: Access) -> Usage:
        up, down, commands = self.device_bytes(access)
        out: Usage = []
        for to_host, to_drives, _what in self.links:
            out += [(to_host, up), (to_drives, down)]
        if self.commands is not None:
            out.append((self.commands, commands))
        return [(c, k) for c, k in out if k > 0.0]

    def usage(self, access: Access) -> Usage:
        self.last = access
        return [*self.inner.usage(access), *self.interface_usage(access)]

    def qd1_latency_s(self, access: Access) -> float:
        return self.inner.qd1_latency_s(access)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        self.last = access
        return self.inner.concurrency(access)

    def report(self) -> dict[str, object]:
        out = dict(self.inner.report())
        if self.last is None:
            return out
        # the interface binds when its tightest constraint allows less than the inner volume's closed loop
        law_rate = self.inner.concurrency(self.last).requests_per_second(self.last.queue_depth) * self.last.block_bytes
        names = {c: what for up, down, what in self.links for c in (up, down)}
        if self.commands is not None:
            names[self.commands] = "HBA command processor"
        tight = min(((c.capacity / k, names[c]) for c, k in self.interface_usage(self.last)), default=(math.inf, ""))
        loop = out.get("closed_loop")
        if tight[0] < law_rate and isinstance(loop, dict):
            out["closed_loop"] = {**loop, "binding": f"{tight[1]} ({tight[0] / 1e9:.3g} GB/s)"}
        return out


def attach(engine: FlowEngine, volume: Volume, config: HostInterfaceConfig | None, prefix: str = "") -> Volume:
    """The volume behind its host interface (unchanged when nothing is shared)."""
    if config is None or config.empty:
        return volume
    return AttachedVolume(engine, volume, config, prefix)
