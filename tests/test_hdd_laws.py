"""Hard-disk laws against their oracles: numerical integrals, order statistics, a Monte Carlo of the queue."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog, hdd
from scipy import integrate

SPEC = catalog.spec_from("hdd", "hdd-7200rpm-sas-8tb")


def test_mean_seek_equals_the_datasheet_average() -> None:
    """Ruemmler-Wilkes curve fitted so the mean over two uniform positions is the datasheet average seek:
    oracle = adaptive quadrature of seek(d) against the distance density 2 (1 - d)."""
    value, _ = integrate.quad(lambda d: float(hdd.seek_seconds(SPEC, d)) * 2 * (1 - d), 0, 1, points=[SPEC.seek_crossover_fraction], limit=200)
    assert value == pytest.approx(SPEC.avg_seek_read_ms / 1e3, rel=1e-6)
    assert hdd.mean_seek_seconds(SPEC) == pytest.approx(value, rel=1e-4)


def test_mean_seek_equals_a_monte_carlo_of_uniform_pairs() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(400_000), rng.random(400_000)
    mc = float(np.mean(hdd.seek_seconds(SPEC, np.abs(a - b))))
    assert mc == pytest.approx(SPEC.avg_seek_read_ms / 1e3, rel=0.01)


def test_seek_curve_continuous_at_the_crossover_and_track_to_track_at_zero() -> None:
    dc = SPEC.seek_crossover_fraction
    lo, hi = hdd.seek_seconds(SPEC, dc - 1e-9), hdd.seek_seconds(SPEC, dc + 1e-9)
    assert float(lo) == pytest.approx(float(hi), rel=1e-6)
    assert float(hdd.seek_seconds(SPEC, 1e-12)) == pytest.approx(SPEC.track_to_track_seek_ms / 1e3, rel=1e-3)
    assert float(hdd.seek_seconds(SPEC, 0.0)) == 0.0


@pytest.mark.parametrize("span", [0.1, 0.25, 0.5, 1.0])
def test_short_stroke_mean_seek_is_the_integral_over_the_stroke_in_use(span: float) -> None:
    """Data on the outer `span` of the capacity occupy stroke X; mean seek = int_0^1 seek(X u) 2 (1 - u) du."""
    x = hdd.stroke_fraction(SPEC, span)
    value, _ = integrate.quad(lambda u: float(hdd.seek_seconds(SPEC, x * u)) * 2 * (1 - u), 0, 1, limit=200)
    assert hdd.mean_seek_seconds(SPEC, span) == pytest.approx(value, rel=1e-3)


def test_zoned_capacity_fraction_and_outer_to_inner_rate() -> None:
    """Rate proportional to radius: capacity share of stroke [0, X] = (X - k X^2 / 2) / (1 - k / 2)."""
    k = 1 - SPEC.inner_outer_ratio
    for span in (0.1, 0.5, 0.9):
        x = hdd.stroke_fraction(SPEC, span)
        assert (x - k * x * x / 2) / (1 - k / 2) == pytest.approx(span, rel=1e-9)
    # the outer share holds more than its stroke share (outer tracks are longer)
    assert hdd.stroke_fraction(SPEC, 0.5) < 0.5
    full = hdd.media_rate_Bps(SPEC, 1.0)
    assert full == pytest.approx(SPEC.outer_transfer_MBps * 1e6 * (1 + SPEC.inner_outer_ratio) / 2, rel=1e-9)
    assert hdd.media_rate_Bps(SPEC, 1e-6) / (SPEC.outer_transfer_MBps * 1e6 * SPEC.inner_outer_ratio) == pytest.approx(2.0, rel=1e-3)


def test_rotational_latency_is_30_over_rpm() -> None:
    assert hdd.rotational_latency_seconds(SPEC) == pytest.approx(30 / 7200)
    assert hdd.rotational_latency_seconds(SPEC) * 1e3 == pytest.approx(4.16, abs=0.01)  # H01 publishes 4.16 ms


def test_qd1_positioning_is_mean_seek_plus_half_a_revolution() -> None:
    for policy in ("fcfs", "elevator", "satf", "rpo"):
        got = hdd.positioning_seconds(SPEC, 1, 1.0, scheduling=policy)
        assert got == pytest.approx(hdd.mean_seek_seconds(SPEC) + 30 / 7200, rel=2e-3)


def test_elevator_gap_is_a_beta_spacing() -> None:
    """The law: the seek under elevator ordering with n queued is seek(span x U), U ~ Beta(1, n + 1), a spacing
    of n + 1 uniform points (mean 1/(n+2)).  Oracle 1: U is the minimum of n + 1 uniforms (exact).  Oracle 2: a
    Monte Carlo of a cyclic sweep (C-LOOK, gap to the next request ahead, mean 1/(n+1)) agrees within 5 %."""
    rng = np.random.default_rng(11)
    n = 15
    law = hdd.positioning_seconds(SPEC, n, 1.0, scheduling="elevator") - 30 / 7200
    spacing = rng.random((100_000, n + 1)).min(axis=1)
    assert spacing.mean() == pytest.approx(1 / (n + 2), rel=0.01)
    assert law == pytest.approx(float(np.mean(hdd.seek_seconds(SPEC, spacing))), rel=0.01)
    pts = rng.random((50_000, n + 1))
    head = pts[:, 0:1]
    ahead = np.where(pts[:, 1:] >= head, pts[:, 1:] - head, pts[:, 1:] - head + 1.0)
    assert law == pytest.approx(float(np.mean(hdd.seek_seconds(SPEC, ahead.min(axis=1)))), rel=0.05)


def test_satf_equals_the_expected_minimum_of_independent_candidates() -> None:
    """SATF law = E[min_i (seek(D_i) + R_i)], D ~ 2(1-d), R ~ U(0, T_rev): Monte Carlo of the same order statistic."""
    rng = np.random.default_rng(5)
    n, trials = 8, 40_000
    a, b = rng.random((trials, n)), rng.random((trials, n))
    cost = hdd.seek_seconds(SPEC, np.abs(a - b)) + rng.random((trials, n)) * 60 / 7200
    assert hdd.positioning_seconds(SPEC, n, 1.0, scheduling="satf") == pytest.approx(float(cost.min(axis=1).mean()), rel=0.02)


@settings(max_examples=30, deadline=None)
@given(qd=st.integers(1, 63), span=st.floats(0.02, 1.0), policy=st.sampled_from(["elevator", "satf", "rpo"]))
def test_reordering_never_slower_with_a_deeper_queue(qd: int, span: float, policy: str) -> None:
    a = hdd.positioning_seconds(SPEC, qd, span, scheduling=policy)
    b = hdd.positioning_seconds(SPEC, qd + 1, span, scheduling=policy)
    assert b <= a * (1 + 1e-6)
    assert hdd.positioning_seconds(SPEC, qd, span, scheduling="fcfs") >= a * (1 - 1e-6)


@settings(max_examples=30, deadline=None)
@given(qd=st.integers(1, 64), spans=st.tuples(st.floats(0.02, 1.0), st.floats(0.02, 1.0)), block=st.sampled_from([4096, 131072, 1 << 20]))
def test_short_stroking_never_slower(qd: int, spans: tuple[float, float], block: int) -> None:
    small, large = sorted(spans)
    assert hdd.at_queue_depth(SPEC, block, qd, small)["iops"] >= hdd.at_queue_depth(SPEC, block, qd, large)["iops"] * (1 - 1e-6)


def test_littles_law_at_queue_depth() -> None:
    for qd in (1, 4, 32):
        r = hdd.at_queue_depth(SPEC, 131072, qd)
        assert r["iops"] * r["latency_s"] == pytest.approx(qd)
        assert r["MBps"] == pytest.approx(r["iops"] * 131072 / 1e6)


def test_power_between_idle_and_active() -> None:
    assert SPEC.idle_W <= hdd.active_watts(SPEC, "sequential") <= hdd.active_watts(SPEC, "random")
    assert math.isfinite(SPEC.random_W)


def _satf_queue_monte_carlo(span: float, n: int, block: float, steps: int = 6000, seed: int = 1) -> float:
    """Per-command simulation of SATF with a persistent queue: the head moves to the chosen request (radius and
    angle), the transfer turns the platter, a fresh uniform request replaces the served one.  Unlike the
    analytic law it keeps the leftovers that were passed over (the queue is biased toward costly requests)."""
    rng = np.random.default_rng(seed)
    rev = 60 / SPEC.rpm
    k = 1 - SPEC.inner_outer_ratio
    total = 1 - k / 2

    def stroke(share: np.ndarray) -> np.ndarray:  # inverse of the zoned capacity share (vectorised stroke_fraction)
        return (1 - np.sqrt(np.maximum(0.0, 1 - 2 * k * share * total))) / k

    xs, ang = stroke(rng.random(n) * span), rng.random(n)
    hx = ha = 0.0
    busy = 0.0
    overhead = SPEC.command_overhead_ms / 1e3
    for _ in range(steps):
        seek = hdd.seek_seconds(SPEC, np.abs(xs - hx))
        wait = ((ang - (ha + seek / rev)) % 1.0) * rev
        j = int(np.argmin(seek + wait))
        track_bytes = SPEC.outer_transfer_MBps * 1e6 * (1 - k * xs[j]) * rev
        busy += overhead + seek[j] + wait[j] + block / track_bytes * rev
        hx, ha = xs[j], (ang[j] + block / track_bytes + overhead / rev) % 1.0
        xs[j], ang[j] = stroke(rng.random(1) * span)[0], rng.random()
    return steps / busy


@pytest.mark.parametrize(("span", "n"), [(1.0, 4), (1.0, 32), (0.134, 32)])
def test_analytic_satf_against_a_queue_state_monte_carlo(span: float, n: int) -> None:
    """The independent-candidates law is optimistic by the queue bias; within 15 % of the simulation."""
    mc = _satf_queue_monte_carlo(span, n, 131072)
    law = hdd.at_queue_depth(SPEC, 131072, n, span, scheduling="satf")["iops"]
    print(f"\nSATF span {span} QD{n}: law {law:.0f} IOPS, queue Monte Carlo {mc:.0f} IOPS")
    assert mc <= law * 1.02
    assert law == pytest.approx(mc, rel=0.15)


# ----------------------------------------------------------------------------- firmware reordering (rpo)


def test_catalog_drive_uses_firmware_reordering() -> None:
    assert SPEC.scheduling == "rpo"
    assert 0.0 < SPEC.reorder_efficiency < 1.0


@settings(max_examples=15, deadline=None)
@given(qd=st.integers(1, 64), span=st.floats(0.02, 1.0))
def test_rpo_lies_between_no_reordering_and_ideal_satf(qd: int, span: float) -> None:
    """Oracle: the bounds of the law -- no reordering (QD1 positioning) above, the ideal independent-candidates
    SATF minimum below, and eta = 1 reproduces the ideal SATF exactly."""
    rpo = hdd.positioning_seconds(SPEC, qd, span, scheduling="rpo")
    ideal = hdd.positioning_seconds(SPEC, qd, span, scheduling="satf")
    qd1 = hdd.positioning_seconds(SPEC, 1, span, scheduling="satf")
    assert ideal * (1 - 1e-9) <= rpo <= qd1 * (1 + 1e-9)
    perfect = SPEC.model_copy(update={"reorder_efficiency": 1.0})
    assert hdd.positioning_seconds(perfect, qd, span, scheduling="rpo") == pytest.approx(ideal, rel=1e-12)


def test_deep_queue_gain_matches_the_published_enterprise_figure() -> None:
    """Cross-check that eta was NOT fitted to: 4 KiB random reads over the whole stroke gain 'nearly 100 %' from
    QD1 to a deep queue on enterprise 7200 RPM drives (Wikipedia 'IOPS', citing queue-depth charts of
    StorageReview / Tom's Hardware).  Accept 1.7x-2.4x; the ideal SATF law gives ~3x and fails this."""
    qd1 = hdd.at_queue_depth(SPEC, 4096, 1)["iops"]
    qd32 = hdd.at_queue_depth(SPEC, 4096, 32)["iops"]
    ideal = hdd.at_queue_depth(SPEC, 4096, 32, scheduling="satf")["iops"]
    print(f"\nHDD 4k random, full stroke: QD1 {qd1:.0f} IOPS, QD32 firmware {qd32:.0f} ({qd32 / qd1:.2f}x), ideal SATF {ideal:.0f} ({ideal / qd1:.2f}x)")
    assert 1.7 <= qd32 / qd1 <= 2.4
    assert ideal / qd1 > 2.4
    # QD1 itself is the textbook figure 1 / (avg seek + half a revolution + transfer + overhead): ~80 IOPS
    assert qd1 == pytest.approx(1 / (SPEC.avg_seek_read_ms / 1e3 + 30 / 7200 + SPEC.command_overhead_ms / 1e3 + 4096 / hdd.media_rate_Bps(SPEC)), rel=5e-3)


def test_amax_fio_hdd_row_end_to_end() -> None:
    """Published: AMAX white paper (2018), fio randread 128k QD32 size=1000G on the 8 TB SAS HDD: 33 MB/s, 258 IOPS,
    123 ms.  eta is calibrated on the IOPS; bandwidth and latency then follow from Little's law and must agree."""
    from pathlib import Path

    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "library" / "amax" / "fio_hdd.yaml"
    m = run_scenario(load(scenario))[0]["metrics"]
    bw, iops, lat = m["read_bw_bytes"] / 1e6, m["read_iops"], m["read_lat_mean_us"] / 1e3
    print(f"\nAMAX HDD fio: {bw:.1f} MB/s (33), {iops:.0f} IOPS (258), {lat:.1f} ms (123)")
    assert bw == pytest.approx(33.0, rel=0.05)
    assert iops == pytest.approx(258.0, rel=0.05)
    assert lat == pytest.approx(123.0, rel=0.05)
    assert iops * lat / 1e3 == pytest.approx(32, rel=1e-6)  # Little's law, QD32


# ----------------------------------------------------------------------------- clustered layouts (allocation groups)


def test_clustered_distance_law_against_a_monte_carlo() -> None:
    """Data in k pieces at the start of each 1/k of the capacity (XFS AG rotor).  Oracle: sample uniform positions
    inside the pieces (zoned capacity -> stroke), then the mean seek and the expected minimum over n candidates of
    seek + uniform rotation; the law (pieces' widths neglected across pieces) agrees within 3 %."""
    rng = np.random.default_rng(3)
    k, share, n, m = 8, 0.0176, 16, 60_000
    kk = 1 - SPEC.inner_outer_ratio
    total = 1 - kk / 2

    def stroke(c: np.ndarray) -> np.ndarray:
        return (1 - np.sqrt(np.maximum(0.0, 1 - 2 * kk * c * total))) / kk

    def positions(size: tuple[int, ...]) -> np.ndarray:
        return stroke(rng.integers(0, k, size) / k + rng.random(size) * share / k)

    d = np.abs(positions((m,)) - positions((m,)))
    assert hdd.mean_seek_seconds(SPEC, share, clusters=k) == pytest.approx(float(np.mean(hdd.seek_seconds(SPEC, d))), rel=0.03)
    head, cand = positions((m // 4, 1)), positions((m // 4, n))
    cost = hdd.seek_seconds(SPEC, np.abs(cand - head)) + rng.random((m // 4, n)) * 60 / SPEC.rpm
    law = hdd.positioning_seconds(SPEC, n, share, scheduling="satf", clusters=k)
    assert law == pytest.approx(float(cost.min(axis=1).mean()), rel=0.03)


def test_clustered_layout_lies_between_compact_and_whole_disk() -> None:
    """Eight small pieces spread over the disk: seeks between pieces are long (mean seek near the whole-disk figure),
    but a deep queue finds candidates in the head's own piece, so reordering recovers much of the compact layout."""
    share = 0.0176
    assert hdd.mean_seek_seconds(SPEC, share) < hdd.mean_seek_seconds(SPEC, share, clusters=8) < hdd.mean_seek_seconds(SPEC, 1.0)
    for qd in (1, 32, 128):
        spread = hdd.at_queue_depth(SPEC, 110e3, qd, share, clusters=8)["iops"]
        assert hdd.at_queue_depth(SPEC, 110e3, qd, 1.0)["iops"] <= spread <= hdd.at_queue_depth(SPEC, 110e3, qd, share)["iops"]


def _amax_hdd_epoch(fill: float, clusters: int) -> float:
    from pathlib import Path

    import simpy
    from iowatt.scenarios.loader import load
    from iowatt.simulator import workloads
    from iowatt.simulator.flows import FlowEngine
    from iowatt.simulator.system import SystemConfig, SystemRuntime

    scenario = load(Path(__file__).resolve().parents[1] / "scenarios" / "library" / "amax" / "epoch_hdd.yaml")
    raw = scenario.system.model_dump()
    raw["storage"]["fill"] = fill
    env = simpy.Environment()
    engine = FlowEngine(env)
    system = SystemRuntime(engine, SystemConfig.model_validate(raw))
    for drive in system.volume.drives:
        drive.data_clusters = clusters
    # a tenth of the files (the layout is a share of the disk, so seeks do not change): the storage-bound epoch
    # scales with the file count
    full = scenario.workload.num_files
    params = scenario.workload.model_copy(update={"num_files": full // 10})
    ctx = workloads.RunContext(env, engine, system, np.random.default_rng(1))
    return float(workloads.get(params.kind).run(ctx, params).metrics["epoch_time_mean_seconds"]) * full / (full // 10)


def test_amax_hdd_epoch_with_the_dataset_spread_over_allocation_groups() -> None:
    """Published: CNTK first epoch with ImageNet on the local 8 TB HDD, 5,536 s (AMAX 2018).  The 141 GB set is
    1.76 % of the disk; the layout decides the seeks: compact (ext4 Orlov keeps subdirectories near their parent)
    is an upper bound on speed, the whole disk a lower bound, and XFS's 8 allocation groups (directory rotor) the
    assumed case, which must land within 10 %.  128 reads outstanding (see the scenario), firmware reordering."""
    compact = _amax_hdd_epoch(0.0176, 1)
    spread = _amax_hdd_epoch(0.0176, 8)
    whole = _amax_hdd_epoch(0.0, 1)
    print(f"\nAMAX HDD epoch: compact {compact:.0f} s, 8 AGs {spread:.0f} s, whole disk {whole:.0f} s; published 5536 s")
    assert compact < 5536 < whole
    assert spread == pytest.approx(5536, rel=0.10)
