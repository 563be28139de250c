"""`kind: raid`: RAID 0/1/5/6/10 over identical drives (models.array laws).

Per-drive device bytes per host byte come from models.array (small-write
penalty, full-stripe writes, degraded reads).  The closed loop is solved over
the members (simulator.storage.member_law): the pieces of the N host requests in
flight land on the drives at random, each drive serves what it holds through its
own concurrency law, and the number a drive holds follows the network's
distribution, not N / n; its mean (when busy) is the queue depth the drive's
usage sees (a disk reorders what it holds).  The md layer costs host CPU per
device I/O and, for parity writes, per byte XORed (models.array).  In rebuild
mode a share of every involved drive's bottleneck resource is reserved for the
rebuild stream, as a controller's rebuild-rate setting does.
"""

from __future__ import annotations

from typing import Literal

from iowatt.models import array as raid
from iowatt.models.fork_join import expected_max
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes, Fraction
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.storage.contract import PAGE_BYTES, Access, ConcurrencyLaw, Drive, Usage, Volume
from iowatt.simulator.storage.drive_fields import DriveFields, drives_bought
from iowatt.simulator.storage.host_interface import HostInterfaceConfig, attach
from iowatt.simulator.storage.member_law import MemberLoad, VolumeLoop, piece_spread, volume_loop
from iowatt.simulator.storage.registry import BuildContext, StorageKind
from iowatt.simulator.storage.shared import bottleneck_share, drive_usage, reserve
from pydantic import Field, model_validator


class RaidStorageConfig(DriveFields):
    """`kind: raid`: RAID 0/1/5/6/10 over `count` drives (models.array)."""

    kind: Literal["raid"]
    level: Literal[0, 1, 5, 6, 10] = Field(description="RAID level: 0, 1, 5, 6 or 10")
    count: int = Field(ge=1, le=256, description="drives in the array")
    stripe_unit: Bytes = Field(
        default=512 * 1024, ge=4096, description="chunk per drive per stripe (mdadm's default chunk is 512 KiB)"
    )
    degraded: bool = Field(default=False, description="one drive has failed; reads of its data are reconstructed")
    rebuild: bool = Field(default=False, description="a failed drive is being rebuilt onto a replacement (implies degraded)")
    attach: HostInterfaceConfig | None = Field(
        default=None, description="where the drives attach: `hba`, `expander_lanes`, `switch_uplink` (default: the CPU's own lanes)"
    )
    md_cpu_us_per_device_io: float = assumed_field(
        2.0, low=1.0, high=8.0, shape="log-uniform", point="estimate", gt=0.0, le=1000.0,
        description="host CPU per device I/O of Linux md, reference-core microseconds (bio split at chunk boundaries, "
        "clone, remap to the member, completion chained back; raid5's chunk-aligned read bypasses the stripe cache, "
        "drivers/md/raid5.c raid5_read_one_chunk)",
        note="one block-layer submission + completion costs ~1 us on a modern core (a core drives ~1 M IOPS through "
        "io_uring/NVMe, Axboe's io_uring figures); md's clone, remap and end_io about as much again: 2 us",
        range_note="low 1 us: the block layer's own submission + completion, md adding little (raid0/raid1 map a bio "
        "without a stripe head); high 8 us: raid5's stripe-head path (device_lock, one raid5d thread unless "
        "group_thread_cnt is set): 4 KiB random writes to md RAID 5 over null_blk ran at 463 k IOPS with 8 stripe threads "
        "(Paszkiewicz, linux-raid 2024, 'md/raid5: optimize the wait queue'), ~17 thread-us per write of 4 device I/Os",
    )
    md_parity_GBps_per_core: float = assumed_field(
        20.0, low=5.0, high=40.0, shape="log-uniform", point="estimate", gt=0.0, le=1000.0,
        description="parity (P or Q) md computes per reference core, GB/s of data: the kernel's SIMD xor/raid6 routines, "
        "whose speed it measures at boot (dmesg 'xor: using function: avx (... MB/sec)', 'raid6: avx2x4 gen() ... MB/s')",
        note="AVX2 XOR of cached data runs at tens of GB/s per core, the RAID 6 Q syndrome at about half: 20 GB/s",
        range_note="low 5 GB/s: SSE-only or pre-AVX2 cores and data that misses the cache (the boot benchmark runs on "
        "cached buffers); high 40 GB/s: AVX2/AVX-512 xor benchmarks at boot on Skylake-class cores report 30-40 GB/s",
    )
    md_group_threads: int = Field(
        default=0, ge=0, le=1024,
        description="md's group_thread_cnt (RAID 5/6): worker threads that handle the stripe cache's stripes; 0, the "
        "default (Documentation/admin-guide/md.rst), leaves every stripe of the array's writes to its one raid5d thread",
    )
    rebuild_share: Fraction = Field(
        default=0.3,
        gt=0.0,
        lt=1.0,
        description="share of the busiest drive's bottleneck the rebuild takes "
        "(default 0.3: Broadcom MegaRAID's documented default rebuild rate, 30 %; a controller setting, set it to yours)",
    )

    @model_validator(mode="after")
    def _geometry(self) -> RaidStorageConfig:
        try:
            raid.check_geometry(self.level, self.count)
        except ValueError as error:
            raise ValueError(f"count: {error}") from None
        if self.level == 0 and (self.degraded or self.rebuild):
            raise ValueError("degraded/rebuild: a RAID 0 array does not survive a failed drive, found level 0")
        return self


class RaidVolume(Volume):
    """RAID 0/1/5/6/10 over identical drives."""

    def __init__(self, engine: FlowEngine, drives: list[Drive], level: int, stripe_unit: float, degraded: bool = False,
                 rebuild: bool = False, rebuild_share: float = 0.3, cpu: Constraint | None = None, core_speed: float = 1.0, *,
                 md_cpu_s_per_device_io: float, md_parity_Bps_per_core: float, stripe_threads: int = 1, name: str = "md") -> None:
        raid.check_geometry(level, len(drives))
        self.engine = engine
        self.cpu = cpu  # the cores md runs on (the host's, or an NFS server's); None: not charged
        # RAID 5/6 writes go through the stripe cache, whose stripes one raid5d thread handles unless md's
        # group_thread_cnt gives it workers (Documentation/admin-guide/md.rst); reads that fit a chunk bypass it
        self.stripe_threads = engine.constraint(f"{name}.stripe_threads", float(stripe_threads)) if level in (5, 6) else None
        self.core_speed = core_speed
        self.md_cpu_s_per_device_io = md_cpu_s_per_device_io
        self.md_parity_Bps_per_core = md_parity_Bps_per_core
        self.last_loop: VolumeLoop | None = None
        self._drives = list(drives)
        self.level = level
        self.stripe_unit = float(stripe_unit)
        # the failed drive is the last one; in rebuild mode it is the replacement being written
        self.failed: int | None = len(drives) - 1 if (degraded or rebuild) else None
        self.rebuild_rate_Bps = 0.0
        if rebuild:
            self._start_rebuild(rebuild_share)

    @property
    def drives(self) -> list[Drive]:
        return list(self._drives)

    @property
    def n(self) -> int:
        return len(self._drives)

    @property
    def capacity_bytes(self) -> float:
        return raid.usable_capacity_bytes(self.level, self.n, self._drives[0].capacity_bytes)

    def load(self, access: Access) -> raid.ArrayLoad:
        return raid.io_load(self.level, self.n, access.op, access.block_bytes, self.stripe_unit,
                            sequential=access.pattern == "seq", failed=self.failed)

    def pieces(self, access: Access) -> tuple[Access, Access]:
        """The read and the write a member drive sees of `access` (queue depth: one; the loop sets it).
        Reads inside a write are read-modify-write reads of old data/parity: random."""
        load = self.load(access)
        piece = access.with_(block_bytes=max(load.drive_block_bytes, PAGE_BYTES), queue_depth=1.0)
        reads = piece.with_(op="read", pattern=access.pattern if access.op == "read" else "rand", overwrite=False)
        return reads, piece.with_(op="write")

    def member_load(self, access: Access) -> MemberLoad:
        """Device I/Os per host request, how many at once (a read-modify-write reads, then writes: two
        phases), each drive's share of them, and the read/write mix of the pieces."""
        load = self.load(access)
        total = load.read_total + load.write_total
        phases = 2.0 if access.write and load.read_total > 0.0 else 1.0
        reads, writes = self.pieces(access)
        parts = ((reads, load.read_total / total), (writes, load.write_total / total))
        visits = tuple((r + w) / total for r, w in zip(load.read, load.write, strict=True))
        return MemberLoad(max(1.0, load.drive_ios), max(1.0, load.drive_ios / phases), visits, parts)

    def closed_loop(self, access: Access) -> VolumeLoop:
        """The members' network at the access's queue depth (simulator.storage.member_law)."""
        loop = volume_loop(self._drives, self.member_load(access), access, self.qd1_latency_s(access), spread=self._spread(access))
        self.last_loop = loop
        return loop

    def usage(self, access: Access) -> Usage:
        load = self.load(access)
        depth = self.closed_loop(access).per_drive_outstanding
        reads, writes = (p.with_(queue_depth=max(1.0, depth)) for p in self.pieces(access))
        out: Usage = []
        for i, drive in enumerate(self._drives):
            out += drive_usage(drive, reads, load.read[i])
            out += drive_usage(drive, writes, load.write[i])
        if self.cpu is not None:
            cpu_s = raid.md_cpu_seconds_per_byte(self.level, self.n, access.op, access.block_bytes, load.drive_ios,
                                                 self.md_cpu_s_per_device_io, self.md_parity_Bps_per_core,
                                                 device_bytes_per_byte=load.read_total + load.write_total)
            out.append((self.cpu, cpu_s / self.core_speed))
            if access.write and self.stripe_threads is not None:
                out.append((self.stripe_threads, cpu_s / self.core_speed))
        return out

    def qd1_latency_s(self, access: Access) -> float:
        """The slowest drive piece; a read-modify-write reads before it writes (two phases)."""
        load = self.load(access)
        piece = access.with_(block_bytes=max(load.drive_block_bytes, PAGE_BYTES), queue_depth=1.0)
        drive = self._drives[0]
        latency = drive.qd1_latency_s(piece)
        if access.write and load.read_total > 0.0:
            latency += drive.qd1_latency_s(piece.with_(op="read", pattern="rand"))
        width = round(self.member_load(access).width)
        return latency * expected_max(width, 0.0, self._spread(access)) if width > 1 else latency

    def _spread(self, access: Access) -> float:
        """The spread of one piece's time: a read's where the request reads at all (reads, read-modify-write); for
        hard disks the one whose largest of the request's `width` pieces is that of as many idle disks' positionings
        (member_law.piece_spread, given the piece and the width)."""
        reads = not access.write or self.load(access).read_total > 0.0
        read_piece, write_piece = self.pieces(access)
        width = max(1, round(self.member_load(access).width))
        return piece_spread(self._drives[0], write=not reads, piece=read_piece if reads else write_piece, pieces=width)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """The members' closed loop at the access's queue depth, as the contract's law (member_law)."""
        return self.closed_loop(access).law

    def discard(self, nbytes: float) -> None:
        """Deleted files free their data and parity: each drive drops its full-stripe share."""
        for drive, share in self.stored_shares():
            if share > 0.0 and nbytes > 0.0:
                drive.discard(nbytes * share)

    def stored_shares(self) -> list[tuple[Drive, float]]:
        """Each drive's full-stripe share of a file's bytes: its data and parity (or mirror copy)."""
        load = raid.io_load(self.level, self.n, "write", self.stripe_unit, self.stripe_unit, sequential=True)
        return list(zip(self._drives, load.write, strict=True))

    def _start_rebuild(self, share: float) -> None:
        """Reserve the rebuild stream: it takes `share` of the busiest involved drive's bottleneck."""
        if self.failed is None:
            raise ValueError("rebuild: the array has no failed drive to rebuild")
        reads = raid.rebuild_reads(self.level, self.n, self.failed)
        chunk_read = Access("read", self.stripe_unit, "seq")
        usage: Usage = []
        for i, drive in enumerate(self._drives):
            usage += drive_usage(drive, chunk_read, reads[i])
        usage += drive_usage(self._drives[self.failed], chunk_read.with_(op="write"), 1.0)
        worst = bottleneck_share(usage, 1.0)
        if worst <= 0.0:
            return
        self.rebuild_rate_Bps = share / worst
        reserve(self.engine, usage, self.rebuild_rate_Bps)

    def rebuild_seconds(self) -> float:
        """Time to rebuild the whole replacement drive at the reserved rate (md rebuilds every sector)."""
        if self.rebuild_rate_Bps <= 0.0:
            return 0.0
        return self._drives[0].capacity_bytes / self.rebuild_rate_Bps

    def report(self) -> dict[str, object]:
        out = super().report()
        if self.last_loop is not None:
            out["closed_loop"] = loop_report(self.last_loop)
        if self.rebuild_rate_Bps > 0.0:
            out["rebuild_rate_GBps"] = self.rebuild_rate_Bps / 1e9
            out["rebuild_seconds"] = self.rebuild_seconds()
        return out


def loop_report(loop: VolumeLoop) -> dict[str, object]:
    """The closed loop of the last access asked about: what binds it and how the drives share it."""
    return {
        "binding": loop.binding(),
        "requests_in_flight": loop.requests,
        "requests_per_second": loop.host_rate,
        "mean_latency_s": loop.requests / loop.host_rate,
        "drive_outstanding_when_busy": loop.per_drive_outstanding,
        "utilisation": dict(loop.solution.utilisation),
    }


def build_array(ctx: BuildContext, config: RaidStorageConfig, cpu: Constraint | None, core_speed: float) -> Volume:
    """The array with md running on `cpu` (the host's cores, or an NFS server's), behind its host interface."""
    drives = config.build_drives(ctx.engine, ctx.prefix, config.count)
    array = RaidVolume(ctx.engine, drives, config.level, config.stripe_unit, config.degraded, config.rebuild, config.rebuild_share,
                       cpu, core_speed, md_cpu_s_per_device_io=config.md_cpu_us_per_device_io * 1e-6,
                       md_parity_Bps_per_core=config.md_parity_GBps_per_core * 1e9,
                       stripe_threads=max(1, config.md_group_threads), name=f"{ctx.prefix}md")
    return attach(ctx.engine, array, config.attach, ctx.prefix)


def build(ctx: BuildContext, config: RaidStorageConfig) -> Volume:
    cpu, core_speed = ctx.software_cores or (ctx.host.cpu, ctx.host.core_speed)
    return build_array(ctx, config, cpu, core_speed)


KIND = StorageKind(
    name="raid",
    config=RaidStorageConfig,
    build=build,
    drives_bought=drives_bought,
    # RAID 5 (n-1)/n, RAID 6 (n-2)/n, RAID 1 one drive, RAID 10 half
    usable_fraction=lambda config: raid.usable_fraction(config.level, config.count),
)
