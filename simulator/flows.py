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

The parts live in simulator/flow_network.py, the allocation in
simulator/maxmin.py, large components as classes of symmetric flows in
simulator/flow_classes.py; this module moves them forward in time.

Power meters are linear in constraint loads (idle + sum k x load), plus
floors drawn while a constraint carries any load (flow_network.Meter), hence
piecewise constant too, and are integrated exactly at every change.  A
constraint may have a Watcher (a device's power policy) that the engine tells
when work arrives and when it is gone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import partial

import simpy
from iowatt.simulator import maxmin
from iowatt.simulator.flow_classes import ClassedComponent, join
from iowatt.simulator.flow_network import (
    REL_EPS,
    TIME_EPS,
    ComponentToken,
    Constraint,
    Dynamics,
    EngineError,
    EngineStats,
    Flow,
    Meter,
    Watcher,
    draw_sequence_number,
    fewer_young_collections,
    queue_at,
    search_component,
    triggered_event,
)

__all__ = ["Constraint", "Dynamics", "EngineError", "EngineStats", "Flow", "FlowEngine", "Meter", "Watcher", "run_until_idle"]

# Recompute after every ordinary event at the same instant (SimPy orders the queue by (time, priority, id);
# URGENT=0, NORMAL=1), so all the flows that processes start "now" are allocated together.
_BATCH_PRIORITY = 2

# Components of at least this many flows are held as classes (simulator/flow_classes.py); smaller ones are
# allocated flow by flow as before issue 33, bit for bit.  A speed setting, not a model value (results do not
# depend on it): where the vectorised allocation takes over (maxmin.VECTOR_MIN_FLOWS, measured on row 6); any value
# gives the same results to 1e-9 (plausible range 1..a few hundred: tests/test_flows_fast_paths.py runs it at 1).
CLASS_MIN_FLOWS = 48


class FlowEngine:
    """Weighted max-min fair fluid flows on a SimPy environment.

    Lifecycle: build (constraint, meter) -> run (start/transfer, set_capacity,
    then `run`, which runs the environment and settles) -> read.  Between
    events the engine keeps flows, constraint states and meters at the instant
    they last changed; `settle` brings all of them to now and is the point
    where results (energy, bytes delivered, drive state) are read.  It is
    idempotent at one instant, so the run driver (simulator/run.py) settles
    once more after a workload returns at no cost.  `sync` brings one
    constraint's state forward when a workload needs one drive's state now.
    """

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
        self._batch_event: simpy.Event | None = None
        self._batch_callbacks = [self._run_batch]  # never changed: Environment.step only reads it
        self._flow_count = 0
        self._active: dict[Flow, None] = {}
        self._dirty_classed: dict[ClassedComponent, None] = {}
        # classes need no per-flow rate trace, so a recording run allocates flow by flow
        self.class_min_flows = math.inf if record else CLASS_MIN_FLOWS

    # ---------------------------------------------------------------- building
    def constraint(self, name: str, capacity: float, dynamics: Dynamics | None = None) -> Constraint:
        if name in self.constraints:
            raise EngineError(f"constraint {name!r} defined twice")
        c = Constraint(name, capacity, dynamics, index=len(self.constraints))
        c.last_time = self.env.now
        self.constraints[name] = c
        return c

    def meter(
        self,
        name: str,
        idle_W: float,
        terms: Iterable[tuple[Constraint, float]] = (),
        group: str = "",
        *,
        busy_terms: Iterable[tuple[Constraint, float]] = (),
        labels: tuple[str, ...] | None = None,
    ) -> Meter:
        """A power meter (flow_network.Meter); `labels` names its parts to keep their energies apart."""
        if name in self.meters:
            raise EngineError(f"meter {name!r} defined twice")
        m = Meter(name=name, idle_W=float(idle_W), terms=list(terms), group=group, busy_terms=list(busy_terms), last_time=self.env.now)
        if labels is not None:
            if len(labels) != 2 + len(m.terms) + len(m.busy_terms):
                raise EngineError(f"meter {name!r}: one label per part (idle, extra, terms, busy terms), found {len(labels)}")
            m.labels = labels
            m.parts_J = [0.0] * len(labels)
        if self.record:
            m.history = []
        for c, _ in [*m.terms, *m.busy_terms]:
            if m not in c.meters:
                c.meters = (*c.meters, m)
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
            if k > 0.0:
                merged[c] = merged.get(c, 0.0) + float(k)
            elif k != 0.0:  # negative or NaN
                raise EngineError(f"flow {name!r}: coefficient on {c.name!r} must be >= 0, found {k!r}")
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
        watched: list[Constraint] = []
        for c, k in merged.items():
            c.flows[flow] = k
            if c.watcher is not None:
                watched.append(c)
        for c in watched:
            c.watcher.flow_arrives(self, c)  # type: ignore[union-attr]
        self._active[flow] = None
        joined, dissolve = join(flow)
        if joined is not None:
            self._dirty_classed[joined] = None
        else:
            for comp in dissolve:
                self._dissolve(comp)
            self._dirty_flows[flow] = None
        self._schedule_batch()
        return flow

    def _dissolve(self, comp: ClassedComponent) -> None:
        self._dirty_classed.pop(comp, None)
        self._dirty.update(dict.fromkeys(comp.dissolve()))
        self._schedule_batch()

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
        if isinstance(constraint.component, ClassedComponent):
            constraint.component.mark(constraint)
            self._dirty_classed[constraint.component] = None
            self._schedule_batch()
        elif constraint.flows:
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

    def set_meter_idle(self, meter: Meter, idle_W: float, at: float | None = None) -> None:
        """A component's state power changes now, or at `at` (not before the meter's last change, not after now)
        when a device state catches up with changes it planned while idle; energy before it keeps the old power."""
        when = self.env.now if at is None else at
        if not idle_W >= 0.0:
            raise EngineError(f"meter {meter.name!r}: idle power must be >= 0, found {idle_W!r}")
        if not meter.last_time - TIME_EPS <= when <= self.env.now + TIME_EPS:
            raise EngineError(f"meter {meter.name!r}: a state change at {when!r} s is outside [{meter.last_time!r}, {self.env.now!r}]")
        meter.idle_W = float(idle_W)
        meter.refresh(max(when, meter.last_time))

    @property
    def active_flows(self) -> list[Flow]:
        return list(self._active)

    def run(self, until: float | simpy.Event | None = None) -> None:
        """Run the environment (SimPy's `until`), then settle: results are readable after it."""
        with fewer_young_collections():
            self.env.run(until=until)
        self.settle()

    def settle(self) -> None:
        """Bring every constraint state, flow and meter up to now: the point where results are read."""
        now = self.env.now
        for c in self.constraints.values():
            self._advance_constraint(c)
        for f in self._active:
            if f.group is None:
                self._advance_flow(f, now)
        for comp in {c.component for c in self.constraints.values() if isinstance(c.component, ClassedComponent)}:
            comp.settle_loads()
        for m in self.meters.values():
            m.integrate_to(now)

    # ---------------------------------------------------------------- internals
    def _schedule_batch(self) -> None:
        if self._batch_pending:
            return
        self._batch_pending = True
        # A triggered event at a priority of our own: Event.succeed() and Timeout always schedule at NORMAL, which
        # would run the batch before other events of this instant (flow_network.triggered_event).  One event serves
        # every batch: Environment.step takes its callbacks and sets them to None, so giving them back re-arms it.
        event = self._batch_event
        if event is None:
            event = self._batch_event = triggered_event(self.env)
        event.callbacks = self._batch_callbacks
        self.env.schedule(event, priority=_BATCH_PRIORITY)

    def _run_batch(self, _event: simpy.Event) -> None:
        self._batch_pending = False
        self.stats.batches += 1
        # what changed until now; what this batch changes goes to the next one (an empty set stays in place, read
        # here as an empty tuple: most batches have one kind of change)
        seeds_c: dict[Constraint, None] | tuple[()] = self._dirty or ()
        seeds_f: dict[Flow, None] | tuple[()] = self._dirty_flows or ()
        classed: dict[ClassedComponent, None] | tuple[()] = self._dirty_classed or ()
        self._dirty = {} if seeds_c else self._dirty
        self._dirty_flows = {} if seeds_f else self._dirty_flows
        self._dirty_classed = {} if classed else self._dirty_classed
        for comp in classed:
            self._recompute_classed(comp)
        if not seeds_f and not seeds_c:
            return
        seen_c: set[Constraint] = set()
        seen_f: set[Flow] = set()
        for f in seeds_f:
            if f in seen_f or f.end_time is not None or f.group is not None:
                continue
            self._search_and_recompute([f], [], seen_f, seen_c)
        for c in seeds_c:
            if c in seen_c or c.component is not None:
                continue
            if not c.flows and c.dynamics is None:
                # a constraint its last flow left (a GPU's own link): what _recompute([], [c]) does, without the search
                seen_c.add(c)
                self.stats.recomputes += 1
                c.load = 0.0
                for m in c.meters:
                    m.refresh(self.env.now)
                continue
            self._search_and_recompute([], [c], seen_f, seen_c)

    def _search_and_recompute(self, flows: list[Flow], constraints: list[Constraint], seen_f: set[Flow], seen_c: set[Constraint]) -> None:
        comp_f, comp_c = search_component(flows, constraints, seen_f, seen_c)
        if len(comp_f) >= self.class_min_flows:
            now = self.env.now
            for f in comp_f:
                self._advance_flow(f, now)
                if f.token is not None:
                    f.token.valid = False
                    f.token = None
            comp = ClassedComponent(comp_f, comp_c, lambda: self.env.now)
            comp.wake = partial(self._on_classed_event, comp)
            self._recompute_classed(comp)
            return
        self._recompute(comp_f, comp_c)

    _component = staticmethod(search_component)  # the tests' name for it

    def _advance_flow(self, f: Flow, now: float) -> None:
        elapsed = now - f.last_time
        if elapsed > 0.0 and f._rate > 0.0:
            f._remaining = max(0.0, f._remaining - f._rate * elapsed)
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
        if elapsed >= due - TIME_EPS:
            self.stats.breakpoints += 1
            c.dynamics.on_breakpoint(self, c)

    def _recompute(self, flows: list[Flow], constraints: list[Constraint]) -> None:
        now = self.env.now
        self.stats.recomputes += 1
        for f in flows:
            # _advance_flow, inlined: this loop runs for every flow of the component at every change
            elapsed = now - f.last_time
            if elapsed > 0.0 and f._rate > 0.0:
                left = f._remaining - f._rate * elapsed
                f._remaining = left if left > 0.0 else 0.0
            f.last_time = now
            if f.token is not None:
                f.token.valid = False
        # only constraints with Dynamics have a state to advance (last_time is read by nothing else)
        dynamic = [c for c in constraints if c.dynamics is not None]
        for c in dynamic:
            self._advance_constraint(c)
        rates, loads = maxmin.max_min_fair(flows, constraints)
        record = self.record
        token = ComponentToken(flows, constraints, dynamic)
        # one event for the whole component: its next completion or breakpoint
        horizon = math.inf
        for f, r in zip(flows, rates, strict=True):
            if record and r != f._rate:
                self.rate_trace.append((now, f.name, r))
            f._rate = r
            f.token = token
            if r > 0.0:
                t = f._remaining / r
                if t < horizon:
                    horizon = t
        touched: dict[Meter, None] = {}
        if loads is None:
            loads = [sum([k * f._rate for f, k in c.flows.items()]) for c in constraints]
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

    def _recompute_classed(self, comp: ClassedComponent) -> None:
        if comp.count == 0:
            return
        now = self.env.now
        self.stats.recomputes += 1
        if comp.dynamic:
            for c in list(comp.dynamic):
                self._advance_constraint(c)
        horizon, meters = comp.recompute(now)
        for m in meters:
            m.refresh(now)
        for c in comp.dynamic:
            horizon = min(horizon, c.dynamics.seconds_to_breakpoint(c.load))  # type: ignore[union-attr]
        if math.isinf(horizon):
            comp.pending = None  # an event scheduled before is void
            return  # stalled until something else changes
        delay = max(horizon, 0.0)
        due = now + delay  # the time SimPy gives a Timeout of this delay made now (Environment.schedule)
        if comp.pending is not None and comp.pending_at <= due:
            # The wake-up queued comes no later: keep it (a start slows every flow, and a new event each time left one
            # stale event queued per start), with the sequence number a new event would take now: at its own time it
            # re-queues itself under it (_on_classed_event), where that new event would have been (time and order).
            comp.due = due
            comp.due_eid = draw_sequence_number(self.env)
            comp.exact = False
            return
        event = comp.pending = self.env.timeout(delay)
        comp.pending_at = due
        comp.exact = True
        event.callbacks.append(comp.wake)

    def _on_classed_event(self, comp: ClassedComponent, event: simpy.Event) -> None:
        if event is not comp.pending:
            self.stats.stale_events += 1
            return
        if not comp.exact:  # kept past its time (_recompute_classed): now to where its replacement would be
            self.stats.stale_events += 1
            comp.pending = queue_at(self.env, comp.due, comp.due_eid, comp.wake)
            comp.pending_at = comp.due
            comp.exact = True
            return
        comp.pending = None
        self.stats.events += 1
        if comp.dynamic:
            for c in list(comp.dynamic):
                self._advance_constraint(c)
        finished, emptied = comp.finish()
        for f in finished:
            del self._active[f]
        self.stats.flows_completed += len(finished)
        for c in emptied:  # allocated alone at the batch: loads to zero, meters refreshed, as _recompute([], [c])
            self._dirty[c] = None
            if c.watcher is not None:
                c.watcher.drained(self, c)
        if comp.count == 0:
            self._dirty_classed.pop(comp, None)
        elif not comp.connected():
            self._dissolve(comp)
        else:
            self._dirty_classed[comp] = None
        self._schedule_batch()
        for f in finished:
            f.done.succeed(f)

    def _on_component_event(self, token: ComponentToken) -> None:
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
            if elapsed > 0.0 and f._rate > 0.0:
                left = f._remaining - f._rate * elapsed
                f._remaining = left if left > 0.0 else 0.0
            f.last_time = now
            if f._remaining <= REL_EPS * f.amount or (f._rate > 0.0 and f._remaining / f._rate <= TIME_EPS):
                finished.append(f)
        for f in finished:
            f._remaining = 0.0
            f.end_time = now
            if self.record:
                self.rate_trace.append((now, f.name, 0.0))
            f._rate = 0.0
            for c in f.usage:
                del c.flows[f]
                self._dirty[c] = None
                if c.watcher is not None and not c.flows:
                    c.watcher.drained(self, c)
            del self._active[f]
            self.stats.flows_completed += 1
        self._dirty.update(dict.fromkeys(token.constraints))
        self._schedule_batch()
        for f in finished:
            f.done.succeed(f)


def run_until_idle(env: simpy.Environment, engine: FlowEngine, until: float | None = None) -> None:
    """Run the environment, then close the books on every meter."""
    engine.run(until)
    if engine.active_flows and until is None:
        names = ", ".join(f.name for f in engine.active_flows[:5])
        raise EngineError(f"simulation stalled with flows still moving (a zero capacity?): {names}")
