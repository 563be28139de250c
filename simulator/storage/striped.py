"""Drives striped evenly (RAID 0 without a stripe-unit law): a server's local drives, a storage node's pool.

Every request is split over the drives as stripes.split says (the one
striping law of both faces): p = min(n, floor(block / page)) pieces (at
least one) of block / p bytes; each drive takes 1/n of every byte at that
piece size.  A request of p pieces occupies p of the n drives, so with N requests
outstanding each drive holds N x p / n of them on average (the hard disks'
reordering reads that queue depth; SSD usage does not depend on it).  The
volume's latency is that of the slowest piece, and its closed-loop law the
drives' concurrency law for one piece with the units of the n / p drives a
request's pieces spread over added up (see concurrency).

`copies` > 1 stands for that many identical drives per runtime given (symmetric
lumping): each runtime takes 1/(len x copies) of the bytes, its meter must count
for `copies` drives (shared.scale_meter), and `drives` lists every runtime
`copies` times so that counts and per-drive means stay right.
"""

from __future__ import annotations

from dataclasses import replace

from iowatt.models.fork_join import expected_max, fork_join_loop
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, RequestRun, Usage, Volume, VolumeRequestServer
from iowatt.simulator.storage.member_law import MemberLoad, VolumeLoop, piece_spread, volume_loop
from iowatt.simulator.storage.stripes import split


class StripedVolume(Volume):
    def __init__(self, drives: list[Drive], copies: int = 1) -> None:
        if not drives:
            raise ValueError("a striped volume needs at least one drive")
        self._unique = list(drives)
        self.copies = int(copies)
        # the members' loop by access: the concurrency law and the energy's command depth read the same solution
        self._loops: dict[tuple[Access, Access, int], VolumeLoop] = {}

    @property
    def drives(self) -> list[Drive]:
        return self._unique * self.copies

    @property
    def unique_drives(self) -> list[Drive]:
        return list(self._unique)

    @property
    def width(self) -> int:
        """Drives a request is striped over."""
        return len(self._unique) * self.copies

    @property
    def capacity_bytes(self) -> float:
        return sum(d.capacity_bytes for d in self._unique) * self.copies

    def piece(self, access: Access) -> Access:
        """What each drive sees of a request: its piece, and its share of the outstanding requests."""
        n = self.width
        if n == 1:
            return access
        count, block = split(n, access.block_bytes)
        return access.with_(block_bytes=block, queue_depth=max(1.0, access.queue_depth * count / n))

    def usage(self, access: Access) -> Usage:
        """Each drive's share of the bytes at its piece.  Hard disks whose loop knows a disk's mean command (pieces
        on distinct disks: member_law) price it at that start depth, between the two whole depths' usage: finished
        pieces wait at the join off their disks, so a disk holds fewer than N x p / n (16 x 64 KiB at QD8: 2.95)."""
        share = 1.0 / self.width
        piece = self.piece(access)
        depth = self._command_depth(access)
        if depth is None:
            return [u for d in self._unique for u in d.usage(piece, share)]
        low, frac = int(depth), depth - int(depth)
        out: Usage = []
        for d in self._unique:
            below, above = d.usage(piece.with_(queue_depth=float(low)), share), d.usage(piece.with_(queue_depth=float(low + 1)), share)
            out += [(c, (1.0 - frac) * k + frac * k_up) for (c, k), (_c, k_up) in zip(below, above, strict=True)]
        return out

    def _command_depth(self, access: Access) -> float | None:
        """The start depth of a hard disk's mean command in the volume's loop (member_law), or None (SSDs, one
        drive or one piece per request, mixed disks, queue depth 1)."""
        piece = self.piece(access)
        p = self.pieces(access)
        if self.width == 1 or p <= 1 or access.queue_depth <= 1.0 or all(d.concurrency(piece).units for d in self._unique):
            return None
        return self._members_loop(access, piece, p).command_depth

    def qd1_latency_s(self, access: Access) -> float:
        """The slowest piece alone: a drive's QD1 latency times the mean of the largest of p spread factors."""
        piece = self.piece(access)
        alone = max(d.qd1_latency_s(piece) for d in self._unique)
        p = self.pieces(access)
        if p <= 1:
            return alone
        return alone * expected_max(p, 0.0, max(piece_spread(d, access.write, piece, p) for d in self._unique))

    def pieces(self, access: Access) -> int:
        """Pieces per request: one per drive it covers, at least a page each (stripes.split)."""
        return split(self.width, access.block_bytes)[0]

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The slowest drive's law for one piece, over the drives' units together, and the join.

        A request of p pieces occupies p of the n drives, so the volume is n / p times a drive: the units add
        up (c n / p), each request holds S p / n of the volume and the command limits add up too.  With p = 1
        (a request smaller than two pages) that is exact, one network of n c units.  With p > 1 a request also
        waits for its slowest piece: reads solve the fork-join loop over the drives' units (models.fork_join), and
        a drive's command slots (SATA NCQ) bound the pieces not yet done there, not the requests; writes
        (acknowledged from each drive's buffer after a delay) wait for the longest of p delays."""
        piece = self.piece(access)
        laws = [d.concurrency(piece) for d in self._unique]
        p = self.pieces(access)
        spread = self.width / p  # n / p
        limits = [law.queue_limit for law in laws if law.queue_limit is not None]
        counts = [law.unit_count for law in laws if law.unit_count is not None]
        lumped = ConcurrencyLaw(
            qd1_latency_s=max(law.qd1_latency_s for law in laws),
            queue_seconds=max(law.queue_seconds for law in laws) / spread,
            queue_limit=int(min(limits) * spread) if limits else None,
            units=all(law.units for law in laws),
            unit_count=min(counts) * spread if counts else None,
        )
        if not lumped.units:
            return self._members_law(access, piece, p) if self.width > 1 else lumped
        if p <= 1:
            return lumped
        sigma = max(piece_spread(d, access.write) for d in self._unique)
        if access.write:  # a delay per piece, no queueing on the units: the longest of p delays
            return replace(lumped, qd1_latency_s=lumped.qd1_latency_s * expected_max(p, 0.0, sigma))
        per_drive = min(counts) if counts else lumped.qd1_latency_s * spread / max(lumped.queue_seconds * spread, 1e-30)
        requests = max(1, round(access.queue_depth))
        latencies, pending = fork_join_loop(p, self.width, per_drive, lumped.qd1_latency_s, sigma, requests)
        # a drive's command slots (SATA NCQ: 32) hold the pieces not yet done there; a done piece
        # frees its slot while it waits for the others, so the volume holds requests until that count fills them
        tags = min(limits) if limits else None
        held = requests if tags is None else max([1] + [n for n, a in enumerate(pending, 1) if a <= tags])
        r1, rn = latencies[0], latencies[held - 1]
        s = 0.0 if held <= 1 else max(0.0, (rn - r1) / (held - 1.0))
        limit = held if held < requests else (None if tags is None else max(requests, lumped.queue_limit or requests))
        return ConcurrencyLaw(r1, s, limit, units=False)

    def _members_law(self, access: Access, piece: Access, p: int) -> ConcurrencyLaw:
        """Drives without service units (hard disks): the members' closed network of simulator.storage.member_law,
        requests placed at random (a disk left idle while another holds two is what N / L0 over n disks misses)."""
        return self._members_loop(access, piece, p).law

    def _members_loop(self, access: Access, piece: Access, p: int) -> VolumeLoop:
        key = (access, piece, p)
        if key not in self._loops:
            load = MemberLoad(float(p), float(p), (1.0 / self.width,) * self.width, ((piece.with_(queue_depth=1.0), 1.0),))
            spread = max(piece_spread(d, access.write, piece, p) for d in self._unique)
            self._loops[key] = volume_loop(self.drives, load, access, self.qd1_latency_s(access), spread=spread)
        return self._loops[key]

    def discard(self, nbytes: float) -> None:
        for drive in self._unique:
            drive.discard(nbytes / self.width)

    def request_server(self, run: RequestRun, access: Access) -> VolumeRequestServer:
        """Every listed drive's own server of its pieces, the requests split by stripes.split and joined."""
        from iowatt.simulator.per_request.volume import StripedRequests  # the per-request face's loop, run on demand

        return StripedRequests(run, self.drives, access)

