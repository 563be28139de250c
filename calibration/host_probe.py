"""Host probe: what this machine's CPU charges for the copies and file parsing a DLIO run does, measured directly.

fio measures the drive; the host side of a checkpoint or a data loader is CPU work that fio does not see:

- page-cache write rate (GB/s on one core): a buffered write() of memory the process already holds into a new file,
  small enough to stay below the kernel's dirty-background threshold (nothing is written back while it runs).  The
  kernel allocates, charges and fills one page-cache page per 4 KiB; on bare metal this runs at several GB/s, on a
  virtual machine whose page allocations fault to the hypervisor ten times slower.  torch.save's copy into the page
  cache is this copy (models.host_io.page_copy_seconds_per_byte).
- page-cache read cost (GB/s of CPU on one core): a buffered read() of files that are not in the page cache, timed on
  the process's CPU clock (the page's allocation, the readahead it submits and the copy out all run in the reader's
  context; the wait for the drive does not count).  It is not the write's page reversed: on the development VM a cold
  read costs 0.3-0.4 ms of CPU per 4 MiB (2.5-3.5 GB/s) where a buffered write costs 9-14 ms, because the device fills
  a read's page by DMA, so the hypervisor faults the page in on its own I/O path instead of the guest's vCPU touching
  it first.  A byte a loader reads from the drive pays this (models.host_io.page_read_seconds_per_byte).
- shared-memory fill rate (GB/s of CPU on one core): a new segment in /dev/shm is mapped and a resident buffer copied
  into it, on the process's CPU clock (every page faults in on the copy).  torch's default_collate in a DataLoader
  worker allocates each batch this way (_new_shared: a new segment per batch), so a worker pays it per collated byte
  (models.host_io.shm_collate_seconds_per_byte).  On the development VM it ran at 1.3-1.7 GB/s, as torch's own
  collate of the same batches did (1.5-1.6 GB/s, DLIO's PyTorch, 2026-11-27), against 10+ GB/s for a copy between
  resident buffers.
- cold npz loads: numpy.load of .npz files not in the page cache (written and fsync'd before the drop), on the
  process's CPU clock, at the null runs' sample size (4 KiB) and at each scored run's record size, shaped as DLIO
  writes them (a dim x dim uint8 array, dim = int(sqrt(record))).  Beyond its bytes a cold file costs the loader its
  opening reads: on the development VM (2026-11-27, drop, 12 s settled) a cold load cost 0.26 ms at 4 KiB, 0.49 ms at
  112 KiB, 1.0 ms at 1 MiB and 2.7-3.7 ms at 4 MiB, against 0.12, 0.17-0.22, 0.65-0.69 and 2.0-3.6 ms warm: the
  112 KiB file's 0.23 ms over the 4 KiB one is more than twice what its bytes cost at the warm npz and cold-read
  rates, the 4 MiB file's less.  So the prediction takes a sample's cost at the run's own size from here.
- DLIO 2.0's index map: its reader's read_index logs `f"{self.global_index_map}"` at debug level for every sample
  (dlio_benchmark 2.0.0 reader/reader_handler.py), and Python builds the f-string whether or not the message is
  logged: the repr of the rank's whole map of sample -> (absolute path, index), so a sample costs the loader time in
  proportion to the rank's samples.  Timed here on a map of the same shape under the scratch directory's paths
  (0.47-0.52 us per entry on the development VM, 2026-11-27: 0.25 ms per sample at 512 samples per rank).
- npz load cost: numpy.load of an uncompressed .npz from the page cache (zip directory, array header, one read into
  a new array), timed at two sample sizes and split into a per-file cost and a per-byte rate (two equations, two
  unknowns).  DLIO's NPZReader opens every sample's file this way.

Each figure is the median of a few repeats; the files live in the scratch directory given and are removed.
"""

from __future__ import annotations

import mmap
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from iowatt.calibration.realcheck_runs import NULL_RECORD_BYTES, drop_caches

PAGE_CACHE_PROBE_BYTES = 128 * 2**20  # x REPEATS files: well below the dirty-background share of a machine that runs the check (>= 8 GiB)
REPEATS = 5
NPZ_SMALL_BYTES, NPZ_LARGE_BYTES = 64 * 1024, 4 * 2**20
NPZ_FILES = 16
SHM_PROBE_BYTES = 8 * 2**20  # a unet3d-style batch (2 x 4 MiB); a resnet50-style one (16 x 112 KiB) ran at the same rate
SHM_FOLDER = Path("/dev/shm")


@contextmanager
def _own_folder(scratch: Path, name: str) -> Iterator[Path]:
    """A new folder of the probe's own under `scratch`, removed with what the probe wrote in it."""
    folder = scratch / f".iowatt-probe-{name}-{os.getpid()}"
    folder.mkdir()
    try:
        yield folder
    finally:
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()


def _write_all(fd: int, buffer: np.ndarray) -> None:
    """write() all of `buffer` to `fd` (a write may take fewer bytes than asked)."""
    view, written = memoryview(buffer), 0
    while written < len(view):
        written += os.write(fd, view[written:])


def page_cache_write_GBps(scratch: Path, size: int = PAGE_CACHE_PROBE_BYTES, repeats: int = REPEATS) -> float:
    """GB/s of one thread's buffered write() of resident memory into new files (median of `repeats`).

    Each repeat writes a new file and all are kept until the end, so every repeat takes pages from the free pool
    as a checkpoint's new files and a cold dataset read do; rewriting one file would reuse the pages just freed,
    which on a virtual machine are still backed by the host and ten times cheaper (0.43 against 4-5 GB/s on the
    development VM: the guest's free pages are handed back to the hypervisor, virtio-balloon free page reporting,
    and the next use of one faults to it)."""
    buffer = np.ones(size, dtype=np.uint8)  # touched: its own pages are resident before the clock starts
    rates = []
    with _own_folder(scratch, "write") as folder:
        for k in range(repeats):
            fd = os.open(folder / str(k), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                start = time.perf_counter()
                _write_all(fd, buffer)
                rates.append(size / (time.perf_counter() - start) / 1e9)
            finally:
                os.close(fd)
    return statistics.median(rates)


@contextmanager
def cold_files(scratch: Path, name: str, size: int = PAGE_CACHE_PROBE_BYTES // 4, count: int = 4) -> Iterator[list[Path]]:
    """`count` files of `size` bytes written and fsync'd in a folder of the probe's own, removed afterwards (the
    caller drops the page cache before reading them)."""
    buffer = np.ones(size, dtype=np.uint8)
    with _own_folder(scratch, name) as folder:
        files = [folder / str(k) for k in range(count)]
        for file in files:
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _write_all(fd, buffer)
                os.fsync(fd)
            finally:
                os.close(fd)
        yield files


def page_cache_read_GBps(files: list[Path]) -> float:
    """GB/s of CPU one thread spends reading `files` with buffered read() into a resident buffer (median over the
    files), on the process's CPU clock: a file whose pages are not cached pays the kernel's page allocation, the
    readahead submission and the copy out, none of the drive's latency."""
    size = max(f.stat().st_size for f in files)
    buffer = np.ones(size, dtype=np.uint8)  # touched: resident before the clock starts
    rates = []
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            view, got = memoryview(buffer), 0
            start = time.process_time()
            while True:
                n = os.readv(fd, [view[got:]])
                if n == 0:
                    break
                got += n
            cpu_s = time.process_time() - start
        finally:
            os.close(fd)
        # the CPU clock ticks in at least nanoseconds; a read it cannot resolve is charged one tick
        rates.append(got / max(cpu_s, 1e-9) / 1e9)
    return statistics.median(rates)


def shm_write_GBps(size: int = SHM_PROBE_BYTES, repeats: int = REPEATS, folder: Path = SHM_FOLDER) -> float:
    """GB/s of CPU one thread spends filling new shared-memory segments (median of `repeats`): each a new file in
    `folder` (tmpfs), unlinked at once, sized, mapped and written from a resident buffer, on the process's CPU clock,
    as torch's collate in a loader worker fills a new segment per batch."""
    buffer = np.ones(size, dtype=np.uint8)  # touched: resident before the clock starts
    rates = []
    for k in range(repeats):
        path = folder / f".iowatt-probe-shm-{os.getpid()}-{k}"
        start = time.process_time()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            path.unlink()
            os.ftruncate(fd, size)
            with mmap.mmap(fd, size) as segment:
                target = np.frombuffer(segment, dtype=np.uint8)
                target[:] = buffer
                del target  # the mapping closes only without views of it
        finally:
            os.close(fd)
        rates.append(size / max(time.process_time() - start, 1e-9) / 1e9)
    return statistics.median(rates)


INDEX_MAP_ENTRIES = 512


def index_map_seconds_per_entry(scratch: Path, entries: int = INDEX_MAP_ENTRIES, repeats: int = 50) -> float:
    """CPU seconds per entry of building the repr of DLIO 2.0's per-rank index map (global sample -> (absolute path,
    sample index)) with paths as the check's datasets name them under `scratch` (median of `repeats`)."""
    folder = scratch.resolve() / "data" / "resnet50_style" / "train"
    index_map = {k: (str(folder / f"img_{k:04d}_of_{2 * entries}.npz"), 0) for k in range(entries)}
    times = []
    for _ in range(repeats):
        start = time.process_time()
        _ = f"{index_map}"  # the f-string DLIO builds per sample
        times.append(time.process_time() - start)
    return statistics.median(times) / entries


NPZ_COLD_FILES = 24


def _npz_sample(record: int) -> np.ndarray:
    side = int(record**0.5)  # DLIO 2.0's generator: a square uint8 image of int(sqrt(record_length)) on a side
    return np.random.default_rng(0).integers(0, 255, (side, side), dtype=np.uint8)


@contextmanager
def cold_npz_files(scratch: Path, records: list[int], count: int = NPZ_COLD_FILES) -> Iterator[dict[int, list[Path]]]:
    """`count` .npz files per record size, written and fsync'd in a folder of the probe's own (removed afterwards); the
    caller drops the page cache before loading them."""
    with _own_folder(scratch, "npzcold") as folder:
        files: dict[int, list[Path]] = {}
        for record in sorted(set(records)):
            sample, files[record] = _npz_sample(record), []
            for k in range(count):
                path = folder / f"{record}-{k}.npz"
                with path.open("wb") as out:
                    np.savez(out, x=sample)
                    out.flush()
                    os.fsync(out.fileno())
                files[record].append(path)
        yield files


def npz_cold_seconds(files: dict[int, list[Path]]) -> dict[str, float]:
    """CPU seconds of one numpy.load of a cold .npz per record size (median over its files), keyed by the size's
    decimal string (a JSON object key)."""
    out = {}
    for record, paths in files.items():
        times = []
        for path in paths:
            start = time.process_time()
            with np.load(path, allow_pickle=True) as archive:
                archive["x"]
            times.append(time.process_time() - start)
        out[str(record)] = statistics.median(times)
    return out


def _npz_seconds(files: list[Path], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for file in files:
            with np.load(file, allow_pickle=True) as archive:
                archive["x"]
        times.append((time.perf_counter() - start) / len(files))
    return statistics.median(times)


def npz_load_costs(scratch: Path, repeats: int = REPEATS) -> tuple[float, float]:
    """(seconds per file, bytes per second) of numpy.load of one-array .npz files read from the page cache."""
    with _own_folder(scratch, "npz") as folder:
        per_file = []
        for size in (NPZ_SMALL_BYTES, NPZ_LARGE_BYTES):
            files = [folder / f"{size}-{k}.npz" for k in range(NPZ_FILES)]
            sample = np.random.default_rng(0).integers(0, 255, size, dtype=np.uint8)
            for file in files:
                np.savez(file, x=sample)
            _npz_seconds(files, 1)  # warm: the files are in the page cache and numpy's code is loaded
            per_file.append(_npz_seconds(files, repeats))
        (small_s, large_s), span = per_file, NPZ_LARGE_BYTES - NPZ_SMALL_BYTES
        byte_s = max(large_s - small_s, 1e-12) / span
        fixed_s = max(small_s - NPZ_SMALL_BYTES * byte_s, 0.0)
        return fixed_s, 1.0 / byte_s


# Linux hands free pages back to a hypervisor in batches, PAGE_REPORTING_DELAY (2 s) after they were freed
# (mm/page_reporting.c); a DLIO run starts allocating about 10 s after the check drops the page cache (mpirun and
# its imports).  The probe waits as long, so it sees the pool the runs see: 0.40-0.44 GB/s in three tries on the
# development VM, against 0.46-3.3 GB/s when measured 3 s after the drop.
SETTLE_SECONDS = 10.0


def probe(scratch: Path, settle_seconds: float = SETTLE_SECONDS, records: tuple[int, ...] = ()) -> dict[str, object]:
    """The host figures the real-hardware check's predictions use (machine facts of the bundle), measured as the runs
    meet the machine: the page cache dropped where permitted, then `settle_seconds` before the page-cache write;
    `records`: the scored training runs' record sizes, for the cold npz loads."""
    npz_file_s, npz_Bps = npz_load_costs(scratch)
    index_entry_s = index_map_seconds_per_entry(scratch)
    with cold_files(scratch, "read") as files, cold_npz_files(scratch, [NULL_RECORD_BYTES, *records]) as npz:
        drop_caches()
        time.sleep(settle_seconds)
        write_GBps = page_cache_write_GBps(scratch)
        read_GBps = page_cache_read_GBps(files)
        shm_GBps = shm_write_GBps() if SHM_FOLDER.is_dir() else None
        cold_npz_s = npz_cold_seconds(npz)
    return {"page_cache_write_GBps_per_core": write_GBps, "page_cache_read_GBps_per_core": read_GBps, "shm_write_GBps_per_core": shm_GBps,
            "npz_seconds_per_file": npz_file_s, "npz_GBps_per_core": npz_Bps / 1e9, "index_map_seconds_per_entry": index_entry_s,
            "npz_cold_seconds_by_record": cold_npz_s}
