"""One hard disk in the flow engine (the Drive contract, as simulator.storage.ssd).

Constraints (per drive `hddN`):
  hddN.link_read / hddN.link_write   SAS/SATA payload rate, per direction
  hddN.read / hddN.write             service seconds of reads / of writes (1 device-second per second each)
  hddN.actuator                      the one head stack that reads and writes share (1 device-second per second)
  hddN.power                         dynamic power (no cap: disks have no NVMe power states)

A byte read at block size b with access pattern `rand` costs
service(b, QD, span) / b device-seconds (seek + rotation + transfer, see
models.hdd) at the queue depth the request class keeps at the disk (command
reordering shortens seeks, capped by what the disk holds: 32 NCQ tags on
SATA); `seq` costs 1 / media rate.  The meter is idle power
plus (active - idle) x busy time, with the active power of the pattern.

The span is the share of the capacity that holds data (`fill`); with an
empty drive (fill 0) requests are taken to spread over the whole disk.  A
workload that lays out its own file (fio's `size`) calls `occupy` with the share
of the capacity that file occupies: a fresh filesystem allocates it
contiguously after the data already there (from the outer diameter), so the
heads then sweep fill + data_span of the capacity.

`data_clusters` (default 1: one contiguous region from the outer diameter) is the
number of equal pieces the data lie in, spread evenly over the disk, as a
filesystem that spreads directories over allocation groups lays out a tree of
small files (XFS inode64 on 8 TB: 8 AGs of 1 TB; models.hdd._cluster_positions).

Both faces read the same laws from here: the streaming rate of the span
(`stream_rate_Bps`), the command overhead and the busy power of a pattern
(`dynamic_W`); the per-request face (`request_server`,
simulator/per_request/hdd.py) draws each command's positioning from the law
models.hdd integrates for the fluid face.
"""

from __future__ import annotations

import math

from iowatt.models import hdd as hdd_model
from iowatt.models.hdd import Access as HddAccess
from iowatt.models.hdd import HDDSpec, active_watts, seconds_per_byte
from iowatt.models.links import device_queue_limit, link_payload_Bps
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, NoRequestFaceError, Pattern, RequestRun, RequestServer, Usage
from iowatt.simulator.storage.families import DriveChoice, DriveRuntime, refuse_nvme_power

_HDD_ACCESS: dict[str, HddAccess] = {"seq": "sequential", "rand": "random"}


class HddDrive(Drive):
    """One hard disk in the flow engine."""

    def __init__(self, engine: FlowEngine, name: str, spec: HDDSpec, fill: float = 0.0, data_clusters: int = 1) -> None:
        if data_clusters < 1:
            raise ValueError(f"data_clusters must be >= 1, found {data_clusters}")
        self.name = name
        self.spec = spec
        self.data_fill = fill
        self.power_state = 0
        self.cap_W: float | None = None
        self.data_span: float | None = None
        self.data_clusters: int = int(data_clusters)
        link = link_payload_Bps(spec.link)
        self.link_write = engine.constraint(f"{name}.link_write", link)
        self.link_read = engine.constraint(f"{name}.link_read", link)
        self.read = engine.constraint(f"{name}.read", 1.0)
        self.write = engine.constraint(f"{name}.write", 1.0)
        self.actuator = engine.constraint(f"{name}.actuator", 1.0)
        self.power = engine.constraint(f"{name}.power", math.inf)
        self.meter = engine.meter(name, spec.idle_W, [(self.power, 1.0)], group="storage")

    @property
    def fill(self) -> float:
        return self.data_fill

    @property
    def queue_limit(self) -> int | None:
        return device_queue_limit(self.spec.interface)

    def occupy(self, share_of_capacity: float) -> None:
        self.data_span = share_of_capacity

    @property
    def span_fraction(self) -> float:
        """Share of the platter the heads sweep: what is there plus the workload's own data."""
        if self.data_span is not None:
            return min(1.0, max(1e-6, self.data_fill + self.data_span))
        return self.data_fill if self.data_fill > 0.0 else 1.0

    def _queue_depth(self, access: Access) -> int:
        qd = max(1, round(access.queue_depth))
        limit = self.queue_limit
        return qd if limit is None else min(qd, limit)  # the drive reorders only what it holds

    def usage(self, access: Access, share: float = 1.0) -> Usage:
        """Constraints a host byte of `access` crosses, times `share` (striping)."""
        pattern = _HDD_ACCESS[access.pattern]
        busy = seconds_per_byte(self.spec, access.block_bytes, pattern, self._queue_depth(access), self.span_fraction,
                                access.write, self.data_clusters)
        dynamic_W = self.dynamic_W(access.pattern)
        link, direction = (self.link_write, self.write) if access.write else (self.link_read, self.read)
        return [
            (link, share),
            (direction, share * busy),
            (self.actuator, share * busy),
            (self.power, share * busy * dynamic_W),
        ]

    def qd1_latency_s(self, access: Access) -> float:
        """Sequential: the command overhead plus the transfer at the zone's media rate; random: seek +
        rotation + transfer at queue depth 1 (models.hdd)."""
        if access.pattern == "seq":
            return self.command_overhead_s + access.block_bytes / self.stream_rate_Bps
        return float(hdd_model.random_service_seconds(self.spec, access.block_bytes, 1, self.span_fraction, access.write))

    @property
    def command_overhead_s(self) -> float:
        """The controller's time per command (pipelined with the transfer of sequential commands)."""
        return self.spec.command_overhead_ms / 1e3

    @property
    def stream_rate_Bps(self) -> float:
        """Media rate of the zone the data span occupies (models.hdd), capped by the SAS/SATA link."""
        return min(hdd_model.media_rate_Bps(self.spec, self.span_fraction), link_payload_Bps(self.spec.link))

    def dynamic_W(self, pattern: Pattern) -> float:
        """Power above idle while the actuator is busy with requests of `pattern` (the meter's law)."""
        return active_watts(self.spec, _HDD_ACCESS[pattern]) - self.spec.idle_W

    def positioning_variance_seconds2(self, queue_depth: int, write: bool) -> float | None:
        """Seek + rotation's variance as the per-request disk draws it (models.hdd); not known for data in several
        clusters (the seek distance's distribution there is not the one-region law's)."""
        if self.data_clusters > 1:
            return None
        return hdd_model.positioning_variance_seconds2(self.spec, queue_depth, self.span_fraction, write)

    def request_server(self, run: RequestRun, access: Access) -> RequestServer:
        """One actuator serving one command at a time, positioning drawn per command (simulator/per_request/hdd.py)."""
        if self.data_clusters > 1:
            raise NoRequestFaceError(f"storage.layout_clusters: the per-request mode lays data out in one piece, found {self.data_clusters}")
        from iowatt.simulator.per_request.hdd import HddRequests  # the per-request face, run on demand

        return HddRequests(run, self, access.pattern)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The asymptotic bound N / L0: a disk's gain from queueing (shorter seeks by reordering) is in its
        usage at the access's queue depth, not in a queueing time here."""
        return ConcurrencyLaw(self.qd1_latency_s(access), 0.0, self.queue_limit)


def _check(spec: HDDSpec, choice: DriveChoice) -> None:
    refuse_nvme_power(spec.name, "a hard disk", choice)


def _build(engine: FlowEngine, name: str, spec: HDDSpec, choice: DriveChoice) -> Drive:
    return HddDrive(engine, name, spec, choice.fill, data_clusters=choice.layout_clusters)


FAMILY = DriveRuntime("hdd", "hdd", _build, _check)
