"""A sweep's axes as the command line and sweep files give them: `KEY=V1,V2,...` (a grid axis) and `KEY=LO:HI` (a
range), each path checked against the base scenario so that a bad axis is named before any case runs."""

from __future__ import annotations

from typing import Any

from iowatt.scenarios.loader import ScenarioError, apply_set, integer_field


def _strip_set(message: str, option: str, text: str, assignment: str) -> str:
    prefix = f"--set {assignment}: "
    rest = message[len(prefix):] if message.startswith(prefix) else message
    return f"{option} {text}: {rest}"


def check_path(base: dict[str, Any], key: str, value: str, option: str, text: str) -> None:
    """Raise a ScenarioError naming the option when the path is not a scenario field."""
    try:
        apply_set(base, f"{key}={value}")
    except ScenarioError as error:
        raise ScenarioError(_strip_set(str(error), option, text, f"{key}={value}")) from None


def parse_axis(text: str, option: str, base: dict[str, Any] | None = None) -> tuple[str, list[str]]:
    """`KEY=V1,V2,...` -> (KEY, [V1, V2, ...]); values stay text (read as YAML when applied)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(f"{option} {text}: expected KEY=V1,V2,..., e.g. storage.power_state=PS0,PS1")
    values = [v.strip() for v in split_values(raw)]
    if not raw.strip() or any(v == "" for v in values):
        raise ScenarioError(f"{option} {text}: expected a comma-separated list of values after '=', found {raw!r}")
    if base is not None:
        check_path(base, key, values[0], option, text)
    return key, values


def split_values(raw: str) -> list[str]:
    """`a,b,{k: 1, j: 2},[3, 4]` -> ['a', 'b', '{k: 1, j: 2}', '[3, 4]']: commas inside braces, brackets or quotes belong to the value."""
    values, current, depth, quote = [], "", 0, ""
    for char in raw:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            values.append(current)
            current = ""
            continue
        current += char
    return [*values, current]


def parse_range(text: str, option: str = "--range", base: dict[str, Any] | None = None) -> tuple[str, float, float]:
    key, sep, raw = text.partition("=")
    key = key.strip()
    lo_text, colon, hi_text = raw.partition(":")
    if not sep or not key or not colon:
        raise ScenarioError(f"{option} {text}: expected KEY=LO:HI, e.g. storage.fill=0:0.9")
    try:
        lo, hi = _number(lo_text), _number(hi_text)
    except ValueError:
        raise ScenarioError(f"{option} {text}: expected numbers LO:HI, found {raw!r}") from None
    if hi < lo:
        raise ScenarioError(f"{option} {text}: expected LO <= HI, found {lo} > {hi}")
    if base is not None:
        check_path(base, key, str(lo), option, text)
        if integer_field(base, key) and not (float(lo).is_integer() and float(hi).is_integer()):
            raise ScenarioError(f"{option} {text}: {key} holds whole numbers: expected whole-number bounds LO:HI, found {raw!r}")
    return key, lo, hi


def _number(text: str) -> float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)
