"""What each drive of a volume holds after a write is announced (Volume.store): conservation of bytes.

Oracle: the layout's arithmetic.  A file of B bytes puts B / n on each of n striped drives, B / (n - 1) on each
drive of an n-drive RAID 5 (data and parity of whole stripes), and B (k + m) / k spread over the nodes x drives
of a k+m erasure-coded cluster; a drive that stands for several (a cluster's lumped drives) stores one share.
"""

from __future__ import annotations

import pytest
from iowatt.models import catalog, erasure
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

DEVICE = "micron-7450-pro"
WRITE = {"kind": "fio", "rw": "write", "bs": "1M", "iodepth": 8, "numjobs": 1, "size": "2 TB"}
CLUSTER = {"kind": "cluster", "nodes": 6, "drives_per_node": 10, "erasure_coding": "4+2", "node": {"cpu": "amd-epyc-9654p"},
           "fabric": "200gbe", "clients": 2}


@pytest.mark.parametrize(
    ("storage", "share"),
    [
        ({"kind": "local", "count": 4}, 1 / 4),
        ({"kind": "raid", "level": 5, "count": 6}, 1 / 5),
        (CLUSTER, (4 + 2) / 4 / (6 * 10)),
    ],
)
def test_each_drive_holds_its_share_of_a_file(storage: dict, share: float) -> None:
    scenario = {"system": {"storage": {**storage, "device": DEVICE}}, "workload": WRITE}
    document, _ = run_scenario(load(scenario))
    written = document["metrics"]["write_io_bytes"]
    capacity = catalog.drive_spec(DEVICE).capacity_bytes
    reports = document["fio"]["drives"]
    assert reports
    # a cluster also writes each request's extent metadata on m + 1 nodes (models.erasure), spread over its drives
    metadata = written / 2**20 * 3 * erasure.METADATA_BYTES_PER_WRITE / 60 if storage["kind"] == "cluster" else 0.0
    for d in reports:
        assert d["host_bytes_written"] == pytest.approx(written * share + metadata, rel=1e-6)
        assert d["fill_end"] * capacity == pytest.approx(written * share, rel=1e-6)
        assert d["write_amplification_mean"] == pytest.approx(1.0, rel=1e-9)  # new sequential data on fresh drives
