"""Flow engine: bulk transfers as fluid flows over linear constraints.

A *flow* moves an amount (bytes, operations, seconds of compute) and uses
each *constraint* it crosses at `coefficient x rate`.  Rates are the weighted
max-min fair allocation (progressive filling, as SimGrid's LMM solver does
for networks): raise every unfrozen flow together, in proportion to its
weight, until a constraint is tight or a flow reaches its own rate bound;
freeze those flows; repeat.

Everything between two events is constant, so cost grows with the number of
*changes* (a flow starts or ends, a device crosses a state breakpoint), not
with bytes moved.  Changes at one simulated instant are batched into one
recompute; only the connected component of flows that share a constraint
with what changed is recomputed; each component keeps one pending SimPy
event, and stale events are recognised by a token that recomputes retire.

Power meters are linear in constraint loads (idle + sum k x load), hence
piecewise constant too, and are integrated exactly at every change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import simpy

# Recompute after every ordinary event at the same instant (SimPy orders the
# queue by (time, priority, id); URGENT=0, NORMAL=1), so all the flows that
# processes start "now" are allocated together.
_BATCH_PRIORITY = 2
# Relative tolerances: a constraint is tight when its residual is below this
# share of its capacity; a flow is done when its remainder is below this share
# of its amount or would take less than _TIME_EPS seconds.
_REL_EPS = 1e-9
_TIME_EPS = 1e-9


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


class _Token:
    """Identity of one scheduled component event; retired when the component is recomputed."""

    __slots__ = ("constraints", "flows", "valid")

    def __init__(self, flows: list[Flow], constraints: list[Constraint]) -> None:
        self.valid = True
        self.flows = flows
        self.constraints = constraints


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
        self.token: _Token | None = None
        self.start_time = now
        self.end_time: float | None = None
        self.index = index
        self.tag = tag

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


class FlowEngine:
    """Weighted max-min fair fluid flows on a SimPy environment."""

    def __init__(self, env: simpy.Environment, *, record: bool = False) -> None:
        self.env = env
        self.constraints: dict[str, Constraint] = {}
        self.meters: dict[str, Meter] = {}
        self.stats = EngineStats()
        self.record = record
        # (time, flow name, rate) each time a flow's rate changes, when record=True
        self.rate_trace: list[tuple[float, str, float]] = []
        self._dirty: dict[Constraint, None] = {}
        self._dirty_flows: dict[Flow, None] = {}
        self._batch_pending = False
        self._flow_count = 0
        self._active: dict[Flow, None] = {}

    # ---------------------------------------------------------------- building
    def constraint(self, name: str, capacity: float, dynamics: Dynamics | None = None) -> Constraint:
        if name in self.constraints:
            raise EngineError(f"constraint {name!r} defined twice")
        c = Constraint(name, capacity, dynamics, index=len(self.constraints))
        c.last_time = self.env.now
        self.constraints[name] = c
        return c

    def meter(self, name: str, idle_W: float, terms: Iterable[tuple[Constraint, float]] = (), group: str = "") -> Meter:
        if name in self.meters:
            raise EngineError(f"meter {name!r} defined twice")
        m = Meter(name=name, idle_W=float(idle_W), terms=list(terms), group=group, last_time=self.env.now)
        if self.record:
            m.history = []
        for c, _ in m.terms:
            c.meters.append(m)
        m.refresh(self.env.now)
        self.meters[name] = m
        return m

    # ---------------------------------------------------------------- flows
    def start(
        self,
        name: str,
        amount: float,
        usage: Mapping[Constraint, float] | Iterable[tuple[Constraint, float]],
        *,
        weight: float = 1.0,
        max_rate: float | None = None,
        tag: object = None,
    ) -> Flow:
        """Start a flow now; `flow.done` is a SimPy event that fires on delivery."""
        if not (amount >= 0.0) or math.isinf(amount):
            raise EngineError(f"flow {name!r}: amount must be finite and >= 0, found {amount!r}")
        if not weight > 0.0:
            raise EngineError(f"flow {name!r}: weight must be > 0, found {weight!r}")
        pairs = usage.items() if isinstance(usage, Mapping) else usage
        merged: dict[Constraint, float] = {}
        for c, k in pairs:
            if k < 0.0 or math.isnan(k):
                raise EngineError(f"flow {name!r}: coefficient on {c.name!r} must be >= 0, found {k!r}")
            if k > 0.0:
                merged[c] = merged.get(c, 0.0) + float(k)
        if max_rate is not None and not max_rate > 0.0:
            raise EngineError(f"flow {name!r}: max_rate must be > 0, found {max_rate!r}")
        if not merged and max_rate is None:
            raise EngineError(f"flow {name!r} crosses no constraint and has no rate bound: its rate would be infinite")
        self._flow_count += 1
        done = self.env.event()
        flow = Flow(name, amount, merged, weight, max_rate, done, self.env.now, self._flow_count, tag)
        self.stats.flows_started += 1
        if amount == 0.0:
            flow.end_time = self.env.now
            done.succeed(flow)
            self.stats.flows_completed += 1
            return flow
        for c, k in merged.items():
            c.flows[flow] = k
        self._active[flow] = None
        self._dirty_flows[flow] = None
        self._schedule_batch()
        return flow

    def transfer(self, name: str, amount: float, usage, **kwargs) -> simpy.Event:  # noqa: ANN001
        """Start a flow and return the event to `yield` on."""
        return self.start(name, amount, usage, **kwargs).done

    def set_capacity(self, constraint: Constraint, capacity: float) -> None:
        """Change a capacity now (a state change); the allocation follows at this instant."""
        if not (capacity >= 0.0):
            raise EngineError(f"constraint {constraint.name!r}: capacity must be >= 0, found {capacity!r}")
        if capacity == constraint.capacity:
            return
        self._advance_constraint(constraint)
        if constraint.flows:
            # flows must be advanced at their old rates before the rates change
            self._dirty[constraint] = None
            self._schedule_batch()
        constraint.capacity = float(capacity)

    def set_meter_extra(self, meter: Meter, extra_W: float) -> None:
        meter.extra_W = float(extra_W)
        meter.refresh(self.env.now)

    @property
    def active_flows(self) -> list[Flow]:
        return list(self._active)

    def finish(self) -> None:
        """Integrate every meter and every constraint state up to now."""
        now = self.env.now
        for c in self.constraints.values():
            self._advance_constraint(c)
        for f in self._active:
            self._advance_flow(f, now)
        for m in self.meters.values():
            m.integrate_to(now)

    # ---------------------------------------------------------------- internals
    def _schedule_batch(self) -> None:
        if self._batch_pending:
            return
        self._batch_pending = True
        event = simpy.Event(self.env)
        event._ok = True
        event._value = None
        event.callbacks.append(self._run_batch)
        self.env.schedule(event, priority=_BATCH_PRIORITY)

    def _run_batch(self, _event: simpy.Event) -> None:
        self._batch_pending = False
        self.stats.batches += 1
        seeds_c = self._dirty
        seeds_f = self._dirty_flows
        self._dirty = {}
        self._dirty_flows = {}
        seen_c: dict[Constraint, None] = {}
        seen_f: dict[Flow, None] = {}
        for f in seeds_f:
            if f not in seen_f and f.end_time is None:
                self._recompute(*self._component([f], [], seen_f, seen_c))
        for c in seeds_c:
            if c not in seen_c:
                self._recompute(*self._component([], [c], seen_f, seen_c))

    @staticmethod
    def _component(
        flows: list[Flow], constraints: list[Constraint], seen_f: dict[Flow, None], seen_c: dict[Constraint, None]
    ) -> tuple[list[Flow], list[Constraint]]:
        """Breadth-first search over flow <-> constraint adjacency."""
        comp_f: list[Flow] = []
        comp_c: list[Constraint] = []
        stack_f = [f for f in flows if f not in seen_f]
        stack_c = [c for c in constraints if c not in seen_c]
        for f in stack_f:
            seen_f[f] = None
        for c in stack_c:
            seen_c[c] = None
        while stack_f or stack_c:
            while stack_f:
                f = stack_f.pop()
                comp_f.append(f)
                for c in f.usage:
                    if c not in seen_c:
                        seen_c[c] = None
                        stack_c.append(c)
            while stack_c:
                c = stack_c.pop()
                comp_c.append(c)
                for f in c.flows:
                    if f not in seen_f:
                        seen_f[f] = None
                        stack_f.append(f)
        comp_f.sort(key=lambda f: f.index)
        comp_c.sort(key=lambda c: c.index)
        return comp_f, comp_c

    def _advance_flow(self, f: Flow, now: float) -> None:
        elapsed = now - f.last_time
        if elapsed > 0.0 and f.rate > 0.0:
            f.remaining = max(0.0, f.remaining - f.rate * elapsed)
        f.last_time = now

    def _advance_constraint(self, c: Constraint) -> None:
        """Move a constraint's state to now; fire its breakpoint if this step reached it."""
        now = self.env.now
        elapsed = now - c.last_time
        c.last_time = now
        if elapsed <= 0.0 or c.dynamics is None:
            return
        due = c.dynamics.seconds_to_breakpoint(c.load)
        c.dynamics.advance(elapsed, c.load)
        if elapsed >= due - _TIME_EPS:
            self.stats.breakpoints += 1
            c.dynamics.on_breakpoint(self, c)

    def _recompute(self, flows: list[Flow], constraints: list[Constraint]) -> None:
        now = self.env.now
        self.stats.recomputes += 1
        for f in flows:
            self._advance_flow(f, now)
            if f.token is not None:
                f.token.valid = False
        for c in constraints:
            self._advance_constraint(c)
        rates = max_min_fair(flows, constraints)
        for f, r in zip(flows, rates, strict=True):
            if self.record and r != f.rate:
                self.rate_trace.append((now, f.name, r))
            f.rate = r
        touched: dict[Meter, None] = {}
        for c in constraints:
            c.load = sum([k * f.rate for f, k in c.flows.items()])
            for m in c.meters:
                touched[m] = None
        for m in touched:
            m.refresh(now)
        # one event for the whole component: its next completion or breakpoint
        horizon = math.inf
        for f in flows:
            if f.rate > 0.0:
                horizon = min(horizon, f.remaining / f.rate)
        for c in constraints:
            if c.dynamics is not None:
                horizon = min(horizon, c.dynamics.seconds_to_breakpoint(c.load))
        if not flows:
            return
        token = _Token(flows, constraints)
        for f in flows:
            f.token = token
        if math.isinf(horizon):
            return  # stalled (e.g. a zero capacity) until something else changes
        event = self.env.timeout(max(horizon, 0.0))
        event.callbacks.append(lambda _e, token=token: self._on_component_event(token))

    def _on_component_event(self, token: _Token) -> None:
        if not token.valid:
            self.stats.stale_events += 1
            return
        token.valid = False
        self.stats.events += 1
        now = self.env.now
        for c in token.constraints:
            self._advance_constraint(c)
        finished: list[Flow] = []
        for f in token.flows:
            self._advance_flow(f, now)
            if f.remaining <= _REL_EPS * f.amount or (f.rate > 0.0 and f.remaining / f.rate <= _TIME_EPS):
                finished.append(f)
        for f in finished:
            f.remaining = 0.0
            f.end_time = now
            if self.record:
                self.rate_trace.append((now, f.name, 0.0))
            f.rate = 0.0
            for c in f.usage:
                del c.flows[f]
                self._dirty[c] = None
            del self._active[f]
            self.stats.flows_completed += 1
        for c in token.constraints:
            self._dirty[c] = None
        self._schedule_batch()
        for f in finished:
            f.done.succeed(f)


def max_min_fair(flows: list[Flow], constraints: list[Constraint]) -> list[float]:
    """Weighted max-min fair rates by progressive filling.

    Each round raises the fill level t of all unfrozen flows (rate = weight x t)
    until a constraint's residual capacity is exhausted or a flow reaches its
    max_rate, then freezes the flows that hit a bound.  With equal weights this
    is the classic max-min allocation: no flow can be raised without lowering
    another flow whose rate is equal or smaller.
    """
    # Hot path of the engine (every recompute of a component): state lives in
    # lists indexed by position, and every sum is taken in the same order as the
    # dict-based formulation, so the rates are bit-for-bit the same.
    n = len(flows)
    rates = [0.0] * n
    if n == 0:
        return rates
    # unlimited constraints (e.g. a drive with no power cap) only meter load
    limited = [c for c in constraints if not math.isinf(c.capacity)]
    column = {c: j for j, c in enumerate(limited)}
    residual = [c.capacity for c in limited]
    tight = [_REL_EPS * c.capacity for c in limited]
    # weighted demand of unfrozen flows on each constraint, and how many unfrozen flows cross it
    demand = [0.0] * len(limited)
    users = [0] * len(limited)
    edges: list[list[tuple[int, float]]] = []
    get = column.get
    for f in flows:
        w = f.weight
        row = []
        for c, k in f.usage.items():
            j = get(c)
            if j is not None:
                kw = k * w
                demand[j] += kw
                users[j] += 1
                row.append((j, kw))
        edges.append(row)
    live = [j for j in range(len(limited)) if users[j] > 0]
    # flow -> position, in flow order; `capped` is the subset with a rate bound
    unfrozen = dict(zip(flows, range(n), strict=False))
    capped = {f: i for f, i in unfrozen.items() if f.max_rate is not None}
    inf = math.inf
    while unfrozen:
        step = inf
        limiting_c = -1
        limiting_f: Flow | None = None
        for j in live:
            r = residual[j]
            s = (r if r > 0.0 else 0.0) / demand[j]
            if s < step:
                step = s
                limiting_c = j
        for f, i in capped.items():
            s = max(f.max_rate - rates[i], 0.0) / f.weight  # type: ignore[operator]
            if s < step:
                step = s
                limiting_c = -1
                limiting_f = f
        if limiting_c < 0 and limiting_f is None:
            raise EngineError(f"flow {next(iter(unfrozen)).name!r} is unbounded: no constraint limits it")
        for f, i in unfrozen.items():
            rates[i] += f.weight * step
        frozen: dict[Flow, None] = {}
        for j in live:
            residual[j] -= demand[j] * step
            if residual[j] <= tight[j] or j == limiting_c:
                for f in limited[j].flows:
                    if f in unfrozen:
                        frozen[f] = None
        for f, i in capped.items():
            if f is limiting_f or rates[i] >= f.max_rate * (1.0 - _REL_EPS):  # type: ignore[operator]
                frozen[f] = None
        emptied = False
        for f in frozen:
            i = unfrozen.pop(f)
            if f.max_rate is not None:
                del capped[f]
            for j, kw in edges[i]:
                demand[j] -= kw
                users[j] -= 1
                if users[j] == 0:
                    demand[j] = 0.0
                    emptied = True
        if emptied:
            live = [j for j in live if users[j] > 0]
    return rates


def run_until_idle(env: simpy.Environment, engine: FlowEngine, until: float | None = None) -> None:
    """Run the environment, then close the books on every meter."""
    env.run(until=until)
    engine.finish()
    if engine.active_flows and until is None:
        names = ", ".join(f.name for f in engine.active_flows[:5])
        raise EngineError(f"simulation stalled with flows still moving (a zero capacity?): {names}")


Callback = Callable[[simpy.Event], None]
