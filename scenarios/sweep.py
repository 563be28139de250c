"""Sweeps: many variants of one scenario, run on any `concurrent.futures.Executor`.

A sweep is a base scenario plus axes (the same PATH as `--set`):
  grid    full factorial over `KEY=V1,V2,...` axes;
  random  N samples (seeded): each grid axis drawn from its values, each
          range `KEY=LO:HI` drawn uniformly (integers when both ends are).
Each case becomes a row: `case`, the swept values, `scenario_hash` (sha256
of the canonical JSON of the resolved scenario), the metrics, and `error`
(empty unless the case failed).  Rows stream to the output as they finish
(CSV: appended and flushed per row; Parquet: rewritten atomically at most
every `flush_seconds`), so an interrupted sweep keeps its finished rows and
`resume` skips every hash already written.

The executor is `ProcessPoolExecutor` by default; `distributed.Client(...).
get_executor()` is an Executor too, so Dask runs the very same code path.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import itertools
import json
import math
import os
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from iowatt.scenarios.loader import ScenarioError, apply_set, read_yaml, resolve_path, validate

BASE_COLUMNS = ("case", "scenario_hash", "error")
_HASH = re.compile(r"[0-9a-f]{64}")


@dataclass
class Sweep:
    base: dict[str, Any]
    origin: str
    grid: list[tuple[str, list[str]]] = field(default_factory=list)
    ranges: list[tuple[str, float, float]] = field(default_factory=list)
    samples: int | None = None
    seed: int = 0
    overrides: list[str] = field(default_factory=list)

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


def _strip_set(message: str, option: str, text: str, assignment: str) -> str:
    prefix = f"--set {assignment}: "
    rest = message[len(prefix):] if message.startswith(prefix) else message
    return f"{option} {text}: {rest}"


def check_path(base: dict[str, Any], key: str, value: str, option: str, text: str) -> None:
    """Raise a ScenarioError naming the option when the path is not a scenario field."""
    try:
        apply_set(base, f"{key}={value}")
    except ScenarioError as error:
        raise ScenarioError(_strip_set(str(error), option, text, f"{key}={value}")) from None


def parse_axis(text: str, option: str, base: dict[str, Any] | None = None) -> tuple[str, list[str]]:
    """`KEY=V1,V2,...` -> (KEY, [V1, V2, ...]); values stay text (read as YAML when applied)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(f"{option} {text}: expected KEY=V1,V2,..., e.g. storage.power_state=PS0,PS1")
    values = [v.strip() for v in raw.split(",")]
    if not raw.strip() or any(v == "" for v in values):
        raise ScenarioError(f"{option} {text}: expected a comma-separated list of values after '=', found {raw!r}")
    if base is not None:
        check_path(base, key, values[0], option, text)
    return key, values


def parse_range(text: str, option: str = "--range", base: dict[str, Any] | None = None) -> tuple[str, float, float]:
    key, sep, raw = text.partition("=")
    key = key.strip()
    lo_text, colon, hi_text = raw.partition(":")
    if not sep or not key or not colon:
        raise ScenarioError(f"{option} {text}: expected KEY=LO:HI, e.g. storage.fill=0:0.9")
    try:
        lo, hi = _number(lo_text), _number(hi_text)
    except ValueError:
        raise ScenarioError(f"{option} {text}: expected numbers LO:HI, found {raw!r}") from None
    if hi < lo:
        raise ScenarioError(f"{option} {text}: expected LO <= HI, found {lo} > {hi}")
    if base is not None:
        check_path(base, key, str(lo), option, text)
    return key, lo, hi


def _number(text: str) -> float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


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


def expand(sweep: Sweep) -> list[Case]:
    """Grid: the full factorial in order.  Random: `samples` seeded draws."""
    if sweep.samples is None:
        if sweep.ranges:
            raise ScenarioError("--range: needs --random N (the number of samples)")
        keys = [k for k, _ in sweep.grid]
        combos = itertools.product(*(v for _, v in sweep.grid)) if keys else [()]
        return [Case(i, dict(zip(keys, combo, strict=True))) for i, combo in enumerate(combos)]
    if sweep.samples < 1:
        raise ScenarioError(f"--random: expected a number of samples >= 1, found {sweep.samples}")
    rng = random.Random(sweep.seed)
    cases = []
    for i in range(sweep.samples):
        values = {k: rng.choice(v) for k, v in sweep.grid}
        for key, lo, hi in sweep.ranges:
            if isinstance(lo, int) and isinstance(hi, int):
                values[key] = str(rng.randint(lo, hi))
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
        for assignment in [*sweep.overrides, *case.assignments()]:
            data = apply_set(data, assignment)
        scenario = validate(data, f"{sweep.origin} case {case.index}")
    except (ScenarioError, ValueError) as error:
        return None, None, scenario_hash({"origin": sweep.origin, "overrides": sweep.overrides, "case": case.values}), str(error)
    resolved = scenario.model_dump(mode="json")
    return scenario, resolved, scenario_hash(resolved), ""


def resolve_case(sweep: Sweep, case: Case) -> tuple[dict[str, Any] | None, str, str]:
    """(resolved scenario as JSON-ready dict or None, hash, error)."""
    _, resolved, digest, error = _resolve(sweep, case)
    return resolved, digest, error


def run_cases(base: dict[str, Any], origin: str, overrides: list[str], cases: list[Case]) -> list[tuple[int, str, dict[str, Any]]]:
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
        out.append((case.index, digest, {"metrics": {}, "error": error} if scenario is None else _run(scenario)))
    return out


def run_resolved(resolved: dict[str, Any]) -> dict[str, Any]:
    """Run one resolved scenario (a JSON-ready dict): its metrics, or {'error': ...}.  Never raises."""
    try:
        scenario = validate(resolved, "sweep case")
    except (ScenarioError, ValueError) as error:
        return {"metrics": {}, "error": str(error)}
    return _run(scenario)


def _run(scenario: Any) -> dict[str, Any]:
    try:
        from iowatt.scenarios.run import run_scenario

        document, _ = run_scenario(scenario)
        metrics = dict(document["metrics"])
        metrics.update({k: v for k, v in drive_write_metrics(document).items() if k not in metrics})
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


def make_row(case: Case, digest: str, result: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"case": case.index}
    for key, text in case.values.items():
        row[key] = _typed(text)
    row["scenario_hash"] = digest
    row["error"] = result.get("error", "")
    row.update(result.get("metrics", {}))
    return row


def _typed(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, int | float | str | bool) else text


# --- output --------------------------------------------------------------------------------


class RowSink:
    """Where rows go as they finish; `existing()` lists rows already there (for resume)."""

    def __init__(self, path: Path, fmt: str) -> None:
        directory = path.parent if str(path.parent) else Path(".")
        if not directory.is_dir():
            raise ScenarioError(f"--output {path}: the folder {directory} does not exist")
        if fmt not in ("csv", "parquet"):
            raise ScenarioError(f"--output {path}: sweeps write .csv or .parquet, found format {fmt!r}")
        self.path, self.fmt = path, fmt
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = []
        self._handle: Any = None
        self._writer: Any = None
        self._pending: list[dict[str, Any]] = []
        self._last_flush = 0.0
        self.flush_seconds = 2.0

    def existing(self) -> list[dict[str, Any]]:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return []
        if self.fmt == "csv":
            import io

            with self.path.open(newline="") as handle:
                text = handle.read()
            if not text.endswith("\n"):
                # the sweep was killed while writing a row: that row is incomplete; drop it and run the case again
                text = text[: text.rfind("\n") + 1]
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
            return [r for r in rows if _HASH.fullmatch(str(r.get("scenario_hash") or ""))]
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(self.path).to_pylist()
        except (OSError, ValueError) as error:  # pyarrow raises ArrowInvalid (a ValueError) for a damaged file
            raise ScenarioError(f"--resume: {self.path} is not a readable Parquet file ({error}); move it away to start afresh") from None
        return [r for r in rows if _HASH.fullmatch(str(r.get("scenario_hash") or ""))]

    def start(self, keep: list[dict[str, Any]], columns: list[str]) -> None:
        """Begin with `keep` (rows from a previous run) and the known columns."""
        self.rows = list(keep)
        self.columns = list(columns)
        for row in keep:
            self._add_columns(row)
        if self.fmt == "csv":
            self._rewrite_csv()
        elif keep:
            self._write_parquet()

    def _add_columns(self, row: dict[str, Any]) -> bool:
        new = [k for k in row if k not in self.columns]
        self.columns.extend(new)
        return bool(new)

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self.fmt == "csv":
            if self._add_columns(row):
                self._rewrite_csv()  # a column no earlier row had: rewrite with the new header
            else:
                self._writer.writerow(row)
                self._handle.flush()
        else:
            self._add_columns(row)
            if time.monotonic() - self._last_flush >= self.flush_seconds:
                self._write_parquet()

    def _rewrite_csv(self) -> None:
        if self._handle is not None:
            self._handle.close()
        from iowatt.output import write_bytes

        text = _csv_text(self.rows, self.columns)
        write_bytes(text.encode(), self.path)
        self._handle = self.path.open("a", newline="")
        self._writer = csv.DictWriter(self._handle, fieldnames=self.columns, lineterminator="\n", restval="")

    def _write_parquet(self) -> None:
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        from iowatt.output import write_bytes

        table = pa.Table.from_pylist([_parquet_row(r, self.columns) for r in self.rows])
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        write_bytes(buffer.getvalue(), self.path)
        self._last_flush = time.monotonic()

    def close(self) -> None:
        if self.fmt == "csv":
            if self._handle is not None:
                self._handle.close()
                self._handle = None
        else:
            self._write_parquet()


def _csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    import io

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return out.getvalue()


def _parquet_row(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """Every column present; swept values as text so a column never mixes types."""
    out = {}
    for column in columns:
        value = row.get(column)
        if column in ("case",) and value is not None:
            value = int(value)
        elif column in ("scenario_hash", "error"):
            value = "" if value is None else str(value)
        elif isinstance(value, bool | str):
            value = str(value)
        elif value == "":
            value = None
        out[column] = value
    return out


# --- executors -----------------------------------------------------------------------------


class InlineExecutor(Executor):
    """Runs each call at submit time, in this process (--jobs 0; handy for debugging)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:
            future.set_exception(error)
        return future


@contextmanager
def open_executor(
    jobs: int | None = None, address: str | None = None, scheduler_file: str | None = None, connect_timeout: float = 10.0
) -> Iterator[Executor]:
    """ProcessPoolExecutor(jobs), or a Dask cluster's executor when an address / scheduler file is given.

    `connect_timeout` (s): how long to wait for the scheduler; 10 s covers a
    scheduler that is still starting on a busy node."""
    if address and scheduler_file:
        raise ScenarioError("--address and --scheduler-file: give one or the other")
    if address or scheduler_file:
        try:
            from distributed import Client
        except ImportError:
            raise ScenarioError("--address/--scheduler-file need dask.distributed: pip install 'iowatt[distributed]'") from None
        try:
            timeout = f"{connect_timeout}s"
            client = Client(address, timeout=timeout) if address else Client(scheduler_file=scheduler_file, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as error:
            option = f"--address {address}" if address else f"--scheduler-file {scheduler_file}"
            raise ScenarioError(f"{option}: cannot reach the Dask scheduler ({error})") from None
        try:
            executor = client.get_executor()
            executor.iowatt_workers = max(1, sum(client.nthreads().values()))  # type: ignore[attr-defined]  # chunking hint
            yield executor
        finally:
            client.close()
        return
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 0:
        raise ScenarioError(f"--jobs: expected >= 0, found {jobs}")
    if jobs == 0:
        yield InlineExecutor()
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pool.iowatt_workers = jobs  # type: ignore[attr-defined]  # chunking hint
        yield pool


# --- the sweep -----------------------------------------------------------------------------


@dataclass
class SweepResult:
    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    lost: list[str] = field(default_factory=list)  # cases whose worker died: not written, rerun with --resume
    seconds: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)


def run_sweep(
    sweep: Sweep,
    executor: Executor,
    sink: RowSink | None = None,
    *,
    resume: bool = False,
    progress: bool = False,
    cases: list[Case] | None = None,
    chunk_size: int | None = None,
) -> SweepResult:
    """Run every case on `executor`, streaming rows to `sink` as chunks finish.

    Cases go to workers in chunks (`chunk_size`; default: about 4 chunks per
    worker, at most 16 cases) because one checkpoint scenario simulates in
    milliseconds, comparable to the cost of shipping a task.  With `resume`,
    cases whose scenario hash is already in the sink are skipped (this needs
    the parent to resolve every case once, to know its hash).  Identical cases
    run once.  A chunk whose worker died is reported in `lost`; every row that
    finished before is already in the sink."""
    cases = expand(sweep) if cases is None else cases
    result = SweepResult(total=len(cases))
    done_hashes: set[str] = set()
    if sink is not None:
        keep = sink.existing() if resume else []
        done_hashes = {str(r["scenario_hash"]) for r in keep}
        sink.start(keep, ["case", *sweep.keys, "scenario_hash", "error"])
    to_run: list[Case] = []
    seen: set[tuple] = set()
    for case in cases:
        key = tuple(sorted(case.values.items()))
        if key in seen or (done_hashes and resolve_case(sweep, case)[1] in done_hashes):
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
        pending[executor.submit(run_cases, sweep.base, sweep.origin, list(sweep.overrides), chunk)] = chunk
    by_index = {case.index: case for case in to_run}
    bar = _progress(len(to_run), enabled=progress)
    try:
        for future in as_completed(pending):
            chunk = pending[future]
            try:
                outcomes = future.result()
            except Exception as error:  # the worker died (BrokenProcessPool, KilledWorker): no result, not an error row
                for case in chunk:
                    result.lost.append(f"case {case.index}: {type(error).__name__}: {error}")
                    bar.advance(result.failed, lost=True)
                continue
            for index, digest, outcome in outcomes:
                row = make_row(by_index[index], digest, outcome)
                result.rows.append(row)
                result.done += 1
                result.failed += bool(row["error"])
                if sink is not None:
                    sink.add(row)
                bar.advance(result.failed)
    finally:
        bar.stop()
        if sink is not None:
            sink.close()
    result.seconds = time.perf_counter() - start
    return result


class _Bar:
    def __init__(self, total: int, enabled: bool) -> None:
        self.progress = None
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            TextColumn("[red]{task.fields[failures]} failed"),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, rate="", failures=0)
        self.start = time.perf_counter()
        self.count = 0
        self.progress.start()

    def advance(self, failures: int, lost: bool = False) -> None:
        if self.progress is None:
            return
        self.count += 1
        rate = self.count / max(time.perf_counter() - self.start, 1e-9)
        self.progress.update(self.task, advance=1, rate=f"{rate:.1f}/s", failures=failures)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _progress(total: int, enabled: bool) -> _Bar:
    return _Bar(total, enabled)
