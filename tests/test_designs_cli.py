"""`iowatt designs`: the three save designs of one scenario side by side, the timeline data and its figure."""

from __future__ import annotations

import itertools
import json

import pytest
import yaml
from iowatt.scenarios import checkpoint_designs as cd
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()
SCENARIO = {
    "name": "designs_cli",
    "seed": 1,
    "system": {
        "server": {"cpu": "amd-epyc-9654", "sockets": 2, "memory": "512 GB"},
        "gpus": {"model": "nvidia-h100-sxm", "count": 8},
        "storage": {"kind": "nfs", "export": {"kind": "local", "device": "micron-7450-pro", "count": 4}, "fabric": "ib-ndr"},
    },
    "workload": {"kind": "checkpoint", "size": "200 GB", "ranks": 8, "count": 2, "interval": "2 min", "copy_from_gpu": True,
                 "save": {"mode": "blocking", "stage": {"kind": "local", "device": "micron-7450-pro", "count": 2}}},
}


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "designs.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


def test_timeline_of_one_interval_accounts_for_the_training_time(scenario):
    """Oracle: conservation of time.  The training lane is compute up to the checkpoint, the wait and the
    stall, then compute again, without gaps or overlaps; the stall bar is the run's stall; the storage
    lane ends when the checkpoint is durable."""
    for run in cd.compare(scenario, []):
        training = sorted((s for s in run.segments if s.lane == "training"), key=lambda s: s.start_s)
        for before, after in itertools.pairwise(training):
            assert after.start_s == pytest.approx(before.end_s, abs=1e-9)
        stall = sum(s.end_s - s.start_s for s in training if s.phase in ("wait", "stall"))
        assert stall == pytest.approx(run.metrics["checkpoint_stall_last_seconds"], rel=1e-9)
        storage_end = max(s.end_s for s in run.segments if s.lane == "storage")
        assert storage_end == pytest.approx(run.metrics["checkpoint_durable_after_last_seconds"], rel=1e-9)
        phases = {s.phase for s in run.segments if s.lane == "storage"}
        assert phases == {"blocking": {"writeback"}, "async": {"write", "writeback"}, "tiered": {"stage", "flush", "drain"}}[run.mode]


def test_cli_designs_json_and_plot(scenario, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "timeline.png"
    result = runner.invoke(app, ["designs", str(scenario), "--nodes", "8", "--node-mtbf-hours", "5000", "--restart-seconds", "300",
                                 "--local-recovery-share", "0.3", "--format", "json", "--plot", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["design"] for d in data["designs"]] == ["blocking", "async", "tiered"]
    assert all(0.0 < d["goodput"] <= 1.0 and d["timeline"] for d in data["designs"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "blocking,fast"], "--modes"),
        (["--nodes", "8"], "--nodes and --node-mtbf-hours"),
        (["--nodes", "8", "--node-mtbf-hours", "100", "--local-recovery-share", "2"], "local-recovery-share"),
        (["--set", "workload.copy_from_gpu=false"], "workload.save"),
    ],
)
def test_cli_designs_bad_input_is_one_message_and_exit_2(scenario, args, message):
    result = runner.invoke(app, ["designs", str(scenario), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
