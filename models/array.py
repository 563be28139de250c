"""RAID arrays and erasure-coded clusters as pure laws: capacity, and device work per host byte.

Geometry (Patterson, Gibson & Katz, "A Case for Redundant Arrays of Inexpensive
Disks", SIGMOD 1988; SNIA Common RAID Disk Data Format 2.0 for the levels):

  level  data drives  usable share  small write (I/Os)      tolerates
  0      n            1             1                       0
  1      1            1/n           n (every mirror)        n-1
  10     n/2          1/2           2                       1 (guaranteed)
  5      n-1          (n-1)/n       4: read data+parity,    1
                                       write data+parity
  6      n-2          (n-2)/n       6: read data+P+Q,       2
                                       write data+P+Q

Parity rotates over the drives (left-symmetric, the Linux md default), so on
average every drive carries the same share of data and of parity.

A partial-stripe write picks the cheaper of read-modify-write (read the old data
and parity, write new data and parity) and reconstruct-write (read the rest of
the stripe's data, write new data and parity) by the number of blocks to read,
as Linux md does (drivers/md/raid5.c, handle_stripe_dirtying: rmw vs rcw).
Sequential writes are gathered into full stripes (md's stripe cache, a
controller's write-back cache), which write n/d bytes per data byte and read
nothing.

Degraded mode (one failed drive): a read of a chunk on the failed drive
reconstructs it from d chunks of the same stripe on the survivors; writes that
would have touched the failed drive write what survives.  Rebuild reads the
survivors and writes the replacement (see rebuild_reads).

Erasure-coded clusters (k data + m parity chunks over nodes) are models.erasure;
they share partial_write's read-modify-write vs reconstruct-write choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

RaidLevel = Literal[0, 1, 5, 6, 10]
LEVELS: tuple[int, ...] = (0, 1, 5, 6, 10)
MIN_DRIVES = {0: 1, 1: 2, 5: 3, 6: 4, 10: 4}
Op = Literal["read", "write"]


def check_geometry(level: int, drives: int) -> None:
    """Raise ValueError naming what is wrong with `drives` for `level`."""
    if level not in LEVELS:
        raise ValueError(f"RAID level must be one of {', '.join(map(str, LEVELS))}, found {level!r}")
    if drives < MIN_DRIVES[level]:
        raise ValueError(f"RAID {level} needs at least {MIN_DRIVES[level]} drives, found {drives}")
    if level == 10 and drives % 2:
        raise ValueError(f"RAID 10 needs an even number of drives (mirrored pairs), found {drives}")


def parity_drives(level: int, drives: int) -> int:
    """Parity chunks per stripe (RAID 5: 1, RAID 6: 2, otherwise 0)."""
    check_geometry(level, drives)
    return {5: 1, 6: 2}.get(level, 0)


def data_drives(level: int, drives: int) -> int:
    """Drives' worth of user data per stripe."""
    check_geometry(level, drives)
    return {0: drives, 1: 1, 10: drives // 2, 5: drives - 1, 6: drives - 2}[level]


def usable_fraction(level: int, drives: int) -> float:
    return data_drives(level, drives) / drives


def usable_capacity_bytes(level: int, drives: int, drive_bytes: float) -> float:
    return data_drives(level, drives) * drive_bytes


def full_stripe_bytes(level: int, drives: int, stripe_unit: float) -> float:
    """User bytes in one full stripe (a write of this size, aligned, needs no reads)."""
    return data_drives(level, drives) * stripe_unit


@dataclass(frozen=True)
class ArrayLoad:
    """Device work per host byte of one kind of request.

    read[i] / write[i]: bytes read from / written to drive i per host byte.
    drive_block_bytes: the size of the requests the drives see.
    drive_ios: device I/Os per host request (the RAID write penalty for small writes).
    """

    read: tuple[float, ...]
    write: tuple[float, ...]
    drive_block_bytes: float
    drive_ios: float

    @property
    def read_total(self) -> float:
        return sum(self.read)

    @property
    def write_total(self) -> float:
        return sum(self.write)


def partial_write(d: int, p: int, k: int, b: float, c: float) -> tuple[float, float, float]:
    """(bytes read, bytes written, I/Os) of a write of b bytes over k of d data chunks; c = bytes per chunk touched.

    Read-modify-write reads the k old data ranges and p parity ranges; reconstruct-write
    reads the d-k untouched data ranges.  Both then write k data + p parity ranges.
    The one with fewer reads wins (ties go to read-modify-write, as md does).
    """
    write = b + p * c
    rmw_read = b + p * c
    rcw_read = (d - k) * c
    if rcw_read < rmw_read:
        return rcw_read, write, (d - k) + k + p
    return rmw_read, write, 2 * (k + p)


@dataclass(frozen=True)
class _Request:
    """One request against one array geometry, as io_load's cases need it."""

    level: int
    n: int                 # drives
    d: int                 # data drives
    p: int                 # parity drives
    b: float               # request bytes
    su: float              # stripe unit, bytes
    chunks: int            # chunks the request touches
    block: float           # bytes of each drive request
    failed: int | None
    sequential: bool

    @property
    def everyone(self) -> list[int]:
        return list(range(self.n))

    @property
    def survivors(self) -> list[int]:
        return [i for i in range(self.n) if i != self.failed]

    @property
    def zeros(self) -> tuple[float, ...]:
        return (0.0,) * self.n

    @property
    def whole_stripes(self) -> bool:
        return self.sequential or self.b >= full_stripe_bytes(self.level, self.n, self.su)

    def even(self, total: float, over: list[int]) -> tuple[float, ...]:
        """`total` spread evenly over the drives `over`."""
        out = [0.0] * self.n
        for i in over:
            out[i] = total / len(over)
        return tuple(out)


def io_load(
    level: int,
    drives: int,
    op: Op,
    request_bytes: float,
    stripe_unit: float,
    sequential: bool = False,
    failed: int | None = None,
) -> ArrayLoad:
    """Per-drive device bytes per host byte for requests of `request_bytes`.

    `sequential`: a stream of consecutive requests (writes coalesce into full
    stripes; reads stream every chunk).  `failed`: index of a failed drive
    (degraded mode), or None.
    """
    check_geometry(level, drives)
    n = drives
    if failed is not None:
        if not 0 <= failed < n:
            raise ValueError(f"failed drive index must be 0..{n - 1}, found {failed}")
        if level == 0:
            raise ValueError("a RAID 0 array does not survive a failed drive")
    if request_bytes <= 0 or stripe_unit <= 0:
        raise ValueError(f"request and stripe unit must be > 0, found {request_bytes} and {stripe_unit}")
    b = float(request_bytes)
    su = float(stripe_unit)
    d = data_drives(level, n)
    chunks = min(d, max(1, math.ceil(b / su))) if level in (0, 5, 6) else max(1, math.ceil(b / su))
    r = _Request(level, n, d, parity_drives(level, n), b, su, chunks, min(b, su), failed, sequential)
    return _read_load(r) if op == "read" else _write_load(r)


def _read_load(r: _Request) -> ArrayLoad:
    n, block, chunks, failed = r.n, r.block, r.chunks, r.failed
    if failed is None:
        return ArrayLoad(r.even(1.0, r.everyone), r.zeros, block, float(chunks))
    if r.level == 1:
        return ArrayLoad(r.even(1.0, r.survivors), r.zeros, block, float(chunks))
    if r.level == 10:
        partner = failed ^ 1  # pairs (0,1), (2,3), ...
        out = [1.0 / n] * n
        out[failed] = 0.0
        out[partner] = 2.0 / n
        return ArrayLoad(tuple(out), r.zeros, block, float(chunks))
    # RAID 5/6
    if r.whole_stripes:
        # whole stripes: the missing data chunk is replaced by a parity chunk
        return ArrayLoad(r.even(1.0, r.survivors), r.zeros, block, float(chunks) * n / (n - 1))
    # a chunk on the failed drive (probability 1/n per byte) costs d chunk reads
    total = (n - 1) / n + r.d / n
    return ArrayLoad(r.even(total, r.survivors), r.zeros, block, chunks * total)


def _write_load(r: _Request) -> ArrayLoad:
    n, d, block, chunks, failed = r.n, r.d, r.block, r.chunks, r.failed
    if r.level == 0:
        return ArrayLoad(r.zeros, r.even(1.0, r.everyone), block, float(chunks))
    if r.level == 1:
        over = r.survivors if failed is not None else r.everyone
        return ArrayLoad(r.zeros, tuple(1.0 if i in over else 0.0 for i in range(n)), block, float(len(over) * chunks))
    if r.level == 10:
        out = [2.0 / n] * n
        ios = 2.0
        if failed is not None:
            out[failed] = 0.0
            ios = 2.0 - 2.0 / n  # a request lands on the degraded pair with probability 2/n and writes once
        return ArrayLoad(r.zeros, tuple(out), block, ios * chunks)
    # RAID 5/6
    if r.whole_stripes:
        if failed is None:
            return ArrayLoad(r.zeros, r.even(n / d, r.everyone), block, chunks * n / d)
        return ArrayLoad(r.zeros, r.even((n - 1) / d, r.survivors), block, chunks * (n - 1) / d)
    c = min(r.b, r.su)  # bytes of each touched chunk (and of each parity range)
    if failed is None:
        read, written, ios = partial_write(d, r.p, chunks, r.b, c)
        return ArrayLoad(r.even(read / r.b, r.everyone), r.even(written / r.b, r.everyone), c, ios)
    return _degraded_partial_write(r, c)


def _degraded_partial_write(r: _Request, c: float) -> ArrayLoad:
    """A RAID 5/6 partial-stripe write with one drive failed (k = 1 chunk for the closed forms; larger ones
    use the same weights): the failed drive holds a touched data chunk (k/n), a parity chunk (p/n) or an
    untouched chunk."""
    n, d, p, k, b = r.n, r.d, r.p, r.chunks, r.b
    w_target, w_parity, w_other = k / n, p / n, (n - k - p) / n
    # target lost: reconstruct-write from the d-k untouched chunks, write the p parity ranges
    t_read, t_write, t_ios = (d - k) * c, b - c + p * c, (d - k) + (k - 1) + p
    # a parity chunk lost: read-modify-write with the parity that survives (none for RAID 5)
    if p - 1 == 0:
        q_read, q_write, q_ios = 0.0, b, float(k)
    else:
        q_read, q_write, q_ios = b + (p - 1) * c, b + (p - 1) * c, 2.0 * (k + p - 1)
    # an untouched chunk lost: ordinary read-modify-write
    o_read, o_write, o_ios = b + p * c, b + p * c, 2.0 * (k + p)
    read = w_target * t_read + w_parity * q_read + w_other * o_read
    written = w_target * t_write + w_parity * q_write + w_other * o_write
    ios = w_target * t_ios + w_parity * q_ios + w_other * o_ios
    return ArrayLoad(r.even(read / b, r.survivors), r.even(written / b, r.survivors), c, ios)


def rebuild_reads(level: int, drives: int, failed: int) -> tuple[float, ...]:
    """Bytes read from each drive per byte rebuilt onto the replacement of drive `failed`.

    RAID 1: one surviving mirror (spread over the survivors); RAID 10: the partner;
    RAID 5: every survivor (XOR of n-1 chunks); RAID 6: d of the n-1 survivors, spread.
    """
    check_geometry(level, drives)
    if level == 0:
        raise ValueError("a RAID 0 array cannot rebuild a failed drive")
    n = drives
    out = [0.0] * n
    survivors = [i for i in range(n) if i != failed]
    if level == 10:
        out[failed ^ 1] = 1.0
        return tuple(out)
    per = {1: 1.0, 5: float(n - 1), 6: float(n - 2)}[level] / len(survivors)
    for i in survivors:
        out[i] = per
    return tuple(out)


# ---------------------------------------------------------------------------- md software RAID on the host


# The md layer's CPU costs are scenario fields with ranges (simulator.storage.kinds.raid: md_cpu_us_per_device_io,
# md_parity_GBps_per_core), since nobody measured them on the studies' servers.


# md's RAID 5/6 stripe cache works in stripe heads of one page per member (drivers/md/raid5.h: RAID5_STRIPE_SIZE is
# PAGE_SIZE unless the array sets stripe_size, 4 KiB on x86; Documentation/admin-guide/md.rst, stripe_cache_size:
# "number of entries ... one page per device"): a write's every page of data and parity is a stripe head that
# raid5d (or a group worker) handles and submits as its own page-sized bio, which the block layer merges later.
STRIPE_PAGE_BYTES = 4096.0


def md_cpu_seconds_per_byte(level: int, drives: int, op: Op, request_bytes: float, device_ios: float,
                            cpu_s_per_device_io: float, parity_bytes_per_cpu_s: float,
                            device_bytes_per_byte: float = 0.0) -> float:
    """Reference-core seconds md spends per host byte: per device I/O (bio split, clone, remap, completion), plus
    one SIMD pass per parity for writes to RAID 5/6 (reconstructing degraded reads is left out).

    RAID 5/6 writes go through the stripe cache, whose device I/Os are pages (STRIPE_PAGE_BYTES), not chunks:
    `device_bytes_per_byte` (bytes read and written on the members per host byte) counts them.  Reads that fit a
    chunk bypass the cache (raid5_read_one_chunk) and cost one device I/O per chunk piece."""
    if op == "write" and level in (5, 6):
        ios_per_byte = max(device_bytes_per_byte / STRIPE_PAGE_BYTES, device_ios / request_bytes)
        return cpu_s_per_device_io * ios_per_byte + parity_drives(level, drives) / parity_bytes_per_cpu_s
    return cpu_s_per_device_io * device_ios / request_bytes
