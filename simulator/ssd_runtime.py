"""One SSD in the flow engine: its constraints, power meter and state."""

from __future__ import annotations

import math

from models.links import link_payload_Bps
from models.ssd import (
    SSDSpec,
    power_cap_W,
    read_joules_per_byte,
    read_seconds_per_byte,
    write_joules_per_byte,
    write_seconds_per_byte,
)
from simulator.flows import Constraint, FlowEngine, Meter


class SSDRuntime:
    """One drive in the flow engine."""

    def __init__(self, engine: FlowEngine, name: str, spec: SSDSpec, power_state: int, fill: float) -> None:
        self.name = name
        self.spec = spec
        self.power_state = power_state
        self.fill = fill
        link = link_payload_Bps(spec.link)
        self.link_write = engine.constraint(f"{name}.link_write", link)
        self.link_read = engine.constraint(f"{name}.link_read", link)
        self.read = engine.constraint(f"{name}.read", 1.0)
        self.write = engine.constraint(f"{name}.write", 1.0)
        cap = power_cap_W(spec, power_state)
        self.cap_W = cap
        self.power = engine.constraint(f"{name}.power", math.inf if cap is None else cap - spec.idle_W)
        self.meter: Meter = engine.meter(name, spec.idle_W, [(self.power, 1.0)], group="storage")
        self._e_read = read_joules_per_byte(spec)
        self._e_write = write_joules_per_byte(spec)

    def write_usage(self, block_bytes: float, share: float = 1.0) -> list[tuple[Constraint, float]]:
        """Constraints a host write of one byte crosses, times `share` (striping)."""
        return [
            (self.link_write, share),
            (self.write, share * write_seconds_per_byte(self.spec, block_bytes)),
            (self.power, share * self._e_write),
        ]

    def read_usage(self, block_bytes: float, share: float = 1.0) -> list[tuple[Constraint, float]]:
        return [
            (self.link_read, share),
            (self.read, share * read_seconds_per_byte(self.spec, block_bytes)),
            (self.power, share * self._e_read),
        ]
