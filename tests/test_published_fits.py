"""Every calibrated value names what it was fitted on, and its fit, as code, reproduces it; cross-validation.

Oracles: the recorded values themselves (catalog YAML, scenario files, the model
constant), which each fit must reproduce from the rows of the published table
within its stated tolerance (the recorded value is the fit's result as written,
rounded); an independent run of a scenario with the prior value set by hand
(`--set`), for the cross-validated prediction; the Provenance contract.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from iowatt.models.provenance import Provenance
from iowatt.scenarios.cross_validation import cross_validate
from iowatt.scenarios.fit_targets import ScenarioField
from iowatt.scenarios.loader import load
from iowatt.scenarios.published_fits import FITS, FitContext
from iowatt.scenarios.run import run_scenario
from iowatt.scenarios.validation import evaluate_table, read_table
from iowatt.scenarios.validation_roles import all_records
from iowatt.scenarios.validation_runs import RunCache
from pydantic import ValidationError
from typer.testing import CliRunner

from iowatt.cli import app

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "scenarios" / "validation" / "published.yaml"
LIB = REPO / "scenarios" / "library"


def test_a_calibrated_value_must_name_what_it_was_fitted_on():
    with pytest.raises(ValidationError, match="fitted_on"):
        Provenance(p="calibrated", src="a study")
    with pytest.raises(ValidationError, match="only a calibrated value"):
        Provenance(p="measured", src="a study", fitted_on=("row",))
    assert Provenance(p="calibrated", src="bundle", fitted_on="traces/bundle-1").fitted_on == ("traces/bundle-1",)


def test_every_calibrated_value_has_fitted_on_rows_of_the_published_table_and_a_fit():
    """Catalog, model constants and library scenarios: each calibrated value names rows that exist, and each has a
    fit in scenarios.published_fits whose target is that value (and no fit lacks a calibrated value)."""
    ids = {row.id for row in read_table(TABLE).measurements}
    records = all_records()
    assert records, "no calibrated value found"
    for record in records:
        assert record.provenance.fitted_on, record.label
        assert set(record.provenance.fitted_on) <= ids, (record.label, record.provenance.fitted_on)
    assert {r.key for r in records} == {f.target.key for f in FITS}
    for fit in FITS:
        if isinstance(fit.target, ScenarioField):  # one value, written alike in every file that uses it
            assert len(set(fit.target.recorded_values())) == 1, fit.name
            assert len({p.model_dump_json() for p in fit.target.provenances()}) == 1, fit.name


@pytest.mark.parametrize("fit", FITS, ids=lambda f: f.name)
def test_each_fit_reproduces_its_recorded_value(fit):
    table = read_table(TABLE)
    ctx = FitContext(table, TABLE.parent)
    value = fit.solve(ctx, ctx.rows(fit.row_ids(table)))
    recorded = fit.target.recorded()
    assert value == pytest.approx(recorded, rel=fit.reproduce_rel, abs=1e-12), f"{fit.name}: fit {value:.6g}, recorded {recorded:.6g}"


def _epoch_table(tmp_path: Path) -> Path:
    rows = [r for r in yaml.safe_load(TABLE.read_text())["measurements"] if r["id"] == "amax.epoch.9200"]
    for row in rows:
        row["scenario"] = str((TABLE.parent / row["scenario"]).resolve())
    path = tmp_path / "epoch.yaml"
    path.write_text(yaml.safe_dump({"tolerance": {"value": 0.1, "ratio": 0.15}, "measurements": rows}))
    return path


def test_leaving_the_study_out_falls_back_to_the_prior(tmp_path):
    """The 9200 PRO epoch is the CNTK decode time's only row here: without its study the value is its prior
    (9.8 ms), and the row is predicted as a run with that value set by hand predicts it."""
    path = _epoch_table(tmp_path)
    table = read_table(path)
    cache = RunCache()
    report = evaluate_table(table, path.parent, cache=cache)
    assert {r.role for r in report.rows} == {"fitted"}
    result = cross_validate(table, path.parent, report, cache)
    (study,) = result.studies
    (value,) = study.values
    assert (study.study, value.fit, value.basis, value.value) == ("amax", "cntk_decode_seconds", "prior", 0.0098)
    (row,) = study.rows
    by_hand = run_scenario(load(LIB / "amax" / "epoch_9200.yaml", ["workload.cpu_seconds_per_sample=0.0098"]))[0]
    assert row.predicted == pytest.approx(by_hand["metrics"]["epoch_time_mean_seconds"], rel=1e-12)
    assert study.in_sample["median_abs_error"] == report.summary["by_study"]["amax"]["median_abs_error"]
    assert study.cross_validated["max_abs_error"] > study.in_sample["max_abs_error"]


def test_validate_cli_cross_validates_in_json_and_markdown_with_jobs(tmp_path):
    path = _epoch_table(tmp_path)
    runner = CliRunner()
    one = runner.invoke(app, ["validate", str(path), "--format", "json", "--cross-validate"])
    two = runner.invoke(app, ["validate", str(path), "--format", "json", "--cross-validate", "--jobs", "2"])
    assert one.exit_code == 0 and two.exit_code == 0, one.output + two.output
    first, second = json.loads(one.stdout), json.loads(two.stdout)
    assert first == second  # fixed order and identical numbers whatever the number of processes
    assert first["format_version"] == "1.2"
    assert {"n", "median_abs_error", "predicted", "fitted", "restating", "by_study"} <= set(first["summary"])
    assert first["cross_validation"]["studies"][0]["values"][0]["basis"] == "prior"
    markdown = runner.invoke(app, ["validate", str(path), "--format", "markdown", "--cross-validate"])
    assert markdown.exit_code == 0
    for heading in ("## Headline: predicted rows only", "## Rows a calibrated value was fitted on", "## Cross-validation"):
        assert heading in markdown.stdout
    text = runner.invoke(app, ["validate", str(path), "--format", "table"])
    assert text.exit_code == 0 and "rows a calibrated value was fitted on" in text.stdout


def test_validate_rejects_bad_jobs_and_cross_validating_a_bundle(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["validate", str(_epoch_table(tmp_path)), "--jobs", "0"])
    assert bad.exit_code == 2 and "--jobs" in bad.output and "Traceback" not in bad.output
    bundle = runner.invoke(app, ["validate", "--bundle", str(tmp_path), "--profile", str(tmp_path / "p.yaml"), "--cross-validate"])
    assert bundle.exit_code == 2 and "--cross-validate" in bundle.output
