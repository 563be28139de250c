"""Quantities with units, as people write them in scenario files.

Every quantity is stored in SI base units (bytes, seconds, watts, joules,
bytes per second) and parsed from either a bare number (already in the base
unit) or a string such as "415 GB", "1 MiB", "20 W", "25 us", "12 GB/s".

Decimal prefixes are decimal (1 GB = 1e9 B) and binary ones binary
(1 GiB = 2**30 B), as in the published studies (docs/sources.md).  fio's
bare suffixes ("128k", "4K", "1m") are binary, as fio reads them
(fio's default kb_base=1024).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema


class UnitError(ValueError):
    """A quantity that could not be read; the message says what was expected."""


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµ%/]*)\s*$")

_BYTE_UNITS = {
    "": 1.0, "b": 1.0, "byte": 1.0, "bytes": 1.0,
    "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15,
    "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40, "pib": 2.0**50,
    # fio-style bare suffixes are binary (fio's kb_base=1024)
    "k": 2.0**10, "m": 2.0**20, "g": 2.0**30, "t": 2.0**40,
}
_TIME_UNITS = {
    "": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "y": 365.0 * 86400.0, "year": 365.0 * 86400.0, "years": 365.0 * 86400.0,
}
_POWER_UNITS = {"": 1.0, "w": 1.0, "mw": 1e-3, "kw": 1e3}
_ENERGY_UNITS = {"": 1.0, "j": 1.0, "kj": 1e3, "mj": 1e6, "wh": 3600.0, "kwh": 3.6e6}
_RATE_BYTES = {
    "b/s": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "kib/s": 2.0**10, "mib/s": 2.0**20, "gib/s": 2.0**30,
    "bps": 1.0, "mbps": 1e6, "gbps": 1e9,
}
# bits per second, for network links (100 Gb/s = 12.5e9 B/s)
_RATE_BITS = {"bit/s": 1 / 8, "kbit/s": 1e3 / 8, "mbit/s": 1e6 / 8, "gbit/s": 1e9 / 8, "tbit/s": 1e12 / 8}
_RATE_BITS_CASE = {"Kb/s": 1e3 / 8, "Mb/s": 1e6 / 8, "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8}
_FRACTION_UNITS = {"": 1.0, "%": 0.01}
_FREQUENCY_UNITS = {"": 1.0, "rpm": 1.0}
_OPS_RATE_UNITS = {"": 1.0, "iops": 1.0, "kiops": 1e3, "miops": 1e6}


def _split(value: Any, what: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise UnitError(f"expected {what}, found a boolean ({value!r})")
    if isinstance(value, int | float):
        return float(value), ""
    if not isinstance(value, str):
        raise UnitError(f"expected {what}, found {type(value).__name__} {value!r}")
    text = value.strip().replace(" ", "")
    # split on the first letter after the number so "1.5GB/s" works
    match = _QUANTITY.match(text)
    if match is None:
        raise UnitError(f"expected {what}, found {value!r}")
    return float(match.group(1)), match.group(2)


def _lookup(value: Any, table: dict[str, float], what: str, *, case_sensitive: dict[str, float] | None = None) -> float:
    number, unit = _split(value, what)
    if case_sensitive and unit in case_sensitive:
        factor = case_sensitive[unit]
    else:
        key = unit.lower()
        if key not in table:
            raise UnitError(f"expected {what}, found {value!r} (unknown unit {unit!r})")
        factor = table[key]
    return _finite(number * factor, value, what)


def _finite(result: float, value: Any, what: str) -> float:
    if not math.isfinite(result):
        raise UnitError(f"expected {what} (a finite number), found {value!r}")
    return result


# bit units, as rates write them ('100 Gb/s', capital prefix and small b): never a size in bytes
_BIT_SIZE = re.compile(r"^(?:[KMGTP]b|[kmgtp]?bits?)$", re.IGNORECASE)
_BIT_SIZE_CASE = re.compile(r"^[KMGTP]b$")


def parse_bytes(value: Any) -> float:
    """'415 GB' -> 4.15e11; '1 MiB' -> 1048576; '128k' -> 131072 (fio style).

    '415 Gb' is refused: rates read `Gb/s` as gigabits, so a size in `Gb` read as gigabytes would be 8x off.
    A size between 0 and 1 byte is refused: nothing stores a fraction of a byte."""
    what = "a size such as '415 GB', '1 MiB' or a number of bytes"
    _, unit = _split(value, what)
    if _BIT_SIZE_CASE.match(unit) or (unit.lower().endswith(("bit", "bits")) and _BIT_SIZE.match(unit)):
        raise UnitError(f"expected {what}, found {value!r}: {unit!r} is bits (as in '100 Gb/s'); write the size in bytes "
                        f"(B, {unit[0].upper()}B or {unit[0].upper()}iB)")
    result = _lookup(value, _BYTE_UNITS, what)
    if 0.0 < abs(result) < 1.0:
        raise UnitError(f"expected {what}: at least 1 byte (or 0), found {value!r} = {result:g} bytes")
    return result


def parse_seconds(value: Any) -> float:
    """'25 us' -> 2.5e-5; '2 h' -> 7200."""
    return _lookup(value, _TIME_UNITS, "a duration such as '25 us', '1.5 s' or a number of seconds")


def parse_watts(value: Any) -> float:
    return _lookup(value, _POWER_UNITS, "a power such as '20 W' or a number of watts")


def parse_joules(value: Any) -> float:
    return _lookup(value, _ENERGY_UNITS, "an energy such as '371 J', '1.2 Wh' or a number of joules")


def parse_bytes_per_second(value: Any) -> float:
    """'12 GB/s' -> 1.2e10; '100 Gb/s' -> 1.25e10 (bits, capital b)."""
    number, unit = _split(value, "a bandwidth such as '12 GB/s', '100 Gb/s' or bytes per second")
    what = "a bandwidth such as '12 GB/s', '100 Gb/s' or bytes per second"
    key = unit.lower()
    if unit == "":
        return _finite(number, value, what)
    if unit in _RATE_BITS_CASE:
        return _finite(number * _RATE_BITS_CASE[unit], value, what)
    if key in _RATE_BITS:
        return _finite(number * _RATE_BITS[key], value, what)
    if key in _RATE_BYTES:
        return _finite(number * _RATE_BYTES[key], value, what)
    raise UnitError(
        f"expected a bandwidth such as '12 GB/s', '100 Gb/s' or bytes per second, found {value!r} (unknown unit {unit!r})"
    )


def parse_fraction(value: Any) -> float:
    """'80 %' -> 0.8; 0.8 -> 0.8."""
    return _lookup(value, _FRACTION_UNITS, "a fraction such as 0.8 or '80 %'")


def parse_rpm(value: Any) -> float:
    return _lookup(value, _FREQUENCY_UNITS, "a rotational speed such as '7200 rpm'")


def parse_iops(value: Any) -> float:
    return _lookup(value, _OPS_RATE_UNITS, "an operation rate such as '25000', '1.6 MIOPS'")


def _number_or_string(description: str) -> WithJsonSchema:
    return WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}], "description": description})


def _validator(parser):  # noqa: ANN001 - small adapter
    def validate(value: Any) -> float:
        try:
            return parser(value)
        except UnitError as error:
            raise ValueError(str(error)) from None

    return BeforeValidator(validate)


_as_float = PlainSerializer(float, return_type=float)

Bytes = Annotated[float, _validator(parse_bytes), _number_or_string("bytes, or a string with a unit: '415 GB', '1 MiB'"), _as_float]
Seconds = Annotated[float, _validator(parse_seconds), _number_or_string("seconds, or a string with a unit: '25 us', '2 h'"), _as_float]
Watts = Annotated[float, _validator(parse_watts), _number_or_string("watts, or a string with a unit: '20 W'"), _as_float]
Joules = Annotated[float, _validator(parse_joules), _number_or_string("joules, or a string with a unit: '1.2 Wh'"), _as_float]
BytesPerSecond = Annotated[
    float, _validator(parse_bytes_per_second), _number_or_string("bytes/s, or a string with a unit: '12 GB/s', '100 Gb/s'"), _as_float
]
Fraction = Annotated[float, _validator(parse_fraction), _number_or_string("a fraction 0..1, or a percentage: '80 %'"), _as_float]
Rpm = Annotated[float, _validator(parse_rpm), _number_or_string("revolutions per minute: 7200 or '7200 rpm'"), _as_float]
Iops = Annotated[float, _validator(parse_iops), _number_or_string("operations per second: 25000 or '1.6 MIOPS'"), _as_float]

GB = 1e9
MB = 1e6
GiB = 2.0**30
MiB = 2.0**20
KiB = 2.0**10
WH = 3600.0


# fio's own size syntax (job files, fio's JSON options), apart from the scenario files' units above.
# fio's `kb_base` (fio(1), "kb_base=int"): 1024, the default "compatibility mode", reads SI-looking
# prefixes as powers of two (k, kb, m, mb, ...: 1 KB = 1024 B) and IEC prefixes as powers of ten
# (1 KiB = 1000 B), the inversion fio keeps so old job files read the same; kb_base=1000 reads both
# as their standards say (1 kB = 1000 B, 1 KiB = 1024 B).  A bare number is bytes.
_FIO_LETTERS = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_FIO_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*$")


def fio_size_bytes(text: str | int | float, kb_base: int = 1024) -> float:
    """Bytes of a fio size ("128k", "1M", "4KiB", "1t", 4096) under fio's `kb_base` convention (1024 or 1000)."""
    if kb_base not in (1000, 1024):
        raise UnitError(f"kb_base: expected 1000 or 1024, found {kb_base!r}")
    if isinstance(text, bool):
        raise UnitError(f"expected a fio size such as 128k or 1M, found {text!r}")
    if isinstance(text, int | float):
        return float(text)
    match = _FIO_SIZE.match(str(text))
    if match is None:
        raise UnitError(f"expected a fio size such as 128k or 1M, found {text!r}")
    number, suffix = float(match.group(1)), match.group(2).lower()
    if suffix in ("", "b"):
        return number
    letter, rest = suffix[0], suffix[1:]
    if letter not in _FIO_LETTERS or rest not in ("", "b", "ib"):
        raise UnitError(f"expected a fio size suffix (k, m, g, t, p, optionally with B or iB), found {match.group(2)!r} in {text!r}")
    iec = rest == "ib"
    binary = iec if kb_base == 1000 else not iec
    return number * (1024.0 if binary else 1000.0) ** _FIO_LETTERS[letter]
