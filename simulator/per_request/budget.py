"""How big a scenario the per-request mode takes: an estimate of its events, refused above MAX_EVENTS.

Every piece of a request on a drive costs about EVENTS_PER_PIECE SimPy
events (its completion at a flash unit or the actuator, a write's
acknowledgement and its program, and the completions that processor
sharing replans), so a run costs about requests x pieces per request x
EVENTS_PER_PIECE.  The requests are counted from the workload's own size or,
for a run bounded by time, from the fluid law's rate times the runtime.
"""

from __future__ import annotations

from iowatt.simulator.workloads import WorkloadConfigError

# chosen (a run budget: it refuses a run, it never changes a result): a minute or two of one core
# (benchmarks/run.py row 5: ~3e5 requests per CPU second below the knee; a saturated drive, thousands of reads
# sharing each unit, runs ~1e5)
MAX_EVENTS = 2e7
EVENTS_PER_PIECE = 2.0  # measured on fio 4K..1M read and write runs (the run reports its own count)


class TooLargeError(WorkloadConfigError):
    """A scenario the per-request mode will not run (its message says how large and what to change)."""


def check(requests: float, pieces_per_request: int, what: str, shrink: str) -> float:
    """The estimated events; raises TooLargeError above MAX_EVENTS."""
    events = requests * pieces_per_request * EVENTS_PER_PIECE
    if events > MAX_EVENTS:
        raise TooLargeError(
            f"--mode per-request: {what} is about {requests:.3g} requests x {pieces_per_request} piece(s) x "
            f"{EVENTS_PER_PIECE:g} events = {events:.3g} events, more than the {MAX_EVENTS:.0e} the mode runs "
            f"(a minute or two); {shrink}, or run it in the fluid mode"
        )
    return events
