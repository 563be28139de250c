"""One hard disk, one request at a time: a single actuator, seek and rotation drawn per request (models.hdd).

The actuator serves one command at a time.  When it frees, the disk picks
the next of the n commands it holds (n = min(queued, NCQ/TCQ limit)) and
spends on it
    command overhead + positioning + transfer (block / media rate of the span)
for random commands, where positioning is drawn from the same law models.hdd
integrates: n candidates, each a seek over a distance with density 2 (1 - u)
on the stroke the data span (models.hdd.seek_seconds) plus a rotational wait
uniform over one revolution.  SATF serves the cheapest candidate; firmware
RPO (scheduling "rpo") does so with probability reorder_efficiency and
otherwise pays one candidate's time (a revolution lost to the guard band), so
its mean is pos(1) - eta (pos(1) - satf(n)), models.hdd's law; fcfs pays one
candidate; elevator seeks over span x Beta(1, n + 1).  Which held command
is served is drawn at random: under the independent-candidates law every
one is equally likely to be the cheapest.  Sequential commands stream at the
media rate with the command overhead as a pipelined delay, so N commands
run at min(N / (overhead + block / rate), rate / block), the fluid bound.

Layouts of several clusters (`layout_clusters` > 1) are not sampled here
(the per-request mode refuses them, budget.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import simpy
from iowatt.models import hdd as hdd_model
from iowatt.models.hdd import HDDSpec
from iowatt.simulator.flows import Meter
from iowatt.simulator.per_request.energy import Joules
from iowatt.simulator.storage.contract import Pattern, RequestRun
from simpy.events import Timeout

Done = Callable[[object], None]
BATCH = 4096  # positioning times drawn at once per (candidates, direction)


class Disk(Protocol):
    """What the per-request face reads from a hard disk's runtime (simulator.storage.hdd.HddDrive): its laws."""

    spec: HDDSpec
    meter: Meter

    @property
    def span_fraction(self) -> float: ...

    @property
    def queue_limit(self) -> int | None: ...

    @property
    def command_overhead_s(self) -> float: ...

    @property
    def stream_rate_Bps(self) -> float: ...

    def dynamic_W(self, pattern: Pattern) -> float: ...


class Positioning:
    """Seek + rotational wait of the served command, drawn per request (module docstring)."""

    def __init__(self, drive: Disk, rng: np.random.Generator) -> None:
        spec = drive.spec
        self.spec = spec
        self.rng = rng
        self.x_span = hdd_model.stroke_fraction(spec, drive.span_fraction)
        self.revolution = hdd_model.revolution_seconds(spec)
        self._buffers: dict[tuple[int, bool], list[float]] = {}

    def _draw(self, n: int, write: bool) -> list[float]:
        spec, rng = self.spec, self.rng
        policy = spec.scheduling
        if policy == "elevator":
            seek = hdd_model.seek_seconds(spec, self.x_span * rng.beta(1.0, n + 1.0, BATCH), write)
            return (seek + rng.uniform(0.0, self.revolution, BATCH)).tolist()
        # a seek distance with density 2 (1 - u) on the span: u = 1 - sqrt(1 - U)
        u = 1.0 - np.sqrt(1.0 - rng.random((BATCH, n)))
        cost = hdd_model.seek_seconds(spec, self.x_span * u, write) + rng.uniform(0.0, self.revolution, (BATCH, n))
        if policy == "fcfs" or n == 1:
            return cost[:, 0].tolist()
        best = cost.min(axis=1)
        if policy == "satf":
            return best.tolist()
        took_best = rng.random(BATCH) < spec.reorder_efficiency  # rpo: the firmware finds the cheapest this often
        return np.where(took_best, best, cost[:, 0]).tolist()

    def next(self, n: int, write: bool) -> float:
        key = (n, write)
        buffer = self._buffers.get(key)
        if not buffer:
            buffer = self._buffers[key] = self._draw(n, write)
        return buffer.pop()


class HddRequests:
    """One hard disk of a volume in the per-request mode (module docstring)."""

    def __init__(self, run: RequestRun, drive: Disk, pattern: Pattern) -> None:
        self.env = run.env
        self.drive = drive
        self.pattern = pattern
        self.draw = run.draw
        # the meter's law: (active - idle) power while the actuator is busy (simulator.storage.hdd), per busy second
        self.busy_s: list[Joules | float] = [[(drive.meter, drive.dynamic_W(pattern))], 0.0]
        run.tally()["busy"] = self.busy_s
        self.limit = drive.queue_limit or 1 << 30
        self.overhead_s = drive.command_overhead_s
        self.rate_Bps = drive.stream_rate_Bps
        self.positioning = Positioning(drive, run.rng)
        self.held: list[tuple[object, float, bool, Done]] = []
        self.busy = False
        self.timeouts = 0

    def submit(self, request: object, size: float, write: bool, done: Done) -> None:
        self.held.append((request, size, write, done))
        if not self.busy:
            self._start()

    def _start(self) -> None:
        n = min(len(self.held), self.limit)
        if n == 0:
            self.busy = False
            return
        self.busy = True
        if self.pattern == "seq":
            served = self.held.pop(0)
            service = served[1] / self.rate_Bps
        else:
            served = self.held.pop(0 if n == 1 else self.draw.randrange(n))
            service = self.overhead_s + self.positioning.next(n, served[2]) + served[1] / self.rate_Bps
        self.busy_s[1] += service  # type: ignore[operator]
        timer = Timeout(self.env, service, served)
        timer.callbacks.append(self._finish)  # type: ignore[union-attr]
        self.timeouts += 1

    def _finish(self, event: simpy.Event) -> None:
        request, _size, _write, done = event._value
        if self.pattern == "seq":  # the command overhead is pipelined: the next transfer starts now
            tail = Timeout(self.env, self.overhead_s, request)
            tail.callbacks.append(lambda e, done=done: done(e._value))  # type: ignore[union-attr]
            self.timeouts += 1
        else:
            done(request)  # the host sends its next command now, so the disk picks among all it holds
        self._start()

    @property
    def events(self) -> int:
        return self.timeouts

    def report(self) -> dict[str, float | str]:
        return {"span_fraction": self.drive.span_fraction, "scheduling": self.drive.spec.scheduling}
