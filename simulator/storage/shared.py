"""Engine operations that storage kinds share: a background stream that holds part of the
resources for good (a RAID rebuild), and lumping identical components into one representative
(a cluster's nodes)."""

from __future__ import annotations

import math

from iowatt.simulator.flows import FlowEngine, Meter
from iowatt.simulator.storage.contract import Access, Drive, Usage


def reserve(engine: FlowEngine, usage: Usage, rate: float) -> None:
    """Take `rate` host bytes per second of `usage` out of its constraints for good (a background stream).

    Capacities shrink by rate x coefficient; meters on those constraints gain the
    matching power as extra watts.  Constraints with state dynamics (a drive's
    write-speed factor) are left alone: their capacity is reset at breakpoints.
    """
    for c, k in usage:
        load = rate * k
        if c.dynamics is None and not math.isinf(c.capacity):
            engine.set_capacity(c, max(c.capacity - load, 1e-6 * c.capacity))
        for m in c.meters:
            for term_c, joules in m.terms:
                if term_c is c:
                    engine.set_meter_extra(m, m.extra_W + joules * load)


def bottleneck_share(usage: Usage, rate: float) -> float:
    """Largest share of any finite constraint's capacity that `rate` of `usage` takes."""
    worst = 0.0
    for c, k in usage:
        if not math.isinf(c.capacity) and c.capacity > 0.0:
            worst = max(worst, rate * k / c.capacity)
    return worst


def scale_meter(engine: FlowEngine, meter: Meter, factor: float) -> None:
    """Make a meter count for `factor` identical components (symmetric lumping): every part, state power
    included, is drawn `copies` times."""
    meter.copies *= factor
    engine.set_meter_extra(meter, meter.extra_W)  # refreshes the meter's power now


def drive_usage(drive: Drive, access: Access, share: float) -> Usage:
    """One member drive's usage for `share` device bytes per host byte (nothing when it takes none)."""
    if share <= 0.0:
        return []
    return drive.usage(access, share)


def summed_queue_limit(drives: list[Drive]) -> int | None:
    """Commands a volume that sends each request to one member can hold: the members' limits added
    (None when any member has no limit of its own)."""
    limits = [d.queue_limit for d in drives]
    if not limits or any(q is None for q in limits):
        return None
    return sum(q for q in limits if q is not None)
