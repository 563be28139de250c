"""Where each catalog number comes from.

A catalog value is written either plain (names, enums) or wrapped:

    seq_read_MBps: {v: 12000, p: datasheet, src: "StorageReview S08"}

`p` is one of datasheet, measured, calibrated, assumed.  measured and
calibrated values must name their source (`src`: a publication or a trace
bundle); assumed values must give the reasoning (`note`) and the plausible
range of the value (`low`, `high`, `shape`, with the evidence for each end in
`range_note`; models.uncertainty reads it).  Any value may carry a range; a
calibrated value may carry the fit's standard error (`stderr`) instead, and its
correlation with the entry's other fitted fields (`correlation: {field: rho}`).  A calibrated value
also names what it was fitted on (`fitted_on`: ids of rows of a validation
table, e.g. `amax.fio.hdd.iops`, or the path of a trace bundle), so a
validation run can tell the rows a value was fitted on from the rows it
predicts (scenarios.validation_roles).  The loader unwraps values for the spec
and keeps a provenance record per field.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

Kind = Literal["datasheet", "measured", "calibrated", "assumed"]
KINDS: tuple[str, ...] = ("datasheet", "measured", "calibrated", "assumed")
# uniform and log-uniform: low and high are the ends; normal and log-normal: low and high are the 5 % and 95 % quantiles
# (log-normal: a fit in log space, calibration.leastsq, whose relative standard error is a log-space one)
Shape = Literal["uniform", "log-uniform", "normal", "log-normal"]
RANGE_KEYS: tuple[str, ...] = ("low", "high", "shape", "range_note", "stderr", "correlation")


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    p: Kind
    src: str = ""
    note: str = ""
    fitted_on: tuple[str, ...] = ()
    # the plausible range of the value (see models.uncertainty): for a number, in the value's own units; for a list or
    # mapping of numbers, factors applied to every number in it
    low: float | None = None
    high: float | None = None
    shape: Shape = "uniform"
    range_note: str = ""
    stderr: float | None = None  # a calibrated value's standard error from its fit, in the value's units
    # a calibrated value's correlation with the other fields its fit fitted (same entry), from the fit's covariance of
    # log values, written {field: rho} and kept as sorted (field, rho) pairs (a record stays hashable); a sampler draws
    # the fields together (correlated normals in log space)
    correlation: tuple[tuple[str, float], ...] = ()

    @field_validator("fitted_on", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("correlation", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        return tuple(sorted(value.items())) if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _explained(self) -> Provenance:
        if self.p in ("measured", "calibrated", "datasheet") and not self.src:
            raise ValueError(f"a {self.p} value must name its source in `src`")
        if self.p == "assumed" and not self.note:
            raise ValueError("an assumed value must give its reasoning in `note`")
        if self.p == "calibrated" and not any(item.strip() for item in self.fitted_on):
            raise ValueError("a calibrated value must name what it was fitted on in `fitted_on` (validation row ids or a trace bundle path)")
        if self.p != "calibrated" and self.fitted_on:
            raise ValueError(f"only a calibrated value has `fitted_on`, found it on a {self.p} value")
        if (self.low is None) != (self.high is None):
            raise ValueError("a range needs both `low` and `high`")
        if self.low is not None and self.high is not None:
            if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
                raise ValueError(f"a range needs finite low <= high, found low {self.low}, high {self.high}")
            if self.shape in ("log-uniform", "log-normal") and self.low <= 0:
                raise ValueError(f"a {self.shape} range needs low > 0, found {self.low}")
            if not self.range_note.strip():
                raise ValueError("a range must give the evidence for its ends in `range_note`")
        if self.stderr is not None and (self.p != "calibrated" or not math.isfinite(self.stderr) or self.stderr < 0):
            raise ValueError("only a calibrated value has `stderr`, a finite number >= 0")
        if self.correlation and (self.p != "calibrated" or any(not -1.0 <= r <= 1.0 for _, r in self.correlation)):
            raise ValueError("only a calibrated value has `correlation`, each a number from -1 to 1")
        return self

    @property
    def has_range(self) -> bool:
        return self.low is not None or self.stderr is not None


def is_wrapped(value: Any) -> bool:
    return isinstance(value, dict) and "v" in value and "p" in value


def numbers_in(value: Any) -> list[float]:
    """Every number in a value: itself, or those inside a list or mapping (a power-state table, a link)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for item in value.values() for n in numbers_in(item)]
    if isinstance(value, list):
        return [n for item in value for n in numbers_in(item)]
    return []


def range_problem(value: Any, prov: Provenance) -> str | None:
    """Why a value's range is unusable, or None: an assumed number must carry one, and a value must lie inside its own
    range (a list's or mapping's range is factors on its numbers, so 1 must lie inside it)."""
    numbers = numbers_in(value)
    if not numbers:
        return None
    if prov.p == "assumed" and not prov.has_range:
        return "an assumed value needs its plausible range (low, high, shape, range_note with the evidence for each end), found none"
    if prov.low is None or prov.high is None:
        return None
    scalar = isinstance(value, int | float) and not isinstance(value, bool)
    inside = float(value) if scalar else 1.0
    if not prov.low <= inside <= prov.high:
        what = f"value {value}" if scalar else "factor 1 (the value as written; low/high of a list or mapping are factors)"
        return f"expected low <= value <= high, found {what} outside its own range [{prov.low:g}, {prov.high:g}]"
    return None


def unwrap(entry: dict[str, Any], prefix: str = "", *, ranged: bool = False) -> tuple[dict[str, Any], dict[str, Provenance]]:
    """Split a catalog entry into plain values and a {dotted field: Provenance} map.  `ranged`: refuse an assumed number
    without a range and a value outside its own range (the device catalog and the profiles loaded like it)."""
    plain: dict[str, Any] = {}
    record: dict[str, Provenance] = {}
    for key, value in entry.items():
        path = f"{prefix}{key}"
        if is_wrapped(value):
            allowed = ("p", "src", "note", "fitted_on", *RANGE_KEYS)
            extra = set(value) - {"v", *allowed}
            if extra:
                raise ValueError(f"{path}: unknown provenance keys {sorted(extra)} (allowed: v, {', '.join(allowed)})")
            try:
                record[path] = Provenance.model_validate({k: value[k] for k in allowed if k in value})
            except ValidationError as error:
                raise ValueError(f"{path}: {error.errors()[0]['msg'].removeprefix('Value error, ')}") from None
            problem = range_problem(value["v"], record[path]) if ranged else None
            if problem:
                raise ValueError(f"{path}: {problem}")
            plain[key] = value["v"]
        elif isinstance(value, dict):
            inner, inner_record = unwrap(value, f"{path}.", ranged=ranged)
            plain[key] = inner
            record.update(inner_record)
        else:
            plain[key] = value
    return plain, record


def unsourced_numbers(entry: Any, prefix: str = "") -> list[str]:
    """Dotted paths of numbers that are not inside a provenance wrapper."""
    found: list[str] = []
    if is_wrapped(entry):
        return found
    if isinstance(entry, dict):
        for key, value in entry.items():
            found += unsourced_numbers(value, f"{prefix}{key}.")
    elif isinstance(entry, list):
        for i, value in enumerate(entry):
            found += unsourced_numbers(value, f"{prefix}[{i}].")
    elif isinstance(entry, int | float) and not isinstance(entry, bool):
        found.append(prefix.rstrip("."))
    return found
