"""The fits behind every calibrated value, as code: each reads its rows of a validation table and returns the value.

A fit runs the rows' scenarios with a trial value put in place by the loader's
override mechanism (scenarios.fit_targets) and solves for the value:
  * continuous values: the root of the mean log error of the rows (scipy brentq
    inside a physical bracket); with one row, the value that reproduces it;
  * discrete choices: the candidate with the least sum of squared log errors.
Each fit also states a prior: the `assumed` value, with its reasoning, that the
value falls back to when no row is left to fit on (leave-one-study-out
cross-validation, scenarios.cross_validation).  tests/test_published_fits.py
checks that each fit reproduces the recorded value within `reproduce_rel`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from iowatt.models import host_io
from iowatt.models.provenance import Provenance
from iowatt.scenarios.fit_targets import CatalogField, ScenarioField, Target, WorkloadDefault
from iowatt.scenarios.validation import Measurement, ValidationTable, evaluate_rows
from iowatt.scenarios.validation_runs import Adjust, RunCache

Setting = tuple[Target, float]


class FitError(ValueError):
    """A fit that cannot be made from the rows it was given."""


def adjust_for(settings: Sequence[Setting]) -> Adjust:
    """The overrides that put every (target, value) in place in a scenario that uses it."""

    def adjust(path: Path | None, raw: dict[str, object]) -> list[str]:
        return [a for target, value in settings for a in target.assignments(path, raw, value)]

    return adjust


class FitContext:
    """Predicts rows of one table with trial values; runs are cached across trials and fits."""

    def __init__(self, table: ValidationTable, base: Path, cache: RunCache | None = None) -> None:
        self.table = table
        self.base = base
        self.cache = cache if cache is not None else RunCache()

    def rows(self, ids: Sequence[str]) -> list[Measurement]:
        wanted = set(ids)
        return [row for row in self.table.measurements if row.id in wanted]

    def log_errors(self, rows: Sequence[Measurement], settings: Sequence[Setting]) -> list[float]:
        """log(predicted / measured) of each row with the settings in place."""
        results = evaluate_rows(self.table, self.base, self.cache, adjust=adjust_for(settings), only={r.id for r in rows}, records=[])
        errors = []
        for result in results:
            if result.predicted is None or result.predicted <= 0 or result.measured <= 0:
                raise FitError(f"{result.id}: cannot be fitted on ({result.failure or 'prediction or measurement not positive'})")
            errors.append(math.log(result.predicted / result.measured))
        return errors


def solve_continuous(ctx: FitContext, target: Target, rows: Sequence[Measurement], low: float, high: float) -> float:
    """The value in [low, high] whose mean log error over the rows is zero (brentq; the rows must move monotonically)."""
    from scipy.optimize import brentq

    def residual(value: float) -> float:
        return statistics.fmean(ctx.log_errors(rows, [(target, value)]))

    at_low, at_high = residual(low), residual(high)
    if at_low * at_high > 0:
        raise FitError(f"{target.label}: no value in [{low:g}, {high:g}] reproduces {', '.join(r.id for r in rows)} "
                       f"(mean log error {at_low:+.3f} .. {at_high:+.3f})")
    return float(brentq(residual, low, high, xtol=1e-12, rtol=1e-3))


# A published row's own noise, as a relative standard deviation: the measured source spread (+-6 %,
# models.uncertainty.SOURCE_SPREAD["measured"], the widest repeated readings found) read as its 90 % interval.
ROW_NOISE = 0.06 / 1.6448536269514722
# The log step of the central difference that gives a fit's slope: 2 % moves every fitted row by well over the engine's
# float noise and stays inside the region where the rows move smoothly (the fits are roots of smooth laws)
SLOPE_STEP = 0.02


def log_stderr(ctx: FitContext, target: Target, rows: Sequence[Measurement], value: float) -> float:
    """The fitted value's standard error in log space (a relative one), Gauss-Newton at the fit: with e_i the rows' log
    errors and J_i = de_i / d log(value) by a central difference, var(log value) = sigma^2 / sum(J_i^2), sigma the
    rows' noise: ROW_NOISE, or the rows' own scatter about the fit where more rows than one leave a larger residual
    (s^2 = sum(e_i^2) / (n - 1)).  A fit on one row is exactly determined: its value inherits that row's noise."""
    up = ctx.log_errors(rows, [(target, value * math.exp(SLOPE_STEP))])
    down = ctx.log_errors(rows, [(target, value * math.exp(-SLOPE_STEP))])
    slopes = [(u - d) / (2 * SLOPE_STEP) for u, d in zip(up, down, strict=True)]
    information = sum(j * j for j in slopes)
    if information <= 0:
        raise FitError(f"{target.label}: no row moves with the value, so the rows do not say it")
    noise2 = ROW_NOISE**2
    if len(rows) > 1:
        at = ctx.log_errors(rows, [(target, value)])
        noise2 = max(noise2, sum(e * e for e in at) / (len(rows) - 1))
    return math.sqrt(noise2 / information)


def solve_discrete(ctx: FitContext, target: Target, rows: Sequence[Measurement], candidates: Sequence[float]) -> float:
    """The candidate with the least sum of squared log errors over the rows (ties: the first)."""
    return min(candidates, key=lambda value: sum(e * e for e in ctx.log_errors(rows, [(target, value)])))


# ---- the calibrated values ------------------------------------------------------------------------------------------

HDD_REORDER = CatalogField("hdd", "hdd-7200rpm-sas-8tb", "reorder_efficiency")
DLIO_GENERATE = WorkloadDefault(
    "models.host_io.DLIO_GENERATE_GBps_PER_CORE", host_io.DLIO_GENERATE_GBps_PER_CORE,
    host_io.PROVENANCE["DLIO_GENERATE_GBps_PER_CORE"], "checkpoint", "generate_GBps_per_rank",
)
CNTK_DECODE = ScenarioField("workload.cpu_seconds_per_sample", ("amax/epoch_9200.yaml", "amax/epoch_5210.yaml", "amax/epoch_hdd.yaml"))
HDD_LAYOUT = ScenarioField("system.storage.layout_clusters", ("amax/epoch_hdd.yaml",), integer=True)


def hdd_reorder_efficiency(ctx: FitContext, rows: Sequence[Measurement]) -> float:
    """Share of the ideal SATF positioning cut the firmware achieves (models.hdd rpo): solve the AMAX QD32 IOPS.
    Bracket: just above no reordering (0) to the ideal independent-candidates law (1)."""
    return solve_continuous(ctx, HDD_REORDER, rows, 0.01, 1.0)


def dlio_generate_GBps_per_core(ctx: FitContext, rows: Sequence[Measurement]) -> float:
    """torch.randint int8 rate per reference core inside DLIO's timed save: solve the D7-PS1010 pass-1 mean.
    Bracket: 0.05 GB/s (20 ns per byte) to 5 GB/s (faster than the CRC + copy stage, so it would not bind)."""
    return solve_continuous(ctx, DLIO_GENERATE, rows, 0.05, 5.0)


def cntk_decode_seconds(ctx: FitContext, rows: Sequence[Measurement]) -> float:
    """CNTK's per-image CPU time (decode + augment): solve the 9200 PRO epoch, where the drive does not bind.
    Bracket: the measured per-image brackets, 4 ms (libjpeg-turbo) to 24 ms (PIL), see amax/epoch_9200.yaml."""
    return solve_continuous(ctx, CNTK_DECODE, rows, 0.004, 0.024)


def hdd_layout_clusters(ctx: FitContext, rows: Sequence[Measurement]) -> float:
    """Filesystem layout of the ImageNet set on the HDD: ext4's compact layout (1 piece) or XFS's 8 allocation
    groups of an 8 TB disk (8 pieces), whichever fits the HDD epoch better."""
    return solve_discrete(ctx, HDD_LAYOUT, rows, (1, 8))


@dataclass(frozen=True)
class Prior:
    """The assumed value a calibrated value falls back to when no row is left to fit it on."""

    value: float
    reasoning: str


@dataclass(frozen=True)
class Fit:
    name: str
    target: Target
    solve: Callable[[FitContext, Sequence[Measurement]], float]
    prior: Prior
    reproduce_rel: float  # the recorded value is this fit's result as written (rounded): how close they must agree

    def provenance(self) -> Provenance:
        return self.target.provenance()

    def row_ids(self, table: ValidationTable) -> list[str]:
        """The rows of this table the value was fitted on (fitted_on rows the table lacks were not in it)."""
        present = {row.id for row in table.measurements}
        return [i for i in self.provenance().fitted_on if i in present]


FITS: tuple[Fit, ...] = (
    Fit("hdd_reorder_efficiency", HDD_REORDER, hdd_reorder_efficiency, Prior(
        0.74, "assumed: the share that gives enterprise 7200 RPM drives the 'nearly 100 %' (2.0x) gain in 4 KiB random-read "
        "IOPS from QD1 to QD32 over the full stroke (Wikipedia, IOPS, citing StorageReview/Tom's Hardware queue-depth charts), "
        "computed with models.hdd"), 0.01),
    Fit("dlio_generate_GBps_per_core", DLIO_GENERATE, dlio_generate_GBps_per_core, Prior(
        0.333, "assumed: torch.randint int8 draws one mt19937 number and a modulo per byte in a serial kernel, about 3 ns "
        "per byte on the reference core"), 0.01),
    Fit("cntk_decode_seconds", CNTK_DECODE, cntk_decode_seconds, Prior(
        0.0098, "assumed: the geometric mean of the measured per-image brackets, 4 ms (libjpeg-turbo + OpenCV) and 24 ms "
        "(PIL), CNTK's OpenCV path lying between them (amax/epoch_9200.yaml)"), 0.01),
    Fit("hdd_layout_clusters", HDD_LAYOUT, hdd_layout_clusters, Prior(
        8, "assumed: XFS, the default filesystem of RHEL/CentOS 7 in 2018, spreads new directories over its 8 allocation "
        "groups of an 8 TB disk"), 0.0),
)
