"""The closed-loop law of a volume whose requests land on member drives (RAID arrays).

Each member is a load-dependent station (models.closed_network): holding k of the
volume's pieces it completes

    mu(k) = min(law(k), ceiling(k))  pieces per second

law = the drive's own concurrency law for the piece (Drive.concurrency: models.ssd's
MVA over its flash units; N / L0 for a hard disk), ceiling = what the drive's
constraints let the piece class alone through at depth k (block-size law, link,
power cap; a hard disk's service time after reordering k commands, models.hdd).
The layout places the pieces at random over the members (`visits`: each drive's
share of the device I/Os), so the number a drive holds follows the closed
network's product-form distribution -- the balls-in-bins placement of the N
pieces, weighted by how long each drive keeps what it holds -- and not N / n on
every drive.  A host request in flight has `width` pieces at the drives at once
and `pieces` pieces in all (a RAID 5 small write: 2 reads, then 2 writes), so the
network holds N x width customers and the volume completes X / pieces requests
per second.  A request whose pieces are at several drives at once waits for the
slowest (fork-join, models.fork_join): `fork_join_loop`.

Host-side stations (the md layer's CPU, an HBA's command processor, an uplink)
are more stations of the same network: `extra`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from iowatt.models.closed_network import Solution, Station, solve, start_dependent_rates
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage, mix_laws


def ceiling_per_second(usage: Usage, block_bytes: float) -> float:
    """Requests per second of `block_bytes` that the constraints in `usage` let through (one class alone)."""
    rate = math.inf
    for c, k in usage:
        if k > 0.0 and math.isfinite(c.capacity):
            rate = min(rate, c.capacity / k)
    return rate / block_bytes


def _depths(top: int) -> list[int]:
    """Depths at which a member's rate is evaluated: every one up to 16, then steps of 1/8 (the laws are
    smooth and monotone there; the rates in between are interpolated)."""
    out = list(range(1, min(top, 16) + 1))
    while out[-1] < top:
        out.append(min(top, max(out[-1] + 1, round(out[-1] * 1.125))))
    return out


def _rate_at(drive: Drive, parts: list[tuple[Access, float]], k: int) -> float:
    at_k = [(a.with_(queue_depth=float(k)), w) for a, w in parts if w > 0.0]
    law = mix_laws([(drive.concurrency(a), w) for a, w in at_k])
    usage = [(c, coef * w) for a, w in at_k for c, coef in drive.usage(a)]
    block = sum(a.block_bytes * w for a, w in at_k) / sum(w for _a, w in at_k)
    return min(law.requests_per_second(k), ceiling_per_second(usage, block))


def sampled_rates(rate: Callable[[int], float], top: int) -> tuple[float, ...]:
    """rate(1..top), evaluated at `_depths(top)` and interpolated in between."""
    import numpy as np
    ks = _depths(max(1, top))
    return tuple(float(r) for r in np.interp(np.arange(1, max(1, top) + 1), ks, [rate(k) for k in ks]))


def station_rates(drive: Drive, parts: list[tuple[Access, float]], depth: int) -> tuple[float, ...]:
    """mu(1..depth) of `drive` for a mix of piece classes (Access, share of the pieces): the drive's
    concurrency law for the mix, capped by its constraints at each depth (module docstring).
    Beyond the drive's queue limit the rate stays at the limit's (the rest wait in the host queue)."""
    limit = drive.queue_limit
    return sampled_rates(lambda k: _rate_at(drive, parts, k), depth if limit is None else min(depth, limit))


def piece_spread(drive: Drive, write: bool) -> float:
    """The log-spread of one piece's own time at the drive (Drive.latency_spread: for SSDs a fit, the datasheet's
    QoS, else assumed); 0 for drives without one (hard disks: their spread is not modelled here)."""
    return drive.latency_spread(write)


def service_scv(drive: Drive, parts: list[tuple[Access, float]], rates: tuple[float, ...]) -> tuple[float, ...]:
    """Squared coefficient of variation of a hard disk's command at start depths 1..: the variance of seek +
    rotation the per-request disk draws (models.hdd.positioning_variance_seconds2; streaming and the transfer are
    fixed) over the station's mean service 1 / rates[j - 1].  () where no spread is known (not a disk, or data in
    several clusters): models.closed_network then takes the service as exponential."""
    from iowatt.models.closed_network import START_DEPTH_CAP

    if drive.positioning_variance_seconds2(1, False) is None:
        return ()
    limit = drive.queue_limit or START_DEPTH_CAP
    total = sum(w for _a, w in parts) or 1.0
    out = []
    for j in range(1, min(len(rates), START_DEPTH_CAP) + 1):
        var = sum(w * (drive.positioning_variance_seconds2(min(j, limit), a.write) or 0.0)
                  for a, w in parts if a.pattern == "rand") / total
        out.append(var * rates[j - 1] ** 2)
    return tuple(out)


@dataclass(frozen=True)
class MemberLoad:
    """How a host request spreads over the members: device I/Os per request, how many at once, each
    drive's share of the I/Os, and the piece classes (Access, share of the pieces)."""

    pieces: float
    width: float
    visits: tuple[float, ...]
    parts: tuple[tuple[Access, float], ...]


def member_stations(drives: list[Drive], load: MemberLoad, customers: int, extra: tuple[Station, ...] = ()) -> list[Station]:
    """One station per distinct (drive law, share): identical members collapse into copies.  A drive
    without service units (a hard disk: one actuator) fixes each command's service when it starts,
    from what it then holds (models.hdd's reordering): its rates are the effective ones of
    models.closed_network.start_dependent_rates."""
    groups: dict[tuple[int, float], tuple[Drive, int]] = {}
    for drive, share in zip(drives, load.visits, strict=True):
        if share <= 0.0:
            continue
        key = (id(drive.spec), round(share, 12))
        first, count = groups.get(key, (drive, 0))
        groups[key] = (first, count + 1)
    stations = []
    for i, ((_spec, share), (drive, count)) in enumerate(groups.items()):
        rates = station_rates(drive, list(load.parts), customers)
        station = Station(f"drives{i}" if len(groups) > 1 else "drives", rates, share, count)
        if not all(drive.concurrency(a).units for a, _w in load.parts):
            others = tuple(s for s in stations if s is not station) + extra
            scv = service_scv(drive, list(load.parts), rates)
            station = Station(station.name, start_dependent_rates(station, others, customers, scv=scv), share, count)
        stations.append(station)
    return stations


@dataclass(frozen=True)
class VolumeLoop:
    """The volume's closed loop at N host requests: its rate, the network's solution and the law."""

    requests: float
    solution: Solution
    host_rate: float            # host requests per second at N
    law: ConcurrencyLaw

    @property
    def per_drive_outstanding(self) -> float:
        """Mean pieces a busy member holds (what its reordering and queue see)."""
        return max((v for k, v in self.solution.busy_queue.items() if k.startswith("drives")), default=1.0)

    def binding(self) -> str:
        """What limits the loop: the busiest station when it is nearly saturated, else the concurrency."""
        name, u = self.solution.busiest()
        if u >= 0.95:
            return f"{name} saturated ({u:.0%} of their deep-queue rate)"
        return (f"concurrency: {self.requests:.3g} requests in flight, {self.per_drive_outstanding:.1f} at a busy drive "
                f"({name} at {u:.0%} of their deep-queue rate)")


def volume_loop(drives: list[Drive], load: MemberLoad, access: Access, qd1_latency_s: float,
                extra: tuple[Station, ...] = (), spread: float = 0.0) -> VolumeLoop:
    """Solve the members' network at the access's queue depth and express it as the contract's law.

    The law is exact at N = access.queue_depth: X(N) = N / (L0 + (N - 1) S) with S solved from the
    network's rate (the contract's closed form, so fio and DLIO read it unchanged); L0 is the volume's
    own QD1 latency (phases of the slowest piece).  A request with `width` > 1 pieces at once waits for
    the slowest of them (`fork_join_loop`); `spread` is the log-spread of one piece's own time."""
    n = max(1.0, access.queue_depth)
    width = max(1, round(load.width))
    if width > 1:
        return fork_join_loop(drives, load, access, qd1_latency_s, extra, spread)
    customers = max(1, math.ceil(n * load.width))
    stations = tuple([*member_stations(drives, load, customers, extra), *extra])
    sol = solve(stations, (), customers)
    host_rate = sol.throughput / load.pieces * (n * load.width / customers)
    return _as_law(drives, load, n, sol, host_rate, qd1_latency_s)


def _as_law(drives: list[Drive], load: MemberLoad, n: float, sol: Solution, host_rate: float, qd1_latency_s: float) -> VolumeLoop:
    units = all(drive.concurrency(a).units for drive in drives[:1] for a, _w in load.parts)
    s = 0.0 if n <= 1.0 else max(0.0, (n / host_rate - qd1_latency_s) / (n - 1.0))
    return VolumeLoop(n, sol, host_rate, ConcurrencyLaw(qd1_latency_s, s, None, units))


def fork_join_loop(drives: list[Drive], load: MemberLoad, access: Access, qd1_latency_s: float,
                   extra: tuple[Station, ...] = (), spread: float = 0.0, rounds: int = 40) -> VolumeLoop:
    """A request's `width` pieces are in the members' network at once and it goes on (to its next phase, or
    back to the host) when the slowest is done (models.fork_join).  A piece that is done waits at the join,
    out of the network, so the network holds N x width x m / R pieces, m a piece's mean time in it and R
    the slowest's; solved as a fixed point: the network at that population gives m (Little), m against the
    piece's time alone gives what a piece finds at its drive, and that gives R (models.fork_join.expected_max).
    Each of the pieces / width phases takes R."""
    from iowatt.models.fork_join import expected_max

    n = max(1.0, access.queue_depth)
    width = max(1, round(load.width))
    phases = load.pieces / load.width

    def network(customers: int) -> Solution:
        return solve(tuple([*member_stations(drives, load, customers, extra), *extra]), (), customers)

    alone = 1.0 / network(1).throughput
    held = 1.0
    sol, slowest = network(1), alone
    for _ in range(rounds):
        # the population is a mean (N x width x held): the network's rate interpolated between whole populations
        pieces = max(1.0, n * width * held)
        low = math.floor(pieces)
        sol = network(low)
        rate = sol.throughput
        if pieces > low:
            rate += (pieces - low) * (network(low + 1).throughput - rate)
        piece_s = pieces / rate
        slowest = alone * expected_max(width, max(0.0, piece_s / alone - 1.0), spread)
        new = min(1.0, piece_s / slowest)
        if abs(new - held) < 1e-3:
            break
        held = 0.5 * (held + new)
    return _as_law(drives, load, n, sol, n / (phases * slowest), qd1_latency_s)
