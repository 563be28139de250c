"""A large component held as classes of symmetric flows: a start or an end changes a count, not every flow.

Max-min fairness gives flows that are interchangeable one rate (permute them
and the allocation is the same; it is unique, so their rates are equal).  Two
flows are interchangeable when they have the same weight, the same usage of
the constraints others also cross, and the same bound of their own.  A
constraint one flow alone crosses (a GPU's own PCIe link) is, for max-min,
only a bound on that flow's rate (capacity / coefficient); a constraint that
only the flows of one class cross (a node's NIC shared by its 8 GPUs) is a
bound of capacity / (coefficient x count) on each of them.  So:

  - a *class* holds flows with the same (weight, own bound, shared usage);
  - an *entry* holds classes with the same (weight, per-flow bound, usage of
    constraints several classes cross) and is one row of the allocation
    (maxmin.progressive_filling_rows), with the entry's flow count as multiplicity.

In the row-6 cluster that is a few entries (one per number of active GPUs on a
node) for 16,384 flows.  Only constraints whose load nothing reads during a
run (Constraint.private_able) are folded into bounds; their loads are brought
up to date by `settle_loads`.

Time: an entry's flows all move at its rate, so it keeps one progress
(integral of its rate); a class keeps `base` (its progress = base + its
entry's), and a flow keeps `offset` = remaining + its class's progress, in a
heap per class, and each entry keeps a heap of its classes' smallest offsets.
Moving a class between entries, or a flow between classes, rebases one number.
The earliest completion is the smallest (offset - progress) / rate over entries.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

from iowatt.simulator.class_entries import Entry, FlowClass, Key, SharedUsage, Usages, class_key, fill_one_group, one_level, set_rates
from iowatt.simulator.flow_network import REL_EPS, TIME_EPS, Constraint, Flow, Meter, by_index
from iowatt.simulator.maxmin import Row, RowGroup, progressive_filling_rows

# A component's usage tables (class_entries.Usages) are pruned to what live keys hold when they hold more than
# USAGE_TABLE_FACTOR x (classes + entries) + USAGE_TABLE_SLACK items.  A memory bound on a cache, not a model value:
# results are the same for any values (a live usage stays the one object of its content:
# tests/test_flow_classes_bookkeeping.py).  Chosen: flows that list their constraints in one order need 2 items per
# live key (row 6: 2,049 usages for 2,048 classes; one prune, late, when few classes are left); 4 leaves room for a
# second order, and a prune, a pass over live keys, then costs a constant per item added; 256 = small components
# are left alone.  Plausible 2..16 and 0..10,000.
USAGE_TABLE_FACTOR = 4
USAGE_TABLE_SLACK = 256


class Layout(NamedTuple):
    """The solver's view of a component's groups (ClassedComponent._solver_layout)."""

    usage: list[tuple[tuple[int, float], ...]]                   # per group: (column, coefficient)
    capacity: list[float]                                        # per column
    single: list[tuple[Constraint, int, float]]                   # constraints one group crosses: (group, coefficient)
    multiple: list[tuple[Constraint, tuple[tuple[int, float], ...]]]  # the others: their (group, coefficient) pairs
    meters: list[Meter]                                          # of those constraints
    share: float  # one group: the most its flows move together (min capacity / coefficient); NaN otherwise
    entries: list[Entry]  # one group: its entries, in the group's order; empty otherwise


def join(flow: Flow) -> tuple[ClassedComponent | None, list[ClassedComponent]]:
    """(the classed component a started flow joins, or None; those it would join to others, to dissolve).
    It joins one that it crosses when its other constraints are used by no other flow (and is added to it here, as
    ClassedComponent.add does, in the same pass: a start's hot path); the search then finds whatever a dissolved
    component's flows form with the rest."""
    first: ClassedComponent | None = None
    others: dict[ClassedComponent, None] = {}
    foreign = False
    marks: list[Constraint] = []  # in usage order: constraints in no component (to take), or folded into a bound of `first`
    for c in flow.usage:
        comp = c.component
        if comp is None:
            if len(c.flows) > 1:
                foreign = True
            else:
                marks.append(c)
        elif comp is first:
            if c in first.solo or c in first.owner:
                marks.append(c)
        elif isinstance(comp, ClassedComponent):
            if first is None:
                first = comp
                if c in comp.solo or c in comp.owner:
                    marks.append(c)
            else:
                others[comp] = None
    if first is None:
        return None, []
    if others or foreign:
        return None, [first, *others]
    first._new.append(flow)
    first.count += 1
    touched = first._touched
    for c in marks:
        if c.component is None:
            first._take(c)
        else:
            # a constraint folded into a bound is shared now: only these change a bound (recompute)
            touched[c] = None
    if first.hub is not None and first.hub not in flow.usage:
        first.hub = first._find_hub()
    return first, []


class ClassedComponent:
    """One connected component of the flow network, held as classes and entries (module docstring).

    It stays one exact component: a flow that crosses it and otherwise only
    constraints no other flow uses joins it (FlowEngine.start); when flows end it stays connected while
    one constraint (the hub) is crossed by every flow left; otherwise the engine dissolves it."""

    def __init__(self, flows: list[Flow], constraints: list[Constraint], now: Callable[[], float]) -> None:
        self.now = now
        self.count = 0
        self.constraints: dict[Constraint, None] = {}
        self.dynamic: dict[Constraint, None] = {}
        self.classes: dict[Key, FlowClass] = {}
        self.entries: dict[Key, Entry] = {}
        self.groups: dict[SharedUsage, dict[Entry, None]] = {}  # entries by shared usage: one solver group each
        self.usages = Usages()
        self._layout: Layout | None = None
        self.owner: dict[Constraint, FlowClass] = {}   # constraint folded into one class's bound -> that class
        self.solo: dict[Constraint, Flow] = {}         # constraint folded into one flow's own bound -> that flow
        # the engine's event for this component's next change (only the latest is live), its callback and its time;
        # when it was kept past a later allocation (FlowEngine._recompute_classed, not `exact`), that allocation's
        # due time and the queue sequence number it drew
        self.pending: object | None = None
        self.wake: Callable[[object], None] | None = None
        self.pending_at = 0.0
        self.exact = True
        self.due = 0.0
        self.due_eid = 0
        self._new: list[Flow] = []
        self._changed: dict[FlowClass, None] = {}
        self._touched: dict[Constraint, None] = {}
        self._emptied: list[Entry] = []  # entries their last class left since the last recompute
        self.hub: Constraint | None = None
        self._largest = 0  # the most flows any class has held: an upper bound on every class's count
        self._advanced_to = -math.inf  # the time _advance last brought every entry to
        for c in constraints:
            self._take(c)
        for f in flows:
            self.add(f)
        self.hub = self._find_hub()

    # ------------------------------------------------------------------ membership
    def _take(self, c: Constraint) -> None:
        c.component = self
        self.constraints[c] = None
        self._touched[c] = None
        if c.dynamics is not None:
            self.dynamic[c] = None

    def _find_hub(self) -> Constraint | None:
        for c in self.constraints:
            if len(c.flows) == self.count:
                return c
        return None

    def add(self, f: Flow) -> None:
        """A flow joins (already in its constraints' flows, its own state current): allocated at the next recompute."""
        self._new.append(f)
        self.count += 1
        owner = self.owner
        for c in f.usage:
            if c.component is not self:
                self._take(c)
            elif c in self.solo or c in owner:
                # a constraint folded into a bound is shared now: only these change a bound (recompute)
                self._touched[c] = None
        if self.hub is not None and self.hub not in f.usage:
            self.hub = self._find_hub()

    def mark(self, c: Constraint) -> None:
        """A constraint's capacity changed."""
        self._touched[c] = None
        self._layout = None

    def finish(self) -> tuple[list[Flow], list[Constraint]]:
        """The flows done now (the event this component scheduled), in creation order, taken out of their classes
        and constraints; and the constraints left without flows, which leave the component."""
        now = self.now()
        self._advance(now)
        finished: list[Flow] = []
        changed = self._changed
        heappop = heapq.heappop
        for e in self.entries.values():
            heap, progress, rate = e.heap, e.progress, e.rate
            while heap:  # Entry.top, inlined: this runs for every entry at every end
                value, stamp, _, cls = heap[0]
                if cls.entry is not e or cls.stamp != stamp:
                    heappop(heap)
                    continue
                flows = cls.heap
                while True:  # FlowClass.top, inlined; a class in an entry has a flow
                    offset, _, f = flows[0]
                    if f.group is cls and f.offset == offset:
                        break
                    heappop(flows)
                remaining = value - progress
                if not (remaining <= REL_EPS * f.amount or (rate > 0.0 and remaining / rate <= TIME_EPS)):
                    break
                heappop(flows)
                cls.discard(f)
                changed[cls] = None
                e.push(cls)
                finished.append(f)
        if len(finished) > 1:
            finished.sort(key=by_index)
        self.count -= len(finished)
        emptied: list[Constraint] = []
        touched = self._touched
        largest = self._largest
        for f in finished:
            f._remaining = 0.0
            f._rate = 0.0
            f.end_time = now
            for c in f.usage:
                del c.flows[f]
                left = len(c.flows)
                if left <= largest:
                    # more flows than any class holds: folded into no bound, so recompute has nothing to do for it
                    # (row 6: the store's 12 constraints at every end); one that gained a flow since was touched then
                    touched[c] = None
                if not left:
                    emptied.append(c)
                    c.component = None
                    self.solo.pop(c, None)
                    self.owner.pop(c, None)
                    del self.constraints[c]
                    self.dynamic.pop(c, None)
                    self._touched.pop(c, None)
        return finished, emptied

    def connected(self) -> bool:
        """Still provably one component: a hub crosses every flow left."""
        hub = self.hub
        return hub is not None and hub.component is self and len(hub.flows) == self.count

    def dissolve(self) -> list[Constraint]:
        """Hand every flow back to the per-flow engine with its state as of now; returns the constraints."""
        self.pending = None  # its pending event is void
        now = self.now()
        self._advance(now)
        for cls in self.classes.values():
            rate = 0.0 if cls.entry is None else cls.entry.rate
            for offset, _, f in cls.heap:
                if f.group is cls and f.offset == offset:
                    f._remaining = cls.discard(f)
                    f._rate = rate
                    f.last_time = now
        for f in self._new:
            f.group = None
        self.solo.clear()
        self.owner.clear()
        self.settle_loads()
        for c in self.constraints:
            c.component = None
        return list(self.constraints)

    def settle_loads(self) -> None:
        """Bring every constraint's load up to date (those folded into bounds are not kept current)."""
        for c in self.constraints:
            c.load = sum([k * f.rate for f, k in c.flows.items()])

    # ------------------------------------------------------------------ allocation
    def _advance(self, now: float) -> None:
        if now == self._advanced_to:
            return  # every entry is there already (one made since starts there): an end's recompute follows its finish
        self._advanced_to = now
        for e in self.entries.values():
            elapsed = now - e.last_time
            if elapsed > 0.0:
                e.progress += e.rate * elapsed
            e.last_time = now

    def _entry_key(self, cls: FlowClass) -> tuple[Key, tuple[Constraint, ...]]:
        weight, cap, usage = cls.key
        m = cls.count
        # every flow crossing c is one of this class's (the count first: it rules out nearly all)
        private = [c for c in usage.constraints if len(c.flows) == m and c.private_able]
        if not private:
            return (weight, cap, usage), ()
        coefficient = usage.coefficient
        for c in private:
            bound = c.capacity / (coefficient[c] * m)
            if bound < cap:
                cap = bound
        folded = tuple(private)
        return (weight, cap, self.usages.without(usage, folded)), folded

    def _move_flow(self, f: Flow, remaining: float, now: float, *, fresh: bool = False) -> None:
        """File a flow (new: `fresh`, or taken out of its class) in the class its key now names."""
        key = class_key(f, self.usages, self.solo, fresh=fresh)
        cls = self.classes.get(key)
        if cls is None:
            cls = self.classes[key] = FlowClass(key, self.now)
        cls.add(f, remaining)
        if cls.count > self._largest:
            self._largest = cls.count
        self._changed[cls] = None

    def _file_class(self, cls: FlowClass, now: float) -> None:
        """Put a class in the entry its key now names (or drop it when empty)."""
        old = cls.entry
        for c in cls.private:
            if self.owner.get(c) is cls:
                del self.owner[c]
        if cls.count == 0:
            if old is not None:
                cls.stamp += 1
                del old.classes[cls]
                cls.entry = None
                if not old.classes:
                    self._emptied.append(old)
            if self.classes.get(cls.key) is cls:
                del self.classes[cls.key]
            cls.private = ()
            return
        key, private = self._entry_key(cls)
        cls.private = private
        for c in private:
            self.owner[c] = cls
        if old is not None and old.key == key:
            old.push(cls)
            return
        if old is not None:
            cls.base += old.progress
            old.count -= cls.count
            del old.classes[cls]
            if not old.classes:
                self._emptied.append(old)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = Entry(key, now, cls.top())
            self.groups.setdefault(key[2], {})[entry] = None
            self._layout = None
        cls.base -= entry.progress
        cls.entry = entry
        entry.classes[cls] = None
        entry.count += cls.count
        entry.push(cls)

    def recompute(self, now: float) -> tuple[float, list[Meter]]:
        """Apply the changes since the last allocation, allocate the entries, set the shared constraints' loads.
        Returns the seconds to the next completion (math.inf if none) and the meters whose loads changed."""
        self._advance(now)
        touched = self._touched
        self._touched = {}
        new = self._new
        self._new = []
        # flows whose own bound may have changed: a constraint folded into it is shared now or changed capacity,
        # or a constraint is left with one flow
        solo, owner = self.solo, self.owner
        for c in touched:
            f = solo.get(c)
            if f is None:
                if len(c.flows) != 1 or not c.private_able:
                    continue
                f = next(iter(c.flows))
            cls = None if f is None else f.group
            if isinstance(cls, FlowClass) and f is not None and class_key(f, self.usages) != cls.key:
                self._changed[cls] = None
                self._move_flow(f, cls.discard(f), now)
        for f in new:
            self._move_flow(f, f._remaining, now, fresh=True)
        # classes whose entry key may have changed: those that gained or lost flows, and those a touched
        # constraint is (or was) folded into
        changed = self._changed
        self._changed = {}
        largest = self._largest
        for c in touched:
            held = owner.get(c)
            if held is not None:
                changed[held] = None
            if len(c.flows) > largest:
                continue  # more flows than any class holds: folded into none (row 6: the store, at every end)
            # one flow of c, taken from the end: flows leave a dict's front first (FIFO), and a scan from the
            # front would step over every slot they left until the dict is resized
            for f in reversed(c.flows):
                # c is folded into a class only if all its flows are that class's: this one's, then
                if isinstance(f.group, FlowClass) and f.group.count == len(c.flows):
                    changed[f.group] = None
                break
        for cls in changed:
            self._file_class(cls, now)
        emptied = self._emptied
        self._emptied = []
        for e in emptied:  # entries their last class left (and none joined since)
            key = e.key
            if e.classes or self.entries.get(key) is not e:
                continue
            del self.groups[key[2]][self.entries.pop(key)]
            self._layout = None
            if not self.groups[key[2]]:
                del self.groups[key[2]]
        usages = self.usages
        if usages.grown:
            usages.grown = False
            if usages.size() > USAGE_TABLE_FACTOR * (len(self.classes) + len(self.entries)) + USAGE_TABLE_SLACK:
                # the tables only grow (a flow listing its constraints in a new order adds one): keep what keys hold
                usages.prune(list({k[2]: None for k in [*self.classes, *self.entries]}))
        return self._allocate()

    def _solver_layout(self) -> Layout:
        """Each group's limited usage as solver columns, the columns' capacities, and each constraint's
        (group, coefficient) pairs for its load; kept until the groups or a capacity change.  Constraints crossed
        by the same groups at the same coefficients are one column, at the smallest capacity: the others carry
        the same flows at the same load, so they saturate no sooner and freeze no other flow (row 6: a store's
        6 NICs and 6 drive sets, all at 0.25 bytes per byte)."""
        if self._layout is not None:
            return self._layout
        incidence: dict[Constraint, list[tuple[int, float]]] = {}
        for gi, usage in enumerate(self.groups):
            for _, k, c in usage.items:
                incidence.setdefault(c, []).append((gi, k))
        column_of: dict[tuple[tuple[int, float], ...], int] = {}
        capacity: list[float] = []
        limited: list[list[tuple[int, float]]] = [[] for _ in self.groups]
        for c, pattern in incidence.items():
            if math.isinf(c.capacity):
                continue  # metering only
            shape = tuple(pattern)
            j = column_of.get(shape)
            if j is None:
                j = column_of[shape] = len(capacity)
                capacity.append(c.capacity)
                for gi, k in pattern:
                    limited[gi].append((j, k))
            elif c.capacity < capacity[j]:
                capacity[j] = c.capacity
        meters: dict[Meter, None] = {}
        for c in incidence:
            meters.update(dict.fromkeys(c.meters))
        single = [(c, p[0][0], p[0][1]) for c, p in incidence.items() if len(p) == 1]
        multiple = [(c, tuple(p)) for c, p in incidence.items() if len(p) > 1]
        share = math.nan
        entries: list[Entry] = []
        if len(limited) == 1 and limited[0]:
            share = min([capacity[j] / k for j, k in limited[0]])
            entries = list(next(iter(self.groups.values())))
        self._layout = Layout([tuple(u) for u in limited], capacity, single, multiple, list(meters), share, entries)
        return self._layout

    def _allocate(self) -> tuple[float, list[Meter]]:
        layout = self._layout
        if layout is None:
            layout = self._solver_layout()
        share = layout.share
        if 0.0 < share < math.inf:
            out = one_level(layout.entries, share)
            if out is not None:
                horizon, total = out
                for c, _, k in layout.single:
                    c.load = k * total
                return horizon, layout.meters
        fill = None if math.isnan(share) else fill_one_group(layout.entries, share)
        if fill is not None:
            rates = [fill]
        else:
            groups: list[RowGroup] = []
            for usage, entries in zip(layout.usage, self.groups.values(), strict=True):
                groups.append(RowGroup(usage, [Row(e.name, e.key[0], e.count, e.key[1]) for e in entries]))
            rates = progressive_filling_rows(groups, layout.capacity)
        horizon = math.inf
        moving: list[float] = []  # per group, flows x rate: its throughput per unit of coefficient
        for entries, group_rates in zip(self.groups.values(), rates, strict=True):
            horizon, total = set_rates(entries, group_rates, horizon)
            moving.append(total)
        for c, gi, k in layout.single:
            c.load = k * moving[gi]
        for c, pattern in layout.multiple:
            c.load = sum([k * moving[gi] for gi, k in pattern])
        return horizon, layout.meters

    def flows(self) -> Iterable[Flow]:
        for cls in self.classes.values():
            for offset, _, f in cls.heap:
                if f.group is cls and f.offset == offset:
                    yield f
