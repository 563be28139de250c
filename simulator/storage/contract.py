"""The storage contract: what every drive and every storage kind offers the workloads.

A workload asks a volume one question in several forms: "for host requests
like these, what does one byte cost?"  The requests are described by an
`Access` (operation, block size, pattern, requests outstanding, overwrite);
the answer is a `Usage`, the list of (constraint, coefficient per host byte)
the byte crosses in the flow engine.  The same `Access` gives the request's
latency with nothing else queued (QD1) and the closed-loop law that a
workload holding N requests in flight runs at (`ConcurrencyLaw`).

Drives (SSD, HDD) implement `Drive`; storage kinds (local, RAID, NFS,
cluster, ...) implement `Volume` and are registered in
`simulator.storage.registry`.  Workloads talk to a volume only through these
two classes: no attribute writes onto drives, no class-name tests.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from iowatt.models import closed_network
from iowatt.simulator.flows import Constraint, Meter

if TYPE_CHECKING:
    from iowatt.models.hdd import HDDSpec
    from iowatt.models.ssd import SSDSpec

Usage = list[tuple[Constraint, float]]
Op = Literal["read", "write"]
Pattern = Literal["seq", "rand"]

# The smallest request a drive sees: one 4 KiB page (smaller host writes are merged into a page, a
# striped request is split into pieces of at least a page).  The one page-size constant of the simulator.
PAGE_BYTES = 4096.0


@dataclass(frozen=True)
class Access:
    """A class of host requests, as the volume that serves them sees it.

    op            "read" or "write"
    block_bytes   bytes per host request
    pattern       "seq" (consecutive offsets) or "rand"
    queue_depth   host requests outstanding at this volume (closed loop); hard disks reorder
                  what they hold (models.hdd), RAID and NFS pass it on to their members
    overwrite     writes replace data the drives already hold (no new valid data; random
                  overwrites pay garbage collection once it runs)
    """

    op: Op
    block_bytes: float
    pattern: Pattern = "seq"
    queue_depth: float = 1.0
    overwrite: bool = False

    def __post_init__(self) -> None:
        if self.op not in ("read", "write"):
            raise ValueError(f"access op: expected 'read' or 'write', found {self.op!r}")
        if self.pattern not in ("seq", "rand"):
            raise ValueError(f"access pattern: expected 'seq' or 'rand', found {self.pattern!r}")
        if not self.block_bytes > 0.0:
            raise ValueError(f"access block_bytes: expected > 0, found {self.block_bytes!r}")
        if not self.queue_depth > 0.0:
            raise ValueError(f"access queue_depth: expected > 0, found {self.queue_depth!r}")

    @property
    def write(self) -> bool:
        return self.op == "write"

    def with_(self, **changes: object) -> Access:
        """A copy with some fields changed (e.g. the piece a member drive sees)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ConcurrencyLaw:
    """Requests per second that N outstanding requests get from a device or volume (closed loop).

        X(N) = N' / R(N'),   R(N') = L0 + (N' - 1) S  (whole c = L0 / S),   N' = min(N, queue_limit)

the exact mean-value solution of N customers over c = L0 / S service units
(models.closed_network: the closed form above when c is whole; Reiser &
Lavenberg 1980).  `units` says the requests collide on service units (an
SSD's flash units, models.ssd; `unit_count` = c of the reads, so a mix's
writes are a delay L0 - c S; None: L0 / S); otherwise the law is the
    asymptotic bound N / L0 (hard disks, whose queue-depth law is in their
    usage, and routed volumes), S = 0.  The ceiling comes from the engine's
    constraints, not from here.  Requests beyond the queue limit wait in the
    host's queue: they add latency but no throughput.
    """

    qd1_latency_s: float
    queue_seconds: float = 0.0
    queue_limit: int | None = None
    units: bool = False
    unit_count: float | None = None

    def requests_per_second(self, outstanding: float) -> float:
        if outstanding <= 0.0:
            return 0.0
        if self.qd1_latency_s <= 0.0:
            return math.inf
        n = outstanding if self.queue_limit is None else min(outstanding, self.queue_limit)
        if n < 1.0 or self.queue_seconds <= 0.0:
            return n / self.qd1_latency_s
        return n / closed_network.latency_s(self.qd1_latency_s, self.queue_seconds, n, self.unit_count)

    def bytes_per_second(self, block_bytes: float, outstanding: float) -> float:
        return block_bytes * self.requests_per_second(outstanding)


def mix_laws(parts: list[tuple[ConcurrencyLaw, float]]) -> ConcurrencyLaw:
    """The law of a read/write mix: latencies and queueing times weighted by each part's share of the
    requests (as models.ssd.closed_loop weights them); the tightest queue limit holds."""
    total = sum(w for _law, w in parts if w > 0.0)
    if total <= 0.0:
        raise ValueError("a mix needs at least one part with a positive share")
    limits = [law.queue_limit for law, w in parts if w > 0.0 and law.queue_limit is not None]
    counts = [law.unit_count for law, w in parts if w > 0.0 and law.unit_count is not None]
    return ConcurrencyLaw(
        qd1_latency_s=sum(law.qd1_latency_s * w for law, w in parts if w > 0.0) / total,
        queue_seconds=sum(law.queue_seconds * w for law, w in parts if w > 0.0) / total,
        queue_limit=min(limits) if limits else None,
        units=all(law.units for law, w in parts if w > 0.0),
        unit_count=min(counts) if counts else None,
    )


class Drive(ABC):
    """One device in the flow engine (models.ssd / models.hdd physics behind constraints and a meter)."""

    name: str
    spec: SSDSpec | HDDSpec
    meter: Meter

    @abstractmethod
    def usage(self, access: Access, share: float = 1.0) -> Usage:
        """Constraints one host byte of `access` crosses on this drive, times `share` (its part of the byte)."""

    @abstractmethod
    def qd1_latency_s(self, access: Access) -> float:
        """Latency of one request of `access` with nothing else queued."""

    @abstractmethod
    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The closed-loop law of requests like `access` on this drive."""

    @property
    def capacity_bytes(self) -> float:
        return float(self.spec.capacity_bytes)

    @property
    @abstractmethod
    def fill(self) -> float:
        """Share of the user capacity holding valid data, as the drive sees it now."""

    @property
    def queue_limit(self) -> int | None:
        """Commands the device holds at once (None: more than any host keeps outstanding)."""
        return None

    def discard(self, nbytes: float) -> None:
        """`nbytes` of user data are deleted (TRIM / UNMAP): drives that track valid data drop them."""
        if nbytes < 0.0:
            raise ValueError(f"discard: bytes must be >= 0, found {nbytes!r}")

    def occupy(self, share_of_capacity: float) -> None:
        """The workload's data occupy this share of the capacity beyond what is there (hard disks sweep it)."""
        del share_of_capacity

    @property
    def tracks_writes(self) -> bool:
        """Whether `report()` has write, wear and fill figures (SSDs) or only the basics (hard disks)."""
        return False

    def report(self) -> dict[str, float]:
        """This drive's own figures (fill, writes, endurance) up to now."""
        return {"fill_end": self.fill}


class Volume(ABC):
    """What a filesystem sits on: a storage kind built from drives (and servers, fabrics, nodes)."""

    @property
    @abstractmethod
    def drives(self) -> list[Drive]:
        """Every drive behind the volume, once per physical drive (lumped drives are listed per copy)."""

    @property
    @abstractmethod
    def capacity_bytes(self) -> float:
        """Usable bytes (after parity, mirrors, erasure coding)."""

    @abstractmethod
    def usage(self, access: Access) -> Usage:
        """Constraints one host byte of `access` crosses, through every layer down to the drives."""

    @abstractmethod
    def qd1_latency_s(self, access: Access) -> float:
        """Latency of one request of `access` with nothing else queued, fabric round trips included."""

    @abstractmethod
    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The closed-loop law a workload holding `access.queue_depth` requests in flight runs at."""

    @abstractmethod
    def discard(self, nbytes: float) -> None:
        """`nbytes` of host data are deleted and discarded down to the drives."""

    def occupy(self, share_of_capacity: float) -> None:
        """The workload's data occupy this share of the volume's capacity (passed to every drive)."""
        for drive in self.unique_drives:
            drive.occupy(share_of_capacity)

    @property
    def unique_drives(self) -> list[Drive]:
        """The drive runtimes that exist (a lumped volume's representatives once each)."""
        seen: dict[int, Drive] = {}
        for drive in self.drives:
            seen.setdefault(id(drive), drive)
        return list(seen.values())

    def report(self) -> dict[str, object]:
        """The volume's own part of the result (drives' figures; kinds add theirs)."""
        return {"drives": [d.report() for d in self.unique_drives if d.tracks_writes]}
