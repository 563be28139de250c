"""`iowatt reproduce`: tables with published figures beside predictions, figures with their CSVs."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from iowatt.cli import app
from scenarios.reproduce import load_study, run_section, study_files


def test_every_study_definition_is_valid_and_points_at_real_scenarios():
    for name in study_files():
        study, path = load_study(name)
        for section in study.sections:
            for run in section.runs:
                assert (path.parent / run.scenario).resolve().exists(), (name, run.scenario)


def test_reproduce_writes_figures_csv_and_index(tmp_path):
    result = CliRunner().invoke(app, ["reproduce", "micron_6550ion_vs_p5336", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "micron_6550ion_vs_p5336"
    pngs = list(folder.glob("*.png"))
    assert pngs and all(p.stat().st_size > 5000 for p in pngs)
    assert list(folder.glob("*.svg"))
    rows = list(csv.DictReader(next(folder.glob("*.csv")).open()))
    published = [r for r in rows if r["published"]]
    assert published
    # the CSV's error column is (comparable prediction - published) / published
    for r in published:
        expected = 100 * (float(r["predicted_comparable"]) - float(r["published"])) / float(r["published"])
        assert float(r["error_percent"]) == pytest.approx(expected)
    index = (tmp_path / "index.md").read_text()
    assert "![" in index and "micron_6550ion_vs_p5336/" in index


def test_ratio_cells_are_ratios_of_the_two_runs():
    study, path = load_study("micron_6550ion_vs_p5336")
    section = study.sections[0]
    result = run_section(section, path.parent)
    a = result.values[("6550 ION @PS1", "time (s)")].predicted
    b = result.values[("P5336 @PS0", "time (s)")].predicted
    from scenarios.reproduce import comparison_rows

    row = next(r for r in comparison_rows(result) if r["run"] == "P5336 @PS0" and r["metric"] == "time (s)")
    assert row["predicted_comparable"] == pytest.approx(b / a)


def test_unknown_study_is_a_clear_error():
    result = CliRunner().invoke(app, ["reproduce", "nosuch"])
    assert result.exit_code == 2 and "expected a study name" in result.stderr
