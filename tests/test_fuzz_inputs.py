"""Fuzz: mutated scenarios and generated command lines never end in a traceback or a silent success (issue 18).

Oracles, independent of the loader: the JSON Schema as checked by the
`jsonschema` package (a scenario it rejects must not run: exit 2); mutations
invalid by construction (an unknown key, a required field removed, text or a
mapping where a number stood, an unknown format or command value) must exit
2; and for every input, whatever it is: exit status 0, 1 or 2, no exception
escaping the command, every failure one `error: ...` message.  Deterministic
(derandomized) so a failure reproduces; about 600 cases, in process.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iowatt.scenarios.loader import read_yaml
from iowatt.scenarios.schema import json_schema
from typer.testing import CliRunner

from iowatt.cli import app

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parent.parent
LIBRARY = REPO / "scenarios" / "library"
BASES = [LIBRARY / p for p in ("checkpoint_llama405b_8gpu.yaml", "micron6550_vs_p5336/unet3d_3xh100_6550.yaml", "amax/fio_5210_raid5_nfs.yaml",
                               "cluster/fio_ec42_6node_12clients.yaml", "micron9550_gnn/gnn_igbh_9550_x1.yaml", "storagereview/gdsio_l4_p5336.yaml",
                               "micron6550_vs_p5336/dlrm_6550_ps1.yaml")]
BASE_DATA = {p.stem: read_yaml(p) for p in BASES}
VALIDATOR = jsonschema.Draft202012Validator(json_schema())
runner = CliRunner()
def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def leaf_paths(node: object, prefix: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in leaf_paths(v, (*prefix, k))] or [prefix]
    if isinstance(node, list) and node:
        return [p for i, v in enumerate(node) for p in leaf_paths(v, (*prefix, i))]
    return [prefix]


def parent_and_key(data: dict, path: tuple) -> tuple[object, object]:
    node: object = data
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    return node, path[-1]


def outcome_is_clean(result) -> None:
    """Whatever the input: a known exit status, no escaping exception, failures as one `error:` message."""
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stderr.startswith(("error: ", "Usage: ")) or "Usage:" in result.stderr, result.stderr


SCALARS = st.one_of(
    st.none(),
    st.integers(-10**7, 10**13),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(["415 GB", "1 MiB", "-5 W", "25 us", "80 %", "12 GB/s", "PS1", "PS99", "1e400", "nan", "0", "", "profile:/no/such.yaml",
                     "micron-6550-ion", "raid", "local", "checkpoint", "dlio", "2+1", "tcp", "-1 TB", "1 KB"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz _-", min_size=1, max_size=10).filter(lambda t: t.strip() not in ("y", "n", "on", "no", "yes")),
)
VALUES = st.one_of(SCALARS, st.lists(st.integers(-3, 100), max_size=3), st.dictionaries(st.sampled_from(["kind", "v", "x", "base"]), SCALARS, max_size=2))
GARBAGE = st.sampled_from(["zzz", "not a number", {"nested": 1}, [1, [2]], "12 parsecs"])


@st.composite
def mutated_scenarios(draw: st.DrawFn) -> tuple[dict, bool, str]:
    """(scenario, invalid by construction, what was done)."""
    name = draw(st.sampled_from(sorted(BASE_DATA)))
    data = copy.deepcopy(BASE_DATA[name])
    paths = [p for p in leaf_paths(data) if p and p[0] not in ("name", "description")]
    path = draw(st.sampled_from(paths))
    parent, key = parent_and_key(data, path)
    action = draw(st.sampled_from(["set", "set", "set", "unknown_key", "drop_required", "garbage_number"]))
    original = parent[key]  # type: ignore[index]
    if action == "unknown_key" and isinstance(parent, dict):
        parent[f"zz_{key}"] = draw(SCALARS)
        return data, True, f"{name}: unknown key beside {path}"
    if action == "drop_required":
        required = {"system": data, "workload": data}
        which = draw(st.sampled_from(sorted(required)))
        del data[which]
        return data, True, f"{name}: no {which}"
    if action == "garbage_number" and isinstance(original, int | float) and not isinstance(original, bool):
        parent[key] = draw(GARBAGE)  # type: ignore[index]
        return data, True, f"{name}: {path} = garbage"
    parent[key] = draw(VALUES)  # type: ignore[index]
    return data, False, f"{name}: {path} = {parent[key]!r}"  # type: ignore[index]


def lax_coercion(data: dict) -> bool:
    """Values pydantic's lax mode converts across JSON types (a bool or 0/1 across bool and number, digits in a string):
    accepted by the loader by design, so the schema cannot serve as the oracle for them."""
    for path in leaf_paths(data):
        node: object = data
        for part in path:
            node = node[part]  # type: ignore[index]
        if isinstance(node, bool) or node in (0, 1) or (isinstance(node, str) and node.strip().lstrip("+-").replace(".", "", 1).isdigit()):
            return True
        if isinstance(node, float) and (math.isnan(node) or math.isinf(node)):
            return True
    return False


@fuzz(300)
@given(case=mutated_scenarios())
def test_mutated_scenarios_exit_cleanly_and_never_run_when_invalid(tmp_path_factory, case):
    data, invalid, what = case
    path = tmp_path_factory.mktemp("fuzz") / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = runner.invoke(app, ["run", str(path), "--dry-run", "-f", "json"])
    outcome_is_clean(result)
    assert result.exit_code in (0, 2), (what, result.output)
    if invalid:
        assert result.exit_code == 2, f"silent success on invalid input: {what}"
    schema_ok = not list(VALIDATOR.iter_errors(yaml.safe_load(path.read_text())))
    if not schema_ok and not lax_coercion(data):
        assert result.exit_code == 2, f"the schema rejects it but it ran: {what}"


SET_PATHS = ["storage.device", "storage.power_state", "storage.fill", "storage.count", "workload.size", "workload.ranks", "server.memory",
             "gpus.count", "workload.nope", "storage.level", "seed", "system", "workload.kind", "storage.kind", "workload.block_size"]
FORMATS = ["table", "json", "csv", "parquet", "yaml", "xml", ""]


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[list[str], bool, str]:
    """(argv, invalid by construction, label); nothing here runs fio, Dask or a long study."""
    out = draw(st.sampled_from(["", "o.json", "o.csv", "o.txt", "o.parquet", "nodir/o.json", "-", "o"]))
    setting = [draw(st.sampled_from(SET_PATHS)) + "=" + str(draw(SCALARS))] if draw(st.booleans()) else []
    sets = [a for s in setting for a in ("--set", s)]
    kind = draw(st.sampled_from(["run", "sweep", "compare", "schema", "catalog", "reproduce", "validate", "collect", "calibrate", "plan", "nonsense"]))
    fmt = draw(st.sampled_from(FORMATS))
    demo = "checkpoint_llama405b_8gpu"
    if kind == "run":
        args = ["run", draw(st.sampled_from([demo, "no_such_scenario", "unet3d_max_h100_6550"])), *sets]
        args += ["--dry-run"] if draw(st.booleans()) else ["--set", "workload.size=4 GB"]
        bad = fmt in ("xml", "parquet") or (fmt in ("table", "csv") and "--dry-run" in args)
    elif kind == "sweep":
        axis = draw(st.sampled_from(["storage.fill=0,0.5", "storage.fill=0.5", "storage.power_state=PS9", "storage.nope=1", "storage.fill", "storage.fill=,"]))
        args = ["sweep", demo, "--grid", axis, "--set", "workload.size=4 GB", "--jobs", draw(st.sampled_from(["0", "-1"])), *sets]
        bad = "nope" in axis or axis in ("storage.fill", "storage.fill=,") or "-1" in args or fmt in ("xml", "table", "json", "yaml")
        out = out or "s.csv"
    elif kind == "compare":
        args = ["compare", demo, "--vary", draw(st.sampled_from(["storage.fill=0,0.5", "storage.device=micron-6550-ion", "x=1", "storage.fill"])),
                "--set", "workload.size=4 GB", *sets]
        bad = "x=1" in args or "storage.fill" in args or fmt in ("xml", "parquet", "yaml")
    elif kind == "catalog":
        args = ["catalog", draw(st.sampled_from(["list", "show", "sources"]))]
        if args[1] == "show":
            args.append(draw(st.sampled_from(["micron-6550-ion", "nope-drive", "profile:/no/such.yaml"])))
        bad = fmt in ("xml", "parquet", "yaml") or (args[1] == "show" and args[-1] != "micron-6550-ion") or (fmt == "csv" and args[1] != "list")
        out = ""  # list and show print to stdout
    elif kind == "reproduce":
        args, bad, out = ["reproduce", draw(st.sampled_from(["no_such_study", "x.yaml"])), "--jobs", "0"], True, ""
        fmt = ""
    elif kind == "validate":
        args, bad, out = ["validate", draw(st.sampled_from(["no_table.yaml", "README.md"]))], True, ""
    elif kind == "collect":
        args = ["collect", "fio", "--target", draw(st.sampled_from(["/dev/iowatt-nope", "/dev/shm", "README.md", "no/such/dir/x"])), "--plan",
                draw(st.sampled_from(["quick", "nonsense"])), "--out", "bundle", "-q"]
        bad, out, fmt = True, "", ""
    elif kind == "calibrate":
        args, bad, out, fmt = ["calibrate", "no_bundle", "--base", draw(st.sampled_from(["micron-7450-pro", "nope"])), "-o", "p.yaml"], True, "", ""
    elif kind == "plan":
        args, bad, out = ["plan", draw(st.sampled_from(["no_plan.yaml", "README.md"])), "--jobs", "0"], True, ""
    else:
        args, bad, out, fmt = ["nonsense", "--flag"], True, "", ""
    if fmt and kind not in ("reproduce", "collect", "calibrate", "nonsense", "schema"):
        args += ["-f", fmt]
    if out and kind in ("run", "sweep", "compare", "schema"):
        args += ["-o", out]
    if kind == "schema" and out.endswith((".csv", ".parquet", ".txt")):
        pass  # schema writes JSON whatever the extension
    invalid_setting = kind in ("run", "sweep", "compare") and any(s.startswith(("workload.nope", "system=")) for s in setting)
    return args, bad or invalid_setting, " ".join(args)


@fuzz(250)
@given(case=command_lines())
def test_generated_command_lines_exit_cleanly_and_refuse_invalid_input(tmp_path_factory, case, monkeypatch):
    args, invalid, label = case
    monkeypatch.chdir(tmp_path_factory.mktemp("cli"))
    result = runner.invoke(app, args)
    outcome_is_clean(result)
    if invalid:
        assert result.exit_code == 2, f"silent success on invalid input: {label}\n{result.output}"
