"""Read paths and request latencies shared by the AI data-loading workloads (dlio, gnn, gds_read, dlrm_preprocess).

A striped volume (RAID 0 of identical drives) is read per drive so that the
access pattern and the queue depth each drive sees reach its physics:
  - an SSD takes the pattern ("seq"/"rand"; flash reads have no seek, so the
    block-size law is the same for both, models.ssd);
  - a hard disk takes its access ("sequential"/"random") and the queue depth
    (command reordering shortens seeks as the queue grows, models.hdd).
Volumes of other kinds (arrays, NFS, clusters: simulator.volumes) are asked
through their own read_usage / write_usage (with pattern and queue_depth where
they take them) and their own request_latency_s (QD1 latency incl. the fabric).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from iowatt.models import hdd as hdd_model
from iowatt.models import ssd as ssd_model
from iowatt.models.hdd import HDDSpec
from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import SSDSpec

Pattern = Literal["seq", "rand"]
_HDD_ACCESS = {"seq": "sequential", "rand": "random"}


def _drives(volume: Any) -> list[Any] | None:
    """The drives of a plain striped volume, or None for volumes that route I/O themselves."""
    drives = getattr(volume, "drives", None)
    if type(volume).__name__ != "VolumeRuntime" or not drives:
        return None
    return list(drives)


def _is_hdd(drive: Any) -> bool:
    return isinstance(getattr(drive, "spec", None), HDDSpec)


def _own_usage(function: Any, block_bytes: float, pattern: Pattern, queue_depth: int) -> list:
    """A volume's own usage law, given the pattern and queue depth where it takes them."""
    import inspect

    try:
        names = set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = set()
    kwargs: dict[str, Any] = {}
    if "pattern" in names:
        kwargs["pattern"] = pattern
    if "queue_depth" in names:
        kwargs["queue_depth"] = queue_depth
    return list(function(block_bytes, **kwargs))


def _usage(volume: Any, block_bytes: float, pattern: Pattern, queue_depth: int, write: bool) -> list:
    drives = _drives(volume)
    if drives is None:
        return _own_usage(volume.write_usage if write else volume.read_usage, block_bytes, pattern, queue_depth)
    share = 1.0 / len(drives)
    # a request larger than the stripe share is split: each drive sees at least its share of the block
    per_drive_block = max(block_bytes * share, 4096.0) if len(drives) > 1 else block_bytes
    qd = max(1, round(queue_depth * share)) if len(drives) > 1 else max(1, int(queue_depth))
    usage: list = []
    for d in drives:
        method = d.write_usage if write else d.read_usage
        if _is_hdd(d):
            usage += method(per_drive_block, share, access=_HDD_ACCESS[pattern], queue_depth=qd)
        else:
            usage += method(per_drive_block, share, pattern=pattern)
    return usage


def read_usage(volume: Any, block_bytes: float, pattern: Pattern = "seq", queue_depth: int = 1) -> list:
    """Constraints one byte read from the volume crosses, with the pattern and outstanding requests per drive."""
    return _usage(volume, block_bytes, pattern, queue_depth, write=False)


def write_usage(volume: Any, block_bytes: float, pattern: Pattern = "seq", queue_depth: int = 1) -> list:
    """Constraints one byte written to the volume crosses (new data, not overwrites)."""
    return _usage(volume, block_bytes, pattern, queue_depth, write=True)


def drive_specs(volume: Any) -> list[Any]:
    drives = getattr(volume, "drives", None) or []
    return [d.spec for d in drives]


def unloaded_read_latency_s(spec: SSDSpec | HDDSpec, block_bytes: float, pattern: Pattern = "rand", span_fraction: float = 1.0) -> float:
    """One read's latency with nothing else queued (QD1).

    SSD: models.ssd.unloaded_latency_s (datasheet QD1 4 KiB latency + extra transfer).
    HDD: positioning (seek + rotation at QD1, models.hdd) + transfer at the media
    rate, or transfer only when sequential."""
    if isinstance(spec, HDDSpec):
        transfer = block_bytes / min(hdd_model.media_rate_Bps(spec, span_fraction), link_payload_Bps(spec.link))
        if pattern == "seq":
            return transfer
        return float(hdd_model.random_read_service_seconds(spec, block_bytes, 1, span_fraction))
    return ssd_model.unloaded_latency_s(spec, block_bytes, False)


def volume_read_latency_s(volume: Any, block_bytes: float, pattern: Pattern = "rand") -> float:
    """QD1 read latency of the volume: its own law (arrays, NFS, clusters), else that of the slowest
    drive of a striped volume (a striped request waits for all its pieces)."""
    own = getattr(volume, "request_latency_s", None)
    if callable(own):
        return float(own(block_bytes, False, pattern))
    specs = drive_specs(volume)
    if not specs:
        return 100e-6  # assumed: volumes without local drives (network targets) ~100 us per request
    n = len(specs)
    per_drive = max(block_bytes / n, 4096.0) if n > 1 else block_bytes
    drives = getattr(volume, "drives", [])
    spans = [getattr(d, "span_fraction", 1.0) for d in drives]
    return max(unloaded_read_latency_s(s, per_drive, pattern, sp) for s, sp in zip(specs, spans, strict=False))


def ssd_concurrency(volume: Any, block_bytes: float, pattern: Pattern = "rand") -> tuple[float, float, int | None] | None:
    """(L0, S, queue limit) of the concurrency law of models.ssd for a plain striped volume of SSDs.

    With n reads in flight the volume serves X(n) = n / (L0 + (n - 1) x S) requests per second
    (c = L0 / S flash units, exact MVA): L0 its QD1 latency, S the slowest drive's seconds per
    striped piece at its ceiling; the queue limit caps n (SATA NCQ: 32).  None for hard disks
    (their own queue-depth law, models.hdd) and volumes that route I/O themselves."""
    drives = _drives(volume)
    if drives is None or any(_is_hdd(d) for d in drives):
        return None
    n = len(drives)
    piece = max(block_bytes / n, 4096.0) if n > 1 else block_bytes
    service = max(ssd_model.read_seconds_per_byte(d.spec, piece, pattern) * piece for d in drives)
    limits = [q for q in (ssd_model.device_queue_limit(d.spec.interface) for d in drives) if q is not None]
    return volume_read_latency_s(volume, block_bytes, pattern), service, (min(limits) if limits else None)


def concurrency_capacity_Bps(law: tuple[float, float, int | None], block_bytes: float, in_flight: int) -> float:
    """Bytes/s the volume serves with `in_flight` reads outstanding (inf when none: the constraint is idle)."""
    if in_flight <= 0:
        return math.inf
    l0, service, limit = law
    n = in_flight if limit is None else min(in_flight, limit)
    return block_bytes * ssd_model.concurrency_throughput(l0, service, n)
