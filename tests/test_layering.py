"""The layers import one way: iowatt (CLI) -> scenarios / calibration -> simulator -> models.

Read from the source with `ast` (every import, also those inside functions), so a lazy
import cannot hide an upward dependency.  Oracle: the layering rule of docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# folder in the repository -> its import name once installed
LAYERS = {"models": "iowatt.models", "simulator": "iowatt.simulator", "scenarios": "iowatt.scenarios",
          "calibration": "iowatt.calibration", "iowatt": "iowatt"}
CLI_MODULES = ("iowatt.cli", "iowatt.commands", "iowatt.output", "iowatt.errors")
# what each layer must not import (prefixes of module names)
FORBIDDEN = {
    "iowatt.models": ("simpy", "iowatt.simulator", "iowatt.scenarios", "iowatt.calibration", *CLI_MODULES),
    "iowatt.simulator": ("iowatt.scenarios", "iowatt.calibration", *CLI_MODULES),
    "iowatt.scenarios": CLI_MODULES,
    "iowatt.calibration": ("iowatt.scenarios", *CLI_MODULES),
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, name in LAYERS.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            module = ".".join((name, *parts))
            if name == "iowatt" and len(parts) >= 1 and f"iowatt.{parts[0]}" in LAYERS.values():
                continue
            found[module] = path
    return found


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:
            continue  # `if TYPE_CHECKING:` blocks are not imports at run time
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            out.add(target)
            out |= {f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES}
    return out


def _layer(module: str) -> str | None:
    for name in FORBIDDEN:
        if module == name or module.startswith(name + "."):
            return name
    return None


def test_every_layer_is_found():
    assert {_layer(m) for m in MODULES} >= set(FORBIDDEN)
    assert "iowatt.simulator.storage.contract" in MODULES and "iowatt.cli" in MODULES


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m)))
def test_no_upward_import(module: str):
    bad = sorted(i for i in _imports(module) if any(i == f or i.startswith(f + ".") for f in FORBIDDEN[_layer(module)]))
    assert not bad, f"{MODULES[module].relative_to(REPO)} imports {bad} (layers: iowatt -> scenarios/calibration -> simulator -> models)"


def test_no_import_cycles():
    """Module-level imports among the project's modules form no cycle (Tarjan-free DFS with colours)."""
    graph = {m: {i for i in _imports(m, top_level_only=True) if i in MODULES and i != m} for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            # importing a package's submodule runs the package first: that is not a cycle by itself
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


ENGINE_LAYERS = ("iowatt.simulator.maxmin", "iowatt.simulator.flow_network", "iowatt.simulator.flow_classes", "iowatt.simulator.flows")


def test_the_engine_modules_import_downwards_only():
    """The engine's modules, lowest first: the solver, the network state, the classes, the engine (issue 33).
    Every import counts, lazy ones and `if TYPE_CHECKING:` blocks included, so none imports a module above it."""
    for rank, module in enumerate(ENGINE_LAYERS):
        above = set(ENGINE_LAYERS[rank + 1:])
        bad = sorted(i for i in _imports(module) if i in above)
        assert not bad, f"{MODULES[module].relative_to(REPO)} imports {bad}, above it in {ENGINE_LAYERS}"
