"""Smoke test of the simulator's own benchmark (issue 8): `benchmarks/run.py --quick` runs and its JSON is coherent.

Targets are not asserted (the benchmark reports PASS/MISS; CI does not time
anything).  The oracles are internal consistency: every ratio equals the
quotient of the two figures it is built from, PASS/MISS agrees with the value
and the target, and both per-request models predict the same time as the fluid
engine for the same work (a single-server drive serving every byte at the
bottleneck rate, so time = bytes x seconds-per-byte).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(out.read_text())
    document["_stdout"] = proc.stdout
    return document


def _rows(results: dict) -> dict[int, dict]:
    return {row["id"]: row for row in results["rows"]}


def test_all_ten_rows_with_numeric_checks(results: dict) -> None:
    rows = _rows(results)
    assert sorted(rows) == list(range(1, 11))
    for row in rows.values():
        assert row["checks"], row["id"]
        for c in row["checks"]:
            assert isinstance(c["value"], float) and math.isfinite(c["value"]), (row["id"], c)
            assert c["status"] in {"PASS", "MISS", "INFO"}
            if c["target"] is None:
                assert c["status"] == "INFO"
            elif c["op"] == "<=":
                assert c["status"] == ("PASS" if c["value"] <= c["target"] else "MISS")
            else:
                assert c["op"] == ">="
                assert c["status"] == ("PASS" if c["value"] >= c["target"] else "MISS")
    # the printed table carries one line per check
    table_lines = [line for line in results["_stdout"].splitlines() if line.rstrip().endswith(("PASS", "MISS", "INFO"))]
    assert len(table_lines) == sum(len(r["checks"]) for r in rows.values())


def test_ratios_are_quotients_of_their_parts(results: dict) -> None:
    rows = _rows(results)
    d2 = rows[2]["detail"]
    assert d2["event_ratio"] == pytest.approx(d2["events_large"] / d2["events_small"], rel=1e-12)
    assert rows[2]["checks"][0]["value"] == pytest.approx(abs(d2["event_ratio"] - 1.0), rel=1e-12)
    assert rows[2]["checks"][1]["value"] == pytest.approx(d2["wall_large_ms"] / d2["wall_small_ms"], rel=1e-12)
    d4 = rows[4]["detail"]
    assert d4["wall_ratio"] == pytest.approx(d4["reference_wall_seconds_full"] / d4["fluid_engine_wall_seconds"], rel=1e-12)
    assert d4["reference_wall_seconds_full"] == pytest.approx(d4["reference_wall_seconds_measured"] * d4["linear_scale_factor"], rel=1e-12)
    d5 = rows[5]["detail"]
    assert d5["ratio_to_bare_simpy"] == pytest.approx(d5["mode_requests_per_second"] / d5["bare_simpy_requests_per_second"], rel=1e-12)
    assert d5["mode_requests_per_second"] == pytest.approx(d5["requests"] / d5["mode_cpu_seconds"], rel=1e-12)
    d8 = rows[8]["detail"]
    for jobs in ("1", "2"):
        j = d8["jobs"][jobs]
        assert j["failed"] == 0
        assert j["scenarios_per_second"] == pytest.approx(j["done"] / j["seconds"], rel=1e-12)
    assert d8["speedup_2_vs_1"] == pytest.approx(d8["jobs"]["2"]["scenarios_per_second"] / d8["jobs"]["1"]["scenarios_per_second"], rel=1e-12)
    for figures in (v for v in rows[9]["detail"].values() if isinstance(v, dict)):  # issue 28: --uncertainty's cost
        assert figures["cpu_ratio"] == pytest.approx(figures["uncertainty_cpu_s"] / figures["plain_cpu_s"], rel=1e-12)
    d10 = rows[10]["detail"]
    assert rows[10]["checks"][0]["value"] == pytest.approx(d10["uncertainty_cpu_s"] / d10["plain_cpu_s"], rel=1e-12)


def test_per_request_models_predict_what_the_fluid_engine_predicts(results: dict) -> None:
    rows = _rows(results)
    d4 = rows[4]["detail"]
    # drive-bound pipeline (theory of a saturated tandem queue): the per-request model takes the fluid time plus
    # the pipeline fill, one request's serialization on its rank's core before the drive's first write
    assert d4["rank_core_seconds_per_byte"] < d4["drive_seconds_per_byte"] * 8  # 8 ranks' cores outrun the drive
    fill = 2**20 * d4["rank_core_seconds_per_byte"]
    assert d4["reference_predicted_seconds"] == pytest.approx(d4["fluid_predicted_seconds_same_size"] + fill, rel=1e-6)
    d5 = rows[5]["detail"]
    # the bare model is a saturated single server: simulated time = requests x service time (theory)
    assert d5["bare_simulated_seconds"] == pytest.approx(d5["requests"] * d5["service_seconds"], rel=1e-9)
    # the per-request mode referees the fluid model at the bench point (issue 20: within 3 %)
    assert d5["mode_read_iops"] == pytest.approx(d5["fluid_read_iops"], rel=0.03)


def test_scale_exponent_is_the_log_log_slope(results: dict) -> None:
    d6 = _rows(results)[6]["detail"]
    points = d6["points"]
    xs = [math.log(p["gpus"]) for p in points]
    ys = [math.log(p["wall_s"]) for p in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    assert d6["exponent"] == pytest.approx(slope, rel=1e-9)
    # every GPU's shard is one flow, and all of them finish: the simulated time is finite and positive
    for p in points:
        assert p["simulated_s"] > 0.0 and p["concurrent_flows"] <= p["gpus"]
    # the scenario form (storage.kind: cluster) starts every rank at once: all of them move together
    for p in d6.get("scenario_points", []):
        assert p["concurrent_flows"] == p["gpus"]
        assert p["simulated_s"] > 0.0
