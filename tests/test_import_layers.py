"""The package's import graph, read statically with ``ast``: layers import one way, no module circles.

Every ``import``/``from ... import`` in every module under ``src/urbanarena`` counts, including the ones inside
functions (a lazy import is still an arrow). ``from pkg import name`` counts as an arrow to ``pkg.name`` when that is a
module, else to ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT_PKG = "urbanarena"

# world <- render <- env <- tasks <- (build) <- agents <- runner <- cli/web/report: a module may import its own layer
# and the ones to its left. Top-level modules/packages not named here (errors, paths, hashing, gym, harness, bench) are
# checked only by the cli/web/bench rule and the cycle rule.
LAYERS = {
    "world": 0,
    "render": 1,
    "env": 2,
    "tasks": 3,
    "build": 3.5,  # urbanarena.build: city building (world importer + render maps + env panorama store + tasks extents)
    "agents": 4,
    "runner": 5,
    "cli": 6,
    "web": 6,
    "report": 6,
}
TOP_ONLY = ("cli", "web", "bench")


def _module_files() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted((SRC / ROOT_PKG).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _module_files()


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _resolve_relative(module: str, level: int, target: str | None) -> str:
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports_of(module: str) -> set[str]:
    """Modules of this package that ``module`` imports (static, any depth in the file)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"), filename=str(MODULES[module]))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    out: set[str] = set()
    for name in found:
        if not (name == ROOT_PKG or name.startswith(ROOT_PKG + ".")):
            continue
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            out.add(name)
    return out


GRAPH = {m: _imports_of(m) for m in MODULES}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_walk_sees_the_package():
    # hand-checked arrows: the CLI's build command imports city building, which imports the OSM importer lazily
    # (inside a function) and the shared error types at module level.
    assert len(MODULES) > 200
    assert "urbanarena.build" in GRAPH["urbanarena.cli.build_cmd"]
    assert {"urbanarena.world.importers.osm", "urbanarena.errors"} <= GRAPH["urbanarena.build"]


def test_nothing_outside_cli_web_bench_imports_them():
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if _top(t) in TOP_ONLY and _top(m) not in TOP_ONLY
    )
    assert not bad, "imports reaching up into cli/web/bench:\n" + "\n".join(bad)


def test_layers_import_one_way():
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        for t in targets
        if _top(m) in LAYERS and _top(t) in LAYERS and LAYERS[_top(t)] > LAYERS[_top(m)]
    )
    assert not bad, "upward imports (world <- render <- env <- tasks <- agents <- runner <- cli/web/report):\n" + (
        "\n".join(bad)
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package_edges_removed(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    # A package's __init__ re-exporting its own submodules, and a submodule importing a sibling through the package
    # name, are one module's parts naming each other, not a circle between modules: drop arrows between a package and
    # modules inside it.
    return {
        m: {t for t in targets if not (t.startswith(m + ".") and _is_package(m)) and not (m.startswith(t + ".") and _is_package(t))}
        for m, targets in graph.items()
    }


def test_cycle_finder_finds_a_hand_made_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _cycles(g) == [["a", "b", "c"]]


def test_no_import_cycles():
    cycles = _cycles(_package_edges_removed(GRAPH))
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
