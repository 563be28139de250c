"""The project's own validation table against every published measurement, and the goal's accuracy bars.

Oracles: the reference file shared/reference/published_results.yaml (ids, values,
units and relative claims are checked against it, independently of the table);
the goal's bars on predicted rows only (median |error| <= 10 %, max <= 25 %,
every ratio's direction right, no row failing to run), not today's worst row;
the issue's list of rows that had a value fitted on them; and, for each row that
says it restates another, the law that makes it a restatement (bandwidth = IOPS x
block, Little's law, throughput = size / time) checked on the two predictions.
The whole rendered table is printed so that a failure shows what moved.
"""

from __future__ import annotations

import os
import re
import statistics
from pathlib import Path

import pytest
import yaml
from iowatt.scenarios.validation import ValidationReport, read_table, validate_file

from iowatt.commands.validation_view import render_text

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "scenarios" / "validation" / "published.yaml"
# the shared reference lives beside the checkout (../shared); IOWATT_REFERENCE overrides
REFERENCE_CANDIDATES = [Path(p) for p in [os.environ.get("IOWATT_REFERENCE", "")] if p] + [
    REPO.parent / "shared" / "reference" / "published_results.yaml",
    Path("/work/shared/reference/published_results.yaml"),
]
# the goal (issue 5, restated by issue 13 on predicted rows only)
MEDIAN_BAR = 0.10
MAX_BAR = 0.25
# rows a value was fitted on (issue 13's list less the two GNN IOPS ratios, whose energy-per-I/O fits issue 17's
# component power model replaced): the AMAX HDD IOPS (reorder efficiency), the D7-PS1010 pass 1 (DLIO tensor
# generation), the 9200 epoch (CNTK decode time), the HDD epoch (layout); the gdsio threads are no longer fitted (issue 35:
# an assumed input with a range, from the same lab's DL145 gdsio figures)
FITTED = {"amax.fio.hdd.iops", "sr.ckpt.ps1010.pass1", "amax.epoch.9200", "amax.epoch.hdd"}
# predicted rows the model misses by more than the goal's max bar, and why (issue 17): with the CM7-R's and the PM1743's
# energy per I/O no longer fitted on the IOPS ratios, both drives reach their datasheet 4 KiB IOPS under GIDS (the
# component model keeps them under their 25 W cap), so the model has no reason for the 9550's 31 % / 60 % lead and
# the energies that follow from the two drives' longer runs.  What limits them under GIDS is not in the model.
KNOWN_MISSES = {"m9550.gnn.iops_vs_cm7r", "m9550.gnn.iops_vs_pm1743", "m9550.gnn.ssd_energy_pm1743", "m9550.gnn.ssd_energy_vs_cm7r"}
# The A100 CosmoFlow rows of MLPerf Storage v1.0 (15 and 150 ranks), like every CosmoFlow result of the round, were
# sized to just above AU 70 %; what held them there is a per-file limit the model lacks (one client of other systems
# reads 11-18 GB/s of CosmoFlow's 2.8 MB files where it reads 27-70 GB/s of unet3d's; on the 6500 ION both CosmoFlow
# runs read 5.2-5.6 GB/s where resnet50 reads 6.9-7.0), so the model's ranks stop at its TF loop and sit 12-15 % high.
KNOWN_MISSES |= {"mlps1.mn.ddn.cosmoflow.a100", "mlps.6500.cosmoflow.a100"}
# issue 31: public multi-node MLPerf Storage v1.0 closed rows (mlcommons/storage_results_v1.0), not in the shared reference
PUBLIC_MULTINODE_PREFIX = "mlps1.mn."
# the open division's pair of the same 411 ranks with and without DLIO's per-step barrier (Volumez)
PUBLIC_OPEN_PREFIX = "mlps1.open."
# Issue 35: Solidigm's GDS page states no gdsio options; at the assumed four threads (NVIDIA's GDS-on-NVMe walk-through)
# the P5520 serves 64 KiB and 128 KiB reads at too low a depth; the assumed range's high end (16 threads) meets them.
KNOWN_MISSES |= {"sol.gds.p5520.64k", "sol.gds.p5520.128k"}
# issue 30 (branch arrays): public array and NFS rows beyond the five studies (scenarios/library/arrays/), each source a
# public repository's file.  Of burrito's RDMA / TCP ratios to a ramdisk export, the sequential writes miss: the model
# lets RDMA writes run at the 100GbE port (12.2 GB/s) while the page's ratio puts them near 7 GB/s, so something on the
# server's write path binds that the model lacks; and NFSv4.2's random-read ratio (2.30 against NFSv3's 1.84) needs a
# version difference the model does not have (docs/arrays.md).
PUBLIC_ARRAYS_PREFIX = "arrays."
# branch gds: BaM's block benchmark logs (public_evidence.md section 3; ZaidQureshi/bam asplosaoe/)
PUBLIC_BAM_PREFIX = "bam."
BAM_980PRO_OPS_PER_S = {1: 798_519, 2: 1.52355e6}  # Ops/sec of nvm_block_bench_1_sam.log and _2_sam.log
# branch gds: BaM's block benchmark on a Samsung 980 PRO reaches 80 % of the drive's datasheet 4 KiB ceiling, which the
# model serves (the same reading that lets the PM1743 and the CM7-R reach theirs under GIDS); two drives over one is
# predicted (docs/gpu-direct.md)
KNOWN_MISSES |= {"bam.block.980pro.1ssd"}
# branch gds: a public GDS benchmark report's gdsio runs (gds-bench.farmgpu.net, gdsio page): four D7-PS1010 in md
# RAID-0 into one L40S (Run 1 peak) and into four at once (Run 2 peak read), GiB/s as the page prints them
PUBLIC_GDSBENCH_PREFIX = "gdsbench."
GDSBENCH_GiB_PER_S = {"gdsbench.l40s.ps1010x4.1gpu.8m": 24.3, "gdsbench.l40s.ps1010x4.4gpu.8m": 53.0}
KNOWN_MISSES |= {"arrays.burrito.nfs3.seqwrite.rdma_vs_tcp", "arrays.burrito.nfs4.seqwrite.rdma_vs_tcp",
                 "arrays.burrito.nfs4.randread.rdma_vs_tcp"}
# Two Linux md commits with measurements: in Stockhausen's RAID 6 random writes the rate is nearly flat in IOPS from
# 4 KiB to 512 KiB, so the full stripe's 10 writes (the model: 1.74x the 256 KiB bandwidth) run as fast as a 256 KiB
# write's reconstruct-write (measured 2.60x): a per-request cost the model lacks dominates (md's write-intent bitmap
# is the candidate).  In Shaohua Li's, group_thread_cnt=4 lifts a 9-disk array 1.58x where the model lets the
# workers take all of raid5d's work (2.34x): the commit keeps a hard-disk array's device I/O dispatch on raid5d.
KNOWN_MISSES |= {"arrays.stockhausen.raid6.randwrite.512k_vs_256k", "arrays.shli.raid5.seqwrite.group4_vs_one_thread"}
# the public sources the arrays rows may cite (a public repository's file, or a Linux commit)
PUBLIC_ARRAYS_SOURCES = ("iorchard/burrito", "deepspeedai/DeepSpeed", "Linux commit 584acdd49cd2", "Linux commit 765d704db1f5")


def _reference() -> dict:
    for path in REFERENCE_CANDIDATES:
        if path.is_file():
            return yaml.safe_load(path.read_text())
    pytest.skip("shared/reference/published_results.yaml is not beside this checkout")


@pytest.fixture(scope="module")
def report() -> ValidationReport:
    result = validate_file(TABLE)
    print("\n" + render_text(result))
    return result


def test_table_covers_every_published_measurement_with_its_value_and_unit():
    reference = {m["id"]: m for m in _reference()["measurements"]}
    table = read_table(TABLE)
    rows = {r.id: r for r in table.measurements}
    missing = sorted(set(reference) - set(rows))
    assert not missing, f"published measurements without a row: {missing}"
    for mid, m in reference.items():
        row = rows[mid]
        assert row.measured == pytest.approx(m["value"], rel=1e-12), mid
        if "unit" in m:
            assert row.unit == m["unit"], (mid, row.unit, m["unit"])
        # a 'relative' claim, or a value without a unit that is a ratio by its reading, is a ratio row
        is_ratio = "relative" in m or "unit" not in m
        assert (row.ratio is not None) == is_ratio, mid
    public = {rid for rid, row in rows.items()
              if rid.startswith(PUBLIC_MULTINODE_PREFIX) and "mlcommons/storage_results_v1.0 Closed/" in row.source}
    public |= {rid for rid, row in rows.items()
               if rid.startswith(PUBLIC_OPEN_PREFIX) and "storage_results_v1.0 Open/Volumez" in row.source}
    public |= {rid for rid, row in rows.items()
               if rid.startswith(PUBLIC_ARRAYS_PREFIX) and any(src in row.source for src in PUBLIC_ARRAYS_SOURCES)}
    bam = {rid for rid, row in rows.items() if rid.startswith(PUBLIC_BAM_PREFIX) and "ZaidQureshi/bam, asplosaoe/" in row.source}
    assert rows["bam.block.980pro.1ssd"].measured == BAM_980PRO_OPS_PER_S[1]
    assert rows["bam.block.980pro.2_vs_1"].measured == pytest.approx(BAM_980PRO_OPS_PER_S[2] / BAM_980PRO_OPS_PER_S[1], abs=5e-4)
    public |= bam
    gdsbench = {rid for rid, row in rows.items() if rid.startswith(PUBLIC_GDSBENCH_PREFIX) and "gds-bench.farmgpu.net" in row.source}
    assert {rid: rows[rid].measured for rid in gdsbench} == GDSBENCH_GiB_PER_S
    public |= gdsbench
    gds = _public_evidence_gds()
    for rid, value in gds.items():
        assert rows[rid].measured == pytest.approx(value, rel=1e-12), rid
    power = _public_evidence_power()  # branch power: the measured drive-power points of section 4
    for rid, value in power.items():
        assert rows[rid].measured == pytest.approx(value, rel=1e-12), rid
    extra = sorted(set(rows) - set(reference) - set(_public_evidence_passes()) - set(gds) - set(power) - public)
    assert not extra, f"rows that are no published measurement: {extra}"


def _public_evidence_gds() -> dict[str, float]:
    """Row id -> GiB/s of public_evidence.md section 2's Solidigm GDS line (D7-P5520 on Grace Hopper, by IO size)."""
    match = re.search(r"D7-P5520 7\.68 TB on Grace Hopper, GDS path: (.*?) GiB/s\.", _evidence_text())
    if not match:
        return {}
    sizes = {"64 KiB": "64k", "128 KiB": "128k", "512 KiB": "512k", "1 MiB": "1m", "4 MiB": "4m"}
    pairs = re.findall(r"(\d+ [KM]iB) ([\d.]+)", match.group(1))
    return {f"sol.gds.p5520.{sizes[size]}": float(value) for size, value in pairs}


def _evidence_text() -> str:
    """public_evidence.md beside the reference file, whitespace collapsed ('' when absent)."""
    for path in REFERENCE_CANDIDATES:
        evidence = path.parent / "public_evidence.md"
        if evidence.is_file():
            return " ".join(evidence.read_text().split())
    return ""


def _public_evidence_power() -> dict[str, float]:
    """Row id -> value of public_evidence.md section 4's Micron 6550 ION line: its 16K random-write power and rate."""
    match = re.search(r"16K random write ([\d.]+) W \(([\d.]+) GB/s\)", _evidence_text())
    if not match:
        return {}
    return {"power.m6550.ps1.randwrite16k.power": float(match.group(1)), "power.m6550.ps1.randwrite16k.bw": float(match.group(2))}


# the seven Gen5 drives' DLIO checkpoint passes (public_evidence.md section 1) are rows too: row id stem -> drive
GEN5_DRIVES = {"sn861": "SanDisk SN861", "9550max": "Micron 9550 MAX", "9550pro": "Micron 9550 PRO", "7600max": "Micron 7600 MAX",
               "cd9p": "Kioxia CD9P-R", "cm9": "Kioxia CM9-R", "ps1030": "Solidigm D7-PS1030"}


def _public_evidence_passes() -> dict[str, float]:
    """Row id -> value of public_evidence.md's section-1 table (pass 1..3 mean seconds of the seven drives)."""
    for path in REFERENCE_CANDIDATES:
        evidence = path.parent / "public_evidence.md"
        if evidence.is_file():
            break
    else:
        return {}
    values: dict[str, float] = {}
    for line in evidence.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for stem, drive in GEN5_DRIVES.items():
            if len(cells) == 4 and cells[0].startswith(drive + " "):
                for k, cell in enumerate(cells[1:], 1):
                    values[f"sr.gen5.{stem}.pass{k}"] = float(cell)
    return values


def test_the_gen5_pass_rows_carry_public_evidence_values():
    """Each of the 21 sr.gen5.* rows has the value of public_evidence.md section 1 (the seven drives x passes 1-3)."""
    evidence = _public_evidence_passes()
    if not evidence:
        pytest.skip("shared/reference/public_evidence.md is not beside this checkout")
    rows = {r.id: r for r in read_table(TABLE).measurements if r.id.startswith("sr.gen5.")}
    assert len(evidence) == 21 and set(rows) == set(evidence)
    for rid, value in evidence.items():
        assert rows[rid].measured == pytest.approx(value, rel=1e-12), rid


def test_one_tolerance_convention_stated_in_the_header_and_sources_inside_the_repository():
    table = read_table(TABLE)
    assert (table.tolerance.value, table.tolerance.ratio) == (0.10, 0.15)
    assert "10 %" in table.description and "15 %" in table.description
    assert all(row.tolerance is None for row in table.measurements), "a row sets its own tolerance"
    assert all(row.source for row in table.measurements)
    assert "shared/" not in TABLE.read_text(), "the table cites a path outside the repository"


def test_fitted_rows_are_derived_from_fitted_on_and_match_the_known_fits(report):
    fitted = {r.id for r in report.rows if r.role == "fitted"}
    assert fitted == FITTED
    assert all(r.fitted_by for r in report.rows if r.role == "fitted")
    assert not any(r.fitted_by for r in report.rows if r.role != "fitted")


def test_every_restatement_holds_by_its_law(report):
    """Oracle: the identity each `restates` stands for, checked on the two predictions."""
    rows = {r.id: r for r in report.rows}
    restating = [r for r in report.rows if r.role == "restates"]
    assert len(restating) == 9
    for r in restating:
        target = rows[r.restates]
        assert target.role != "restates"
        if r.id.endswith(".bw"):  # MB/s = IOPS x 128 KiB / 1e6
            assert r.predicted == pytest.approx(target.predicted * 131072 / 1e6, rel=1e-6), r.id
        elif r.id.endswith(".lat"):  # fio's closed loop at iodepth 32: latency (ms) = 32 / IOPS (Little's law)
            assert r.predicted == pytest.approx(32 / target.predicted * 1e3, rel=1e-3), r.id
        elif r.id == "m6550.ckpt.throughput_ratio":  # the same 415 GB in both: throughput ratio = 1 / time ratio
            assert r.predicted == pytest.approx(target.predicted, rel=1e-6)
        else:  # GNN time ratio vs IOPS ratio: same direction, the 9550 faster
            assert (r.predicted < 1) == (target.predicted > 1), r.id


def test_every_row_runs(report):
    failed = {r.id: r.failure for r in report.rows if r.failure}
    assert not failed, f"{len(failed)} rows failed to run: {failed}"


def test_headline_is_computed_from_the_predicted_rows(report):
    """Oracle: the headline recomputed here from the predicted rows' own predictions."""
    predicted = [r for r in report.rows if r.role == "predicted"]
    errors = [abs(r.predicted - r.measured) / r.measured for r in predicted]
    headline = report.summary["predicted"]
    # 21: the seven Gen5 drives' passes 1-3 (public_evidence.md section 1); 2: the gdsio rows, no longer fitted;
    # 5: Solidigm's GDS page; 20: issue 31's multi-node MLPerf Storage v1.0 rows; 10 + 9: issue 30's array and NFS rows;
    # 2: BaM's block benchmark on the 980 PRO (branch gds); 2: the 6550 ION's measured 16K random-write power and
    # throughput (S08, branch power); 2: gdsio from four D7-PS1010 into one and four L40S (a public GDS benchmark
    # report, branch gds); 3: Volumez's open pair with and without the per-step barrier and their ratio
    assert headline["n"] == len(predicted) == 24 + 21 + 2 + 5 + 20 + 10 + 9 + 2 + 2 + 2 + 3
    assert headline["median_abs_error"] == pytest.approx(statistics.median(errors))
    assert headline["max_abs_error"] == pytest.approx(max(errors))
    assert headline["n_within"] == sum(1 for r in predicted if abs(r.error) <= r.tolerance)
    assert report.summary["n"] == len(report.rows) == len(read_table(TABLE).measurements)  # format 1.1 keys still there


def test_predicted_median_error_meets_the_goal(report):
    median = report.summary["predicted"]["median_abs_error"]
    assert median is not None and median <= MEDIAN_BAR, f"predicted-row median |error| {median:.1%} > {MEDIAN_BAR:.0%}"


@pytest.mark.xfail(strict=True, reason="known misses (issue 17): the GNN IOPS ratios of the 9550 over the CM7-R and the "
                   "PM1743 and the energies that follow from them (KNOWN_MISSES): both competitors reach their datasheet "
                   "4 KiB IOPS in the model; what holds them below it under GIDS is not modelled")
def test_predicted_max_error_meets_the_goal(report):
    predicted = [r for r in report.rows if r.role == "predicted" and r.error is not None]
    worst = sorted(predicted, key=lambda r: -abs(r.error))[:5]
    largest = report.summary["predicted"]["max_abs_error"]
    assert largest is not None and largest <= MAX_BAR, "worst predicted rows: " + ", ".join(f"{r.id} {r.error:+.1%}" for r in worst)


def test_the_goal_holds_on_every_predicted_row_but_the_known_misses(report):
    """The max bar on the predicted rows other than the issue's known misses (which must still miss: strict)."""
    predicted = [r for r in report.rows if r.role == "predicted" and r.error is not None]
    others = [r for r in predicted if r.id not in KNOWN_MISSES]
    assert max(abs(r.error) for r in others) <= MAX_BAR, [(r.id, r.error) for r in others if abs(r.error) > MAX_BAR]
    assert {r.id for r in predicted if abs(r.error) > r.tolerance} >= KNOWN_MISSES


def test_every_ratio_direction_is_right(report):
    wrong = [f"{r.id}: predicted {r.predicted:.3g}, published {r.measured:.3g}" for r in report.rows
             if r.kind == "ratio" and r.direction_ok is False]
    assert not wrong, wrong
