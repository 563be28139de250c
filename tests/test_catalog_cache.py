"""The pickled catalog (models/catalog/pickled.py): the same entries as the YAML, re-read when a source changes.

Oracle: the catalog read from its YAML files in this process (models.catalog._read), the source of truth the cache
only stands in for; equality of the entries (names, kinds, specs, provenance, aliases) is the contract.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.models.catalog import pickled as cache


def _files() -> list[Path]:
    return sorted(catalog.CATALOG_DIR.glob("*.yaml"))


def test_a_cached_catalog_has_the_entries_the_yaml_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    calls: list[int] = []

    def build() -> tuple[dict[str, catalog.CatalogEntry], dict[str, str]]:
        calls.append(1)
        return catalog._read(_files())

    first = cache.cached(_files(), build)
    second = cache.cached(_files(), build)  # from the pickle
    assert calls == [1]
    assert second == first == catalog._read(_files())
    assert len(list(tmp_path.glob("catalog-*.pickle"))) == 1


def test_a_changed_source_misses_the_key_and_the_oldest_copies_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    source = tmp_path / "extra.yaml"
    source.write_text("kind: gpu\nentries: {}\n")
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    assert cache.cached([source], build) == 1
    assert cache.cached([source], build) == 1
    source.write_text("kind: gpu\nentries: {}\n# edited\n")
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    assert cache.cached([source], build) == 2
    assert len(list((tmp_path / "cache").glob("catalog-*.pickle"))) == 2
    for _ in range(cache.KEEP + 2):  # older copies beyond KEEP go
        os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
        cache.cached([source], build)
    assert len(list((tmp_path / "cache").glob("catalog-*.pickle"))) == cache.KEEP


def test_an_empty_cache_setting_turns_it_off_and_an_unwritable_folder_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "")
    assert cache.cache_dir() is None
    assert cache.cached([], lambda: 7) == 7
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocked / "below"))
    assert cache.cached([], lambda: 8) == 8  # cannot write: the value, no error


def test_a_truncated_cache_file_is_read_from_the_yaml_again(tmp_path: Path) -> None:
    """Two processes: the first writes the cache; the file is truncated; the second must still run correctly."""
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path)}
    probe = "from iowatt.models import catalog; print(len(catalog.entries()))"
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    for path in tmp_path.glob("catalog-*.pickle"):
        path.write_bytes(path.read_bytes()[:100])
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert first == second == f"{len(catalog.entries())}\n"
