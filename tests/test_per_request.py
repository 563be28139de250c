"""The per-request mode's own physics and outputs (simulator.per_request); each test names its oracle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.scenarios.loader import load
from iowatt.simulator.per_request import budget, histogram
from iowatt.simulator.per_request.latency import lognormal_quantile, sigma_from_quantiles
from iowatt.simulator.per_request.run import simulate
from iowatt.simulator.per_request.units import FlashUnits
from iowatt.simulator.workloads import WorkloadConfigError

from tests.queueing_oracle import law_latency


def _fio(device: str = "micron-7450-pro", count: int = 1, fill: float = 0.0, seed: int = 3, **job: object):
    scenario = load({"name": "pr", "seed": seed, "system": {"storage": {"device": device, "count": count, "fill": fill}},
                     "workload": {"kind": "fio", "size": "10G", **job}}, [])
    return simulate(scenario.system, scenario.workload, scenario.seed)


def _closed_loop_on_units(units: float, n: int, sigma: float, requests: int = 40_000) -> float:
    """Throughput of n requests circulating over FlashUnits(c), each holding its unit for c x 1 ms x a lognormal factor."""
    env = simpy.Environment()
    flash = FlashUnits(env, units)
    rng = np.random.default_rng(5)
    picks = rng.random(requests + n).tolist()
    factors = np.exp(sigma * rng.standard_normal(requests + n) - sigma * sigma / 2).tolist()
    state = {"sent": 0, "done": 0, "t_warm": 0.0}

    def send(_request: object = None) -> None:
        if _request is not None:
            state["done"] += 1
            if state["done"] == requests // 10:
                state["t_warm"] = env.now
        if state["sent"] < requests:
            i = state["sent"]
            state["sent"] += 1
            flash.read(flash.pick(picks[i]), units * 1e-3 * factors[i], i, send)

    for _ in range(n):
        send()
    env.run()
    return (state["done"] - requests // 10) / (env.now - state["t_warm"])


@settings(max_examples=12, deadline=None, derandomize=True)
@given(units=st.sampled_from([1.0, 1.5, 4.0, 6.3, 20.0]), n=st.integers(1, 40), sigma=st.sampled_from([0.0, 0.8]))
def test_flash_units_run_the_exact_mva_whatever_the_spread(units: float, n: int, sigma: float) -> None:
    """Oracle: the textbook MVA (tests/queueing_oracle.law_latency: floor(c) units of S and one of (c - floor c) S);
    processor sharing is insensitive to the service distribution (BCMP 1975), so sigma 0 and 0.8 give the same mean."""
    service = 1e-3  # S: each of c units holds a request for c x S
    expected = n / law_latency(units * service, service, n)
    assert _closed_loop_on_units(units, n, sigma) == pytest.approx(expected, rel=0.04)


def test_qd1_read_percentiles_follow_the_lognormal_spread() -> None:
    """Oracle: at QD1 a read is alone at its unit, so its latency is L0 x F, F lognormal of mean 1 (latency.py):
    quantile q is L0 exp(sigma z_q - sigma^2 / 2); fio's buckets are 1/64 of an octave wide."""
    sim = _fio(rw="randread", bs="4k", iodepth=1, runtime=2.0, time_based=True, percentile_list=[50.0, 90.0, 99.0])
    l0 = sim.metrics["read_clat_mean_us"]
    device = sim.detail["devices"][0]
    for q in (50.0, 90.0, 99.0):
        expected = l0 * lognormal_quantile(device["read_sigma"], q / 100.0)
        assert sim.metrics[f"read_clat_p{q:g}_us"] == pytest.approx(expected, rel=0.03)


def test_datasheet_qos_figures_set_the_tail() -> None:
    """Oracle: a drive whose datasheet says 99 % of QD1 reads finish within 150 us shows that p99 (quantile of the
    lognormal fitted by sigma_from_quantiles), and sigma_from_quantiles inverts lognormal_quantile exactly."""
    assert sigma_from_quantiles(1.0, [(0.99, lognormal_quantile(0.4, 0.99))]) == pytest.approx(0.4, abs=1e-6)
    scenario = load({"name": "qos", "system": {"storage": {"device": {"base": "micron-7450-pro", "read_latency_p99_us": 150.0}}},
                     "workload": {"kind": "fio", "rw": "randread", "bs": "4k", "iodepth": 1, "runtime": 2.0, "time_based": True,
                                  "size": "10G"}}, [])
    m = simulate(scenario.system, scenario.workload, 1).metrics
    assert m["read_clat_p99_us"] == pytest.approx(150.0, rel=0.04)


def test_a_striped_request_waits_for_its_slowest_piece() -> None:
    """Oracle: order statistics.  At QD1 the 16 pieces of a 1 MiB read over 16 drives are alone at their units, so the
    request takes L0(64 KiB) x E[max of 16 lognormal factors] = L0 x integral of (1 - F(x)^16) dx."""
    sim = _fio(count=16, rw="randread", bs="1m", iodepth=1, runtime=1.0, time_based=True)
    one = _fio(count=1, rw="randread", bs="64k", iodepth=1, runtime=1.0, time_based=True)
    sigma = sim.detail["devices"][0]["read_sigma"]
    x = np.linspace(0.0, 6.0, 60_001)
    from scipy.stats import lognorm

    cdf = lognorm.cdf(x, s=sigma, scale=math.exp(-sigma * sigma / 2))
    expected_max = float(np.trapezoid(1.0 - cdf**16, x))
    assert sim.metrics["read_clat_mean_us"] == pytest.approx(one.metrics["read_clat_mean_us"] * expected_max, rel=0.03)


def test_little_law_and_the_fio_document_agree_with_the_metrics() -> None:
    """Oracles: Little's law (iops x mean latency = requests outstanding, fio's identity) and fio's json+ bins, which
    count every completion once."""
    sim = _fio(rw="randrw", bs="16k", iodepth=16, numjobs=2, runtime=0.3, time_based=True)
    m, doc = sim.metrics, sim.detail["fio_json"]
    ios = m["read_iops"] + m["write_iops"]
    mean_s = (m["read_iops"] * m["read_clat_mean_us"] + m["write_iops"] * m["write_clat_mean_us"]) / ios * 1e-6
    assert ios * mean_s == pytest.approx(32, rel=0.02)
    for direction in ("read", "write"):
        section = doc["jobs"][0][direction]
        clat = section["clat_ns"]
        assert sum(clat["bins"].values()) == section["total_ios"] == clat["N"]
        values = [clat["percentile"][histogram.percentile_key(p)] for p in (50.0, 90.0, 99.0, 99.9)]
        assert values == sorted(values)
        assert clat["mean"] / 1e3 == pytest.approx(m[f"{direction}_clat_mean_us"], rel=1e-6)  # fio counts whole ns
        assert section["iops"] == pytest.approx(m[f"{direction}_iops"], rel=1e-9)
    json.dumps(doc, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(value=st.integers(0, 2**34 - 1))
def test_fio_buckets_hold_their_values(value: int) -> None:
    """Oracle: fio's log-linear buckets (64 per octave, 29 octaves: up to 2^34 ns): a value's bucket representative lies
    within one bucket width (1/64 of its octave, relative 1/64) of it, and bucket indices never decrease with the value."""
    index = int(histogram.bucket_index(np.array([value]))[0])
    representative = float(histogram.bucket_value(np.array([index]))[0])
    assert abs(representative - value) <= max(1.0, value / 64.0)
    assert int(histogram.bucket_index(np.array([value + 1]))[0]) >= index


def test_gc_on_a_filled_drive_pauses_writes_without_moving_the_mean() -> None:
    """Oracles: conservation (the GC time is the same per write, only gathered into rounds, so the rate is the fluid
    model's steady-state random-write rate) and the tail: pauses of a whole round show in the write p99.9."""
    fresh = _fio(rw="randwrite", bs="4k", iodepth=32, runtime=0.1, time_based=True, percentile_list=[50.0, 99.9])
    full = _fio(fill=0.9, rw="randwrite", bs="4k", iodepth=32, runtime=0.4, time_based=True, percentile_list=[50.0, 99.9])
    print(f"gc rounds {full.detail['devices'][0]['gc_rounds']}, write p50/p99.9 us: fresh {fresh.metrics['write_clat_p50_us']:.0f}/"
          f"{fresh.metrics['write_clat_p99_9_us']:.0f}, filled {full.metrics['write_clat_p50_us']:.0f}/{full.metrics['write_clat_p99_9_us']:.0f}")
    assert full.detail["devices"][0]["gc_rounds"] > 0 and fresh.detail["devices"][0]["gc_rounds"] == 0
    assert full.metrics["write_iops"] < fresh.metrics["write_iops"]
    tail = full.metrics["write_clat_p99_9_us"] / full.metrics["write_clat_p50_us"]
    assert tail > fresh.metrics["write_clat_p99_9_us"] / fresh.metrics["write_clat_p50_us"]


def test_same_seed_same_run() -> None:
    a = _fio(rw="randread", bs="4k", iodepth=8, runtime=0.05, time_based=True)
    b = _fio(rw="randread", bs="4k", iodepth=8, runtime=0.05, time_based=True)
    c = _fio(seed=4, rw="randread", bs="4k", iodepth=8, runtime=0.05, time_based=True)
    assert a.metrics == b.metrics
    assert a.metrics["read_clat_p99_us"] != c.metrics["read_clat_p99_us"]


def test_too_large_a_scenario_is_refused_with_its_event_count() -> None:
    with pytest.raises(budget.TooLargeError, match=r"about 1\.61e\+09 requests x 1 piece\(s\) x 2 events = 3\.22e\+09 events"):
        _fio(rw="randread", bs="4k", iodepth=32, size="6T")  # 6 TiB in 4 KiB requests


def test_only_the_supported_workloads_and_storage_run() -> None:
    scenario = load("checkpoint_llama405b_8gpu", [])
    with pytest.raises(WorkloadConfigError, match="per-request: expected a workload of kind fio, gds_read, gnn"):
        simulate(scenario.system, scenario.workload, 0)
    raid = load({"name": "r", "system": {"storage": {"kind": "raid", "level": 5, "count": 4, "device": "micron-7450-pro"}},
                 "workload": {"kind": "fio", "rw": "randread", "size": "1G"}}, [])
    with pytest.raises(WorkloadConfigError, match="expected storage of kind local"):
        simulate(raid.system, raid.workload, 0)


def test_cli_prints_fio_shaped_percentiles_and_refuses_bad_input(tmp_path) -> None:
    """`iowatt run --fio JOB --mode per-request`: fio's document with clat percentiles; bad input exits 2 with one line."""
    from typer.testing import CliRunner

    from iowatt.cli import app

    job = tmp_path / "job.fio"
    job.write_text("[global]\nioengine=libaio\ndirect=1\n[rr]\nrw=randread\nbs=4k\niodepth=16\nruntime=0.05\ntime_based=1\nsize=1g\n")
    runner = CliRunner()
    ok = runner.invoke(app, ["run", "--fio", str(job), "--set", "storage.device=micron-7450-pro", "--mode", "per-request",
                             "--format", "json"])
    assert ok.exit_code == 0, ok.output
    document = json.loads(ok.stdout)
    assert document["mode"] == "per-request"
    clat = document["fio"]["fio_json"]["jobs"][0]["read"]["clat_ns"]
    assert {"50.000000", "99.000000"} <= set(clat["percentile"]) and clat["bins"]
    bad_mode = runner.invoke(app, ["run", "--fio", str(job), "--set", "storage.device=micron-7450-pro", "--mode", "exact"])
    assert bad_mode.exit_code == 2 and "--mode" in bad_mode.output
    unsupported = runner.invoke(app, ["run", "checkpoint_llama405b_8gpu", "--mode", "per-request"])
    assert unsupported.exit_code == 2 and "expected a workload of kind fio, gds_read, gnn" in unsupported.output
    assert "Traceback" not in unsupported.output
