"""The layers import one way: benchmarks -> iowatt (CLI) -> scenarios / calibration -> simulator -> models.

Read from the source with `ast` (every import, also those inside functions), so a lazy
import cannot hide an upward dependency or a cycle.  Oracle: the layering rule of docs/architecture.md.
`benchmarks/` runs as scripts that import each other by bare name (`from checks import check`); they are
read as `benchmarks.<name>`, may import every layer, and no layer may import them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# folder in the repository -> its import name once installed
LAYERS = {"models": "iowatt.models", "simulator": "iowatt.simulator", "scenarios": "iowatt.scenarios",
          "calibration": "iowatt.calibration", "iowatt": "iowatt", "benchmarks": "benchmarks"}
CLI_MODULES = ("iowatt.cli", "iowatt.commands", "iowatt.output", "iowatt.errors")
# what each layer must not import (prefixes of module names)
FORBIDDEN = {
    "iowatt.models": ("simpy", "iowatt.simulator", "iowatt.scenarios", "iowatt.calibration", *CLI_MODULES, "benchmarks"),
    "iowatt.simulator": ("iowatt.scenarios", "iowatt.calibration", *CLI_MODULES, "benchmarks"),
    "iowatt.scenarios": (*CLI_MODULES, "benchmarks"),
    "iowatt.calibration": ("iowatt.scenarios", *CLI_MODULES, "benchmarks"),
    "iowatt.cli": ("benchmarks",),
    "iowatt.commands": ("benchmarks",),
    "iowatt.output": ("benchmarks",),
    "iowatt.errors": ("benchmarks",),
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


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (imports for annotations only, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def _bare(module: str, name: str) -> str:
    """A benchmarks script's bare import of its neighbour (`import checks`) is `benchmarks.checks`."""
    if module.startswith("benchmarks.") and f"benchmarks.{name.split('.')[0]}" in MODULES:
        return f"benchmarks.{name}"
    return name


def _imports(module: str, top_level_only: bool = False, run_time_only: bool = False) -> set[str]:
    """What `module` imports: every import statement (lazy ones inside functions included) unless `top_level_only`;
    without those inside `if TYPE_CHECKING:` when `run_time_only`."""
    tree = ast.parse(MODULES[module].read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    skip = _type_checking_nodes(tree) if run_time_only else set()
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:
            continue  # `if TYPE_CHECKING:` blocks are not imports at run time
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {_bare(module, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            target = _bare(module, _resolve(module, node))
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


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan 1972), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return found


def _import_graph(top_level_only: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        targets = _imports(m, top_level_only=top_level_only, run_time_only=top_level_only)
        # importing a package's submodule runs the package first: that is not a cycle by itself
        graph[m] = {i for i in targets if i in MODULES and i != m and not m.startswith(i + ".")}
    return graph


def test_no_import_cycles_at_module_level():
    """Module-level imports among the project's modules form no cycle (Tarjan's strongly connected components)."""
    assert _cycles(_import_graph(top_level_only=True)) == []


ENGINE_LAYERS = ("iowatt.simulator.maxmin", "iowatt.simulator.flow_network", "iowatt.simulator.class_entries",
                 "iowatt.simulator.flow_classes", "iowatt.simulator.flows")


def test_the_engine_modules_import_downwards_only():
    """The engine's modules, lowest first: the solver, the network state, the classes, the engine (issue 33).
    Every import counts, lazy ones and `if TYPE_CHECKING:` blocks included, so none imports a module above it."""
    for rank, module in enumerate(ENGINE_LAYERS):
        above = set(ENGINE_LAYERS[rank + 1:])
        bad = sorted(i for i in _imports(module) if i in above)
        assert not bad, f"{MODULES[module].relative_to(REPO)} imports {bad}, above it in {ENGINE_LAYERS}"
