"""Oracle for the close-time flush of rewritten checkpoint files: an event simulation of ranks and one drive, file by
file (independent of models.host_io.close_flush_seconds, the closed form it checks)."""

from __future__ import annotations

import math


def simulate_close_flushes(ranks: int, files: int, file_bytes: float, host_Bps: float, drive_Bps: float,
                           concurrent: int) -> float:
    """Event simulation, file by file: each rank makes a file (CPU, file_bytes / host_Bps), then closes it and waits
    for its flush; the drive serves at most `concurrent` flushes at once, at equal shares of drive_Bps (processor
    sharing), the others wait first come first served (ties by rank).  Returns when the last rank is done."""
    now = 0.0
    cpu_until = {r: file_bytes / host_Bps for r in range(ranks)}  # rank -> when its CPU work ends
    left = dict.fromkeys(range(ranks), files)                     # files not yet flushed
    waiting: list[int] = []
    active: dict[int, float] = {}                                 # rank -> bytes of its flush still to write
    done_at = 0.0
    while cpu_until or waiting or active:
        rate = drive_Bps / len(active) if active else 0.0
        t_cpu = min(cpu_until.values(), default=math.inf)
        t_flush = now + min(active.values()) / rate if active else math.inf
        t = min(t_cpu, t_flush)
        for r in active:
            active[r] -= rate * (t - now)
        now = t
        for r in sorted(r for r, v in active.items() if v <= 1e-9 * file_bytes):
            del active[r]
            left[r] -= 1
            if left[r] > 0:
                cpu_until[r] = now + file_bytes / host_Bps
            else:
                done_at = max(done_at, now)
        arrived = sorted((r for r, v in cpu_until.items() if v <= now * (1 + 1e-12)), key=lambda r: (cpu_until[r], r))
        for r in arrived:
            del cpu_until[r]
            waiting.append(r)
        while waiting and len(active) < concurrent:
            active[waiting.pop(0)] = file_bytes
    return done_at
