"""Checkpoint interval, goodput and drive endurance: pure functions, SI units (seconds, bytes).

Failure model: failures of the job arrive as a Poisson process with mean time
between failures M = node MTBF / nodes (any node failing stops the job).
Each period of useful work tau is followed by a checkpoint write delta; after
a failure the job restarts (restart time R, which a failure can also
interrupt) and loses the work done since the last completed checkpoint.

- Young (1974): tau_opt ~= sqrt(2 delta M)  (first order).
- Daly (2006, FGCS 22:303): tau_opt = sqrt(2 delta M) [1 + 1/3 sqrt(delta / 2M) + 1/9 (delta / 2M)] - delta
  for delta < 2M, else M; and the exact expected wall time for exponential failures,
  T_wall = M e^(R/M) (e^((tau + delta)/M) - 1) T_work / tau, so goodput = T_work / T_wall.
- `monte_carlo_optimum` finds the optimum without any of those formulas:
  exponential failures drawn with numpy (seeded), the same draws for every tau.

Save designs (async, tiered; `design_goodput`): a checkpoint stalls training for s seconds
but can be restored from only A >= s seconds after it began (when its write, or its stage,
is done); a failure recovers by one of several `Recovery` paths (restore from the durable
tier, or from local copies when they survive), each with its share of failures, restart
time and A.  The renewal argument gives the exact goodput (see `design_goodput`); with
A = s and one path it is Daly's.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

SECONDS_PER_DAY = 86_400.0
SECONDS_PER_HOUR = 3_600.0
# the largest x with e^x finite in IEEE-754 double precision (about 709.78): beyond it the expected wall
# time per checkpoint period overflows, i.e. failures come so often that no period ever completes
MAX_EXPONENT = math.log(sys.float_info.max)


class NoProgressError(ValueError):
    """Failures so frequent (against the checkpoint period and restart) that the job completes no work:
    the expected wall time per period is beyond a double's range, goodput below 1e-300."""


@dataclass(frozen=True)
class FailureModel:
    """A cluster of `nodes` that each fail with mean time between failures `node_mtbf_hours`.

    `local_recovery_share`: the share of failures a tiered save recovers from its local copies (a
    process or GPU fault on a host whose drives or memory keep the stage, or a stage replicated to
    a partner host); the rest restore from the durable tier."""

    nodes: int
    node_mtbf_hours: float
    restart_seconds: float = 0.0
    local_recovery_share: float = 0.0  # failures after which every host's local checkpoint copy is still readable

    def __post_init__(self) -> None:
        if not 0.0 <= self.local_recovery_share <= 1.0:
            raise ValueError(f"failure.local_recovery_share: expected 0..1, found {self.local_recovery_share}")
        if self.nodes < 1:
            raise ValueError(f"failure.nodes: expected >= 1, found {self.nodes}")
        if not (self.node_mtbf_hours > 0 and math.isfinite(self.node_mtbf_hours * SECONDS_PER_HOUR)):
            raise ValueError(f"failure.node_mtbf_hours: expected a finite number of hours > 0, found {self.node_mtbf_hours}")
        if not 0 <= self.restart_seconds < math.inf:
            raise ValueError(f"failure.restart_seconds: expected a finite number of seconds >= 0, found {self.restart_seconds}")

    @property
    def mtbf_seconds(self) -> float:
        return system_mtbf_seconds(self.nodes, self.node_mtbf_hours * SECONDS_PER_HOUR)


@dataclass(frozen=True)
class Recovery:
    """One way the job recovers from a failure: the share of failures that take it, the restart
    (restore from that tier included) and how long after a checkpoint began it can be restored from there."""

    share: float
    restart_seconds: float
    ready_after_seconds: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"recovery share: expected 0..1, found {self.share}")
        if self.restart_seconds < 0.0 or self.ready_after_seconds < 0.0:
            raise ValueError(f"recovery: expected restart and ready-after >= 0 s, found {self.restart_seconds}, {self.ready_after_seconds}")


def system_mtbf_seconds(nodes: int, node_mtbf_seconds: float) -> float:
    """Any of `nodes` independent exponential nodes failing: M = M_node / nodes."""
    return node_mtbf_seconds / nodes


def young_interval(delta: float, mtbf: float) -> float:
    """Young's first-order optimal compute time between checkpoints, sqrt(2 delta M)."""
    _check(delta, mtbf)
    return math.sqrt(2.0 * delta * mtbf)


def daly_interval(delta: float, mtbf: float) -> float:
    """Daly's higher-order optimal compute time between checkpoints."""
    _check(delta, mtbf)
    if delta >= 2.0 * mtbf:
        return mtbf
    x = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta


def goodput(tau: float, delta: float, mtbf: float, restart: float = 0.0) -> float:
    """Useful work / wall time, exact for exponential failures (Daly 2006)."""
    _check(delta, mtbf)
    if tau <= 0:
        raise ValueError(f"checkpoint interval: expected > 0 s, found {tau}")
    _progress(tau + delta, restart, mtbf)
    return tau / (mtbf * math.exp(restart / mtbf) * math.expm1((tau + delta) / mtbf))


def design_goodput(tau: float, stall: float, mtbf: float, recoveries: list[Recovery]) -> float:
    """Useful work / wall time, exact for exponential failures, when each checkpoint stalls training
    `stall` seconds and becomes restorable `ready_after` seconds after it began (>= stall).

    Renewal argument: segments of P = tau + s follow each restart; the checkpoint ending segment j
    begins at jP - s and is restorable at jP - s + A, so a gap X between failures credits
    tau floor((X - R - (A - s)) / P)+ of work, where R is the restart of the failure that began the
    gap and A the ready-after of the path the failure that ends it recovers by (independent draws).
    For X ~ Exp(M): E[floor((X - c) / P)+] = e^(-c/M) / (e^(P/M) - 1), so

        goodput = tau E[e^(-R/M)] E[e^(-(A - s)/M)] / (M (e^(P/M) - 1)),

    which is `goodput(tau, s, M, R)` for one path with A = s (Daly 2006).
    """
    _check(stall, mtbf)
    if tau <= 0:
        raise ValueError(f"checkpoint interval: expected > 0 s, found {tau}")
    total = sum(r.share for r in recoveries)
    if not recoveries or abs(total - 1.0) > 1e-9:
        raise ValueError(f"recoveries: expected shares that add up to 1, found {total}")
    _progress(tau + stall, max(r.restart_seconds + max(0.0, r.ready_after_seconds - stall) for r in recoveries), mtbf)
    restart = sum(r.share * math.exp(-r.restart_seconds / mtbf) for r in recoveries)
    lag = sum(r.share * math.exp(-max(0.0, r.ready_after_seconds - stall) / mtbf) for r in recoveries)
    return tau * restart * lag / (mtbf * math.expm1((tau + stall) / mtbf))


def design_interval(stall: float, period_min: float, mtbf: float) -> float:
    """Compute time between checkpoints of a save design: Daly's optimum for the stall (the restorable
    delay multiplies goodput by a factor that does not depend on tau), but at least the period the
    design's background work needs (period_min - stall), or the next checkpoint would wait for it."""
    return max(daly_interval(stall, mtbf), period_min - stall)


def goodput_first_order(tau: float, delta: float, mtbf: float, restart: float = 0.0) -> float:
    """1 - delta/(tau + delta) - ((tau + delta)/2 + R)/M: the textbook waste model, valid when tau + delta << M."""
    _check(delta, mtbf)
    period = tau + delta
    return max(0.0, 1.0 - delta / period - (period / 2.0 + restart) / mtbf)


def expected_lost_work(tau: float, delta: float, mtbf: float) -> float:
    """Mean time lost (work + partial checkpoint) per failure, exact for exponential failures.

    A failure inside a segment of length L = tau + delta lands on average at
    M - L e^(-L/M) / (1 - e^(-L/M)) into it (-> L/2 when L << M).
    """
    _check(delta, mtbf)
    period = tau + delta
    ratio = period / mtbf
    if ratio < 1e-6:
        return period / 2.0
    return mtbf - period * math.exp(-ratio) / -math.expm1(-ratio)


def monte_carlo_goodput(
    taus: np.ndarray | list[float], delta: float, mtbf: float, restart: float = 0.0, *, failures: int = 200_000, seed: int = 0
) -> np.ndarray:
    """Goodput at each tau over a horizon of `failures` exponential failures (same draws for every tau).

    Between two failures (time X) the job restarts (R), then completes
    floor((X - R) / (tau + delta)) segments of useful work tau; a failure
    during the restart leaves nothing.  Goodput = sum(work) / sum(X).
    """
    _check(delta, mtbf)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mtbf, size=failures)
    usable = np.maximum(gaps - restart, 0.0)
    total = gaps.sum()
    taus = np.atleast_1d(np.asarray(taus, dtype=float))
    out = np.empty_like(taus)
    for i, tau in enumerate(taus):
        out[i] = np.floor(usable / (tau + delta)).sum() * tau / total
    return out


def monte_carlo_optimum(
    delta: float, mtbf: float, restart: float = 0.0, *, failures: int = 200_000, seed: int = 0, points: int = 121
) -> tuple[float, float]:
    """(tau, goodput) maximising simulated goodput.

    Scans tau on a log grid from Young/10 to Young*10 (capped at 3 M) with
    common random numbers, then fits a parabola to the simulated waste in
    log(tau) around the best point so the answer is not one grid cell's noise.
    """
    centre = young_interval(delta, mtbf)
    grid = np.geomspace(centre / 10.0, min(centre * 10.0, 3.0 * mtbf), points)
    values = monte_carlo_goodput(grid, delta, mtbf, restart, failures=failures, seed=seed)
    best = int(np.argmax(values))
    lo, hi = max(0, best - 15), min(points, best + 16)
    x, y = np.log(grid[lo:hi]), values[lo:hi]
    if hi - lo >= 5:
        a, b, _ = np.polyfit(x, y, 2)
        if a < 0:
            vertex = -b / (2.0 * a)
            if x[0] <= vertex <= x[-1]:
                tau = float(math.exp(vertex))
                return tau, float(monte_carlo_goodput([tau], delta, mtbf, restart, failures=failures, seed=seed)[0])
    return float(grid[best]), float(values[best])


def _progress(period: float, restart: float, mtbf: float) -> None:
    """Refuse a failure rate at which the expected wall time per period, M e^(R/M) (e^(P/M) - 1), overflows."""
    if (period + restart) / mtbf > MAX_EXPONENT:
        raise NoProgressError(
            f"node MTBF: the job fails every {mtbf:.3g} s on average, against a checkpoint period of {period:.3g} s and a restart of "
            f"{restart:.3g} s: it would complete no work (goodput below 1e-300); expected a longer MTBF or fewer nodes")


def _check(delta: float, mtbf: float) -> None:
    if delta < 0:
        raise ValueError(f"checkpoint write time: expected >= 0 s, found {delta}")
    if not mtbf > 0:
        raise ValueError(f"MTBF: expected > 0 s, found {mtbf}")


# --- endurance -----------------------------------------------------------------------------


def checkpoints_per_day(interval: float, delta: float) -> float:
    """One checkpoint per (compute interval + write time)."""
    period = interval + delta
    if not period > 0:
        raise ValueError(f"checkpoint period: expected > 0 s, found {period}")
    return SECONDS_PER_DAY / period


def drive_writes_per_day(checkpoint_bytes: float, per_day: float, capacity_bytes: float, write_amplification: float = 1.0) -> float:
    """DWPD at this rate: bytes written per day x WA / user capacity (of all drives the data is striped over).

    With write_amplification = 1 this is the host DWPD a datasheet rating is
    compared with; with the drive's WA it is the NAND DWPD that wears the flash."""
    if not capacity_bytes > 0:
        raise ValueError(f"capacity: expected > 0 bytes, found {capacity_bytes}")
    if write_amplification < 1.0:
        raise ValueError(f"write amplification: expected >= 1, found {write_amplification}")
    return checkpoint_bytes * per_day * write_amplification / capacity_bytes


def endurance_years(rated_dwpd: float, warranty_years: float, nand_dwpd_at_rate: float, rating_wa: float = 1.0) -> float:
    """Years until the rated endurance is used up.

    The rating allows DWPD_rated x warranty years x 365 drive writes of the
    rating workload, which itself programs rating_wa NAND bytes per host byte
    (1 for the 128 KiB sequential ratings; see models.nand.rated_nand_bytes).
    The NAND budget divided by the NAND writes per year at this rate (host
    DWPD x this workload's WA) is the life: a workload with the rating's own WA
    reaches the rated TBW exactly at DWPD_rated."""
    if nand_dwpd_at_rate <= 0:
        return math.inf
    return rated_dwpd * warranty_years * rating_wa / nand_dwpd_at_rate


# --- energy --------------------------------------------------------------------------------


def energy_per_useful_hour_J(tau: float, delta: float, mtbf: float, restart: float, run_power_W: float, checkpoint_energy_J: float) -> float:
    """Joules the system spends per hour of useful (not lost, not checkpointing) work.

    Wall time per useful second is 1/goodput (exact for exponential failures,
    Daly 2006).  Of that wall time, the share spent writing checkpoints is one
    write per completed segment: per useful second 1/tau checkpoints, each
    delta long and costing `checkpoint_energy_J`; the rest (useful work, lost
    work, restarts) runs at `run_power_W`.  Lost work and restarts are
    computation at full power, so they cost run power too; so does a checkpoint
    that a failure interrupts (a small share when delta << tau).
    """
    return energy_per_useful_hour_at_J(goodput(tau, delta, mtbf, restart), tau, delta, run_power_W, checkpoint_energy_J)


def energy_per_useful_hour_at_J(g: float, tau: float, delta: float, run_power_W: float, checkpoint_energy_J: float) -> float:
    """`energy_per_useful_hour_J` at a given goodput g (a save design's, `design_goodput`), with delta the stall:
    `checkpoint_energy_J` is then everything a checkpoint costs beyond training power (its stall, and the
    background writes' power on top of training)."""
    if not g > 0.0:
        raise ValueError(f"goodput: expected > 0, found {g}")
    wall_per_useful = 1.0 / g
    checkpoint_seconds = delta / tau
    other_seconds = max(0.0, wall_per_useful - checkpoint_seconds)
    per_useful_second = other_seconds * run_power_W + checkpoint_energy_J / tau
    return per_useful_second * SECONDS_PER_HOUR
