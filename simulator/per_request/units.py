"""An SSD's flash units, one request at a time: processor sharing for reads, programs in read-idle time.

c units (models.unit_mva: floor(c) full units and a partial one).
A read goes to the unit its address maps to, unit floor(U x c) for a uniform
U, so a full unit takes a share 1 / c of the reads and the partial unit the
rest, (c - floor(c)) / c.  The k reads a unit holds share it, each at 1 / k of
its speed (processor sharing: multi-plane reads and interleaved channel
transfers share a die's time).  Processor sharing with random routing is
product-form for any service-time distribution (Baskett, Chandy, Muntz &
Palacios 1975), so the mean throughput is exactly models.unit_mva's law
whatever the spread of the service times: their distribution can follow the
datasheet tail without moving the mean.

Programs (the write buffer's drain) are not bound to an address: the FTL
writes wherever a die is free, so they wait in one queue and the next free
full unit takes the next, one program per unit at a time (the partial unit,
a share of the reads' address space, takes none).  A read suspends the
program of its unit (NAND program suspend) until the unit holds no read, so
reads see the law of the reads alone while programs take the full units'
idle time: a full unit is then busy r x S + w x t_w of its time when a
program costs floor(c) x t_w on it (ssd.py), the fluid model's shared media
constraint
r x t_r + w x t_w <= 1.  Garbage-collection work is a unit's own
(`relocate`): a unit relocates before it takes host programs again.

The units are callbacks on SimPy timeouts, not generator processes: one
timeout per completion (plus one that is dropped whenever a unit's sharing
changes before its planned completion), which is what makes the mode fast
enough to referee the fluid model.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

import simpy
from simpy.events import Timeout

Done = Callable[[object], None]
Job = tuple[float, object, Done]  # (work seconds at full speed, request, callback)


class _Unit:
    __slots__ = ("gc", "gen", "last", "prog", "prog_left", "reads", "v_read")

    def __init__(self) -> None:
        self.reads: list[tuple[float, int, object, Done]] = []  # heap of (virtual finish tag, arrival number, request, callback)
        self.v_read = 0.0  # virtual time: the work each read held here has received
        self.prog: Job | None = None  # the program this unit runs (suspended while it holds reads)
        self.prog_left = 0.0  # its remaining work at full speed
        self.gc: deque[Job] = deque()  # relocation work of this unit's own
        self.last = 0.0
        self.gen = 0  # bumped at every reschedule; a timeout carrying an older value is stale


class FlashUnits:
    """c flash units: reads by address with processor sharing, programs from one queue in read-idle time."""

    def __init__(self, env: simpy.Environment, units: float) -> None:
        if not units > 0.0:
            raise ValueError(f"flash units: expected c > 0, found {units!r}")
        self.env = env
        self.c = float(units)
        whole = math.floor(self.c)
        part = self.c - whole
        self.units = [_Unit() for _ in range(whole + (1 if part > 1e-9 else 0))]
        self.writers = max(1, whole)  # units that take programs: the full ones (the only one when c < 1)
        self.queue: deque[Job] = deque()  # host programs waiting for a free unit
        self.idle: set[int] = set(range(self.writers))  # program units with no read and no program
        self.timeouts = 0  # SimPy events scheduled (for the event count)
        self.arrivals = 0  # tie-breaker of equal finish tags in a unit's heap

    def pick(self, uniform: float) -> int:
        """The unit a read with the uniform draw `uniform` maps to."""
        return min(int(uniform * self.c), len(self.units) - 1)

    # ------------------------------------------------------------ arrivals
    def read(self, index: int, work_s: float, request: object, done: Done) -> None:
        unit = self.units[index]
        now = self.env._now
        if not unit.reads and unit.prog is None:  # an idle unit (the usual case below the knee): one timeout
            self.idle.discard(index)
            unit.v_read = 0.0
            unit.last = now
            unit.reads.append((work_s, 0, request, done))
            unit.gen += 1
            timer = Timeout(self.env, work_s, (index, unit.gen))
            timer.callbacks.append(self._fire)  # type: ignore[union-attr]
            self.timeouts += 1
            return
        self._advance(unit, now)
        self.arrivals += 1
        heappush(unit.reads, (unit.v_read + work_s, self.arrivals, request, done))
        self._schedule(unit, index)

    def program(self, work_s: float, request: object, done: Done) -> None:
        """A host program: the next free unit takes it (FIFO)."""
        if self.idle:
            index = self.idle.pop()
            self._start(self.units[index], index, (work_s, request, done))
        else:
            self.queue.append((work_s, request, done))

    def relocate(self, index: int, work_s: float) -> None:
        """Garbage-collection work for unit `index`: it runs before the unit takes host programs again."""
        unit = self.units[index]
        unit.gc.append((work_s, None, _nothing))
        if index in self.idle:
            self.idle.discard(index)
            self._advance(unit, self.env._now)
            self._next_program(unit, index)

    # ------------------------------------------------------------ service
    @staticmethod
    def _advance(unit: _Unit, now: float) -> None:
        elapsed = now - unit.last
        if elapsed > 0.0:
            if unit.reads:
                unit.v_read += elapsed / len(unit.reads)
            elif unit.prog is not None:
                unit.prog_left -= elapsed
        unit.last = now

    def _start(self, unit: _Unit, index: int, job: Job) -> None:
        self._advance(unit, self.env._now)
        unit.prog = job
        unit.prog_left = job[0]
        self._schedule(unit, index)

    def _next_program(self, unit: _Unit, index: int) -> None:
        """A unit free of reads and programs takes its own GC work, else the next host program, else idles."""
        if unit.gc:
            self._start(unit, index, unit.gc.popleft())
        elif index >= self.writers:
            return  # the partial unit serves reads only
        elif self.queue:
            self._start(unit, index, self.queue.popleft())
        else:
            self.idle.add(index)

    def _schedule(self, unit: _Unit, index: int) -> None:
        unit.gen += 1
        reads = unit.reads
        if reads:
            n = len(reads)
            tag = reads[0][0]
            delay = (tag - unit.v_read) * n
        elif unit.prog is not None:
            delay = unit.prog_left
        else:
            return
        timer = Timeout(self.env, delay if delay > 0.0 else 0.0, (index, unit.gen))
        timer.callbacks.append(self._fire)  # type: ignore[union-attr]
        self.timeouts += 1

    def _fire(self, event: simpy.Event) -> None:
        index, gen = event._value
        unit = self.units[index]
        if gen != unit.gen:
            return  # the unit's sharing changed since this completion was planned
        reads = unit.reads
        if len(reads) == 1:  # alone on its unit: no sharing to account for
            tag, _arrival, request, done = reads.pop()
            unit.last = self.env._now
            before = unit.gen
            done(request)
            if unit.gen == before:
                if unit.prog is not None:
                    self._schedule(unit, index)
                elif unit.gc or (self.queue and index < self.writers):
                    self._next_program(unit, index)
                elif index < self.writers:
                    self.idle.add(index)
            return
        self._advance(unit, self.env._now)
        before = unit.gen
        if reads:
            tag, _arrival, request, done = heappop(reads)
            unit.v_read = tag  # snap to the finished read's tag (no drift from rounding)
        else:
            _work, request, done = unit.prog  # type: ignore[misc]
            unit.prog = None
        done(request)
        if unit.gen != before:
            return  # the callback sent a read here and planned the unit's next completion
        if not unit.reads and unit.prog is None:
            self._next_program(unit, index)
        else:
            self._schedule(unit, index)


def _nothing(_request: object) -> None:
    return None
