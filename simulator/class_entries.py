"""The classes and entries a classed component is made of (simulator.flow_classes' docstring says why): a class holds
flows with the same weight, own bound and shared usage; an entry holds classes that get one rate.  Each keeps a heap
of offsets so that a start, an end or a move between entries rebases one number.  The allocation of one group of
entries (all crossing the same limited constraints) in closed form is here too: `fill_one_group`, `one_level`."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable

from iowatt.simulator.flow_network import REL_EPS, Constraint, Flow

Item = tuple[int, float, Constraint]  # (constraint index, coefficient, constraint)


class SharedUsage:
    """The constraints a class's (or an entry's) flows cross that others cross too, as items sorted by constraint
    index: a usage independent of insertion order.  One object per content within a component (Usages), so keys hash
    and compare by identity: a start files its flow with one lookup, not a sort and a hash of every item."""

    __slots__ = ("coefficient", "constraints", "items", "narrowed")

    def __init__(self, items: tuple[Item, ...]) -> None:
        self.items = items
        self.constraints = tuple([c for _, _, c in items])
        self.coefficient = {c: k for _, k, c in items}
        # constraints folded into an entry's bound (ClassedComponent._entry_key) -> the usage left
        self.narrowed: dict[tuple[Constraint, ...], SharedUsage] = {}


Key = tuple[float, float, SharedUsage]  # (weight, per-flow rate bound, shared usage)

# An entry's heap drops its stale items when it holds more than STALE_FACTOR x its live classes + STALE_SLACK items
# (Entry.push).  Speed settings, not model values: any values give the same results (the items are distinct, so the
# top is the same item; tests/test_flow_classes_bookkeeping.py).  Chosen: 2 = once stale items outnumber live ones,
# so a pass removes at least half the heap and costs a constant per stale item, where a pop at the top costs the
# heap's log; 32 = small heaps are left alone.  Plausible 1.5..4 and 0..1,000.  Measured with two other trims in one
# step (row 6 at 4,096 GPUs, callgrind): 1,862 M -> 1,793 M instructions.
STALE_FACTOR = 2
STALE_SLACK = 32


class Usages:
    """A component's shared usages, one object per content.  `by_order` finds one from a flow's (constraint,
    coefficient) pairs in the order the flow lists them (flows built by one piece of code list them alike), so the
    sort by index runs once per order, not once per flow; both tables are caches of what live keys hold (`prune`)."""

    __slots__ = ("by_content", "by_order", "grown")

    def __init__(self) -> None:
        self.by_order: dict[tuple[tuple[Constraint, float], ...], SharedUsage] = {}
        self.by_content: dict[tuple[Item, ...], SharedUsage] = {}
        self.grown = False  # a table gained an item since the owner last looked (ClassedComponent.recompute)

    def of_pairs(self, pairs: tuple[tuple[Constraint, float], ...]) -> SharedUsage:
        usage = self.by_order.get(pairs)
        if usage is None:
            # constraint indices are distinct within a flow's usage, so tuples sort by index without a key function
            usage = self.by_order[pairs] = self.of_items(tuple(sorted([(c.index, k, c) for c, k in pairs])))
            self.grown = True
        return usage

    def of_items(self, items: tuple[Item, ...]) -> SharedUsage:
        usage = self.by_content.get(items)
        if usage is None:
            usage = self.by_content[items] = SharedUsage(items)
            self.grown = True
        return usage

    def without(self, usage: SharedUsage, private: tuple[Constraint, ...]) -> SharedUsage:
        """`usage` less the constraints in `private` (which it crosses)."""
        out = usage.narrowed.get(private)
        if out is None:
            out = usage.narrowed[private] = self.of_items(tuple([item for item in usage.items if item[2] not in private]))
        return out

    def size(self) -> int:
        return len(self.by_order) + len(self.by_content)

    def prune(self, live: list[SharedUsage]) -> None:
        """Keep only the usages live keys hold (each still the one object of its content); the rest is rebuilt on demand."""
        self.by_order.clear()
        self.by_content = {u.items: u for u in live}
        for u in live:
            u.narrowed.clear()

_ids = itertools.count()


class Entry:
    """Classes whose flows all get one rate: one row of the allocation."""

    __slots__ = ("cap", "classes", "count", "heap", "key", "last_time", "name", "progress", "rate", "weight")

    def __init__(self, key: Key, now: float, first: Flow | None) -> None:
        self.key = key
        self.weight, self.cap = key[0], key[1]  # per flow; read at every allocation
        self.name = "" if first is None else first.name  # a flow of it, to name in an error
        self.classes: dict[FlowClass, None] = {}
        self.count = 0            # flows in all its classes
        self.rate = 0.0           # per flow
        self.progress = 0.0       # integral of the rate since the entry was made
        self.last_time = now
        # (smallest offset of a class - its base, stamp, class id, class); stale items are skipped
        self.heap: list[tuple[float, int, int, FlowClass]] = []

    def push(self, cls: FlowClass) -> None:
        """Re-file a class after its smallest offset or its base changed."""
        cls.stamp += 1
        f = cls.top()
        if f is not None:
            heap = self.heap
            heapq.heappush(heap, (f.offset - cls.base, cls.stamp, cls.id, cls))
            if len(heap) > STALE_FACTOR * len(self.classes) + STALE_SLACK:
                # a live class has one current item; when stale ones (its earlier items, classes gone elsewhere)
                # outnumber them, drop them in one pass rather than one pop each at the top.  In place: callers hold
                # the list.  The items are distinct, so the heap's top, the only item read, is the same.
                heap[:] = [item for item in heap if item[3].entry is self and item[3].stamp == item[1]]
                heapq.heapify(heap)

    def top(self) -> tuple[float, FlowClass] | None:
        heap = self.heap
        while heap:
            value, stamp, _, cls = heap[0]
            if cls.entry is self and cls.stamp == stamp:
                return value, cls
            heapq.heappop(heap)
        return None


class FlowClass:
    """Flows with the same weight, own rate bound and shared usage (flow_network.FlowGroup)."""

    __slots__ = ("base", "count", "entry", "heap", "id", "key", "now", "private", "stamp")

    def __init__(self, key: Key, now: Callable[[], float]) -> None:
        self.key = key
        self.now = now
        self.count = 0
        self.heap: list[tuple[float, int, Flow]] = []  # (offset, flow index, flow); stale items are skipped
        self.entry: Entry | None = None
        self.base = 0.0          # progress = base + entry.progress (base alone while between entries)
        self.private: tuple[Constraint, ...] = ()  # constraints only its flows cross, folded into its bound
        self.stamp = 0
        self.id = next(_ids)

    def progress(self) -> float:
        return self.base + (0.0 if self.entry is None else self.entry.progress)

    def top(self) -> Flow | None:
        heap = self.heap
        while heap:
            offset, _, f = heap[0]
            if f.group is self and f.offset == offset:
                return f
            heapq.heappop(heap)
        return None

    def add(self, f: Flow, remaining: float) -> None:
        f.group = self
        f.offset = remaining + self.progress()
        heapq.heappush(self.heap, (f.offset, f.index, f))
        self.count += 1
        if self.entry is not None:
            self.entry.count += 1

    def discard(self, f: Flow) -> float:
        """Take a flow out (its heap item goes stale); returns its remainder as of the entry's last advance."""
        remaining = f.offset - self.progress()
        f.group = None
        self.count -= 1
        if self.entry is not None:
            self.entry.count -= 1
        return remaining if remaining > 0.0 else 0.0

    def rate_of(self, flow: Flow) -> float:
        del flow  # every flow of a class has the class's rate
        return 0.0 if self.entry is None else self.entry.rate

    def remaining_of(self, flow: Flow) -> float:
        e = self.entry
        progress = self.progress() if e is None else self.base + e.progress + e.rate * (self.now() - e.last_time)
        remaining = flow.offset - progress
        return remaining if remaining > 0.0 else 0.0


def class_key(f: Flow, usages: Usages, solo: dict[Constraint, Flow] | None = None, *, fresh: bool = False) -> Key:
    """(weight, own bound, shared usage): a constraint the flow alone crosses is folded into its bound (and, with
    `solo`, filed there as folded into this flow's; one it no longer crosses alone is taken out, unless the flow is
    `fresh`: filed for the first time in its component, so none is filed as its)."""
    cap = math.inf if f.max_rate is None else f.max_rate
    shared: list[tuple[Constraint, float]] = []
    for pair in f.usage.items():
        c = pair[0]
        if len(c.flows) == 1 and c.private_able:
            bound = c.capacity / pair[1]
            if bound < cap:
                cap = bound
            if solo is not None:
                solo[c] = f
        else:
            shared.append(pair)
    if solo is not None and not fresh:
        for c, _ in shared:
            if solo.get(c) is f:
                del solo[c]
    return f.weight, cap, usages.of_pairs(tuple(shared))


def one_level(entries: list[Entry], share: float) -> tuple[float, float] | None:
    """fill_one_group's first case and ClassedComponent._allocate's loop in one pass, for a group whose entries all move at one level
    (no entry's own bound comes before the shared constraints: row 6 once a few hundred flows move): sets each entry's
    rate; returns (seconds to the next completion, flows x rate) or None where a bound comes first.  The same
    arithmetic in the same order as those two."""
    weight = 0.0
    for e in entries:
        weight += e.weight * e.count
    level = share / weight
    for e in entries:
        if e.cap < e.weight * level * (1.0 - REL_EPS):
            return None
    return set_rates(entries, [e.weight * level for e in entries], math.inf)


def set_rates(entries: list[Entry], rates: list[float], horizon: float) -> tuple[float, float]:
    """Give each entry its per-flow rate; returns (the sooner of `horizon` and the seconds to the first completion
    among them, their flows x rate).  Entry.top inlined: this runs for every entry at every change."""
    total = 0.0
    heappop = heapq.heappop
    for e, r in zip(entries, rates, strict=True):
        e.rate = r
        total += e.count * r
        if r > 0.0:
            heap = e.heap
            while heap:
                value, stamp, _, cls = heap[0]
                if cls.entry is e and cls.stamp == stamp:
                    t = (value - e.progress) / r
                    if t < horizon:
                        horizon = t
                    break
                heappop(heap)
    return horizon, total


def fill_one_group(entries: list[Entry], share: float) -> list[float] | None:
    """Per-flow rates of entries that all cross the same limited constraints at the same coefficients (row 6: every
    GPU's flow crosses the store), by water-filling: progressive filling raises every unfrozen rate as weight x level;
    since every constraint carries every flow, the first to saturate (the smallest capacity / coefficient, `share`,
    the most the flows move together) freezes all, and before it only entries' own bounds freeze, in order of
    bound / weight.  The level is then (share - what the frozen move) / the unfrozen weight.  The same allocation as
    maxmin.progressive_filling_rows (which sums the level step by step: equal to rounding, tests/test_flows_fast_paths.py);
    None where that path's error handling is needed (no finite share)."""
    if not share < math.inf:
        return None
    if share <= 0.0:
        return [0.0] * len(entries)
    weight = 0.0
    for e in entries:
        weight += e.key[0] * e.count
    level = share / weight
    for e in entries:
        if e.key[1] < e.key[0] * level * (1.0 - REL_EPS):
            break
    else:  # no bound comes before the shared constraints (row 6 once a few hundred flows move): one level for all
        return [e.key[0] * level for e in entries]
    order = sorted(range(len(entries)), key=lambda i: entries[i].key[1] / entries[i].key[0])
    left = share
    rates = [0.0] * len(entries)
    level = left / weight
    for n, i in enumerate(order):
        e = entries[i]
        w, cap = e.key[0], e.key[1]
        if cap < w * level * (1.0 - REL_EPS):
            rates[i] = cap
            left -= cap * e.count
            weight -= w * e.count
            level = left / weight if weight > 0.0 else math.inf
            if level < 0.0:
                level = 0.0
            continue
        for j in order[n:]:
            rates[j] = entries[j].key[0] * level
        break
    return rates
