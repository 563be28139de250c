"""Scale-out volumes as service stations: each station an engine constraint and a stage of one closed loop.

The scale-out kinds (cluster, parallel_fs, object) describe a request as work
at stations (a client's cores and NIC ports, a server's NIC ports, cores and
drives) and solve the closed loop of the requests in flight by MVA
(models.mva).  What they share is here:

- `StationVolume.station(name, servers, stations, rate, lumped)`: an engine
  constraint of `servers x rate` work units per second for one station, or for
  all `stations` of a kind when they are not lumped (identical clients as one
  aggregate); a lumped constraint stands for one representative node whose
  meters count for all of them;
- `add(plan, name, work, branches, background)`: a stage of the loop and the
  matching engine usage per host byte;
- the loop's *unit*: the cluster's unit is the host request; a parallel file
  system's is an RPC, an object store's a part (a host request is `units` of
  them, in flight together, at most `window` over all clients), so the law
  handed to workloads is the loop's unit rate over `units`;
- report(): every station's mean utilisation over the run and the busiest one
  as `binding_constraint`.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field

from iowatt.models import mva
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.machine import HostRuntime, ServerNode
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage, Volume
from iowatt.simulator.storage.shared import scale_meter
from iowatt.simulator.storage.striped import StripedVolume


class Busy:
    """Dynamics with no breakpoint that integrates its constraint's load (work done up to now)."""

    __slots__ = ("integral",)

    def __init__(self) -> None:
        self.integral = 0.0

    def advance(self, elapsed_seconds: float, load: float) -> None:
        self.integral += load * elapsed_seconds

    def seconds_to_breakpoint(self, load: float) -> float:
        del load
        return math.inf

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        del engine, constraint


def watch(constraint: Constraint) -> Busy | None:
    """Integrate the load of a constraint the workload shares with the storage stack (a client host's CPU,
    its DRAM): the binding station may be the host's own.  A constraint with a state of its own is left alone."""
    if constraint.dynamics is None:
        constraint.dynamics = Busy()
    return constraint.dynamics if isinstance(constraint.dynamics, Busy) else None


@dataclass
class Station:
    """One kind of service station: `servers` per station, `stations` of them, each server doing `rate` work units per second."""

    constraint: Constraint
    servers: float
    stations: float
    rate: float          # work units (reference-core seconds, bytes) one server does per second
    lumped: bool         # the constraint stands for one of the stations (a node), not all (the clients)
    busy: Busy | None = None

    def cost(self, work_per_request: float, block_bytes: float) -> float:
        """Engine coefficient per host byte of a request that takes `work_per_request` from this kind of station."""
        return work_per_request / block_bytes / (self.stations if self.lumped else 1.0)


@dataclass
class Plan:
    """One access: its stages for the MVA (per unit), its usage for the engine (per host byte), its delays.

    `units`: loop units (RPCs, parts) one host request is; `window`: units all clients may have in flight."""

    unit_bytes: float
    units: float = 1.0
    window: float = math.inf
    stages: list[mva.Stage] = field(default_factory=list)
    usage: Usage = field(default_factory=list)
    delay_s: float = 0.0
    path: str = ""


class StationVolume(Volume):
    """A Volume whose requests cross service stations solved as one closed loop (module docstring)."""

    paths_key = "paths"  # the report's name for the request paths taken (the cluster's are its erasure paths)

    def __init__(self, engine: FlowEngine, host: HostRuntime, server: ServerNode, chains: int) -> None:
        self.engine = engine
        self.host = host
        self.server = server
        self.chains = int(chains)  # identical clients; each has a private station of every `cluster.clients.*` kind
        self.started_s = engine.env.now
        self.paths: set[str] = set()
        self.stations: dict[str, Station] = {}
        self.drives_busy = Busy()
        self.drives_probe = engine.constraint("node.drives_busy", math.inf, dynamics=self.drives_busy)

    def station(self, name: str, servers: float, stations: float, rate: float, lumped: bool) -> None:
        busy = Busy()
        capacity = servers * rate * (1.0 if lumped else stations)
        constraint = self.engine.constraint(name, capacity, dynamics=busy)
        self.stations[name] = Station(constraint, servers, stations, rate, lumped, busy)

    def watch_host(self, alive: float) -> None:
        """The server's DRAM (lumped over `alive` nodes) and the client hosts' CPU and DRAM (one aggregate) as stations."""
        server, host, clients = self.server, self.host, float(self.chains)
        self.stations["node.memory"] = Station(server.memory, 1, alive, server.memory.capacity, True, watch(server.memory))
        self.stations["host.cpu"] = Station(host.cpu, host.cores / clients, clients, 1.0, False, watch(host.cpu))  # real core-seconds
        self.stations["host.memory"] = Station(host.memory, 1.0, clients, host.memory.capacity / clients, False, watch(host.memory))

    def add(self, plan: Plan, name: str, work_per_branch: float, branches: float = 1.0, background: float = 0.0) -> None:
        """A stage of `branches` x `work_per_branch` work units per loop unit (plus `background`) at station `name`."""
        station = self.stations[name]
        total = work_per_branch * branches + background
        if total <= 0.0:
            return
        plan.usage.append((station.constraint, station.cost(total, plan.unit_bytes)))
        plan.stages.append(mva.Stage(name, work_per_branch / station.rate, station.servers, station.stations, branches,
                                     background / station.rate, private=not station.lumped))

    def client_side(self) -> list[Constraint]:
        """The per-client stations (NIC ports, NIC cards' PCIe, frontend cores): `clients` x one client's."""
        return [st.constraint for name, st in self.stations.items() if name.startswith("cluster.clients.")]

    @abstractmethod
    def plan(self, access: Access) -> Plan:
        """The stages, usage and delays of one loop unit of `access`."""

    def usage(self, access: Access) -> Usage:
        plan = self.plan(access)
        self.paths.add(plan.path)
        return plan.usage

    def solve(self, access: Access) -> mva.Solution:
        """The closed loop of `access.queue_depth` requests (throughput in loop units, each stage's utilisation)."""
        plan = self.plan(access)
        population = min(access.queue_depth * plan.units, max(1.0, plan.window))
        return mva.solve(plan.stages, population, float(self.chains), plan.delay_s)

    def qd1_latency_s(self, access: Access) -> float:
        """One request alone: its units in flight together (up to the window), each a unit's response time alone."""
        plan = self.plan(access.with_(queue_depth=1.0))
        population = min(plan.units, max(1.0, plan.window))
        if population <= 1.0:
            return mva.response_s(plan.stages, 0.0, 1.0, 1.0, plan.delay_s)
        solution = mva.solve(plan.stages, population, float(self.chains), plan.delay_s)
        return plan.units / solution.throughput

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The MVA solution at the access's queue depth, as the law's queueing time per further request."""
        n = access.queue_depth
        l0 = self.qd1_latency_s(access)
        if n <= 1.0:
            return ConcurrencyLaw(l0)
        plan = self.plan(access)
        host_rate = self.solve(access).throughput / plan.units
        return ConcurrencyLaw(l0, max(0.0, (n / host_rate - l0) / (n - 1.0)))

    def report(self) -> dict[str, object]:
        out = super().report()
        elapsed = self.engine.env.now - self.started_s
        if elapsed <= 0.0:
            return out
        util = {name: s.busy.integral / (s.constraint.capacity * elapsed)
                for name, s in self.stations.items() if s.busy is not None and s.constraint.capacity > 0.0}
        util["node.drives"] = self.drives_busy.integral / elapsed
        busiest = max(util, key=lambda name: util[name])
        out["station_utilisation"] = {name: round(u, 4) for name, u in sorted(util.items(), key=lambda kv: -kv[1])}
        out["binding_constraint"] = f"{busiest} ({100.0 * util[busiest]:.0f} % busy)"
        out[self.paths_key] = sorted(self.paths)
        return out

    def add_drives(self, plan: Plan, pool: StripedVolume, piece: Access, pieces: float, nodes: float) -> None:
        """`pieces` drive pieces per loop unit spread over `nodes` identical nodes' pools (one representative pool
        carries 1 / nodes of them): engine usage per host byte, and the pool's law (models.ssd: L0 over c = L0 / S
        flash units) as a stage of c units per node; a pool with no queueing law is a delay."""
        share = pieces * piece.block_bytes / (plan.unit_bytes * nodes)
        drive_usage = pool.usage(piece)
        plan.usage += [(con, k * share) for con, k in drive_usage]
        busy = share * max((k / con.capacity for con, k in drive_usage if 0.0 < con.capacity < math.inf), default=0.0)
        if busy > 0.0:
            plan.usage.append((self.drives_probe, busy))
        law = pool.concurrency(piece)
        if law.queue_seconds <= 0.0:
            plan.delay_s += law.qd1_latency_s
            return
        units = law.qd1_latency_s / law.queue_seconds
        plan.stages.append(mva.Stage(f"node.drives.{piece.op}", law.qd1_latency_s, 1.0, nodes * units, pieces))


class PooledVolume(StationVolume):
    """A station volume over `count` identical drives holding k+m coded data, one representative drive standing for
    all (a piece stays on its drive: the pool is one drive, not a stripe over a node's drives)."""

    def use_pool(self, pool: StripedVolume, count: int, k: int, m: int, nodes: float) -> None:
        """Take the pool; the server's meters count for `nodes` nodes and the drive's for `count` drives."""
        self.pool = pool
        self.drive_count = float(count)
        self.k, self.m = k, m
        for meter in (self.server.meter, self.server.base_meter):
            scale_meter(self.engine, meter, nodes)
        for drive in pool.unique_drives:
            scale_meter(self.engine, drive.meter, self.drive_count)

    @property
    def drives(self) -> list[Drive]:
        return self.pool.drives * int(self.drive_count)

    @property
    def capacity_bytes(self) -> float:
        return self.pool.capacity_bytes * self.drive_count * self.k / (self.k + self.m)

    def discard(self, nbytes: float) -> None:
        self.pool.discard(nbytes * (self.k + self.m) / self.k / self.drive_count)

    def stored_shares(self) -> list[tuple[Drive, float]]:
        """Each drive stores (k + m) / k of the data over all drives."""
        per_drive = (self.k + self.m) / self.k / self.drive_count
        return [(d, s * per_drive) for d, s in self.pool.stored_shares()]
