"""Energy integrated per request: each request adds the joules its bytes cost on every meter they cross.

The fluid engine's meters are linear in constraint loads, P = idle + sum(k x
load) (simulator.flows.Meter), so a byte that crosses constraint c with
coefficient a adds a x k joules to a meter with term (c, k).  Summing that
over the requests and adding idle power x duration integrates the same law
request by request: the two modes agree on energy whenever they agree on
bytes and time.
"""

from __future__ import annotations

from iowatt.simulator.flows import FlowEngine, Meter
from iowatt.simulator.storage import Usage

Joules = list[tuple[Meter, float]]


def joules_per_request(usage: Usage, request_bytes: float) -> Joules:
    """(meter, joules) one request of `request_bytes` costs on each meter its bytes cross."""
    out: dict[int, tuple[Meter, float]] = {}
    for constraint, coefficient in usage:
        for meter in constraint.meters:
            for term, watts_per_unit in meter.terms:
                if term is constraint:
                    previous = out.get(id(meter), (meter, 0.0))[1]
                    out[id(meter)] = (meter, previous + coefficient * request_bytes * watts_per_unit)
    return [(m, j) for m, j in out.values() if j != 0.0]


class Ledger:
    """Joules the requests added per meter: devices count their requests per class and hand the counts in at the end."""

    def __init__(self) -> None:
        self.joules: dict[int, list[Meter | float]] = {}
        self.counters: list[dict[object, list[Joules | int]]] = []
        self.marked: dict[int, dict[object, float]] = {}

    def counter(self) -> dict[object, list[Joules | int]]:
        """A device's own table {request class: [joules per request, requests]}, summed when the ledger closes."""
        table: dict[object, list[Joules | int]] = {}
        self.counters.append(table)
        return table

    def mark(self) -> None:
        """Remember the counts now: `storage_joules_since_mark` counts from here (a run's ramp is over)."""
        self.marked = {id(table): {key: float(entry[1]) for key, entry in table.items()} for table in self.counters}  # type: ignore[arg-type]

    def storage_joules_since_mark(self) -> float:
        """Joules the storage meters' dynamic terms gained since `mark` (since the start when never marked)."""
        total = 0.0
        for table in self.counters:
            before = self.marked.get(id(table), {})
            for key, (costs, count) in table.items():
                added = float(count) - before.get(key, 0.0)  # type: ignore[arg-type]
                total += sum(j for meter, j in costs if meter.group == "storage") * added  # type: ignore[union-attr]
        return total

    def add(self, costs: Joules, count: float = 1.0) -> None:
        for meter, joules in costs:
            entry = self.joules.get(id(meter))
            if entry is None:
                self.joules[id(meter)] = [meter, joules * count]
            else:
                entry[1] += joules * count  # type: ignore[operator]

    def close(self, engine: FlowEngine, duration_s: float) -> None:
        """Every meter's energy: idle (and extra) power over the run plus what the requests added."""
        for table in self.counters:
            for costs, count in table.values():
                self.add(costs, float(count))  # type: ignore[arg-type]
            table.clear()
        for meter in engine.meters.values():
            added = self.joules.get(id(meter))
            dynamic = float(added[1]) if added is not None else 0.0  # type: ignore[arg-type]
            meter.energy_J = (meter.idle_W + meter.extra_W) * duration_s + dynamic
            mean = meter.energy_J / duration_s if duration_s > 0 else meter.idle_W
            meter.power_W = mean
            meter.peak_W = max(meter.peak_W, mean)
            meter.last_time = duration_s
