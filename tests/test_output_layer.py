"""Presentation lives in one leaf package, `iowatt.output`; the layers below return data.

Oracle: the import graph itself, read from the source with `ast` (no module is
imported, so an import inside a function counts as much as one at the top).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "iowatt" / "output"
LAYERS = ("models", "simulator", "scenarios", "calibration")
PRESENTATION = ("rich", "matplotlib", "pyarrow")
# scenarios/validation.py still renders its table with rich; it moves to iowatt.output with its own issue (13)
NOT_YET_MOVED = {REPO / "scenarios" / "validation.py"}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def calls_print(path: Path) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print" for n in ast.walk(ast.parse(path.read_text())))


@pytest.mark.parametrize("path", sorted(OUTPUT.glob("*.py")), ids=lambda p: p.name)
def test_output_is_a_leaf(path):
    allowed_third_party = set(PRESENTATION)
    for name in imports(path):
        top = name.split(".")[0]
        if top == "iowatt":
            assert name.startswith("iowatt.output"), f"{path.name} imports {name}: iowatt.output must not import another iowatt layer"
        else:
            assert top in sys.stdlib_module_names or top in allowed_third_party, f"{path.name} imports {name}"


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_below_the_cli_neither_print_nor_draw(layer):
    for path in sorted((REPO / layer).rglob("*.py")):
        if path in NOT_YET_MOVED:
            continue
        names = imports(path)
        upward = sorted(n for n in names if n.startswith(("iowatt.output", "iowatt.cli", "iowatt.commands", "iowatt.errors")))
        drawing = sorted(n for n in names if n.split(".")[0] in PRESENTATION)
        assert not upward, f"{path.relative_to(REPO)} imports {upward} (upward)"
        assert not drawing, f"{path.relative_to(REPO)} imports {drawing}: presentation belongs in iowatt.output"
        assert not calls_print(path), f"{path.relative_to(REPO)} prints: return data and let the command line show it"
