"""GPUDirect Storage rows beyond the five studies (issue 35): Solidigm's GDS page (D7-P5520 into a Grace Hopper).

Oracles: the published figures of Solidigm's page (used in no fit), which must lie inside what the model gives over
the assumed range of the one unknown input, gdsio's thread count; the drive's own sequential ceiling (no reading
of the page's gdsio options may move more than the drive's Gen4 x4 link carries: conservation of bytes); the
closed-network monotonicity of more outstanding reads (Buzen/Mean Value Analysis: throughput never falls with N).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "scenarios" / "library" / "gds" / "solidigm_gh200_p5520.yaml"
TABLE = REPO / "scenarios" / "validation" / "published.yaml"
GiB = 2**30
# Solidigm, Accelerating AI with high performance storage, Table 1 (GDS path, GiB/s)
PUBLISHED = {"64 KiB": 4.35, "128 KiB": 5.21, "512 KiB": 6.50, "1 MiB": 6.59, "4 MiB": 6.62}


def _bw(block: str, threads: int, size: str = "128 MiB") -> float:
    doc, _ = run_scenario(load(SCENARIO, [f"workload.block_size={block}", f"workload.threads={threads}", f"workload.size_per_thread={size}"]))
    return doc["metrics"]["bandwidth_GiB_per_second"]


def test_the_rows_are_in_the_table_with_the_page_values():
    rows = {r["id"]: r for r in yaml.safe_load(TABLE.read_text())["measurements"] if r["id"].startswith("sol.gds.p5520.")}
    assert {r["set"]["workload.block_size"]: r["measured"] for r in rows.values()} == PUBLISHED


def test_the_gdsio_threads_are_assumed_with_a_range_not_fitted():
    """Issue 35: no gdsio thread count is fitted on a published row any more; each is an assumed input with a range."""
    for path in (SCENARIO, *sorted((REPO / "scenarios" / "library" / "storagereview").glob("gdsio_l4_*.yaml"))):
        record = yaml.safe_load(path.read_text())["provenance"]["workload.threads"]
        assert record["p"] == "assumed" and "fitted_on" not in record, path.name
        assert record["low"] <= yaml.safe_load(path.read_text())["workload"]["threads"] <= record["high"], path.name


@pytest.mark.parametrize("block", list(PUBLISHED))
def test_each_published_figure_lies_inside_the_model_over_the_assumed_thread_range(block):
    """The page's figure lies between the model at the range's ends (1 and 16 gdsio threads), within the table's 10 %."""
    low, high = _bw(block, 1), _bw(block, 16)
    assert low <= high
    assert low * 0.9 <= PUBLISHED[block] <= high * 1.1, (block, low, high)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_KiB=st.sampled_from([16, 64, 128, 512, 1024, 4096]), threads=st.integers(min_value=1, max_value=32))
def test_no_reading_exceeds_the_drive_and_more_threads_never_slow_it(block_KiB, threads):
    link = catalog.spec_from("ssd", "solidigm-d7-p5520").link  # type: ignore[union-attr]
    ceiling_GiBps = link.lanes * 16e9 * 128 / 130 / 8 / GiB  # Gen4: 16 GT/s per lane, 128b/130b, before TLP headers
    one, more = _bw(f"{block_KiB} KiB", threads, "32 MiB"), _bw(f"{block_KiB} KiB", threads + 1, "32 MiB")
    assert 0.0 < one <= ceiling_GiBps * 1.0001
    assert more >= one * (1 - 1e-9)
