"""The volume's layout, one request at a time: a striped set of drives (kind local), pieces and fork-join.

A request of b bytes over n striped drives is split as simulator.storage.striped
splits it: p = min(n, b / 4 KiB) pieces of b / p bytes (at least a page) on p
consecutive drives, starting where the request's offset falls (the next drive
after the previous request for sequential streams, a uniformly random one for
random offsets).  The request completes when its last piece does (fork-join),
so its latency is the slowest of its pieces: the fluid model's volume takes
the slowest drive's mean instead, a difference the referee tests measure.

Only striped volumes are laid out here (kind local, one or more drives); the
per-request mode refuses RAID, NFS and cluster volumes (budget.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import simpy
from iowatt.models.hdd import HDDSpec
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.per_request.hdd import HddRequests
from iowatt.simulator.per_request.ssd import SsdRequests
from iowatt.simulator.storage import PAGE_BYTES, Volume
from iowatt.simulator.storage.contract import Pattern
from iowatt.simulator.storage.hdd import HddDrive
from iowatt.simulator.storage.ssd import SsdDrive
from iowatt.simulator.storage.striped import StripedVolume
from iowatt.simulator.workloads import WorkloadConfigError

Done = Callable[[object], None]
Device = SsdRequests | HddRequests


class _Join:
    """A request split into pieces: done when its last piece is."""

    __slots__ = ("done", "left", "request")

    def __init__(self, request: object, left: int, done: Done) -> None:
        self.request = request
        self.left = left
        self.done = done


def _piece_done(join: object) -> None:
    j: _Join = join  # type: ignore[assignment]
    j.left -= 1
    if j.left == 0:
        j.done(j.request)


def pieces(width: int, block_bytes: float) -> tuple[int, float]:
    """(pieces per request, bytes per piece) of a request striped over `width` drives (module docstring)."""
    if width <= 1:
        return 1, block_bytes
    count = int(min(width, max(1.0, block_bytes // PAGE_BYTES)))
    return count, block_bytes / count


class StripedRequests:
    """A striped volume's drives in the per-request mode."""

    def __init__(self, env: simpy.Environment, volume: Volume, block_bytes: float, pattern: Pattern, overwrite: bool,
                 rng: np.random.Generator, draw: random.Random, ledger: Ledger, file: str | None = None) -> None:
        if not isinstance(volume, StripedVolume):
            raise WorkloadConfigError(
                f"--mode per-request: expected storage of kind local (one drive or a striped set), found a {type(volume).__name__}; "
                "RAID, NFS and cluster volumes run in the fluid mode only"
            )
        self.width = volume.width
        self.count, self.piece_bytes = pieces(self.width, block_bytes)
        self.pattern = pattern
        self.draw = draw
        self.next_start = 0
        self.devices: list[Device] = []
        for drive in volume.drives:
            if isinstance(drive, SsdDrive):
                self.devices.append(SsdRequests(env, drive, self.piece_bytes, pattern, overwrite, rng, draw, ledger, file))
            elif isinstance(drive, HddDrive) and isinstance(drive.spec, HDDSpec):
                if drive.data_clusters > 1:
                    raise WorkloadConfigError(
                        f"storage.layout_clusters: the per-request mode lays data out in one piece, found {drive.data_clusters}"
                    )
                self.devices.append(HddRequests(env, drive, pattern, rng, draw, ledger))
            else:
                raise WorkloadConfigError(f"--mode per-request: drive {drive.name} is neither an SSD nor a hard disk")

        if self.width == 1:  # one drive: requests go straight to it
            self.submit = self.devices[0].submit  # type: ignore[method-assign]

    def submit(self, request: object, size: float, write: bool, done: Done) -> None:
        count, piece = pieces(self.width, size)
        if self.pattern == "seq":
            start = self.next_start
            self.next_start = (start + count) % self.width
        else:
            start = int(self.draw.random() * self.width)
        if count == 1:
            self.devices[start].submit(request, piece, write, done)
            return
        join = _Join(request, count, done)
        for i in range(count):
            self.devices[(start + i) % self.width].submit(join, piece, write, _piece_done)

    @property
    def events(self) -> int:
        return sum(d.units.timeouts if isinstance(d, SsdRequests) else d.timeouts for d in self.devices)

    def report(self) -> list[dict[str, float | str]]:
        return [d.report() for d in self.devices]
