"""Quantities with units: the conversions people rely on in scenario files."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from iowatt.models.units import (
    UnitError,
    parse_bytes,
    parse_bytes_per_second,
    parse_fraction,
    parse_joules,
    parse_seconds,
    parse_watts,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("415 GB", 415e9),
        ("1 MiB", 2**20),
        ("1.5GiB", 1.5 * 2**30),
        ("128k", 128 * 1024),  # fio reads bare suffixes as binary (kb_base=1024)
        ("4K", 4096),
        (4096, 4096.0),
        ("61.44 TB", 61.44e12),
    ],
)
def test_sizes(text, expected):
    assert parse_bytes(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("parser", "text", "expected"),
    [
        (parse_seconds, "25 us", 25e-6),
        (parse_seconds, "2 h", 7200.0),
        (parse_seconds, "1.5", 1.5),
        (parse_watts, "20 W", 20.0),
        (parse_watts, "500 mW", 0.5),
        (parse_joules, "1 Wh", 3600.0),
        (parse_bytes_per_second, "12 GB/s", 12e9),
        (parse_bytes_per_second, "100 Gb/s", 12.5e9),  # bits: capital-G lower-b
        (parse_bytes_per_second, "1 GiB/s", 2**30),
        (parse_fraction, "80 %", 0.8),
        (parse_fraction, 0.25, 0.25),
    ],
)
def test_other_units(parser, text, expected):
    assert parser(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["3 XB", "GB", "", "1e999 GB", True, None, [1], "12 GB/h"])
def test_bad_sizes_say_what_was_expected_and_found(bad):
    with pytest.raises(UnitError, match="expected"):
        parse_bytes(bad)


@given(st.floats(0, 1e15, allow_nan=False), st.sampled_from(["B", "kB", "MB", "GB", "TB"]))
def test_decimal_prefixes_scale_by_powers_of_1000(number, unit):
    factor = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]
    assume(number * factor == 0 or number * factor >= 1)  # a fraction of a byte is refused (issue 36 item 16)
    assert parse_bytes(f"{number!r} {unit}") == pytest.approx(number * factor, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "kb_base", "expected"),
    [
        ("128k", 1024, 131072), ("128K", 1024, 131072), ("128KB", 1024, 131072), ("128KiB", 1024, 128000),
        ("1m", 1024, 2**20), ("1t", 1024, 2**40), ("2p", 1024, 2 * 2**50), ("4096", 1024, 4096), ("512b", 1024, 512),
        ("128k", 1000, 128000), ("128kB", 1000, 128000), ("128KiB", 1000, 131072), ("1MiB", 1000, 2**20), ("1t", 1000, 1e12),
    ],
)
def test_fio_sizes_follow_kb_base(text, kb_base, expected):
    """Oracle: fio(1) `kb_base`: 1024 (default) reads k/KB as 1024 and KiB as 1000 (compatibility
    inversion); 1000 reads kB as 1000 and KiB as 1024, as IEC 80000-13 says."""
    from iowatt.models.units import fio_size_bytes

    assert fio_size_bytes(text, kb_base) == expected


@pytest.mark.parametrize("text", ["12x", "k", "1 kibibyte", "1kk", ""])
def test_bad_fio_sizes_are_refused_with_what_was_found(text):
    from iowatt.models.units import UnitError, fio_size_bytes

    with pytest.raises(UnitError, match="found"):
        fio_size_bytes(text)
