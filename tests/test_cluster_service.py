"""models.cluster_service: WEKA's documented core rules, and the per-core defaults against the rows they come from.

The per-core rates are calibrated on the SuperMicro rows of docs.weka.io's performance
page: this is the check that the calibration and the volume agree (the rows are the
fitting data, not a validation).  The cluster is built as the page describes it (8
backends with 12 compute + 6 drive cores of Xeon Gold 6126, dual 100 GbE, 4+2; clients
with 6 frontend cores) and each wekatester job is predicted: the throughput rows land
within 10 % (the rest is the MVA's queueing at the jobs' depths).  The Micron 9300 of the
test is not in the catalog; the 9200 PRO stands in (its NAND read latency is higher, so
only the write latency row is compared tightly).
"""

from __future__ import annotations

import math

import pytest
import simpy
from iowatt.models import cluster_service as svc
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.storage import Access
from iowatt.simulator.system import SystemConfig, SystemRuntime

GIB = 2.0**30
XEON_6126 = {"base": "intel-xeon-gold-6146", "cores": 12, "core_speed": svc.WEKA_TEST_CORE_SPEED, "base_clock_GHz": 2.6}


def weka_supermicro(clients: int) -> SystemRuntime:
    storage = {"kind": "cluster", "nodes": 8, "drives_per_node": 6, "device": "micron-9200-pro", "erasure_coding": "4+2",
               "node": {"cpu": XEON_6126, "sockets": 2, "memory": "384 GB"}, "node_nics": 2, "fabric": "100gbe", "mtu": 9000,
               "clients": clients, "client_nics": 2, "software": {"compute_cores": 12, "drive_cores": 6}, "client": {"frontend_cores": 6}}
    server = {"cpu": XEON_6126, "sockets": 2, "memory": "192 GB"}
    return SystemRuntime(FlowEngine(simpy.Environment()), SystemConfig.model_validate({"server": server, "storage": storage}))


def test_weka_core_rules():
    assert [svc.drive_processes(n) for n in (1, 6, 7, 8, 10, 12)] == [1, 6, 7, 7, 8, 9]
    assert svc.compute_processes(6) == 12  # the SuperMicro backends: 6 drive, 12 compute cores


# wekatester jobs (docs.weka.io): 1 MiB at 32 jobs x QD1, 4 KiB at 64 jobs x QD8, per client
ROWS = [
    (1, "read", 2**20, "seq", 32, 21.4 * GIB), (1, "write", 2**20, "seq", 32, 17.2 * GIB),
    (1, "read", 4096, "rand", 512, 563667 * 4096), (1, "write", 4096, "rand", 512, 378667 * 4096),
    (8, "read", 2**20, "seq", 256, 123 * GIB), (8, "write", 2**20, "seq", 256, 37.6 * GIB),
    (8, "read", 4096, "rand", 4096, 4346330 * 4096), (8, "write", 4096, "rand", 4096, 1317000 * 4096),
]


@pytest.mark.parametrize(("clients", "op", "block", "pattern", "depth", "published_Bps"), ROWS)
def test_defaults_reproduce_the_weka_rows_they_were_calibrated_on(clients, op, block, pattern, depth, published_Bps):
    volume = weka_supermicro(clients).volume
    access = Access(op, float(block), pattern, float(depth))
    ceiling = min(c.capacity / k for c, k in volume.usage(access) if k > 0 and c.capacity < math.inf)
    predicted = min(volume.solve(access).throughput * block, ceiling)
    assert predicted == pytest.approx(published_Bps, rel=0.10)


def test_qd1_write_latency_matches_the_weka_row():
    """4 KiB random write at QD1: 107.12 us published; the stations, 4 hops and the drive's buffered write."""
    volume = weka_supermicro(1).volume
    assert volume.qd1_latency_s(Access("write", 4096.0, "rand")) == pytest.approx(107.12e-6, rel=0.10)
    assert volume.qd1_latency_s(Access("read", 4096.0, "rand")) == pytest.approx(144.76e-6, rel=0.35)
