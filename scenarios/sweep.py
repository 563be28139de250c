"""Sweeps: many variants of one scenario, run on any `concurrent.futures.Executor`.

A sweep is a base scenario plus axes (the same PATH as `--set`):
  grid    full factorial over `KEY=V1,V2,...` axes;
  random  N samples (seeded): each grid axis drawn from its values, each
          range `KEY=LO:HI` drawn uniformly (integers when both ends are).
Each case becomes a row: `case`, the swept values, `scenario_hash` (sha256
of the canonical JSON of the resolved scenario), `sweep_id` (what makes two
sweeps the same), `error` (empty unless the case failed) and the metrics.
Rows are handed on in case order as they finish (the command line streams them
to a file with `iowatt.output.rows`), so an interrupted sweep keeps its
finished rows, `--resume` skips every hash already written, and two identical
sweeps write identical files.

The executor is `ProcessPoolExecutor` by default; `distributed.Client(...).
get_executor()` is an Executor too, so Dask runs the very same code path.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from iowatt.scenarios import checks
from iowatt.scenarios.loader import SYSTEM_SECTIONS, ScenarioError, apply_set, integer_field, read_yaml, resolve_path, validate
from iowatt.scenarios.sweep_axes import check_path, parse_axis, parse_range, split_values

__all__ = ["Case", "Sweep", "check_path", "parse_axis", "parse_range", "split_values"]

if TYPE_CHECKING:
    from iowatt.scenarios.uncertainty import Settings

_HASH = re.compile(r"[0-9a-f]{64}")
# Assumed: the most cases one sweep takes.  Every case is held in memory before the first runs (measured: 426 B per
# case of one --range axis, checkpoint_llama405b_8gpu) and every row after (a few kB); 10,000 cases took 34 s on
# 2 cores (issue 36), so 10^6 is about an hour there and 0.4 GB of cases.  Plausible range 10^5..10^7; beyond it
# (`--random 1000000000`) the sweep grew to GBs and never printed a word.
MAX_CASES = 1_000_000


@dataclass
class Sweep:
    base: dict[str, Any]
    origin: str
    grid: list[tuple[str, list[str]]] = field(default_factory=list)
    ranges: list[tuple[str, float, float]] = field(default_factory=list)
    samples: int | None = None
    seed: int = 0
    overrides: list[str] = field(default_factory=list)
    uncertainty: Settings | None = None  # --uncertainty: each case gains METRIC_low / METRIC_high (scenarios.uncertainty)

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.grid] + [k for k, _, _ in self.ranges]


@dataclass(frozen=True)
class Case:
    index: int
    values: dict[str, str]  # path -> value as written after `=` (read as YAML, like --set)
    # key -> the assignment that realises it, when the shown value is a label (plan's storage.layout)
    rewrite: dict[str, str] = field(default_factory=dict)

    def assignments(self) -> list[str]:
        return [self.rewrite.get(k, f"{k}={v}") for k, v in self.values.items()]


# --- parsing -------------------------------------------------------------------------------


def load_base(source: str | Path | dict[str, Any]) -> tuple[dict[str, Any], str]:
    if isinstance(source, dict):
        return copy.deepcopy(source), "inline scenario"
    path = resolve_path(str(source))
    return read_yaml(path), str(path)


def is_sweep_file(data: dict[str, Any]) -> bool:
    return "scenario" in data and "system" not in data


def sweep_from_file(path: Path, data: dict[str, Any]) -> Sweep:
    """A sweep YAML: scenario (path relative to the file, or a library name), set, grid, random."""
    allowed = {"scenario", "set", "grid", "random", "name", "description"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"{path}: unknown sweep field(s) {', '.join(unknown)} (fields: {', '.join(sorted(allowed))})")
    source = str(data["scenario"])
    relative = path.parent / source
    base, origin = load_base(relative if relative.exists() else source)
    sweep = Sweep(base=base, origin=origin, overrides=[str(s) for s in data.get("set") or []])
    for key, values in (data.get("grid") or {}).items():
        values = values if isinstance(values, list) else [values]
        text = f"{key}={','.join(_yaml_text(v) for v in values)}"
        check_path(base, key, _yaml_text(values[0]), f"{path} grid", text)
        sweep.grid.append((key, [_yaml_text(v) for v in values]))
    rand = data.get("random") or {}
    if rand:
        sweep.samples = int(rand.get("samples", 10))
        sweep.seed = int(rand.get("seed", 0))
        for key, bounds in (rand.get("ranges") or {}).items():
            if not (isinstance(bounds, list) and len(bounds) == 2):
                raise ScenarioError(f"{path} random.ranges.{key}: expected [LO, HI], found {bounds!r}")
            sweep.ranges.append(parse_range(f"{key}={bounds[0]}:{bounds[1]}", f"{path} random.ranges", base))
    return sweep


def _yaml_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def _canonical(key: str) -> str:
    """`storage.fill` and `system.storage.fill` name the same field."""
    return f"system.{key}" if key.split(".", 1)[0] in SYSTEM_SECTIONS else key


def check_axes(sweep: Sweep, option: str = "--grid/--range") -> None:
    """Each path is swept once: a second axis on the same field would silently replace the first, and so would an
    axis the fixed `--set` of the same field (or of a field inside it), which the axis's values replace in every case."""
    seen: dict[str, str] = {}
    for key in sweep.keys:
        if _canonical(key) in seen:
            raise ScenarioError(f"{option} {key}: the axis is given twice; give each field once, with all its values (KEY=V1,V2,...)")
        seen[_canonical(key)] = key
    for assignment in sweep.overrides:
        fixed = _canonical(assignment.partition("=")[0].strip())
        for path, key in seen.items():
            if fixed == path or fixed.startswith(f"{path}."):
                raise ScenarioError(f"--set {assignment} and {option} {key}: the swept values would replace the fixed one in every case; "
                                    "give the field either as an axis or with --set")


def expand(sweep: Sweep) -> list[Case]:
    """Grid: the full factorial in order.  Random: `samples` seeded draws."""
    check_axes(sweep)
    if sweep.samples is None:
        if sweep.ranges:
            raise ScenarioError("--range: needs --random N (the number of samples)")
        keys = [k for k, _ in sweep.grid]
        total = math.prod(len(v) for _, v in sweep.grid)
        if total > MAX_CASES:
            shown = " x ".join(str(len(v)) for _, v in sweep.grid)
            raise ScenarioError(f"--grid: expected at most {MAX_CASES:,} cases in one sweep, found {shown} = {total:,}; "
                                "split the sweep, or sample it with --random N")
        combos = itertools.product(*(v for _, v in sweep.grid)) if keys else [()]
        return [Case(i, dict(zip(keys, combo, strict=True))) for i, combo in enumerate(combos)]
    if sweep.samples < 1:
        raise ScenarioError(f"--random: expected a number of samples >= 1, found {sweep.samples}")
    if sweep.samples > MAX_CASES:
        raise ScenarioError(f"--random: expected at most {MAX_CASES:,} samples in one sweep, found {sweep.samples:,}; split it "
                            "(--seed keeps the parts apart)")
    rng = random.Random(sweep.seed)
    integers = {key: integer_field(sweep.base, key) for key, _, _ in sweep.ranges}
    cases = []
    for i in range(sweep.samples):
        values = {k: rng.choice(v) for k, v in sweep.grid}
        for key, lo, hi in sweep.ranges:
            if integers[key]:  # the field's type decides, not how the bounds were spelt (storage.fill=0:1 is a fraction)
                values[key] = str(rng.randint(int(lo), int(hi)))
            else:
                values[key] = repr(rng.uniform(lo, hi))
        cases.append(Case(i, values))
    return cases


# --- one case ------------------------------------------------------------------------------


def scenario_hash(resolved: dict[str, Any]) -> str:
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _resolve(sweep: Sweep, case: Case) -> tuple[Any, dict[str, Any] | None, str, str]:
    """(validated scenario or None, its JSON-ready dict or None, hash, error)."""
    data = sweep.base
    try:
        assignments = [*sweep.overrides, *case.assignments()]
        for assignment in assignments:
            data = apply_set(data, assignment)
        checks.check_overrides(sweep.base, assignments)
        scenario = validate(data, f"{sweep.origin} case {case.index}")
    except (ScenarioError, ValueError) as error:
        return None, None, scenario_hash({"origin": sweep.origin, "overrides": sweep.overrides, "case": case.values}), str(error)
    resolved = scenario.model_dump(mode="json")
    return scenario, resolved, scenario_hash(resolved), ""


def resolve_case(sweep: Sweep, case: Case) -> tuple[dict[str, Any] | None, str, str]:
    """(resolved scenario as JSON-ready dict or None, hash, error)."""
    _, resolved, digest, error = _resolve(sweep, case)
    return resolved, digest, error


def run_cases(base: dict[str, Any], origin: str, overrides: list[str], cases: list[Case],
              uncertainty: Settings | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """Worker side: resolve and run a chunk of cases -> [(case index, scenario hash, {metrics, error})].  Never raises.

    Resolving here rather than in the parent matters: applying --set values
    (each read as YAML) and validating cost about as much as simulating a
    checkpoint, so a parent that resolved every case would cap the sweep at one
    core whatever the number of workers."""
    sweep = Sweep(base=base, origin=origin, overrides=overrides)
    out = []
    for case in cases:
        try:
            scenario, _, digest, error = _resolve(sweep, case)
        except Exception as failure:  # a bug in resolution is this case's error, not the chunk's
            digest = scenario_hash({"origin": origin, "overrides": overrides, "case": case.values})
            scenario, error = None, f"{type(failure).__name__}: {failure}"
        out.append((case.index, digest, {"metrics": {}, "error": error, "invalid": True} if scenario is None else _run(scenario, uncertainty)))
    return out


def _run(scenario: Any, uncertainty: Settings | None = None) -> dict[str, Any]:
    try:
        from iowatt.models.uncertainty import recording_reads
        from iowatt.scenarios.run import run_scenario

        with recording_reads() as reads:
            document, _ = run_scenario(scenario)
        metrics = dict(document["metrics"])
        metrics.update({k: v for k, v in drive_write_metrics(document).items() if k not in metrics})
        if uncertainty is not None:
            from iowatt.scenarios.uncertainty import interval_columns

            metrics.update(interval_columns(scenario, uncertainty, document, reads))
        return {"metrics": metrics, "error": ""}
    except Exception as error:  # a failing case is a row, not a failed sweep
        return {"metrics": {}, "error": f"{type(error).__name__}: {error}"}


def drive_write_metrics(document: dict[str, Any]) -> dict[str, float]:
    """Bytes the drives themselves received and programmed, summed over every drive report in a result document.

    Workloads put per-drive reports (models.nand counters) under `<section>.drives`.
    `drive_bytes_written_total_GB` counts what reached the drives (RAID parity
    and mirror copies included); `nand_write_amplification` = NAND bytes / those
    bytes, the write amplification at the simulated fill.  Planning needs both
    for endurance.  Empty when no drive wrote."""
    host = nand_bytes = 0.0
    for section in document.values():
        drives = section.get("drives") if isinstance(section, dict) else None
        for drive in drives if isinstance(drives, list) else []:
            if isinstance(drive, dict) and "host_bytes_written" in drive and "nand_bytes_written" in drive:
                host += float(drive["host_bytes_written"])
                nand_bytes += float(drive["nand_bytes_written"])
    if host <= 0:
        return {}
    return {"drive_bytes_written_total_GB": host / 1e9, "nand_write_amplification": nand_bytes / host}


def make_row(case: Case, digest: str, result: dict[str, Any], identity: str = "") -> dict[str, Any]:
    row: dict[str, Any] = {"case": case.index}
    for key, text in case.values.items():
        row[key] = _typed(text)
    row["scenario_hash"] = digest
    row["sweep_id"] = identity
    row["error"] = result.get("error", "")
    row.update(result.get("metrics", {}))
    return row


def _typed(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, int | float | str | bool) else text


# --- the sweep -----------------------------------------------------------------------------


@dataclass
class SweepResult:
    total: int
    skipped: int = 0  # cases whose row a resumed output holds already
    repeated: int = 0  # cases equal to an earlier one (random draws repeat on a small grid): run once, one row
    done: int = 0
    failed: int = 0
    invalid: int = 0  # failed because the case's scenario is not valid (input errors), a part of `failed`
    lost: list[str] = field(default_factory=list)  # cases whose worker died: not written, rerun with --resume
    seconds: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)  # in case order
    keys: tuple[str, ...] = ()  # the swept paths, to name a failed case's values

    @property
    def all_invalid(self) -> bool:
        """Every case that ran was invalid input: the sweep as given cannot run."""
        return self.done > 0 and self.invalid == self.done

    def failures(self) -> list[str]:
        """`case N (KEY=VALUE, ...): why` for every failed row, in case order, one line each."""
        out = []
        for row in self.rows:
            if row["error"]:
                values = ", ".join(f"{k}={row[k]}" for k in self.keys if k in row)
                lines = [line.strip() for line in str(row["error"]).splitlines() if line.strip()]
                # the first line of a validation error only repeats the scenario's origin; the fields follow it
                why = "; ".join(lines[1:] if len(lines) > 1 and lines[0].endswith("invalid scenario") else lines)
                out.append(f"case {row['case']}" + (f" ({values})" if values else "") + f": {why}")
        return out


def sweep_id(sweep: Sweep) -> str:
    """What makes two sweeps the same: base scenario, fixed overrides, axes, sampling.  Written in every row, checked on --resume."""
    identity: dict[str, Any] = {"base": sweep.base, "overrides": sweep.overrides, "grid": sweep.grid,
                                "ranges": [list(r) for r in sweep.ranges], "samples": sweep.samples, "seed": sweep.seed}
    if sweep.uncertainty is not None:  # a sweep with intervals writes other columns: not the same sweep
        identity["uncertainty"] = [sweep.uncertainty.samples, sweep.uncertainty.level]
    return scenario_hash(identity)[:16]


def resumable(rows: list[dict[str, Any]], sweep: Sweep, where: str) -> list[dict[str, Any]]:
    """The finished rows of this sweep among `rows` (read back from its output); rows of another sweep are an error."""
    expected = sweep_id(sweep)
    found = {str(r.get("sweep_id") or "") for r in rows}
    if rows and found != {expected}:
        other = ", ".join(sorted(f or "none" for f in found))
        raise ScenarioError(
            f"--resume: {where} holds rows of another sweep (sweep_id {other}; this sweep's is {expected}); "
            "resume with the same scenario, --set, --grid/--range and --random/--seed, or write to another --output"
        )
    return [r for r in rows if _HASH.fullmatch(str(r.get("scenario_hash") or ""))]


def run_sweep(
    sweep: Sweep,
    executor: Executor,
    *,
    done_hashes: frozenset[str] | set[str] = frozenset(),
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_case: Callable[[bool], None] | None = None,
    cases: list[Case] | None = None,
    chunk_size: int | None = None,
) -> SweepResult:
    """Run every case on `executor`; `on_row(row)` for each finished row, in case order; `on_case(failed)` as each case ends.

    Cases go to workers in chunks (`chunk_size`; default: about 4 chunks per
    worker, at most 16 cases) because one checkpoint scenario simulates in
    milliseconds, comparable to the cost of shipping a task.  Cases whose
    scenario hash is in `done_hashes` (rows kept from an interrupted run) are
    skipped: that needs the parent to resolve each case once, to know its hash.
    Identical cases run once.  Rows finishing out of order wait until every
    earlier case has finished, so the output is the same whatever the
    completion order; a chunk whose worker died is reported in `lost`."""
    cases = expand(sweep) if cases is None else cases
    result = SweepResult(total=len(cases), keys=tuple(sweep.keys))
    identity = sweep_id(sweep)
    to_run: list[Case] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for case in cases:
        key = tuple(sorted(case.values.items()))
        if key in seen:
            result.repeated += 1
            continue
        if done_hashes and resolve_case(sweep, case)[1] in done_hashes:
            result.skipped += 1
            continue
        seen.add(key)
        to_run.append(case)
    workers = max(1, int(getattr(executor, "iowatt_workers", 1) or 1))
    size = chunk_size or max(1, min(16, math.ceil(len(to_run) / (4 * workers))))
    start = time.perf_counter()
    pending: dict[Future, list[Case]] = {}
    for i in range(0, len(to_run), size):
        chunk = to_run[i : i + size]
        pending[executor.submit(run_cases, sweep.base, sweep.origin, list(sweep.overrides), chunk, sweep.uncertainty)] = chunk
    order = _InOrder([case.index for case in to_run], result, on_row)
    by_index = {case.index: case for case in to_run}
    for future in as_completed(pending):
        chunk = pending[future]
        try:
            outcomes = future.result()
        except Exception as error:  # the worker died (BrokenProcessPool, KilledWorker): no result, not an error row
            for case in chunk:
                result.lost.append(f"case {case.index}: {type(error).__name__}: {error}")
                order.skip(case.index)
                if on_case is not None:
                    on_case(True)
            continue
        for index, digest, outcome in outcomes:
            row = make_row(by_index[index], digest, outcome, identity)
            result.done += 1
            result.failed += bool(row["error"])
            result.invalid += bool(outcome.get("invalid"))
            order.add(index, row)
            if on_case is not None:
                on_case(bool(row["error"]))
    order.finish()
    result.seconds = time.perf_counter() - start
    return result


class _InOrder:
    """Releases rows in case order: a row waits until every earlier case has a row or was lost."""

    def __init__(self, indices: list[int], result: SweepResult, on_row: Callable[[dict[str, Any]], None] | None) -> None:
        self.indices, self.result, self.on_row = indices, result, on_row
        self.next = 0
        self.waiting: dict[int, dict[str, Any] | None] = {}

    def add(self, index: int, row: dict[str, Any]) -> None:
        self.waiting[index] = row
        self._release()

    def skip(self, index: int) -> None:
        self.waiting[index] = None
        self._release()

    def _release(self) -> None:
        while self.next < len(self.indices) and self.indices[self.next] in self.waiting:
            row = self.waiting.pop(self.indices[self.next])
            self.next += 1
            if row is not None:
                self.result.rows.append(row)
                if self.on_row is not None:
                    self.on_row(row)

    def finish(self) -> None:
        for index in self.indices[self.next :]:
            self.waiting.setdefault(index, None)
        self._release()
