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
from operator import attrgetter
from typing import Protocol

import numpy as np
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
# Components with at least this many flows are allocated with numpy arrays
# (the same progressive filling, vectorised); smaller ones stay on the pure
# Python path, which is faster below this size (measured with
# benchmarks/run.py row 6: ~20 us of numpy call overhead per round).
VECTOR_MIN_FLOWS = 48
_by_index = attrgetter("index")


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

    __slots__ = ("constraints", "dynamic", "flows", "valid")

    def __init__(self, flows: list[Flow], constraints: list[Constraint], dynamic: list[Constraint]) -> None:
        self.valid = True
        self.flows = flows
        self.constraints = constraints
        self.dynamic = dynamic  # the constraints with Dynamics: the only ones whose state must be advanced


class Flow:
    """An amount moving at a rate through constraints; `done` fires when it is delivered."""

    __slots__ = (
        "_coefs",
        "_cols",
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
        # usage as arrays of constraint indices and coefficients, built on first vectorised allocation
        self._cols: np.ndarray | None = None
        self._coefs: np.ndarray | None = None

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


class _LargeComponent:
    """The latest large connected component, kept exact across flow starts and ends.

    A start or an end in a component of thousands of flows would otherwise cost
    a breadth-first search over every (flow, constraint) edge before the
    allocation even begins.  The cache holds one component as sorted lists and
    as sets, and is updated in O(changed flow) when it provably stays one exact
    component:
      - a flow that crosses the component and otherwise only constraints no
        other flow uses joins it (it brings those constraints along);
      - a flow that crosses nothing of it leaves it untouched;
      - a flow that would merge it with another component drops the cache;
      - when flows end, constraints left without flows leave the component, and
        the rest is still connected if one constraint (the hub: a shared store,
        a drive) is crossed by every remaining flow; otherwise the cache is
        dropped.
    Anything dropped is found again by the search.  Lists are replaced, never
    mutated, because pending component events hold references to them.
    """

    __slots__ = ("arrays", "constraints", "cset", "flows", "fset", "hub")

    def __init__(self, flows: list[Flow], constraints: list[Constraint]) -> None:
        self.arrays: _UsageArrays | None = None  # the flows' usage as numpy arrays, built on first allocation
        self.flows = flows
        self.constraints = constraints
        self.fset = set(flows)
        self.cset = set(constraints)
        self.hub = self._find_hub()

    def _find_hub(self) -> Constraint | None:
        n = len(self.flows)
        for c in self.constraints:
            if len(c.flows) == n:
                return c
        return None

    def add(self, flow: Flow) -> bool:
        """Account for a started flow (already in its constraints' flows); False: drop the cache."""
        touches = False
        fresh: list[Constraint] = []
        for c in flow.usage:
            if c in self.cset:
                touches = True
            elif len(c.flows) == 1:
                fresh.append(c)
            else:
                # crosses a constraint of another component: harmless unless it also crosses this one
                return not any(c2 in self.cset for c2 in flow.usage)
        if not touches:
            return True
        self.flows = [*self.flows, flow]  # creation index grows with every start: still sorted
        self.fset.add(flow)
        if self.arrays is not None:
            self.arrays = _arrays_appended(self.arrays, flow)
        if fresh:
            self.constraints = sorted([*self.constraints, *fresh], key=_by_index)
            self.cset.update(fresh)
        if self.hub is None or self.hub not in flow.usage:
            self.hub = self._find_hub()
        return True

    def remove(self, finished: list[Flow]) -> bool:
        """Account for flows that ended (already out of their constraints' flows); False: drop the cache."""
        gone = [f for f in finished if f in self.fset]
        if not gone:
            return True
        self.fset.difference_update(gone)
        if not self.fset:
            return False
        gone_set = set(gone)
        if self.arrays is not None:
            self.arrays = _arrays_kept(self.arrays, np.array([f not in gone_set for f in self.flows], dtype=bool))
        self.flows = [f for f in self.flows if f not in gone_set]
        empty = {c for f in gone for c in f.usage if not c.flows}
        if empty:
            self.cset.difference_update(empty)
            self.constraints = [c for c in self.constraints if c not in empty]
        hub = self.hub
        return hub is not None and hub in self.cset and len(hub.flows) == len(self.flows)


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
        self._large: _LargeComponent | None = None

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
        if self._large is not None and not self._large.add(flow):
            self._large = None
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

    def sync(self, constraint: Constraint) -> None:
        """Bring a constraint's state (its Dynamics) forward to now, e.g. before reading a drive's fill.

        Loads are constant between events, so advancing at the current load is
        exact; a breakpoint reached on the way fires as it would at an event."""
        self._advance_constraint(constraint)

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
        seen_c: set[Constraint] = set()
        seen_f: set[Flow] = set()
        large = self._large
        large_done = False
        for f in seeds_f:
            if f in seen_f or f.end_time is not None:
                continue
            if large is not None and f in large.fset:
                if not large_done:
                    large_done = True
                    self._recompute(large.flows, large.constraints, large)
                continue
            self._search_and_recompute([f], [], seen_f, seen_c)
        for c in seeds_c:
            if c in seen_c:
                continue
            if large is not None and c in large.cset:
                if not large_done:
                    large_done = True
                    self._recompute(large.flows, large.constraints, large)
                continue
            self._search_and_recompute([], [c], seen_f, seen_c)

    def _search_and_recompute(self, flows: list[Flow], constraints: list[Constraint], seen_f: set[Flow], seen_c: set[Constraint]) -> None:
        comp_f, comp_c = self._component(flows, constraints, seen_f, seen_c)
        large = None
        if len(comp_f) >= VECTOR_MIN_FLOWS:
            large = self._large = _LargeComponent(comp_f, comp_c)
        self._recompute(comp_f, comp_c, large)

    @staticmethod
    def _component(
        flows: list[Flow], constraints: list[Constraint], seen_f: set[Flow], seen_c: set[Constraint]
    ) -> tuple[list[Flow], list[Constraint]]:
        """Breadth-first search over flow <-> constraint adjacency (large components are mostly
        served by the _LargeComponent cache instead); sorted by creation index."""
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
        comp_f.sort(key=_by_index)
        comp_c.sort(key=_by_index)
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

    def _recompute(self, flows: list[Flow], constraints: list[Constraint], large: _LargeComponent | None = None) -> None:
        now = self.env.now
        self.stats.recomputes += 1
        for f in flows:
            # _advance_flow, inlined: this loop runs for every flow of the component at every change
            elapsed = now - f.last_time
            if elapsed > 0.0 and f.rate > 0.0:
                left = f.remaining - f.rate * elapsed
                f.remaining = left if left > 0.0 else 0.0
            f.last_time = now
            if f.token is not None:
                f.token.valid = False
        # only constraints with Dynamics have a state to advance (last_time is read by nothing else)
        dynamic = [c for c in constraints if c.dynamics is not None]
        for c in dynamic:
            self._advance_constraint(c)
        rates, loads = _allocate(flows, constraints, large)
        record = self.record
        token = _Token(flows, constraints, dynamic)
        # one event for the whole component: its next completion or breakpoint
        horizon = math.inf
        for f, r in zip(flows, rates, strict=True):
            if record and r != f.rate:
                self.rate_trace.append((now, f.name, r))
            f.rate = r
            f.token = token
            if r > 0.0:
                t = f.remaining / r
                if t < horizon:
                    horizon = t
        touched: dict[Meter, None] = {}
        if loads is None:
            loads = [sum([k * f.rate for f, k in c.flows.items()]) for c in constraints]
        for c, load in zip(constraints, loads, strict=True):
            c.load = load
            if c.meters:
                touched.update(dict.fromkeys(c.meters))
        for m in touched:
            m.refresh(now)
        for c in dynamic:
            horizon = min(horizon, c.dynamics.seconds_to_breakpoint(c.load))  # type: ignore[union-attr]
        if not flows:
            return
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
        for c in token.dynamic:
            self._advance_constraint(c)
        finished: list[Flow] = []
        for f in token.flows:
            elapsed = now - f.last_time
            if elapsed > 0.0 and f.rate > 0.0:
                left = f.remaining - f.rate * elapsed
                f.remaining = left if left > 0.0 else 0.0
            f.last_time = now
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
        if finished and self._large is not None and not self._large.remove(finished):
            self._large = None
        self._dirty.update(dict.fromkeys(token.constraints))
        self._schedule_batch()
        for f in finished:
            f.done.succeed(f)


_UsageArrays = tuple  # (constraint creation indices, coefficients, entries per flow, weights, max rates)


def _flow_arrays(f: Flow) -> tuple[np.ndarray, np.ndarray]:
    if f._cols is None:
        f._cols = np.array([c.index for c in f.usage], dtype=np.int64)
        f._coefs = np.array(list(f.usage.values()), dtype=np.float64)
    return f._cols, f._coefs  # type: ignore[return-value]


def _usage_arrays(flows: list[Flow]) -> _UsageArrays:
    """The flows' usage as flat arrays, in flow order (one block of entries per flow)."""
    pairs = [_flow_arrays(f) for f in flows]
    return (
        np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, dtype=np.int64),
        np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0),
        np.array([len(p[0]) for p in pairs], dtype=np.int64),
        np.array([f.weight for f in flows], dtype=np.float64),
        np.array([math.inf if f.max_rate is None else f.max_rate for f in flows], dtype=np.float64),
    )


def _arrays_appended(arrays: _UsageArrays, f: Flow) -> _UsageArrays:
    cols, coefs = _flow_arrays(f)
    all_cols, all_coefs, lengths, weight, max_rate = arrays
    return (
        np.concatenate([all_cols, cols]),
        np.concatenate([all_coefs, coefs]),
        np.append(lengths, len(cols)),
        np.append(weight, f.weight),
        np.append(max_rate, math.inf if f.max_rate is None else f.max_rate),
    )


def _arrays_kept(arrays: _UsageArrays, keep: np.ndarray) -> _UsageArrays:
    all_cols, all_coefs, lengths, weight, max_rate = arrays
    entries = np.repeat(keep, lengths)
    return all_cols[entries], all_coefs[entries], lengths[keep], weight[keep], max_rate[keep]


def _allocate(
    flows: list[Flow], constraints: list[Constraint], large: _LargeComponent | None = None
) -> tuple[list[float], list[float] | None]:
    """Rates of `flows`, and the load of each of `constraints` when the vectorised path computed them.

    Large components go to the numpy formulation when `constraints` holds every
    constraint the flows cross, with distinct creation indices (true of every
    component the engine builds); anything else takes the reference path.
    `large`: the cached component these lists belong to, whose arrays are reused."""
    if len(flows) >= VECTOR_MIN_FLOWS:
        arrays = None
        if large is not None:
            if large.arrays is None:
                large.arrays = _usage_arrays(flows)
            arrays = large.arrays
        out = _max_min_fair_vector(flows, constraints, arrays)
        if out is not None:
            return out
    return max_min_fair(flows, constraints), None


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


def _max_min_fair_vector(
    flows: list[Flow], constraints: list[Constraint], arrays: _UsageArrays | None = None
) -> tuple[list[float], list[float]] | None:
    """max_min_fair on numpy arrays, for large components; also returns every constraint's load.

    The same progressive filling round for round: the same step (first
    constraint with the smallest residual/demand, then a flow bound that is
    strictly smaller), the same freezing tests, the same tolerances.  Sums over
    flows run in flow order as in the loop version (np.bincount accumulates in
    input order), so rates agree with max_min_fair to the last few ulps: only
    the order in which frozen flows' demand is taken off differs.  Returns None
    when `constraints` does not index the flows' constraints uniquely; the
    caller then uses max_min_fair.
    """
    n = len(flows)
    m = len(constraints)
    index = np.array([c.index for c in constraints], dtype=np.int64)
    if m == 0 or (m > 1 and not bool(np.all(index[1:] > index[:-1]))) or index[0] < 0:
        return None  # not sorted by distinct creation index: not a component built by the engine
    cols_global, coefs, lengths, weight, max_rate = _usage_arrays(flows) if arrays is None else arrays
    rows = np.repeat(np.arange(n), lengths)
    # creation index -> position in `constraints`; -1 marks a constraint that is not in the list
    position = np.full(int(max(index[-1], cols_global.max(initial=0))) + 1, -1, dtype=np.int64)
    position[index] = np.arange(m)
    cols = position[cols_global]
    if cols.size and int(cols.min()) < 0:
        return None  # a flow crosses a constraint outside the list
    capacity = np.array([c.capacity for c in constraints], dtype=np.float64)
    # unlimited constraints (e.g. a drive with no power cap) only meter load
    on_limited = np.isfinite(capacity)[cols]
    e_rows = rows[on_limited]
    e_cols = cols[on_limited]
    e_kw = coefs[on_limited] * weight[e_rows]
    demand = np.bincount(e_cols, weights=e_kw, minlength=m)
    users = np.bincount(e_cols, minlength=m)
    residual = capacity.copy()
    tight = _REL_EPS * capacity
    rates = np.zeros(n)
    unfrozen = np.ones(n, dtype=bool)
    capped = np.isfinite(max_rate)
    inf = math.inf
    remaining = n
    while remaining:
        live = users > 0
        step = inf
        limiting_c = -1
        limiting_f = -1
        if live.any():
            live_idx = np.flatnonzero(live)
            s = np.maximum(residual[live_idx], 0.0) / demand[live_idx]
            j = int(np.argmin(s))
            if s[j] < step:
                step = float(s[j])
                limiting_c = int(live_idx[j])
        bounded = capped & unfrozen
        if bounded.any():
            bounded_idx = np.flatnonzero(bounded)
            sf = np.maximum(max_rate[bounded_idx] - rates[bounded_idx], 0.0) / weight[bounded_idx]
            i = int(np.argmin(sf))
            if sf[i] < step:
                step = float(sf[i])
                limiting_c = -1
                limiting_f = int(bounded_idx[i])
        if limiting_c < 0 and limiting_f < 0:
            raise EngineError(f"flow {flows[int(np.flatnonzero(unfrozen)[0])].name!r} is unbounded: no constraint limits it")
        rates[unfrozen] += weight[unfrozen] * step
        residual[live] -= demand[live] * step
        saturated = live & (residual <= tight)
        if limiting_c >= 0:
            saturated[limiting_c] = True
        frozen = np.zeros(n, dtype=bool)
        frozen[e_rows[saturated[e_cols]]] = True
        frozen |= bounded & (rates >= max_rate * (1.0 - _REL_EPS))
        if limiting_f >= 0:
            frozen[limiting_f] = True
        frozen &= unfrozen
        count = int(frozen.sum())
        remaining -= count
        unfrozen &= ~frozen
        if remaining and count:
            gone = frozen[e_rows]
            demand -= np.bincount(e_cols[gone], weights=e_kw[gone], minlength=m)
            users -= np.bincount(e_cols[gone], minlength=m)
            demand[users == 0] = 0.0
    loads = np.bincount(cols, weights=coefs * rates[rows], minlength=m)
    return rates.tolist(), loads.tolist()


def run_until_idle(env: simpy.Environment, engine: FlowEngine, until: float | None = None) -> None:
    """Run the environment, then close the books on every meter."""
    env.run(until=until)
    engine.finish()
    if engine.active_flows and until is None:
        names = ", ".join(f.name for f in engine.active_flows[:5])
        raise EngineError(f"simulation stalled with flows still moving (a zero capacity?): {names}")


Callback = Callable[[simpy.Event], None]
