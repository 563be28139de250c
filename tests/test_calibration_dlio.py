"""`iowatt collect dlio`: ingest a real DLIO output folder (tests/fixtures/dlio, see its README), and run DLIO when installed.

Oracle: DLIO's own arithmetic on its own files.  An epoch's throughput in
summary.json is the sum of the ranks' block throughputs in {rank}_output.json,
its accelerator utilisation the mean of the ranks', and the summary's mean is
the mean over epochs; the bundle's tables must reproduce those.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from iowatt.calibration import bundle
from typer.testing import CliRunner

from iowatt.cli import app

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "dlio"
RUN = FIXTURES / "unet3d_tiny"
runner = CliRunner()


def invoke(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dlio") / "bundle"
    result = invoke("collect", "dlio", "--ingest", RUN, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_ingest_keeps_the_raw_folder_untouched_and_checksummed(ingested: Path):
    manifest = bundle.load(ingested)  # verifies every sha256
    assert manifest.kind == "dlio" and manifest.target["ranks"] == 2 and manifest.target["num_accelerators"] == 2
    for source in RUN.rglob("*"):
        if source.is_file():
            copy = ingested / "raw" / source.relative_to(RUN)
            assert copy.read_bytes() == source.read_bytes(), source.name
    assert manifest.plan == "unet3d"
    assert manifest.jobs[0].params["workload"]["reader"]["batch_size"] == 2


def test_epoch_table_is_dlios_per_epoch_series(ingested: Path):
    summary = json.loads((RUN / "summary.json").read_text())["metric"]
    epochs = bundle.read_csv(ingested / "tables" / "epochs.csv")
    assert [int(r["epoch"]) for r in epochs] == [1, 2]
    for i, row in enumerate(epochs):
        assert float(row["train_throughput_samples_per_second"]) == pytest.approx(summary["train_throughput_samples_per_second"][i])
        assert float(row["train_au_percentage"]) == pytest.approx(summary["train_au_percentage"][i])
        assert float(row["epoch_duration"]) > 0 and int(row["blocks"]) == 1
    flat = bundle.read_csv(ingested / "tables" / "summary.csv")[0]
    # the summary mean is the mean over epochs
    mean = sum(float(r["train_throughput_samples_per_second"]) for r in epochs) / len(epochs)
    assert float(flat["train_throughput_mean_samples_per_second"]) == pytest.approx(mean)
    assert float(flat["train_au_mean_percentage"]) == pytest.approx(73.47325951705723)


def test_rank_table_adds_up_to_the_summary(ingested: Path):
    summary = json.loads((RUN / "summary.json").read_text())["metric"]
    ranks = bundle.read_csv(ingested / "tables" / "ranks.csv")
    assert sorted({int(r["rank"]) for r in ranks}) == [0, 1]
    for epoch in (1, 2):
        mine = [r for r in ranks if int(r["epoch"]) == epoch]
        throughput = sum(float(r["throughput_samples_per_second"]) for r in mine)
        au = sum(float(r["au_percentage"]) for r in mine) / len(mine)
        assert throughput == pytest.approx(summary["train_throughput_samples_per_second"][epoch - 1], rel=1e-9)
        assert au == pytest.approx(summary["train_au_percentage"][epoch - 1], rel=1e-9)
        for row in mine:
            # 16 files / batch 2 / 2 ranks = 4 steps per epoch, 0.05 s emulated compute each
            assert int(row["steps"]) == 4
            assert float(row["compute_seconds"]) == pytest.approx(4 * 0.05)


def _broken_copy(tmp_path: Path, damage) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(RUN, copy)
    damage(copy)
    return copy


@pytest.mark.parametrize(
    ("damage", "needle"),
    [
        (lambda d: (d / "summary.json").unlink(), "summary.json is missing"),
        (lambda d: (d / "summary.json").write_text('{"start": "x"}'), "no `metric`"),
        (lambda d: (d / "summary.json").write_text("{trunc"), "not valid JSON"),
        (lambda d: (d / "1_output.json").write_text('{"1": 5}'), "1_output.json"),
        (lambda d: (d / "per_epoch_stats.json").write_text("[1,"), "per_epoch_stats.json"),
    ],
)
def test_broken_dlio_folder_is_refused_and_nothing_written(tmp_path: Path, damage, needle: str):
    source = _broken_copy(tmp_path, damage)
    out = tmp_path / "out"
    refused(invoke("collect", "dlio", "--ingest", source, "--out", out), needle)
    assert not out.exists()


def test_bad_dlio_options(tmp_path: Path):
    refused(invoke("collect", "dlio", "--out", tmp_path / "o"), "exactly one of --ingest")
    refused(invoke("collect", "dlio", "--ingest", tmp_path / "none", "--out", tmp_path / "o"), "no such directory")
    out = tmp_path / "full"
    out.mkdir()
    (out / "x").write_text("x")
    refused(invoke("collect", "dlio", "--ingest", RUN, "--out", out), "not empty")


@pytest.mark.skipif(shutil.which("dlio_benchmark") is not None, reason="dlio_benchmark is installed: the live test below runs instead")
def test_run_without_dlio_says_how_to_install_it(tmp_path: Path):
    refused(invoke("collect", "dlio", "--config", FIXTURES / "unet3d_tiny_workload.yaml", "--out", tmp_path / "o"), "pip install dlio_benchmark")


@pytest.mark.skipif(shutil.which("dlio_benchmark") is None, reason="dlio_benchmark is not on PATH (see tests/fixtures/dlio/README.md to install it)")
def test_live_dlio_run_becomes_a_bundle(tmp_path: Path):
    out = tmp_path / "bundle"
    result = invoke(
        "collect", "dlio", "--config", FIXTURES / "unet3d_tiny_workload.yaml", "--out", out, "--override", f"++workload.dataset.data_folder={tmp_path / 'data'}"
    )
    assert result.exit_code == 0, result.output
    manifest = bundle.load(out)
    assert manifest.kind == "dlio"
    epochs = bundle.read_csv(out / "tables" / "epochs.csv")
    assert len(epochs) == 2 and all(float(r["train_throughput_samples_per_second"]) > 0 for r in epochs)
    assert not (tmp_path / "bundle.dlio-run").exists()


def test_ranks_are_launched_unbound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two ranks start under mpirun with --bind-to none: OpenMPI would otherwise bind each rank (and the loader workers
    it forks) to one core, while MLPerf Storage's MPICH launch binds nothing and the model shares the host's cores."""
    import subprocess

    from iowatt.calibration import dlio

    seen: list[list[str]] = []
    monkeypatch.setattr(dlio.shutil, "which", lambda name, path=None: f"/usr/bin/{name}")
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: (seen.append(list(args)), subprocess.CompletedProcess(args, 0, "", ""))[1])
    config = tmp_path / "workload" / "w.yaml"
    config.parent.mkdir()
    config.write_text("model: w\n")
    dlio.launch(config, tmp_path / "run", ranks=2)
    args = seen[0]
    assert args[0] == "/usr/bin/mpirun" and args[args.index("--bind-to") + 1] == "none" and args[args.index("-np") + 1] == "2"
