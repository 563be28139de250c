"""What a per-request workload hands back: its outcome, how long it ran (simulated) and what it cost."""

from __future__ import annotations

from dataclasses import dataclass

from iowatt.simulator.workloads import WorkloadOutcome


@dataclass
class Result:
    outcome: WorkloadOutcome
    duration_s: float  # simulated seconds to the last counted completion (or the runtime)
    events: int  # SimPy events the requests scheduled
    requests: int  # requests completed and counted
