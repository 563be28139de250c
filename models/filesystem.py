"""What a filesystem tells the drive: where new files land and when deleted ones are discarded.

Pure accounting, no SimPy.  simulator/storage/ssd.py keeps one FileSpace per
drive (the drive's share of the volume: striping gives every member the same
share of every file) and turns its answers into kills and discards on the
drive's FTL (models.ftl).

The filesystem decides three things the drive cannot see:

- discard: whether deleting a file tells the drive (`on_delete`: mount -o
  discard), a periodic `fstrim` does it later for all free space
  (`periodic`), or nothing does (`none`).  Until then the deleted blocks stay
  valid to the FTL (*stale*).
- allocator: where a new file's blocks go.  `next_fit`: after the last
  allocation, so never-written space is used before freed space, and freed
  space is reused oldest first (ext4's mballoc allocates files above
  mb_stream_req = 16 blocks from one global goal that moves forward,
  ext4_mb_regular_allocator / s_mb_last_group; Documentation/filesystems/ext4
  mb_stream_req).  `reuse`: the most recently freed space first (XFS
  allocates near the goal of the directory's allocation group, into the
  extents just freed there: xfs_alloc_vextent near/by-bno allocation).
- replace: how a program replaces a file.  `delete_then_create` (a new name,
  as DLIO's checkpoints are: a directory per step) frees the old blocks to
  the allocator; `truncate_rewrite` (open with O_TRUNC, as torch.save on the
  same path) frees them and reallocates from the inode's own goal, so the
  new data land on the old blocks first whatever the allocator.

Free space is a queue of extents in the order the allocator will reuse them;
an extent is either clean (never written or discarded) or stale (holding an
owner's data that the drive still counts as valid).  A file's data belong to
one *owner* per incarnation (models.ftl), so a later overwrite or discard
names exactly whose data die.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Discard = Literal["on_delete", "periodic", "none"]
Allocator = Literal["next_fit", "reuse"]
Replace = Literal["delete_then_create", "truncate_rewrite"]
FilesystemName = Literal["ext4", "xfs"]

# systemd's fstrim.timer (util-linux) runs weekly: OnCalendar=weekly
WEEK_SECONDS = 7 * 86400.0


class FilesystemSpec(BaseModel):
    """A filesystem's behaviour towards the drive (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: FilesystemName = "ext4"
    discard: Discard = "none"
    fstrim_interval_s: float = Field(default=WEEK_SECONDS, gt=0)
    allocator: Allocator = "next_fit"
    replace: Replace = "delete_then_create"


# Mount and allocator defaults: neither ext4 nor XFS discards unless mounted with `discard`
# (ext4(5), xfs(5): nodiscard is the default); distributions may add a weekly fstrim.timer (set
# discard: periodic).  Allocators as in the module docstring.
PRESETS: dict[str, FilesystemSpec] = {
    "ext4": FilesystemSpec(name="ext4", discard="none", allocator="next_fit"),
    "xfs": FilesystemSpec(name="xfs", discard="none", allocator="reuse"),
}


@dataclass
class Extent:
    """Bytes of free space or of a file: `owner` whose data the drive holds there (None: clean)."""

    owner: str | None
    nbytes: float


@dataclass
class LiveFile:
    owner: str
    nbytes: float


class FileSpace:
    """One drive's share of a filesystem: live files and the free-space queue (module docstring)."""

    def __init__(self, capacity_bytes: float, spec: FilesystemSpec, live_bytes: float = 0.0, stale_bytes: float = 0.0,
                 initial_owner: str = "initial", stale_owner: str = "initial.stale") -> None:
        if live_bytes < 0.0 or stale_bytes < 0.0 or live_bytes + stale_bytes > capacity_bytes * (1.0 + 1e-9):
            raise ValueError(
                f"filesystem: live {live_bytes:.4g} + stale {stale_bytes:.4g} bytes must fit in {capacity_bytes:.4g}"
            )
        self.capacity_bytes = capacity_bytes
        self.spec = spec
        self.files: dict[str, LiveFile] = {}
        self.free: deque[Extent] = deque()
        self._incarnation = itertools.count(1)
        if live_bytes > 0.0:
            self.files[initial_owner] = LiveFile(initial_owner, live_bytes)
        clean = max(0.0, capacity_bytes - live_bytes - stale_bytes)
        # next-fit: the goal sits after the data written so far, so never-written space comes first
        first, second = (Extent(None, clean), Extent(stale_owner, stale_bytes))
        if spec.allocator == "reuse":
            first, second = second, first
        for extent in (first, second):
            if extent.nbytes > 0.0:
                self.free.append(extent)
        self.next_trim_s = spec.fstrim_interval_s

    @property
    def live_bytes(self) -> float:
        return sum(f.nbytes for f in self.files.values())

    @property
    def free_bytes(self) -> float:
        return sum(e.nbytes for e in self.free)

    @property
    def stale_bytes(self) -> float:
        return sum(e.nbytes for e in self.free if e.owner is not None)

    def owner_of(self, name: str) -> str | None:
        f = self.files.get(name)
        return None if f is None else f.owner

    def allocate(self, name: str, nbytes: float) -> tuple[str, list[Extent]]:
        """Give file `name` `nbytes` more bytes; returns its owner and the free extents they land on, in order.

        A new name starts a new incarnation (owner); an existing file grows under its owner.  Beyond the
        free space the bytes land on the oldest other files (a benchmark on the raw device writes over what
        is there)."""
        if nbytes < 0.0:
            raise ValueError(f"allocate: bytes must be >= 0, found {nbytes!r}")
        live = self.files.get(name)
        if live is None:
            live = self.files[name] = LiveFile(f"{name}#{next(self._incarnation)}", 0.0)
        pieces: list[Extent] = []
        need = nbytes
        while need > 0.0 and self.free:
            head = self.free[0]
            take = min(need, head.nbytes)
            pieces.append(Extent(head.owner, take))
            head.nbytes -= take
            need -= take
            if head.nbytes <= 1e-9 * max(1.0, nbytes):
                self.free.popleft()
        for other in list(self.files.values()):
            if need <= 0.0:
                break
            if other is live or other.nbytes <= 0.0:
                continue
            take = min(need, other.nbytes)
            pieces.append(Extent(other.owner, take))
            other.nbytes -= take
            need -= take
        if need > 1e-9 * max(1.0, nbytes):
            raise ValueError(f"filesystem full: {name!r} needs {need / 1e9:.4g} GB more than the capacity holds")
        live.nbytes += nbytes
        return live.owner, pieces

    def delete(self, name: str, discard: bool | None = None, truncate: bool = False) -> list[Extent]:
        """Free file `name`; returns the extents the drive must discard now (empty unless discarding).

        `discard` overrides the spec's policy (None: on_delete discards); `truncate` (the file is
        rewritten in place) puts its blocks first in line whatever the allocator."""
        live = self.files.pop(name, None)
        if live is None or live.nbytes <= 0.0:
            return []
        now = self.spec.discard == "on_delete" if discard is None else discard
        extent = Extent(None if now else live.owner, live.nbytes)
        if truncate or self.spec.allocator == "reuse":
            self.free.appendleft(extent)
        else:
            self.free.append(extent)
        return [Extent(live.owner, live.nbytes)] if now else []

    def fstrim(self) -> list[Extent]:
        """Discard every stale free extent (fstrim); returns what the drive must discard."""
        trimmed = [Extent(e.owner, e.nbytes) for e in self.free if e.owner is not None]
        for e in self.free:
            e.owner = None
        return trimmed

    def trims_due(self, now_s: float) -> list[Extent]:
        """Periodic discard: what the fstrim runs due by `now_s` discard (nothing for other policies)."""
        if self.spec.discard != "periodic" or now_s < self.next_trim_s:
            return []
        while self.next_trim_s <= now_s:
            self.next_trim_s += self.spec.fstrim_interval_s
        return self.fstrim()
