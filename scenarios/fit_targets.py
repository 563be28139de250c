"""Where a calibrated value lives, and how a validation run puts another value in its place.

Three places hold calibrated values: a field of a catalog device
(models/catalog/*.yaml), an input written in scenario files (with a
`provenance` section beside it), and a model constant that is the default of a
workload field (models/host_io.py).  Each target reads the value's provenance
and recorded value, and turns a trial value into the `--set` assignments that
apply it to a scenario that uses it (the loader's override mechanism).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iowatt.models.provenance import Provenance
from iowatt.scenarios.loader import LIBRARY_DIR, read_yaml


def _mapping(node: object, key: str) -> dict[str, object]:
    child = node.get(key) if isinstance(node, dict) else None
    return child if isinstance(child, dict) else {}


def _number(value: float, integer: bool) -> str:
    return str(round(value)) if integer else repr(float(value))


@dataclass(frozen=True)
class CatalogField:
    """A field of one storage device of the catalog: applied to every scenario whose drives are that device."""

    kind: str
    device: str
    field: str
    integer: bool = False

    @property
    def label(self) -> str:
        return f"catalog {self.kind} {self.device} {self.field}"

    @property
    def key(self) -> str:
        return f"catalog:{self.kind}:{self.device}:{self.field}"

    def provenance(self) -> Provenance:
        from iowatt.models import catalog

        return catalog.lookup(self.kind, self.device).provenance[self.field]

    def recorded(self) -> float:
        from iowatt.models import catalog

        value = catalog.lookup(self.kind, self.device).spec.model_dump()[self.field]
        return float(value)

    def assignments(self, path: Path | None, raw: dict[str, object], value: float) -> list[str]:
        from iowatt.models import catalog

        device = _mapping(_mapping(raw, "system"), "storage").get("device")
        if isinstance(device, dict):
            if self.field in device:
                return []  # the scenario sets the field itself
            device = device.get("base")
        if not isinstance(device, str):
            return []
        try:
            if catalog.lookup(self.kind, device).name != self.device:
                return []
        except (catalog.CatalogError, ValueError):
            return []
        return [f"storage.device.{self.field}={_number(value, self.integer)}"]


@dataclass(frozen=True)
class ScenarioField:
    """An input written in library scenario files (`files`, relative to scenarios/library), one value for all of them."""

    path: str
    files: tuple[str, ...]
    integer: bool = False

    @property
    def label(self) -> str:
        return f"scenario input {self.path} ({', '.join(self.files)})"

    @property
    def key(self) -> str:
        return f"scenario:{self.path}:{','.join(sorted(self.files))}"

    def _raw(self, name: str) -> dict[str, object]:
        return read_yaml(LIBRARY_DIR / name)

    def provenances(self) -> list[Provenance]:
        return [Provenance.model_validate(_mapping(self._raw(name), "provenance")[self.path]) for name in self.files]

    def provenance(self) -> Provenance:
        return self.provenances()[0]

    def recorded_values(self) -> list[float]:
        values = []
        for name in self.files:
            node: object = self._raw(name)
            for part in self.path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if not isinstance(node, int | float) or isinstance(node, bool):
                raise ValueError(f"{name}: {self.path} is not a number in the file, found {node!r}")
            values.append(float(node))
        return values

    def recorded(self) -> float:
        return self.recorded_values()[0]

    def assignments(self, path: Path | None, raw: dict[str, object], value: float) -> list[str]:
        if path is None or path.resolve() not in {(LIBRARY_DIR / name).resolve() for name in self.files}:
            return []
        return [f"{self.path}={_number(value, self.integer)}"]


@dataclass(frozen=True)
class WorkloadDefault:
    """A model constant that is the default of a workload field: applied where a scenario of that kind leaves it unset."""

    constant: str
    value: float
    record: Provenance
    workload_kind: str
    field: str

    @property
    def label(self) -> str:
        return f"constant {self.constant} (default of {self.workload_kind} workload.{self.field})"

    @property
    def key(self) -> str:
        return f"constant:{self.constant}"

    def provenance(self) -> Provenance:
        return self.record

    def recorded(self) -> float:
        return self.value

    def assignments(self, path: Path | None, raw: dict[str, object], value: float) -> list[str]:
        workload = _mapping(raw, "workload")
        if workload.get("kind") != self.workload_kind or self.field in workload:
            return []
        return [f"workload.{self.field}={_number(value, False)}"]


Target = CatalogField | ScenarioField | WorkloadDefault
