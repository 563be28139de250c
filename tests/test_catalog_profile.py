"""`device: profile:PATH` and the user catalog folder ($IOWATT_CATALOG_DIR).

Oracle: a profile that holds exactly a catalog drive's values must give the same
prediction as the catalog name, byte for byte in the metrics.
"""

from __future__ import annotations

import json

import yaml
from iowatt.models import catalog
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()
DEMO = "checkpoint_llama405b_8gpu"


def _profile_of(name: str, path, entry_name: str = "my-drive") -> None:
    spec = catalog.lookup("ssd", name).spec.model_dump(mode="json", exclude={"name"})
    path.write_text(yaml.safe_dump({"kind": "ssd", "entries": {entry_name: spec}}, sort_keys=False))


def _metrics(*args: str, env: dict[str, str] | None = None) -> dict:
    result = runner.invoke(app, ["run", DEMO, "--format", "json", *args], env=env)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["metrics"]


def test_profile_path_predicts_like_the_catalog_entry_it_copies(tmp_path):
    profile = tmp_path / "p.yaml"
    _profile_of("micron-9550-pro", profile)
    by_name = _metrics("--set", "storage.device=micron-9550-pro", "--set", "storage.power_state=PS0")
    by_profile = _metrics("--set", f"storage.device=profile:{profile}", "--set", "storage.power_state=PS0")
    assert by_profile == by_name


def test_user_catalog_folder_makes_a_profile_usable_by_name(tmp_path):
    _profile_of("micron-9550-pro", tmp_path / "mine.yaml", entry_name="lab-disk")
    by_name = _metrics("--set", "storage.device=micron-9550-pro", "--set", "storage.power_state=PS0")
    installed = _metrics("--set", "storage.device=lab-disk", "--set", "storage.power_state=PS0", env={"IOWATT_CATALOG_DIR": str(tmp_path)})
    assert installed == by_name


def test_bad_profiles_exit_2_naming_the_problem(tmp_path):
    missing = runner.invoke(app, ["run", DEMO, "--set", f"storage.device=profile:{tmp_path / 'none.yaml'}"])
    assert missing.exit_code == 2 and "found no such file" in missing.stderr and "Traceback" not in missing.stderr
    foreign = tmp_path / "foreign.yaml"
    foreign.write_text("hello: world\n")
    bad = runner.invoke(app, ["run", DEMO, "--set", f"storage.device=profile:{foreign}"])
    assert bad.exit_code == 2 and "expected a mapping with `kind` and `entries`" in bad.stderr
    two = tmp_path / "two.yaml"
    spec = catalog.lookup("ssd", "micron-9550-pro").spec.model_dump(mode="json", exclude={"name"})
    two.write_text(yaml.safe_dump({"kind": "ssd", "entries": {"a": spec, "b": spec}}))
    many = runner.invoke(app, ["run", DEMO, "--set", f"storage.device=profile:{two}"])
    assert many.exit_code == 2 and "expected exactly one ssd entry, found 2" in many.stderr


def test_a_profile_whose_writes_queue_runs_the_law_it_was_validated_with():
    # oracle: calibration.model.predict is the law `iowatt validate --bundle` checks; closed_loop is what
    # `iowatt run` uses.  With writes_queue in the spec the two must agree for writes and mixes too.
    import pytest
    from iowatt.calibration.model import FILL, OVERWRITE, Job, predict
    from iowatt.models import ssd

    base = catalog.lookup("ssd", "micron-7450-pro").spec
    spec = base.model_copy(update={"writes_queue": True})
    for rw, f in (("randwrite", 0.0), ("randrw", 0.7), ("write", 0.0)):
        job = Job(id=rw, rw=rw, bs=16384, iodepth=16, numjobs=2, read_fraction=f)
        bw, _latency = ssd.closed_loop(spec, job.bs, job.inflight, f, job.pattern, overwrite=OVERWRITE, fill=FILL)
        assert bw == pytest.approx(predict(spec, job, writes_queue=True)["bw_Bps"], rel=1e-9)
        # queueing writes can only slow a write-heavy job down at the same depth
        buffered, _ = ssd.closed_loop(base, job.bs, job.inflight, f, job.pattern, overwrite=OVERWRITE, fill=FILL)
        assert bw <= buffered * (1 + 1e-12)


def test_catalog_show_reads_a_profile_as_docs_calibration_md_says(tmp_path):
    """Issue 18 item 12: docs/calibration.md's `iowatt catalog show profile:my-disk.yaml`."""
    profile = tmp_path / "my-disk.yaml"
    _profile_of("micron-9550-pro", profile, entry_name="my-disk")
    result = runner.invoke(app, ["catalog", "show", f"profile:{profile}", "--format", "json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["name"] == "my-disk" and shown["values"]["seq_read_MBps"] == catalog.lookup("ssd", "micron-9550-pro").spec.seq_read_MBps
