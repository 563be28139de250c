"""Plain-SimPy reference models the benchmark measures the project against.

Nothing here uses the project's engine: a drive (or a rank's core) is a
`simpy.Resource` with one server, a request holds it for its service time,
and every request is its own SimPy events.  These are the models DESIGN.md
section 2 says cost about 2e5 I/Os per second.
"""

from __future__ import annotations

import simpy


def closed_loop(requests_per_stream: list[list[float]], depth: int) -> tuple[float, int]:
    """Streams of requests (service seconds each) against one single-server drive.

    Each stream keeps `depth` requests outstanding (fio's iodepth): `depth`
    workers per stream take the stream's next request, queue for the drive,
    hold it for the service time, and release it.  Returns (simulated seconds
    when the last request completes, requests served).
    """
    env = simpy.Environment()
    drive = simpy.Resource(env, capacity=1)
    served = 0

    def worker(queue: list[float]):
        nonlocal served
        while queue:
            service = queue.pop()
            with drive.request() as req:
                yield req
                yield env.timeout(service)
            served += 1

    for stream in requests_per_stream:
        queue = list(reversed(stream))
        for _ in range(min(depth, len(queue))):
            env.process(worker(queue))
    env.run()
    return env.now, served


def rank_pipeline(requests_per_rank: list[list[float]], core_seconds_per_byte: float, drive_seconds_per_byte: float,
                  depth: int = 4) -> tuple[float, int]:
    """Checkpoint ranks as request pipelines: each rank's own core, then the one shared drive.

    Every request (its size in bytes) holds its rank's core (a simpy.Resource of
    one: serialization on one thread) for size x core seconds per byte, then
    the drive for size x drive seconds per byte.  `depth` requests per rank are
    in flight, so a rank's core works on the next request while the drive
    writes the last (torch.save's buffered writes).  Returns (simulated seconds
    when the last request completes, requests served)."""
    env = simpy.Environment()
    drive = simpy.Resource(env, capacity=1)
    served = 0

    def worker(queue: list[float], core: simpy.Resource):
        nonlocal served
        while queue:
            size = queue.pop()
            with core.request() as req:
                yield req
                yield env.timeout(size * core_seconds_per_byte)
            with drive.request() as req:
                yield req
                yield env.timeout(size * drive_seconds_per_byte)
            served += 1

    for sizes in requests_per_rank:
        queue = list(reversed(sizes))
        core = simpy.Resource(env, capacity=1)
        for _ in range(min(depth, len(queue))):
            env.process(worker(queue, core))
    env.run()
    return env.now, served


def request_sizes(shard_bytes: float, request_bytes: float) -> list[float]:
    """One rank's shard as request sizes in bytes (a shorter last request)."""
    full, tail = divmod(shard_bytes, request_bytes)
    sizes = [float(request_bytes)] * int(full)
    if tail > 1e-12 * request_bytes:
        sizes.append(tail)
    return sizes
