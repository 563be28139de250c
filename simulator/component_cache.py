"""The latest large connected component of the flow network, kept exact across flow starts and ends."""

from __future__ import annotations

import numpy as np
from iowatt.simulator.flow_network import Constraint, Flow, by_index
from iowatt.simulator.maxmin import UsageArrays, arrays_appended, arrays_kept, usage_arrays


class LargeComponent:
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
        self.arrays: UsageArrays | None = None  # the flows' usage as numpy arrays, built on first allocation
        self.flows = flows
        self.constraints = constraints
        self.fset = set(flows)
        self.cset = set(constraints)
        self.hub = self._find_hub()

    def usage_arrays(self) -> UsageArrays:
        """The flows' usage as numpy arrays (maxmin.ArraysSource), built on first use and kept up to date."""
        if self.arrays is None:
            self.arrays = usage_arrays(self.flows)
        return self.arrays

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
            self.arrays = arrays_appended(self.arrays, flow)
        if fresh:
            self.constraints = sorted([*self.constraints, *fresh], key=by_index)
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
            self.arrays = arrays_kept(self.arrays, np.array([f not in gone_set for f in self.flows], dtype=bool))
        self.flows = [f for f in self.flows if f not in gone_set]
        empty = {c for f in gone for c in f.usage if not c.flows}
        if empty:
            self.cset.difference_update(empty)
            self.constraints = [c for c in self.constraints if c not in empty]
        hub = self.hub
        return hub is not None and hub in self.cset and len(hub.flows) == len(self.flows)
