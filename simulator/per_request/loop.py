"""Closed-loop request sources: streams (fio jobs, gdsio threads, GPU warps) that each keep some requests in flight.

A stream issues its next request the moment one of its requests completes
(zero think time, as fio and gdsio run), until it has issued its share of
requests or the deadline passes; completions after the deadline are not
counted, as fio stops at its runtime, nor those before a ramp time.  A link the bytes cross after the drive
(a GPU's PCIe link for peer-to-peer reads) is a cut-through pacer
(`LinkPacer`): it carries requests one after the other at its rate, from the
moment they are issued, so it adds no latency while it keeps up and caps the
rate at its own when it does not, the fluid model's link constraint.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy
from simpy.events import Timeout

Submit = Callable[[object, float, bool, Callable[[object], None]], None]


class _Request:
    __slots__ = ("due", "start", "stream", "write")

    def __init__(self, stream: int, write: bool, start: float, due: float) -> None:
        self.stream = stream
        self.write = write
        self.start = start
        self.due = due  # when its bytes are through the cut-through link (0: no link)


class LinkPacer:
    """A link of `rate_Bps` its requests cross one after the other, overlapped with the drive (module docstring)."""

    def __init__(self, rate_Bps: float) -> None:
        self.rate_Bps = rate_Bps
        self.free_at = 0.0

    def reserve(self, now: float, size: float) -> float:
        self.free_at = max(now, self.free_at) + size / self.rate_Bps
        return self.free_at


@dataclass
class Streams:
    """Streams of `depths[i]` requests in flight, each issuing at most `requests[i]` requests of `block_bytes`."""

    env: simpy.Environment
    submit: Submit
    block_bytes: float
    depths: list[int]
    requests: list[float]  # math.inf: until the deadline
    read_share: float
    draw: random.Random
    deadline: float = math.inf
    link: LinkPacer | None = None
    issue_pacer: LinkPacer | None = None  # the issuer's own request rate (a GPU's I/O-issue ceiling), as bytes per second
    ramp_s: float = 0.0  # completions before this are not counted (fio's ramp_time)
    on_ramp: Callable[[], None] | None = None  # called when the ramp is over
    latencies: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    stream_end: list[float] = field(default_factory=list)
    events: int = 0
    issued: int = 0  # requests sent to the volume, ramp and unfinished ones included (what the energy counts)
    done: int = 0  # requests completed, ramp included
    all_done: simpy.Event | None = None  # fires when every request is complete (start)

    def run(self) -> None:
        """Issue the first requests and run the environment to the deadline (or until nothing is left)."""
        self.start()
        self.env.run(until=None if math.isinf(self.deadline) else self.deadline)

    def start(self) -> simpy.Event:
        """Issue the first requests now; the returned event fires when every stream has issued its share and all
        its requests are complete (for a phase inside a longer run; never with an endless stream)."""
        self.all_done = self.env.event()
        self.stream_end = [0.0] * len(self.depths)
        if self.on_ramp is not None:
            if self.ramp_s > 0.0:
                mark = Timeout(self.env, self.ramp_s)
                mark.callbacks.append(lambda _event: self.on_ramp())  # type: ignore[union-attr,misc]
            else:
                self.on_ramp()
        for stream, depth in enumerate(self.depths):
            for _ in range(int(min(depth, self.requests[stream]))):
                self._issue(stream)
        return self.all_done

    def _issue(self, stream: int, request: _Request | None = None) -> None:
        """Send the stream's next request (reusing the object of the one that just completed)."""
        self.requests[stream] -= 1
        self.issued += 1
        rs = self.read_share
        write = rs < 1.0 and (rs <= 0.0 or self.draw.random() >= rs)
        now = self.env._now
        due = self.link.reserve(now, self.block_bytes) if self.link is not None else 0.0
        if self.issue_pacer is not None:
            due = max(due, self.issue_pacer.reserve(now, self.block_bytes))
        if request is None:
            request = _Request(stream, write, now, due)
        else:
            request.write, request.start, request.due = write, now, due
        self.submit(request, self.block_bytes, write, self._count if due == 0.0 else self._finished)

    def _finished(self, request: object) -> None:
        r: _Request = request  # type: ignore[assignment]
        now = self.env._now
        if r.due > now:  # its bytes are still on the link
            wait = Timeout(self.env, r.due - now, r)
            wait.callbacks.append(lambda event: self._count(event._value))  # type: ignore[union-attr]
            self.events += 1
            return
        self._count(r)

    def _count(self, request: object) -> None:
        r: _Request = request  # type: ignore[assignment]
        now = self.env._now
        if now > self.deadline:
            return
        if now >= self.ramp_s:
            self.latencies[r.write].append(now - r.start)
        stream = r.stream
        self.stream_end[stream] = now
        self.done += 1
        if self.requests[stream] > 0:
            self._issue(stream, r)
        elif self.done == self.issued and not self.all_done.triggered:
            self.all_done.succeed()

    @property
    def completed(self) -> int:
        return len(self.latencies[0]) + len(self.latencies[1])


class Station:
    """`servers` FCFS servers a request holds for an exponential time of mean `service_s`, then goes on to `then`.

    Exponential FCFS multi-server stations are product-form (Baskett, Chandy, Muntz & Palacios 1975), the
    network models.closed_network solves by MVA for gdsio's host CPU and compat copy engine."""

    def __init__(self, env: simpy.Environment, servers: float, service_s: float, draw: random.Random, then: Submit) -> None:
        self.env = env
        self.servers = max(1, math.floor(servers))
        self.rate = 1.0 / service_s
        self.draw = draw
        self.then = then
        self.busy = 0
        self.events = 0
        self.waiting: deque[tuple[object, float, bool, Callable[[object], None]]] = deque()

    def submit(self, request: object, size: float, write: bool, done: Callable[[object], None]) -> None:
        if self.busy >= self.servers:
            self.waiting.append((request, size, write, done))
            return
        self._serve((request, size, write, done))

    def _serve(self, item: tuple[object, float, bool, Callable[[object], None]]) -> None:
        self.busy += 1
        self.events += 1
        hold = Timeout(self.env, self.draw.expovariate(self.rate), item)
        hold.callbacks.append(self._release)  # type: ignore[union-attr]

    def _release(self, event: simpy.Event) -> None:
        self.busy -= 1
        if self.waiting:
            self._serve(self.waiting.popleft())
        self.then(*event._value)  # type: ignore[attr-defined]


class Delay:
    """A fixed delay every request spends (an infinite server: a copy's launch and completion), then `then`."""

    def __init__(self, env: simpy.Environment, delay_s: float, then: Submit) -> None:
        self.env = env
        self.delay_s = delay_s
        self.then = then
        self.events = 0

    def submit(self, request: object, size: float, write: bool, done: Callable[[object], None]) -> None:
        self.events += 1
        wait = Timeout(self.env, self.delay_s, (request, size, write, done))
        wait.callbacks.append(lambda event: self.then(*event._value))  # type: ignore[union-attr,attr-defined]


class StreamOrder:
    """Each stream's requests reach `inner` one at a time, in issue order (a CUDA stream's work runs in order)."""

    def __init__(self, inner: Submit) -> None:
        self.inner = inner
        self.busy: set[int] = set()
        self.waiting: dict[int, deque[tuple[object, float, bool, Callable[[object], None]]]] = {}

    def submit(self, request: object, size: float, write: bool, done: Callable[[object], None]) -> None:
        r: _Request = request  # type: ignore[assignment]
        stream = r.stream
        if stream in self.busy:
            self.waiting.setdefault(stream, deque()).append((request, size, write, done))
            return
        self.busy.add(stream)
        self.inner(request, size, write, lambda r, done=done, stream=stream: self._release(stream, r, done))

    def _release(self, stream: int, request: object, done: Callable[[object], None]) -> None:
        self.busy.discard(stream)
        queue = self.waiting.get(stream)
        if queue:
            self.submit(*queue.popleft())
        done(request)
