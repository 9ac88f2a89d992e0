"""The product package stands on its own: its modules import each other without a
cycle, and it imports nothing of the bench/ tooling (not in the wheel), neither
by an import statement nor through the import path; the benchmark's entry point
is the tooling's own, ``python -m bench`` (what ``make bench`` runs).

Imports are read with ``ast`` from src/entity_resolver/**/*.py (a subpackage's
modules too, e.g. build.headers), including those inside functions: a lazy
import that closes a cycle is still a cycle, and a lazy import of bench/ still
crosses the boundary.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "entity_resolver"


def module_name(path: Path) -> str:
    """A module's dotted name in the package (client, build.headers); a subpackage's __init__ is its name."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


PATHS = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MODULES = sorted(PATHS)


def imported_names(node: ast.AST) -> List[str]:
    """Absolute dotted names an import statement loads (``pkg.mod`` and ``pkg.mod.name`` alike)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # from . import x, from .client import y: relative to the package
            base = "entity_resolver" + ("." + base if base else "")
        return [base] + [f"{base}.{alias.name}" for alias in node.names]
    return []


def imports(tree: ast.AST, *, at_import_time: bool = False) -> Iterator[str]:
    """Every import in ``tree``; with ``at_import_time``, not those in function bodies."""
    for child in ast.iter_child_nodes(tree):
        if at_import_time and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield from imported_names(child)
        yield from imports(child, at_import_time=at_import_time)


def parsed(module: str) -> ast.AST:
    return ast.parse(PATHS[module].read_text(encoding="utf-8"))


def imported_module(name: str) -> str:
    """The product module a dotted name loads: its longest prefix that is one (else __init__)."""
    parts = name.split(".")[1:]
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in PATHS:
            return ".".join(parts[:k])
    return "__init__"


def product_graph() -> Dict[str, Set[str]]:
    """module -> the product modules it imports (``entity_resolver`` itself is __init__)."""
    graph: Dict[str, Set[str]] = {}
    for module in MODULES:
        edges = set()
        for name in imports(parsed(module)):
            if name.split(".")[0] != "entity_resolver":
                continue
            target = imported_module(name)
            if target != module:
                edges.add(target)
        graph[module] = edges
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle as [a, b, ..., a], or None."""
    done: Set[str] = set()

    def visit(node: str, path: List[str]) -> Optional[List[str]]:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_the_reader_sees_the_imports_that_make_a_cycle():
    # Guards the check below: a lazy import inside a function counts.
    tree = ast.parse("from entity_resolver.client import Client\n"
                     "def f():\n    from entity_resolver import demo\n")
    assert set(imports(tree)) >= {"entity_resolver.client", "entity_resolver.demo"}
    assert "entity_resolver.demo" not in set(imports(tree, at_import_time=True))
    assert find_cycle({"cli": {"demo"}, "demo": {"render", "cli"}, "render": set()}) == ["cli", "demo", "cli"]


def test_product_modules_import_each_other_without_a_cycle():
    graph = product_graph()
    assert {"cli", "demo", "render", "build", "build.headers"} <= set(graph)
    assert {"build.errors", "build.lexer"} <= graph["build.headers"]
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def reaches_for_bench(tree: ast.AST) -> List[str]:
    """What in ``tree`` loads the bench/ tooling or changes where imports are found, as source text."""
    found = [f"import {name}" for name in imports(tree) if name.split(".")[0] == "bench"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            found.append(ast.unparse(node))           # sys.path, read or changed
        elif isinstance(node, ast.Call) and any(
                isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(".")[0] == "bench"
                for arg in node.args):
            name = ast.unparse(node.func)
            if name.split(".")[-1] in ("import_module", "__import__", "find_spec"):
                found.append(ast.unparse(node))
    return found


def test_the_reader_sees_every_way_to_reach_the_bench_tooling():
    # Guards the check below: each of these is found, inside a function too.
    tree = ast.parse("import sys, importlib\n"
                     "def f():\n"
                     "    sys.path.insert(0, '/repo')\n"
                     "    from bench.run import run_bench\n"
                     "    importlib.import_module('bench.citus')\n")
    assert sorted(reaches_for_bench(tree)) == ["import bench.run", "import bench.run.run_bench",
                                               "importlib.import_module('bench.citus')", "sys.path"]
    assert reaches_for_bench(ast.parse("import json\nfrom entity_resolver import evaluate\n")) == []


def test_no_product_module_reaches_for_the_bench_tooling():
    offenders = {module: found for module in MODULES if (found := reaches_for_bench(parsed(module)))}
    assert not offenders, offenders


def test_the_product_command_line_has_no_bench_command():
    from typer.main import get_command

    from entity_resolver.cli import app

    commands = get_command(app).commands      # type: ignore[attr-defined]
    assert {"install", "import", "export", "eval"} <= set(commands)
    assert "bench" not in commands


def test_python_m_bench_is_the_benchmarks_entry_point_with_its_options():
    env = {k: v for k, v in os.environ.items() if k != "ENTITY_RESOLVER_DSN"}
    env["COLUMNS"] = "200"
    run = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=PACKAGE.parents[1], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Usage: python -m bench [OPTIONS]")
    for option in ("--sizes", "--out", "--no-out", "--batches", "--writer-seconds", "--keep", "--no-imports",
                   "--no-accuracy", "--neighbours", "--citus", "--pairs", "--dsn", "--data-dir", "--json"):
        assert option in run.stdout, option
