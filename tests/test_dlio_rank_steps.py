"""tools/dlio_rank_steps.py: the split of a DLIO epoch from its ranks' records.

Oracle: an independent timeline of DLIO's loop (dlio_benchmark main.py _train: each step's proc runs from the previous
barrier's release to the end of the rank's compute, then comm.barrier(); the block's clock stops after the last
step's barrier) with a known barrier exit time per step; the records it writes are what DLIO writes, and the split
must return that exit time and the first step's barrier wait (conservation of the block's time).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_SPEC = importlib.util.spec_from_file_location("dlio_rank_steps", Path(__file__).parents[1] / "tools" / "dlio_rank_steps.py")
assert _SPEC is not None and _SPEC.loader is not None
rank_steps = importlib.util.module_from_spec(_SPEC)
sys.modules["dlio_rank_steps"] = rank_steps
_SPEC.loader.exec_module(rank_steps)


def _timeline(procs: list[list[float]], exit_s: float, batch: int) -> list[dict[str, object]]:
    """Each rank's record of one epoch: every step starts for all ranks when the last one's proc ends plus the barrier's
    exit; the block runs from the first step's start to the last barrier's release."""
    steps = len(procs[0])
    block = sum(max(p[s] for p in procs) + exit_s for s in range(steps))
    out = []
    for p in procs:
        load = [0.3 * x for x in p]
        comp = [0.6 * x for x in p]
        out.append({"load": {"block1": load}, "proc": {"block1": p}, "compute": {"block1": comp},
                    "throughput": {"block1": steps * batch / block}})
    return out


@settings(max_examples=60, deadline=None)
@given(ranks=st.integers(1, 12), steps=st.integers(2, 40), exit_ms=st.floats(0.0, 30.0), seed=st.integers(0, 10_000))
def test_split_returns_the_barrier_exit_and_the_first_steps_wait(ranks: int, steps: int, exit_ms: float, seed: int) -> None:
    import random
    rng = random.Random(seed)
    procs = [[rng.uniform(1.0, 4.0)] + [rng.uniform(0.3, 0.4) for _ in range(steps - 1)] for _ in range(ranks)]
    split = rank_steps.split_epoch(_timeline(procs, exit_ms / 1e3, 7), 7)
    # every step's exit, the first one's included, spread over the later steps
    assert split.rest_seconds_per_step == pytest.approx(exit_ms / 1e3 * steps / (steps - 1), abs=1e-9)
    assert split.slowest_first_step_seconds == max(p[0] for p in procs)
    assert split.spread_seconds_per_step >= -1e-12
    assert split.loop_mean_seconds == pytest.approx(0.1 * sum(x for p in procs for x in p[1:]) / (ranks * (steps - 1)))


def test_the_command_reads_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI reads {rank}_output.json files with DLIO's layout and prints the split; a folder without them exits 2."""
    records = _timeline([[2.0, 0.35, 0.36], [2.5, 0.34, 0.37]], 0.02, 4)
    for rank, record in enumerate(records):
        (tmp_path / f"{rank}_output.json").write_text(json.dumps({"host_memory_GB": 1, "1": record}))
    sys.argv = ["dlio_rank_steps.py", str(tmp_path), "--batch", "4"]
    assert rank_steps.main() == 0
    assert "rest outside every proc 30.0 ms a step" in capsys.readouterr().out
    sys.argv = ["dlio_rank_steps.py", str(tmp_path / "none"), "--batch", "4"]
    with pytest.raises(SystemExit) as stop:
        rank_steps.main()
    assert stop.value.code == 2
