"""docs/power.md's closing note lists every power value still assumed, with its range, and nothing else.

Oracle: the provenance records themselves (catalog entries and models.ssd_power's PROVENANCE map): the list in
the doc is checked against them, so a value that becomes measured, or a new assumed one, must change the doc.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from iowatt.models import catalog, ssd_power

DOC = Path(__file__).resolve().parents[1] / "docs" / "power.md"
# the fields of a drive's catalog entry that are power values
POWER_FIELDS = ("idle_W", "active_read_W", "active_write_W", "active_floor_W", "energy_per_io_uJ", "power_states",
                "random_W", "sequential_W", "standby_W")
DRIVE_KINDS = ("ssd", "sata_ssd", "hdd")
_ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$")


def _doc_rows() -> dict[tuple[str, str], tuple[str, str]]:
    text = DOC.read_text()
    section = text.split("## Power values still assumed", 1)[1]
    rows = {}
    for line in section.splitlines():
        match = _ROW.match(line.strip())
        if match:
            where, field, taken, spread = (g.strip() for g in match.groups())
            assert (where, field) not in rows, f"listed twice: {where} {field}"
            rows[(where, field)] = (taken, spread)
    return rows


def _expected() -> dict[tuple[str, str], tuple[float, float]]:
    expected: dict[tuple[str, str], tuple[float, float]] = {}
    for kind in DRIVE_KINDS:
        for entry in catalog.entries(kind):
            for field, prov in entry.provenance.items():
                # a field the entry leaves unset takes a models.ssd_power constant, listed as that constant
                if field in POWER_FIELDS and prov.p == "assumed" and entry.spec.model_dump().get(field) is not None:
                    assert prov.low is not None and prov.high is not None, f"{entry.name} {field}: assumed without a range"
                    expected[(f"{kind}/{entry.name}", field)] = (prov.low, prov.high)
    for name, prov in ssd_power.PROVENANCE.items():
        if prov.p == "assumed":
            assert prov.low is not None and prov.high is not None, f"models.ssd_power {name}: assumed without a range"
            expected[("models.ssd_power", name)] = (prov.low, prov.high)
    return expected


def test_the_closing_note_lists_every_assumed_power_value_and_only_those():
    listed, expected = _doc_rows(), _expected()
    missing = sorted(set(expected) - set(listed))
    extra = sorted(set(listed) - set(expected))
    assert not missing, f"assumed power values missing from docs/power.md: {missing}"
    assert not extra, f"docs/power.md lists values that are no longer assumed: {extra}"


@pytest.mark.parametrize("key", sorted(_expected()), ids=lambda k: f"{k[0]}:{k[1]}")
def test_each_listed_range_is_the_records_range(key):
    low, high = _expected()[key]
    spread = _doc_rows()[key][1]
    numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", spread)]
    assert numbers == pytest.approx([low, high]), f"{key}: doc says {spread!r}, record says {low} .. {high}"


def test_each_listed_value_is_the_catalogs():
    """Where the doc gives a number as the value taken, it is the catalog entry's value."""
    by_name = {f"{kind}/{e.name}": e.spec.model_dump() for kind in DRIVE_KINDS for e in catalog.entries(kind)}
    for (where, field), (taken, _) in _doc_rows().items():
        value = by_name.get(where, {}).get(field)
        if isinstance(value, float) and re.fullmatch(r"-?\d+(?:\.\d+)?", taken):
            assert float(taken) == pytest.approx(value), f"{where} {field}: doc {taken}, catalog {value}"
