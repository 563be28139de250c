"""What is not known, as ranges: the one place that turns provenance into a distribution.

Three kinds of input carry a range (DESIGN.md section 8):

- catalog values: the `low`/`high`/`shape` of their provenance record (models.provenance); an `assumed` value must have
  one, a `calibrated` one may give its fit's `stderr`, and `datasheet`/`measured` values get the spread their source
  supports (`SOURCE_SPREAD` below) unless they give their own;
- model constants: declared with `assumed_constant(...)` in the module that uses them and read through
  `constant(name)` at the point of use, so a sampler can override them for one run (`overridden`);
- scenario fields whose default stands for something the study or user did not state: declared with `assumed_field`,
  so a field the scenario leaves unset is uncertain and one it sets is known.

The engine stays deterministic: a sampler above it (scenarios/) draws values with `Range.value_at` and runs the
engine once per draw.  Nothing here imports SimPy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from statistics import NormalDist
from types import MappingProxyType
from typing import Any, Literal

from iowatt.models.provenance import Provenance, Shape
from pydantic import Field

# What an assumed field's default is (assumed_field): the range's median, a setting a user who states nothing runs, or
# the note's own best estimate
Point = Literal["median", "documented default", "estimate"]

# z of the 95 % quantile: a normal range's low and high are its 5 % and 95 % quantiles
_Z90 = NormalDist().inv_cdf(0.95)


@dataclass(frozen=True)
class Range:
    """A plausible range of one quantity.  uniform / log-uniform: low and high are the ends; normal: the 5 % and 95 %
    quantiles (a fit's estimate +- 1.645 standard errors); log-normal: the same in log space (a fit of log values:
    estimate x e^(+-1.645 relative standard errors))."""

    low: float
    high: float
    shape: Shape = "uniform"
    note: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise ValueError(f"a range needs finite low <= high, found {self.low}..{self.high}")
        if self.shape in ("log-uniform", "log-normal") and self.low <= 0:
            raise ValueError(f"a {self.shape} range needs low > 0, found {self.low}")

    def value_at(self, u: float) -> float:
        """The quantity at quantile u in [0, 1] (the inverse CDF): what a Sobol'/LHS design point maps to."""
        u = min(max(u, 0.0), 1.0)
        if self.shape == "uniform":
            return self.low + u * (self.high - self.low)
        if self.shape == "log-uniform":
            return math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        low, high = (math.log(self.low), math.log(self.high)) if self.shape == "log-normal" else (self.low, self.high)
        centre, half = (low + high) / 2, (high - low) / 2
        if half == 0:
            value = centre
        else:
            u = min(max(u, 1e-9), 1 - 1e-9)
            value = centre + half / _Z90 * NormalDist().inv_cdf(u)
        return math.exp(value) if self.shape == "log-normal" else value

    @property
    def median(self) -> float:
        return self.value_at(0.5)

    def relative_half_width(self) -> float:
        """(high - low) / 2 / |median|: the width a table of intervals is judged by."""
        mid = abs(self.median)
        return (self.high - self.low) / 2 / mid if mid else math.inf


# The spread a value's source supports where the record gives none, as (low, high) factors on the value.
# datasheet: independent steady-state measurements of catalog drives land at 0.97-1.10 of the vendor's figure (enterprise
# datasheets are SNIA PTS steady-state figures, often conservative); measured: repeated readings of one quantity spread
# +-1 to +-5.2 % (nvidia-smi idle, bandwidthTest, a review's power readings).  docs/uncertainty.md, "Where ranges come from",
# lists every pair; exact figures (counts, settings, limits) and datasheet maxima give their own range in the catalog.
SOURCE_SPREAD: dict[str, tuple[float, float]] = {
    "datasheet": (0.95, 1.10),
    "measured": (0.94, 1.06),
}


def range_of(prov: Provenance, value: float) -> Range | None:
    """The range a catalog or model value carries: its own, its fit's standard error, or its source's spread."""
    if prov.low is not None and prov.high is not None:
        return Range(prov.low, prov.high, prov.shape, prov.range_note)
    if prov.stderr is not None:
        return Range(value - _Z90 * prov.stderr, value + _Z90 * prov.stderr, "normal", "fit's standard error")
    spread = SOURCE_SPREAD.get(prov.p)
    if spread is None or not isinstance(value, int | float) or isinstance(value, bool) or value == 0:
        return None
    low, high = sorted((value * spread[0], value * spread[1]))
    return Range(low, high, "uniform", f"{prov.p} spread {spread[0]:g}..{spread[1]:g} x (models.uncertainty.SOURCE_SPREAD)")


# ------------------------------------------------------------------------------------------ model constants


@dataclass(frozen=True)
class AssumedConstant:
    """A model constant nobody measured: its value, its range, and why."""

    name: str       # dotted, the module's path and the constant: "models.fabric.nfs_tcp_latency_seconds"
    value: float
    range: Range
    note: str       # why this value


_CONSTANTS: dict[str, AssumedConstant] = {}
_OVERRIDES: ContextVar[Mapping[str, float]] = ContextVar(
    "iowatt_constant_overrides", default=MappingProxyType({}))


def assumed_constant(name: str, value: float, *, low: float, high: float, note: str, range_note: str,
                     shape: Shape = "uniform") -> AssumedConstant:
    """Declare (once, at import) an assumed model constant with its range; read it with `constant(name)`."""
    if not note.strip() or not range_note.strip():
        raise ValueError(f"{name}: an assumed constant needs its reasoning (note) and its range's evidence (range_note)")
    declared = AssumedConstant(name, value, Range(low, high, shape, range_note), note)
    if not low <= value <= high:
        raise ValueError(f"{name}: value {value} lies outside its own range {low}..{high}")
    _CONSTANTS[name] = declared
    return declared


def assumed_constant_of(name: str, value: float, prov: Provenance) -> AssumedConstant:
    """Declare an assumed constant whose reasoning and range live in its module's PROVENANCE record (one definition
    for the record a catalog reader sees and the constant a sampler draws).  For a record of a list or mapping, whose
    low/high are factors, declare its factor: value 1.0."""
    if prov.p != "assumed" or prov.low is None or prov.high is None:
        raise ValueError(f"{name}: expected an assumed provenance record with low and high, found p={prov.p}, "
                         f"low={prov.low}, high={prov.high}")
    return assumed_constant(name, value, low=prov.low, high=prov.high, shape=prov.shape, note=prov.note,
                            range_note=prov.range_note)


_READS: ContextVar[set[str] | None] = ContextVar("iowatt_constant_reads", default=None)


def constant(name: str) -> float:
    """The constant's value in this run: a sampler's override where one is in force, else the declared value."""
    reads = _READS.get()
    if reads is not None:
        reads.add(name)
    override = _OVERRIDES.get().get(name)
    return _CONSTANTS[name].value if override is None else override


def declared_constants() -> dict[str, AssumedConstant]:
    """Every assumed constant declared so far (import the model modules first: declaration happens at import)."""
    return dict(_CONSTANTS)


@contextmanager
def recording_reads() -> Iterator[set[str]]:
    """Collect the names of the constants a block reads: a sampler varies only what a run actually uses."""
    reads: set[str] = set()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


@contextmanager
def overridden(values: Mapping[str, float]) -> Iterator[None]:
    """Run a block with some constants set to drawn values (one sample of a sampler); unknown names are an error."""
    unknown = sorted(set(values) - set(_CONSTANTS))
    if unknown:
        raise KeyError(f"no assumed constant named {', '.join(unknown)}")
    token = _OVERRIDES.set({**_OVERRIDES.get(), **values})
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


# ------------------------------------------------------------------------------------------ scenario fields

@dataclass(frozen=True)
class AssumedRange:
    """What `assumed_field` puts in a field's json_schema_extra: its range and reasoning.  Called by pydantic when it
    writes the JSON Schema, it adds the range to the field's description: the schema keeps to the standard
    keywords of JSON Schema 2020-12 (tests/test_schema.py), and a reader of `iowatt schema` still sees the range."""

    low: float
    high: float
    shape: Shape
    note: str
    range_note: str
    point: Point = "median"
    default: float | None = None

    def __call__(self, schema: dict[str, Any]) -> None:
        told = schema.get("description", "")
        used = "" if self.point == "median" else f"; a plain run uses {self.point} {self.default:g}, the range's median is {self.range.median:.3g}"
        schema["description"] = f"{told} (assumed where unset: plausible {self.low:g}..{self.high:g}, {self.shape}{used})".lstrip()

    @property
    def range(self) -> Range:
        return Range(float(self.low), float(self.high), self.shape, self.range_note)


def point_quantile(value: float, spread: Range) -> float:
    """Where a value sits in a range (its CDF there), 0.5 for an empty range."""
    if spread.high <= spread.low:
        return 0.5
    if spread.shape == "uniform":
        u = (value - spread.low) / (spread.high - spread.low)
    elif spread.shape == "log-uniform":
        u = math.log(value / spread.low) / math.log(spread.high / spread.low) if value > 0 else 0.0
    else:
        low, high = (math.log(spread.low), math.log(spread.high)) if spread.shape == "log-normal" else (spread.low, spread.high)
        x = math.log(value) if spread.shape == "log-normal" and value > 0 else value
        u = NormalDist((low + high) / 2, (high - low) / 2 / _Z90).cdf(x)
    return min(max(u, 0.0), 1.0)


# A default "is" its range's median when it lies between the range's 40 % and 60 % quantiles: a whole-number field
# (1..6 threads) cannot sit on a median of 2.45, and a tenth of the range's probability either side is well inside the
# spread a sampler resolves with the 8-32 base points it draws.
MEDIAN_BAND = (0.4, 0.6)


def assumed_field(default: float, *, low: float, high: float, note: str, range_note: str, shape: Shape = "uniform",
                  point: Point = "median", **field_kwargs: Any) -> Any:
    """A pydantic Field whose default stands for a value the study or user did not state: the sampler draws it from
    its range where the scenario leaves it unset (`model_fields_set`), and keeps it where the scenario sets it.

    `point` says what the default (the plain run's value) is: the range's `median`, checked here; a `documented
    default` (an OS's or vendor's setting a user who states nothing runs, e.g. rpc.nfsd's 8 threads) or the note's
    own `estimate`, each inside the range, stated in the schema and in the sampler's output."""
    spread = Range(low, high, shape, range_note)  # refuse a malformed range at import
    if not note.strip() or not range_note.strip():
        raise ValueError("an assumed field needs its reasoning (note) and its range's evidence (range_note)")
    if not low <= default <= high:
        raise ValueError(f"an assumed field's default must lie inside its range, found {default} outside {low:g}..{high:g}")
    if point == "median" and not MEDIAN_BAND[0] <= point_quantile(default, spread) <= MEDIAN_BAND[1]:
        raise ValueError(f"an assumed field's default {default:g} is not its range's median ({spread.median:.3g}, "
                         f"{low:g}..{high:g} {shape}): make it the median, or say it is a documented default or an estimate "
                         "(point=...) and why in its note")
    extra = AssumedRange(low, high, shape, note, range_note, point, float(default))
    return Field(default, json_schema_extra=extra, **field_kwargs)


@dataclass(frozen=True)
class FittedRange:
    """What `calibrated_field` puts in a field's json_schema_extra: the fitted default's provenance, whose range is the
    fit's (its `low`/`high` or `stderr`, models.uncertainty.range_of)."""

    prov: Provenance
    value: float

    def __call__(self, schema: dict[str, Any]) -> None:
        spread = self.range
        told = schema.get("description", "")
        schema["description"] = f"{told} (calibrated where unset: the fit's 90 % interval {spread.low:.4g}..{spread.high:.4g})".lstrip()

    @property
    def range(self) -> Range:
        spread = range_of(self.prov, self.value)
        if spread is None:
            raise ValueError("a calibrated field needs its fit's standard error or range")
        return spread


def calibrated_field(default: float, prov: Provenance, **field_kwargs: Any) -> Any:
    """A pydantic Field whose default was fitted (a calibrated provenance record with its fit's stderr or range): the
    sampler draws it from the fit's range where the scenario leaves it unset, as it draws an `assumed_field`."""
    if prov.p != "calibrated":
        raise ValueError(f"a calibrated field needs a calibrated provenance record, found p={prov.p}")
    if range_of(prov, float(default)) is None:  # refuse, at import, a fitted default without its fit's uncertainty
        raise ValueError("a calibrated field needs its fit's standard error or range in its provenance record")
    return Field(default, json_schema_extra=FittedRange(prov, float(default)), **field_kwargs)


class ConditionalRanges:
    """A parameter model whose own settings decide which of its ranged fields (assumed_field, calibrated_field) a run
    reads: a field the configuration leaves unread, or whose spread a fitted field it does read already holds, is not
    drawn (drawing it would only add a dimension that moves nothing, or count one spread twice)."""

    def fields_not_drawn(self) -> frozenset[str]:
        return frozenset()


def field_range(json_schema_extra: object) -> Range | None:
    """The range an `assumed_field` or a `calibrated_field` declared (pass the FieldInfo's json_schema_extra), or None."""
    return json_schema_extra.range if isinstance(json_schema_extra, AssumedRange | FittedRange) else None
