"""Leave-one-study-out cross-validation of the calibrated values against a validation table.

For each study of the table, every calibrated value fitted on rows of that study
is refitted without them (scenarios.published_fits, on the rows of other studies
it was fitted on) or, with no row left, falls back to its prior (an assumed value
with its reasoning); the study's rows are then predicted with those values.  A
value none of whose rows belong to the study keeps its recorded value (each fit
reproduces it: tests/test_published_fits.py).  So under cross-validation no row
of a study informed any value its prediction uses: fitted rows become
predictions.  Scores leave out rows that restate another row (one prediction
counted twice), in-sample and cross-validated alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from iowatt.scenarios.published_fits import FITS, FitContext, Setting, adjust_for
from iowatt.scenarios.validation import RowResult, ValidationReport, ValidationTable, evaluate_rows, row_keys, score
from iowatt.scenarios.validation_runs import Progress, RunCache, RunPlanner


@dataclass(frozen=True)
class ValueUsed:
    """A calibrated value as one held-out study saw it."""

    fit: str
    target: str
    value: float
    recorded: float
    basis: str          # "refit" or "prior"
    reason: str         # the rows it was refitted on, or the prior's reasoning


@dataclass
class StudyResult:
    study: str
    values: list[ValueUsed]
    rows: list[RowResult]
    in_sample: dict[str, object]
    cross_validated: dict[str, object]

    def as_dict(self) -> dict[str, object]:
        return {
            "study": self.study,
            "values": [asdict(v) for v in self.values],
            "in_sample": self.in_sample,
            "cross_validated": self.cross_validated,
            "rows": [r.as_dict() for r in self.rows],
        }


@dataclass
class CrossValidation:
    studies: list[StudyResult]
    in_sample: dict[str, object]
    cross_validated: dict[str, object]

    def as_dict(self) -> dict[str, object]:
        return {
            "method": "leave-one-study-out",
            "in_sample": self.in_sample,
            "cross_validated": self.cross_validated,
            "studies": [s.as_dict() for s in self.studies],
        }


def _held_out_values(ctx: FitContext, table: ValidationTable, held: set[str]) -> list[ValueUsed]:
    values = []
    for fit in FITS:
        ids = fit.row_ids(table)
        if not held.intersection(ids):
            continue
        left = [i for i in ids if i not in held]
        if left:
            value, basis, reason = fit.solve(ctx, ctx.rows(left)), "refit", "refitted on " + ", ".join(left)
        else:
            value, basis, reason = float(fit.prior.value), "prior", fit.prior.reasoning
        values.append(ValueUsed(fit.name, fit.target.label, value, fit.target.recorded(), basis, reason))
    return values


def _settings(values: list[ValueUsed]) -> list[Setting]:
    targets = {fit.name: fit.target for fit in FITS}
    return [(targets[v.fit], v.value) for v in values]


def _scored(rows: list[RowResult]) -> dict[str, object]:
    return score([r for r in rows if r.role != "restates"])


def cross_validate(
    table: ValidationTable, base: Path, report: ValidationReport, cache: RunCache, *, jobs: int = 1, progress: Progress | None = None
) -> CrossValidation:
    """Leave each study out in turn; `report` is the in-sample evaluation of the same table (its rows give the roles)."""
    ctx = FitContext(table, base, cache)
    in_sample = {r.id: r for r in report.rows}
    studies = list(dict.fromkeys(row.study_name for row in table.measurements))
    plans = []
    for study in studies:
        held = {row.id for row in table.measurements if row.study_name == study}
        plans.append((study, held, _held_out_values(ctx, table, held)))
    keys = []
    for _, held, values in plans:
        if values:
            planner = RunPlanner(base, adjust_for(_settings(values)))
            keys += [k for row in ctx.rows(sorted(held)) for k in row_keys(row, planner)]
    cache.ensure(keys, jobs, progress)
    results = []
    for study, held, values in plans:
        before = [r for r in report.rows if r.id in held]
        if values:
            after = evaluate_rows(table, base, cache, adjust=adjust_for(_settings(values)), only=held, records=[])
            for row in after:
                row.role, row.fitted_by, row.restates = in_sample[row.id].role, in_sample[row.id].fitted_by, in_sample[row.id].restates
        else:
            after = before
        results.append(StudyResult(study, values, after, _scored(before), _scored(after)))
    every_after = [r for s in results for r in s.rows]
    return CrossValidation(results, _scored(report.rows), _scored(every_after))
