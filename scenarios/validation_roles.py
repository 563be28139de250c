"""What each row of a validation table is: a prediction, a row a value was fitted on, or a restatement.

Roles (docs/validation-format.md):
  fitted     a calibrated value names the row in its `fitted_on`: derived here from the
             provenance records, never written by hand in the table;
  restates   the table declares `restates: ID`: the row's prediction follows from
             another row's (bandwidth = IOPS x block, latency by Little's law);
  predicted  everything else.  Only these rows make the headline score.

The provenance records searched: every catalog entry, the `PROVENANCE` maps of the
model modules (constants of the laws), and the `provenance` sections of the
library's scenario files and of the scenarios the table runs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from iowatt.models.provenance import Provenance
from iowatt.scenarios.loader import LIBRARY_DIR, ScenarioError, read_yaml
from pydantic import ValidationError

ROLES: tuple[str, ...] = ("predicted", "fitted", "restates")


@dataclass(frozen=True)
class CalibratedRecord:
    """One calibrated value wherever it is written, and what it was fitted on; `key` names it (fit_targets' keys)."""

    key: str
    label: str
    provenance: Provenance


def catalog_records() -> list[CalibratedRecord]:
    from iowatt.models import catalog

    return [
        CalibratedRecord(f"catalog:{entry.kind}:{entry.name}:{field}", f"catalog {entry.kind} {entry.name} {field}", prov)
        for entry in catalog.entries()
        for field, prov in entry.provenance.items()
        if prov.p == "calibrated"
    ]


def code_records() -> list[CalibratedRecord]:
    """Constants of the model modules that carry a `PROVENANCE` map (e.g. models.host_io)."""
    import iowatt.models

    records = []
    for info in sorted(pkgutil.iter_modules(iowatt.models.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"iowatt.models.{info.name}")
        provenance = vars(module).get("PROVENANCE")
        if not isinstance(provenance, dict):
            continue
        for name, prov in provenance.items():
            if isinstance(prov, Provenance) and prov.p == "calibrated":
                constant = f"models.{info.name}.{name}"
                records.append(CalibratedRecord(f"constant:{constant}", f"constant {constant}", prov))
    return records


def library_scenarios() -> list[Path]:
    return sorted(LIBRARY_DIR.rglob("*.yaml"))


def _label(path: Path) -> str:
    try:
        return path.resolve().relative_to(LIBRARY_DIR.resolve()).as_posix()
    except ValueError:
        return path.name


def scenario_records(paths: Iterable[Path]) -> list[CalibratedRecord]:
    """Calibrated inputs of scenario files; one record per (field, fitted_on), naming every file that carries it."""
    files: dict[tuple[str, Provenance], list[str]] = {}
    for path in dict.fromkeys(p.resolve() for p in paths):
        try:
            section = read_yaml(path).get("provenance") or {}
        except (ScenarioError, OSError):
            continue  # the run of a broken file reports it
        if not isinstance(section, dict):
            continue
        for field, raw in section.items():
            try:
                prov = Provenance.model_validate(raw)
            except ValidationError:
                continue
            if prov.p == "calibrated":
                files.setdefault((str(field), prov), []).append(_label(path))
    return [CalibratedRecord(f"scenario:{field}:{','.join(sorted(names))}", f"scenario input {field} ({', '.join(names)})", prov)
            for (field, prov), names in files.items()]


def all_records(scenarios: Iterable[Path] = ()) -> list[CalibratedRecord]:
    return catalog_records() + code_records() + scenario_records([*library_scenarios(), *scenarios])


def fitted_links(records: Iterable[CalibratedRecord]) -> dict[str, tuple[str, ...]]:
    """{row id: labels of the values fitted on it}."""
    links: dict[str, list[str]] = {}
    for record in records:
        for row_id in record.provenance.fitted_on:
            links.setdefault(row_id, []).append(record.label)
    return {k: tuple(dict.fromkeys(v)) for k, v in links.items()}


def role_of(row_id: str, restates: str | None, links: dict[str, tuple[str, ...]]) -> str:
    if row_id in links:
        return "fitted"
    if restates:
        return "restates"
    return "predicted"
