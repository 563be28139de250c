"""Capacity planning: search candidate configurations of a scenario under constraints.

A plan spec (YAML) names
  scenario:     the base scenario (path relative to the spec, or a library name)
  set:          fixed overrides, as --set
  choices:      candidate values per scenario path (storage.device, storage.count,
                storage.power_state, ...), plus `checkpoint_interval`: seconds,
                "10 min", `daly`, `young` or `simulated` (need `failure`)
  failure:      {nodes, node_mtbf_hours, restart_seconds, local_recovery_share}: enables goodput metrics
                (local_recovery_share: failures a tiered save recovers from its hosts' copies)
  write_amplification: force a NAND WA for endurance (default: the simulated WA at the fill)
  constraints:  ["save_checkpoint_duration_mean_seconds <= 300", "endurance_years >= 5", ...]
  objective:    {minimise: cost_usd} or {maximise: goodput}; any metric of a configuration,
                or cost, devices, energy_per_training_day (aliases)
  max_exhaustive: simulations above which the monotone search is used (default 2000)

Each distinct scenario is simulated once (through the sweep machinery, on any
Executor); the checkpoint interval only enters the derived metrics, which are
analytic (models.goodput).  Cost = drives x capacity_TB x price_usd_per_TB and
is None ("no price in catalog") when the catalog entry has no price.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iowatt.models import goodput as gp
from iowatt.scenarios.loader import ScenarioError, read_yaml
from iowatt.scenarios.plan_costs import derived_metrics
from iowatt.scenarios.sweep import Case, Sweep, _yaml_text, check_axes, check_path, load_base, run_sweep
from iowatt.scenarios.sweep import _typed as sw_typed

if TYPE_CHECKING:
    from iowatt.scenarios.uncertainty import Settings

INTERVAL_KEY = "checkpoint_interval"
LAYOUT_KEY = "storage.layout"  # choices of storage kinds/levels: [{kind: local}, {kind: raid, level: 5}, ...]
INTERVAL_RULES = ("daly", "young", "simulated")  # intervals computed per configuration from the failure model
MONOTONE_OBJECTIVES = ("cost_usd", "device_count", "capacity_TB_total")
# short names people write in a spec -> the metric they mean
OBJECTIVE_ALIASES = {
    "cost": "cost_usd",
    "devices": "device_count",
    "energy_per_training_day": "system_energy_per_training_day_kWh",
    "energy_per_useful_hour": "system_energy_per_useful_hour_kWh",
}
OPS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq}
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|==|<|>)\s*([-+0-9.eE]+|inf)\s*$")


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str
    bound: float

    def holds(self, value: Any) -> bool:
        return value is not None and not (isinstance(value, float) and math.isnan(value)) and OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


def parse_constraint(text: str, where: str = "constraints") -> Constraint:
    match = _CONSTRAINT.match(str(text))
    if not match:
        raise ScenarioError(f"{where}: expected 'METRIC <= VALUE' or 'METRIC >= VALUE', found {text!r}")
    return Constraint(match.group(1), match.group(2), float(match.group(3)))


@dataclass
class PlanSpec:
    base: dict[str, Any]
    origin: str
    choices: list[tuple[str, list[str]]]
    intervals: list[float | str] = field(default_factory=list)
    failure: gp.FailureModel | None = None
    constraints: list[Constraint] = field(default_factory=list)
    objective: str = "cost_usd"
    maximise: bool = False
    overrides: list[str] = field(default_factory=list)
    write_amplification: float | None = None
    max_exhaustive: int = 2000
    name: str = ""
    layouts: dict[str, str] = field(default_factory=dict)  # storage.layout label -> `storage={...}` assignment


def load_spec(path: str | Path) -> PlanSpec:
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"{path}: no such plan spec file (a YAML with scenario, choices, constraints, objective)")
    data = read_yaml(path, what="plan spec")  # a binary file, a duplicate key: one message with the line
    allowed = {"name", "description", "scenario", "set", "choices", "failure", "constraints", "objective", "write_amplification", "max_exhaustive"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"{path}: unknown plan field(s) {', '.join(unknown)} (fields: {', '.join(sorted(allowed))})")
    if "scenario" not in data:
        raise ScenarioError(f"{path}: scenario: required field is missing (the base scenario to plan for)")
    relative = path.parent / str(data["scenario"])
    base, origin = load_base(relative if relative.exists() else str(data["scenario"]))
    spec = PlanSpec(base=base, origin=origin, choices=[], name=str(data.get("name", path.stem)))
    spec.overrides = [str(s) for s in data.get("set") or []]
    choices = data.get("choices") or {}
    if not isinstance(choices, dict) or not choices:
        raise ScenarioError(f"{path}: choices: expected a mapping of PATH: [values], found {choices!r}")
    for key, values in choices.items():
        values = values if isinstance(values, list) else [values]
        if not values:
            raise ScenarioError(f"{path}: choices.{key}: expected at least one value")
        if key == INTERVAL_KEY:
            spec.intervals = [_interval(v, f"{path}: choices.{key}") for v in values]
            continue
        if key == LAYOUT_KEY:
            spec.layouts = _layouts(base, values, f"{path}: choices.{key}")
            spec.choices.insert(0, (key, list(spec.layouts)))  # first, so storage.device/count/... apply on top
            continue
        texts = [_yaml_text(v) for v in values]
        check_path(base, key, texts[0], f"{path}: choices", f"{key}")
        spec.choices.append((key, texts))
    failure = data.get("failure")
    if failure:
        try:
            spec.failure = gp.FailureModel(
                nodes=int(failure.get("nodes", 1)),
                node_mtbf_hours=float(failure["node_mtbf_hours"]),
                restart_seconds=_interval(failure.get("restart_seconds", 0.0), f"{path}: failure.restart_seconds", zero=True),  # type: ignore[arg-type]
                local_recovery_share=float(failure.get("local_recovery_share", 0.0)),
            )
        except KeyError as error:
            raise ScenarioError(f"{path}: failure.{error.args[0]}: required field is missing") from None
        except (TypeError, ValueError) as error:
            raise ScenarioError(f"{path}: {error}") from None
    if any(isinstance(v, str) for v in spec.intervals) and spec.failure is None:
        raise ScenarioError(f"{path}: choices.{INTERVAL_KEY}: daly/young/simulated need a `failure` model (nodes, node_mtbf_hours)")
    spec.constraints = [parse_constraint(c, f"{path}: constraints") for c in data.get("constraints") or []]
    objective = data.get("objective") or {"minimise": "cost_usd"}
    if isinstance(objective, str):
        objective = {"minimise": objective}
    senses = {k: v for k, v in objective.items() if k in ("minimise", "minimize", "maximise", "maximize")}
    if len(senses) != 1 or len(objective) != 1:
        raise ScenarioError(f"{path}: objective: expected {{minimise: METRIC}} or {{maximise: METRIC}}, found {objective!r}")
    (sense, metric), = senses.items()
    spec.objective, spec.maximise = OBJECTIVE_ALIASES.get(str(metric), str(metric)), sense.startswith("maxi")
    if data.get("write_amplification") is not None:
        try:
            spec.write_amplification = float(data["write_amplification"])
        except (TypeError, ValueError):
            raise ScenarioError(f"{path}: write_amplification: expected a number >= 1, found {data['write_amplification']!r}") from None
        if spec.write_amplification < 1.0:
            raise ScenarioError(f"{path}: write_amplification: expected a number >= 1, found {spec.write_amplification}")
    exhaustive = data.get("max_exhaustive", 2000)
    if isinstance(exhaustive, bool) or not isinstance(exhaustive, int) or exhaustive < 1:
        raise ScenarioError(f"{path}: max_exhaustive: expected a whole number of configurations >= 1, found {exhaustive!r}")
    spec.max_exhaustive = exhaustive
    return spec


def _layouts(base: dict[str, Any], values: list[Any], where: str) -> dict[str, str]:
    """storage.layout choices -> {label: `storage=<base storage merged with the layout>`}.

    A layout is a mapping of storage fields that only some storage kinds have
    ({kind: raid, level: 5}); it replaces the base's storage section merged with
    it, and the other storage choices (device, count, power_state) apply on top."""
    base_storage = dict((base.get("system") or {}).get("storage") or {})
    out: dict[str, str] = {}
    for value in values:
        layout = {"kind": value} if isinstance(value, str) else value
        if not isinstance(layout, dict) or not layout:
            raise ScenarioError(f"{where}: expected a mapping such as {{kind: raid, level: 5}} or a kind name, found {value!r}")
        merged = {**{k: v for k, v in base_storage.items() if k != "kind"}, **layout}
        if layout.get("kind", "local") != "local" and "kind" in layout:
            merged["kind"] = layout["kind"]
        label = _layout_label(layout)
        if label in out:
            raise ScenarioError(f"{where}: the layout {label} is listed twice")
        out[label] = "storage=" + _yaml_text(merged)
        check_path(base, "storage", _yaml_text(merged), where, label)
    return out


def _layout_label(layout: dict[str, Any]) -> str:
    kind = str(layout.get("kind", "local"))
    rest = {k: v for k, v in layout.items() if k not in ("kind", "level")}
    label = f"raid{layout['level']}" if kind == "raid" and "level" in layout else kind
    return label + "".join(f" {k}={v}" for k, v in rest.items())


def _interval(value: Any, where: str, zero: bool = False) -> float | str:
    """Seconds, or a rule (daly, young, simulated); 0 s only where `zero` (a restart may take none, an interval of 0 s
    would leave no time for training: goodput is undefined)."""
    if isinstance(value, str) and value.strip().lower() in INTERVAL_RULES:
        return value.strip().lower()
    from iowatt.models.units import UnitError, parse_seconds

    try:
        seconds = float(parse_seconds(value))
    except (UnitError, ValueError, TypeError) as error:
        raise ScenarioError(f"{where}: expected seconds (e.g. 600 or '10 min'), daly, young or simulated; {error}") from None
    if not (seconds >= 0 if zero else seconds > 0) or not math.isfinite(seconds):
        raise ScenarioError(f"{where}: expected a finite number of seconds {'>=' if zero else '>'} 0, found {value!r}")
    return seconds


# --- derived metrics -----------------------------------------------------------------------

# --- search --------------------------------------------------------------------------------


@dataclass
class PlanResult:
    spec: PlanSpec
    configs: list[dict[str, Any]]  # every evaluated configuration, with `feasible` and `violations`
    search: str
    simulations: int
    notes: list[str] = field(default_factory=list)

    @property
    def feasible(self) -> list[dict[str, Any]]:
        return [c for c in self.configs if c["feasible"]]

    def ranked(self) -> list[dict[str, Any]]:
        """Feasible configurations, best first; those without the objective (no price) last.

        Ties on the objective (two power states of the same drives cost the
        same) go to fewer devices, then higher goodput (the whole job's
        productivity outweighs the storage's own energy), then less system
        energy per training day, then less SSD energy per day."""
        sign = -1.0 if self.spec.maximise else 1.0

        def key(c: dict[str, Any]) -> tuple:
            value = c.get(self.spec.objective)
            return (
                value is None,
                sign * value if value is not None else 0.0,
                c.get("device_count", 0),
                -(c.get("goodput") or 0.0),
                c.get("system_energy_per_training_day_kWh") or 0.0,
                c.get("ssd_energy_per_day_Wh") or 0.0,
            )

        return sorted(self.feasible, key=key)

    def pareto(self, cost: str, time: str = "save_checkpoint_duration_mean_seconds") -> list[dict[str, Any]]:
        """Feasible configurations not dominated in (cost, time), both minimised; sorted by cost."""
        points = [c for c in self.feasible if c.get(cost) is not None and c.get(time) is not None]
        points.sort(key=lambda c: (c[cost], c[time]))
        front, best = [], math.inf
        for c in points:
            if c[time] < best:
                front.append(c)
                best = c[time]
        return front

    def rejected_families(self) -> list[dict[str, Any]]:
        """Families (choices other than count and interval) with no feasible configuration, and what bound them."""
        fixed = {"storage.count", INTERVAL_KEY}
        keys = [k for k, _ in self.spec.choices if k not in fixed]
        families: dict[tuple, list[dict[str, Any]]] = {}
        for c in self.configs:
            if not c.get("invalid"):
                families.setdefault(tuple(c.get(k) for k in keys), []).append(c)
        out = []
        for values, members in families.items():
            if any(m["feasible"] for m in members):
                continue
            label = ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) or "all"
            errors = [m for m in members if m.get("error")]
            if len(errors) == len(members):
                out.append({"family": label, "bound_by": [f"every run failed: {errors[0]['error']}"]})
                continue
            ran = [m for m in members if not m.get("error")]
            always = [c for c in self.spec.constraints if all(str(c) in m["violations"] for m in ran)]
            reasons = []
            for constraint in always or self.spec.constraints:
                values_seen = [m.get(constraint.metric) for m in ran if m.get(constraint.metric) is not None]
                if not values_seen and not always:
                    continue
                best = (min if constraint.op in ("<=", "<") else max)(values_seen) if values_seen else None
                shown = "not computable" if best is None else f"best {best:.4g}"
                reasons.append(f"{constraint} ({shown})")
            if not always:
                reasons = ["no single constraint; every configuration breaks at least one of: " + "; ".join(reasons)]
            out.append({"family": label, "bound_by": reasons})
        return out


def _evaluate(spec: PlanSpec, sweep: Sweep, cases: list[Case], executor: Executor,
              on_case: Callable[[bool], None] | None = None) -> list[dict[str, Any]]:
    """Simulate each distinct scenario once and expand it over the checkpoint intervals.

    A combination that is not a valid scenario (PS2 on a drive with one power
    state) is marked `invalid`: it is not a candidate, so it neither counts as
    rejected nor explains a rejection."""
    from iowatt.scenarios.sweep import resolve_case

    resolved_cases = {case.index: resolve_case(sweep, case) for case in cases}
    result = run_sweep(sweep, executor, cases=cases, on_case=on_case)
    if result.lost:
        raise ScenarioError(f"plan: {len(result.lost)} simulation(s) lost with their worker: {result.lost[0]}")
    by_hash = {r["scenario_hash"]: r for r in result.rows}  # cases resolving to the same scenario share one run
    configs = []
    intervals: list[float | str | None] = list(spec.intervals) or [None]
    for case in cases:
        resolved, digest, invalid = resolved_cases[case.index]
        row = by_hash[digest]
        base = {k: sw_typed(v) for k, v in case.values.items()}
        metrics = {k: v for k, v in row.items() if k not in ("case", "scenario_hash", "sweep_id", "error", *case.values)}
        for interval in intervals:
            config = {**base, INTERVAL_KEY: interval, "error": row["error"], "scenario_hash": digest, "invalid": bool(invalid), **metrics}
            if resolved is None:
                config.update(violations=["not a valid scenario"], feasible=False)
                configs.append(config)
                continue
            if not row["error"]:
                config.update(
                    derived_metrics(metrics, resolved, failure=spec.failure, interval=interval, write_amplification=spec.write_amplification)
                )
                config["violations"] = [str(c) for c in spec.constraints if not c.holds(config.get(c.metric))]
            else:
                config["violations"] = ["run failed"]
            config["feasible"] = not config["violations"]
            configs.append(config)
    return configs


def search(spec: PlanSpec, executor: Executor, on_case: Callable[[bool], None] | None = None,
           uncertainty: Settings | None = None) -> PlanResult:
    """The configurations, evaluated; `on_case(failed)` as each simulation of an exhaustive search ends; with
    `uncertainty`, each configuration gains METRIC_low / METRIC_high columns (constraints and the ranking still read
    the point prediction)."""
    sweep = Sweep(base=spec.base, origin=spec.origin, grid=spec.choices, overrides=spec.overrides, uncertainty=uncertainty)
    check_axes(sweep, "choices")  # a `set` of a field the choices vary would be replaced in every configuration
    keys = [k for k, _ in spec.choices]
    combos = list(itertools.product(*(v for _, v in spec.choices)))
    rewrite = {label: spec.layouts[label] for label in spec.layouts}
    all_cases = []
    for i, combo in enumerate(combos):
        values = dict(zip(keys, combo, strict=True))
        layout = values.get(LAYOUT_KEY)
        all_cases.append(Case(i, values, {LAYOUT_KEY: rewrite[layout]} if layout is not None else {}))
    notes: list[str] = []
    if len(all_cases) <= spec.max_exhaustive:
        configs = _evaluate(spec, sweep, all_cases, executor, on_case)
        result = PlanResult(spec, configs, "exhaustive", len(all_cases), notes)
    elif "storage.count" in keys and spec.objective in MONOTONE_OBJECTIVES and not spec.maximise:
        result = _bisect_count(spec, sweep, all_cases, executor)
    else:
        raise ScenarioError(
            f"plan: {len(all_cases)} configurations exceed max_exhaustive ({spec.max_exhaustive}); narrow the choices, raise "
            f"max_exhaustive, or minimise {', '.join(MONOTONE_OBJECTIVES)} over storage.count (monotone search)"
        )
    invalid = [c for c in result.configs if c.get("invalid")]
    if invalid and len(invalid) == len(result.configs):  # nothing to choose from: bad input, as for a sweep (exit 2)
        raise ScenarioError(f"{spec.name}: choices: expected at least one combination that is a valid scenario, found none of "
                            f"{len(invalid)}, e.g. {invalid[0]['error']}")
    _check_metrics(result)
    _price_notes(result)
    if invalid:
        example = invalid[0]["error"]
        result.notes.append(f"{len(invalid)} combination(s) are not valid scenarios and were skipped, e.g. {example}")
    return result


def _check_metrics(result: PlanResult) -> None:
    """A constraint or objective on a metric no configuration has is a typo, not an infeasible plan."""
    ran = [c for c in result.configs if not c.get("error")]
    if not ran:
        return
    known = sorted({k for c in ran for k, v in c.items() if isinstance(v, int | float) and not isinstance(v, bool)})
    wanted = [("objective", result.spec.objective)] + [("constraints", c.metric) for c in result.spec.constraints]
    for where, metric in wanted:
        if not any(metric in c for c in ran):
            raise ScenarioError(f"{result.spec.name}: {where}: expected a metric of the configurations, found {metric!r} (known: {', '.join(known)})")


def _bisect_count(spec: PlanSpec, sweep: Sweep, all_cases: list[Case], executor: Executor) -> PlanResult:
    """Per family, the fewest drives that meet every constraint (bisection over sorted counts).

    Assumes more drives never break a constraint that fewer drives met (faster,
    more endurance) and never cost less: true for time, endurance and cost.
    """
    counts = sorted({int(c.values["storage.count"]) for c in all_cases})
    families: dict[tuple, dict[int, Case]] = {}
    for case in all_cases:
        family = tuple((k, v) for k, v in case.values.items() if k != "storage.count")
        families.setdefault(family, {})[int(case.values["storage.count"])] = case
    configs: list[dict[str, Any]] = []
    simulations = 0
    for members in families.values():
        lo, hi = 0, len(counts) - 1
        cache: dict[int, list[dict[str, Any]]] = {}

        def evaluate(i: int, members: dict[int, Case] = members, cache: dict[int, list[dict[str, Any]]] = cache) -> bool:
            nonlocal simulations
            if i not in cache:
                cache[i] = _evaluate(spec, sweep, [members[counts[i]]], executor)
                simulations += 1
            return any(c["feasible"] for c in cache[i])

        if not evaluate(hi):
            lo = hi + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if evaluate(mid):
                hi = mid
            else:
                lo = mid + 1
        for found in cache.values():
            configs.extend(found)
    return PlanResult(spec, configs, f"bisection over storage.count ({len(all_cases)} candidates)", simulations)


def _price_notes(result: PlanResult) -> None:
    if result.spec.objective != "cost_usd" and not any(c.get("cost_usd") is not None for c in result.configs):
        return
    missing = sorted({str(c.get("storage.device", "?")) for c in result.configs if c.get("price_usd_per_TB") is None and not c.get("error")})
    if missing:
        result.notes.append(
            f"no price in catalog for {', '.join(missing)}: cost_usd left empty; "
            + ("ranked after priced devices, then by device count, goodput and energy" if result.spec.objective == "cost_usd" else "")
        )
