"""The house rules of docs/architecture.md, read off the source: imports point one way along the
pipeline (urdf -> model -> symbolic -> codegen -> sim -> session/sweep/identify -> ros, cli on top), no
import circle between modules (imports inside functions and under TYPE_CHECKING count), only ros
imports rclpy, nothing imports the CLI from outside it, and no module grows into a hub."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mb_sim"
#: The stages in pipeline order; a module may import from its own stage and those before it.
STAGES = ["urdf", "model", "symbolic", "codegen", "sim", "session", "sweep", "identify", "ros", "cli"]
#: Stages that do not depend on each other (beside each other in the pipeline).
SIDE_BY_SIDE = {frozenset({"session", "sweep"}), frozenset({"session", "identify"}), frozenset({"sweep", "identify"})}
#: Longest module [lines], and the two former hubs' own limits.
MAX_LINES = 600
HUB_LIMITS = {"mb_sim.ros.simulation_node": 450, "mb_sim.sim.simulator": 600}


def _modules() -> dict[str, Path]:
    return {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
            for path in PACKAGE.rglob("*.py")}


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """The mb_sim modules `module` imports anywhere in its file (a package's __init__ not counted:
    it only re-exports)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    found = set()
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module and MODULES[name].name != "__init__.py":
            found.add(name)
    return found


GRAPH = {module: _imported(module, path) for module, path in MODULES.items()}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in STAGES) else None


def test_no_import_circles():
    """Tarjan's strongly connected components of the import graph: none larger than one module."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert circles == []


def test_imports_point_along_the_pipeline():
    upward = []
    for module, imported in GRAPH.items():
        stage = _stage(module)
        for target in imported:
            other = _stage(target)
            if stage in STAGES and other in STAGES and STAGES.index(other) > STAGES.index(stage) \
                    and frozenset({stage, other}) not in SIDE_BY_SIDE:
                upward.append(f"{module} -> {target}")
            if stage in STAGES and stage != other and frozenset({stage, other}) in SIDE_BY_SIDE:
                upward.append(f"{module} -> {target} (side by side)")
    assert upward == []


def test_only_ros_imports_rclpy_and_nothing_imports_the_cli():
    rclpy = [m for m, p in MODULES.items() if _stage(m) != "ros" and ("import rclpy" in p.read_text()
                                                                       or "from rclpy" in p.read_text())]
    assert rclpy == []
    assert [m for m, imported in GRAPH.items() if _stage(m) != "cli" and any(_stage(t) == "cli" for t in imported)] == []


def test_no_module_is_a_hub():
    lines = {module: len(path.read_text().splitlines()) for module, path in MODULES.items()}
    assert {m: n for m, n in lines.items() if n > HUB_LIMITS.get(m, MAX_LINES)} == {}


def test_the_checks_see_a_circle_and_an_upward_import(monkeypatch):
    """The graph reader finds what the rules forbid (a test that cannot fail is no test)."""
    monkeypatch.setitem(GRAPH, "mb_sim.urdf.parser", GRAPH["mb_sim.urdf.parser"] | {"mb_sim.sim.simulator"})
    with pytest.raises(AssertionError):
        test_imports_point_along_the_pipeline()
    monkeypatch.setitem(GRAPH, "mb_sim.sim.simulator", GRAPH["mb_sim.sim.simulator"] | {"mb_sim.urdf.parser"})
    monkeypatch.setitem(GRAPH, "mb_sim.urdf.parser", GRAPH["mb_sim.urdf.parser"] | {"mb_sim.sim.simulator"})
    with pytest.raises(AssertionError):
        test_no_import_circles()
    assert "mb_sim.urdf.xml_document" in GRAPH["mb_sim.urdf.parser"]  # a real edge is read
