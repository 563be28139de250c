"""What to measure next (`iowatt advise`): the fio jobs that would shrink a scenario's widest interval most.

1. The sampler (scenarios.uncertainty) gives each metric's interval; the widest (relative half-width) among the
   metrics a fio job reports is the target, unless one is named.  Its Sobol' total effects say which unknowns
   dominate it (the share of the interval).
2. Candidates: fio jobs on the scenario's own system (CANDIDATES: each direction x 4 KiB / 128 KiB / 1 MiB x
   queue depth 1 / 32, the scenario's numjobs), the scenario's own job left out (it is what we predict).  Each
   candidate and the target are run with every kept unknown at its 5 % and 95 % quantile (the sampler's screening
   points): the slopes of log(bandwidth) and log(target) per standardised unknown (calibration.experiment).
3. calibration.experiment.greedy picks the jobs in order of expected variance reduction, given each job's
   measurement noise (its run-to-run spread over its repeats, and the law's misfit beyond it: as the profile's own
   bundle measured them where the scenario runs on a calibrated profile, bundle_noise), and the expected interval
   after each.

The jobs are fio jobs run where the scenario's workload runs (the NFS or cluster client, the host of a local drive),
measured with `iowatt collect fio --plan JOBS.fio` and fitted with `iowatt calibrate`.
"""

from __future__ import annotations

import copy
import math
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from iowatt.calibration.experiment import greedy, slope
from iowatt.calibration.plan import FioJob
from iowatt.models.uncertainty import Range, recording_reads
from iowatt.scenarios.interval_stats import Interval
from iowatt.scenarios.schema import ScenarioBase
from iowatt.scenarios.uncertainty import Settings, propagate, run_rows, summarise

# Metrics a fio job reports (its bandwidth, IOPS and latency): what a fio measurement can narrow.  Energy metrics are
# left to a named --metric (a bundle measures power only where a power source exists).
FIO_METRICS = ("bw_bytes", "iops", "read_bw_MBps", "write_bw_MBps", "read_clat_mean_us", "write_clat_mean_us",
               "read_clat_p99_us", "write_clat_p99_us")
CANDIDATE_RW = ("randread", "randwrite", "read", "write")
CANDIDATE_BS = (4096, 131072, 1 << 20)
CANDIDATE_QD = (1, 32)


@dataclass(frozen=True)
class Unknown:
    path: str
    range: Range
    share: float  # of the target's interval: normalised Sobol' total effect (linearised share where the sampler has none)


@dataclass(frozen=True)
class Step:
    job: FioJob
    unknown: str
    range: Range
    share: float
    interval_after: Interval  # the target's expected interval after this job and the ones before it


@dataclass(frozen=True)
class Noise:
    """How well one fio job's mean informs the unknowns, as calibrate will weigh it: its runs' relative spread over
    `repeat` runs, and the law's own misfit on such jobs (what the residuals of a fit show beyond that spread)."""

    per_run: float
    repeat: int
    misfit: float = 0.0
    source: str = "assumed (--noise)"

    @property
    def of_mean(self) -> float:
        return math.sqrt(self.per_run**2 / self.repeat + self.misfit**2)


def bundle_noise(scenario: ScenarioBase) -> Noise | None:
    """The noise measured by the bundle behind the scenario's calibrated profile (`device: profile:PATH`): the
    run-to-run spread of its jobs' repeats, pooled by their degrees of freedom (calibration.fit.pooled_spread), the
    repeats it ran, and the misfit its residuals show beyond that spread.  None where no device is a profile."""
    import statistics
    from pathlib import Path

    from iowatt.calibration.profile import ProfileError, load
    from iowatt.models.catalog import PROFILE_PREFIX
    from iowatt.scenarios.uncertain_inputs import catalog_refs

    for _, _, ref in catalog_refs(scenario):
        name = ref.get("base") if isinstance(ref, dict) else ref
        if not isinstance(name, str) or not name.startswith(PROFILE_PREFIX):
            continue
        try:
            calibration = load(Path(name.removeprefix(PROFILE_PREFIX)))[1]
        except ProfileError:
            continue
        rows = [r for r in calibration.get("residuals") or [] if r.get("runs", 0) >= 1]
        repeated = [r for r in rows if r["runs"] > 1]
        if not repeated:
            continue
        dof = sum(r["runs"] - 1 for r in repeated)
        per_run = math.sqrt(sum((r["runs"] - 1) * (r["spread_pct"] / 100) ** 2 for r in repeated) / dof)
        of_means = statistics.fmean((r["spread_pct"] / 100) ** 2 / r["runs"] for r in rows)
        errors = statistics.fmean(math.log1p(r["error_pct"] / 100) ** 2 for r in rows)
        return Noise(per_run, round(statistics.median(r["runs"] for r in rows)), math.sqrt(max(errors - of_means, 0.0)),
                     f"measured: {len(rows)} jobs of {name}'s bundle")
    return None


@dataclass
class Advice:
    scenario: str
    metric: str
    interval: Interval
    unknowns: list[Unknown]
    steps: list[Step]
    noise: float
    repeat: int
    unmeasurable: list[str] = field(default_factory=list)  # dominant unknowns no candidate fio job moves
    misfit: float = 0.0
    noise_source: str = "assumed (--noise)"

    def as_dict(self) -> dict[str, Any]:
        def rng(r: Range) -> dict[str, Any]:
            return {"low": r.low, "high": r.high, "shape": r.shape}

        return {
            "scenario": self.scenario, "metric": self.metric, "interval": self.interval.as_dict(),
            "relative_half_width": self.interval.relative_half_width(),
            "unknowns": [{"path": u.path, "range": rng(u.range), "share": u.share} for u in self.unknowns],
            "jobs": [{"order": n + 1, "job": s.job.id, "rw": s.job.rw, "bs": s.job.bs, "iodepth": s.job.iodepth,
                      "numjobs": s.job.numjobs, "unknown": s.unknown, "range": rng(s.range), "share": s.share,
                      "interval_after": s.interval_after.as_dict(),
                      "relative_half_width_after": s.interval_after.relative_half_width()} for n, s in enumerate(self.steps)],
            "noise": self.noise, "repeat": self.repeat, "misfit": self.misfit, "noise_source": self.noise_source,
            "unmeasurable": self.unmeasurable,
        }


def candidates(scenario: ScenarioBase) -> list[FioJob]:
    """The candidate fio jobs (module docstring), the scenario's own job left out."""
    workload = scenario.workload.model_dump()
    numjobs = int(workload.get("numjobs", 1)) if workload.get("kind") == "fio" else 1
    own = (workload.get("rw"), workload.get("bs"), workload.get("iodepth"), numjobs) if workload.get("kind") == "fio" else None
    return [FioJob(rw=rw, bs=bs, iodepth=qd, numjobs=numjobs) for rw in CANDIDATE_RW for bs in CANDIDATE_BS for qd in CANDIDATE_QD
            if (rw, bs, qd, numjobs) != own]


def _with_job(scenario: ScenarioBase, job: FioJob) -> ScenarioBase:
    """The scenario with its workload replaced by one fio job (the size of the scenario's own fio job, else 10 GiB)."""
    from iowatt.scenarios.loader import validate

    data = scenario.model_dump(mode="json", exclude_unset=True)
    size = data["workload"].get("size") if data["workload"].get("kind") == "fio" else None
    data["workload"] = {"kind": "fio", "name": job.id, "rw": job.rw, "bs": job.bs, "iodepth": job.iodepth, "numjobs": job.numjobs,
                        "size": size or 10 << 30, "runtime": 60, "time_based": True, "direct": True}
    return validate(copy.deepcopy(data), f"{scenario.name} with fio job {job.id}")


def _widest(metrics: dict[str, Interval], named: str | None) -> str:
    if named is not None:
        if named not in metrics:
            from iowatt.scenarios.uncertainty import UncertaintyError

            raise UncertaintyError(f"--metric: expected one of the run's metrics ({', '.join(sorted(metrics))}), found {named!r}")
        return named
    fio = {name: i for name, i in metrics.items() if name in FIO_METRICS and i.median > 0}
    pool = fio or {name: i for name, i in metrics.items() if i.median > 0}
    return max(pool, key=lambda name: pool[name].relative_half_width())


def advise(scenario: ScenarioBase, settings: Settings, executor: Executor, *, metric: str | None = None, max_jobs: int = 4,
           noise: float | None = None, repeat: int | None = None, origin: str = "scenario") -> Advice:
    """The jobs to run, in order, with the expected interval after each (module docstring).  `noise` (a job's per-run
    relative spread) and `repeat`: as given, else as the profile's bundle measured them (bundle_noise), else 0.10 and
    3 (a shared machine's typical spread, `collect fio --repeat 3`)."""
    measured = bundle_noise(scenario)
    how = Noise(noise if noise is not None else measured.per_run if measured else 0.10,
                repeat if repeat is not None else measured.repeat if measured else 3,
                measured.misfit if measured else 0.0,
                measured.source if measured and noise is None else "assumed (--noise)" if noise is not None else "assumed (default)")
    from iowatt.scenarios.run import run_scenario
    from iowatt.scenarios.uncertain_inputs import subject_of

    with recording_reads() as reads:
        document = run_scenario(scenario)[0]
    propagation = propagate([scenario], settings, executor, origins=[origin], baseline=[document], reads=[reads])
    summary = summarise(propagation)
    target = _widest(summary.metrics, metric)
    interval = summary.metrics[target]
    kept = propagation.kept
    shares = dict(propagation.sensitivity(lambda row: row[0][target]))
    jobs = candidates(scenario)
    subjects = [subject_of(scenario, origin, reads)[0], *(subject_of(_with_job(scenario, j), j.id, reads)[0] for j in jobs)]
    rows = [{item.key: item.range.value_at(u)} for item in kept for u in (0.05, 0.95)]
    paths = tuple([None] * len(subjects))
    # a subject the row's input does not reach returns the empty "plain" outputs: NaN, so a slope of 0 (slope())
    unmoved = tuple({} for _ in subjects)
    futures = [executor.submit(run_rows, tuple(subjects), [(n, row)], paths, unmoved) for n, row in enumerate(rows)]  # one row a task
    outcomes = [future.result()[0] for future in futures]

    def value(n: int, subject: int, name: str) -> float:
        results = outcomes[n][1]
        return math.nan if results is None else results[subject].get(name, math.nan)

    h = np.array([slope(value(2 * i, 0, target), value(2 * i + 1, 0, target)) for i in range(len(kept))])
    g = np.array([[slope(value(2 * i, c, "bw_bytes"), value(2 * i + 1, c, "bw_bytes")) for i in range(len(kept))]
                  for c in range(1, len(subjects))]).reshape(len(jobs), len(kept))
    linear = h**2 / float(h @ h) if float(h @ h) > 0 else np.zeros(len(kept))
    unknowns = sorted((Unknown(item.path, item.range, shares.get(item.path, float(linear[i]))) for i, item in enumerate(kept)),
                      key=lambda u: -u.share)
    picks = greedy(h, g, np.full(len(jobs), how.of_mean), max_jobs)
    prior = float(h @ h)
    steps = []
    for pick in picks:
        scale = math.sqrt(pick.variance_after / prior) if prior > 0 else 1.0
        after = Interval(interval.median - scale * (interval.median - interval.low), interval.median,
                         interval.median + scale * (interval.high - interval.median))
        item = kept[pick.unknown]
        steps.append(Step(jobs[pick.candidate], item.path, item.range, shares.get(item.path, float(linear[pick.unknown])), after))
    moved = {kept[i].path for i in range(len(kept)) if np.any(np.abs(g[:, i]) > 1e-9)} if len(jobs) else set()
    unmeasurable = [u.path for u in unknowns if u.share >= 0.05 and u.path not in moved]
    return Advice(origin, target, interval, unknowns, steps, how.per_run, how.repeat, unmeasurable, how.misfit, how.source)
