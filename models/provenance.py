"""Where each catalog number comes from.

A catalog value is written either plain (names, enums) or wrapped:

    seq_read_MBps: {v: 12000, p: datasheet, src: "StorageReview S08"}

`p` is one of datasheet, measured, calibrated, assumed.  measured and
calibrated values must name their source (`src`: a publication or a trace
bundle); assumed values must give the reasoning (`note`).  A calibrated value
also names what it was fitted on (`fitted_on`: ids of rows of a validation
table, e.g. `amax.fio.hdd.iops`, or the path of a trace bundle), so a
validation run can tell the rows a value was fitted on from the rows it
predicts (scenarios.validation_roles).  The loader unwraps values for the spec
and keeps a provenance record per field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

Kind = Literal["datasheet", "measured", "calibrated", "assumed"]
KINDS: tuple[str, ...] = ("datasheet", "measured", "calibrated", "assumed")


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    p: Kind
    src: str = ""
    note: str = ""
    fitted_on: tuple[str, ...] = ()

    @field_validator("fitted_on", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

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
        return self


def is_wrapped(value: Any) -> bool:
    return isinstance(value, dict) and "v" in value and "p" in value


def unwrap(entry: dict[str, Any], prefix: str = "") -> tuple[dict[str, Any], dict[str, Provenance]]:
    """Split a catalog entry into plain values and a {dotted field: Provenance} map."""
    plain: dict[str, Any] = {}
    record: dict[str, Provenance] = {}
    for key, value in entry.items():
        path = f"{prefix}{key}"
        if is_wrapped(value):
            extra = set(value) - {"v", "p", "src", "note", "fitted_on"}
            if extra:
                raise ValueError(f"{path}: unknown provenance keys {sorted(extra)} (allowed: v, p, src, note, fitted_on)")
            try:
                record[path] = Provenance.model_validate({k: value[k] for k in ("p", "src", "note", "fitted_on") if k in value})
            except ValidationError as error:
                raise ValueError(f"{path}: {error.errors()[0]['msg'].removeprefix('Value error, ')}") from None
            plain[key] = value["v"]
        elif isinstance(value, dict):
            inner, inner_record = unwrap(value, f"{path}.")
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
