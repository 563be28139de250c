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
# (meter, watts while the device is busy, seconds one request keeps it busy): a meter's busy terms
Busy = list[tuple[Meter, float, float]]


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


def busy_per_request(usage: Usage, request_bytes: float) -> Busy:
    """The busy terms one request of `request_bytes` loads (a drive's controller floor while commands are in flight)."""
    out: Busy = []
    for constraint, coefficient in usage:
        for meter in constraint.meters:
            for term, watts in meter.busy_terms:
                if term is constraint:
                    out.append((meter, watts, coefficient * request_bytes))
    return out


class Ledger:
    """Joules the requests added per meter: devices count their requests per class and hand the counts in at the end."""

    def __init__(self) -> None:
        self.joules: dict[int, list[Meter | float]] = {}
        self.counters: list[dict[object, list[Joules | int | Busy]]] = []
        self.marked: dict[int, dict[object, float]] = {}
        self.phase_marked: dict[int, dict[object, float]] = {}  # counts when the last busy phase ended
        self.phases_ended = False

    def counter(self) -> dict[object, list[Joules | int | Busy]]:
        """A device's own table {request class: [joules per request, requests]}, summed when the ledger closes."""
        table: dict[object, list[Joules | int | Busy]] = {}
        self.counters.append(table)
        return table

    def mark(self) -> None:
        """Remember the counts now: `storage_joules_since_mark` counts from here (a run's ramp is over)."""
        self.marked = self._counts()

    def storage_joules_since_mark(self, window_s: float) -> float:
        """Joules the storage meters' dynamic and busy terms gained over the `window_s` seconds since `mark`
        (since the start when never marked)."""
        total = 0.0
        for table in self.counters:
            before = self.marked.get(id(table), {})
            for key, entry in table.items():
                added = float(entry[1]) - before.get(key, 0.0)  # type: ignore[arg-type]
                total += sum(j for meter, j in entry[0] if meter.group == "storage") * added  # type: ignore[union-attr]
        busy = self._busy_joules(window_s, since=self.marked)
        return total + sum(j for meter, j in busy.values() if meter.group == "storage")

    def end_phase(self, duration_s: float) -> None:
        """The busy terms of a phase of `duration_s` seconds that the requests since the last phase ran in (a
        GNN iteration's aggregation: the drives are busy in it, idle in the compute phases around it)."""
        for meter, joules in self._busy_joules(duration_s, since=self.phase_marked).values():
            self.add([(meter, joules)])
        self.phase_marked = self._counts()
        self.phases_ended = True

    def _counts(self) -> dict[int, dict[object, float]]:
        return {id(table): {key: float(entry[1]) for key, entry in table.items()} for table in self.counters}  # type: ignore[arg-type]

    def _busy_joules(self, duration_s: float, since: dict[int, dict[object, float]]) -> dict[int, tuple[Meter, float]]:
        """Each meter's busy-term energy: W x min(1, commands in flight) x duration, the fluid meter's law
        (simulator.flow_network.Meter), with the commands in flight by Little's law: the requests' busy seconds
        over the duration."""
        held: dict[tuple[int, float], list[Meter | float]] = {}
        for table in self.counters:
            before = since.get(id(table), {})
            for key, entry in table.items():
                if len(entry) < 3:
                    continue
                added = float(entry[1]) - before.get(key, 0.0)  # type: ignore[arg-type]
                for meter, watts, seconds in entry[2]:  # type: ignore[misc,union-attr]
                    slot = held.setdefault((id(meter), watts), [meter, 0.0])
                    slot[1] += added * seconds  # type: ignore[operator]
        out: dict[int, tuple[Meter, float]] = {}
        for (meter_id, watts), (meter, seconds) in held.items():
            joules = watts * min(1.0, seconds / duration_s) * duration_s if duration_s > 0.0 else 0.0  # type: ignore[operator]
            out[meter_id] = (meter, out.get(meter_id, (meter, 0.0))[1] + joules)  # type: ignore[assignment]
        return out

    def add(self, costs: Joules, count: float = 1.0) -> None:
        for meter, joules in costs:
            entry = self.joules.get(id(meter))
            if entry is None:
                self.joules[id(meter)] = [meter, joules * count]
            else:
                entry[1] += joules * count  # type: ignore[operator]

    def close(self, engine: FlowEngine, duration_s: float) -> None:
        """Every meter's energy: idle (and extra) power over the run plus what the requests added."""
        if not self.phases_ended:  # one phase: the whole run
            self.end_phase(duration_s)
        for table in self.counters:
            for entry in table.values():
                self.add(entry[0], float(entry[1]))  # type: ignore[arg-type]
            table.clear()
        for meter in engine.meters.values():
            added = self.joules.get(id(meter))
            dynamic = float(added[1]) if added is not None else 0.0  # type: ignore[arg-type]
            meter.energy_J = (meter.idle_W + meter.extra_W) * duration_s + dynamic
            mean = meter.energy_J / duration_s if duration_s > 0 else meter.idle_W
            meter.power_W = mean
            meter.peak_W = max(meter.peak_W, mean)
            meter.last_time = duration_s
