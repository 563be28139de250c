"""`iowatt schema` is standard JSON Schema (draft 2020-12) that accepts what the loader accepts (issue 18 item 6).

Oracles: the `jsonschema` package's own meta-schema check and validator (an
implementation independent of pydantic); the scenario loader, for what a
field accepts (a value is schema-valid exactly when the loader takes it, for
the fields whose strings the schema describes); every library scenario, every
inline scenario of the studies, and every `--set`/`--grid`/`--vary` value the
README and docs show.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.scenarios.loader import ScenarioError, apply_set, read_yaml, validate
from iowatt.scenarios.schema import json_schema
from typer.testing import CliRunner

from iowatt.cli import app

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parent.parent
LIBRARY = sorted((REPO / "scenarios" / "library").rglob("*.yaml"))
DEMO = REPO / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# every keyword of the 2020-12 vocabularies (core, applicator, validation, unevaluated, format, content, meta-data)
KEYWORDS_2020_12 = {
    "$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items", "contains",
    "properties", "patternProperties", "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
    "minProperties", "required", "dependentRequired", "format", "contentEncoding", "contentMediaType", "contentSchema",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
}
SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")  # keyword -> {name: schema}


@pytest.fixture(scope="module")
def schema() -> dict:
    return json_schema()


@pytest.fixture(scope="module")
def validator(schema):
    return jsonschema.Draft202012Validator(schema)


def keywords(node: object, found: set[str]) -> set[str]:
    if isinstance(node, list):
        for item in node:
            keywords(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in SCHEMA_MAPS:
                for sub in value.values():
                    keywords(sub, found)
            elif key not in ("enum", "const", "default", "examples", "required"):
                keywords(value, found)
    return found


def test_the_cli_prints_a_2020_12_schema_with_standard_keywords_only(schema):
    printed = json.loads(CliRunner().invoke(app, ["schema"]).stdout)
    assert printed == schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert keywords(schema, set()) <= KEYWORDS_2020_12, keywords(schema, set()) - KEYWORDS_2020_12


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(REPO / "scenarios" / "library")))
def test_every_library_scenario_validates(validator, path):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(read_yaml(path))]
    assert not errors, errors


def test_inline_scenarios_of_the_studies_validate(validator):
    inline = []
    for path in sorted((REPO / "scenarios" / "studies").glob("*.yaml")):
        for section in read_yaml(path).get("sections", []):
            inline += [run["scenario"] for run in section.get("runs", []) if isinstance(run.get("scenario"), dict)]
    for scenario in inline:
        assert not list(validator.iter_errors(scenario)), scenario


def doc_assignments() -> list[str]:
    """Every PATH=VALUE after --set, and every PATH=V1,V2 after --grid/--vary, in the README and docs (one per value)."""
    found = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            line = line.split("  #")[0].rstrip("\\ ")
            try:
                words = shlex.split(line)
            except ValueError:
                continue
            for option, value in itertools.pairwise(words):
                if option == "--set" and "=" in value:
                    found.append(value)
                elif option in ("--grid", "--vary") and "=" in value:
                    key, _, values = value.partition("=")
                    found += [f"{key}={v}" for v in values.split(",")]
    real = re.compile(r"[a-z][a-z0-9_.\[\]]*=[^`]+")  # leaves out placeholders (KEY=V1) and table cells
    # section files (storage=raid5.yaml) are the user's own files, not values the schema can see
    return sorted({a for a in found if real.fullmatch(a) and not a.endswith((".yaml", ".yml"))})


DOC_ASSIGNMENTS = doc_assignments()
# the units the README lists ("Quantities take units where people write them"), each in a field of that unit
QUANTITIES = ["workload.size=415 GB", "workload.block_size=1 MiB", "server.base_power=20 W", "workload.fsync_latency=25 us",
              "storage.fill=80 %", "storage.power_state=PS1"]


def test_the_docs_show_assignments():
    assert len(DOC_ASSIGNMENTS) >= 8 and "storage.power_state=PS1" in DOC_ASSIGNMENTS


def _bases_for(assignment: str) -> list[dict]:
    """The library scenarios whose workload has the assigned field (a `workload.accelerators=8` belongs to a DLIO
    run, not to the demo's checkpoint), the demo first."""
    bases = []
    for path in [DEMO, *LIBRARY]:
        try:
            bases.append(apply_set(read_yaml(path), assignment))
        except ScenarioError:  # the field is not one of this scenario's
            continue
    return bases


@pytest.mark.parametrize("assignment", sorted(set(DOC_ASSIGNMENTS + QUANTITIES)))
def test_every_value_the_docs_show_validates(validator, assignment):
    bases = _bases_for(assignment)
    assert bases, f"{assignment}: no library scenario has that field"
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(bases[0])]
    assert not errors, errors


def _loader_takes(data: dict) -> bool:
    try:
        validate(data, "hypothesis")
    except ScenarioError:
        return False
    return True


POWER_STATES = st.one_of(
    st.integers(-3, 40),
    st.builds(lambda p, n, pad: f"{pad}{p}{n}{pad}", st.sampled_from(["PS", "ps", "Ps", "", "P", "PX"]), st.integers(0, 40), st.sampled_from(["", " "])),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(POWER_STATES)
def test_power_state_schema_agrees_with_the_loader(validator, value):
    """The 6550 ION has PS0..PS7; the schema cannot know a device's table, so PS8..PS31 pass the schema and fail the loader.
    Everything else must agree: 'PS1' and 1 are valid, 'PX1', -1, 32 and true are not."""
    data = read_yaml(DEMO)
    data["system"]["storage"]["power_state"] = value
    schema_ok = not list(validator.iter_errors(data))
    index = int(re.sub(r"[^0-9-]", "", str(value)) or -1) if not isinstance(value, bool) else -1
    if schema_ok and 8 <= index <= 31:
        return
    assert schema_ok == _loader_takes(data), value


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.floats(-1e3, 1e16, allow_nan=False), st.from_regex(r"[-+]?[0-9]{1,4}(\.[0-9]{1,3})?[eE][+-]?[0-9]{1,2}", fullmatch=True),
                 st.sampled_from(["abc", "1,5", "", "--1", "1e", "nan"])))
def test_plain_number_fields_take_what_the_loader_takes(validator, value):
    """`parameters` is a float field: a YAML string such as '405.85e9' (PyYAML reads no-sign exponents as text) is a number to the loader."""
    data = read_yaml(DEMO)
    data["workload"]["parameters"] = value
    data["workload"].pop("size")
    schema_ok = not list(validator.iter_errors(data))
    loader_ok = _loader_takes(data)
    if loader_ok:
        assert schema_ok, value
    elif schema_ok:  # the schema cannot see the workload's own consistency checks (e.g. the checkpoint fitting the drive)
        assert isinstance(value, float | int) or re.fullmatch(r"\s*[-+]?[0-9.eE+-]+\s*", str(value)), value


def test_a_yaml_scenario_round_trips_through_the_schema(validator):
    assert not list(validator.iter_errors(yaml.safe_load(DEMO.read_text())))
    broken = read_yaml(DEMO)
    broken["system"]["storage"]["colour"] = "blue"
    assert list(validator.iter_errors(broken))  # unknown fields are refused, as by the loader
