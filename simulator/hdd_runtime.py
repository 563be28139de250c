"""One hard disk in the flow engine: the same interface as SSDRuntime.

Constraints (per drive `hddN`):
  hddN.link_read / hddN.link_write   SAS/SATA payload rate, per direction
  hddN.read / hddN.write             service seconds of reads / of writes (1 device-second per second each)
  hddN.actuator                      the one head stack that reads and writes share (1 device-second per second)
  hddN.power                         dynamic power (no cap: disks have no NVMe power states)

A byte read at block size b with access pattern `random` costs
service(b, QD, span) / b device-seconds (seek + rotation + transfer, see
models.hdd); `sequential` costs 1 / media rate.  The meter is idle power
plus (active - idle) x busy time, with the active power of the pattern.

The span is the share of the capacity that holds data (`fill`); with an
empty drive (fill 0) requests are taken to spread over the whole disk.  A
workload that lays out its own file (fio's `size`) sets `data_span`, the share
of the capacity that file occupies: a fresh filesystem allocates it
contiguously after the data already there (from the outer diameter), so the
heads then sweep fill + data_span of the capacity.

`data_clusters` (default 1: one contiguous region from the outer diameter) is the
number of equal pieces the data lie in, spread evenly over the disk, as a
filesystem that spreads directories over allocation groups lays out a tree of
small files (XFS inode64 on 8 TB: 8 AGs of 1 TB; models.hdd._cluster_positions).
"""

from __future__ import annotations

import math

from iowatt.models.hdd import Access, HDDSpec, active_watts, seconds_per_byte
from iowatt.models.links import link_payload_Bps
from iowatt.simulator.flows import Constraint, FlowEngine, Meter

SATA_NCQ_DEPTH = 32  # Serial ATA rev 2.6+ native command queueing: 32 tags


class HddRuntime:
    """One hard disk in the flow engine."""

    def __init__(
        self,
        engine: FlowEngine,
        name: str,
        spec: HDDSpec,
        fill: float = 0.0,
        access: Access = "random",
        queue_depth: int = 1,
        data_clusters: int = 1,
    ) -> None:
        if queue_depth < 1:
            raise ValueError(f"queue_depth must be >= 1, found {queue_depth}")
        if data_clusters < 1:
            raise ValueError(f"data_clusters must be >= 1, found {data_clusters}")
        self.name = name
        self.spec = spec
        self.fill = fill
        self.access: Access = access
        self.queue_depth = int(queue_depth)
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
        self.meter: Meter = engine.meter(name, spec.idle_W, [(self.power, 1.0)], group="storage")

    @property
    def span_fraction(self) -> float:
        if self.data_span is not None:
            return min(1.0, max(1e-6, self.fill + self.data_span))
        return self.fill if self.fill > 0.0 else 1.0

    def _usage(
        self,
        link: Constraint,
        direction: Constraint,
        block_bytes: float,
        share: float,
        access: Access | None,
        queue_depth: int | None,
        write: bool,
    ) -> list[tuple[Constraint, float]]:
        pattern = access or self.access
        qd = queue_depth or self.queue_depth
        if self.spec.interface == "sata":
            qd = min(qd, SATA_NCQ_DEPTH)  # the drive reorders only what it holds: 32 NCQ tags
        busy = seconds_per_byte(self.spec, block_bytes, pattern, qd, self.span_fraction, write, self.data_clusters)
        dynamic_W = active_watts(self.spec, pattern) - self.spec.idle_W
        return [
            (link, share),
            (direction, share * busy),
            (self.actuator, share * busy),
            (self.power, share * busy * dynamic_W),
        ]

    def write_usage(
        self, block_bytes: float, share: float = 1.0, access: Access | None = None, queue_depth: int | None = None
    ) -> list[tuple[Constraint, float]]:
        """Constraints a host write of one byte crosses, times `share` (striping)."""
        return self._usage(self.link_write, self.write, block_bytes, share, access, queue_depth, True)

    def read_usage(
        self, block_bytes: float, share: float = 1.0, access: Access | None = None, queue_depth: int | None = None
    ) -> list[tuple[Constraint, float]]:
        return self._usage(self.link_read, self.read, block_bytes, share, access, queue_depth, False)
