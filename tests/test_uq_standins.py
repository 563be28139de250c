"""The multi-node MLPerf scenarios' stand-ins as ranged inputs: what a submission's system description states (a CPU's
cores and clock, a drive's read rate) is what the scenario runs, and what the catalog lacks is drawn over its range.

Oracles: the submissions' system descriptions (mlcommons/storage_results_v1.0 Closed/*/systems/*.json: cores per
socket and sockets of the client nodes, the data drives' stated read rate, the storage nodes benchmark_hosts lists,
the client ports nic_ports and the mount command state); a theory (a slower client CPU never serves the loader
faster, nor does a client with fewer ports: the run's throughput is non-increasing in the CPU's cost per byte and
in the client link's time per byte).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario
from iowatt.scenarios.uncertain_inputs import subject_of

LIBRARY = Path(__file__).parents[1] / "scenarios" / "library" / "mlperf_storage_v1_multinode"
SCENARIOS = sorted(p.stem for p in LIBRARY.glob("*.yaml"))
# client nodes as each submission's systems/*.json states them: (cores per socket, sockets)
STATED_CLIENT = {"ddn": (20, 1), "hpe": (32, 1), "hammerspace": (32, 2), "iei": (64, 1), "nutanix": (64, 1),
                 "weka": (56, 2), "yanrong_f9000x": (48, 2), "yanrong_f8000x": (48, 2)}
# data drives' stated sequential read (GB/s) where the catalog's drive is the one the scenario names
STATED_READ_GBps = {"iei": 14.0, "yanrong_f9000x": 14.0, "hammerspace": 0.5}
# storage nodes a description's benchmark_hosts lists (Hammerspace: storage-server-1..22)
STATED_STORAGE_NODES = {"hammerspace": 22}


def _vendor(stem: str) -> str:
    return max((v for v in STATED_CLIENT if stem.startswith(v)), key=len)


def _spec(ref: object, kind: str) -> dict:
    if isinstance(ref, str):
        return catalog.lookup(kind, ref).spec.model_dump()
    assert isinstance(ref, dict)
    return {**catalog.lookup(kind, ref["base"]).spec.model_dump(), **{k: v for k, v in ref.items() if k != "base"}}


@pytest.mark.parametrize("stem", SCENARIOS)
def test_the_client_cpu_is_the_stated_one_and_its_speed_is_drawn(stem: str):
    scenario = load(str(LIBRARY / f"{stem}.yaml"))
    data = scenario.model_dump(mode="json", exclude_unset=True)
    server = data["system"]["server"]
    cores, sockets = STATED_CLIENT[_vendor(stem)]
    assert (_spec(server["cpu"], "cpu")["cores"], server["sockets"]) == (cores, sockets)
    _, inputs = subject_of(scenario, stem, set())
    by_path = {i.path: i for i in inputs}
    speed = by_path["system.server.cpu.core_speed"]
    assert speed.kind == "field" and speed.range.low <= speed.nominal <= speed.range.high < 2 * speed.range.low
    # the stated value replaces the stand-in's catalog figure: one input, not two
    assert sum(i.path == "system.server.cpu.core_speed" for i in inputs) == 1


@pytest.mark.parametrize("stem", [s for s in SCENARIOS if _vendor(s) in STATED_READ_GBps])
def test_drives_read_at_their_stated_rate(stem: str):
    data = load(str(LIBRARY / f"{stem}.yaml")).model_dump(mode="json", exclude_unset=True)
    ref = data["system"]["storage"]["device"]
    spec = _spec(ref, catalog.drive_family(ref if isinstance(ref, str) else ref["base"])[0])
    assert spec["seq_read_MBps"] / 1000 == pytest.approx(STATED_READ_GBps[_vendor(stem)], rel=0.05)


def test_a_slower_client_cpu_never_reads_faster(tmp_path: Path):
    """Theory: the loader's CPU cost per byte only grows as the core slows, so the run's throughput is non-increasing
    in it: the HPE row's client CPU at the low and the high end of its range."""
    text = (LIBRARY / "hpe_e1000_unet3d_h100.yaml").read_text()
    scenario = load(str(LIBRARY / "hpe_e1000_unet3d_h100.yaml"))
    record = scenario.provenance["system.server.cpu.core_speed"]
    rates = []
    for speed in (record.low, record.high):
        path = tmp_path / f"hpe_{speed}.yaml"
        path.write_text(text.replace("core_speed: 0.775}", f"core_speed: {speed}}}", 1))
        document, _ = run_scenario(load(str(path)))
        rates.append(document["metrics"]["train_io_mean_MB_per_second"])
    assert rates[0] <= rates[1]


@pytest.mark.parametrize("stem", [s for s in SCENARIOS if _vendor(s) in STATED_STORAGE_NODES])
def test_storage_nodes_are_the_listed_ones(stem: str):
    data = load(str(LIBRARY / f"{stem}.yaml")).model_dump(mode="json", exclude_unset=True)
    assert data["system"]["storage"]["servers"] == STATED_STORAGE_NODES[_vendor(stem)]


@pytest.mark.parametrize("stem", [s for s in SCENARIOS if _vendor(s) == "weka"])
def test_weka_client_ports_are_drawn_over_the_two_stated_counts(stem: str):
    """The WEKA description states the client's ports two ways (nic_ports: one 400 Gb/s port; the mount: two net=
    devices): the scenario runs the mount's two and draws whole ports over 1..2."""
    scenario = load(str(LIBRARY / f"{stem}.yaml"))
    _, inputs = subject_of(scenario, stem, set())
    ports = {i.path: i for i in inputs}["system.storage.client_nics"]
    assert (ports.range.low, ports.range.high, ports.nominal, ports.integer) == (1, 2, 2, True)


def test_fewer_client_ports_never_read_faster(tmp_path: Path):
    """Theory: one port of the client's two carries the same bytes in twice the link time, so the WEKA unet3d row's
    throughput at the low end of its port range is not above the high end's."""
    text = (LIBRARY / "weka_unet3d_a100.yaml").read_text()
    rates = []
    for ports in (1, 2):
        path = tmp_path / f"weka_{ports}.yaml"
        path.write_text(text.replace("    client_nics: 2\n", f"    client_nics: {ports}\n", 1))
        document, _ = run_scenario(load(str(path)))
        rates.append(document["metrics"]["train_io_mean_MB_per_second"])
    assert rates[0] <= rates[1]
