"""An SSD's flash units, one request at a time: processor-sharing servers with reads before programs.

c units (models.closed_network: floor(c) full units and a partial one): a
request goes to unit floor(U x c), U uniform, so a full unit takes a share
1 / c of the requests and the partial unit the rest, (c - floor(c)) / c.
Each unit is a processor-sharing server: the k reads it holds progress at
1 / k of its speed each (multi-plane reads and interleaved channel transfers
share a die's time).  Processor sharing with random routing is product-form
for any service-time distribution (Baskett, Chandy, Muntz & Palacios 1975),
so the mean throughput is exactly models.closed_network's law whatever the
spread of the service times: their distribution can follow the datasheet
tail without moving the mean.

Programs (the write buffer's drain and garbage collection) run on the same
units but only while a unit holds no read: reads suspend programs (NAND
program suspend), so reads see the law of the reads alone while programs
take the units' idle time, and together they never exceed the units' time
(the fluid model's shared media constraint, r x t_r + w x t_w <= 1).

The units are callbacks on SimPy timeouts, not generator processes: one
timeout per completion (plus one that is dropped each time a unit's
sharing changes before its next completion), which is what makes the mode
fast enough to referee the fluid model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import simpy
from simpy.events import Timeout

Done = Callable[[object], None]


def _first(held: list[tuple[float, object, Done]]) -> int:
    """Index of the request with the smallest finish tag (lists are a few long)."""
    best, tag = 0, held[0][0]
    for i in range(1, len(held)):
        if held[i][0] < tag:
            best, tag = i, held[i][0]
    return best


class _Unit:
    __slots__ = ("gen", "last", "progs", "reads", "v_prog", "v_read")

    def __init__(self) -> None:
        self.reads: list[tuple[float, object, Done]] = []  # (virtual finish tag, request, callback)
        self.progs: list[tuple[float, object, Done]] = []
        self.v_read = 0.0  # virtual time: work each read held here has received
        self.v_prog = 0.0
        self.last = 0.0
        self.gen = 0  # bumped at every reschedule; a timeout carrying an older value is stale


class FlashUnits:
    """c processor-sharing units with random routing, reads before programs (module docstring)."""

    def __init__(self, env: simpy.Environment, units: float) -> None:
        if not units > 0.0:
            raise ValueError(f"flash units: expected c > 0, found {units!r}")
        self.env = env
        self.c = float(units)
        whole = math.floor(self.c)
        self.units = [_Unit() for _ in range(whole + (1 if self.c - whole > 1e-9 else 0))]
        self.timeouts = 0  # SimPy events scheduled (for the event count)

    def pick(self, uniform: float) -> int:
        """The unit a request with the uniform draw `uniform` maps to."""
        return min(int(uniform * self.c), len(self.units) - 1)

    # ------------------------------------------------------------ arrivals
    def read(self, unit_index: int, work_s: float, request: object, done: Done) -> None:
        unit = self.units[unit_index]
        now = self.env._now
        self._advance(unit, now)
        unit.reads.append((unit.v_read + work_s, request, done))
        self._schedule(unit, unit_index)

    def program(self, unit_index: int, work_s: float, request: object, done: Done) -> None:
        unit = self.units[unit_index]
        now = self.env._now
        self._advance(unit, now)
        unit.progs.append((unit.v_prog + work_s, request, done))
        if not unit.reads:
            self._schedule(unit, unit_index)

    # ------------------------------------------------------------ processor sharing
    @staticmethod
    def _advance(unit: _Unit, now: float) -> None:
        elapsed = now - unit.last
        if elapsed > 0.0:
            if unit.reads:
                unit.v_read += elapsed / len(unit.reads)
            elif unit.progs:
                unit.v_prog += elapsed / len(unit.progs)
        unit.last = now

    def _schedule(self, unit: _Unit, index: int) -> None:
        unit.gen += 1
        if unit.reads:
            held, virtual = unit.reads, unit.v_read
        elif unit.progs:
            held, virtual = unit.progs, unit.v_prog
        else:
            return
        tag = held[0][0] if len(held) == 1 else held[_first(held)][0]
        timer = Timeout(self.env, max(0.0, (tag - virtual) * len(held)), (index, unit.gen))
        timer.callbacks.append(self._fire)  # type: ignore[union-attr]
        self.timeouts += 1

    def _fire(self, event: simpy.Event) -> None:
        index, gen = event._value
        unit = self.units[index]
        if gen != unit.gen:
            return  # the unit's sharing changed since this completion was planned
        self._advance(unit, self.env._now)
        held = unit.reads if unit.reads else unit.progs
        position = 0 if len(held) == 1 else _first(held)
        tag, request, done = held.pop(position)
        if held is unit.reads:
            unit.v_read = tag  # snap to the finished request's tag (no drift from rounding)
        else:
            unit.v_prog = tag
        before = unit.gen
        done(request)
        if unit.gen == before:  # the callback sent nothing to this unit: plan its next completion
            self._schedule(unit, index)
