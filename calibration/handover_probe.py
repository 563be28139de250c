"""The trainer's own CPU in the hand-over of a loaded batch, measured with DLIO's PyTorch (check-machine).

A PyTorch DataLoader hands a batch its worker holds to the trainer through the worker's result pipe; the trainer
unpickles it and maps the batch's shared memory from the file descriptor the worker's resource-sharer thread sends
(torch's file_descriptor sharing).  The null DLIO run with a compute sleep measures the whole hand-over's wall time
(calibration.realcheck_runs.handover_seconds); this probe measures the part of it that is the trainer's CPU, which
runs on the cores the loader workers share, and how it grows with the batch's bytes (the mapping of its pages).

The harness runs in DLIO's own interpreter (the one its dlio_benchmark script names), as DLIO 2.0 drives the loader:
2 workers, prefetch_factor 1, persistent workers forked, a 20 ms sleep before each next() so the workers are always
ahead, the trainer's CPU clock around next().  On the development VM (2026-11-27, load 9.6): 0.78 ms for a batch of
one 4 KiB sample, 1.19 ms for two 4 MiB samples (the wall time 3.7 and 6.6 ms).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

SMALL_SIDE, SMALL_BATCH = 64, 1      # 4 KiB: the null runs' batch
LARGE_SIDE, LARGE_BATCH = 2048, 2    # 8 MiB: the unet3d-style run's batch
HARNESS = '''
import json, statistics, time
import numpy as np
from torch.utils.data import DataLoader, Dataset

class Samples(Dataset):
    def __init__(self, side): self.x = np.zeros((side, side), np.uint8)
    def __len__(self): return 1000
    def __getitem__(self, index): return self.x

out = {}
for side, batch in ((SMALL_SIDE, SMALL_BATCH), (LARGE_SIDE, LARGE_BATCH)):
    loader = DataLoader(Samples(side), batch_size=batch, num_workers=2, prefetch_factor=1, persistent_workers=True,
                        multiprocessing_context="fork")
    batches = iter(loader)
    next(batches)
    cpu = []
    for _ in range(40):
        time.sleep(0.02)
        start = time.process_time()
        next(batches)
        cpu.append(time.process_time() - start)
    out[str(side * side * batch)] = statistics.median(cpu)
    del batches, loader
print(json.dumps(out))
'''.replace("SMALL_SIDE, SMALL_BATCH", f"{SMALL_SIDE}, {SMALL_BATCH}").replace("LARGE_SIDE, LARGE_BATCH", f"{LARGE_SIDE}, {LARGE_BATCH}")


class HandoverProbeError(RuntimeError):
    """The harness could not run in DLIO's interpreter."""


def dlio_python(dlio_benchmark: Path) -> Path:
    """The interpreter the dlio_benchmark script runs in (its #! line)."""
    first = dlio_benchmark.read_text(errors="replace").splitlines()[0] if dlio_benchmark.is_file() else ""
    if not first.startswith("#!"):
        raise HandoverProbeError(f"{dlio_benchmark}: expected a script that starts with #!, found {first[:40]!r}")
    return Path(first[2:].strip().split()[0])


def handover_cpu(python: Path, timeout_s: float = 300.0) -> dict[str, float]:
    """The trainer's CPU per hand-over: `handover_cpu_seconds` at zero bytes and `handover_cpu_seconds_per_byte`, the
    line through the two batches' medians (the per-byte part floored at zero)."""
    try:
        done = subprocess.run([str(python), "-c", HARNESS], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HandoverProbeError(f"the hand-over harness did not run in {python}: {error}") from error
    if done.returncode != 0:
        raise HandoverProbeError(f"the hand-over harness failed in {python} (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    medians = {int(k): float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    (small, small_s), (large, large_s) = sorted(medians.items())
    per_byte = max(0.0, (large_s - small_s) / (large - small))
    return {"handover_cpu_seconds": max(0.0, small_s - small * per_byte), "handover_cpu_seconds_per_byte": per_byte}
