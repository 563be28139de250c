"""Pass test: does a checkpoint written over the previous pass take longer than the first one, on this host?

StorageReview's DLIO fill passes (public_evidence.md section 1) ran pass 2 20-26 % slower than pass 1 on seven
Gen5 drives whose write rates differ 1.7x, so the slowdown is looked for on the host side.  DLIO names a
checkpoint `global_epoch{e}_step{s}/<part>.pt` (dlio_benchmark checkpointing/base_checkpointing.py,
`checkpoint()`), so a second run of the same configuration writes the same names again, and torch.save opens
them with `open(path, 'wb')`: O_TRUNC frees the old file's blocks and evicts its cached pages
(mm/truncate.c truncate_inode_pages_range; ext4_truncate) before the first byte is written.

Writers: `writers` processes, each writing `files` files one after another (DLIO's ranks write a file per layer,
then the optimizer state), plain write() of a resident `buffer_bytes` buffer until `file_bytes`, through the page
cache, no fsync (torch.save has none); with `crc` each chunk is first checksummed (zlib.crc32, the CRC-32 torch.save
computes over every record), so the writer is CPU-bound as a serializing rank is. Each writer times four phases with
perf_counter, summed over its files: open (O_WRONLY|O_CREAT), truncate (ftruncate to 0 where the file existed: what
O_TRUNC does inside open, the same notify_change -> setattr path, split out so it can be timed), write, close.
Close is where a file truncated to 0 and rewritten is flushed: ext4's auto_da_alloc (ext4_release_file ->
ext4_alloc_da_blocks -> filemap_flush, flag set by ext4_truncate at size 0) and XFS (xfs_release: XFS_ITRUNCATED ->
filemap_flush) start writeback of the whole file in the closing thread, so with several files per writer the
next file waits for it. The parent times the
whole save (all writers) and then syncfs of the target's filesystem (the bytes reaching the drive, not part of a
DLIO checkpoint's time). After the sync it records the extent count of every file (filefrag).

Modes, each preceded by `sync; echo 3 > drop_caches` where the process may (root), so every timed save starts
with no dirty pages and, except where the mode says, nothing cached:
- fresh: new names in an empty folder, nothing else of the test's on the filesystem.
- overwrite: the previous checkpoint's names again (O_TRUNC frees its extents), its pages not cached.
- overwrite_cached: as overwrite, but the previous checkpoint was just written and synced, its clean pages
  still cached (truncate must evict them: the state of a pass-2 save on a host whose RAM held pass 1's tail).
- filled: new names while the previous checkpoint stays on the filesystem (a fuller filesystem, no truncate).
- delete_create: unlink the previous checkpoint's files, then write new files under the same names (timed
  together: DLIO folders removed by the caller before a rerun).
Repeats are interleaved (mode order shuffled within each round, seeded) so machine-load drift cancels.

Run: `iowatt collect passes --target DIR --out BUNDLE.json [--writers 8 --files 1 --file-MiB 128 --crc --repeats 3
--modes fresh,overwrite]`.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import statistics
import subprocess
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

MODES = ("fresh", "overwrite", "overwrite_cached", "filled", "delete_create")
MAX_TEST_BYTES = 50 * 2**30  # never put more than this on the target (two checkpoints live at once)


class PassTestError(Exception):
    """Bad arguments: the message names the option, what was expected and what was found."""


@dataclass(frozen=True)
class SaveShape:
    """What one checkpoint save writes: `writers` processes x `files` files of `file_bytes`, in `buffer_bytes` calls."""

    writers: int
    file_bytes: int
    buffer_bytes: int
    files: int = 1
    crc: bool = False


@dataclass(frozen=True)
class WriterTimes:
    open_seconds: float
    truncate_seconds: float
    write_seconds: float
    close_seconds: float
    unlink_seconds: float


def _write_one(paths: list[str], file_bytes: int, buffer_bytes: int, unlink_first: bool, crc: bool,
               start: mp.synchronize.Event, out: mp.Queue) -> None:
    buffer = os.urandom(min(buffer_bytes, 1 << 20)) * max(1, buffer_bytes >> 20)  # resident before the clock starts
    sums = dict.fromkeys(("open", "truncate", "write", "close", "unlink"), 0.0)
    start.wait()
    for path in paths:
        t0 = time.perf_counter()
        if unlink_first and os.path.exists(path):
            os.unlink(path)
        t1 = time.perf_counter()
        existed = os.path.exists(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        t2 = time.perf_counter()
        if existed:  # open(..., O_TRUNC) truncates only a file that was there (fs/namei.c do_open: not a created one)
            os.ftruncate(fd, 0)
        t3 = time.perf_counter()
        left = file_bytes
        view = memoryview(buffer)
        while left > 0:
            chunk = view[: min(left, len(buffer))]
            if crc:
                zlib.crc32(chunk)
            left -= os.write(fd, chunk)
        t4 = time.perf_counter()
        os.close(fd)
        t5 = time.perf_counter()
        for phase, seconds in (("unlink", t1 - t0), ("open", t2 - t1), ("truncate", t3 - t2), ("write", t4 - t3), ("close", t5 - t4)):
            sums[phase] += seconds
    out.put(asdict(WriterTimes(sums["open"], sums["truncate"], sums["write"], sums["close"], sums["unlink"])))


def _syncfs_seconds(folder: Path) -> float:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        libc.syncfs(fd)
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def _drop_caches(folder: Path) -> bool:
    _syncfs_seconds(folder)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def _extents(paths: list[Path]) -> list[int]:
    counts = []
    for path in paths:
        done = subprocess.run(["filefrag", str(path)], capture_output=True, text=True, check=False)
        # "path: N extents found" (e2fsprogs filefrag); -1 where filefrag is missing or fails
        words = done.stdout.rsplit(":", 1)[-1].split()
        counts.append(int(words[0]) if done.returncode == 0 and words and words[0].isdigit() else -1)
    return counts


def _save(folder: Path, shape: SaveShape, unlink_first: bool = False) -> dict[str, object]:
    """One checkpoint: `shape.writers` processes each write their files in `folder`; returns the timings."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [[folder / f"part-{k}-{j}.pt" for j in range(shape.files)] for k in range(shape.writers)]
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_write_one, args=([str(p) for p in mine], shape.file_bytes, shape.buffer_bytes, unlink_first,
                                                  shape.crc, start, out)) for mine in paths]
    for proc in procs:
        proc.start()
    time.sleep(0.5)  # every writer has built its buffer
    t0 = time.perf_counter()
    start.set()
    times = [out.get() for _ in procs]
    save_seconds = time.perf_counter() - t0
    for proc in procs:
        proc.join()
    sync_seconds = _syncfs_seconds(folder)
    return {"save_seconds": save_seconds, "sync_seconds": sync_seconds, "writers": times,
            "extents": _extents([p for mine in paths for p in mine])}


def _prepare(root: Path, mode: str, shape: SaveShape) -> tuple[Path, bool]:
    """Leave the filesystem as `mode` needs it; returns the folder to save into and whether to unlink first."""
    shutil.rmtree(root / "a", ignore_errors=True)
    shutil.rmtree(root / "b", ignore_errors=True)
    _syncfs_seconds(root)
    if mode == "fresh":
        return root / "a", False
    _save(root / "a", shape)  # the previous pass's checkpoint, on the drive
    if mode == "filled":
        return root / "b", False
    return root / "a", mode == "delete_create"


def run(target: Path, shape: SaveShape, repeats: int, seed: int, drop: bool = True, modes: tuple[str, ...] = MODES,
        progress: Callable[[str], None] | None = None) -> dict[str, object]:
    """Every mode `repeats` times, interleaved; `drop`: drop the page cache before each timed save (root only)."""
    root = target / f".iowatt-passes-{os.getpid()}"
    root.mkdir()
    trials: list[dict[str, object]] = []
    rng = random.Random(seed)
    try:
        for rnd in range(repeats):
            order = list(modes)
            rng.shuffle(order)
            for mode in order:
                folder, unlink_first = _prepare(root, mode, shape)
                dropped = _drop_caches(root) if drop and mode != "overwrite_cached" else False
                result = _save(folder, shape, unlink_first)
                trials.append({"round": rnd, "mode": mode, "caches_dropped": dropped, **result})
                if progress is not None:
                    progress(f"round {rnd} {mode:17s} save {result['save_seconds']:7.2f} s  sync {result['sync_seconds']:7.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "what": "calibration/pass_test.py: checkpoint-like saves, fresh vs over the previous pass",
        "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "filesystem": _fs_of(target), "writers": shape.writers, "files_per_writer": shape.files, "file_bytes": shape.file_bytes,
        "buffer_bytes": shape.buffer_bytes, "crc": shape.crc, "modes": list(modes),
        "repeats": repeats, "seed": seed, "trials": trials, "summary": summarise(trials),
    }


def _fs_of(target: Path) -> str:
    done = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "--target", str(target)], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def summarise(trials: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Per mode: median, min and max of the save time and of the save + sync time, and the median phase sums."""
    summary: dict[str, dict[str, float]] = {}
    for mode in MODES:
        rows = [t for t in trials if t["mode"] == mode]
        if not rows:
            continue
        save = [float(t["save_seconds"]) for t in rows]
        total = [float(t["save_seconds"]) + float(t["sync_seconds"]) for t in rows]
        entry = {"n": float(len(rows)), "save_median_seconds": statistics.median(save), "save_min_seconds": min(save),
                 "save_max_seconds": max(save), "save_sync_median_seconds": statistics.median(total),
                 "save_sync_min_seconds": min(total), "save_sync_max_seconds": max(total)}
        for phase in ("open", "truncate", "write", "close", "unlink"):
            per_trial = [max(float(w[f"{phase}_seconds"]) for w in t["writers"]) for t in rows]  # the slowest writer's
            entry[f"{phase}_max_writer_median_seconds"] = statistics.median(per_trial)
        entry["extents_median"] = float(statistics.median(e for t in rows for e in t["extents"]))
        summary[mode] = entry
    return summary


def parse_modes(text: str) -> tuple[str, ...]:
    """`--modes` as a comma-separated subset of MODES, in MODES order."""
    asked = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in asked if m not in MODES]
    if not asked or unknown:
        raise PassTestError(f"--modes: expected a comma-separated subset of {', '.join(MODES)}, found {text!r}")
    return tuple(m for m in MODES if m in asked)


def check(target: Path, out: Path, writers: int, file_MiB: int, buffer_MiB: int, repeats: int, files: int = 1) -> None:
    """Raise PassTestError naming the first bad argument; nothing is written before this passes."""
    if not target.is_dir():
        raise PassTestError(f"--target: expected an existing folder, found {str(target)!r}")
    if out.exists():
        raise PassTestError(f"--out: expected a new file, found an existing {str(out)!r}")
    counts = {"--writers": writers, "--files": files, "--file-MiB": file_MiB, "--buffer-MiB": buffer_MiB, "--repeats": repeats}
    for flag, value in counts.items():
        if value < 1:
            raise PassTestError(f"{flag}: expected a positive integer, found {value}")
    need = 2 * writers * files * file_MiB * 2**20
    free = shutil.disk_usage(target).free
    if need > MAX_TEST_BYTES or need > free // 2:
        raise PassTestError(f"--writers x --files x --file-MiB: expected two checkpoints to fit in 50 GiB and half the free "
                            f"space ({free / 2**30:.0f} GiB free), found {need / 2**30:.1f} GiB")


def write_bundle(out: Path, bundle: dict[str, object]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(bundle, indent=1) + "\n")
