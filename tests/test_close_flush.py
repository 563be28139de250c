"""The close-time flush of rewritten checkpoint files (models.host_io.close_flush_seconds) against an event
simulation of the ranks and the drive (tests/close_flush_oracle.py), and the two ends of the ranks' synchronisation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import host_io
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

from tests.close_flush_oracle import simulate_close_flushes


@settings(max_examples=150, deadline=None)
@given(ranks=st.integers(1, 12), pick=st.integers(0, 11), files=st.integers(1, 30),
       file_GB=st.floats(0.1, 4.0), host_GBps=st.floats(0.05, 4.0), drive_GBps=st.floats(0.5, 16.0))
def test_close_flush_time_matches_the_event_simulation(ranks, pick, files, file_GB, host_GBps, drive_GBps):
    """Oracle: the file-by-file event simulation (tests/close_flush_oracle.py) (independent of the closed form), at both ends of the ranks'
    synchronisation (share 0: one flush at a time; 1: all ranks' flushes together) and wherever the flushes served at
    once divide the ranks (groups that keep their turn), over drive-bound and host-bound rates."""
    divisors = [d for d in range(1, ranks + 1) if ranks % d == 0]  # 1 (drifted) .. ranks (lockstep)
    k = float(divisors[pick % len(divisors)])
    law = host_io.close_flush_seconds(files, file_GB * 1e9, ranks, host_GBps * 1e9, drive_GBps * 1e9, k)
    oracle = simulate_close_flushes(ranks, files, file_GB * 1e9, host_GBps * 1e9, drive_GBps * 1e9, int(k))
    assert law == pytest.approx(oracle, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(ranks=st.integers(2, 12), files=st.integers(1, 30), file_GB=st.floats(0.1, 4.0),
       host_GBps=st.floats(0.05, 4.0), drive_GBps=st.floats(0.5, 16.0), share=st.floats(0.0, 1.0))
def test_close_flushes_cost_between_the_drifted_and_the_lockstep_end(ranks, files, file_GB, host_GBps, drive_GBps, share):
    """Theory (the event simulation's two ends): the extra over new files is never negative, grows with the ranks'
    synchronisation, is at most the drive's time for all the bytes (lockstep, the drive idle while every rank makes
    its next file) and at least the drive's time for one rank's bytes when the drive has idle time."""
    args = (files, file_GB * 1e9, ranks, host_GBps * 1e9, drive_GBps * 1e9)
    extra = host_io.close_flush_extra_seconds(*args, host_io.flush_concurrency(share, ranks))
    drifted = host_io.close_flush_extra_seconds(*args, 1.0)
    lockstep = host_io.close_flush_extra_seconds(*args, float(ranks))
    assert 0.0 <= drifted <= extra * (1 + 1e-12) + 1e-12 and extra <= lockstep * (1 + 1e-12) + 1e-12
    all_bytes_s = ranks * files * file_GB / drive_GBps
    assert lockstep <= all_bytes_s * (1 + 1e-9) + 1e-9
    if ranks * file_GB / drive_GBps <= file_GB / host_GBps:  # a drive with idle time: every rank waits for its own
        assert drifted >= files * file_GB / drive_GBps * (1 - 1e-9)


def test_close_flush_refuses_a_share_outside_its_range():
    """Bad input names the field, what was expected and what was found."""
    with pytest.raises(ValueError, match=r"flush_sync_share: expected a share in \[0, 1\], found 1.5"):
        host_io.flush_concurrency(1.5, 8)


SR_PS1010 = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "storagereview" / "ckpt_ps1010.yaml"
# a small weights-only checkpoint on the study's host and drive: 8 ranks x 8 layer files of 1.25 GB, whole files
# within each rank's dirty budget, and training time between checkpoints so that each starts on a clean page cache
SMALL = ("workload.size=80 GB", "workload.parameters=40e9", "workload.regenerate=none", "workload.layers=16",
         "workload.passes=2", "workload.checkpoints_per_pass=1", "workload.interval=1000")


def _pass_means(*overrides: str) -> list[float]:
    return run_scenario(load(SR_PS1010, [*SMALL, *overrides]))[0]["checkpoint"]["pass_mean_seconds"]


@pytest.mark.parametrize("share", [0.0, 1.0])
@pytest.mark.parametrize("save_GBps", [0.5, 2.0])
def test_the_workload_rewrite_pass_matches_the_event_simulation(share, save_GBps):
    """Oracle: tests/close_flush_oracle.py's event simulation of 8 ranks x 8 files, fed the run's own rates: the
    rank's host rate from pass 1 (new files land in the page cache, so pass 1 is the ranks' CPU time) and the drive's
    rate from the same checkpoint written with O_DIRECT by an unbounded host.  Pass 2 rewrites the same names, host-
    bound (0.5 GB/s per rank) and drive-bound (2 GB/s per rank), at both ends of the ranks' synchronisation.  New
    names (rewrite_names false) leave pass 2 equal to pass 1."""
    means = _pass_means(f"workload.flush_sync_share={share}", f"workload.save_GBps_per_rank={save_GBps}",
                        "workload.rewrite_names=true")
    direct = _pass_means("workload.io_path=direct", "workload.save_GBps_per_rank=1e6")
    host_Bps, drive_Bps = 10e9 / means[0], 80e9 / direct[0]
    oracle = simulate_close_flushes(8, 8, 1.25e9, host_Bps, drive_Bps, 1 if share == 0.0 else 8)
    assert means[1] == pytest.approx(oracle, rel=1e-3)
    assert _pass_means(f"workload.save_GBps_per_rank={save_GBps}", "workload.rewrite_names=false") == pytest.approx([means[0]] * 2, rel=1e-9)
