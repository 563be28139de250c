"""Propagate what is not known through the (deterministic) engine: screen, sample, summarise.

    result = propagate([scenario], Settings(samples=32, level=0.9), executor)
    summary = summarise(result)            # {metric: Interval}, sensitivities; .as_dict() is the JSON block

1. Inputs (scenarios.uncertain_inputs): user ranges, unset `assumed_field`s, the catalog values of the devices the
   scenarios use, the model constants the baseline run read.  An input shared by several scenarios (same key) gets
   one draw per sample, so a ratio of two runs is not widened by unknowns that cancel (common random numbers).
2. Screening: one input at a time at its 5 % and 95 % quantiles, the others at their given values (2 runs per input);
   an input that moves no output by more than `screen` (relative) is left at its value.  Where the runs keep a
   few outputs (a validation row's metric), inputs those outputs never read are found in groups first (sequential
   bifurcation, `_bifurcate`) and cost no runs of their own; the inputs that are read get the same two runs.
3. Sampling, by one of two methods:
   sobol  a Saltelli design over the kept inputs (matrices A, B and A with column i from B, A and B the halves of one
          Latin hypercube seeded by the scenario's seed).  Every design row is a draw from the inputs' joint
          distribution, so all rows give the interval; the A/A_B^i pairs give Sobol' total effects (Jansen).  Only the
          kept inputs that screening shows could reach a reported share (RANK_SWING) get an A_B^i matrix:
          samples x (ranked + 2) runs.  The default of `run`, `compare`, `sweep` and `plan`.
   oat    no further runs: the screening's three points per input (5 %, the given value, 95 %) make a piecewise-linear
          effect of each input, and their sum (an additive surrogate, as a first-order Taylor expansion but through
          each input's whole range) is sampled instead of the engine; shares are each effect's variance.  Exact for an
          additive response, blind to interactions (two inputs that only matter together); cheap enough for tables
          of many slow runs (the default of `validate` and `reproduce`).
   Either way the inputs screening left at their values still count: each has its two screening runs, so its
   piecewise-linear effect is known at no further cost, and many inputs that each move an output by less than
   `screen` can together move it by more.  oat sums every screened input's effect; sobol adds the effects of the
   inputs it does not sample to each design row (drawn once per row of A and of B, the same draw for A and its
   A_B^i rows, as a column that is never swapped), so the interval carries them and the total effects are unchanged.
Runs go to any `concurrent.futures.Executor` (scenarios.executors: processes or Dask), in chunks.  A run that fails
is counted and its reason kept, never dropped silently.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Literal

from iowatt.models.uncertainty import overridden, recording_reads
from iowatt.scenarios.interval_stats import Interval, interval, jansen_total_effects, shares
from iowatt.scenarios.loader import ScenarioError
from iowatt.scenarios.schema import ScenarioBase
from iowatt.scenarios.uncertain_inputs import CONSTANT_PREFIX, Subject, UncertainInput, correlate, subject_of

Outputs = dict[str, float]
Document = dict[str, Any]
Outcome = tuple[list[Outputs] | None, str]  # one run's outputs per scenario (None: it failed), and why it failed

# An input whose 5 %-95 % swing moves every output by less than this share is left at its value.  Assumed, a method
# setting: 0.5 % is well inside the spread of any measurement the model is compared with (a review's run-to-run
# spread is about 3 %, models.uncertainty.SOURCE_SPREAD), so such an input cannot change what a reader concludes.
# Plausible 0.1 %..2 %: below, inputs at the engine's numerical noise are kept and cost runs; above, a few dropped
# inputs together could reach the 3 % a measurement resolves.
SCREEN_SHARE = 0.005
# sobol: an input gets its own A_B^i matrix (m runs, for its total effect) only if at screening it moves some output by at
# least this share of the largest swing any input gives that output.  Below it, its first-order share of that output's
# variance is at most RANK_SWING^2 = 1 % (variance ~ swing^2 for a monotone effect), the share below which summarise
# reports no sensitivity, so its matrix would cost m runs to print nothing; it is still drawn in A and B, so the interval
# carries it.  Assumed, a method setting: plausible 0.05..0.2 (0.25 %..4 % of variance); interactions only (an input that
# moves nothing alone) were never seen by the screening either.
RANK_SWING = 0.1
# oat: draws of the additive surrogate (no engine runs).  Its quantiles are then known to within 1/4096 of the range's
# quantile scale, far below any interval's width; evaluating it costs milliseconds.
SURROGATE_DRAWS = 4096


class UncertaintyError(ScenarioError):
    """Sampler options that cannot be used (exit 2 on the command line)."""


@dataclass(frozen=True)
class Settings:
    samples: int = 32              # base points of the Saltelli design
    level: float = 0.9             # the central interval reported
    screen: float = SCREEN_SHARE
    # more failed runs than this share: the command exits 1.  Assumed: a tenth of the draws missing (those the scenario
    # checks refuse, at one end of a range) can bias an interval's end by about a tenth of its width, the most a reader
    # of a 90 % interval should be asked to accept; plausible 5 %..20 %.
    max_failed_share: float = 0.1
    seed: int | None = None        # default: the (first) scenario's seed
    method: Literal["sobol", "oat"] = "sobol"

    def check(self) -> Settings:
        if not 2 <= self.samples <= 4096:
            raise UncertaintyError(f"--samples: expected a whole number from 2 to 4096, found {self.samples}")
        if not 0.5 <= self.level < 1.0:
            raise UncertaintyError(f"--level: expected a probability from 0.5 up to (not including) 1, e.g. 0.9, found {self.level}")
        if self.method not in ("sobol", "oat"):
            raise UncertaintyError(f"--method: expected sobol or oat, found {self.method!r}")
        return self

    @property
    def base_points(self) -> int:
        return self.samples


@dataclass
class Propagation:
    """Everything the runs produced.  `rows[r][s]`: outputs of scenario s in design row r (None where it failed)."""

    settings: Settings
    inputs: list[UncertainInput]
    kept: list[UncertainInput]
    effects: dict[str, float]            # input key -> largest relative 5 %-95 % swing at screening
    baseline: list[Document]             # the runs at the given values, one per scenario
    rows: list[list[Outputs] | None] = field(default_factory=list)
    ranked: list[UncertainInput] = field(default_factory=list)  # sobol: the kept inputs with an A_B^i matrix (RANK_SWING)
    failures: list[str] = field(default_factory=list)
    screening_runs: int = 0
    screening_failed: int = 0
    base_outputs: list[Outputs] = field(default_factory=list)    # what each scenario's plain run keeps
    oat: dict[str, tuple[list[Outputs], list[Outputs]]] = field(default_factory=dict)  # key -> outputs at 5 %, 95 %
    seed: int = 0
    _draws: Any = None  # oat: the surrogate's quantile draws, made once

    @property
    def samples(self) -> int:
        """Engine runs the interval rests on: the design's rows (sobol) or the screening's (oat, and sobol with no input
        to sample)."""
        return self.screening_runs if self.settings.method == "oat" or not self.rows else len(self.rows)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row is None) + self.screening_failed

    @property
    def runs(self) -> int:
        return len(self.rows) + self.screening_runs

    @property
    def too_many_failed(self) -> bool:
        return self.runs > 0 and self.failed / self.runs > self.settings.max_failed_share

    def values(self, of: Callable[[list[Outputs]], float]) -> list[float]:
        """`of(outputs of each scenario)` in every design row (NaN where a run failed or `of` cannot be formed), with the
        effects of the screened inputs the design does not sample added (`_unsampled`)."""
        out = []
        for row in self.rows:
            try:
                out.append(float(of(row)) if row is not None else math.nan)
            except (KeyError, ZeroDivisionError, ValueError, IndexError):
                out.append(math.nan)
        residual = self._unsampled(of)
        return [v + r for v, r in zip(out, residual, strict=True)] if residual else out

    def screened(self) -> list[UncertainInput]:
        """Every input with its two screening runs (inert inputs, which no output reads, and failed ones have none)."""
        return [i for i in self.inputs if i.key in self.oat]

    def _effects(self, items: list[UncertainInput], of: Callable[[list[Outputs]], float], base: float) -> list[_Effect]:
        effects = []
        for item in items:
            low, high = self.oat[item.key]
            try:
                effects.append(_Effect(item.nominal_quantile(), of(low), base, of(high)))
            except (KeyError, ZeroDivisionError, ValueError, IndexError):
                effects.append(_Effect(item.nominal_quantile(), base, base, base))
        return effects

    def _unsampled(self, of: Callable[[list[Outputs]], float]) -> list[float]:
        """sobol: for each design row, the summed effects of the screened inputs left out of the design (empty when there
        are none).  A row of A and its A_B^i rows share one draw, B's rows have their own (the Saltelli layout of a column
        that is never swapped), from a Latin hypercube seeded apart from the design's."""
        sampled = {i.key for i in self.kept}
        items = [i for i in self.screened() if i.key not in sampled]
        m = self.settings.base_points
        if not items or not self.rows:
            return []
        try:
            base = of(self.base_outputs)
        except (KeyError, ZeroDivisionError, ValueError, IndexError):
            return []
        import numpy as np

        effects = self._effects(items, of, base)
        draws = correlate(items, latin_hypercube(2 * m, len(items), self.seed + 1))
        moves = sum(e.along(draws[:, i]) - e.along(np.array([e.nominal]))[0] for i, e in enumerate(effects))  # one per A, B row
        return [float(moves[r] if r < 2 * m else moves[(r - 2 * m) % m]) for r in range(len(self.rows))]

    def interval(self, of: Callable[[list[Outputs]], float], point: float) -> Interval:
        """The quantity's median and central interval over the sample (`point`, the given values' run, when nothing is
        uncertain or every run failed)."""
        if self.settings.method == "oat" or not self.rows:  # sobol with nothing to sample: the screened inputs' sum
            sample = self._surrogate(of)[0]
            return interval(sample, self.settings.level) if sample else Interval(point, point, point)
        finite = [v for v in self.values(of) if math.isfinite(v)]
        return interval(finite, self.settings.level) if finite else Interval(point, point, point)

    def sensitivity(self, of: Callable[[list[Outputs]], float]) -> list[tuple[str, float]]:
        """(input path, share of the quantity's spread), largest first: normalised Sobol' total effects (sobol) or each
        input's share of the additive surrogate's variance (oat)."""
        if self.settings.method == "oat":
            totals, items = self._surrogate(of)[1], self.screened()
        else:
            k, m = len(self.ranked), self.settings.base_points
            if k == 0 or not self.rows:
                return []
            v = self.values(of)
            totals, items = jansen_total_effects(v[:m], v[m:2 * m], [v[(2 + i) * m:(3 + i) * m] for i in range(k)]), self.ranked
        ranked = sorted(zip(_labels(items), shares(totals), strict=True), key=lambda p: -p[1])
        return [(path, share) for path, share in ranked if share > 0]

    def _surrogate(self, of: Callable[[list[Outputs]], float]) -> tuple[list[float], list[float]]:
        """(a sample of the additive surrogate, the variance of each screened input's effect): oat's interval and shares."""
        try:
            base = of(self.base_outputs)
        except (KeyError, ZeroDivisionError, ValueError, IndexError):
            return [], []
        drawn = self.screened()
        effects = self._effects(drawn, of, base)
        if not effects:
            return [base], []
        import numpy as np

        if self._draws is None or self._draws.shape[1] != len(effects):
            self._draws = correlate(drawn, latin_hypercube(SURROGATE_DRAWS, len(effects), self.seed))
        moves = np.column_stack([e.along(self._draws[:, i]) - e.along(np.array([e.nominal]))[0] for i, e in enumerate(effects)])
        return (base + moves.sum(axis=1)).tolist(), moves.var(axis=0).tolist()


def _labels(items: list[UncertainInput]) -> list[str]:
    """Paths as reported: a path two inputs share (the same field of the two devices of a ratio) names its device."""
    shared = {i.path for i in items if sum(j.path == i.path for j in items) > 1}
    return [f"{i.path} ({i.source})" if i.path in shared and i.source else i.path for i in items]


@dataclass(frozen=True)
class _Effect:
    """One input's effect on a quantity through its range: piecewise linear through its 5 % quantile, the plain run's
    value (at the nominal's quantile) and its 95 % quantile, carried on linearly beyond them."""

    nominal: float
    low: float
    base: float
    high: float

    def along(self, u: Any) -> Any:
        """The effect at a numpy array of quantiles.  A nominal at an end of the range (within 1 % of the 5 % or 95 %
        point) leaves two points: a line through them."""
        import numpy as np

        if not 0.06 < self.nominal < 0.94:
            return self.low + (self.high - self.low) * (u - 0.05) / 0.9
        below = self.base + (self.base - self.low) * (u - self.nominal) / (self.nominal - 0.05)
        above = self.base + (self.high - self.base) * (u - self.nominal) / (0.95 - self.nominal)
        return np.where(u > self.nominal, above, below)


# ------------------------------------------------------------------------------------------ the runs


def extract_outputs(document: Document, paths: tuple[str, ...] | None) -> Outputs:
    """The numbers a sampler keeps of a run: its `metrics`, or the result paths asked for (a path the result lacks is left out)."""
    if paths is None:
        metrics = document.get("metrics") or {}
        return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    from iowatt.scenarios.validation import lookup_metric

    out: Outputs = {}
    for path in paths:
        try:
            out[path] = lookup_metric(document, path)
        except KeyError:
            continue
    return out


def run_rows(subjects: tuple[Subject, ...], rows: list[tuple[int, dict[str, float]]],
             paths: tuple[tuple[str, ...] | None, ...], base: tuple[Outputs, ...]) -> list[tuple[int, list[Outputs] | None, str]]:
    """Worker side: run each design row (input key -> drawn value) on every scenario; a scenario that holds none of the
    row's inputs is its plain run (`base`), not run again.  Never raises."""
    from iowatt.scenarios.loader import validate
    from iowatt.scenarios.run import run_scenario

    for subject in subjects:  # a fresh worker declares the constants when their modules are imported
        for name in subject.constants:
            # a name not after its module was declared in this process already, or the run reports the unknown name
            with contextlib.suppress(ImportError):
                importlib.import_module(f"iowatt.{name.rsplit('.', 1)[0]}")
    out: list[tuple[int, list[Outputs] | None, str]] = []
    for index, values in rows:
        results: list[Outputs] = []
        try:
            for subject, wanted, plain in zip(subjects, paths, base, strict=True):
                if not any(a.key in values for a in subject.appliers) and not any(f"{CONSTANT_PREFIX}{n}" in values for n in subject.constants):
                    results.append(plain)
                    continue
                data = copy.deepcopy(subject.data)
                for applier in subject.appliers:
                    if applier.key in values:
                        applier.apply(data, values[applier.key])
                constants = {n: values[f"{CONSTANT_PREFIX}{n}"] for n in subject.constants if f"{CONSTANT_PREFIX}{n}" in values}
                with overridden(constants):
                    document = run_scenario(validate(data, subject.origin))[0]
                results.append(extract_outputs(document, wanted))
        except Exception as error:  # a failed draw is a counted failure of this row, not of the sample
            reason = " | ".join(line.strip() for line in str(error).splitlines()[:3] if line.strip())
            out.append((index, None, f"{type(error).__name__}: {reason}"))
            continue
        out.append((index, results, ""))
    return out


def _execute(executor: Executor, subjects: tuple[Subject, ...], rows: list[dict[str, float]],
             paths: tuple[tuple[str, ...] | None, ...], base: tuple[Outputs, ...]) -> list[tuple[list[Outputs] | None, str]]:
    """Every row's outputs, in row order."""
    workers = max(1, int(getattr(executor, "iowatt_workers", 1) or 1))
    size = max(1, math.ceil(len(rows) / (4 * workers)))
    numbered = list(enumerate(rows))
    futures = [executor.submit(run_rows, subjects, numbered[i:i + size], paths, base) for i in range(0, len(numbered), size)]
    done: dict[int, tuple[list[Outputs] | None, str]] = {}
    for future in futures:
        for index, outputs, error in future.result():
            done[index] = (outputs, error)
    return [done[i] for i in range(len(rows))]


# ------------------------------------------------------------------------------------------ the sampler


def propagate(scenarios: Sequence[ScenarioBase], settings: Settings | None = None, executor: Executor | None = None, *,
              origins: Sequence[str] | None = None, paths: Sequence[tuple[str, ...] | None] | None = None,
              baseline: Sequence[Document] | None = None, reads: Sequence[set[str]] | None = None) -> Propagation:
    """Screen and sample the uncertain inputs of `scenarios` (one draw of each shared input per row, applied to all).

    `paths`: per scenario, the result paths to keep (None: the run's `metrics`); `baseline`: the runs at the given
    values where the caller has them, with the constants each read (`reads`, from models.uncertainty.recording_reads
    around the caller's run); else they are run here, recording the constants they read."""
    from iowatt.scenarios.executors import InlineExecutor
    from iowatt.scenarios.run import run_scenario

    settings = (settings or Settings()).check()
    executor = executor or InlineExecutor()
    names = list(origins or [s.name or "scenario" for s in scenarios])
    wanted = tuple(paths or [None] * len(scenarios))
    documents: list[Document] = []
    subjects: list[Subject] = []
    inputs: dict[str, UncertainInput] = {}
    for i, scenario in enumerate(scenarios):
        if baseline is not None:
            document, read = baseline[i], (reads[i] if reads is not None else set())
        else:
            with recording_reads() as read:
                document = run_scenario(scenario)[0]
        documents.append(document)
        subject, found = subject_of(scenario, names[i], read)
        subjects.append(subject)
        for item in found:
            inputs.setdefault(item.key, item)
    result = Propagation(settings, list(inputs.values()), [], {}, documents)
    frozen = tuple(subjects)
    result.seed = settings.seed if settings.seed is not None else scenarios[0].seed
    _screen(result, frozen, wanted, executor)
    if settings.method == "sobol":
        _sample(result, frozen, wanted, executor, result.seed)
    return result


def _screen(result: Propagation, subjects: tuple[Subject, ...], paths: tuple[tuple[str, ...] | None, ...],
            executor: Executor) -> None:
    base = [extract_outputs(d, p) for d, p in zip(result.baseline, paths, strict=True)]
    result.base_outputs = base
    ends, result.screening_runs = _bifurcate(result.inputs, subjects, paths, executor, base)
    swings: dict[str, dict[tuple[int, str], float]] = {}  # input key -> (scenario, output) -> relative swing
    for item in result.inputs:
        if item.key not in ends:  # inert: its group gave back the baseline's outputs exactly at both ends
            result.effects[item.key] = 0.0
            continue
        (low, low_error), (high, high_error) = ends[item.key]
        if low is None or high is None:
            result.screening_failed += (low is None) + (high is None)
            result.failures += [f"{item.path} at its {q} quantile: {e}" for q, e in (("5 %", low_error), ("95 %", high_error)) if e]
            result.effects[item.key] = math.inf  # an input that breaks a run matters
            continue
        result.oat[item.key] = (low, high)
        swings[item.key] = {(s, k): _swing(b.get(k), lo.get(k), hi.get(k))
                            for s, (b, lo, hi) in enumerate(zip(base, low, high, strict=True)) for k in b}
        result.effects[item.key] = max(swings[item.key].values(), default=0.0)
    result.kept = [i for i in result.inputs if result.effects[i.key] > result.settings.screen]
    largest: dict[tuple[int, str], float] = {}
    for by_output in swings.values():
        for output, swing in by_output.items():
            largest[output] = max(largest.get(output, 0.0), swing)
    result.ranked = [i for i in result.kept if i.key not in swings  # a run failed: it matters
                     or any(swing > result.settings.screen and swing >= RANK_SWING * largest[output]
                            for output, swing in swings[i.key].items())]


def _bifurcate(inputs: list[UncertainInput], subjects: tuple[Subject, ...], paths: tuple[tuple[str, ...] | None, ...],
               executor: Executor, base: list[Outputs]) -> tuple[dict[str, tuple[Outcome, Outcome]], int]:
    """Each input's runs at its 5 % and 95 % quantiles, found by sequential bifurcation (Bettonvil & Kleijnen, EJOR 96,
    1997): a group of inputs is moved together to both ends; a group whose two runs give back the baseline's outputs
    exactly holds no input those outputs read (the engine is deterministic, so an input it never reads changes no
    bit; two effects cancelling to the last bit at both ends is not a case a continuous model meets), and is left
    out at the cost of two runs; any other group is split in two, down to single inputs, whose two runs are the
    one-at-a-time screening's.  Groups are neighbours in key order (a device's fields, a model module's constants sit
    together), so the inputs a metric reads come in few groups.  Grouping pays where the runs keep a few outputs (a
    validation row's metric: 3 of a fio row's 24 inputs reach its IOPS, 5 of an MLPerf row's 30 its throughput); where
    they keep every metric (`paths` None: energy reads the power values too, a third or more of the inputs are live)
    it costs more runs than it saves (Dorfman's group testing pays below about 30 % live), and every input is screened
    alone.  Returns the single inputs' outcomes, keyed by input key (inert inputs are absent), and the runs made."""
    outcomes: dict[str, tuple[Outcome, Outcome]] = {}
    if any(p is None for p in paths):
        groups = [[item] for item in inputs]
    else:
        groups = [sorted(inputs, key=lambda item: item.key)] if inputs else []
    runs = 0
    while groups:
        rows = [{item.key: _draw(item, u) for item in group} for group in groups for u in (0.05, 0.95)]
        done = _execute(executor, subjects, rows, paths, tuple(base))
        runs += len(rows)
        split: list[list[UncertainInput]] = []
        for n, group in enumerate(groups):
            low, high = done[2 * n], done[2 * n + 1]
            if len(group) == 1:
                outcomes[group[0].key] = (low, high)
            elif low[0] != base or high[0] != base:  # moved something, or failed: find which
                middle = _split_point(group)
                split += [group[:middle], group[middle:]]
        groups = split
    return outcomes, runs


def _split_point(group: list[UncertainInput]) -> int:
    """Where to halve a group: the change of owner (device entry, model module, scenario section) nearest the middle."""
    def owner(item: UncertainInput) -> str:
        return item.key[:max(item.key.rfind(":"), item.key.rfind("."), 0)]

    changes = [i for i in range(1, len(group)) if owner(group[i]) != owner(group[i - 1])]
    return min(changes, key=lambda i: abs(2 * i - len(group))) if changes else len(group) // 2


def _swing(base: float | None, low: float | None, high: float | None) -> float:
    if base is None or low is None or high is None:
        return 0.0
    scale = max(abs(base), abs(low), abs(high))
    return abs(high - low) / scale if scale > 0 else 0.0


def _sample(result: Propagation, subjects: tuple[Subject, ...], paths: tuple[tuple[str, ...] | None, ...],
            executor: Executor, seed: int) -> None:
    k, m = len(result.kept), result.settings.base_points
    if k == 0:
        return
    mixed = [result.kept.index(item) for item in result.ranked]
    rows = [{item.key: _draw(item, float(u)) for item, u in zip(result.kept, point, strict=True)}
            for point in correlate(result.kept, saltelli_design(k, m, seed, mixed))]
    for outputs, error in _execute(executor, subjects, rows, paths, tuple(result.base_outputs)):
        result.rows.append(outputs)
        if outputs is None and len(result.failures) < 20:
            result.failures.append(error)


def latin_hypercube(n: int, d: int, seed: int) -> Any:
    """n points in [0, 1)^d, one in each 1/n slice of every dimension (McKay, Beckman & Conover 1979), as a numpy
    array.  Written here rather than taken from scipy.stats.qmc: importing scipy.stats costs about a second, more than
    sampling a checkpoint scenario."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return (np.argsort(rng.random((d, n)), axis=1).T + rng.random((n, d))) / n


def saltelli_design(k: int, m: int, seed: int, mixed: Sequence[int] | None = None) -> list[list[float]]:
    """Quantiles in [0, 1) for k inputs: the m rows of A, the m rows of B, then A with column i from B for each i of
    `mixed` (default: all k; Saltelli et al. 2010), A and B the two halves of one Latin hypercube in 2k dimensions."""
    points = latin_hypercube(m, 2 * k, seed)
    a, b = points[:, :k].tolist(), points[:, k:].tolist()
    columns = range(k) if mixed is None else mixed
    mixed_rows = [[[*row[:i], b[n][i], *row[i + 1:]] for n, row in enumerate(a)] for i in columns]
    return [*a, *b, *(row for matrix in mixed_rows for row in matrix)]


def _draw(item: UncertainInput, u: float) -> float:
    value = item.range.value_at(u)
    return float(round(value)) if item.integer else value


# ------------------------------------------------------------------------------------------ the summary


@dataclass
class Summary:
    """What `--uncertainty` reports for one run: each headline metric's median and interval, and the inputs that move
    each most."""

    level: float
    method: str
    samples: int
    failed: int
    metrics: dict[str, Interval]
    sensitivity: list[tuple[str, str, float]]  # (input path, metric, share)
    inputs: int
    kept: list[str]
    failures: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "level": self.level, "method": self.method, "samples": self.samples, "failed": self.failed,
            "metrics": {name: i.as_dict() for name, i in self.metrics.items()},
            "sensitivity": [{"parameter": p, "metric": m, "share": s} for p, m, s in self.sensitivity],
            "inputs": self.inputs, "varied": self.kept, "failures": self.failures,
        }

    def top(self, metric: str, n: int = 3) -> list[tuple[str, float]]:
        return [(p, s) for p, m, s in self.sensitivity if m == metric][:n]


def summarise(result: Propagation, subject: int = 0) -> Summary:
    """The headline metrics (the run's `metrics`) of one scenario of the propagation."""
    base = extract_outputs(result.baseline[subject], None)
    metrics: dict[str, Interval] = {}
    sensitivity: list[tuple[str, str, float]] = []
    for name, point in base.items():
        def of(row: list[Outputs], name: str = name) -> float:
            return row[subject][name]
        metrics[name] = result.interval(of, point)
        sensitivity += [(path, name, share) for path, share in result.sensitivity(of) if share >= 0.01]
    return Summary(result.settings.level, result.settings.method, result.samples, result.failed, metrics, sensitivity, len(result.inputs),
                   [i.path for i in result.kept], result.failures)


def interval_columns(scenario: ScenarioBase, settings: Settings, document: Document, reads: set[str],
                     executor: Executor | None = None) -> dict[str, float]:
    """Columns a row of a sweep, plan or comparison gains with --uncertainty: METRIC_low and METRIC_high for each
    metric of the run (the central `level` interval), and how many samples ran and failed."""
    result = propagate([scenario], settings, executor, baseline=[document], reads=[reads])
    summary = summarise(result)
    columns = {f"{name}_{end}": value for name, i in summary.metrics.items()
               for end, value in (("low", i.low), ("high", i.high))}
    return {**columns, "uncertainty_samples": float(summary.samples), "uncertainty_failed": float(summary.failed)}
