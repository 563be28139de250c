"""Measured drive power by operation (scenarios/library/power_reviews/, the `power.*` rows of the visible table).

The rows are held out: no catalog value or constant is fitted on them, and their prediction cannot see the
measured figure.  The physics check names its oracle: the program bandwidth of the NAND array, shared by the host's
writes and garbage collection's copies (the drive's own 128 KiB sequential-write rate, S08).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.models.ssd import SSDSpec
from iowatt.models.ssd_power import power_model
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario
from iowatt.scenarios.validation import evaluate_table, read_table
from iowatt.scenarios.validation_roles import all_records, fitted_links, role_of
from iowatt.scenarios.validation_runs import RunCache

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "scenarios" / "validation" / "published.yaml"
POWER_ROW = "power.m6550.ps1.randwrite16k.power"


def _power_rows() -> list[dict[str, object]]:
    rows = yaml.safe_load(TABLE.read_text())["measurements"]
    return [r for r in rows if str(r["id"]).startswith("power.")]


def test_the_power_rows_are_held_out():
    """No calibrated value names a power row in its `fitted_on`, and the 6550 ION's power fields cite only the
    points they rest on (its 128K sequential read and write and the two read points of its command energy)."""
    links = fitted_links(all_records())
    rows = _power_rows()
    assert rows
    assert all(role_of(str(r["id"]), None, links) == "predicted" for r in rows)
    entry = next(e for e in catalog.entries("ssd") if e.name == "micron-6550-ion")
    for field in ("active_read_W", "active_write_W", "energy_per_io_uJ"):
        prov = entry.provenance[field]
        assert "random write" not in f"{prov.src} {prov.note}".lower(), field


@pytest.fixture(scope="module")
def cache() -> RunCache:
    return RunCache()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(measured=st.floats(min_value=1.0, max_value=40.0, allow_nan=False))
def test_the_prediction_does_not_see_the_measured_value(tmp_path_factory, cache, measured):
    """Whatever the row's measured watts, the predicted watts are the same (the model passes through no held-out
    point by construction); only the error changes, as (predicted - measured) / measured."""
    (row,) = [dict(r) for r in _power_rows() if r["id"] == POWER_ROW]
    row["scenario"] = str((TABLE.parent / str(row["scenario"])).resolve())
    row["measured"] = measured
    path = tmp_path_factory.mktemp("held_out") / "table.yaml"
    path.write_text(yaml.safe_dump({"measurements": [row]}))
    (result,) = evaluate_table(read_table(path), path.parent, cache=cache).rows
    baseline = pytest.approx(19.14, rel=0.02)  # the prediction with the table's own measured value (17.5 W)
    assert result.predicted == baseline
    assert result.error == pytest.approx((result.predicted - measured) / measured)


def test_steady_state_random_writes_share_the_program_bandwidth_with_gc():
    """Oracle: the array's program bandwidth, the drive's 8.2 GB/s sequential-write rate (S08, WA 1), is what the
    host's 16K random writes and garbage collection's copies share on a drive full of valid data: the NAND bytes
    programmed per second (from the program energy the run metered) come to that rate, and the host gets 1 / WA."""
    row = next(r for r in _power_rows() if r["id"] == POWER_ROW)
    sets = [f"{k}={v}" for k, v in dict(row["set"]).items()]
    result = run_scenario(load(TABLE.parent / str(row["scenario"]), sets))[0]
    parts = result["energy"]["drives"]["ssd0"]["energy_J_by_part"]
    seconds = sum(parts.values()) / result["metrics"]["ssd_mean_power_W_per_drive"]  # the parts add up to the energy
    spec = catalog.drive_spec("micron-6550-ion")
    assert isinstance(spec, SSDSpec)
    model = power_model(spec)
    programmed_Bps = parts["nand_program"] / seconds / model.program_J_per_byte
    assert programmed_Bps == pytest.approx(8.2e9, rel=0.02)
    host_Bps = result["metrics"]["bw_bytes"]
    assert 1.0 < programmed_Bps / host_Bps < 10.0  # a write amplification, not a second workload
