"""Weighted max-min fair rates by progressive filling: one entry point, two paths.

Rates are the weighted max-min fair allocation (progressive filling, as
SimGrid's LMM solver does for networks): raise every unfrozen flow together,
in proportion to its weight, until a constraint is tight or a flow reaches its
own rate bound; freeze those flows; repeat.  `max_min_fair` is the only entry
point; it picks the scalar or the vectorised path by component size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    import numpy as np


# The solver sits below the network state (simulator/flow_network.py imports it, never the reverse):
# it reads flows and constraints through the two protocols below.

# A constraint is tight when its residual is below this share of its capacity
# (flow_network re-exports it with the engine's other tolerances).
REL_EPS = 1e-9


class EngineError(RuntimeError):
    """A flow network that cannot make progress or was built wrongly."""


class Constraint(Protocol):
    """What the solver reads of a constraint (flow_network.Constraint)."""

    name: str
    capacity: float
    index: int
    flows: Mapping[Flow, float]


class Flow(Protocol):
    """What the solver reads of a flow (flow_network.Flow)."""

    name: str
    usage: Mapping[Constraint, float]
    weight: float
    max_rate: float | None
    usage_cols: np.ndarray | None
    usage_coefs: np.ndarray | None

# Components with at least this many flows are allocated with numpy arrays
# (the same progressive filling, vectorised); smaller ones stay on the pure
# Python path, which is faster below this size (measured with
# benchmarks/run.py row 6: ~20 us of numpy call overhead per round).
VECTOR_MIN_FLOWS = 48


class UsageArrays(NamedTuple):
    """Flows' usage as flat arrays, in flow order (one block of entries per flow)."""

    cols: np.ndarray      # constraint creation indices
    coefs: np.ndarray     # coefficients
    lengths: np.ndarray   # entries per flow
    weight: np.ndarray
    max_rate: np.ndarray  # math.inf where a flow has no bound


class Allocation(NamedTuple):
    rates: list[float]               # in flow order
    loads: list[float] | None        # each constraint's load, when the vectorised path computed them


def _flow_arrays(f: Flow) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np
    if f.usage_cols is None:
        f.usage_cols = np.array([c.index for c in f.usage], dtype=np.int64)
        f.usage_coefs = np.array(list(f.usage.values()), dtype=np.float64)
    return f.usage_cols, f.usage_coefs  # type: ignore[return-value]


def usage_arrays(flows: list[Flow]) -> UsageArrays:
    """The flows' usage as flat arrays, in flow order (one block of entries per flow)."""
    import numpy as np
    pairs = [_flow_arrays(f) for f in flows]
    return UsageArrays(
        np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, dtype=np.int64),
        np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0),
        np.array([len(p[0]) for p in pairs], dtype=np.int64),
        np.array([f.weight for f in flows], dtype=np.float64),
        np.array([math.inf if f.max_rate is None else f.max_rate for f in flows], dtype=np.float64),
    )


def max_min_fair(flows: list[Flow], constraints: list[Constraint]) -> Allocation:
    """Weighted max-min fair rates of `flows`, which cross only `constraints`.

    Each round raises the fill level t of all unfrozen flows (rate = weight x t)
    until a constraint's residual capacity is exhausted or a flow reaches its
    max_rate, then freezes the flows that hit a bound.  With equal weights this
    is the classic max-min allocation: no flow can be raised without lowering
    another flow whose rate is equal or smaller.

    Two paths compute the same rounds:
      - the scalar path (lists indexed by position) for components below
        VECTOR_MIN_FLOWS flows, where numpy's per-call overhead (~20 us a round)
        costs more than the arithmetic, and for any list the vector path cannot
        index (constraints not sorted by distinct creation index);
      - the vectorised path (numpy arrays) for large components, where one round
        touches thousands of flows; it also returns every constraint's load.
    """
    if len(flows) >= VECTOR_MIN_FLOWS:
        out = _progressive_filling_vector(flows, constraints)
        if out is not None:
            return out
    return Allocation(_progressive_filling_scalar(flows, constraints), None)


class _ScalarState(NamedTuple):
    """The scalar path's bookkeeping over the limited constraints (unlimited ones only meter load)."""

    limited: list[Constraint]
    residual: list[float]
    tight: list[float]
    demand: list[float]               # weighted demand of unfrozen flows on each constraint
    users: list[int]                  # how many unfrozen flows cross it
    edges: list[list[tuple[int, float]]]  # per flow: (constraint column, coefficient x weight)


def _scalar_state(flows: list[Flow], constraints: list[Constraint]) -> _ScalarState:
    # unlimited constraints (e.g. a drive with no power cap) only meter load
    limited = [c for c in constraints if not math.isinf(c.capacity)]
    column = {c: j for j, c in enumerate(limited)}
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
    return _ScalarState(limited, [c.capacity for c in limited], [REL_EPS * c.capacity for c in limited], demand, users, edges)


def _tightest(live: list[int], residual: list[float], demand: list[float]) -> tuple[float, int]:
    """(step, constraint) of the first live constraint that the fill level saturates first; (inf, -1) if none."""
    step = math.inf
    limiting_c = -1
    for j in live:
        r = residual[j]
        s = (r if r > 0.0 else 0.0) / demand[j]
        if s < step:
            step = s
            limiting_c = j
    return step, limiting_c


def _take_off(demand: list[float], users: list[int], edges: list[tuple[int, float]]) -> bool:
    """Remove a frozen flow's (or row's) weighted demand from its constraints; True if one has no users left."""
    emptied = False
    for j, kw in edges:
        demand[j] -= kw
        users[j] -= 1
        if users[j] == 0:
            demand[j] = 0.0
            emptied = True
    return emptied


def _progressive_filling_scalar(flows: list[Flow], constraints: list[Constraint]) -> list[float]:
    """The scalar path of max_min_fair.

    Hot path of the engine (every recompute of a small component): state lives
    in lists indexed by position, and every sum is taken in the same order as
    the dict-based formulation, so the rates are bit-for-bit the same."""
    n = len(flows)
    rates = [0.0] * n
    if n == 0:
        return rates
    limited, residual, tight, demand, users, edges = _scalar_state(flows, constraints)
    live = [j for j in range(len(limited)) if users[j] > 0]
    # flow -> position, in flow order; `capped` is the subset with a rate bound
    unfrozen = dict(zip(flows, range(n), strict=False))
    capped = {f: i for f, i in unfrozen.items() if f.max_rate is not None}
    while unfrozen:
        step, limiting_c = _tightest(live, residual, demand)
        limiting_f: Flow | None = None
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
            if f is limiting_f or rates[i] >= f.max_rate * (1.0 - REL_EPS):  # type: ignore[operator]
                frozen[f] = None
        emptied = False
        for f in frozen:
            i = unfrozen.pop(f)
            if f.max_rate is not None:
                del capped[f]
            emptied = _take_off(demand, users, edges[i]) or emptied
        if emptied:
            live = [j for j in live if users[j] > 0]
    return rates


def _vector_step(
    residual: np.ndarray, demand: np.ndarray, live: np.ndarray, rates: np.ndarray, weight: np.ndarray, max_rate: np.ndarray, bounded: np.ndarray
) -> tuple[float, int, int]:
    """(step, limiting constraint or -1, limiting flow or -1) of one round: the first constraint with the
    smallest residual/demand, then a flow bound that is strictly smaller, as the scalar path chooses."""
    import numpy as np
    step = math.inf
    limiting_c = -1
    limiting_f = -1
    if live.any():
        live_idx = np.flatnonzero(live)
        s = np.maximum(residual[live_idx], 0.0) / demand[live_idx]
        j = int(np.argmin(s))
        if s[j] < step:
            step = float(s[j])
            limiting_c = int(live_idx[j])
    if bounded.any():
        bounded_idx = np.flatnonzero(bounded)
        sf = np.maximum(max_rate[bounded_idx] - rates[bounded_idx], 0.0) / weight[bounded_idx]
        i = int(np.argmin(sf))
        if sf[i] < step:
            step = float(sf[i])
            limiting_c = -1
            limiting_f = int(bounded_idx[i])
    return step, limiting_c, limiting_f


def _component_columns(constraints: list[Constraint], arrays: UsageArrays) -> np.ndarray | None:
    """Each usage entry's position in `constraints`; None when the list cannot index the flows' constraints
    (not sorted by distinct creation index, or a flow crosses a constraint outside it)."""
    import numpy as np
    m = len(constraints)
    index = np.array([c.index for c in constraints], dtype=np.int64)
    if m == 0 or (m > 1 and not bool(np.all(index[1:] > index[:-1]))) or index[0] < 0:
        return None  # not sorted by distinct creation index: not a component built by the engine
    # creation index -> position in `constraints`; -1 marks a constraint that is not in the list
    position = np.full(int(max(index[-1], arrays.cols.max(initial=0))) + 1, -1, dtype=np.int64)
    position[index] = np.arange(m)
    cols = position[arrays.cols]
    if cols.size and int(cols.min()) < 0:
        return None  # a flow crosses a constraint outside the list
    return cols


def _progressive_filling_vector(flows: list[Flow], constraints: list[Constraint], arrays: UsageArrays | None = None) -> Allocation | None:
    """The vectorised path of max_min_fair; also returns every constraint's load.

    The same progressive filling round for round: the same step, the same
    freezing tests, the same tolerances.  Sums over flows run in flow order as
    in the scalar path (np.bincount accumulates in input order), so rates agree
    with it to the last few ulps: only the order in which frozen flows' demand
    is taken off differs.  Returns None when `constraints` does not index the
    flows' constraints uniquely; max_min_fair then takes the scalar path.
    """
    import numpy as np
    n = len(flows)
    m = len(constraints)
    arrays = usage_arrays(flows) if arrays is None else arrays
    cols = _component_columns(constraints, arrays)
    if cols is None:
        return None
    _, coefs, lengths, weight, max_rate = arrays
    rows = np.repeat(np.arange(n), lengths)
    capacity = np.array([c.capacity for c in constraints], dtype=np.float64)
    # unlimited constraints (e.g. a drive with no power cap) only meter load
    on_limited = np.isfinite(capacity)[cols]
    e_rows = rows[on_limited]
    e_cols = cols[on_limited]
    e_kw = coefs[on_limited] * weight[e_rows]
    demand = np.bincount(e_cols, weights=e_kw, minlength=m)
    users = np.bincount(e_cols, minlength=m)
    residual = capacity.copy()
    tight = REL_EPS * capacity
    rates = np.zeros(n)
    unfrozen = np.ones(n, dtype=bool)
    capped = np.isfinite(max_rate)
    remaining = n
    while remaining:
        live = users > 0
        bounded = capped & unfrozen
        step, limiting_c, limiting_f = _vector_step(residual, demand, live, rates, weight, max_rate, bounded)
        if limiting_c < 0 and limiting_f < 0:
            raise EngineError(f"flow {flows[int(np.flatnonzero(unfrozen)[0])].name!r} is unbounded: no constraint limits it")
        rates[unfrozen] += weight[unfrozen] * step
        residual[live] -= demand[live] * step
        saturated = live & (residual <= tight)
        if limiting_c >= 0:
            saturated[limiting_c] = True
        frozen = np.zeros(n, dtype=bool)
        frozen[e_rows[saturated[e_cols]]] = True
        frozen |= bounded & (rates >= max_rate * (1.0 - REL_EPS))
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
    return Allocation(rates.tolist(), loads.tolist())


class Row(NamedTuple):
    """`count` symmetric flows allocated as one (simulator/flow_classes.py): each has this weight and rate bound."""

    name: str
    weight: float
    count: int
    cap: float  # the per-flow rate bound; math.inf where there is none


class RowGroup(NamedTuple):
    """Rows with one usage: (column in the solver's capacity list, coefficient) for each limited constraint."""

    usage: tuple[tuple[int, float], ...]
    rows: list[Row]


def _one_round(groups: list[RowGroup], capacity: list[float], demand: list[float], users: list[int], rows: int) -> list[list[float]] | None:
    """The rates when the first round freezes every row: its limiting constraint is crossed by all rows and
    no row's bound comes first (row 6: the store).  The same arithmetic as that round of the loop below."""
    step = math.inf
    limiting = -1
    for j, d in enumerate(demand):
        if users[j] > 0:
            s = capacity[j] / d if capacity[j] > 0.0 else 0.0
            if s < step:
                step = s
                limiting = j
    if limiting < 0 or users[limiting] != rows:
        return None
    for g in groups:
        for row in g.rows:
            if row.cap / row.weight < step:
                return None
    return [[row.weight * step for row in g.rows] for g in groups]


def progressive_filling_rows(groups: list[RowGroup], capacity: list[float]) -> list[list[float]]:
    """Per-flow rates of rows of symmetric flows, per group: the scalar path's progressive filling with a row's
    demand on a constraint counted `count` times (max-min fairness gives symmetric flows one rate, so the
    rounds, the steps and the freezing tests are those of the flows one by one; only sums are grouped).
    Rows with one usage share their per-constraint bookkeeping, so a round costs constraints + rows."""
    m = len(capacity)
    demand = [0.0] * m
    users = [0] * m
    col_groups: list[list[int]] = [[] for _ in range(m)]
    for gi, (usage, rows) in enumerate(groups):
        wn = 0.0
        for row in rows:
            wn += row.weight * row.count
        for j, k in usage:
            demand[j] += k * wn
            users[j] += len(rows)
            col_groups[j].append(gi)
    left = sum(len(g.rows) for g in groups)
    fast = _one_round(groups, capacity, demand, users, left)
    if fast is not None:
        return fast
    rates = [[0.0] * len(g.rows) for g in groups]
    unfrozen = [dict.fromkeys(range(len(g.rows))) for g in groups]
    # (group, row) -> its bound
    capped = {(gi, ri): row.cap for gi, g in enumerate(groups) for ri, row in enumerate(g.rows) if not math.isinf(row.cap)}
    residual = list(capacity)
    tight = [REL_EPS * c for c in capacity]
    live = [j for j in range(m) if users[j] > 0]
    while left:
        step, limiting_c = _tightest(live, residual, demand)
        limiting_r: tuple[int, int] | None = None
        for (gi, ri), cap in capped.items():
            s = max(cap - rates[gi][ri], 0.0) / groups[gi].rows[ri].weight
            if s < step:
                step = s
                limiting_c = -1
                limiting_r = (gi, ri)
        if limiting_c < 0 and limiting_r is None:
            gi = next(g for g, u in enumerate(unfrozen) if u)
            raise EngineError(f"flow {groups[gi].rows[next(iter(unfrozen[gi]))].name!r} is unbounded: no constraint limits it")
        for gi, u in enumerate(unfrozen):
            rows, rate = groups[gi].rows, rates[gi]
            for ri in u:
                rate[ri] += rows[ri].weight * step
        frozen: dict[tuple[int, int], None] = {}
        for j in live:
            residual[j] -= demand[j] * step
            if residual[j] <= tight[j] or j == limiting_c:
                for gi in col_groups[j]:
                    frozen.update(((gi, ri), None) for ri in unfrozen[gi])
        for (gi, ri), cap in capped.items():
            if (gi, ri) == limiting_r or rates[gi][ri] >= cap * (1.0 - REL_EPS):
                frozen[gi, ri] = None
        emptied = False
        for gi, ri in frozen:
            if ri not in unfrozen[gi]:
                continue
            del unfrozen[gi][ri]
            capped.pop((gi, ri), None)
            left -= 1
            row = groups[gi].rows[ri]
            wn = row.weight * row.count
            emptied = _take_off(demand, users, [(j, k * wn) for j, k in groups[gi].usage]) or emptied
        if emptied:
            live = [j for j in live if users[j] > 0]
    return rates
