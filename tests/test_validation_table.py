"""Validation tables: metric paths, ratios, summaries, and malformed tables."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import yaml
from iowatt.scenarios.validation import TableError, lookup_metric, parse_metric_path, read_table, validate_file

DEMO = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"


def test_metric_paths():
    assert parse_metric_path("checkpoint.pass_mean_seconds[1]") == ["checkpoint", "pass_mean_seconds", 1]
    doc = {"a": {"b": [1.0, 2.5]}, "m": {"x": 3}}
    assert lookup_metric(doc, "a.b[-1]") == 2.5
    assert lookup_metric(doc, "m.x") == 3.0
    for bad in ("", ".a", "a..b", "a[x]"):
        with pytest.raises(ValueError):
            parse_metric_path(bad)
    with pytest.raises(KeyError, match="has: b"):
        lookup_metric(doc, "a.c")


def _table(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"measurements": rows}))
    return path


def test_values_ratios_and_failures_with_an_independent_oracle(tmp_path):
    """Oracle: the same metrics read straight from `iowatt run` documents."""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    base = run_scenario(load(DEMO))[0]["metrics"]["save_checkpoint_duration_mean_seconds"]
    other = run_scenario(load(DEMO, ["storage.power_state=PS7"]))[0]["metrics"]["save_checkpoint_duration_mean_seconds"]
    ref = {"scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds"}
    path = _table(tmp_path, [
        {"id": "v", **ref, "measured": base * 1.05, "unit": "s"},
        {"id": "r", "ratio": {"numerator": {**ref, "set": {"storage.power_state": "PS7"}}, "denominator": ref},
         "measured": 0.5, "tolerance": 0.2},
        {"id": "missing", "scenario": str(DEMO), "metric": "metrics.nosuch", "measured": 1},
        {"id": "badunit", **ref, "measured": 1, "unit": "J"},
    ])
    report = validate_file(path)
    rows = {r.id: r for r in report.rows}
    assert rows["v"].predicted == pytest.approx(base)
    assert rows["v"].error == pytest.approx(1 / 1.05 - 1)
    assert rows["v"].within
    assert rows["r"].predicted == pytest.approx(other / base)
    assert rows["r"].direction_ok is False  # the cap slows it (ratio > 1); the claim said < 1
    assert rows["missing"].failure and "nosuch" in rows["missing"].failure
    assert rows["badunit"].failure and "unit" in rows["badunit"].failure
    s = report.summary
    assert (s["n"], s["n_failed"], s["n_ratio"]) == (4, 2, 1)
    assert s["median_abs_error"] == pytest.approx((abs(rows["v"].error) + abs(rows["r"].error)) / 2)
    json.dumps(report.as_dict())  # JSON-ready


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([{"id": "a", "measured": 1}], "needs `scenario` and `metric`"),
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1}] * 2, "twice"),
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1, "unit": "furlong"}], "unit"),
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1, "extra": 2}], "extra"),
        ([{"id": "a", "ratio": {"numerator": {"scenario": "x", "metric": "m"}}, "measured": 1}], "denominator"),
        ([], "measurements"),
    ],
)
def test_malformed_tables_are_rejected_with_the_field_named(tmp_path, rows, needle):
    with pytest.raises(TableError, match=needle):
        read_table(_table(tmp_path, rows))


def test_scale_converts_units_in_values_and_ratios(tmp_path):
    """Oracle: the metric read straight from the run, multiplied by the stated scale by hand."""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    metrics = run_scenario(load(DEMO))[0]["metrics"]
    seconds = metrics["save_checkpoint_duration_mean_seconds"]
    wh = metrics["ssd_energy_Wh"]
    ref = {"scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds"}
    path = _table(tmp_path, [
        # seconds -> ms: the unit names the converted value, so the name check is skipped
        {"id": "ms", **ref, "scale": 1000.0, "measured": seconds * 1000.0, "unit": "ms"},
        # J per second of checkpoint from Wh / s: 3600 J per Wh, on the numerator only
        {"id": "watts", "ratio": {"numerator": {"scenario": str(DEMO), "metric": "metrics.ssd_energy_Wh", "scale": 3600.0},
                                  "denominator": ref}, "measured": 20.0, "tolerance": 0.5},
    ])
    rows = {r.id: r for r in validate_file(path).rows}
    assert rows["ms"].predicted == pytest.approx(seconds * 1000.0)
    assert rows["ms"].error == pytest.approx(0.0, abs=1e-12)
    assert rows["watts"].predicted == pytest.approx(wh * 3600.0 / seconds)


def test_a_row_whose_run_raises_is_reported_and_the_others_still_run(tmp_path):
    """A workload that raises at run time (gds_read with no GPU) fails its own row only."""
    scenario = yaml.safe_load(DEMO.read_text())
    scenario["system"]["gpus"] = {"count": 0}
    scenario["workload"] = {"kind": "gds_read"}
    path = _table(tmp_path, [
        {"id": "broken", "scenario": scenario, "metric": "metrics.bandwidth_GiB_per_second", "measured": 1},
        {"id": "fine", "scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds", "measured": 1},
    ])
    report = validate_file(path)
    rows = {r.id: r for r in report.rows}
    assert rows["broken"].failure and "GPU" in rows["broken"].failure
    assert rows["fine"].predicted is not None and rows["fine"].failure is None
    assert report.summary["n_failed"] == 1


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({"id": "a", "scenario": "x", "metric": "m.x", "measured": 1, "scale": 0}, "scale"),
        ({"id": "a", "ratio": {"numerator": {"scenario": "x", "metric": "m"}, "denominator": {"scenario": "x", "metric": "m"}},
          "scale": 2, "measured": 1}, "scale"),
        ({"id": "a", "ratio": {"numerator": {"scenario": "x", "metric": "m", "scale": 0}, "denominator": {"scenario": "x", "metric": "m"}},
          "measured": 1}, "scale"),
    ],
)
def test_bad_scales_are_rejected(tmp_path, row, needle):
    with pytest.raises(TableError, match=needle):
        read_table(_table(tmp_path, [row]))


def test_a_no_difference_claim_has_no_direction_and_is_judged_by_its_tolerance(tmp_path):
    """Oracle: a run divided by itself is exactly 1; a claim of 1.1 on it has a direction and misses it."""
    ref = {"scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds"}
    path = _table(tmp_path, [
        {"id": "same", "ratio": {"numerator": ref, "denominator": ref}, "measured": 1.0, "tolerance": 0.05},
        {"id": "up", "ratio": {"numerator": ref, "denominator": ref}, "measured": 1.1, "tolerance": 0.05},
    ])
    report = validate_file(path)
    rows = {r.id: r for r in report.rows}
    assert rows["same"].predicted == pytest.approx(1.0) and rows["same"].within and rows["same"].direction_ok is None
    assert rows["up"].direction_ok is False and not rows["up"].within
    assert (report.summary["n_ratio"], report.summary["n_direction"], report.summary["n_direction_ok"]) == (2, 1, 0)


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1, "restates": "nosuch"}], "another row"),
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1, "restates": "a"}], "another row"),
        ([{"id": "a", "scenario": "x", "metric": "m.x", "measured": 1},
          {"id": "b", "scenario": "x", "metric": "m.x", "measured": 1, "restates": "a"},
          {"id": "c", "scenario": "x", "metric": "m.x", "measured": 1, "restates": "b"}], "which restates a"),
    ],
)
def test_restates_must_name_a_row_that_restates_nothing(tmp_path, rows, needle):
    with pytest.raises(TableError, match=needle):
        read_table(_table(tmp_path, rows))


def test_roles_studies_and_the_table_tolerance(tmp_path):
    """A row whose id a calibrated value's fitted_on names is `fitted` (the HDD reorder efficiency names
    amax.fio.hdd.iops), a row with `restates` is restating, the rest predicted; the headline counts predicted rows only;
    tolerances come from the table's convention by kind unless a row sets its own; the study is the id's first part."""
    ref = {"scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds"}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"tolerance": {"value": 0.2, "ratio": 0.3}, "measurements": [
        {"id": "amax.fio.hdd.iops", **ref, "measured": 1.0},
        {"id": "x.same", **ref, "measured": 1.0, "restates": "amax.fio.hdd.iops"},
        {"id": "x.ratio", "ratio": {"numerator": ref, "denominator": ref}, "measured": 1.0},
        {"id": "y.own", "study": "other", **ref, "measured": 1.0, "tolerance": 0.5},
    ]}))
    report = validate_file(path)
    rows = {r.id: r for r in report.rows}
    assert [rows[i].role for i in ("amax.fio.hdd.iops", "x.same", "x.ratio", "y.own")] == ["fitted", "restates", "predicted", "predicted"]
    assert "reorder_efficiency" in rows["amax.fio.hdd.iops"].fitted_by[0]
    assert [rows[i].tolerance for i in ("amax.fio.hdd.iops", "x.ratio", "y.own")] == [0.2, 0.3, 0.5]
    assert [rows[i].study for i in ("amax.fio.hdd.iops", "x.ratio", "y.own")] == ["amax", "x", "other"]
    s = report.summary
    assert (s["n"], s["predicted"]["n"], s["fitted"]["n"], s["restating"]["n"]) == (4, 2, 1, 1)
    assert s["predicted"]["median_abs_error"] == pytest.approx(statistics.median([abs(rows["x.ratio"].error), abs(rows["y.own"].error)]))
    assert set(s["by_study"]) == {"amax", "x", "other"} and s["by_study"]["x"]["n"] == 1  # the restating row left out
    data = yaml.safe_load(path.read_text())
    data["tolerance"] = 0.25  # one number sets both kinds
    path.write_text(yaml.safe_dump(data))
    assert {r.id: r.tolerance for r in validate_file(path).rows}["x.ratio"] == 0.25


def test_a_failed_row_makes_the_command_exit_1_and_still_prints_the_rest(tmp_path):
    from typer.testing import CliRunner

    from iowatt.cli import app

    path = _table(tmp_path, [
        {"id": "fine", "scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds", "measured": 1},
        {"id": "missing", "scenario": str(DEMO), "metric": "metrics.nosuch", "measured": 1},
    ])
    result = CliRunner().invoke(app, ["validate", str(path), "--format", "json"])
    assert result.exit_code == 1
    rows = {r["id"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["fine"]["predicted"] is not None and "nosuch" in rows["missing"]["failure"]


def test_a_row_measured_zero_is_refused_naming_the_field(tmp_path):
    """Issue 36 item 9: `measured: 0` has no relative error; it was accepted and its error written as a bare `Infinity`
    (not JSON). Now the table is refused (exit 2) naming the row and `measured`, and nothing is printed on stdout.

    Oracle: RFC 8259 (JSON has no infinity) and the error's definition (predicted - measured) / measured."""
    from typer.testing import CliRunner

    from iowatt.cli import app

    path = _table(tmp_path, [{"id": "zero", "scenario": str(DEMO), "metric": "metrics.save_checkpoint_duration_mean_seconds", "measured": 0}])
    result = CliRunner().invoke(app, ["validate", str(path), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "measured" in result.stderr and "found 0" in result.stderr and "Traceback" not in result.output
    assert result.stdout == ""
