"""Read a scenario file, apply `--set` overrides, validate, and explain what is wrong.

Every problem becomes a `ScenarioError` whose message names the field, what
was expected and what was found; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import yaml
from iowatt.models import strict_yaml
from iowatt.scenarios import checks
from iowatt.scenarios.schema import ScenarioBase, scenario_model
from iowatt.simulator import workloads
from iowatt.simulator.storage import registry as storage_registry
from pydantic import BaseModel, ValidationError
from yaml.constructor import ConstructorError

LIBRARY_DIR = Path(__file__).parent / "library"
SYSTEM_SECTIONS = ("server", "gpus", "storage")


class ScenarioError(ValueError):
    """A scenario that cannot be used, with a message for the person who wrote it."""


_STORAGE_FIELDS = ("storage", "export", "stage")
# pydantic names the branch of a union an error came from in its location (literal['memory'],
# tagged-union[function-after[...], ...], function-after[...]): internals, not fields the user wrote
_UNION_BRANCH = re.compile(r"^[a-z][a-z-]*\[.*\]$", re.DOTALL)
_STORAGE_TAGS = tuple(storage_registry.kind_names())


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _field_errors(error: ValidationError) -> list[tuple[list[str], dict[str, Any]]]:
    """(location without union-branch labels, error) for each error; a branch that failed only because the input was of
    another shape (a literal or a type mismatch beside a deeper error on the same field) is left out."""
    found = [([str(p) for p in item["loc"] if not _UNION_BRANCH.match(str(p))], item) for item in error.errors()]
    deeper = {tuple(loc[:i]) for loc, _ in found for i in range(len(loc))}
    shapes = ("literal_error", "model_type", "dict_type", "string_type", "union_tag_invalid")
    return [(loc, item) for loc, item in found if not (item["type"] in shapes and tuple(loc) in deeper)]


def format_validation_error(error: ValidationError, origin: str) -> str:
    lines = []
    for loc, item in _field_errors(error):
        # drop the discriminator tag pydantic adds for tagged unions (workload.checkpoint.size)
        if len(loc) >= 2 and loc[0] == "workload" and loc[1] in workloads.kinds():
            loc = [loc[0], *loc[2:]]
        # and the storage kind's tag (system.storage.raid.level -> system.storage.level)
        loc = [p for i, p in enumerate(loc) if not (i > 0 and loc[i - 1] in _STORAGE_FIELDS and p in _STORAGE_TAGS)]
        field = ".".join(loc) or "(top level)"
        kind = item["type"]
        message = item["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        found = item.get("input")
        if kind == "extra_forbidden":
            lines.append(f"{field}: unknown field (found {_describe(found)}); see `iowatt schema` for the fields")
        elif kind == "missing":
            lines.append(f"{field}: required field is missing")
        elif kind == "union_tag_invalid":
            expected = item["ctx"].get("expected_tags") or ", ".join(workloads.kinds())
            lines.append(f"{field}: expected `kind` one of {expected}, found {_describe(item['ctx'].get('tag'))}")
        elif kind == "union_tag_not_found":
            lines.append(f"{field}: expected a `kind` ({', '.join(workloads.kinds())}), found none")
        elif kind == "value_error" or "found" in message:
            lines.append(f"{field}: {message}")
        else:
            expected = message.removeprefix("Input should be ").removeprefix("input should be ")
            lines.append(f"{field}: expected {expected[0].lower() + expected[1:]}, found {_describe(found)}")
    header = f"{origin}: invalid scenario"
    return header + "\n  " + "\n  ".join(lines)


def read_yaml(path: Path, what: str = "scenario") -> dict[str, Any]:
    """A YAML file holding a mapping (`what` names it in messages); duplicate keys are an error."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such {what} file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot read the {what} file ({error.__class__.__name__})") from None
    try:
        data = strict_yaml.load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(f"{path}: {strict_yaml.describe(error)}") from None
    if not isinstance(data, dict):
        expected = "a mapping with `system` and `workload`" if what == "scenario" else "a mapping"
        raise ScenarioError(f"{path}: expected {expected}, found {type(data).__name__}")
    return data


_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


def _union_members(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) is dict:
        return []
    return [m for arg in get_args(annotation) for m in _union_members(arg)]


def _kinds_of(model: type[BaseModel]) -> tuple[Any, ...]:
    field = model.model_fields.get("kind")
    return () if field is None else get_args(field.annotation) or (field.default,)


def _field_model(annotation: Any, value: Any = None) -> type[BaseModel] | None:
    """The model a field holds; for a union tagged by `kind` (storage), the member the data's `kind` picks."""
    members = _union_members(annotation)
    if not members:
        return None
    if len(members) > 1:
        if isinstance(value, dict) and "kind" in value:
            for member in members:
                if value["kind"] in _kinds_of(member):
                    return member
    return members[0]


def _walk(data: dict[str, Any], segments: list[str], text: str) -> tuple[type[BaseModel] | None, Any]:
    """Walk the pydantic models along the path so a typo is reported by name: (the model the path holds, or None, and the
    leaf field's annotation, or None inside a free-form mapping)."""
    model: type[BaseModel] | None = scenario_model()
    node: Any = data
    annotation: Any = None
    for depth, segment in enumerate(segments):
        if model is None:
            return None, None  # inside a free-form mapping (an inline spec); validation checks it later
        if depth == 1 and segments[0] == "workload":
            kind = (data.get("workload") or {}).get("kind") if isinstance(data.get("workload"), dict) else None
            if kind not in workloads.kinds():
                return None, None
            model = workloads.get(kind).params
        fields = model.model_fields
        if segment not in fields:
            where = ".".join(segments[:depth]) or "the scenario"
            raise ScenarioError(
                f"--set {text}: `{segment}` is not a field of {where} (fields: {', '.join(fields)})"
            )
        node = node.get(segment) if isinstance(node, dict) else None
        annotation = fields[segment].annotation
        model = _field_model(annotation, node)
    return model, annotation


def _check_path(data: dict[str, Any], segments: list[str], text: str) -> bool:
    """True when the path holds a section (a model); a typo is a ScenarioError naming the field."""
    return _walk(data, segments, text)[0] is not None or segments == ["workload"]


def integer_field(data: dict[str, Any], path: str) -> bool:
    """Whether the field at `path` (as --set writes it) holds whole numbers only (`int`, or `int | None`)."""
    segments = path.strip().split(".")
    if segments[0] in SYSTEM_SECTIONS:
        segments = ["system", *segments]
    annotation = _walk(data, segments, path)[1]
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    members = [a for a in (get_args(annotation) if get_origin(annotation) is not None else (annotation,)) if a is not type(None)]
    return bool(members) and all(m is int for m in members)


def _section_file(value: Any, assignment: str) -> Any:
    """A section given as a YAML file (`storage=raid5.yaml`): its mapping; any other value as it is."""
    if not (isinstance(value, str) and value.strip().endswith((".yaml", ".yml"))):
        return value
    try:
        return read_yaml(Path(value.strip()), what="section")
    except ScenarioError as error:
        raise ScenarioError(f"--set {assignment}: {error}") from None


def apply_set(data: dict[str, Any], assignment: str) -> dict[str, Any]:
    """Apply one `a.b.c=value` override; the value is read as YAML (numbers, lists, strings)."""
    if "=" not in assignment:
        raise ScenarioError(f"--set {assignment}: expected PATH=VALUE, e.g. storage.power_state=PS1")
    path, _, raw_value = assignment.partition("=")
    path = path.strip()
    if not path:
        raise ScenarioError(f"--set {assignment}: the path before '=' is empty")
    try:
        value = strict_yaml.load(raw_value) if raw_value.strip() else ""
    except ConstructorError as error:  # YAML that parses but cannot be used: a key twice, a 5000-digit number, an alias bomb
        raise ScenarioError(f"--set {path}: {error.problem}") from None
    except yaml.YAMLError:
        value = raw_value
    segments = path.split(".")
    for s in segments:
        if not _SEGMENT.match(s):
            raise ScenarioError(f"--set {assignment}: `{s}` is not a field name")
    if segments[0] in SYSTEM_SECTIONS:
        segments = ["system", *segments]
    if _check_path(data, [_SEGMENT.match(s).group(1) for s in segments], assignment):  # type: ignore[union-attr]
        value = _section_file(value, assignment)
    data = copy.deepcopy(data)
    node: Any = data
    for s in segments[:-1]:
        name, index = _SEGMENT.match(s).groups()  # type: ignore[union-attr]
        if not isinstance(node, dict):
            raise ScenarioError(f"--set {assignment}: cannot descend into a {type(node).__name__} at `{name}`")
        if index is None:
            child = node.get(name)
            if not isinstance(child, dict):
                child = {} if not isinstance(child, str) else {"base": child}
                node[name] = child
            node = child
        else:
            seq = node.get(name)
            if not isinstance(seq, list) or int(index) >= len(seq):
                raise ScenarioError(f"--set {assignment}: `{name}` has no item [{index}]")
            node = seq[int(index)]
    name, index = _SEGMENT.match(segments[-1]).groups()  # type: ignore[union-attr]
    if not isinstance(node, dict):
        raise ScenarioError(f"--set {assignment}: cannot set `{name}` inside a {type(node).__name__}")
    if index is None:
        node[name] = value
    else:
        seq = node.get(name)
        if not isinstance(seq, list) or int(index) >= len(seq):
            raise ScenarioError(f"--set {assignment}: `{name}` has no item [{index}]")
        seq[int(index)] = value
    return data


def validate(data: dict[str, Any], origin: str) -> ScenarioBase:
    """The scenario, valid field by field (the schema) and as a whole (scenarios.checks: capacity, physical bounds).

    Inputs written as ranges (`fill: 0.6..0.9`, scenarios.ranges) are checked end by end and resolved at their median;
    the scenario keeps them (`user_ranges`) for `--uncertainty`."""
    from iowatt.scenarios.ranges import resolve_ranges

    try:
        data, ranges = resolve_ranges(data, origin, _validate_one, lambda scenario: scenario.model_dump())
    except ValueError as error:
        raise ScenarioError(str(error)) from None
    scenario = _validate_one(data, origin)
    scenario.set_user_ranges(ranges)
    return scenario


def _validate_one(data: dict[str, Any], origin: str) -> ScenarioBase:
    try:
        scenario = scenario_model().model_validate(data)
    except ValidationError as error:
        raise ScenarioError(format_validation_error(error, origin)) from None
    flipped = _booleans_read_as_numbers(data, scenario.model_dump(), ())
    if flipped:
        path, value = flipped
        raise ScenarioError(f"{origin}: invalid scenario\n  {path}: expected a number, found {str(value).lower()} (a boolean)")
    try:
        checks.check(scenario)
    except ValueError as error:
        raise ScenarioError(f"{origin}: impossible scenario\n  {error}") from None
    return scenario


def _booleans_read_as_numbers(given: Any, read: Any, path: tuple[str, ...]) -> tuple[str, bool] | None:
    """(field, value) of the first `true`/`false` the model took as a number (pydantic's lax mode reads `count: true`
    as 1): found by walking what was written beside what was validated, so no field's type needs to be looked up."""
    if isinstance(given, bool):
        return None if isinstance(read, bool) or read is None or isinstance(read, str) else (".".join(path), given)
    if isinstance(given, dict) and isinstance(read, dict):
        pairs = [(str(k), v, read[k]) for k, v in given.items() if k in read]
    elif isinstance(given, list) and isinstance(read, list | tuple) and len(given) == len(read):
        pairs = [(f"[{i}]", v, r) for i, (v, r) in enumerate(zip(given, read, strict=True))]
    else:
        return None
    for key, value, value_read in pairs:
        found = _booleans_read_as_numbers(value, value_read, (*path, key))
        if found is not None:
            return found
    return None


def resolve_path(name: str) -> Path:
    """A file path, or a name in the scenario library (with or without .yaml, in any of its folders when the name is unique)."""
    path = Path(name)
    if path.exists():
        return path
    for candidate in (LIBRARY_DIR / name, LIBRARY_DIR / f"{name}.yaml"):
        if candidate.exists():
            return candidate
    if path.name == name:  # a bare name: look in the library's folders
        stem = name.removesuffix(".yaml").removesuffix(".yml")
        found = sorted(p for p in LIBRARY_DIR.rglob("*.y*ml") if p.stem == stem)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            shown = ", ".join(str(p.relative_to(LIBRARY_DIR)) for p in found)
            raise ScenarioError(f"{name}: expected one library scenario of that name, found {len(found)}: {shown}; give the folder too")
    return path


def load(source: str | Path | dict[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> ScenarioBase:
    if isinstance(source, dict):
        data, origin = copy.deepcopy(source), "inline scenario"
    else:
        path = resolve_path(str(source))
        data, origin = read_yaml(path), str(path)
    stated = data
    for assignment in overrides:
        data = apply_set(data, assignment)
    try:
        checks.check_overrides(stated, overrides)
    except ValueError as error:
        raise ScenarioError(str(error)) from None
    return validate(data, origin)
