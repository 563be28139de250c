"""A per-page FTL simulation: the independent oracle for models.ftl and models.filesystem.

A drive scaled down about 1/10,000 (a 7.68 TB drive becomes ~190,000 pages
of 4 KiB) that keeps the page / block / over-provisioning ratios: every
logical page has a mapping-table entry, every physical page a reverse entry,
erase blocks are filled by a host write frontier and a separate garbage-
collection frontier, and greedy GC erases the full block with the fewest
valid pages once fewer than `reserve` blocks are free.  A page-granular
filesystem allocator (next-fit cursor or first-fit reuse, discard on delete
or not) places files; writers interleave in requests of `request` pages.
Nothing here shares code with the analytic model: it counts pages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np


class PageFTL:
    """Pages, erase blocks, a mapping table and greedy garbage collection."""

    def __init__(self, user_pages: int, over_provisioning: float, pages_per_block: int, reserve: int = 2) -> None:
        self.user = int(user_pages)
        self.b = int(pages_per_block)
        self.blocks = int(np.ceil(self.user * (1.0 + over_provisioning) / self.b))
        self.l2p = np.full(self.user, -1, np.int64)
        self.p2l = np.full(self.blocks * self.b, -1, np.int64)
        self.valid = np.zeros(self.blocks, np.int64)
        self.full = np.zeros(self.blocks, bool)
        self.free: deque[int] = deque(range(self.blocks))
        self.reserve = int(reserve)
        self.host = 0
        self.nand = 0
        self.frontier = {"host": self.free.popleft(), "gc": self.free.popleft()}
        self.offset = {"host": 0, "gc": 0}

    @property
    def gc_pages(self) -> int:
        """Physical pages garbage collection can use (the reserve blocks never hold data for long)."""
        return (self.blocks - self.reserve) * self.b

    @property
    def valid_pages(self) -> int:
        return int((self.l2p >= 0).sum())

    def _unmap(self, lbas: np.ndarray) -> None:
        old = self.l2p[lbas]
        mapped = old >= 0
        if mapped.any():
            pages = old[mapped]
            np.subtract.at(self.valid, pages // self.b, 1)
            self.p2l[pages] = -1
        self.l2p[lbas] = -1

    def trim(self, lbas: Iterable[int] | np.ndarray) -> None:
        self._unmap(np.asarray(lbas, np.int64))

    def write(self, lbas: Iterable[int] | np.ndarray) -> None:
        """Host writes of these logical pages, in this order."""
        lbas = np.asarray(lbas, np.int64)
        self.host += len(lbas)
        self._program(lbas, "host")

    def _program(self, lbas: np.ndarray, who: str) -> None:
        i = 0
        while i < len(lbas):
            block, off = self.frontier[who], self.offset[who]
            chunk = lbas[i:i + self.b - off]
            n = len(chunk)
            pages = block * self.b + off + np.arange(n)
            # a page written twice in one chunk: the earlier copy is programmed and dead at once
            _, last_rev = np.unique(chunk[::-1], return_index=True)
            last = np.zeros(n, bool)
            last[n - 1 - last_rev] = True
            self._unmap(chunk[last])
            self.l2p[chunk[last]] = pages[last]
            self.p2l[pages[last]] = chunk[last]
            self.valid[block] += int(last.sum())
            self.offset[who] += n
            self.nand += n
            i += n
            if self.offset[who] == self.b:
                self.full[block] = True
                if who == "host":
                    while len(self.free) < self.reserve:
                        self._collect()
                self.frontier[who] = self.free.popleft()
                self.offset[who] = 0

    def _collect(self) -> None:
        """Greedy: erase the full block with the fewest valid pages after copying them to the GC frontier."""
        candidates = np.where(self.full, self.valid, self.b + 1)
        victim = int(np.argmin(candidates))
        if candidates[victim] >= self.b:
            raise RuntimeError("every block is full of valid pages")
        movers = self.p2l[victim * self.b:(victim + 1) * self.b]
        movers = movers[movers >= 0].copy()
        self._unmap(movers)
        self.full[victim] = False
        self.free.append(victim)
        self._program(movers, "gc")


class PageAllocator:
    """A filesystem's free-space map, one flag per logical page: next-fit cursor or first-fit reuse."""

    def __init__(self, pages: int, policy: str) -> None:
        self.is_free = np.ones(pages, bool)
        self.cursor = 0
        self.policy = policy

    def allocate(self, n: int) -> np.ndarray:
        start = self.cursor if self.policy == "next_fit" else 0
        order = np.concatenate([np.flatnonzero(self.is_free[start:]) + start, np.flatnonzero(self.is_free[:start])])
        if len(order) < n:
            raise RuntimeError("filesystem full")
        take = order[:n]
        self.is_free[take] = False
        self.cursor = (int(take[-1]) + 1) % len(self.is_free)
        return take

    def release(self, lbas: np.ndarray) -> None:
        self.is_free[lbas] = True


def interleave(files: list[np.ndarray], request: int) -> np.ndarray:
    """Writers each streaming their own file, round robin in requests of `request` pages."""
    rows = [f.reshape(-1, request) for f in files]
    return np.stack(rows, axis=1).reshape(-1)


def random_overwrites(ftl: PageFTL, pages: np.ndarray, count: int, rng: np.random.Generator) -> float:
    """`count` uniform random single-page overwrites of `pages`; returns their WA."""
    h, n = ftl.host, ftl.nand
    ftl.write(rng.choice(pages, count))
    return (ftl.nand - n) / (ftl.host - h)


def checkpoint_passes(user_pages: int, op: float, pages_per_block: int, file_share: float, per_pass: int, passes: int,
                      writers: int = 8, request: int = 8, policy: str = "next_fit", discard: bool = False,
                      layout: str = "time", fill: float = 0.0, seed: int = 5) -> list[dict[str, float]]:
    """Checkpoints of `writers` files each, `per_pass` per pass, each replacing the one `per_pass` before it
    (deleted, discarded when `discard`, then the new one allocated).  `layout`: "time" (the writers' requests
    are allocated in arrival order, as delayed allocation does) or "per_file" (each writer's file allocated
    whole when it is created).  `fill`: a share of the drive holds files written before, brought to the steady
    state of random writes (8 drive writes of random single pages).  Returns per pass: WA and the FTL-valid
    share at its start."""
    ftl = PageFTL(user_pages, op, pages_per_block)
    fs = PageAllocator(user_pages, policy)
    if fill > 0.0:
        held = fs.allocate(int(fill * user_pages))
        ftl.write(held)
        random_overwrites(ftl, held, 8 * len(held), np.random.default_rng(seed))
    per_file = int(file_share * user_pages) // writers // request * request
    slots: list[np.ndarray | None] = [None] * per_pass
    out = []
    for _ in range(passes):
        h, n, v = ftl.host, ftl.nand, ftl.valid_pages / user_pages
        for s in range(per_pass):
            old = slots[s]
            if old is not None:
                fs.release(old)
                if discard:
                    ftl.trim(old)
            if layout == "per_file":
                files = [fs.allocate(per_file) for _ in range(writers)]
                lbas = interleave(files, request)
            else:
                lbas = fs.allocate(per_file * writers)
            ftl.write(lbas)
            slots[s] = lbas
        out.append({"wa": (ftl.nand - n) / (ftl.host - h), "valid_start": v})
    return out
