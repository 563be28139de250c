"""The scenario runs a validation table needs: each distinct (scenario, overrides) once, in fixed order, optionally in parallel.

A row names a scenario and `set` overrides; a validation run may add overrides of
its own (a refitted value in cross-validation, a trial value inside a fit): an
`Adjust` maps a scenario (its file and raw YAML) to extra `--set` assignments,
applied before the row's own `set` so that a row that sets the field itself keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from iowatt.scenarios.loader import ScenarioError, load, read_yaml
from iowatt.scenarios.run import run_scenario

Document = dict[str, object]
Adjust = Callable[[Path | None, dict[str, object]], list[str]]
Progress = Callable[[int, int], None]  # (runs done, runs in all)

_REPO = Path(__file__).resolve().parent.parent  # failure messages name scenario files relative to it


@dataclass(frozen=True)
class RunKey:
    """One scenario run: the scenario (absolute path, or the JSON of an inline mapping) and its assignments in order."""

    source: str
    inline: bool
    assignments: tuple[str, ...]


@dataclass(frozen=True)
class RunOutcome:
    document: Document | None
    failure: str | None


def as_set_value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def describe_failure(error: BaseException) -> str:
    """One line: the error's kind and the last line of its message (scenario errors list fields first)."""
    message = str(error).strip().strip(chr(39)).replace(f"{Path.cwd()}/", "").replace(f"{_REPO}/", "")
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = lines[0] if len(lines) == 1 else " | ".join(lines[:3])
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class RunPlanner:
    """Turns (scenario, overrides) into run keys, with the adjustments of this validation run."""

    def __init__(self, base: Path, adjust: Adjust | None = None) -> None:
        self.base = base
        self.adjust = adjust
        self._raw: dict[Path, dict[str, object]] = {}

    def key(self, scenario: str | dict[str, object], overrides: dict[str, object]) -> RunKey:
        own = tuple(f"{k}={as_set_value(v)}" for k, v in overrides.items())
        if isinstance(scenario, str):
            path = (self.base / scenario).resolve()
            extra = self.adjust(path, self._read(path)) if self.adjust else []
            return RunKey(str(path), False, (*extra, *own))
        extra = self.adjust(None, scenario) if self.adjust else []
        return RunKey(json.dumps(scenario, sort_keys=True, default=str), True, (*extra, *own))

    def _read(self, path: Path) -> dict[str, object]:
        if path not in self._raw:
            try:
                self._raw[path] = read_yaml(path)
            except ScenarioError:
                self._raw[path] = {}  # the run itself reports the file's problem
        return self._raw[path]


def run_one(key: RunKey) -> RunOutcome:
    """Run one key; any failure becomes the outcome's one-line reason (never fatal to the table)."""
    try:
        source: str | dict[str, object] = json.loads(key.source) if key.inline else key.source
        document = run_scenario(load(source, list(key.assignments)))[0]
    except Exception as error:  # a run that fails is reported in the rows that read it, never fatal to the table
        return RunOutcome(None, describe_failure(error))
    return RunOutcome(document, None)


class RunCache:
    """Documents of finished runs, shared by the in-sample table, the fits and the cross-validation."""

    def __init__(self) -> None:
        self.outcomes: dict[RunKey, RunOutcome] = {}

    def get(self, key: RunKey) -> RunOutcome:
        if key not in self.outcomes:
            self.outcomes[key] = run_one(key)
        return self.outcomes[key]

    def ensure(self, keys: Iterable[RunKey], jobs: int = 1, progress: Progress | None = None) -> None:
        """Run every key not run yet: in this process (jobs 1) or in `jobs` processes; the order of results never matters."""
        not_run = list(dict.fromkeys(k for k in keys if k not in self.outcomes))
        if progress:
            progress(0, len(not_run))
        if jobs <= 1 or len(not_run) <= 1:
            for done, key in enumerate(not_run, start=1):
                self.outcomes[key] = run_one(key)
                if progress:
                    progress(done, len(not_run))
            return
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=min(jobs, len(not_run))) as pool:
            futures = {pool.submit(run_one, key): key for key in not_run}
            for done, future in enumerate(as_completed(futures), start=1):
                self.outcomes[futures[future]] = future.result()
                if progress:
                    progress(done, len(not_run))
