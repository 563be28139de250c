"""The flow network's parts: constraints, flows, power meters and device state.

A *flow* moves an amount (bytes, operations, seconds of compute) and uses each
*constraint* it crosses at `coefficient x rate`; a *meter* is a component's
power, linear in constraint loads.  simulator/flows.py moves these forward in
time, simulator/maxmin.py allocates the rates, simulator/flow_classes.py holds
large components as classes of symmetric flows.  Layers, lowest first, with no
import back up (tests/test_layering.py): maxmin -> flow_network -> flow_classes -> flows.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Protocol

import simpy
from iowatt.simulator.maxmin import REL_EPS, EngineError
from simpy.events import NORMAL

if TYPE_CHECKING:
    import numpy as np

__all__ = ["REL_EPS", "TIME_EPS", "Constraint", "Dynamics", "EngineControl", "EngineError", "Flow", "FlowGroup", "Meter", "Watcher"]

# Relative tolerances: a constraint is tight when its residual is below REL_EPS
# of its capacity (maxmin); a flow is done when its remainder is below REL_EPS
# of its amount or would take less than TIME_EPS seconds.
TIME_EPS = 1e-9

# CPython's cyclic collector scans the young generation every 700 net allocations (gc.get_threshold()[0]).  A run
# allocates events, flows and heap items by the hundred thousand and frees nearly all of them by reference counting,
# so those scans find little (row 6 at 16,384 GPUs: ~750 young collections) yet cost a quarter of the CPU.  During
# FlowEngine.run the threshold is raised to this.  A speed setting, not a model value (results do not depend on it): measured
# on row 6 (benchmarks/row_scale.py, 16,384 GPUs, one process): 2.6-2.7 s CPU at 700, 2.1-2.2 s at 10,000,
# 2.0 s with the collector off.  Re-measured after flow classes stopped keeping a sorted usage per flow (~260,000
# objects alive mid-run, down from ~610,000), same row, two runs each on a loaded 2-core machine, seconds of
# collection (gc.callbacks): 0.14-0.21 at 10,000 (2 middle-generation scans of ~30 ms), 0.07-0.14 at 40,000,
# 0.05-0.13 at 100,000 (no middle-generation scan).  Plausible 700 (CPython's default) .. 100,000: objects held
# between scans, cyclic garbage only, grow with it (~1 MB at 10,000, ~10 MB here).
GC_YOUNG_THRESHOLD = 100_000


@contextmanager
def fewer_young_collections() -> Iterator[None]:
    """Raise the young generation's threshold to GC_YOUNG_THRESHOLD while the body runs (not if a caller set it
    higher or switched the collector off), then put back what was there.  The objects alive before the run are frozen
    for its length (gc.freeze, O(1)): the run's older-generation scans then visit only what the run allocated, not
    the process's whole heap of modules, schemas and earlier results (row 6, 16,384 GPUs: full collections 0.65 s ->
    0.03 s of wall time, gc.callbacks; a sampler's hundreds of runs each scanned the catalog and pydantic schemas).
    Nothing is lost: cyclic garbage among them waits for the first collection after the run."""
    young, *older = gc.get_threshold()
    if young == 0 or young >= GC_YOUNG_THRESHOLD:
        yield
        return
    gc.set_threshold(GC_YOUNG_THRESHOLD, *older)
    freeze = gc.get_freeze_count() == 0  # a caller that froze objects itself keeps them as it left them
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
        gc.set_threshold(young, *older)


# flows and constraints sort by creation index, so every run is deterministic
by_index = attrgetter("index")


def search_component(
    flows: list[Flow], constraints: list[Constraint], seen_f: set[Flow], seen_c: set[Constraint]
) -> tuple[list[Flow], list[Constraint]]:
    """Breadth-first search over flow <-> constraint adjacency (large components are mostly
    held as classes instead: simulator/flow_classes.py); sorted by creation index."""
    comp_f: list[Flow] = []
    comp_c: list[Constraint] = []
    stack_f = [f for f in flows if f not in seen_f]
    stack_c = [c for c in constraints if c not in seen_c]
    seen_f.update(stack_f)
    seen_c.update(stack_c)
    while stack_f or stack_c:
        while stack_f:
            f = stack_f.pop()
            comp_f.append(f)
            for c in f.usage:
                if c not in seen_c:
                    seen_c.add(c)
                    stack_c.append(c)
        while stack_c:
            c = stack_c.pop()
            comp_c.append(c)
            for f in c.flows:
                if f not in seen_f:
                    seen_f.add(f)
                    stack_f.append(f)
    comp_f.sort(key=by_index)
    comp_c.sort(key=by_index)
    return comp_f, comp_c


def triggered_event(env: simpy.Environment) -> simpy.Event:
    """An event already triggered (ok, no value) but not queued, for the caller to queue itself: at a priority of its
    own (Environment.schedule) or at a time and sequence number of its own (queue_at).  SimPy's public calls queue at
    NORMAL as they trigger (Event.succeed, Timeout), so the two fields Event.succeed sets are set here.  Checked on
    SimPy 4.1.2 (events.py)."""
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    return event


def draw_sequence_number(env: simpy.Environment) -> int:
    """The number the next event queued in `env` would take (and takes it: the next one takes the one after), for
    queue_at later.  From the counter Environment.schedule draws from (`_eid`, SimPy 4.1.2 core.py)."""
    return next(env._eid)


def queue_at(env: simpy.Environment, when: float, eid: int, callback: Callable[[simpy.Event], None]) -> simpy.Event:
    """A triggered event queued at `when` under sequence number `eid`, drawn from the environment's counter earlier:
    where a Timeout made when `eid` was drawn would sit.  SimPy has no public call for this (Environment.schedule
    takes a delay from now and draws a new number), so the queue item is pushed as Environment.schedule pushes it:
    (time, priority, sequence number, event) on the heap `_queue`, numbers from the counter `_eid`, with the two
    fields Event.succeed sets.  Checked on SimPy 4.1.2 (core.py, events.py)."""
    event = triggered_event(env)
    event.callbacks.append(callback)
    heapq.heappush(env._queue, (when, NORMAL, eid, event))
    return event


class EngineControl(Protocol):
    """What a device state may do to the engine from a callback (simulator/flows.FlowEngine implements it)."""

    env: simpy.Environment

    def set_capacity(self, constraint: Constraint, capacity: float) -> None: ...

    def sync(self, constraint: Constraint) -> None: ...

    def set_meter_idle(self, meter: Meter, idle_W: float, at: float | None = None) -> None: ...

    def set_meter_extra(self, meter: Meter, extra_W: float) -> None: ...


class FlowGroup(Protocol):
    """Where a flow held in a class of symmetric flows reads its rate and remainder (flow_classes.FlowClass)."""

    def rate_of(self, flow: Flow) -> float: ...

    def remaining_of(self, flow: Flow) -> float: ...


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

    def on_breakpoint(self, engine: EngineControl, constraint: Constraint) -> None:
        """Called when the breakpoint is reached; typically calls engine.set_capacity."""


class Watcher(Protocol):
    """A device state that wakes when work arrives and rests when it is gone (an NVMe power policy).

    The engine tells it, at the instant it happens, that a flow started crossing
    its constraint and that the constraint's last flow finished; it may change
    capacities (engine.set_capacity) and meters then, or start SimPy timers."""

    def flow_arrives(self, engine: EngineControl, constraint: Constraint) -> None:
        """A flow started crossing `constraint` now."""

    def drained(self, engine: EngineControl, constraint: Constraint) -> None:
        """The last flow crossing `constraint` finished now."""


class Constraint:
    """A shared resource with a capacity in units per second."""

    __slots__ = ("capacity", "component", "dynamics", "flows", "index", "last_time", "load", "meters", "name", "watcher")

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
        # a tuple, replaced when a meter is added (FlowEngine.meter): most constraints have none, and an empty tuple
        # is shared, where 16,384 GPU links' empty lists were objects for the cyclic collector to scan
        self.meters: tuple[Meter, ...] = ()
        self.index = index
        self.watcher: Watcher | None = None
        # the classed component (flow_classes.ClassedComponent) that holds this constraint's flows, if any
        self.component: object | None = None

    @property
    def private_able(self) -> bool:
        """Its load is read by nothing during a run (no meter, no device state, no watcher, a finite capacity),
        so when one flow or one class of flows alone crosses it, it may act as that flow's rate bound."""
        return not self.meters and self.dynamics is None and self.watcher is None and self.capacity != math.inf  # >= 0, not NaN

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
        "_rate",
        "_remaining",
        "amount",
        "done",
        "end_time",
        "group",
        "index",
        "last_time",
        "max_rate",
        "name",
        "offset",
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
        # the flow's own state while it is allocated alone; in a class of symmetric flows (`group`) the class
        # holds it (`offset`: the remainder plus the class's progress), and `rate` / `remaining` read it there
        self._remaining = float(amount)
        self._rate = 0.0
        self.group: FlowGroup | None = None
        self.offset = 0.0
        self.usage = usage
        self.weight = float(weight)
        self.max_rate = max_rate
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
    def rate(self) -> float:
        return self._rate if self.group is None else self.group.rate_of(self)

    @property
    def remaining(self) -> float:
        """Amount still to move, as of now (as of the flow's last change while it is allocated alone)."""
        return self._remaining if self.group is None else self.group.remaining_of(self)

    @property
    def delivered(self) -> float:
        return self.amount - self.remaining


@dataclass(eq=False)
class Meter:
    """Power of one component (or of `copies` identical ones lumped into one):

        copies x (idle_W + extra_W + sum(k x load of c) + sum(W x min(1, load of c) for each busy term))

    `terms` are energies per unit of a constraint's load (J per byte, per command);
    `busy_terms` are powers drawn while at least one unit is in flight on their
    constraint, whose load counts units in flight (Little's law: rate x time in
    flight): an SSD controller's floor while commands are outstanding, drawn all
    the time at one command or more in flight and for that share of the time
    below (min(1, N): exact for a closed loop, and the M/G/inf probability
    1 - exp(-N) ~ N of a light stream).  Loads are constant between events, so
    both are piecewise constant and integrate exactly.  `extra_W` is state power not carried by a flow (a GPU spinning on
    completions); `idle_W` changes with the component's state (an NVMe power
    state) through FlowEngine.set_meter_idle.  With `labels` (one per part: idle,
    extra, each term, each busy term) the energy is also kept per part in
    `parts_J`, integrated with the total, so the parts add up to `energy_J`.
    """

    name: str
    idle_W: float
    terms: list[tuple[Constraint, float]]
    group: str = ""
    extra_W: float = 0.0
    busy_terms: list[tuple[Constraint, float]] = field(default_factory=list)
    copies: float = 1.0
    labels: tuple[str, ...] | None = None
    parts_J: list[float] | None = field(default=None, repr=False)
    power_W: float = 0.0
    energy_J: float = 0.0
    last_time: float = 0.0
    peak_W: float = 0.0
    history: list[tuple[float, float]] | None = field(default=None, repr=False)
    _parts_W: list[float] = field(default_factory=list, repr=False)

    def part_powers(self) -> list[float]:
        """Power of each part now (idle, extra, each term, each busy term), for one copy."""
        return [self.idle_W, self.extra_W, *(k * c.load for c, k in self.terms),
                *(w * min(1.0, c.load) for c, w in self.busy_terms)]

    def current_power(self) -> float:
        return self.copies * sum(self.part_powers())

    def integrate_to(self, now: float) -> None:
        elapsed = now - self.last_time
        if elapsed > 0.0:
            self.energy_J += self.power_W * elapsed
            if self.parts_J is not None:
                for i, w in enumerate(self._parts_W):
                    self.parts_J[i] += self.copies * w * elapsed
        self.last_time = now

    def refresh(self, now: float) -> None:
        self.integrate_to(now)
        parts = self.part_powers()
        self.power_W = self.copies * sum(parts)
        if self.parts_J is not None:
            self._parts_W = parts
        self.peak_W = max(self.peak_W, self.power_W)
        if self.history is not None:
            if self.history and self.history[-1][0] == now:
                self.history[-1] = (now, self.power_W)
            else:
                self.history.append((now, self.power_W))

    def binned_power_W(self, end: float, bins: int) -> list[float]:
        """Average power in each of `bins` equal intervals of [0, end], from `history` (energy kept per bin)."""
        if self.history is None or end <= 0.0 or bins < 1:
            return []
        width = end / bins
        last = bins - 1
        out = [0.0] * bins
        points = [*self.history, (end, self.power_W)]
        for (t0, w), (t1, _next) in itertools.pairwise(points):
            t0, t1 = max(t0, 0.0), min(t1, end)
            if not t1 > t0:
                continue
            i = min(int(t0 / width), last)
            if i < last and (i + 1) * width <= t0:
                i += 1  # t0 sits on a bin edge after rounding
            while True:
                if i == last:
                    out[i] += w * (t1 - t0)
                    break
                edge = (i + 1) * width
                if edge >= t1:
                    out[i] += w * (t1 - t0)
                    break
                out[i] += w * (edge - t0)
                # t0 is now the edge (i + 1) x width itself, so the next bin is i + 1: the search above, done once
                # per segment rather than once per bin (a long segment crosses up to `bins` of them)
                t0 = edge
                i += 1
        return [joules / width for joules in out]

    def energy_by_part(self) -> dict[str, float]:
        """Energy of each labelled part up to the last integration (empty without labels)."""
        if self.labels is None or self.parts_J is None:
            return {}
        out: dict[str, float] = {}
        for label, joules in zip(self.labels, self.parts_J, strict=True):
            out[label] = out.get(label, 0.0) + joules
        return out


@dataclass
class EngineStats:
    events: int = 0          # component events that fired and were still valid
    stale_events: int = 0    # events retired by a later recompute
    recomputes: int = 0      # component allocations
    batches: int = 0         # same-instant batches
    flows_started: int = 0
    flows_completed: int = 0
    breakpoints: int = 0
