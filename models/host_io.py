"""Host side of a checkpoint save: the serializer's CPU cost and Linux's page cache.

Pure laws (no SimPy); simulator/workloads/checkpoint.py builds flows from them
and tests/test_pagecache.py checks the simulation against the closed forms.

Page cache (buffered writes without O_DIRECT).  write() copies into the page
cache and returns; the flusher writes dirty pages back to the drive.  Linux
bounds the dirty pages with vm.dirty_ratio / vm.dirty_background_ratio
(defaults 20 and 10, Documentation/admin-guide/sysctl/vm.rst), as shares of
the *dirtyable* memory: free pages plus the file cache, so anonymous memory
the application holds (here the checkpoint tensors) does not count
(mm/page-writeback.c, global_dirtyable_memory).  balance_dirty_pages lets a
writer run free below freerun = (background + limit) / 2 and then throttles
it so that the dirty pages settle at setpoint = (freerun + limit) / 2
(mm/page-writeback.c, pos_ratio control line).  A stream of S bytes written
at host rate H to a drive of rate D through a buffer of B dirty bytes is
the fluid tank: if H <= D the drive keeps up and the save takes S / H; if
H > D the tank fills in B / (H - D) seconds, after which the writer is held
to D, so the save returns after max(S / H, (S - B) / D) and the last B bytes
are written back after it (fsync waits for them: max(S / H, S / D)).

Serializer.  torch.save writes a zip archive from one thread per process:
each record's bytes are checksummed (CRC-32, on by default; pytorch#124195,
the option to disable it came in pytorch#137735, Oct 2024) and written, so
one rank's bytes cost CRC + copy time in series.  DLIO's 2024 transformer
checkpointing also *created* the layer tensors inside the timed save
(base_checkpointing.checkpoint() calls get_layer_state() for ZeRO < 3) with
torch.randint(..., dtype=int8), whose CPU kernel is serial (one generator
draw per element under the generator mutex: ATen DistributionTemplates.h,
random_from_to_kernel -> cpu_serial_kernel).  The per-rank cost of a byte is
the sum of the stages that rank runs in series (`serial_seconds_per_byte`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from iowatt.models.compute import CPUSpec
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import assumed_constant_of, constant

# Linux defaults (Documentation/admin-guide/sysctl/vm.rst): vm.dirty_ratio = 20, vm.dirty_background_ratio = 10
DEFAULT_DIRTY_RATIO = 0.20
DEFAULT_DIRTY_BACKGROUND_RATIO = 0.10


def dirty_thresholds(dirtyable_bytes: float, dirty_ratio: float = DEFAULT_DIRTY_RATIO,
                     background_ratio: float = DEFAULT_DIRTY_BACKGROUND_RATIO) -> dict[str, float]:
    """Background, freerun, setpoint and hard limit of dirty page-cache bytes (mm/page-writeback.c)."""
    if dirtyable_bytes < 0.0:
        raise ValueError(f"dirtyable_bytes: expected >= 0, found {dirtyable_bytes!r}")
    if not 0.0 < dirty_ratio <= 1.0:
        raise ValueError(f"dirty_ratio: expected a share in (0, 1], found {dirty_ratio!r}")
    if not 0.0 <= background_ratio <= 1.0:
        raise ValueError(f"dirty_background_ratio: expected a share in [0, 1], found {background_ratio!r}")
    limit = dirty_ratio * dirtyable_bytes
    background = background_ratio * dirtyable_bytes
    if background >= limit:
        background = limit / 2.0  # as domain_dirty_limits() does when background is set at or above the limit
    freerun = (background + limit) / 2.0
    setpoint = (freerun + limit) / 2.0
    return {"background": background, "freerun": freerun, "setpoint": setpoint, "limit": limit}


def dirty_thresholds_beside(memory_bytes: float, resident_bytes: float, dirty_ratio: float = DEFAULT_DIRTY_RATIO,
                            background_ratio: float = DEFAULT_DIRTY_BACKGROUND_RATIO) -> dict[str, float]:
    """dirty_thresholds over the memory the application does not hold (its resident bytes are not dirtyable)."""
    return dirty_thresholds(max(0.0, memory_bytes - resident_bytes), dirty_ratio, background_ratio)


def dirty_buffer_bytes(memory_bytes: float, resident_bytes: float, dirty_ratio: float = DEFAULT_DIRTY_RATIO,
                       background_ratio: float = DEFAULT_DIRTY_BACKGROUND_RATIO) -> float:
    """Dirty bytes a throttled writer leaves in the page cache: the setpoint over the memory the application does not hold."""
    return dirty_thresholds_beside(memory_bytes, resident_bytes, dirty_ratio, background_ratio)["setpoint"]


def page_cache_bytes(resident_per_host: list[float], memory_bytes: float, dirty_ratio: float, background_ratio: float,
                     buffered: bool) -> tuple[float, float]:
    """(dirty budget, background threshold) summed over hosts of `memory_bytes` each holding its resident bytes: the
    setpoint a throttled writer settles at and the level the flusher starts writing back at; none without the cache."""
    if not buffered:
        return 0.0, 0.0
    limits = [dirty_thresholds_beside(memory_bytes, r, dirty_ratio, background_ratio) for r in resident_per_host]
    return sum(t["setpoint"] for t in limits), sum(t["background"] for t in limits)


def serial_seconds_per_byte(*rates_Bps: float) -> float:
    """Seconds one thread spends per byte on stages it runs one after another (rates in bytes/s; inf = free)."""
    total = 0.0
    for rate in rates_Bps:
        if not rate > 0.0:
            raise ValueError(f"rate: expected > 0 bytes/s, found {rate!r}")
        total += 0.0 if math.isinf(rate) else 1.0 / rate
    return total


def buffered_write_seconds(size: float, host_Bps: float, drive_Bps: float, buffer_bytes: float, fsync: bool = False) -> float:
    """Seconds until a buffered write of `size` bytes returns (closed form of the fluid tank, see the module docstring)."""
    if size < 0.0 or buffer_bytes < 0.0 or not host_Bps > 0.0 or not drive_Bps > 0.0:
        raise ValueError(f"need size, buffer >= 0 and rates > 0, found {size!r}, {buffer_bytes!r}, {host_Bps!r}, {drive_Bps!r}")
    if fsync:
        return max(size / host_Bps, size / drive_Bps)
    return max(size / host_Bps, max(0.0, size - buffer_bytes) / drive_Bps)


def phased_write_seconds(phases: Sequence[tuple[float, float]], drive_Bps: float, buffer_bytes: float,
                         dirty_start: float = 0.0) -> tuple[float, float]:
    """Exact fluid tank for phases of (bytes, host rate) written one after another through one buffer.

    Returns (seconds until the last write returns, dirty bytes left).  The
    drive drains at drive_Bps whenever there is dirty data; the writer runs at
    its host rate while the tank is below `buffer_bytes`, at the drain rate
    when it is full.  Piecewise linear, so each piece is solved exactly."""
    if buffer_bytes < 0.0 or not drive_Bps > 0.0:
        raise ValueError(f"need buffer >= 0 and drive rate > 0, found {buffer_bytes!r}, {drive_Bps!r}")
    t, dirty = 0.0, max(0.0, dirty_start)
    for amount, host in phases:
        if not host > 0.0 or amount < 0.0:
            raise ValueError(f"phase: need bytes >= 0 and host rate > 0, found {amount!r}, {host!r}")
        left = amount
        while left > 1e-9 * max(1.0, amount):
            if host <= drive_Bps:
                # the drive keeps up: the tank drains at (D - H) while the writer runs at H
                step = left / host
                dirty = max(0.0, dirty - (drive_Bps - host) * step)
                t += step
                left = 0.0
            elif dirty < buffer_bytes:
                # the tank fills at (H - D) until it is full or the phase ends
                to_full = (buffer_bytes - dirty) / (host - drive_Bps)
                step = min(to_full, left / host)
                dirty += (host - drive_Bps) * step
                left -= host * step
                t += step
                if step == to_full:
                    dirty = buffer_bytes
            else:
                # full: the writer is held to the drain rate
                t += left / drive_Bps
                left = 0.0
    return t, dirty


def dlio_transformer_parameters(hidden: int, layers: int, ffn_hidden: int, vocab: int, heads: int, kv_heads: int) -> int:
    """Parameters as DLIO's checkpointing counts them (BaseCheckpointing.get_num_parameters, GQA form):
    embedding + layers x (2 norms + QKV + dense + gated MLP) + final norm + LM head."""
    head = hidden // heads
    kv = head * kv_heads
    per_layer = 2 * hidden + hidden * (hidden + 2 * kv) + hidden * hidden + 3 * ffn_hidden * hidden
    return 2 * vocab * hidden + layers * per_layer + hidden


# ---- per-core rates on the reference core (Zen 4 at 2.4 GHz, models.compute.CPUSpec.core_speed = 1)

# torch.save of one rank: CRC-32 then copy into the page cache, one thread, in series.
# Measured: zlib-class CRC-32 4.1 GB/s on one core of the development machine (AMD EPYC, Python zlib.crc32 over
# 512 MiB; 4.17 GB/s again on 2026-11-24).  CRC is arithmetic on cached lines: it scales with core_speed.
CRC32_GBps_PER_CORE = 4.1
# Bare metal: copy_from_user into freshly allocated page-cache pages ~4 GB/s per core (PROVENANCE below; read
# through page_copy_seconds_per_byte, so a sampler's draw reaches it).  A host's own figure
# (CPUSpec.page_cache_write_GBps_per_core, measured by check-machine's probe) replaces it: on the 2-vCPU
# development VM a buffered write() of resident memory ran at 0.43-0.45 GB/s (about 9 us per 4 KiB page,
# the cost of a page fault that exits to the hypervisor: first touch of anonymous memory 8.5 us/page).
PAGE_CACHE_WRITE_GBps_PER_CORE = 4.0
# A plain copy between resident buffers (memcpy: no page to allocate or fault in), e.g. an O_DIRECT reader's
# copy from its aligned buffer into the numpy array (PROVENANCE below; read through memcpy_seconds_per_byte).
MEMCPY_GBps_PER_CORE = 10.0
# the reference core's torch.save rate with the declared values, 1 / (1/4.1 + 1/4) = 2.0 GB/s (runs use
# torch_save_GBps_per_core, which reads the page-cache rate when it runs)
TORCH_SAVE_GBps_PER_CORE = 1.0 / (1.0 / CRC32_GBps_PER_CORE + 1.0 / PAGE_CACHE_WRITE_GBps_PER_CORE)


def page_copy_seconds_per_byte(cpu: CPUSpec) -> float:
    """Reference-core seconds per byte copied into pages that must first be allocated (page cache, shared memory):
    the host's measured per-core rate where it has one (seconds on its own core x its core_speed), else the
    reference figure."""
    if cpu.page_cache_write_GBps_per_core is None:
        return 1.0 / (constant(PAGE_CACHE_WRITE.name) * 1e9)
    return cpu.core_speed / (cpu.page_cache_write_GBps_per_core * 1e9)


def page_read_seconds_per_byte(cpu: CPUSpec) -> float:
    """Reference-core seconds of CPU per byte a buffered read() takes from the drive into the page cache and copies
    out: the host's measured per-core rate where it has one, else the write's page cost (page_copy_seconds_per_byte:
    a page allocated, then a copy across it).  On a VM the measured read is far cheaper than the write
    (calibration.host_probe): the device's DMA, not the guest's vCPU, first touches a read's page."""
    if cpu.page_cache_read_GBps_per_core is None:
        return page_copy_seconds_per_byte(cpu)
    return cpu.core_speed / (cpu.page_cache_read_GBps_per_core * 1e9)


def shm_collate_seconds_per_byte(cpu: CPUSpec) -> float:
    """Reference-core seconds per byte a PyTorch loader worker spends collating a batch into new shared memory (torch's
    default_collate in a worker allocates the batch with _new_shared: a new segment whose every page faults in on the
    copy): the host's measured rate (CPUSpec.shm_write_GBps_per_core) where it has one; none charged without it, as
    before the probe measured it."""
    if cpu.shm_write_GBps_per_core is None:
        return 0.0
    return cpu.core_speed / (cpu.shm_write_GBps_per_core * 1e9)


def memcpy_seconds_per_byte() -> float:
    """Reference-core seconds per byte of a copy between resident buffers (no page allocation)."""
    return 1.0 / (constant(MEMCPY.name) * 1e9)


def torch_save_GBps_per_core(cpu: CPUSpec) -> float:
    """Reference-core GB/s of one rank's torch.save on this host: CRC-32 and the page-cache copy in series."""
    return 1.0 / (1e9 * (1.0 / (CRC32_GBps_PER_CORE * 1e9) + page_copy_seconds_per_byte(cpu)))

# torch.randint(high=1, dtype=int8) on CPU: one mt19937 draw + modulo per byte in a serial kernel
# (random_from_to_kernel -> cpu_serial_kernel under the generator mutex), a few ns per element,
# i.e. a few tenths of a GB/s per core.  Calibrated: StorageReview "Scaling AI Checkpoints", D7-PS1010
# pass 1 mean 464 s (sr.ckpt.ps1010.pass1) with the save cost above, 8 ranks on Xeon Gold 6430
# (core_speed 0.875) and DLIO's weights = 405.85e9 x 2 B (fp16, the model_datatype of DLIO's llama_405b
# config); it then predicts the D5-P5336 pass-1 row within 2 %.  The weights:optimizer split of the study's
# 1,636 GB is not published: with int8 tensors (1 B weights, 3 B optimizer per parameter, 1,623 GB) the same
# fit would put the D5-P5336 pass 1 about 12 % high (~700 s), so the fp16 split is the one the two rows support.
# DLIO timed region: main.py wraps checkpointing_mechanism.checkpoint() in stats.start_ckpt/end_ckpt.
DLIO_GENERATE_GBps_PER_CORE = 0.362

# the machine-readable record of the constants above that were fitted (scenarios.published_fits refits them) or assumed
PROVENANCE: dict[str, Provenance] = {
    "PAGE_CACHE_WRITE_GBps_PER_CORE": Provenance(
        p="assumed",
        note="bare metal: copy_from_user into freshly allocated page-cache pages ~4 GB/s per core (a copy reads and "
        "writes each byte, and the kernel allocates, zeroes nothing, and charges one page per 4 KiB: ~0.3 us of a "
        "~1 us page); a host's measured figure (CPUSpec.page_cache_write_GBps_per_core) replaces it",
        low=2.0, high=8.0, shape="log-uniform",
        range_note="low: 2 GB/s, the page's allocation and accounting at ~1.5 us instead of ~0.3 us (a loaded "
        "allocator, cgroup charging); high: 8 GB/s, a cached copy_from_user at ~10 GB/s with the allocation "
        "amortised (pages recycled from the free lists); a VM whose page faults exit to the hypervisor falls far "
        "below (0.43-0.45 GB/s measured on the development VM), which is why a host's own figure replaces it",
    ),
    "MEMCPY_GBps_PER_CORE": Provenance(
        p="assumed",
        note="one memcpy stream of a server core between resident buffers, ~10 GB/s: the rate models.fabric's TCP "
        "cost and models.cluster_service's per-byte cost rest on (one AVX copy stream, cache-missing both sides, "
        "runs 8-15 GB/s on current server cores)",
        low=3.0, high=20.0, shape="log-uniform",
        range_note="low: 3 GB/s, a loaded or older core (numpy.copyto of 256 MiB ran 1.7 GB/s on the shared 2-vCPU "
        "development VM under load, 2026-11-27: a VM's floor, not a server's); high: 20 GB/s, a core copying lines "
        "warm in L3",
    ),
    "DLIO_GENERATE_GBps_PER_CORE": Provenance(
        p="calibrated", fitted_on=("sr.ckpt.ps1010.pass1",),
        src="StorageReview, Scaling AI Checkpoints: D7-PS1010 pass 1 mean 464 s (scenarios/validation/published.yaml)",
        note="solves the D7-PS1010 pass-1 mean of scenarios/library/storagereview/ckpt_ps1010.yaml; see the comment above",
        stderr=0.0191, low=0.332, high=0.395, shape="log-normal",
        range_note="the fit's 90 % interval: relative standard error 5.3 % in log space, the row's own noise (3.6 %, "
        "scenarios.published_fits.ROW_NOISE) over the row's slope d log(time) / d log(value) = 0.69 "
        "(scenarios.published_fits.log_stderr)",
    ),
}
MEMCPY = assumed_constant_of("models.host_io.memcpy_GBps_per_core", MEMCPY_GBps_PER_CORE, PROVENANCE["MEMCPY_GBps_PER_CORE"])
PAGE_CACHE_WRITE = assumed_constant_of("models.host_io.page_cache_write_GBps_per_core", PAGE_CACHE_WRITE_GBps_PER_CORE,
                                       PROVENANCE["PAGE_CACHE_WRITE_GBps_PER_CORE"])


# ---- close-time flush of rewritten files (tests/fixtures/passes/README.md, second session)
# A file reopened with O_TRUNC and rewritten is flushed when it is closed, in the closing thread: ext4 with
# auto_da_alloc (the default, ext4(5)): ext4_release_file -> ext4_alloc_da_blocks -> filemap_flush; XFS always:
# xfs_release (XFS_ITRUNCATED) -> filemap_flush.  A new file is written back later by the flusher while the writer
# goes on.  Measured on the device host: only overwrite closes take time (0.9-3.9 s), +33 % for one CPU-bound writer.


def flush_concurrency(sync_share: float, ranks: int) -> float:
    """How many ranks' close flushes the drive serves at once: 1 when the ranks have drifted apart (share 0: each
    flush runs alone, first come first served, while the others make their next file), all of them when they run in
    lockstep (share 1: identical ranks close together and NVMe round-robin arbitration serves them at equal shares)."""
    if not 0.0 <= sync_share <= 1.0:
        raise ValueError(f"flush_sync_share: expected a share in [0, 1], found {sync_share!r}")
    if ranks < 1:
        raise ValueError(f"ranks: expected >= 1, found {ranks!r}")
    return 1.0 + sync_share * (ranks - 1)


def close_flush_seconds(files: int, file_bytes: float, ranks: int, host_Bps: float, drive_Bps: float,
                        concurrent: float) -> float:
    """Seconds until the last of `ranks` identical ranks has made and flushed its `files` files of `file_bytes` each:
    per file, CPU time c = file_bytes / host_Bps, then the close flush, served `concurrent` (k) at a time at equal
    shares of the drive (f = file_bytes / drive_Bps alone), in arrival order.  The ranks settle into ranks / k groups
    whose flushes follow each other: while the drive has idle time (ranks x f <= c + k x f) a rank's cycle is
    c + k x f and the last group ends (ranks - k) x f after the first; otherwise the drive binds from the first close
    on.  Exact where k divides ranks (tests/test_close_flush.py's event simulation); between, the same line."""
    if files < 0 or file_bytes < 0.0 or not host_Bps > 0.0 or not drive_Bps > 0.0:
        raise ValueError(f"need files, file_bytes >= 0 and rates > 0, found {files!r}, {file_bytes!r}, {host_Bps!r}, {drive_Bps!r}")
    if not 1.0 <= concurrent <= ranks:
        raise ValueError(f"concurrent: expected 1..{ranks} flushes at once, found {concurrent!r}")
    if files == 0 or file_bytes == 0.0:
        return 0.0
    c, f = file_bytes / host_Bps, file_bytes / drive_Bps
    return max(files * (c + concurrent * f) + (ranks - concurrent) * f, c + files * ranks * f)


def close_flush_extra_seconds(files: int, file_bytes: float, ranks: int, host_Bps: float, drive_Bps: float,
                              concurrent: float) -> float:
    """What flushing at close adds to the same files written new (made at host_Bps each, written back by the flusher
    while the ranks go on: the longer of the ranks' CPU time and the drive's time for all the bytes)."""
    new = max(files * file_bytes / host_Bps, ranks * files * file_bytes / drive_Bps)
    return max(0.0, close_flush_seconds(files, file_bytes, ranks, host_Bps, drive_Bps, concurrent) - new)
