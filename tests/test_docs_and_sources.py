"""Documentation lives in the repository, and every catalog source key has a bibliography entry (issue 18 item 11).

Oracles: the files themselves; every `src`/`note` of every catalog entry,
read through the catalog loader; the link targets, looked up on disk.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.models.catalog.bibliography import KEY, cited, sources, studies
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.commands.catalog import sources_markdown

REPO = Path(__file__).resolve().parent.parent
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
IN_REPO_DATA = [REPO / "scenarios" / "validation" / "published.yaml", *sorted((REPO / "scenarios" / "studies").glob("*.yaml")),
                *sorted((REPO / "models" / "catalog").glob("*.y*ml"))]
OUTSIDE = re.compile(r"\.\./shared|shared/reference|\bDESIGN\.md|\bMISSION\.md|devices_sources|published_results|\bissues? \d+\b")
# written by the lead with issue 12 (docs/architecture.md); remove from here once it is merged
DATE = re.compile(r"n\.d\.|\d{4}(-\d{2}(-\d{2})?)?")


def test_every_source_key_the_catalog_cites_is_in_the_bibliography():
    known = sources()
    cited_keys = set()
    for entry in catalog.entries():
        for field, prov in entry.provenance.items():
            for key in cited(f"{prov.src} {prov.note}"):
                cited_keys.add(key)
                assert key in known, f"{entry.name}.{field} cites {key}, which models/catalog/sources.yml does not list"
    for path in (REPO / "models" / "catalog").glob("*.yaml"):
        missing = set(KEY.findall(path.read_text())) - set(known)
        assert not missing, f"{path.name} cites {sorted(missing)}"
    assert len(cited_keys) >= 40


@pytest.mark.parametrize("entry", [*sources().values(), *studies().values()], ids=lambda s: s.key)
def test_every_bibliography_entry_has_title_publisher_date_and_location(entry):
    assert entry.title and entry.publisher and entry.location, entry
    assert DATE.fullmatch(entry.date), entry.date
    assert entry.grade in ("P", "R", "S"), entry.grade


def test_docs_sources_md_is_written_from_the_bibliography():
    """docs/sources.md is `iowatt catalog sources -o docs/sources.md`; regenerate it after editing sources.yml."""
    assert (REPO / "docs" / "sources.md").read_text() == sources_markdown()
    for key in sources():
        assert f"| {key} |" in sources_markdown()


def test_catalog_show_prints_the_full_sources():
    """Before: `src: S08` and nothing to look it up in."""
    runner = CliRunner()
    text = runner.invoke(app, ["catalog", "show", "micron-6550-ion", "-f", "table"], terminal_width=200).stdout
    assert "StorageReview" in text and "https://www.storagereview.com/review/the-micron-6550-ion-ssd" in text.replace("\n", "")
    document = json.loads(runner.invoke(app, ["catalog", "show", "micron-6550-ion", "-f", "json"]).stdout)
    assert document["sources"]["S08"]["publisher"] == "StorageReview" and document["sources"]["S08"]["location"].startswith("https://")
    assert set(document["sources"]) >= {"S08", "S10"}


@pytest.mark.parametrize("path", USER_DOCS + IN_REPO_DATA, ids=lambda p: str(p.relative_to(REPO)))
def test_user_docs_cite_nothing_outside_the_repository(path):
    """Before: the README sent readers to ../shared/DESIGN.md; docs cited shared/reference files and issue numbers."""
    found = [m.group(0) for m in OUTSIDE.finditer(path.read_text())]
    assert not found, found


def _targets(text: str) -> list[str]:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    named = re.findall(r"`((?:docs|models|simulator|scenarios|calibration|iowatt|tests|benchmarks)/[\w./-]+\.(?:md|py|yaml|yml))`", text)
    return [t for t in links + named if not t.startswith(("http://", "https://", "mailto:"))]


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_the_docs_point_at_exists(path):
    for target in _targets(path.read_text()):
        resolved = (path.parent / target) if not target.startswith(tuple(p + "/" for p in ("docs", "models", "simulator", "scenarios",
                                                                                           "calibration", "iowatt", "tests", "benchmarks"))) else REPO / target
        assert resolved.exists(), f"{path.name} points at {target}, which does not exist"
