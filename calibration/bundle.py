"""Trace bundles: a directory with manifest.json, raw tool outputs untouched, and parsed CSV tables.

Layout::

    BUNDLE/
      manifest.json          versioned, pydantic schema (this module)
      inventory.json         the machine and the target device
      raw/                   fio JSON+ outputs and bw/lat logs, DLIO files, as written by the tools
      power/                 power samples per run (CSV), one column per source
      tables/                parsed tables (CSV): runs.csv (one row per run), jobs.csv (one row per job)

Every file is listed in the manifest with its sha256; `load` checks them all,
so a truncated, foreign or corrupt bundle is refused with one message.
"""

from __future__ import annotations

import csv
import hashlib
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = "iowatt-trace-bundle"
VERSION = 1


class BundleError(ValueError):
    """A bundle that cannot be used; the message says why."""


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    bytes: int = Field(ge=0)


class RunEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repeat: int = Field(ge=0)
    files: list[str] = Field(default_factory=list, description="paths (relative to the bundle) of this run's files")


class JobEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    params: dict[str, Any]
    runs: list[RunEntry] = Field(default_factory=list)


class PowerSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    available: bool
    detail: str = ""


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["iowatt-trace-bundle"]
    version: Literal[1]
    id: str
    kind: Literal["fio", "dlio"]
    created: str
    tools: dict[str, str]
    plan: str = ""
    repeat: int = Field(default=1, ge=1)
    target: dict[str, Any] = Field(default_factory=dict)
    power_sources: dict[str, PowerSource] = Field(default_factory=dict)
    jobs: list[JobEntry] = Field(default_factory=list)
    files: list[FileEntry] = Field(default_factory=list)


def new_manifest(kind: Literal["fio", "dlio"], tools: dict[str, str], **fields: Any) -> Manifest:
    """A manifest for a bundle being written now: format, version, a fresh id and the creation time filled in."""
    return Manifest(format=FORMAT, version=VERSION, id=new_id(), kind=kind, created=now_iso(), tools=tools, **fields)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """A table of the bundle: a header of every key of every row (in order of first appearance), then one line per row."""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n", restval="")
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def finalize(root: Path, manifest: Manifest) -> Manifest:
    """List every file under root (except the manifest) with its checksum, then write manifest.json."""
    files = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "manifest.json"):
        files.append(FileEntry(path=path.relative_to(root).as_posix(), sha256=sha256_file(path), bytes=path.stat().st_size))
    manifest = manifest.model_copy(update={"files": files})
    (root / "manifest.json").write_text(json.dumps(manifest.model_dump(mode="json"), indent=2) + "\n")
    return manifest


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


def load(root: Path | str, verify: bool = True) -> Manifest:
    """Read and check a bundle; raise BundleError with one clear message when it cannot be used."""
    root = Path(root)
    if not root.exists():
        raise BundleError(f"bundle {root}: no such directory")
    if not root.is_dir():
        raise BundleError(f"bundle {root}: expected a directory written by `iowatt collect`, found a file")
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        raise BundleError(f"bundle {root}: manifest.json is missing (truncated bundle, or not an iowatt trace bundle)")
    try:
        raw = json.loads(manifest_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BundleError(f"bundle {root}: manifest.json is not valid JSON ({error})") from None
    if not isinstance(raw, dict):
        raise BundleError(f"bundle {root}: manifest.json must hold a JSON object")
    if raw.get("format") != FORMAT:
        raise BundleError(f"bundle {root}: expected format {FORMAT!r}, found {raw.get('format')!r} (foreign bundle)")
    if raw.get("version") != VERSION:
        raise BundleError(f"bundle {root}: expected format version {VERSION}, found {raw.get('version')!r}; this build reads version {VERSION} only")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as error:
        raise BundleError(f"bundle {root}: manifest.json is malformed: {_first_error(error)}") from None
    if verify:
        for entry in manifest.files:
            path = root / entry.path
            if not path.resolve().is_relative_to(root.resolve()):
                raise BundleError(f"bundle {root}: manifest lists {entry.path!r}, outside the bundle")
            if not path.is_file():
                raise BundleError(f"bundle {root}: {entry.path} is listed in the manifest but missing (truncated bundle)")
            if path.stat().st_size != entry.bytes or sha256_file(path) != entry.sha256:
                raise BundleError(f"bundle {root}: {entry.path} does not match its sha256 in the manifest (corrupt or edited)")
    return manifest


def read_json(root: Path, relative: str) -> Any:
    """Read a JSON file of the bundle, tolerating the text some tools print before the document."""
    text = (root / relative).read_text(errors="replace")
    start = text.find("{")
    if start < 0:
        raise BundleError(f"bundle {root}: {relative} holds no JSON document")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as error:
        raise BundleError(f"bundle {root}: {relative} is not valid JSON ({error})") from None
