"""`iowatt reproduce`: tables with published figures beside predictions, figures with their CSVs.

Oracles: the ratio and error arithmetic is recomputed here from the cells; the
study files are checked against shared/reference/published_results.yaml where
they quote the same figure; a missing scenario must be reported, not crash.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from iowatt.scenarios import reproduce as rp
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.reproduce import comparison_rows, load_study, run_section, study_files
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.commands.reproduce import present
from iowatt.output import figures

REPO = Path(__file__).resolve().parent.parent
STUDIES = {"micron_6550ion_vs_p5336", "micron_9550_gnn_bam", "amax_5210ion_vs_hdd", "storagereview_ckpt_fill", "mlperf_storage_v1",
           "ssd_power_states"}


def test_the_studies_are_defined_and_point_into_the_library():
    assert set(study_files()) == STUDIES
    for name in study_files():
        study, path = load_study(name)
        assert study.id == name
        for section in study.sections:
            for run in section.runs:
                if isinstance(run.scenario, dict):   # inline: must be a valid scenario by itself
                    load(run.scenario)
                    continue
                target = (path.parent / run.scenario).resolve()
                assert target.is_relative_to(REPO / "scenarios" / "library"), (name, run.scenario)


def test_every_study_scenario_exists():
    missing = sorted({str((p.parent / r.scenario).resolve().relative_to(REPO))
                      for n in study_files() for p in [load_study(n)[1]] for s in load_study(n)[0].sections for r in s.runs
                      if isinstance(r.scenario, str) and not (p.parent / r.scenario).resolve().is_file()})
    assert not missing, f"study scenarios not in the library yet: {missing}"


def test_published_figures_in_studies_match_the_reference_file():
    """Every absolute published value in a study section is a value of the reference file (same study)."""
    reference_path = next((p for p in (REPO.parent / "shared" / "reference" / "published_results.yaml",
                                       Path("/work/shared/reference/published_results.yaml")) if p.is_file()), None)
    if reference_path is None:
        pytest.skip("shared/reference/published_results.yaml is not beside this checkout")
    reference = yaml.safe_load(reference_path.read_text())
    values: dict[str, set[float]] = {}
    for m in reference["measurements"]:
        values.setdefault(m["study"], set()).add(float(m["value"]))
        if "au_percent" in m:
            values[m["study"]].add(float(m["au_percent"]))
    for name in study_files():
        study, _ = load_study(name)
        for section in study.sections:
            for p in section.published:
                if "submitted" in p.source:   # accelerator counts are in the reference's `what`, not a value
                    continue
                assert any(abs(p.value - v) <= 1e-9 * max(1.0, abs(v)) for v in values[name]), (name, p)


# the studies whose scenarios run in a second or two; amax (CNTK epochs) and mlperf (cosmoflow) take ~10 s of CPU
# each and are run by tests/test_published_table.py already, so their figure kinds are exercised on a small study below
CHEAP = ["micron_6550ion_vs_p5336", "micron_9550_gnn_bam", "storagereview_ckpt_fill"]


def reproduce(names: list[str], out: Path) -> tuple[str, list[Path]]:
    """What `iowatt reproduce NAMES --out OUT --jobs 0` does, returning (stdout text, files written)."""
    from iowatt.scenarios.executors import InlineExecutor

    return present(rp.run_studies(rp.load_studies(names), InlineExecutor()), out, " ".join(names))


@pytest.fixture(scope="module")
def all_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    text, _ = reproduce(CHEAP, out)
    return out, text


def test_reproduce_writes_a_figure_and_csv_per_section_and_an_index(all_out):
    out, stdout = all_out
    index = (out / "index.md").read_text()
    for name in CHEAP:
        study, _ = load_study(name)
        assert f"| {name} |" in index
        for section in study.sections:
            stem = out / name / rp.slug(section.title)
            assert stem.with_suffix(".csv").is_file(), stem
            if section.figure != "none":
                assert stem.with_suffix(".png").stat().st_size > 5000, stem
                assert stem.with_suffix(".svg").is_file(), stem
                assert f"({name}/{stem.name}.png)" in index
            assert section.title in stdout


def test_csv_error_column_is_the_published_comparison(all_out):
    """Oracle: (comparable prediction - published) / published, recomputed from the CSV's own columns,
    and a ratio's comparable prediction is the quotient of the two runs' data rows."""
    out, _ = all_out
    path = out / "micron_6550ion_vs_p5336" / f"{rp.slug('Checkpoint, Llama3-405B, 415 GB, 8 GPUs')}.csv"
    rows = list(csv.DictReader(path.open()))
    data = {(r["run"], r["metric"]): float(r["predicted"]) for r in rows if r["kind"] == "data"}
    claims = [r for r in rows if r["kind"] == "published"]
    assert len(claims) == 3
    for r in claims:
        expected = data[(r["run"], r["metric"])] / data[(r["relative_to"], r["metric"])]
        assert float(r["predicted_comparable"]) == pytest.approx(expected)
        assert float(r["error_percent"]) == pytest.approx(100 * (expected - float(r["published"])) / float(r["published"]))


def test_ratio_claims_and_their_place_on_the_bars():
    study, path = load_study("micron_6550ion_vs_p5336")
    result = run_section(study.sections[0], path.parent)
    a = result.values[("6550 ION @PS1", "time (s)")].predicted
    b = result.values[("P5336 @PS0", "time (s)")].predicted
    claim = next(c for c in result.claims if c.published.metric == "time (s)")
    assert claim.predicted == pytest.approx(b / a)
    # a published ratio b/a = 2.51 puts b at 2.51 x iowatt's a in the run's own units
    assert rp.published_absolute(result, claim.published) == pytest.approx(2.51 * a)
    rows = comparison_rows(result)
    assert sum(r["kind"] == "data" for r in rows) == len(study.sections[0].runs) * len(study.sections[0].metrics)


def _study(tmp_path: Path, sections: list[dict]) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({"id": "tiny", "title": "Tiny", "sections": sections}))
    return path


def test_pairs_on_a_log_axis_with_published_figures(tmp_path):
    """The AMAX fio section's shape (three drives, log axis) on its cheap scenarios, through the CLI with a study file."""
    amax = REPO / "scenarios" / "library" / "amax"
    path = _study(tmp_path, [{
        "title": "fio", "figure": "pairs", "y_log": True,
        "runs": [{"label": d, "scenario": str(amax / f"fio_{d}.yaml")} for d in ("9200", "5210", "hdd")],
        "metrics": [{"label": "IOPS", "metric": "metrics.read_iops"}],
        "published": [{"run": "9200", "metric": "IOPS", "value": 25100}, {"run": "hdd", "metric": "IOPS", "value": 258}],
    }])
    result = CliRunner().invoke(app, ["reproduce", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "tiny" / "fio.png").stat().st_size > 5000
    rows = [r for r in csv.DictReader((tmp_path / "out" / "tiny" / "fio.csv").open()) if r["kind"] == "published"]
    assert [r["run"] for r in rows] == ["9200", "hdd"]


def test_a_missing_scenario_is_reported_and_the_rest_still_runs(tmp_path):
    demo = str(REPO / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml")
    path = _study(tmp_path, [{
        "title": "one real, one missing", "figure": "lines", "x_label": "n",
        "runs": [{"label": "real", "scenario": demo, "x": 1}, {"label": "gone", "scenario": str(tmp_path / "nope.yaml"), "x": 2}],
        "metrics": [{"label": "time (s)", "metric": "metrics.save_checkpoint_duration_mean_seconds"}],
        "published": [{"run": "gone", "metric": "time (s)", "value": 10.0}],
    }])
    text, written = reproduce([str(path)], tmp_path / "out")
    assert "not run: gone" in text and "no such scenario file" in text
    index = (tmp_path / "out" / "index.md").read_text()
    assert "**not run**: gone" in index
    rows = list(csv.DictReader((tmp_path / "out" / "tiny" / "one_real_one_missing.csv").open()))
    real = next(r for r in rows if r["run"] == "real")
    gone = next(r for r in rows if r["run"] == "gone" and r["kind"] == "data")
    assert float(real["predicted"]) > 0 and gone["predicted"] == "" and "no such scenario" in gone["failure"]
    assert any(p.suffix == ".png" for p in written)


def test_failed_runs_make_reproduce_exit_1_after_writing_the_rest(tmp_path):
    """Issue 36 item 10: a study whose runs fail exits 1 (the README's partial-failure status), one run failing or all of them;
    the tables and index.md are still written. Oracle: the README's exit-status contract."""
    demo = str(REPO / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml")
    metrics = [{"label": "time (s)", "metric": "metrics.save_checkpoint_duration_mean_seconds"}]
    some = _study(tmp_path, [{"title": "some", "runs": [{"label": "real", "scenario": demo},
                                                        {"label": "gone", "scenario": str(tmp_path / "nope.yaml")}], "metrics": metrics}])
    result = CliRunner().invoke(app, ["reproduce", str(some), "--out", str(tmp_path / "out"), "-j", "0"])
    assert result.exit_code == 1 and "1 run(s) failed" in result.stderr and "gone" in result.stderr, result.output
    assert (tmp_path / "out" / "index.md").is_file() and "Traceback" not in result.output
    every = _study(tmp_path, [{"title": "all", "runs": [{"label": "gone", "scenario": str(tmp_path / "nope.yaml")}], "metrics": metrics}])
    assert CliRunner().invoke(app, ["reproduce", str(every), "-j", "0"]).exit_code == 1


@pytest.mark.parametrize("bad_id", ["ABSOLUTE", "../../x", "..", "a/b", ".hidden"])
def test_a_study_id_that_is_a_path_is_refused_before_anything_is_written(tmp_path, bad_id):
    """Issue 36 item 19: the study id names a folder under --out; an absolute path or `../..` wrote outside it.
    Now such an id is an invalid study (exit 2, naming `id`) and nothing is written. Oracle: path containment."""
    escaped = tmp_path / "escaped"
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump({"id": str(escaped) if bad_id == "ABSOLUTE" else bad_id, "title": "t", "sections": [
        {"title": "t", "runs": [{"label": "a", "scenario": "x"}], "metrics": [{"label": "m", "metric": "metrics.x"}]}]}))
    out = tmp_path / "nest" / "out"
    result = CliRunner().invoke(app, ["reproduce", str(path), "--out", str(out), "-j", "0"])
    assert result.exit_code == 2 and "id:" in result.stderr and "Traceback" not in result.output, result.output
    assert not (tmp_path / "nest").exists() and not escaped.exists()


def test_without_matplotlib_tables_and_csvs_are_still_written(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "plots_available", lambda: False)
    text, _ = reproduce(["micron_6550ion_vs_p5336"], tmp_path)
    assert "pip install 'iowatt[plots]'" in text
    assert not list(tmp_path.rglob("*.png")) and list(tmp_path.rglob("*.csv"))
    assert (tmp_path / "index.md").is_file()


def test_derived_metrics_divide_and_traces_average(tmp_path):
    """Oracle: the run's own metrics divided by hand; a trace's table value is the mean of its list."""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    demo = REPO / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"
    document = run_scenario(load(demo))[0]
    path = _study(tmp_path, [
        {"title": "per watt", "runs": [{"label": "r", "scenario": str(demo)}], "metrics": [
            {"label": "GB/s per W", "metric": "metrics.save_checkpoint_io_mean_GB_per_second", "divide_by": "metrics.ssd_mean_power_W"}]},
        {"title": "trace", "figure": "trace", "runs": [{"label": "r", "scenario": str(demo)}],
         "metrics": [{"label": "t (s)", "metric": "checkpoint.durations_seconds"}]},
    ])
    study, base = load_study(path)
    m = document["metrics"]
    ratio = run_section(study.sections[0], base).values[("r", "GB/s per W")].predicted
    assert ratio == pytest.approx(m["save_checkpoint_io_mean_GB_per_second"] / m["ssd_mean_power_W"])
    cell = run_section(study.sections[1], base).values[("r", "t (s)")]
    durations = document["checkpoint"]["durations_seconds"]
    assert cell.trace == pytest.approx(durations) and cell.predicted == pytest.approx(sum(durations) / len(durations))
    json.dumps(comparison_rows(run_section(study.sections[1], base)))


def test_published_span_compares_with_the_trace_mean_over_that_stretch(tmp_path):
    """Oracle: the mean of the trace points inside the span, by hand (checkpoints 4-6 of 9 sit in pass 2 of 3)."""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    demo = REPO / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"
    overrides = {"workload.passes": 3, "workload.checkpoints_per_pass": 3, "workload.size": "100 GB"}
    document = run_scenario(load(demo, [f"{k}={v}" for k, v in overrides.items()]))[0]
    path = _study(tmp_path, [
        {"title": "trace", "figure": "trace", "trace_span": 3, "runs": [{"label": "r", "scenario": str(demo), "set": overrides}],
         "metrics": [{"label": "t (s)", "metric": "checkpoint.durations_seconds"},
                     {"label": "WA", "metric": "checkpoint.checkpoint_write_amplification", "axis": "right"}],
         "published": [{"run": "r", "metric": "t (s)", "value": 1.0, "span": [1, 2]}]},
    ])
    study, base = load_study(path)
    result = run_section(study.sections[0], base)
    durations = document["checkpoint"]["durations_seconds"]
    assert result.claims[0].predicted == pytest.approx(sum(durations[3:6]) / 3)
    assert result.values[("r", "WA")].trace == pytest.approx(document["checkpoint"]["checkpoint_write_amplification"])
    # the figure gets the published mean with its stretch, to draw it over that stretch
    from iowatt.commands.reproduce import section_figure

    (claim,) = section_figure(result).claims
    assert claim.span == (1, 2) and claim.absolute == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"title": "t", "runs": [{"label": "a", "scenario": "x"}], "metrics": [{"label": "m", "metric": "metrics.x"}],
          "published": [{"run": "b", "metric": "m", "value": 1}]}, "names run"),
        ({"title": "t", "figure": "lines", "runs": [{"label": "a", "scenario": "x"}], "metrics": [{"label": "m", "metric": "metrics.x"}]},
         "needs a numeric `x`"),
        ({"title": "t", "runs": [{"label": "a", "scenario": "x"}, {"label": "a", "scenario": "y"}],
          "metrics": [{"label": "m", "metric": "metrics.x"}]}, "unique"),
        ({"title": "t", "runs": [{"label": "a", "scenario": "x", "metrics": {"zz": "metrics.y"}}],
          "metrics": [{"label": "m", "metric": "metrics.x"}]}, "unknown metrics"),
    ],
)
def test_invalid_study_definitions_name_the_problem(tmp_path, section, needle):
    with pytest.raises(ScenarioError, match=needle):
        load_study(_study(tmp_path, [section]))


def test_unknown_study_is_a_clear_error():
    result = CliRunner().invoke(app, ["reproduce", "nosuch"])
    assert result.exit_code == 2 and "expected a study name" in result.stderr


def test_a_power_trace_spans_each_runs_own_simulated_time():
    """The SSD power-over-time figure: each run's bins cover [0, its simulated seconds], so its x span is read from the
    run (trace_span_metric); the bins' mean x span is the drive's energy (conservation of the resampling)."""
    study, path = load_study("ssd_power_states")
    section = study.sections[0]
    result = run_section(section, path.parent)
    for run in section.runs:
        cell = result.values[(run.label, "SSD power (W)")]
        document = run_scenario_for(path.parent / run.scenario, run.set)
        assert cell.span == pytest.approx(document["metrics"]["simulated_seconds"])
        assert cell.predicted * cell.span == pytest.approx(document["energy"]["components"]["ssd0"]["energy_J"], rel=1e-9)


def test_the_power_trace_figure_and_csv_are_in_seconds_of_each_run(tmp_path, monkeypatch):
    """Issue 36 item 20: the power-trace figure plotted bins against their index on an axis labelled seconds (0-240 for a
    139.8 s run) and its CSV had no time column. Now the CSV's `trace_x` holds each bin's time, ending at the run's
    simulated seconds, and the figure's lines span the same x (read back from the drawn Line2D).
    Oracle: metrics.simulated_seconds of an independent run of the same scenario."""
    from iowatt.commands.reproduce import section_figure

    study, path = load_study("ssd_power_states")
    section = study.sections[0]
    result = run_section(section, path.parent)
    rows = [r for r in comparison_rows(result) if r["kind"] == "data"]
    drawn: dict[str, list[float]] = {}
    real_plot = figures._draw_trace

    def spy(data):
        fig = real_plot(data)
        drawn.update({line.get_label(): list(line.get_xdata()) for line in fig.axes[0].get_lines()})
        return fig

    monkeypatch.setattr(figures, "_draw_trace", spy)
    if figures.plots_available():
        figures.draw_study_figure(section_figure(result), tmp_path / "trace")
    for run, row in zip(section.runs, rows, strict=True):
        seconds = run_scenario_for(path.parent / run.scenario, run.set)["metrics"]["simulated_seconds"]
        times = json.loads(row["trace_x"])
        assert len(times) == len(json.loads(row["trace"])) and times[-1] == pytest.approx(seconds)
        assert times == sorted(times) and 0 < times[0] < seconds / 10
        if figures.plots_available():
            assert max(drawn[run.label]) == pytest.approx(seconds)


def run_scenario_for(scenario: Path, overrides: dict) -> dict:
    from iowatt.scenarios.run import run_scenario

    return run_scenario(load(scenario.resolve(), [f"{k}={v}" for k, v in overrides.items()]))[0]
