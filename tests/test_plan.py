"""`iowatt plan`: the planner finds the known optimum, explains rejections, and its large-space search agrees.

Oracle: a brute force written here independently of scenarios/plan.py: every
configuration simulated with run_scenario, Daly's interval, drive writes per
day and years to the rated endurance from their definitions, cost from the
price list read with yaml, the constraints applied by hand, the cheapest kept.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import yaml
from iowatt.models import catalog
from iowatt.scenarios import plan as pl
from iowatt.scenarios.executors import InlineExecutor
from iowatt.scenarios.loader import ScenarioError, apply_set, read_yaml, validate
from iowatt.scenarios.run import run_scenario
from typer.testing import CliRunner

from iowatt.cli import app

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "scenarios" / "library" / "checkpoint_llama405b_8gpu.yaml"
PRICES = ROOT / "models" / "catalog" / "prices.yml"
DEVICES = ["micron-6550-ion", "solidigm-d5-p5336", "micron-7450-pro"]
COUNTS = [1, 2, 3]
STATES = ["PS0", "PS2"]
NODES, NODE_MTBF_H, RESTART_S = 2048, 6330.0, 600.0
MAX_SAVE_S, MIN_YEARS = 200.0, 5.0
runner = CliRunner()


def write_spec(folder: Path, **extra: object) -> Path:
    spec = {
        "name": "small",
        "scenario": str(BASE),
        "choices": {"storage.device": DEVICES, "storage.count": COUNTS, "storage.power_state": STATES, "checkpoint_interval": ["daly"]},
        "failure": {"nodes": NODES, "node_mtbf_hours": NODE_MTBF_H, "restart_seconds": RESTART_S},
        "constraints": [f"save_checkpoint_duration_mean_seconds <= {MAX_SAVE_S}", f"endurance_years >= {MIN_YEARS}"],
        "objective": {"minimise": "cost_usd"},
    }
    spec.update(extra)
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def brute_force() -> tuple[list[tuple], tuple]:
    prices = {name: entry["usd_per_TB"]["v"] for name, entry in yaml.safe_load(PRICES.read_text())["entries"].items()}
    mtbf = NODE_MTBF_H * 3600.0 / NODES
    rows = []
    for device, count, state in itertools.product(DEVICES, COUNTS, STATES):
        data = read_yaml(BASE)
        for assignment in (f"storage.device={device}", f"storage.count={count}", f"storage.power_state={state}"):
            data = apply_set(data, assignment)
        document, _ = run_scenario(validate(data, "oracle"))
        delta = document["metrics"]["save_checkpoint_duration_mean_seconds"]
        drives = document["checkpoint"]["drives"]
        drive_bytes = sum(d["host_bytes_written"] for d in drives)
        wa = sum(d["nand_bytes_written"] for d in drives) / drive_bytes
        x = delta / (2 * mtbf)
        tau = math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - delta  # Daly 2006
        ssd = catalog.spec_from("ssd", device)
        nand_per_day = drive_bytes * wa * 86400.0 / (tau + delta)
        # rated NAND budget (DWPD x capacity x 365 x years x the rating's WA) / NAND bytes per year
        years = ssd.endurance_dwpd * count * ssd.capacity_TB * 1e12 * 365.0 * ssd.warranty_years * ssd.endurance_rating_wa / (nand_per_day * 365.0)
        cost = count * ssd.capacity_TB * prices[device]
        goodput = tau / (mtbf * math.exp(RESTART_S / mtbf) * math.expm1((tau + delta) / mtbf))
        feasible = delta <= MAX_SAVE_S and years >= MIN_YEARS
        rows.append((device, count, state, cost, goodput, feasible, years, delta))
    feasible = [r for r in rows if r[5]]
    best = min(feasible, key=lambda r: (r[3], r[1], -r[4]))
    return rows, best


def test_planner_finds_the_brute_force_optimum(tmp_path):
    spec = pl.load_spec(write_spec(tmp_path))
    result = pl.search(spec, InlineExecutor())
    rows, best = brute_force()
    assert result.search == "exhaustive" and result.simulations == len(rows) == 18
    top = result.ranked()[0]
    assert (top["storage.device"], top["storage.count"], top["storage.power_state"]) == best[:3]
    assert top["cost_usd"] == pytest.approx(best[3], rel=1e-9)
    found = {(c["storage.device"], c["storage.count"], c["storage.power_state"]) for c in result.feasible}
    assert found == {r[:3] for r in rows if r[5]}
    by_key = {(c["storage.device"], c["storage.count"], c["storage.power_state"]): c for c in result.configs}
    for device, count, state, _cost, goodput, _, years, delta in rows:
        config = by_key[(device, count, state)]
        assert config["endurance_years"] == pytest.approx(years, rel=1e-9)
        assert config["goodput"] == pytest.approx(goodput, rel=1e-9)
        assert config["save_checkpoint_duration_mean_seconds"] == pytest.approx(delta, rel=1e-12)
    # the Pareto front (cost vs save time) is non-dominated and ordered: cost up, time down
    front = result.pareto("cost_usd")
    assert front[0]["cost_usd"] == pytest.approx(best[3], rel=1e-9)
    for a, b in itertools.pairwise(front):
        assert a["cost_usd"] <= b["cost_usd"] and a["save_checkpoint_duration_mean_seconds"] > b["save_checkpoint_duration_mean_seconds"]
    time = "save_checkpoint_duration_mean_seconds"
    for c in result.feasible:  # every configuration off the front is dominated by a point on it
        assert any(c is f for f in front) or any(f["cost_usd"] <= c["cost_usd"] and f[time] <= c[time] for f in front)


def test_rejected_families_name_the_binding_constraint(tmp_path):
    # at PS2 (10 W) one P5336 writes 415 GB in ~480 s: a 100 s limit rejects the whole P5336/PS2 family even at 3 drives
    spec = pl.load_spec(write_spec(tmp_path, constraints=["save_checkpoint_duration_mean_seconds <= 100"]))
    result = pl.search(spec, InlineExecutor())
    rejected = {f["family"]: f["bound_by"] for f in result.rejected_families()}
    family = "storage.device=solidigm-d5-p5336, storage.power_state=PS2"
    assert family in rejected
    assert rejected[family][0].startswith("save_checkpoint_duration_mean_seconds <= 100")
    members = [c for c in result.configs if c["storage.device"] == "solidigm-d5-p5336" and c["storage.power_state"] == "PS2"]
    fastest = min(c["save_checkpoint_duration_mean_seconds"] for c in members)
    assert f"best {fastest:.4g}" in rejected[family][0]


def test_bisection_over_count_agrees_with_exhaustive_search(tmp_path):
    exhaustive = pl.search(pl.load_spec(write_spec(tmp_path)), InlineExecutor())
    spec = pl.load_spec(write_spec(tmp_path, max_exhaustive=4))
    bisected = pl.search(spec, InlineExecutor())
    assert bisected.search.startswith("bisection") and bisected.simulations < exhaustive.simulations
    a, b = exhaustive.ranked()[0], bisected.ranked()[0]
    assert (a["storage.device"], a["storage.count"], a["storage.power_state"]) == (b["storage.device"], b["storage.count"], b["storage.power_state"])


def test_cli_plan_json_table_and_plot(tmp_path):
    path = write_spec(tmp_path)
    result = runner.invoke(app, ["plan", str(path), "--jobs", "0", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    _, best = brute_force()
    assert (doc["best"][0]["storage.device"], doc["best"][0]["storage.count"], doc["best"][0]["storage.power_state"]) == best[:3]
    assert doc["pareto"]["axes"] == ["cost_usd", "save_checkpoint_duration_mean_seconds"]
    out, png = tmp_path / "plan.txt", tmp_path / "front.png"
    pytest.importorskip("matplotlib")
    result = runner.invoke(app, ["plan", str(path), "--jobs", "0", "-o", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "best configurations" in out.read_text() and "Pareto front" in out.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_specs_are_clear_errors(tmp_path):
    bad = write_spec(tmp_path, constraints=["endurance_years >> 5"])
    result = runner.invoke(app, ["plan", str(bad), "--jobs", "0"])
    assert result.exit_code == 2 and "constraints" in result.stderr and "endurance_years >> 5" in result.stderr
    bad = write_spec(tmp_path, constraints=["endurance_yrs >= 5"])
    with pytest.raises(ScenarioError, match="endurance_yrs"):
        pl.search(pl.load_spec(bad), InlineExecutor())
    bad = write_spec(tmp_path, choices={"storage.device": DEVICES, "checkpoint_interval": ["daly"]}, failure=None)
    with pytest.raises(ScenarioError, match="need a `failure` model"):
        pl.load_spec(bad)
    bad = write_spec(tmp_path, colour="red")
    with pytest.raises(ScenarioError, match="unknown plan field"):
        pl.load_spec(bad)


def test_library_plan_answers_the_done_when_question():
    """Cheapest storage for 8x H100 Llama3-405B checkpoints under 5 minutes with 5-year endurance: the answer has a price."""
    spec = pl.load_spec(ROOT / "scenarios" / "plans" / "cheapest_checkpoint_storage_8xh100_405b.yaml")
    result = pl.search(spec, InlineExecutor())
    best = result.ranked()[0]
    assert best["cost_usd"] is not None and best["cost_usd"] > 0
    assert best["save_checkpoint_duration_mean_seconds"] <= 300 and best["endurance_years"] >= 5
    # nothing feasible is cheaper
    assert all(c["cost_usd"] >= best["cost_usd"] for c in result.feasible)


def test_raid_layouts_price_all_drives_and_wear_them_with_parity(tmp_path):
    """RAID 5 over n drives: n drives bought, (n-1)/n usable, and each checkpoint writes n/(n-1) x its size to the drives."""
    path = write_spec(
        tmp_path,
        choices={
            "storage.layout": [{"kind": "local"}, {"kind": "raid", "level": 5}],
            "storage.device": ["micron-6550-ion"],
            "storage.count": [2, 4],
            "checkpoint_interval": ["daly"],
        },
        constraints=["save_checkpoint_duration_mean_seconds <= 300"],
    )
    result = pl.search(pl.load_spec(path), InlineExecutor())
    configs = {(c["storage.layout"], c["storage.count"]): c for c in result.configs}
    assert configs[("raid5", 2)]["invalid"]  # RAID 5 needs 3 drives: skipped, not rejected
    assert not any("raid5" in f["family"] for f in result.rejected_families())
    raid = configs[("raid5", 4)]
    price = yaml.safe_load(PRICES.read_text())["entries"]["micron-6550-ion"]["usd_per_TB"]["v"]
    assert raid["cost_usd"] == pytest.approx(4 * 61.44 * price, rel=1e-12)
    assert raid["usable_capacity_TB"] == pytest.approx(3 * 61.44, rel=1e-12)
    mtbf = NODE_MTBF_H * 3600.0 / NODES
    delta = raid["save_checkpoint_duration_mean_seconds"]
    x = delta / (2 * mtbf)
    tau = math.sqrt(2 * delta * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - delta
    per_day_bytes = 415e9 * 4 / 3 * 86400.0 / (tau + delta)  # data + parity
    assert raid["endurance_years"] == pytest.approx(1.0 * 5.0 * 4 * 61.44e12 / per_day_bytes, rel=1e-9)
    # same drives striped (local) write no parity: the same drive count lasts longer per checkpoint written
    local = configs[("local", 4)]
    assert local["drive_writes_per_day"] * (local["checkpoint_interval_seconds"] + local["save_checkpoint_duration_mean_seconds"]) < raid[
        "drive_writes_per_day"
    ] * (raid["checkpoint_interval_seconds"] + raid["save_checkpoint_duration_mean_seconds"])


def test_cli_plan_csv_has_one_row_per_configuration(tmp_path):
    """Issue 18 item 10: `plan` wrote table and JSON only. Oracle: the JSON output's `configurations`."""
    import csv
    import io

    path = write_spec(tmp_path)
    as_json = json.loads(runner.invoke(app, ["plan", str(path), "--jobs", "0", "--format", "json"]).stdout)["configurations"]
    result = runner.invoke(app, ["plan", str(path), "--jobs", "0", "-o", str(tmp_path / "plan.csv")])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO((tmp_path / "plan.csv").read_text())))
    assert len(rows) == len(as_json)
    for row, config in zip(rows, as_json, strict=True):
        assert row["storage.device"] == config["storage.device"] and row["feasible"] == str(config["feasible"])
        if config.get("cost_usd") is not None:
            assert float(row["cost_usd"]) == pytest.approx(config["cost_usd"], rel=1e-12)


def test_a_plan_with_no_valid_combination_exits_2_naming_the_choices(tmp_path):
    """Issue 36 item 11: when no combination of the choices is a valid scenario the plan printed an empty `best` and
    exited 0; like a sweep whose every case is invalid it is now bad input (exit 2) naming `choices` and why.
    Oracle: the sweep command's exit-status contract (README: bad input exits 2)."""
    bad = write_spec(tmp_path, choices={"storage.count": [0, -1]}, failure=None, constraints=[])
    result = runner.invoke(app, ["plan", str(bad), "--jobs", "0", "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "choices" in result.stderr and "storage.count" in result.stderr and "Traceback" not in result.output
    assert result.stdout == ""
