"""Host interface of a volume's drives: HBA command processor and PCIe link, SAS expander, PCIe switch.

Oracles: the PCIe payload law (models.links: line rate x encoding x MPS / (MPS + 24 B TLP overhead)),
SAS-3's 1.2 GB/s per lane after 8b/10b, and conservation: every byte read from a member crosses the
shared link once.
"""

from __future__ import annotations

import pytest
import simpy
from iowatt.models import catalog
from iowatt.models.links import pcie_payload_Bps
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemConfig, SystemRuntime

SSD = "micron-5210-ion"
READ = Access("read", 131072, "rand", 256)


def _rate(storage: dict) -> tuple[float, SystemRuntime]:
    engine = FlowEngine(simpy.Environment())
    system = SystemRuntime(engine, SystemConfig.model_validate({"storage": storage}))
    volume = system.volume
    law = volume.concurrency(READ).requests_per_second(READ.queue_depth) * READ.block_bytes
    flow = engine.start("probe", 1e12, volume.usage(READ), max_rate=law)
    engine.env.run(until=1e-9)
    return flow.rate, system


def test_hba_pcie_link_caps_a_sixteen_drive_array():
    """Oracle: PCIe 3.0 x8 at MPS 256 carries 7.88 GB/s x 256/280 = 7.20 GB/s of payload."""
    free, _ = _rate({"kind": "raid", "level": 5, "count": 16, "device": SSD})
    capped, system = _rate({"kind": "raid", "level": 5, "count": 16, "device": SSD, "attach": {"hba": "broadcom-9300-16i"}})
    link = pcie_payload_Bps(3, 8, 256)
    assert free > link  # 16 SATA SSDs at 16 outstanding each out-run the adapter's link
    assert capped == pytest.approx(link, rel=1e-6)
    assert "PCIe link" in str(system.volume.report()["closed_loop"]["binding"])


def test_expander_wide_port_carries_its_lanes():
    """Oracle: a x4 SAS-3 wide port carries 4 x 1.2 GB/s."""
    capped, system = _rate({"kind": "raid", "level": 0, "count": 16, "device": SSD,
                            "attach": {"hba": "broadcom-9300-8i", "expander_lanes": 4}})
    assert capped == pytest.approx(4 * 1.2e9, rel=1e-6)
    assert "expander" in str(system.volume.report()["closed_loop"]["binding"])


def test_switch_uplink_is_shared_by_nvme_drives():
    """Oracle: four Gen5 drives behind a Gen4 x4 uplink share its 7.20 GB/s (conservation)."""
    capped, _ = _rate({"kind": "local", "count": 4, "device": "micron-9550-pro", "attach": {"switch_uplink": {"generation": 4, "lanes": 4}}})
    assert capped == pytest.approx(pcie_payload_Bps(4, 4, 256), rel=1e-6)


def test_hba_command_rate_binds_small_reads():
    """Oracle: one command per 4 KiB read; an adapter of C commands/s passes C x 4096 B/s at most."""
    spec = catalog.spec_from("hba", "broadcom-9300-8i")
    engine = FlowEngine(simpy.Environment())
    system = SystemRuntime(engine, SystemConfig.model_validate(
        {"storage": {"kind": "local", "count": 24, "device": "micron-9550-pro", "attach": {"hba": "broadcom-9300-8i"}}}))
    usage = system.volume.usage(Access("read", 4096, "rand", 4096))
    flow = engine.start("probe", 1e12, usage)
    engine.env.run(until=1e-9)
    assert flow.rate <= spec.max_iops * 4096 * (1 + 1e-9)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("attach", "message"),
    [
        ({"expander_lanes": 4}, "expander_lanes: an expander hangs off an HBA; give `hba` too, found none"),
        ({"hba": "no-such-hba"}, "expected a hba name from the catalog"),
    ],
)
def test_bad_attach_names_the_field(attach: dict, message: str):
    data = {"name": "x", "system": {"storage": {"kind": "raid", "level": 5, "count": 4, "device": SSD, "attach": attach}},
            "workload": {"kind": "fio", "rw": "randread"}}
    with pytest.raises(ScenarioError) as error:
        load(data)
    assert message in str(error.value)
    assert "attach" in str(error.value)
