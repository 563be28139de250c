"""Where a DLIO training epoch's time goes, from the per-rank records a run leaves (`{rank}_output.json`, DLIO 1.x/2.0).

MLPerf Storage results publish each rank's per-step `load` (wait for the batch), `proc` (from the previous step's
end to the end of this step's compute) and `compute`, and the rank's samples/s per block, from which DLIO's block
time follows (steps x batch / samples/s: DLIO's throughput definition, utils/statscounter.py).  Per epoch:

    block = first step's proc + sum of the later steps' procs + what lies outside every proc

and what lies outside splits into (1) the wait at the first step's barrier for the slowest rank's first step,
(2) the ranks' spread at every later barrier (the slowest rank's proc less the mean, summed over steps), and
(3) the rest: time in neither a rank's proc nor the spread of the ranks' procs (the barrier's own exit).

    python tools/dlio_rank_steps.py RUN_DIR [RUN_DIR ...] --batch 7

RUN_DIR holds one run's `{rank}_output.json`.  Used for docs/mlperf-storage.md ("Per-rank traces").
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from iowatt.calibration.realcheck_runs import dlio_block_seconds


@dataclass(frozen=True)
class EpochSplit:
    steps: int
    block_seconds: float             # mean over ranks
    first_step_seconds: float        # mean over ranks
    slowest_first_step_seconds: float
    wait_median_seconds: float       # later steps' load, all ranks
    loop_mean_seconds: float         # later steps' proc - load - compute, all ranks
    spread_seconds_per_step: float   # slowest rank's proc less the mean, later steps
    rest_seconds_per_step: float     # outside every proc and the spread


def split_epoch(ranks: list[dict[str, object]], batch: int, block: str = "block1") -> EpochSplit:
    """One epoch's split from its ranks' records ({"load": {block: [...]}, "proc": ..., "compute": ...,
    "throughput": {block: samples/s}})."""
    procs = [list(r["proc"][block]) for r in ranks]  # type: ignore[index]
    loads = [list(r["load"][block]) for r in ranks]  # type: ignore[index]
    comps = [list(r["compute"][block]) for r in ranks]  # type: ignore[index]
    steps = min(len(p) for p in procs)
    if steps < 2:
        raise ValueError(f"an epoch needs at least two steps a rank, found {steps}")
    blocks = [dlio_block_seconds(len(p), batch, float(r["throughput"][block])) for p, r in zip(procs, ranks, strict=True)]  # type: ignore[index]
    firsts = [p[0] for p in procs]
    later_sum = statistics.fmean(sum(p[1:steps]) for p in procs)
    slowest_sum = sum(max(p[s] for p in procs) for s in range(1, steps))
    block_s, first_s = statistics.fmean(blocks), statistics.fmean(firsts)
    outside = block_s - first_s - later_sum
    spread = slowest_sum - later_sum
    rest = outside - (max(firsts) - first_s) - spread
    waits = [x for q in loads for x in q[1:steps]]
    loops = [p[s] - q[s] - c[s] for p, q, c in zip(procs, loads, comps, strict=True) for s in range(1, steps)]
    return EpochSplit(steps, block_s, first_s, max(firsts), statistics.median(waits), statistics.fmean(loops),
                      spread / (steps - 1), rest / (steps - 1))


def read_run(run_dir: Path) -> list[dict[str, dict[str, object]]]:
    """Each rank's epochs ({epoch: record}) from a run folder, in rank order."""
    files = sorted(run_dir.glob("*_output.json"), key=lambda p: int(p.name.split("_")[0]))
    if not files:
        raise ValueError(f"{run_dir}: expected {{rank}}_output.json files, found none")
    out = []
    for path in files:
        data = json.loads(path.read_text())
        out.append({k: v for k, v in data.items() if isinstance(v, dict) and "proc" in v})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders holding {rank}_output.json")
    parser.add_argument("--batch", type=int, required=True, help="samples per step (the reader's batch_size)")
    args = parser.parse_args()
    if args.batch < 1:
        parser.error(f"--batch: expected a whole number >= 1, found {args.batch}")
    try:
        splits = [split_epoch([rank[epoch] for rank in ranks], args.batch)
                  for ranks in map(read_run, args.runs) for epoch in ranks[0]]
    except (ValueError, KeyError, OSError) as error:
        parser.exit(2, f"error: {error}\n")
    mean = lambda f: statistics.fmean(f(s) for s in splits)  # noqa: E731
    print(f"epochs {len(splits)}; block {mean(lambda s: s.block_seconds):.1f} s; slowest first step "
          f"{min(s.slowest_first_step_seconds for s in splits):.1f}-{max(s.slowest_first_step_seconds for s in splits):.1f} s "
          f"({mean(lambda s: s.slowest_first_step_seconds / s.block_seconds) * 100:.1f} % of the block); wait median "
          f"{statistics.median(s.wait_median_seconds for s in splits) * 1e3:.1f} ms; loop {mean(lambda s: s.loop_mean_seconds) * 1e3:.2f} ms; "
          f"barrier spread {mean(lambda s: s.spread_seconds_per_step) * 1e3:.1f} ms a step; rest outside every proc "
          f"{mean(lambda s: s.rest_seconds_per_step) * 1e3:.1f} ms a step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
