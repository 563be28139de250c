"""Scenario inputs given as ranges: `fill: 0.6..0.9`, `--set storage.server_threads=8..128 log`, `size: 400 GB..450 GB`.

A user who does not know a value writes its plausible range instead.  Each end goes through the field's own parser and
validators (units, bounds), so a range is exactly as strict as a single value.  The scenario is then resolved at each
range's median (what a plain run uses; the CLI says so on stderr) and keeps its ranges, which `--uncertainty` samples
(scenarios.uncertainty).  Shapes: uniform (the default), `log` / `log-uniform`, `normal` (its ends are the 5 % and
95 % quantiles), as in models.uncertainty.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iowatt.models.provenance import Shape
from iowatt.models.uncertainty import Range

# one end: a number, optionally with a unit as people write it (400 GB, 1 MiB, 25 us, 12 GB/s, 80 %)
_END = r"[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*[A-Za-z%][A-Za-z%/]*)?"
_RANGE = re.compile(rf"\s*(?P<low>{_END})\s*\.\.\s*(?P<high>{_END})\s*")
_SHAPES: dict[str, Shape] = {"uniform": "uniform", "log": "log-uniform", "log-uniform": "log-uniform", "normal": "normal"}


@dataclass(frozen=True)
class UserRange:
    """One scenario input the user gave as a range: its path in the scenario (`system.storage.fill`), the range of the
    field's value in the field's own units (bytes for `400 GB..450 GB`), whether the field takes whole numbers, and
    the text as written."""

    path: str
    range: Range
    integer: bool
    text: str


def parse_range_text(text: str) -> tuple[str, str, Shape] | None:
    """'8..128 log' -> ('8', '128', 'log-uniform'); None when the text is not a range (a name, a path, a number)."""
    body, shape = text.strip(), "uniform"
    head, _, last = body.rpartition(" ")
    if head and last.lower() in _SHAPES:
        body, shape = head, _SHAPES[last.lower()]
    match = _RANGE.fullmatch(body)
    if match is None:
        return None
    return match.group("low").strip(), match.group("high").strip(), shape


Path = tuple[str | int, ...]


def find_ranges(data: Any, path: Path = ()) -> list[tuple[Path, str]]:
    """Every string in the scenario mapping that is written as a range, with its path (mapping keys and list indices)."""
    found: list[tuple[Path, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found += find_ranges(value, (*path, str(key)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += find_ranges(value, (*path, index))
    elif isinstance(data, str) and parse_range_text(data) is not None:
        found.append((path, data))
    return found


def dotted(path: Path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path))


def set_at(data: dict[str, Any], path: Path, value: Any) -> None:
    """Set a value inside nested mappings/lists, making the mappings a default section leaves out."""
    node: Any = data
    for part in path[:-1]:
        if isinstance(part, int):
            node = node[part]
            continue
        child = node.get(part)
        if not isinstance(child, dict | list):
            child = {} if not isinstance(child, str) else {"base": child}  # a catalog name becomes {base: NAME, ...}
            node[part] = child
        node = child
    node[path[-1]] = value


def get_at(data: Any, path: Path) -> Any:
    node = data
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def resolve_ranges(data: dict[str, Any], origin: str, validate: Callable[[dict[str, Any], str], Any],
                   dump: Callable[[Any], dict[str, Any]]) -> tuple[dict[str, Any], tuple[UserRange, ...]]:
    """(the data with each range replaced by its median, the ranges).  `validate(data, origin)` is the loader's own
    validation (raising its ScenarioError); `dump(scenario)` the validated scenario as plain data.  Each end is validated
    through the field's parser; a range whose low exceeds its high, or on a field that does not hold a number, raises
    ValueError naming the field."""
    found = find_ranges(data)
    if not found:
        return data, ()
    parsed = {path: parse_range_text(text) for path, text in found}
    ends: dict[str, dict[Path, Any]] = {}
    for side, index in (("low", 0), ("high", 1)):
        trial = copy.deepcopy(data)
        for path, triple in parsed.items():
            assert triple is not None
            set_at(trial, path, triple[index])
        try:
            resolved = dump(validate(trial, origin))
        except ValueError as error:
            fields = ", ".join(f"{dotted(p)} = {t!r}" for p, t in found)
            raise type(error)(f"{error}\n  (checking the {side} end of the range(s) {fields})") from None
        ends[side] = {path: get_at(resolved, path) for path in parsed}
    out, ranges = copy.deepcopy(data), []
    for path, text in found:
        low, high = ends["low"][path], ends["high"][path]
        name = dotted(path)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
            raise ValueError(f"{origin}: {name}: a range needs a field that holds a number, found {text!r} on a field holding "
                             f"{type(low).__name__}")
        if low > high:
            raise ValueError(f"{origin}: {name}: expected a range LOW..HIGH with LOW <= HIGH, found {text!r} ({low:g} > {high:g})")
        shape = parsed[path][2]  # type: ignore[index]
        try:
            spread = Range(float(low), float(high), shape, f"given as {text!r}")
        except ValueError as error:
            raise ValueError(f"{origin}: {name}: {error} (found {text!r})") from None
        integer = isinstance(low, int) and isinstance(high, int)
        median = round(spread.median) if integer else spread.median
        set_at(out, path, median)
        ranges.append(UserRange(name, spread, integer, text.strip()))
    return out, tuple(ranges)
