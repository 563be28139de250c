"""Every assumed number in the device catalog carries a plausible range, and the loader enforces it.

Oracles: the issue's rule (an `assumed` value carries low, high, shape and the evidence for each end; a value lies
inside its own range; a list's or mapping's range is factors, so 1 lies inside it), checked by walking every entry,
every default and every module PROVENANCE record; and published datasheet / measurement pairs of catalog drives
(reference devices.yaml, StorageReview reviews), none used in any fit, for the source spreads.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.models.catalog.defaults import DEFAULT_PROVENANCE
from iowatt.models.provenance import Provenance, numbers_in, range_problem, unwrap
from iowatt.models.uncertainty import SOURCE_SPREAD, range_of
from typer.testing import CliRunner

from iowatt.cli import app


def _value_at(values: dict, dotted: str) -> object:
    for part in dotted.split("."):
        values = values[part]
    return values


def test_every_assumed_catalog_value_has_a_range_it_lies_in() -> None:
    """Oracle: the issue's rule, on every entry of every family (defaults included, as an entry's records)."""
    checked = 0
    for entry in catalog.entries():
        values = entry.spec.model_dump(mode="json")
        for field, prov in entry.provenance.items():
            value = _value_at(values, field)
            if prov.p == "assumed" and numbers_in(value):
                assert prov.low is not None and prov.range_note.strip(), f"{entry.name}.{field} has no range"
                checked += 1
            assert range_problem(value, prov) is None, f"{entry.name}.{field}: {range_problem(value, prov)}"
    assert checked > 150  # ~164 assumed values in the five files plus the defaults entries use


def test_every_default_and_module_record_has_a_range() -> None:
    """Oracle: the issue's rule, on the defaults an entry may leave out and on the model modules' assumed records."""
    from iowatt.models import compute, ssd_power
    from iowatt.simulator.storage import power_policy

    for kind, records in DEFAULT_PROVENANCE.items():
        for field, prov in records.items():
            assert prov.low is not None and prov.range_note, f"{kind} default {field} has no range"
    for module in (compute, ssd_power, power_policy):
        for name, prov in module.PROVENANCE.items():
            if prov.p == "assumed":
                assert prov.low is not None and prov.range_note, f"{module.__name__}.{name} has no range"
                assert range_problem(getattr(module, name), prov) is None, f"{module.__name__}.{name}"


def test_every_assumed_line_of_the_yaml_files_names_its_range() -> None:
    """Oracle: the files themselves, read without the loader (an assumed value nested where the walk above could miss it)."""
    for path in sorted(catalog.CATALOG_DIR.glob("*.yaml")):
        for entry_name, fields in yaml.safe_load(path.read_text())["entries"].items():
            _, record = unwrap({k: v for k, v in fields.items() if k != "aliases"})
            for field, prov in record.items():
                if prov.p == "assumed":
                    assert prov.low is not None, f"{path.name}: {entry_name}.{field}"


def _write_entry(path, **overrides) -> None:
    spec = catalog.lookup("ssd", "micron-9550-pro").spec.model_dump(mode="json", exclude={"name"})
    path.write_text(yaml.safe_dump({"kind": "ssd", "entries": {"lab-disk": {**spec, **overrides}}}, sort_keys=False))


@pytest.mark.parametrize(("idle", "expected"), [
    ({"v": 5.0, "p": "assumed", "note": "a guess"}, "idle_W: an assumed value needs its plausible range"),
    ({"v": 9.0, "p": "assumed", "note": "a guess", "low": 3, "high": 8, "range_note": "class"}, "idle_W: expected low <= value <= high, found value 9.0"),
])
def test_profiles_follow_the_rule_and_the_message_names_entry_and_field(tmp_path, idle, expected) -> None:
    """Oracle: the rule, through both doors a user's profile comes in (profile:PATH and $IOWATT_CATALOG_DIR)."""
    _write_entry(tmp_path / "mine.yaml", idle_W=idle)
    with pytest.raises(catalog.CatalogError, match="entry 'lab-disk' is invalid") as error:
        catalog.lookup("ssd", f"profile:{tmp_path / 'mine.yaml'}")
    assert expected in str(error.value)
    result = CliRunner().invoke(app, ["run", "checkpoint_llama405b_8gpu", "--set", "storage.device=lab-disk"],
                                env={"IOWATT_CATALOG_DIR": str(tmp_path)})
    assert result.exit_code == 2 and expected in result.stderr and "Traceback" not in result.stderr


def test_a_profile_of_calibrated_and_measured_values_needs_no_range(tmp_path) -> None:
    """Oracle: the rule binds assumed values only (a fit's value may come without stderr)."""
    _write_entry(tmp_path / "fit.yaml", idle_W={"v": 4.1, "p": "calibrated", "src": "b", "fitted_on": ["b"]},
                 seq_read_MBps={"v": 6100, "p": "measured", "src": "fio"})
    assert catalog.lookup("ssd", f"profile:{tmp_path / 'fit.yaml'}").spec.idle_W == 4.1


ranged = st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e6), st.floats(-2e6, 2e6))


@given(ranged)
def test_range_problem_flags_exactly_the_values_outside(case: tuple[float, float, float]) -> None:
    """Oracle: the definition of an interval (a number, and a list whose range is factors on its numbers)."""
    low, width, value = case
    prov = Provenance(p="assumed", note="n", low=low, high=low + width, range_note="r")
    assert (range_problem(value, prov) is None) == (low <= value <= low + width)
    assert (range_problem([{"max_W": value}], prov) is None) == (low <= 1.0 <= low + width)
    assert range_problem("text", Provenance(p="assumed", note="n")) is None


# (datasheet, measured, where): catalog drives measured against their own datasheet figure, steady state
DATASHEET_VS_MEASURED = [
    (12000, 12700, "6550 ION 128K read, S08"), (7000, 7500, "P5336 61.44 TB 128K read, S08"),
    (3300, 3200, "P5336 61.44 TB 128K write, S08"), (10000, 10957.9, "9550 MAX 128K write, StorageReview PS1030 review"),
    (2700e3, 2814e3, "CM7-R 4K random read, Kioxia lab S17"),
]


@pytest.mark.parametrize(("sheet", "measured", "where"), DATASHEET_VS_MEASURED)
def test_datasheet_spread_covers_reviews_of_catalog_drives(sheet: float, measured: float, where: str) -> None:
    """Oracle: independent measurements of catalog drives (docs/uncertainty.md, 'Where ranges come from')."""
    low, high = SOURCE_SPREAD["datasheet"]
    assert low <= measured / sheet <= high, where


def test_measured_spread_covers_repeated_readings() -> None:
    """Oracle: repeated readings of one quantity (G12 nvidia-smi idle at P0, G13 bandwidthTest, S08 PS1 power)."""
    low, high = SOURCE_SPREAD["measured"]
    for readings in ([68, 69, 70, 73], [46, 51], [27, 29], [25.7, 26.2], [17.5, 17.9]):
        mean = sum(readings) / len(readings)
        assert all(low <= r / mean <= high for r in readings), readings


def test_catalog_show_prints_each_range() -> None:
    """Oracle: the entry's own records (micron-6550-ion idle_W 3..7 W; a datasheet value takes its source's spread)."""
    runner = CliRunner()
    document = json.loads(runner.invoke(app, ["catalog", "show", "micron-6550-ion", "-f", "json"]).stdout)
    ranges = document["ranges"]
    assert (ranges["idle_W"]["low"], ranges["idle_W"]["high"], ranges["idle_W"]["text"]) == (3.0, 7.0, "[3, 7]")
    assert ranges["capacity_TB"]["text"] == "exact"
    sheet = range_of(Provenance(p="datasheet", src="S08"), 12000.0)
    assert sheet is not None and (ranges["seq_read_MBps"]["low"], ranges["seq_read_MBps"]["high"]) == (sheet.low, sheet.high)
    table = runner.invoke(app, ["catalog", "show", "micron-6550-ion", "-f", "table"], env={"COLUMNS": "220"})
    assert table.exit_code == 0 and "[3, 7]" in table.stdout and "x[0.95, 1.05]" in table.stdout
