"""The catalog's bibliography: what each source key in a `src` (S08, G07, W02, ...) refers to.

The data is models/catalog/sources.yml; `iowatt catalog show` prints the
sources a device cites, and docs/sources.md is written from the same data
(`iowatt catalog sources -o docs/sources.md`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from iowatt.models import strict_yaml

SOURCES_FILE = Path(__file__).parent / "sources.yml"
KEY = re.compile(r"\b[SGHCLW][0-9]{2}\b")  # S: SSDs, G: GPUs, H: HDDs, C: CPUs/servers, L: links, W: power states and fill
SECTIONS = {"S": "SSDs", "G": "GPUs", "H": "HDDs", "C": "CPUs and servers", "L": "Links", "W": "Power states, fill and steady state"}


@dataclass(frozen=True)
class Source:
    key: str
    grade: str  # P primary, R review or measurement, S secondary
    title: str
    publisher: str
    date: str
    location: str

    def cite(self) -> str:
        return f"{self.key}: {self.publisher}, \"{self.title}\" ({self.date}); {self.location} [grade {self.grade}]"


def _read(section: str) -> dict[str, Source]:
    raw = strict_yaml.load(SOURCES_FILE.read_text())
    entries = raw.get(section) if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        raise ValueError(f"{SOURCES_FILE.name}: expected a mapping `{section}`")
    return {str(key): Source(str(key), **{k: str(v) for k, v in fields.items()}) for key, fields in entries.items()}


@cache
def sources() -> dict[str, Source]:
    """Every catalog source key, in file order."""
    return _read("sources")


@cache
def studies() -> dict[str, Source]:
    """The published studies iowatt reproduces, by study id."""
    return _read("studies")


def cited(text: str) -> list[str]:
    """The source keys a `src` or `note` text cites, in order of first mention."""
    return list(dict.fromkeys(KEY.findall(text)))
