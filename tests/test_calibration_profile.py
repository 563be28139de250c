"""Calibrated profiles: provenance, loading, power fits, and agreement with the simulator's own fio prediction.

Oracles: the parameters the synthetic data was generated with (power fit),
the catalog's own parser (a profile is a valid catalog file), and the
simulator: `iowatt run` of a fio job on the profile's SSDSpec must give what
calibration.model predicts, because both are models.ssd's law.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from iowatt.calibration import fit, profile
from iowatt.calibration.model import Job, predict
from iowatt.models import catalog
from typer.testing import CliRunner

from iowatt.cli import app

BASE = catalog.lookup("ssd", "micron-7450-pro")
FITTED = {"seq_read_MBps": 950.0, "rand_read_iops": 60000.0, "read_latency_us": 70.0, "seq_write_MBps": 2800.0, "write_latency_us": 110.0}
runner = CliRunner()


def _result(power: dict | None = None) -> fit.FitResult:
    values = dict(FITTED)
    return fit.FitResult(
        values=values,
        informed=list(FITTED),
        not_informed={"rand_write_iops": "random writes to fio's fresh test file do not reach the steady-state garbage collection it describes"},
        rel_stderr={k: 0.05 for k in FITTED},
        residuals=[{"job": "a", "error_pct": 1.0}],
        cost=1.0,
        dof=10,
        s=0.4,
        spec=BASE.spec.model_copy(update=values),
        power=power or {},
    )


MANIFEST = SimpleNamespace(id="abc123", created="2026-11-23T12:00:00+00:00", target={"device": "vda", "model": None, "filesystem": "ext4"})


def _write(tmp_path: Path, power: dict | None = None) -> Path:
    document = profile.build("vm-disk", BASE.name, "/b", MANIFEST, _result(power), ["h1"], ["t1", "t2"], 0, 0.5)
    path = tmp_path / "vm-disk.yaml"
    path.write_text(profile.dump(document))
    return path


def test_profile_is_a_catalog_file_with_provenance(tmp_path: Path):
    path = _write(tmp_path)
    raw = yaml.safe_load(path.read_text())
    (entry,) = catalog._parse_file(path)  # the catalog's own parser accepts it
    assert entry.kind == "ssd" and entry.name == "vm-disk"
    for name, value in FITTED.items():
        assert getattr(entry.spec, name) == pytest.approx(value)
        assert entry.provenance[name].p == "calibrated" and "abc123" in entry.provenance[name].src
        assert "5.00%" in raw["entries"]["vm-disk"][name]["note"]
    # not informed: the base value and the base's provenance kind, with the reason
    assert entry.spec.rand_write_iops == BASE.spec.rand_write_iops
    assert entry.provenance["rand_write_iops"].p == BASE.provenance["rand_write_iops"].p
    assert "not informed" in raw["entries"]["vm-disk"]["rand_write_iops"]["note"]
    assert entry.spec.model.startswith("vda (calibrated from /b")
    values, calibration, _ = profile.load(path)
    assert calibration["writes_queue"] is True and calibration["holdout"]["jobs"] == ["h1"]
    assert values["seq_read_MBps"] == pytest.approx(950.0)


def test_power_fit_recovers_the_coefficients_it_was_made_with(tmp_path: Path):
    # oracle: P = 40 W + 2.0 nJ/B x read + 6.0 nJ/B x write, exactly
    p0, e_r, e_w = 40.0, 2.0e-9, 6.0e-9
    jobs = []
    for i, (r, w) in enumerate([(1e9, 0), (5e8, 0), (0, 1e9), (0, 2e9), (7e8, 3e8), (1e8, 1e8)]):
        jobs.append(Job(f"j{i}", "randrw", 4096.0, 1, 1, 0.5, bw_Bps=r + w, read_bw_Bps=r, write_bw_Bps=w, power={"ipmi_system_W": p0 + e_r * r + e_w * w}))
    fitted = fit.fit_power(jobs, "ipmi_system_W")
    assert fitted is not None
    assert fitted["P0_W"] == pytest.approx(p0) and fitted["read_J_per_byte"] == pytest.approx(e_r) and fitted["write_J_per_byte"] == pytest.approx(e_w)
    assert fit.fit_power(jobs[:3], "ipmi_system_W") is None  # too few jobs: no power fit, not a guess
    path = _write(tmp_path, fitted)
    (entry,) = catalog._parse_file(path)
    # active power at the fitted ceiling = base idle + incremental energy per byte x ceiling
    assert entry.spec.active_read_W == pytest.approx(BASE.spec.idle_W + e_r * 950e6)
    assert entry.spec.active_write_W == pytest.approx(BASE.spec.idle_W + e_w * 2800e6)
    assert entry.provenance["active_read_W"].p == "calibrated"


def test_without_power_the_power_fields_keep_the_base(tmp_path: Path):
    (entry,) = catalog._parse_file(_write(tmp_path))
    for name in ("idle_W", "active_read_W", "active_write_W"):
        assert getattr(entry.spec, name) == getattr(BASE.spec, name)
        assert entry.provenance[name].p != "calibrated"


@pytest.mark.parametrize(
    ("job", "rw"),
    [
        (Job("a", "randread", 4096.0, 16, 1, 1.0), "randread"),
        (Job("b", "read", 1048576.0, 4, 1, 1.0), "read"),
        (Job("c", "randread", 65536.0, 2, 2, 1.0), "randread"),
    ],
)
def test_simulator_fio_prediction_equals_the_calibration_law(tmp_path: Path, job: Job, rw: str):
    """`iowatt run` (the fio workload on the flow engine) on the profile's fields = calibration.model's prediction."""
    spec = BASE.spec.model_copy(update=FITTED)
    scenario = {
        "name": "profile-check",
        "seed": 1,
        "system": {
            "server": {"cpu": "intel-xeon-e5-2680-v3", "sockets": 1, "memory": "64 GB"},
            "gpus": {"count": 0},
            "storage": {"device": {"base": BASE.name, **FITTED}, "count": 1},
        },
        "workload": {
            "kind": "fio", "rw": rw, "bs": int(job.bs), "iodepth": job.iodepth, "numjobs": job.numjobs, "size": "128M", "runtime": "2 s", "time_based": True
        },
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = runner.invoke(app, ["run", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["bw_bytes"] == pytest.approx(predict(spec, job)["bw_Bps"], rel=1e-6)
