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
from iowatt.simulator.per_request.energy import Ledger
from iowatt.simulator.storage.contract import (
    Access,
    Drive,
    NoRequestFaceError,
    RequestRun,
    RequestServer,
    Volume,
    VolumeRequestServer,
)
from iowatt.simulator.storage.stripes import split
from iowatt.simulator.workloads import WorkloadConfigError

Done = Callable[[object], None]


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
    """(pieces per request, bytes per piece) of a request striped over `width` drives: the striping law of both
    faces (simulator.storage.stripes.split)."""
    return split(width, block_bytes)


class StripedRequests:
    """A striped volume's drives in the per-request mode: each listed drive's own server (Drive.request_server)."""

    def __init__(self, run: RequestRun, drives: list[Drive], access: Access) -> None:
        self.width = len(drives)
        self.count, self.piece_bytes = pieces(self.width, access.block_bytes)
        self.pattern = access.pattern
        self.draw = run.draw
        self.next_start = 0
        piece = access.with_(block_bytes=self.piece_bytes)
        self.devices: list[RequestServer] = [drive.request_server(run, piece) for drive in drives]
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
        return sum(d.events for d in self.devices)

    def report(self) -> list[dict[str, float | str]]:
        return [d.report() for d in self.devices]


def volume_server(env: simpy.Environment, volume: Volume, access: Access, rng: np.random.Generator, draw: random.Random,
                  ledger: Ledger) -> VolumeRequestServer:
    """The volume's per-request face for requests like `access` (Volume.request_server); a volume or drive without one
    is a configuration error naming what runs in the fluid mode only."""
    try:
        return volume.request_server(RequestRun(env, rng, draw, ledger.counter), access)
    except NoRequestFaceError as error:
        raise WorkloadConfigError(str(error)) from None
