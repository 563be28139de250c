"""Per-checkpoint and per-pass drive figures of a fill study, from the drives' write logs (Drive.write_log).

The checkpoint workload stores checkpoint n as file "ckpt{n}" (simulator/workloads/checkpoint.py).

Each stored file is one record per drive (simulator/storage/ssd.py): host and NAND bytes of exactly that
write, the drive's FTL-valid share before and after it, and the share of the rated endurance it used.
A pass's write amplification is its NAND bytes over its host bytes on all drives; the FTL-valid share at
its start is the drives' mean before its first file; NAND bytes and endurance are per drive (means).
"""

from __future__ import annotations

from iowatt.simulator.storage import Volume, WriteRecord


def _records(volume: Volume, files: list[str]) -> list[list[WriteRecord]]:
    """Per drive that keeps a log, its records of `files` in order."""
    names = set(files)
    logs = [d.write_log() for d in volume.unique_drives if d.tracks_writes]
    return [[r for r in log if r.file in names] for log in logs]


def file_write_amplification(volume: Volume, files: list[str]) -> list[float]:
    """NAND bytes / host bytes of each file over all drives (1 where no drive keeps a log)."""
    out = []
    for name in files:
        rows = [r for per_drive in _records(volume, [name]) for r in per_drive]
        host = sum(r.host_bytes for r in rows)
        out.append(sum(r.nand_bytes for r in rows) / host if host > 0.0 else 1.0)
    return out


def pass_figures(volume: Volume, files_by_pass: list[list[str]]) -> list[dict[str, float]]:
    """Write amplification, FTL-valid share at the start and end, NAND GB and endurance used, per pass."""
    out = []
    for files in files_by_pass:
        per_drive = [rows for rows in _records(volume, files) if rows]
        if not per_drive:
            continue
        host = sum(r.host_bytes for rows in per_drive for r in rows)
        programmed = sum(r.nand_bytes for rows in per_drive for r in rows)
        n = len(per_drive)
        out.append({
            "write_amplification": programmed / host if host > 0.0 else 1.0,
            "ftl_valid_start": sum(rows[0].ftl_valid_before for rows in per_drive) / n,
            "ftl_valid_end": sum(rows[-1].ftl_valid_after for rows in per_drive) / n,
            "nand_GB_per_drive": programmed / n / 1e9,
            "endurance_used_fraction": sum(r.endurance_used for rows in per_drive for r in rows) / n,
        })
    return out


def file_ftl_valid(volume: Volume, files: list[str]) -> list[float]:
    """The drives' mean FTL-valid share after each file was stored (the drive's view as the study goes on)."""
    out = []
    for name in files:
        rows = [per_drive[-1] for per_drive in _records(volume, [name]) if per_drive]
        out.append(sum(r.ftl_valid_after for r in rows) / len(rows) if rows else 0.0)
    return out


def drive_figures(volume: Volume, count: int, per_pass: int, passes: int | None,
                  metrics: dict[str, float], detail: dict[str, object]) -> None:
    """Add the drives' figures of checkpoints ckpt0..ckpt{count-1} (and of each pass) to a result."""
    files = [f"ckpt{n}" for n in range(count)]
    detail["checkpoint_write_amplification"] = file_write_amplification(volume, files)
    detail["checkpoint_ftl_valid"] = file_ftl_valid(volume, files)
    if passes is None:
        return
    figures = pass_figures(volume, [files[p * per_pass:(p + 1) * per_pass] for p in range(passes)])
    for key in ("write_amplification", "ftl_valid_start", "nand_GB_per_drive", "endurance_used_fraction"):
        detail[f"pass_{key}"] = [f[key] for f in figures]
    for p, f in enumerate(figures, start=1):
        metrics[f"save_checkpoint_pass{p}_write_amplification"] = f["write_amplification"]
        metrics[f"save_checkpoint_pass{p}_ftl_valid_start"] = f["ftl_valid_start"]
