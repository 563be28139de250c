"""The project's own validation table against every published measurement, and the accuracy bars.

Oracles: the reference file shared/reference/published_results.yaml (ids, values
and units are checked against it, independently of the table), and the issue's
accuracy bars (median |error| <= 10 %, max <= 25 %, every ratio's direction
right, no row failing to run).  The whole rendered table is printed so that a
failure shows what moved (`pytest -s` shows it on success too).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from iowatt.scenarios.validation import ValidationReport, read_table, render_report, validate_file

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "scenarios" / "validation" / "published.yaml"
# the shared reference lives beside the checkout (../shared); IOWATT_REFERENCE overrides
REFERENCE_CANDIDATES = [Path(p) for p in [os.environ.get("IOWATT_REFERENCE", "")] if p] + [
    REPO.parent / "shared" / "reference" / "published_results.yaml",
    Path("/work/shared/reference/published_results.yaml"),
]
MEDIAN_BAR = 0.10
MAX_BAR = 0.25


def _reference() -> dict:
    for path in REFERENCE_CANDIDATES:
        if path.is_file():
            return yaml.safe_load(path.read_text())
    pytest.skip("shared/reference/published_results.yaml is not beside this checkout")


@pytest.fixture(scope="module")
def report() -> ValidationReport:
    result = validate_file(TABLE)
    print("\n" + render_report(result))
    return result


def test_table_covers_every_published_measurement_with_its_value_and_unit():
    reference = {m["id"]: m for m in _reference()["measurements"]}
    rows = {r.id: r for r in read_table(TABLE).measurements}
    missing = sorted(set(reference) - set(rows))
    assert not missing, f"published measurements without a row: {missing}"
    for mid, m in reference.items():
        row = rows[mid]
        assert row.measured == pytest.approx(m["value"], rel=1e-12), mid
        if "unit" in m:
            assert row.unit == m["unit"], (mid, row.unit, m["unit"])
        # a 'relative' claim, or a value without a unit that is a ratio by its reading, is a ratio row
        is_ratio = "relative" in m or "unit" not in m
        assert (row.ratio is not None) == is_ratio, mid
        if is_ratio:
            assert row.tolerance >= 0.05, mid
        else:
            assert row.tolerance == pytest.approx(0.10), mid
    extra = sorted(set(rows) - set(reference))
    # extra rows only refine a published claim (same id prefix), never invent a measurement
    assert all(any(e.startswith(mid + ".") for mid in reference) for e in extra), extra


def test_every_row_runs(report):
    failed = {r.id: r.failure for r in report.rows if r.failure}
    assert not failed, f"{len(failed)} rows failed to run: {failed}"


def test_summary_is_computed_from_the_rows(report):
    """Oracle: the summary recomputed here from the per-row predictions."""
    import statistics

    errors = [abs(r.predicted - r.measured) / r.measured for r in report.rows if r.predicted is not None]
    s = report.summary
    assert s["n"] == len(report.rows) == len(read_table(TABLE).measurements)
    if errors:
        assert s["median_abs_error"] == pytest.approx(statistics.median(errors))
        assert s["max_abs_error"] == pytest.approx(max(errors))
    assert s["n_within"] == sum(1 for r in report.rows if r.predicted is not None and abs(r.error) <= r.tolerance)


def test_median_error_bar(report):
    assert report.summary["median_abs_error"] is not None
    assert report.summary["median_abs_error"] <= MEDIAN_BAR, f"median |error| {report.summary['median_abs_error']:.1%} > {MEDIAN_BAR:.0%}"


def test_max_error_bar(report):
    worst = sorted((r for r in report.rows if r.error is not None), key=lambda r: -abs(r.error))[:5]
    assert report.summary["max_abs_error"] is not None
    assert report.summary["max_abs_error"] <= MAX_BAR, "worst rows: " + ", ".join(f"{r.id} {r.error:+.1%}" for r in worst)


def test_every_ratio_direction_is_right(report):
    wrong = [f"{r.id}: predicted {r.predicted:.3g}, published {r.measured:.3g}" for r in report.rows
             if r.kind == "ratio" and r.direction_ok is False]
    assert not wrong, wrong
