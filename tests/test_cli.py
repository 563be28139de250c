"""The command line as a user meets it: results, formats, and every class of bad input.

Bad input must end in one message on stderr naming the field, what was
expected and what was found; exit status 2; no traceback; nothing written.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from iowatt.cli import app

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios" / "library"
DEMO = str(LIBRARY / "checkpoint_llama405b_8gpu.yaml")
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_run_json_document_has_the_promised_sections():
    result = invoke("run", DEMO, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) >= {"scenario", "metrics", "energy", "provenance", "checkpoint", "engine"}
    metrics = doc["metrics"]
    # every metric carries its unit in its name (or is a count)
    for name in metrics:
        assert re.search(r"(_seconds|_GB|_Wh|_J|_W|_W_per_drive|_GB_per_second|_count|_percentage|_MB_per_second)$", name), name
    assert metrics["checkpoint_size_GB"] == pytest.approx(415.0)
    # oracle: throughput x time = size (conservation)
    assert metrics["save_checkpoint_io_mean_GB_per_second"] * metrics["save_checkpoint_duration_mean_seconds"] == pytest.approx(415.0)
    assert doc["provenance"]["seed"] == 1
    assert doc["energy"]["system_J"] == pytest.approx(sum(c["energy_J"] for c in doc["energy"]["components"].values()))
    assert doc["scenario"]["system"]["storage"]["power_state"] == 1


def test_same_scenario_and_seed_give_byte_identical_json():
    first = invoke("run", DEMO, "--format", "json")
    second = invoke("run", DEMO, "--format", "json")
    assert first.exit_code == 0
    assert first.stdout == second.stdout


def test_set_overrides_and_short_storage_paths():
    base = json.loads(invoke("run", DEMO, "-f", "json").stdout)
    capped = json.loads(invoke("run", DEMO, "-f", "json", "--set", "storage.power_state=PS7").stdout)
    # a 10 W cap (PS7) can only slow the drive down, and lowers its peak power
    assert capped["metrics"]["save_checkpoint_duration_mean_seconds"] > base["metrics"]["save_checkpoint_duration_mean_seconds"]
    assert capped["energy"]["components"]["ssd0"]["peak_power_W"] <= 10.0 + 1e-9
    bigger = json.loads(invoke("run", DEMO, "-f", "json", "--set", "workload.size=830 GB").stdout)
    assert bigger["metrics"]["checkpoint_size_GB"] == pytest.approx(830.0)


def test_csv_and_output_file_by_extension(tmp_path):
    out = tmp_path / "r.csv"
    result = invoke("run", DEMO, "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert float(rows[0]["checkpoint_size_GB"]) == pytest.approx(415.0)
    js = tmp_path / "r.json"
    assert invoke("run", DEMO, "-o", str(js)).exit_code == 0
    assert json.loads(js.read_text())["metrics"]["checkpoint_size_GB"] == pytest.approx(415.0)


def test_table_output_names_metrics_and_energy():
    result = invoke("run", DEMO, "--format", "table")
    assert result.exit_code == 0
    assert "save_checkpoint_duration_mean_seconds" in result.stdout and "ssd0" in result.stdout


def test_dry_run_prints_the_resolved_scenario():
    result = invoke("run", DEMO, "--dry-run", "--set", "storage.power_state=PS0")
    assert result.exit_code == 0
    resolved = yaml.safe_load(result.stdout)
    assert resolved["system"]["storage"]["power_state"] == 0
    assert resolved["workload"]["size"] == pytest.approx(415e9)
    assert resolved["system"]["server"]["base_power"] > 0  # defaults filled in


def test_schema_is_json_schema_with_the_workload_union():
    result = invoke("schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "iowatt scenario"
    assert "workload" in schema["properties"] and "system" in schema["properties"]


def test_catalog_list_and_show():
    listing = json.loads(invoke("catalog", "list", "--format", "json").stdout)
    names = {row["name"] for row in listing}
    assert {"micron-6550-ion", "solidigm-d5-p5336"} <= names
    for row in listing:
        assert row["datasheet"] + row["measured"] + row["calibrated"] + row["assumed"] > 0
    shown = json.loads(invoke("catalog", "show", "micron-6550-ion", "--format", "json").stdout)
    assert shown["values"]["capacity_TB"] == pytest.approx(61.44)
    assert shown["provenance"]["capacity_TB"]["p"] == "datasheet"


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.startswith("iowatt ")


# ---------------------------------------------------------------- bad input, class by class


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def _base() -> dict:
    return yaml.safe_load(Path(DEMO).read_text())


def assert_clean_failure(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    for needle in needles:
        assert needle in result.stderr, result.stderr


BAD_CASES = [
    ("malformed yaml", "system: [1,\n", ("malformed YAML", "line")),
    ("not a mapping", "- 1\n- 2\n", ("expected a mapping",)),
    ("unknown key", None, ("workload.sizee", "unknown field")),
    ("wrong unit", None, ("workload.size", "expected a size", "'415 XB'")),
    ("unknown catalog name", None, ("system.storage.device", "catalog", "'nosuch-ssd'")),
    ("negative size", None, ("workload.size", "greater than 0", "-5")),
    ("zero lanes", None, ("system.storage.device", "lanes")),
    ("power cap below idle", None, ("system.storage", "PS1 caps at 20", "idle power 21")),
    ("unknown power state", None, ("system.storage", "PS0..PS7", "PS12")),
    ("unknown workload kind", None, ("workload", "kind", "'nosuch'")),
]


def _mutate(name: str) -> dict:
    data = _base()
    if name == "unknown key":
        data["workload"]["sizee"] = 1
    elif name == "wrong unit":
        data["workload"]["size"] = "415 XB"
    elif name == "unknown catalog name":
        data["system"]["storage"]["device"] = "nosuch-ssd"
    elif name == "negative size":
        data["workload"]["size"] = -5
    elif name == "zero lanes":
        data["system"]["storage"]["device"] = {"base": "micron-6550-ion", "link": {"kind": "pcie", "generation": 5, "lanes": 0}}
    elif name == "power cap below idle":
        data["system"]["storage"]["device"] = {
            "base": "micron-6550-ion", "idle_W": 21.0, "active_read_W": 22.0, "active_write_W": 22.0,
        }
    elif name == "unknown power state":
        data["system"]["storage"]["power_state"] = "PS12"
    elif name == "unknown workload kind":
        data["workload"]["kind"] = "nosuch"
    return data


@pytest.mark.parametrize(("name", "text", "needles"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_each_class_of_bad_scenario(tmp_path, name, text, needles):
    path = _write(tmp_path, text if text is not None else yaml.safe_dump(_mutate(name)))
    out = tmp_path / "result.json"
    result = invoke("run", path, "-o", str(out))
    assert_clean_failure(result, *needles)
    assert not out.exists()  # nothing half-written
    assert list(tmp_path.iterdir()) == [tmp_path / "s.yaml"]


@pytest.mark.parametrize(
    ("assignment", "needles"),
    [
        ("storage.powr_state=PS1", ("powr_state", "not a field", "power_state")),
        ("workload.size", ("expected PATH=VALUE",)),
        ("=3", ("empty",)),
        ("nosuch.thing=1", ("nosuch", "not a field")),
        ("workload.size=12 parsecs", ("workload.size", "expected a size")),
        ("storage.count=0", ("system.storage.count", "greater than or equal to 1", "0")),
    ],
)
def test_bad_set_paths_and_values(assignment, needles):
    assert_clean_failure(invoke("run", DEMO, "--set", assignment), *needles)


def test_missing_file_and_bad_format_and_bad_extension(tmp_path):
    assert_clean_failure(invoke("run", str(tmp_path / "none.yaml")), "no such scenario file")
    assert_clean_failure(invoke("run", DEMO, "--format", "xml"), "--format", "'xml'")
    assert_clean_failure(invoke("run", DEMO, "-o", str(tmp_path / "r.xlsx")), "extension")
    assert_clean_failure(invoke("run", DEMO, "-o", str(tmp_path / "nodir" / "r.json")), "does not exist")
    assert_clean_failure(invoke("catalog", "show", "nosuch"), "nosuch")


# values of the wrong type or range, at random fields
_FIELDS = [
    ("seed",), ("workload", "size"), ("workload", "ranks"), ("workload", "count"), ("workload", "block_size"),
    ("system", "storage", "count"), ("system", "storage", "fill"), ("system", "gpus", "count"),
    ("system", "server", "memory"), ("system", "server", "sockets"), ("system", "storage", "power_state"),
]
_BAD_VALUES = st.one_of(
    st.just(-1), st.just("abc"), st.just([1, 2]), st.just({"x": 1}), st.just("12 furlongs"), st.just(-0.5), st.just(10**9),
)


@given(field=st.sampled_from(_FIELDS), value=_BAD_VALUES, extra_key=st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_generated_malformed_scenarios_exit_2_without_traceback(tmp_path, field, value, extra_key):
    data = _base()
    node = data
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    if extra_key:
        data["system"]["storage"]["surprise"] = 1
    path = _write(tmp_path, yaml.safe_dump(data))
    result = invoke("run", path)
    if result.exit_code == 0:
        # a few values are legal for some fields (e.g. 10**9 bytes); then there must be no unknown key
        assert not extra_key
        return
    assert_clean_failure(result)
    assert result.stderr.startswith("error: ")
    assert ("surprise" in result.stderr) if extra_key else True


def test_set_reaches_fields_of_the_storage_kind_it_selects():
    # `level` exists only on kind: raid; the path is checked against the kind the data has by then.
    result = invoke("run", DEMO, "--set", "storage.kind=raid", "--set", "storage.level=5", "--set", "storage.count=4", "--format", "json")
    assert result.exit_code == 0, result.stderr
    storage = json.loads(result.stdout)["scenario"]["system"]["storage"]
    assert (storage["kind"], storage["level"], storage["count"]) == ("raid", 5, 4)
    # without the kind, `level` is still a typo on a local volume
    refused = invoke("run", DEMO, "--set", "storage.level=5")
    assert refused.exit_code == 2 and "`level` is not a field of system.storage" in refused.stderr
    # the tag pydantic adds for the union is not shown to the user
    short = invoke("run", DEMO, "--set", "storage.kind=raid", "--set", "storage.level=5", "--set", "storage.count=2")
    assert short.exit_code == 2 and "system.storage: count: RAID 5 needs at least 3 drives, found 2" in short.stderr
