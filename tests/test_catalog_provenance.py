"""Every number in the catalog says where it comes from, set in the entry or defaulted (issue 18 item 13).

Oracle: the specs' own values (model_dump) walked field by field, against the
provenance records the loader keeps; and the spec classes' declared defaults.
"""

from __future__ import annotations

import pytest
from iowatt.models import catalog
from iowatt.models.catalog.defaults import DEFAULT_PROVENANCE
from iowatt.models.ssd import SSDSpec


def holds_a_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, dict):
        return any(holds_a_number(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_a_number(v) for v in value)
    return False


@pytest.mark.parametrize("entry", catalog.entries(), ids=lambda e: f"{e.kind}:{e.name}")
def test_every_numeric_field_has_provenance(entry):
    """Before: read_latency_us, write_latency_us, over_provisioning (and the 7450's warranty_years,
    indirection_unit_bytes) had none wherever the entry left the spec's default in place."""
    missing = []
    for field, value in entry.spec.model_dump(mode="json").items():
        if not holds_a_number(value):
            continue
        recorded = field in entry.provenance or any(path.startswith(f"{field}.") for path in entry.provenance)
        if not recorded:
            missing.append(field)
    assert not missing, f"{entry.name}: no provenance for {missing}"
    for field, prov in entry.provenance.items():
        assert prov.src or prov.note, (entry.name, field)


def test_every_numeric_default_of_the_ssd_spec_has_a_reason():
    """A new defaulted field cannot slip in without its provenance."""
    defaulted = {name for name, field in SSDSpec.model_fields.items()
                 if isinstance(field.default, int | float) and not isinstance(field.default, bool)}
    assert defaulted <= set(DEFAULT_PROVENANCE["ssd"]), defaulted - set(DEFAULT_PROVENANCE["ssd"])
    assert all(p.p == "assumed" and len(p.note) > 40 for p in DEFAULT_PROVENANCE["ssd"].values())


def test_a_value_the_entry_sets_keeps_its_own_provenance():
    entry = catalog.lookup("ssd", "micron-9550-pro")
    assert entry.provenance["read_latency_us"].p == "datasheet" and "S11" in entry.provenance["read_latency_us"].src
    default = catalog.lookup("ssd", "micron-7450-pro").provenance
    assert default["warranty_years"].p == "assumed" and default["indirection_unit_bytes"].p == "assumed"
