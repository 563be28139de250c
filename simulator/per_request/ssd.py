"""One SSD, one request at a time: flash units for reads, a write buffer drained by programs, GC pauses.

Everything is read from the drive's runtime (simulator.storage.ssd) through
the storage contract, so both modes share one law:

Reads.  `drive.concurrency(access)` gives L0, S and c (the concurrency law,
models.ssd / models.unit_mva).  A read goes to one of the c units
(units.py) and holds it for L0 x F, F the lognormal spread of latency.py;
c units of L0 each serve 1 / S reads per second, and processor sharing
keeps the mean exactly the law's.

Writes.  A write is acknowledged from the power-protected buffer after the
drive's QD1 write latency (x F) once the buffer has room for it, and its
program goes to a unit, where it runs only while the unit holds no read
(units.py).  A program costs the drive's time per written request from its
usage, max(media, write path, PCIe link, power cap) seconds, i.e. floor(c)
times that on one of the floor(c) full units.  Until the buffer fills, writes run at N / L0 (the
asymptotic bound of the fluid law); once it is full they run at the program
rate, the fluid model's write ceiling.  The buffer's size only sets how
fast the buffer fills and how sharp that knee is, not the rates.

Power cap.  Where the NVMe power state's cap can bind for a class of reads
(their energy at the drive's read ceiling exceeds cap - idle), each read
also crosses a power pacer: the drive's budget, cap - idle watts, spends its
joules one request after another from the moment it is issued, and the
read is not complete before its share is spent (NVMe ACTP throttles the
drive until it fits; the fluid model's power constraint).  A write's program
time already includes the cap.

Garbage collection.  On a drive where GC runs (filled or past its first
pass, random writes), part of each write's program time is the relocation
GC does for it: (WA - 1) / WA of it (the drive's FTL state, models.ftl).
That part is not spread over the programs but paid in rounds: after every
gc_round_bytes of host writes each unit stops for the relocation those
writes owe, a pause of ~gc_round_bytes / block x the per-write GC time.
The mean is unchanged; the pauses fill the buffer and give writes their
tail.  Reads suspend GC like any program.

The drive's state (fill, pSLC cache, GC) is read once when the run starts:
per-request runs are short (simulator.per_request.budget), a small fraction
of a drive's capacity, so the state moves little during one.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Protocol

from iowatt.models.ssd import SSDSpec, iu_factor
from iowatt.models.uncertainty import assumed_constant, constant
from iowatt.simulator.flows import Constraint
from iowatt.simulator.per_request.energy import Busy, Joules, busy_per_request, joules_per_request
from iowatt.simulator.per_request.latency import Factors, read_sigma, write_sigma
from iowatt.simulator.per_request.units import FlashUnits
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, RequestRun, Usage
from simpy.events import Timeout

Done = Callable[[object], None]

WRITE_BUFFER = assumed_constant(
    "simulator.per_request.ssd.write_buffer_bytes", 8 * 2**20, low=2 * 2**20, high=32 * 2**20, shape="log-uniform",
    note="enterprise NVMe drives hold acknowledged writes in DRAM that their hold-up capacitors can flush on power "
    "loss, a few MiB; only the time to fill it and the sharpness of the write knee depend on the size",
    range_note="low: 2 MiB, one open page stripe of a small controller (a few dies x 16 KiB pages x planes); high: "
    "32 MiB, a larger share of the drive's DRAM that its capacitors can still flush")
GC_ROUND = assumed_constant(
    "simulator.per_request.ssd.gc_round_bytes", 4 * 2**20, low=2**20, high=16 * 2**20, shape="log-uniform",
    note="firmware collects garbage in small steps to bound write latency (incremental GC): a step stops each unit for "
    "the relocation ~4 MiB of host writes owe (pauses of a few ms on a filled TLC drive); only the pauses' length "
    "depends on it",
    range_note="low: 1 MiB, sub-millisecond pauses (a controller tuned for write QoS); high: 16 MiB, pauses of "
    "tens of ms, the write-latency outliers enterprise QoS specs bound at 99.99 %")


class FlashDrive(Protocol):
    """What the per-request face reads from an SSD's runtime (simulator.storage.ssd.SsdDrive): its fluid face."""

    spec: SSDSpec
    power: Constraint  # the dynamic power budget (cap - idle - busy floor)

    @property
    def queue_limit(self) -> int | None: ...

    def usage(self, access: Access, share: float = 1.0) -> Usage: ...

    def qd1_latency_s(self, access: Access) -> float: ...

    def concurrency(self, access: Access) -> ConcurrencyLaw: ...

    def write_amplification(self, access: Access) -> float: ...


def _per_request_seconds(usage: Usage, request_bytes: float) -> float:
    """The drive time one request needs: its busiest constraint, coefficient x bytes / capacity."""
    worst = 0.0
    for constraint, coefficient in usage:
        if 0.0 < constraint.capacity < math.inf:
            worst = max(worst, coefficient * request_bytes / constraint.capacity)
    return worst


class _Held:
    """A command the drive holds, and whom to tell when it completes."""

    __slots__ = ("done", "request")

    def __init__(self, request: object, done: Done) -> None:
        self.request = request
        self.done = done


class SsdRequests:
    """One SSD of a volume in the per-request mode (module docstring)."""

    def __init__(self, run: RequestRun, drive: FlashDrive, piece: Access) -> None:
        """`piece`: the requests this drive sees (block size, pattern, overwrite, the file the writes go to: its
        stored WA, as the fluid fio job's; None: the drive's state)."""
        self.env = run.env
        self.drive = drive
        self.file = piece.file
        self.draw = run.draw
        self.tally = run.tally()  # {request class: [joules per request, requests, busy terms per request]}
        self.pattern = piece.pattern
        self.overwrite = piece.overwrite
        rng = run.rng
        read = Access("read", piece.block_bytes, piece.pattern)
        law = drive.concurrency(read)
        self.units = FlashUnits(run.env, law.unit_count or law.qd1_latency_s / law.queue_seconds)
        self.last_unit = len(self.units.units) - 1
        sigma_r, self.read_sigma_source = read_sigma(drive.spec)
        sigma_w, self.write_sigma_source = write_sigma(drive.spec)
        self.read_spread = Factors(rng, sigma_r)
        self.write_spread = Factors(rng, sigma_w)
        self.sigmas = (sigma_r, sigma_w)
        self.buffer_bytes = constant(WRITE_BUFFER.name)
        self.gc_round_bytes = constant(GC_ROUND.name)
        self._classes: dict[tuple[bool, float], tuple[float, float, float, list[Joules | int | Busy]]] = {}
        self._power: dict[tuple[bool, float], float] = {}
        self.power_free_at = 0.0
        self.limit = drive.queue_limit  # commands the drive holds (None: more than any host keeps outstanding)
        self.inflight = 0
        self.host_queue: deque[tuple[object, float, bool, Done]] = deque()
        self.buffer_used = 0.0
        self.waiting: deque[tuple[object, float, Done]] = deque()
        self.gc_owed_s = 0.0  # GC drive time the writes since the last round owe
        self.gc_bytes = 0.0
        self.gc_rounds = 0

    # ------------------------------------------------------------ request classes
    def _class(self, write: bool, size: float) -> tuple[float, float, float, list[Joules | int | Busy]]:
        """(latency or ack seconds, program seconds per request, of which GC, [joules, count]) for requests of `size`."""
        key = (write, size)
        known = self._classes.get(key)
        if known is not None:
            return known
        access = Access("write" if write else "read", size, self.pattern, 1.0, overwrite=self.overwrite and write, file=self.file if write else None)
        usage = self.drive.usage(access)
        tally: list[Joules | int | Busy] = [joules_per_request(usage, size), 0, busy_per_request(usage, size)]
        self.tally[key] = tally
        latency = self.drive.qd1_latency_s(access)
        if not write:
            law = self.drive.concurrency(access)
            # c units x S each = L0 (the law has no delay for reads); the unit time is what the law queues
            made = (self.units.c * law.queue_seconds, 0.0, 0.0, tally)
        else:
            program = _per_request_seconds(usage, size)
            gc = 0.0
            # the FTL's greedy GC at the drive's state (models.ftl); the indirection unit's read-modify-write is
            # part of every small random write, not of GC, so it stays in the program time
            wa = self.drive.write_amplification(access) / (iu_factor(self.drive.spec, size) if self.pattern == "rand" else 1.0)
            if wa > 1.0:
                gc = program * (1.0 - 1.0 / wa)
            made = (latency, program, gc, tally)
        self._classes[key] = made
        return made

    # ------------------------------------------------------------ requests
    def submit(self, request: object, size: float, write: bool, done: Done) -> None:
        """A request (or a piece of one) to this drive; `done(request)` when it completes (a write: when acknowledged)."""
        budget_s = self._power_seconds(write, size)
        if budget_s > 0.0:  # the drive's power cap can bind for these requests: they cross its power pacer
            due = self.power_free_at = max(self.env._now, self.power_free_at) + budget_s
            request, done = _Held(request, done), partial(self._paced, due)
        if self.limit is None:
            self._dispatch(request, size, write, done)
        elif self.inflight >= self.limit:  # the drive holds no more commands (SATA NCQ: 32): wait in the host queue
            self.host_queue.append((request, size, write, done))
        else:
            self.inflight += 1
            self._dispatch(_Held(request, done), size, write, self._release)

    def _power_seconds(self, write: bool, size: float) -> float:
        """Seconds of the power budget (cap - idle) a request's energy takes, when the cap can bind for its class:
        the NVMe power state throttles the drive until it fits (ACTP), the fluid model's power constraint.  0 when
        the drive at its ceiling for the class stays under the cap."""
        key = (write, size)
        known = self._power.get(key)
        if known is None:
            power = self.drive.power  # the fluid model's budget constraint: the cap less idle and the busy floor
            access = Access("write" if write else "read", size, self.pattern, 1.0, overwrite=self.overwrite and write, file=self.file if write else None)
            joules = size * sum(c for constraint, c in self.drive.usage(access) if constraint is power)
            busiest = self._class(write, size)[1] if write else self.drive.concurrency(Access("read", size, self.pattern)).queue_seconds
            budget = power.capacity
            known = self._power[key] = joules / budget if busiest > 0.0 and joules / busiest > budget else 0.0
        return known

    def _paced(self, due: float, held: object) -> None:
        h: _Held = held  # type: ignore[assignment]
        now = self.env._now
        if due <= now:
            h.done(h.request)
            return
        wait = Timeout(self.env, due - now, h)
        wait.callbacks.append(lambda event: event._value.done(event._value.request))  # type: ignore[union-attr]
        self.units.timeouts += 1

    def _release(self, held: object) -> None:
        h: _Held = held  # type: ignore[assignment]
        self.inflight -= 1
        if self.host_queue:
            request, size, write, done = self.host_queue.popleft()
            self.inflight += 1
            self._dispatch(_Held(request, done), size, write, self._release)
        h.done(h.request)

    def _dispatch(self, request: object, size: float, write: bool, done: Done) -> None:
        made = self._classes.get((write, size))
        latency, program, gc, tally = made if made is not None else self._class(write, size)
        tally[1] += 1  # type: ignore[operator]
        if not write:
            units = self.units
            index = int(self.draw.random() * units.c)  # the unit the read's address maps to (units.pick, inlined)
            units.read(index if index < self.last_unit else self.last_unit, latency * self.read_spread.next(), request, done)
            return
        if self.drive.spec.writes_queue:  # no buffer (a virtual disk): writes queue on the units like reads
            self.units.read(self.units.pick(self.draw.random()), self.units.c * program * self.write_spread.next(), request, done)
            return
        if self.buffer_used + size > self.buffer_bytes and self.buffer_used > 0.0:
            self.waiting.append((request, size, done))
            return
        self._admit(request, size, done, latency, program, gc)

    def _admit(self, request: object, size: float, done: Done, latency: float, program: float, gc: float) -> None:
        self.buffer_used += size
        ack = Timeout(self.env, latency * self.write_spread.next(), request)
        ack.callbacks.append(lambda event, done=done: done(event._value))  # type: ignore[union-attr]
        self.units.timeouts += 1
        self.units.program(self.units.writers * (program - gc), size, self._programmed)
        if gc > 0.0:
            self.gc_owed_s += gc
            self.gc_bytes += size
            if self.gc_bytes >= self.gc_round_bytes:
                self._gc_round()

    def _gc_round(self) -> None:
        """Every unit relocates what the writes since the last round owe (c x owed unit-seconds in all)."""
        for index in range(self.units.writers):
            self.units.relocate(index, self.gc_owed_s)  # writers x owed unit-seconds: the drive time owed
        self.gc_rounds += 1
        self.gc_owed_s = 0.0
        self.gc_bytes = 0.0

    def _programmed(self, size: object) -> None:
        self.buffer_used -= float(size)  # type: ignore[arg-type]
        while self.waiting and (self.buffer_used + self.waiting[0][1] <= self.buffer_bytes or self.buffer_used <= 0.0):
            request, nbytes, done = self.waiting.popleft()
            latency, program, gc, _tally = self._class(True, nbytes)
            self._admit(request, nbytes, done, latency, program, gc)

    @property
    def events(self) -> int:
        return self.units.timeouts

    def report(self) -> dict[str, float | str]:
        return {"flash_units": self.units.c, "read_sigma": self.sigmas[0], "write_sigma": self.sigmas[1],
                "read_sigma_source": self.read_sigma_source, "write_sigma_source": self.write_sigma_source,
                "gc_rounds": float(self.gc_rounds)}
