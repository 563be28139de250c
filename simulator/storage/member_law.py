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
slowest (fork-join, models.fork_join; hard disks whose pieces sit on distinct disks: models.disk_join):
`fork_join_loop`.

Host-side stations (the md layer's CPU, an HBA's command processor, an uplink)
are more stations of the same network: `extra`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from iowatt.models.closed_network import Solution, Station, identical_disks, solve, start_dependent_rates
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


def piece_spread(drive: Drive, write: bool, piece: Access | None = None, pieces: int = 1) -> float:
    """The log-spread of one piece's own time at the drive (Drive.latency_spread: for SSDs a fit, the datasheet's
    QoS, else assumed).  A hard disk's random piece of `piece` among `pieces`: the lognormal spread whose largest of
    `pieces` is the disks' own (models.hdd.slowest_positioning_seconds: seek + rotation, bounded; the overhead and
    the transfer are the same on every disk), models.fork_join.equivalent_spread; 0 where not known."""
    from iowatt.simulator.storage.hdd import HddDrive

    if not isinstance(drive, HddDrive) or piece is None or pieces <= 1 or piece.pattern != "rand" or drive.data_clusters > 1:
        return drive.latency_spread(write)
    from iowatt.models import hdd
    from iowatt.models.fork_join import equivalent_spread

    mean = hdd.random_service_seconds(drive.spec, piece.block_bytes, 1, drive.span_fraction, write)
    positioning = hdd.positioning_seconds(drive.spec, 1, drive.span_fraction, write)
    slowest = mean - positioning + hdd.slowest_positioning_seconds(drive.spec, pieces, drive.span_fraction, write)
    return equivalent_spread(int(pieces), round(slowest / mean, 6))


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


# Populations up to which identical disks are solved by models.closed_network.identical_disks (its cost grows as
# disks x N^2 chain states: ~0.3 s at 16 disks x 32); beyond it Marie's method, whose product-form overshoot fades
# as the disks' queues deepen (16 disks: +6 % at N = 16, +0.9 % at 64, +0.3 % at 128 against the recursion).
IDENTICAL_DISKS_MAX_CUSTOMERS = 64


def _disk_group(drives: list[Drive], load: MemberLoad, customers: int, extra: tuple[Station, ...]) -> Solution | None:
    """The network when it is one group of identical hard disks and nothing else (a striped or RAID volume of one
    disk model, no host stations), solved by models.closed_network.identical_disks; None otherwise."""
    shares = {round(v, 12) for v in load.visits if v > 0.0}
    members = [d for d, v in zip(drives, load.visits, strict=True) if v > 0.0]
    if (extra or len(shares) != 1 or len({id(d.spec) for d in members}) != 1 or len(members) < 2
            or customers > IDENTICAL_DISKS_MAX_CUSTOMERS or any(members[0].concurrency(a).units for a, _w in load.parts)):
        return None
    drive, share, count = members[0], shares.pop(), len(members)
    rates = station_rates(drive, list(load.parts), customers)
    scv = service_scv(drive, list(load.parts), rates)
    if not scv:  # no spread known: exponential commands, which Marie's method solves exactly (the recursion does not)
        return None
    group = identical_disks(tuple(1.0 / r for r in rates), scv, count, customers)
    done, busy, held = group.throughput[customers - 1], group.occupied[customers - 1], group.mean_queue[customers - 1]
    x = done / (share * count)
    return Solution(customers=customers, throughput=x, cycle_s=customers / x, mean_queue={"drives": held},
                    utilisation={"drives": min(1.0, done / count / max(rates))}, occupied={"drives": busy},
                    busy_queue={"drives": held / busy if busy > 0.0 else 0.0}, residence_s={"drives": held * count / x})


def members_network(drives: list[Drive], load: MemberLoad, customers: int, extra: tuple[Station, ...] = ()) -> Solution:
    """The members' network (and `extra` host stations) with `customers` pieces in it."""
    group = _disk_group(drives, load, customers, extra)
    if group is not None:
        return group
    return solve(tuple([*member_stations(drives, load, customers, extra), *extra]), (), customers)


@dataclass(frozen=True)
class VolumeLoop:
    """The volume's closed loop at N host requests: its rate, the network's solution and the law."""

    requests: float
    solution: Solution
    host_rate: float            # host requests per second at N
    law: ConcurrencyLaw
    # the start depth (interpolated) whose command time is a member's mean command in the loop (busy / completions),
    # where the loop knows it (identical hard disks, pieces on distinct disks); None elsewhere
    command_depth: float | None = None

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
    sol = members_network(drives, load, customers, extra)
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
        return members_network(drives, load, customers, extra)

    structured = _structured_disk_join(drives, load, n, width, phases, spread, extra)
    if structured is not None:
        sol, rate, depth = structured
        return replace(_as_law(drives, load, n, sol, rate, qd1_latency_s), command_depth=depth)
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


def positioning_shape(drive: Drive, parts: list[tuple[Access, float]], depths: int) -> tuple[tuple[float, ...], ...]:
    """A hard disk's positioning law at start depths 1..`depths` as quantiles about its mean
    (models.hdd.positioning_quantiles; the parts' laws pooled by their shares); () where not known (not a disk, data
    in several clusters).  Sequential pieces have none (their service is fixed)."""
    from iowatt.simulator.storage.hdd import HddDrive

    if not isinstance(drive, HddDrive) or drive.data_clusters > 1:
        return ()
    import numpy as np
    from iowatt.models import hdd
    rand = [(a, w) for a, w in parts if a.pattern == "rand" and w > 0.0]
    total = sum(w for _a, w in parts) or 1.0
    out = []
    for j in range(1, depths + 1):
        laws = [(np.array(hdd.positioning_quantiles(drive.spec, j, drive.span_fraction, a.write, _QUANTILES)), w / total)
                for a, w in rand]
        if len({a.write for a, _w in rand}) <= 1 and sum(w for _q, w in laws) >= 1.0 - 1e-12:
            out.append(tuple(float(v) for v in laws[0][0]) if laws else (0.0,))
            continue
        # pooled: every part's quantiles with its share (sequential parts add their mass at zero), re-cut at the midpoints
        values = np.concatenate([q for q, _w in laws] + [np.zeros(1)])
        weights = np.concatenate([np.full(len(q), w / len(q)) for q, w in laws] + [np.array([1.0 - sum(w for _q, w in laws)])])
        order = np.argsort(values)
        cum = np.cumsum(weights[order]) - 0.5 * weights[order]
        cut = np.interp((np.arange(_QUANTILES) + 0.5) / _QUANTILES, cum, values[order])
        out.append(tuple(float(v) for v in cut - cut.mean()))
    return tuple(out)


_QUANTILES = 128  # quantiles a disk's positioning law is carried as (the largest of 16 idle disks' from them: within 0.005 %)


def _structured_disk_join(drives: list[Drive], load: MemberLoad, n: float, width: int, phases: float, spread: float,
                          extra: tuple[Station, ...], rounds: int = 60) -> tuple[Solution, float, float] | None:
    """Identical hard disks whose request puts its `width` pieces on distinct disks (a stripe's consecutive members,
    a RAID stripe's data and parity): each disk sees each of the N requests at most once at a time.  One disk is a
    machine-repairman loop of the N requests, and a phase takes the slowest of `width` pieces' sojourns there
    (models.disk_join: the disk's exact start-dependent chain, its own positioning law); a request comes back to a
    disk after Z = phases R / (pieces x share) - T, R a phase's time and T the piece's stay at the disk, solved as a
    fixed point.  Random placement (the members' network) would let a disk hold two pieces of one request and leave
    the disks far less even than a stripe does (per-request, 8 disks x 32 KiB at QD2: +17 %).
    Also the start depth whose command time is the disk's mean command (busy / completions, interpolated between
    whole depths): a disk that often holds fewer than N x width / disks pays longer commands (what its energy prices).
    None where the members are not one group of identical disks alone."""
    from iowatt.models.closed_network import finite_source_disk
    from iowatt.models.disk_join import slowest_piece
    from iowatt.models.fork_join import expected_max

    shares = {round(v, 12) for v in load.visits if v > 0.0}
    members = [d for d, v in zip(drives, load.visits, strict=True) if v > 0.0]
    if extra or len(shares) != 1 or len({id(d.spec) for d in members}) != 1 or any(members[0].concurrency(a).units for a, _w in load.parts):
        return None
    drive, share, count = members[0], shares.pop(), len(members)
    customers = max(1, math.ceil(n))
    rates = station_rates(drive, list(load.parts), customers)
    service, scv = tuple(1.0 / r for r in rates), service_scv(drive, list(load.parts), rates)
    shape = positioning_shape(drive, list(load.parts), min(len(service), customers)) if scv else ()
    visits = load.pieces * share  # pieces a request puts on one disk per cycle
    # a piece done here was its phase's last with probability 1 / width; its request's next phase then covers this
    # disk with probability width x share (placed at random): the next piece is here at once
    stay = min(1.0, width * share) / width
    alone = service[0]
    if shape:
        phase_s = slowest_piece(service, scv, shape, 1, 1.0, width).slowest_s
    else:
        phase_s = alone * expected_max(width, 0.0, spread)
    done = busy = held = 0.0
    for _ in range(rounds):
        think = max(1e-12, phases * phase_s / visits - held / max(done, 1e-300)) if done else phases * phase_s / visits
        if shape:
            join = slowest_piece(service, scv, shape, customers, round(think, 12), width, stay)
            done, busy, held, new = join.done, join.busy, join.held, join.slowest_s
        else:  # no positioning law known: the processor-sharing growth of models.fork_join
            done, busy, held = finite_source_disk(service, scv, customers, round(think, 12))
            new = alone * expected_max(width, max(0.0, held / done / alone - 1.0), spread)
        if abs(new / phase_s - 1.0) < 1e-5:
            phase_s = new
            break
        phase_s = 0.5 * (phase_s + new)
    rate = n / (phases * phase_s)
    x = rate * load.pieces  # device I/Os per second over the array
    sol = Solution(customers=customers, throughput=x, cycle_s=customers / x, mean_queue={"drives": held},
                   utilisation={"drives": min(1.0, done / max(rates))}, occupied={"drives": busy},
                   busy_queue={"drives": held / busy if busy > 0.0 else 0.0}, residence_s={"drives": held * count / x})
    return sol, rate, _depth_of(service, busy / done if done > 0.0 else service[0])


def _depth_of(service_s: tuple[float, ...], command_s: float) -> float:
    """The start depth (1.., interpolated) whose mean command time is `command_s` (service_s falls with depth)."""
    import numpy as np
    times = np.array(service_s)
    if len(times) == 1 or command_s >= times[0]:
        return 1.0
    return float(np.interp(-command_s, -times, np.arange(1, len(times) + 1)))
