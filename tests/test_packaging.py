"""The distribution lists every package of the repository's layers (pyproject's explicit `packages`), so the
wheel carries every module the checkout imports (tools/wheelcheck.sh installs and runs it; `make wheelcheck`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_in_the_distribution():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: REPO / path for name, path in config["package-dir"].items()}
    found = set()
    for name, root in folders.items():
        for init in root.rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            if any(other != name and other.startswith(name + ".") and init.is_relative_to(folders[other]) for other in folders):
                continue  # the subpackage maps to its own folder
            found.add(".".join((name, *parts)))
    assert sorted(found - set(config["packages"])) == []
