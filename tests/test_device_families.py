"""Device families from one registry (issue 29): models.catalog.DRIVE_FAMILIES names each family's catalog kind and
spec class; its runtime, both faces, is simulator/storage/<kind>.py (FAMILY).  The SATA SSD family shows what one
family takes: simulator/storage/sata_ssd.py, one registry line, models/catalog/sata_ssd.yaml and this test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.models.links import SERIAL_LINK_Bps
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.simulator.run import simulate
from iowatt.simulator.storage import families

from tests.test_per_request_referee import TOLERANCE, compare

CATALOG = Path(catalog.__file__).parent


@pytest.mark.parametrize("kind", list(catalog.DRIVE_FAMILIES))
def test_every_family_has_a_runtime_and_a_catalog(kind: str) -> None:
    assert families.runtime(kind).kind == kind
    assert (CATALOG / f"{kind}.yaml").is_file()
    assert catalog.entries(kind), f"no {kind} entry in the catalog"


@pytest.mark.parametrize(("name", "kind"), [("micron-7450-pro", "ssd"), ("micron-5210-ion", "sata_ssd"),
                                            ("hdd-7200rpm-sas-8tb", "hdd"), ({"base": "micron-5210-ion", "idle_W": 1.0}, "sata_ssd")])
def test_a_drive_resolves_to_its_family(name: str | dict, kind: str) -> None:
    assert catalog.drive_family(name)[0] == kind


def _fio(device: str | dict, rw: str, **extra: object) -> dict[str, float]:
    scenario = load({"name": "family", "system": {"storage": {"device": device, "count": 1, **extra}},
                     "workload": {"kind": "fio", "rw": rw, "rwmixread": 50, "bs": "128k", "iodepth": 32, "size": "1G"}}, [])
    return simulate(scenario.system, scenario.workload, 1).metrics


def test_a_sata_link_carries_its_payload_once_for_both_directions() -> None:
    """Oracle: conservation on a half-duplex link (Serial ATA 3.x sends one FIS at a time): reads and writes
    together move at most the link's 600 MB/s payload.  A SATA drive whose writes land in a fast pSLC cache has
    media for more (a full-duplex link would let it move 850 MB/s, as the model did before the family existed);
    the mix now fills the link exactly and no more."""
    m = _fio({"base": "micron-5210-ion", "slc_cache_max_fraction": 0.1, "slc_write_MBps": 2000}, "rw")
    assert m["read_bw_bytes"] + m["write_bw_bytes"] == pytest.approx(SERIAL_LINK_Bps["sata"], rel=1e-9)


def test_a_sata_ssd_refuses_nvme_power_states_naming_the_field() -> None:
    with pytest.raises(ScenarioError, match="power_state"):
        load({"system": {"storage": {"device": "micron-5210-ion", "power_state": "PS1"}}, "workload": {"kind": "fio"}}, [])


@pytest.mark.parametrize("depth", [1, 32])
def test_both_faces_of_a_sata_ssd_agree(depth: int) -> None:
    """Oracle: the per-request face, an independent one-request-at-a-time simulation of the same drive
    (tests/test_per_request_referee.py), within the referee's 3 %."""
    gaps = compare("micron-5210-ion", 1, "randread", 4096, depth)
    for name, gap in gaps.items():
        assert abs(gap) <= TOLERANCE, (depth, name, gaps)
