"""Per-request SimPy oracles for the concurrency laws, shared by the law, array, NFS, GDS and fio tests.

Each is a closed loop: `clients` requests cycle with zero think time, one event per step of a request;
the throughput and mean latency are measured after a 10 % warm-up and up to the last request counted (`closed_loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

Step = Callable[[], Generator[Any, Any, None]]


def closed_loop(env: simpy.Environment, clients: int, request: Step, requests: int) -> tuple[float, float]:
    """Run `clients` loops of `request` (one request's steps) until `requests` are done: (throughput, mean latency).

    Measured from the (requests / 10)-th completion to the requests-th, when the run stops: a run left to
    drain its last clients-1 requests measures a population that falls to zero at the end, and read
    1.4 % low on average (up to 5 %) at 52 clients over 12000 requests, the array referee's +5.2 % draw."""
    done, latency = [0], [0.0]
    warm, t_warm = requests // 10, [0.0]
    finished = env.event()

    def client():
        while not finished.triggered:
            start = env.now
            yield from request()
            if finished.triggered:
                return
            done[0] += 1
            if done[0] > warm:
                latency[0] += env.now - start
            if done[0] == warm:
                t_warm[0] = env.now
            if done[0] == requests:
                finished.succeed()

    for _ in range(clients):
        env.process(client())
    env.run(until=finished)
    measured = requests - warm
    return measured / (env.now - t_warm[0]), latency[0] / measured


def hold(env: simpy.Environment, rng: np.random.Generator, resource: simpy.Resource, mean_s: float):
    """Wait for `resource`, then hold it for an exponential time of mean `mean_s`."""
    with resource.request() as req:
        yield req
        yield env.timeout(float(rng.exponential(mean_s)))


def per_io_units(n: int, units: int, unit_s: float, requests: int = 12000, seed: int = 11) -> float:
    """Throughput (requests/s) of n clients, each request sent to one of `units` FCFS flash units chosen
    at random, exponential service of mean unit_s: the network models.ssd's law solves by MVA."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    servers = [simpy.Resource(env, capacity=1) for _ in range(units)]

    def request():
        yield from hold(env, rng, servers[int(rng.integers(units))], unit_s)

    return closed_loop(env, n, request, requests)[0]


def per_request_array(
    clients: int,
    drives: int,
    unit_s: float,
    units: int = 1,
    queue_limit: int | None = None,
    service_at_depth: list[float] | None = None,
    requests: int = 12000,
    seed: int = 7,
    service_scv: list[float] | None = None,
) -> tuple[float, float]:
    """(throughput requests/s, mean latency s) of `clients` requests in a closed loop over `drives` drives.

    Each request goes to a drive chosen at random (a RAID layout's random placement), waits there for one
    of the drive's `queue_limit` command slots (SATA NCQ: the rest wait in the host queue), then for a
    flash unit chosen at random among `units` (exponential service of mean unit_s).  With
    `service_at_depth` a drive is one actuator instead: it serves one command at a time, and a command's
    exponential service has the mean service_at_depth[k - 1] when it starts with k commands at the drive
    (reordering among what the drive holds, models.hdd); with `service_scv` that service is a gamma of squared
    coefficient of variation service_scv[k - 1] instead (a disk's seek + rotation vary far less than an exponential)."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    slots = [simpy.Resource(env, capacity=queue_limit or clients) for _ in range(drives)]
    flash = [[simpy.Resource(env, capacity=1) for _ in range(units)] for _ in range(drives)]
    actuator = [simpy.Resource(env, capacity=1) for _ in range(drives)]
    held = [0] * drives

    def serve(d: int):
        if service_at_depth is None:
            yield from hold(env, rng, flash[d][int(rng.integers(units))], unit_s)
            return
        with actuator[d].request() as arm:
            yield arm
            k = min(held[d], len(service_at_depth))
            mean = service_at_depth[k - 1]
            if service_scv is None:
                yield env.timeout(float(rng.exponential(mean)))
            else:
                c2 = service_scv[min(k, len(service_scv)) - 1]
                yield env.timeout(float(rng.gamma(1.0 / c2, mean * c2)))

    def request():
        d = int(rng.integers(drives))
        with slots[d].request() as slot:
            yield slot
            held[d] += 1
            yield from serve(d)
            held[d] -= 1

    return closed_loop(env, clients, request, requests)


def per_request_nfs(
    clients: int,
    window: int,
    round_trip_s: float,
    wire_s: float,
    threads: int,
    cores: int,
    cpu_s: float,
    drives: int,
    units: int,
    unit_s: float,
    requests: int = 12000,
    seed: int = 9,
) -> tuple[float, float]:
    """(throughput, mean latency) of `clients` NFS READs in a closed loop.

    A request takes one of `window` client slots, crosses the wire (an exponential round trip of mean
    round_trip_s, then FCFS serialisation of mean wire_s on the NIC), waits for one of `threads` nfsd
    threads, holds it for its CPU time (one of `cores` cores, exponential of mean cpu_s) and its read
    from the export: a drive chosen at random among `drives`, a flash unit at random among `units`
    (exponential of mean unit_s)."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    slots = simpy.Resource(env, capacity=window)
    nic = simpy.Resource(env, capacity=1)
    pool = simpy.Resource(env, capacity=threads)
    cpu = simpy.Resource(env, capacity=cores)
    flash = [[simpy.Resource(env, capacity=1) for _ in range(units)] for _ in range(drives)]

    def request():
        with slots.request() as slot:
            yield slot
            yield env.timeout(float(rng.exponential(round_trip_s)))
            yield from hold(env, rng, nic, wire_s)
            with pool.request() as thread:
                yield thread
                yield from hold(env, rng, cpu, cpu_s)
                yield from hold(env, rng, flash[int(rng.integers(drives))][int(rng.integers(units))], unit_s)

    return closed_loop(env, clients, request, requests)


def mva(demands_s: list[float], delay_s: float, n: int) -> float:
    """Exact single-class MVA (Lazowska et al., Quantitative System Performance, 1984, ch. 6): mean latency of n
    customers over queueing stations of the given demands (seconds per visit x visits) and a pure delay."""
    queues = [0.0] * len(demands_s)
    latency = delay_s + sum(demands_s)
    for k in range(1, n + 1):
        times = [d * (1.0 + q) for d, q in zip(demands_s, queues, strict=True)]
        latency = delay_s + sum(times)
        x = k / latency
        queues = [x * t for t in times]
    return latency


def law_latency(l0: float, service: float, n: float, units: float | None = None) -> float:
    """The SSD concurrency law's mean latency by the textbook MVA: c = L0 / S (or `units`) units, floor(c) of demand
    S and one of demand (c - floor(c)) S, plus a delay L0 - c S; a fractional n interpolates between integers."""
    if service <= 0.0:
        return l0
    c = l0 / service if units is None else min(units, l0 / service)
    whole = int(c)
    demands = [service] * whole + ([(c - whole) * service] if c > whole else [])
    delay = l0 - c * service
    low = int(n)
    r_low = mva(demands, delay, low)
    if n == low:
        return r_low
    return r_low + (n - low) * (mva(demands, delay, low + 1) - r_low)


def per_request_fork_join(clients: int, drives: int, units: int, unit_s: float, width: int, phases: int = 1,
                          sigma: float = 0.25, requests: int = 12000, seed: int = 13) -> tuple[float, float]:
    """(throughput, mean latency) of `clients` requests in a closed loop over `drives` drives of `units`
    processor-sharing flash units each (simulator.per_request.units, as the per-request mode's SSDs).
    A request puts `width` pieces on `width` consecutive drives from a random one, each on a random unit
    with lognormal work of mean unit_s and log-spread sigma, waits for all of them (the join), and does
    that `phases` times on the same drives (a RAID 5 small write reads, then writes)."""
    from iowatt.simulator.per_request.units import FlashUnits

    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    flash = [FlashUnits(env, float(units)) for _ in range(drives)]

    def request():
        start = int(rng.integers(drives))
        for _phase in range(phases):
            joined = env.event()
            left = [width]

            def piece_done(_request: object, left: list[int] = left, joined: simpy.Event = joined) -> None:
                left[0] -= 1
                if left[0] == 0:
                    joined.succeed()

            for i in range(width):
                unit = flash[(start + i) % drives]
                work = unit_s * float(np.exp(sigma * rng.standard_normal() - 0.5 * sigma * sigma))
                unit.read(unit.pick(float(rng.random())), work, None, piece_done)
            yield joined

    return closed_loop(env, clients, request, requests)
