"""The storage contract: what every drive and every storage kind offers the workloads.

A workload asks a volume one question in several forms: "for host requests
like these, what does one byte cost?"  The requests are described by an
`Access` (operation, block size, pattern, requests outstanding, overwrite,
the file they belong to);
the answer is a `Usage`, the list of (constraint, coefficient per host byte)
the byte crosses in the flow engine.  The same `Access` gives the request's
latency with nothing else queued (QD1) and the closed-loop law that a
workload holding N requests in flight runs at (`ConcurrencyLaw`).

Writes that change what a drive holds are announced first: `Volume.store`
tells every drive its share of a file's bytes (`FileWrite`: the file, the one
it replaces, whether that one is discarded), so that each drive's filesystem
view places them and its FTL works out what they cost (simulator/storage/ssd.py,
models.ftl); the flows then carry `Access.file` and pay that write
amplification.  `Drive.write_log` reports each stored write.

Drives (SSD, HDD) implement `Drive`; storage kinds (local, RAID, NFS,
cluster, ...) implement `Volume` and are registered in
`simulator.storage.registry`.  Workloads talk to a volume only through these
two classes: no attribute writes onto drives, no class-name tests.

Two faces.  The methods above are the fluid face (flows over constraints).  The
per-request face, `request_server(run, access)`, serves the same requests one at
a time (`iowatt run --mode per-request`, simulator/per_request/): a drive gives a
server of its own requests (flash units, an actuator) that reads its laws from
the fluid face, a striped volume one that splits each request as `stripes.split`
does for the fluid face and joins the pieces.  A runtime without a per-request
face raises `NoRequestFaceError` saying so.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

import simpy
from iowatt.models import unit_mva
from iowatt.simulator.flows import Constraint, Meter

if TYPE_CHECKING:
    import numpy as np
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
    overwrite     writes replace the file's own data in place (a rewrite, not new data)
    file          the file the bytes belong to, as announced with Volume.store (None: writes
                  priced at the drive's state now, without changing it)
    """

    op: Op
    block_bytes: float
    pattern: Pattern = "seq"
    queue_depth: float = 1.0
    overwrite: bool = False
    file: str | None = None

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


class NoRequestFaceError(ValueError):
    """A drive or volume that runs in the fluid mode only (its message names the field and what would run)."""


Done = Callable[[object], None]


@dataclass(frozen=True)
class RequestRun:
    """What a per-request server runs with: the environment, the random streams (numpy for vectors, `draw` for
    scalars) and `tally`, which hands each server a table of its own request counts per class for the energy
    ledger (simulator.per_request.energy.Ledger.counter)."""

    env: simpy.Environment
    rng: np.random.Generator
    draw: random.Random
    tally: Callable[[], dict[object, list]]


class RequestServer(Protocol):
    """The per-request face of a drive or a volume: requests (or pieces) in, `done(request)` when each completes."""

    def submit(self, request: object, size: float, write: bool, done: Done) -> None: ...

    @property
    def events(self) -> int:
        """SimPy events scheduled so far (the mode's cost)."""
        ...

    def report(self) -> dict[str, float | str]:
        """The device's own figures (flash units and spreads, the actuator's span)."""
        ...


class VolumeRequestServer(Protocol):
    """The per-request face of a volume: host requests in, split over its drives' servers and joined."""

    width: int

    def submit(self, request: object, size: float, write: bool, done: Done) -> None: ...

    @property
    def events(self) -> int: ...

    def report(self) -> list[dict[str, float | str]]:
        """Each drive server's report."""
        ...


@dataclass(frozen=True)
class FileWrite:
    """A file about to be written: its name, the file it replaces (deleted first), and whether that one is
    discarded now (True / False; None: as the filesystem's discard policy says)."""

    name: str
    replaces: str | None = None
    discard: bool | None = None


@dataclass(frozen=True)
class WriteRecord:
    """One stored write as a drive saw it: bytes, what it programmed, and its FTL before and after.

    ftl_valid_*       share of the user capacity the drive holds as valid data
    filesystem_fill   share the filesystem's live files hold afterwards
    endurance_used    NAND bytes programmed / the NAND bytes the endurance rating allows"""

    time_s: float
    file: str
    host_bytes: float
    nand_bytes: float
    ftl_valid_before: float
    ftl_valid_after: float
    filesystem_fill: float
    endurance_used: float


@dataclass(frozen=True)
class ConcurrencyLaw:
    """Requests per second that N outstanding requests get from a device or volume (closed loop).

        X(N) = N' / R(N'),   R(N') = L0 + (N' - 1) S  (whole c = L0 / S),   N' = min(N, queue_limit)

the exact mean-value solution of N customers over c = L0 / S service units
(models.unit_mva: the closed form above when c is whole; Reiser &
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
        if not self.units:  # no unit collisions: the closed form's asymptote (routed volumes' laws)
            return n / (self.qd1_latency_s + (n - 1.0) * self.queue_seconds)
        return n / unit_mva.latency_s(self.qd1_latency_s, self.queue_seconds, n, self.unit_count)

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

    def store(self, target: FileWrite, nbytes: float, access: Access) -> None:
        """`nbytes` of file `target` are about to be written with requests like `access` (drives that track
        what they hold place them now; see Volume.store)."""
        del target, access
        if nbytes < 0.0:
            raise ValueError(f"store: bytes must be >= 0, found {nbytes!r}")

    def write_log(self) -> list[WriteRecord]:
        """The writes stored on this drive so far (drives that track what they hold)."""
        return []

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

    def rest(self) -> None:  # noqa: B027 - a drive without power states has nothing to do
        """The workload ended a phase and will not use the drive for a while; its power policy may rest it."""

    def power_report(self) -> dict[str, object]:
        """Energy by part, time in each power state, power over time (drives with a power model)."""
        return {}

    def latency_spread(self, write: bool) -> float:
        """Log-spread (sigma) of one request's own time at the drive around its mean (0: not modelled, as for hard
        disks); the fork-join of striped requests waits for the largest of such pieces (models.fork_join)."""
        del write
        return 0.0

    def positioning_variance_seconds2(self, queue_depth: int, write: bool) -> float | None:
        """Variance of one random command's positioning time with `queue_depth` commands to choose from, where the
        drive has one (hard disks: seek + rotation); None where its service spread is not known, and the members'
        network (models.closed_network) then takes the service as exponential."""
        del queue_depth, write
        return None

    def request_server(self, run: RequestRun, access: Access) -> RequestServer:
        """The per-request face: a server of requests like `access` (its block size is the piece this drive sees)."""
        del run, access
        raise NoRequestFaceError(f"--mode per-request: drive {self.name} has no per-request face; it runs in the fluid mode only")


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

    def stored_shares(self) -> list[tuple[Drive, float]]:
        """Bytes each unique drive stores per byte of file data (its share of the data, with the parity,
        copies or erasure code a whole-stripe write adds).  Default: the data spread evenly over `drives`
        (a lumped drive stands for several: each of them stores one share)."""
        return [(d, 1.0 / len(self.drives)) for d in self.unique_drives]

    def store(self, target: FileWrite, nbytes: float, access: Access) -> None:
        """`nbytes` host bytes of file `target` are about to be written with requests like `access`: every
        drive places its share now (the file it replaces freed first), so that flows with
        `access.with_(file=target.name)` pay what these bytes cost on each drive."""
        if nbytes < 0.0:
            raise ValueError(f"store: bytes must be >= 0, found {nbytes!r}")
        for drive, share in self.stored_shares():
            if share > 0.0:
                drive.store(target, nbytes * share, access)

    def occupy(self, share_of_capacity: float) -> None:
        """The workload's data occupy this share of the volume's capacity (passed to every drive)."""
        for drive in self.unique_drives:
            drive.occupy(share_of_capacity)

    def client_side(self) -> list[Constraint]:
        """Constraints that stand for every client host together (their NIC ports, RPC slots): a workload
        that places its streams on hosts gives each host its share of these (none for drives in the host)."""
        return []

    @property
    def unique_drives(self) -> list[Drive]:
        """The drive runtimes that exist (a lumped volume's representatives once each)."""
        seen: dict[int, Drive] = {}
        for drive in self.drives:
            seen.setdefault(id(drive), drive)
        return list(seen.values())

    def rest(self) -> None:
        """The workload ended a phase (a checkpoint saved, an epoch done): every drive may rest."""
        for drive in self.unique_drives:
            drive.rest()

    def request_server(self, run: RequestRun, access: Access) -> VolumeRequestServer:
        """The per-request face: a server of host requests like `access` through the volume's layout to its drives."""
        del run, access
        raise NoRequestFaceError(f"--mode per-request: expected storage of kind local (one drive or a striped set), found a "
                            f"{type(self).__name__}; RAID, NFS and cluster volumes run in the fluid mode only")

    def report(self) -> dict[str, object]:
        """The volume's own part of the result (drives' figures; kinds add theirs)."""
        return {"drives": [d.report() for d in self.unique_drives if d.tracks_writes]}
