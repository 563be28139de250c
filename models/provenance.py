"""Where each catalog number comes from.

A catalog value is written either plain (names, enums) or wrapped:

    seq_read_MBps: {v: 12000, p: datasheet, src: "StorageReview S08"}

`p` is one of datasheet, measured, calibrated, assumed.  measured and
calibrated values must name their source (`src`: a publication or a trace
bundle); assumed values must give the reasoning (`note`).  The loader unwraps
values for the spec and keeps a provenance record per field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

Kind = Literal["datasheet", "measured", "calibrated", "assumed"]
KINDS: tuple[str, ...] = ("datasheet", "measured", "calibrated", "assumed")


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    p: Kind
    src: str = ""
    note: str = ""

    @model_validator(mode="after")
    def _explained(self) -> Provenance:
        if self.p in ("measured", "calibrated", "datasheet") and not self.src:
            raise ValueError(f"a {self.p} value must name its source in `src`")
        if self.p == "assumed" and not self.note:
            raise ValueError("an assumed value must give its reasoning in `note`")
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
            extra = set(value) - {"v", "p", "src", "note"}
            if extra:
                raise ValueError(f"{path}: unknown provenance keys {sorted(extra)} (allowed: v, p, src, note)")
            record[path] = Provenance(p=value["p"], src=str(value.get("src", "")), note=str(value.get("note", "")))
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
