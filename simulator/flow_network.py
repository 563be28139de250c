"""The flow network's parts: constraints, flows, power meters and device state.

A *flow* moves an amount (bytes, operations, seconds of compute) and uses each
*constraint* it crosses at `coefficient x rate`; a *meter* is a component's
power, linear in constraint loads.  simulator/flows.py moves these forward in
time, simulator/maxmin.py allocates the rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol

import numpy as np
import simpy

if TYPE_CHECKING:
    from iowatt.simulator.flows import FlowEngine

# Relative tolerances: a constraint is tight when its residual is below this
# share of its capacity; a flow is done when its remainder is below this share
# of its amount or would take less than TIME_EPS seconds.
REL_EPS = 1e-9
TIME_EPS = 1e-9
# flows and constraints sort by creation index, so every run is deterministic
by_index = attrgetter("index")


class EngineError(RuntimeError):
    """A flow network that cannot make progress or was built wrongly."""


class Dynamics(Protocol):
    """State of a device that changes a constraint's capacity at breakpoints.

    Between events the constraint's load is constant, so the state evolves
    linearly and the engine can ask when the next breakpoint comes.
    """

    def advance(self, elapsed_seconds: float, load: float) -> None:
        """Move the state forward by `elapsed_seconds` at constant `load` (units/s).

        The engine never advances past the breakpoint it was last told of; when a
        step reaches it, `on_breakpoint` follows at once."""

    def seconds_to_breakpoint(self, load: float) -> float:
        """Seconds until the capacity changes at this load (math.inf if never)."""

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        """Called when the breakpoint is reached; typically calls engine.set_capacity."""


class Constraint:
    """A shared resource with a capacity in units per second."""

    __slots__ = ("capacity", "dynamics", "flows", "index", "last_time", "load", "meters", "name")

    def __init__(self, name: str, capacity: float, dynamics: Dynamics | None = None, index: int = 0) -> None:
        if not (capacity >= 0.0) or math.isnan(capacity):
            raise EngineError(f"constraint {name!r}: capacity must be >= 0, found {capacity!r}")
        self.name = name
        self.capacity = float(capacity)
        # flow -> coefficient; a dict keeps insertion order, so runs are deterministic
        self.flows: dict[Flow, float] = {}
        self.load = 0.0
        self.dynamics = dynamics
        self.last_time = 0.0
        self.meters: list[Meter] = []
        self.index = index

    def __repr__(self) -> str:
        return f"Constraint({self.name!r}, capacity={self.capacity:g}, load={self.load:g})"


class ComponentToken:
    """Identity of one scheduled component event; retired when the component is recomputed."""

    __slots__ = ("constraints", "dynamic", "flows", "valid")

    def __init__(self, flows: list[Flow], constraints: list[Constraint], dynamic: list[Constraint]) -> None:
        self.valid = True
        self.flows = flows
        self.constraints = constraints
        self.dynamic = dynamic  # the constraints with Dynamics: the only ones whose state must be advanced


class Flow:
    """An amount moving at a rate through constraints; `done` fires when it is delivered."""

    __slots__ = (
        "amount",
        "done",
        "end_time",
        "index",
        "last_time",
        "max_rate",
        "name",
        "rate",
        "remaining",
        "start_time",
        "tag",
        "token",
        "usage",
        "usage_coefs",
        "usage_cols",
        "weight",
    )

    def __init__(
        self,
        name: str,
        amount: float,
        usage: dict[Constraint, float],
        weight: float,
        max_rate: float | None,
        done: simpy.Event,
        now: float,
        index: int,
        tag: object = None,
    ) -> None:
        self.name = name
        self.amount = float(amount)
        self.remaining = float(amount)
        self.usage = usage
        self.weight = float(weight)
        self.max_rate = max_rate
        self.rate = 0.0
        self.last_time = now
        self.done = done
        self.token: ComponentToken | None = None
        self.start_time = now
        self.end_time: float | None = None
        self.index = index
        self.tag = tag
        # usage as arrays of constraint indices and coefficients, built on first vectorised allocation
        self.usage_cols: np.ndarray | None = None
        self.usage_coefs: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"Flow({self.name!r}, remaining={self.remaining:g}/{self.amount:g}, rate={self.rate:g})"

    @property
    def delivered(self) -> float:
        return self.amount - self.remaining


@dataclass(eq=False)
class Meter:
    """Power of one component: idle_W + sum(joules_per_unit x constraint load) + extra_W.

    `extra_W` is for state power that is not carried by a flow (e.g. a drive
    in a power-state transition); change it with FlowEngine.set_meter_extra.
    """

    name: str
    idle_W: float
    terms: list[tuple[Constraint, float]]
    group: str = ""
    extra_W: float = 0.0
    power_W: float = 0.0
    energy_J: float = 0.0
    last_time: float = 0.0
    peak_W: float = 0.0
    history: list[tuple[float, float]] | None = field(default=None, repr=False)

    def current_power(self) -> float:
        return self.idle_W + self.extra_W + sum(k * c.load for c, k in self.terms)

    def integrate_to(self, now: float) -> None:
        elapsed = now - self.last_time
        if elapsed > 0.0:
            self.energy_J += self.power_W * elapsed
        self.last_time = now

    def refresh(self, now: float) -> None:
        self.integrate_to(now)
        self.power_W = self.current_power()
        self.peak_W = max(self.peak_W, self.power_W)
        if self.history is not None:
            if self.history and self.history[-1][0] == now:
                self.history[-1] = (now, self.power_W)
            else:
                self.history.append((now, self.power_W))


@dataclass
class EngineStats:
    events: int = 0          # component events that fired and were still valid
    stale_events: int = 0    # events retired by a later recompute
    recomputes: int = 0      # component allocations
    batches: int = 0         # same-instant batches
    flows_started: int = 0
    flows_completed: int = 0
    breakpoints: int = 0
