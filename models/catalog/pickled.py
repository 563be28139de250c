"""A pickled copy of the validated catalog, so a command does not parse and validate every YAML file at start-up.

Parsing the catalog's YAML (pure-Python loader, line numbers kept for error messages) and validating every entry
costs about 0.05 s of CPU per process, a tenth of `iowatt run`'s whole start-up (issue 33).  The copy is keyed by
what could change the result: each catalog file's and each models/ source file's name, modification time and size,
and the Python and pydantic versions; any change misses the key and the catalog is read from YAML again.

Where: $IOWATT_CACHE_DIR, else $XDG_CACHE_HOME/iowatt, else ~/.cache/iowatt.  IOWATT_CACHE_DIR set to an empty
string turns the cache off.  A cache that cannot be read or written is ignored (the YAML is the source of truth);
writes go to a temporary file renamed into place, so concurrent processes (test workers) never read half a file.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

CACHE_ENV = "IOWATT_CACHE_DIR"
MODELS_DIR = Path(__file__).resolve().parent.parent
# copies kept: a few checkouts or installs used side by side each keep theirs (a setting; any value >= 1 is correct)
KEEP = 8

T = TypeVar("T")


def cache_dir() -> Path | None:
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return Path(chosen).expanduser() if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iowatt"


def _fingerprint(catalog_files: list[Path]) -> str:
    import pydantic

    parts = [sys.version, pydantic.VERSION]
    for path in [*catalog_files, *sorted(MODELS_DIR.rglob("*.py"))]:
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{path}:{stat.st_mtime_ns}:{stat.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _prune(folder: Path, kept: Path) -> None:
    """Keep the KEEP newest copies: one per checkout or installed copy in use (their paths are in the key), while
    copies for sources as they were before an edit are never read again."""
    copies = sorted(folder.glob("catalog-*.pickle"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in copies[KEEP:]:
        if old != kept:
            old.unlink(missing_ok=True)


def cached(catalog_files: list[Path], build: Callable[[], T]) -> T:
    """`build()`, or its pickled result from an earlier process with the same fingerprint."""
    folder = cache_dir()
    if folder is None:
        return build()
    path = folder / f"catalog-{_fingerprint(catalog_files)}.pickle"
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)  # the user's own cache, written below
    except Exception:  # absent, stale format, truncated: read the YAML instead
        pass
    value = build()
    temporary: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=".catalog-", delete=False) as handle:
            temporary = handle.name
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        temporary = None
        _prune(folder, path)
    except (OSError, pickle.PicklingError):
        pass  # a read-only home: every process reads the YAML, as before
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
    return value
