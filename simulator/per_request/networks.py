"""The flow engine's own referee: abstract networks of constraints, one SimPy event per request.

(The devices' per-request models are the rest of this package; this module checks the max-min engine itself.)

Each flow becomes a closed loop of requests of `request_size` units with
`depth` requests outstanding (fio's iodepth).  A request visits the flow's
constraints in order; each constraint is a single server that holds a
request for coefficient x size / capacity seconds and picks the next request
round-robin across the flows that have one waiting: the NVMe default
arbitration among submission queues (NVM Express base spec, "Round Robin
Arbitration"), one queue per stream.  Round-robin service of backlogged
streams with equal requests is equal sharing, and a stream held back
elsewhere takes only what it can use, so on networks with one shared
bottleneck per flow the fluid max-min allocation and this per-request model
must agree.

The same `NetworkCase` also runs through the fluid engine (`run_fluid`), so a
test can compare completion times case by case.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import simpy
from iowatt.simulator.flows import FlowEngine, run_until_idle


@dataclass
class FlowCase:
    name: str
    amount: float
    usage: dict[str, float]          # constraint name -> coefficient
    start: float = 0.0
    request_size: float = 1.0
    depth: int = 8


@dataclass
class NetworkCase:
    capacities: dict[str, float]
    flows: list[FlowCase] = field(default_factory=list)


@dataclass
class CaseResult:
    finish_seconds: dict[str, float]
    events: int


def run_fluid(case: NetworkCase) -> CaseResult:
    env = simpy.Environment()
    engine = FlowEngine(env)
    constraints = {name: engine.constraint(name, cap) for name, cap in case.capacities.items()}
    finish: dict[str, float] = {}

    def one(fc: FlowCase):
        yield env.timeout(fc.start)
        flow = engine.start(fc.name, fc.amount, {constraints[c]: k for c, k in fc.usage.items()})
        yield flow.done
        finish[fc.name] = env.now

    for fc in case.flows:
        env.process(one(fc))
    run_until_idle(env, engine)
    return CaseResult(finish, engine.stats.events + engine.stats.batches)


class RoundRobinServer:
    """One server, a queue per stream, served in round-robin order (NVMe SQ arbitration)."""

    __slots__ = ("_cursor", "busy", "env", "queues", "served")

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.queues: dict[str, deque[tuple[simpy.Event, float]]] = {}
        self.busy = False
        self.served = 0
        self._cursor = 0

    def submit(self, stream: str, service_seconds: float) -> simpy.Event:
        done = self.env.event()
        queue = self.queues.get(stream)
        if queue is None:
            queue = self.queues[stream] = deque()
        queue.append((done, service_seconds))
        if not self.busy:
            self._next()
        return done

    def _next(self) -> None:
        streams = list(self.queues)
        for step in range(len(streams)):
            position = (self._cursor + step) % len(streams)
            queue = self.queues[streams[position]]
            if queue:
                self._cursor = position + 1
                done, service = queue.popleft()
                self.busy = True
                self.served += 1
                timer = self.env.timeout(service)
                timer.callbacks.append(lambda _t, done=done: self._finish(done))
                return
        self.busy = False

    def _finish(self, done: simpy.Event) -> None:
        done.succeed()
        self._next()


def run_per_io(case: NetworkCase) -> CaseResult:
    env = simpy.Environment()
    servers = {name: RoundRobinServer(env) for name in case.capacities}
    finish: dict[str, float] = {}

    def request(fc: FlowCase, size: float):
        for cname, k in fc.usage.items():
            yield servers[cname].submit(fc.name, k * size / case.capacities[cname])

    def stream(fc: FlowCase):
        yield env.timeout(fc.start)
        full, tail = divmod(fc.amount, fc.request_size)
        sizes = [fc.request_size] * int(full) + ([tail] if tail > 1e-12 * fc.request_size else [])
        in_flight: list[simpy.Process] = []
        for size in sizes:
            if len(in_flight) >= fc.depth:
                # closed loop: wait for the oldest outstanding request
                yield in_flight.pop(0)
            in_flight.append(env.process(request(fc, size)))
        yield from in_flight
        finish[fc.name] = env.now

    for fc in case.flows:
        env.process(stream(fc))
    env.run()
    return CaseResult(finish, sum(s.served for s in servers.values()))
