"""The device catalog: YAML files beside this module, one per device family.

Each file holds `kind` (ssd, gpu, cpu, ...) and `entries: {name: fields}`.
Fields are written plain or wrapped with their provenance (see
models.provenance).  Names are lower-case with dashes; `aliases` lists other
names that resolve to the same entry.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from iowatt.models import strict_yaml
from iowatt.models.catalog.defaults import defaults_for
from iowatt.models.compute import CPUSpec, GPUSpec
from iowatt.models.hdd import HDDSpec
from iowatt.models.host_interface import HbaSpec
from iowatt.models.provenance import KINDS, Provenance, unwrap
from iowatt.models.ssd import SSDSpec
from pydantic import BaseModel, ValidationError

CATALOG_DIR = Path(__file__).parent

# The device-family registry: a storage-device family is its catalog kind (the `kind:` of its YAML file here) and its
# spec class, listed in the order a drive name is looked up; its runtime, both faces, is the module
# simulator/storage/<kind>.py (its FAMILY, found by simulator.storage.families).  A new family is that module, one
# line here, its catalog file and its test.
DRIVE_FAMILIES: dict[str, type[BaseModel]] = {
    "ssd": SSDSpec,  # NVMe SSDs (models.ssd): flash units, NVMe power states, a full-duplex PCIe link
    "sata_ssd": SSDSpec,  # SATA SSDs: the same flash laws behind a half-duplex SATA link, no NVMe power states
    "hdd": HDDSpec,  # hard disks (models.hdd): one actuator, seek and rotation
}
SPEC_TYPES: dict[str, type[BaseModel]] = {**DRIVE_FAMILIES, "gpu": GPUSpec, "cpu": CPUSpec, "hba": HbaSpec}


class CatalogError(LookupError):
    """A name the catalog does not know, or a catalog file that is malformed."""


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    kind: str
    spec: BaseModel
    provenance: dict[str, Provenance]
    aliases: tuple[str, ...]
    source_file: str

    def provenance_counts(self) -> dict[str, int]:
        counts = Counter(p.p for p in self.provenance.values())
        return {k: counts.get(k, 0) for k in KINDS}


def _parse_file(path: Path) -> list[CatalogEntry]:
    try:
        raw = strict_yaml.load(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise CatalogError(f"{path.name}: cannot read the catalog file ({error.__class__.__name__})") from None
    if not isinstance(raw, dict) or "kind" not in raw or not isinstance(raw.get("entries"), dict):
        raise CatalogError(f"{path.name}: expected a mapping with `kind` and `entries` (a mapping of name: fields)")
    kind = raw["kind"]
    spec_type = SPEC_TYPES.get(kind)
    if spec_type is None:
        raise CatalogError(f"{path.name}: unknown kind {kind!r} (known: {', '.join(sorted(SPEC_TYPES))})")
    entries = []
    for name, fields in raw["entries"].items():
        if not isinstance(fields, dict):
            raise CatalogError(f"{path.name}: entry {name!r}: expected a mapping of fields, found {type(fields).__name__}")
        fields = dict(fields)
        aliases = tuple(fields.pop("aliases", ()) or ())
        try:
            plain, record = unwrap(fields, ranged=True)
            spec = spec_type.model_validate({"name": name, **plain})
            # a default value carries its own provenance: the spec class's, recorded under its first kind
            # (a SATA SSD's defaults are the SSD spec's)
            owner = next(k for k, t in SPEC_TYPES.items() if t is spec_type)
            record = {**defaults_for(owner, set(plain)), **record}
        except (ValidationError, ValueError) as error:
            raise CatalogError(f"{path.name}: entry {name!r} is invalid: {error}") from None
        entries.append(CatalogEntry(name, kind, spec, record, aliases, path.name))
    return entries


@cache
def _load() -> tuple[dict[str, CatalogEntry], dict[str, str]]:
    from iowatt.models.catalog.pickled import cached

    files = sorted(CATALOG_DIR.glob("*.yaml"))
    return cached(files, lambda: _read(files))


def _read(files: list[Path]) -> tuple[dict[str, CatalogEntry], dict[str, str]]:
    entries: dict[str, CatalogEntry] = {}
    names: dict[str, str] = {}
    for path in files:
        for entry in _parse_file(path):
            key = f"{entry.kind}:{entry.name}"
            if key in entries:
                raise CatalogError(f"{path.name}: {entry.kind} {entry.name!r} is defined twice")
            entries[key] = entry
            for alias in (entry.name, *entry.aliases):
                names.setdefault(f"{entry.kind}:{alias}", key)
    return entries, names


def entries(kind: str | None = None) -> list[CatalogEntry]:
    all_entries = _load()[0].values()
    return [e for e in all_entries if kind is None or e.kind == kind]


PROFILE_PREFIX = "profile:"
USER_CATALOG_ENV = "IOWATT_CATALOG_DIR"


def load_file(kind: str, path: Path) -> CatalogEntry:
    """One entry of `kind` from a file in catalog format: a profile written by `iowatt calibrate`."""
    where = f"{PROFILE_PREFIX}{path}"
    if not path.is_file():
        raise CatalogError(f"{where}: expected a profile YAML file (from `iowatt calibrate`), found no such file")
    try:
        found = [e for e in _parse_file(path) if e.kind == kind]
    except yaml.YAMLError as error:
        raise CatalogError(f"{where}: {strict_yaml.describe(error)}") from None
    except CatalogError as error:
        raise CatalogError(f"{where}: {error}") from None
    if len(found) != 1:
        raise CatalogError(f"{where}: expected exactly one {kind} entry, found {len(found)}")
    return found[0]


def _user_entries(kind: str, name: str) -> CatalogEntry | None:
    """Entries in the user's catalog folder ($IOWATT_CATALOG_DIR/*.yaml), e.g. installed profiles."""
    folder = os.environ.get(USER_CATALOG_ENV)
    if not folder:
        return None
    if not Path(folder).expanduser().is_dir():
        raise CatalogError(f"{USER_CATALOG_ENV}={folder}: expected a folder of catalog YAML files, found no such folder")
    for path in sorted(Path(folder).expanduser().glob("*.yaml")):
        try:
            parsed = _parse_file(path)
        except CatalogError as error:
            raise CatalogError(f"{USER_CATALOG_ENV}={folder}: {error}") from None
        except yaml.YAMLError as error:
            raise CatalogError(f"{USER_CATALOG_ENV}={folder}: {path.name}: {strict_yaml.describe(error)}") from None
        for entry in parsed:
            if entry.kind == kind and name.lower() in (entry.name.lower(), *(a.lower() for a in entry.aliases)):
                return entry
    return None


def lookup(kind: str, name: str) -> CatalogEntry:
    if name.startswith(PROFILE_PREFIX):
        return load_file(kind, Path(name[len(PROFILE_PREFIX):]).expanduser())
    table, names = _load()
    key = names.get(f"{kind}:{name.lower()}")
    if key is None:
        user = _user_entries(kind, name)
        if user is not None:
            return user
        known = sorted(e.name for e in table.values() if e.kind == kind)
        close = [k for k in known if name.lower().split("-")[0] in k][:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else f" (known: {', '.join(known)})"
        raise CatalogError(f"expected a {kind} name from the catalog{hint}, found {name!r}")
    return table[key]


def find(name: str) -> CatalogEntry:
    """Look a name up in every family (for `iowatt catalog show`); `profile:PATH` reads a calibrated profile."""
    if name.startswith(PROFILE_PREFIX):
        return load_file("ssd", Path(name.removeprefix(PROFILE_PREFIX)).expanduser())
    _, names = _load()
    for key, target in names.items():
        if key.split(":", 1)[1] == name.lower():
            return _load()[0][target]
    raise CatalogError(f"no catalog entry named {name!r}; `iowatt catalog list` shows them all")


def spec_from(kind: str, value: Any) -> BaseModel:
    """Resolve a catalog name, an inline spec, or {base: NAME, field: override...}."""
    spec_type = SPEC_TYPES[kind]
    if isinstance(value, str):
        return lookup(kind, value).spec
    if isinstance(value, dict):
        if "base" in value:
            if not isinstance(value["base"], str):
                raise ValueError(f"base: expected a {kind} catalog name, found {value['base']!r}")
            base = lookup(kind, value["base"]).spec.model_dump()
            overrides = {k: v for k, v in value.items() if k != "base"}
            return spec_type.model_validate({**base, **overrides})
        return spec_type.model_validate({"name": "inline", **value} if "name" not in value else value)
    if isinstance(value, spec_type):
        return value
    raise ValueError(f"expected a catalog name or a mapping of {kind} fields, found {type(value).__name__}")



def drive_family(value: Any) -> tuple[str, BaseModel]:
    """The one lookup of a storage device: (its family's kind, its spec), the families tried in DRIVE_FAMILIES' order
    (a name, an inline spec, or {base: NAME, ...}).  Nothing found: the first family's error, which names its kind."""
    first: CatalogError | ValueError | None = None
    for kind in DRIVE_FAMILIES:
        try:
            return kind, spec_from(kind, value)
        except (CatalogError, ValueError) as error:
            first = first or error
    assert first is not None
    raise first


def drive_spec(value: Any) -> SSDSpec | HDDSpec:
    """The spec of a storage device (drive_family without the kind)."""
    return drive_family(value)[1]  # type: ignore[return-value]


def gpu_spec(name: str) -> GPUSpec:
    """A GPU of the catalog as its spec class (the catalog holds it as one; validation passes the instance through)."""
    return GPUSpec.model_validate(lookup("gpu", name).spec)
