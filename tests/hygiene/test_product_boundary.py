"""The product package stands on its own: its modules import each other without a
cycle, it never imports the bench/ tooling when a module loads, and its
``bench`` command says where benchmarks run when the tooling is not there.

Imports are read with ``ast`` from src/entity_resolver/*.py, including those
inside functions: a lazy import that closes a cycle is still a cycle.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "entity_resolver"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


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
    return ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))


def product_graph() -> Dict[str, Set[str]]:
    """module -> the product modules it imports (``entity_resolver`` itself is __init__)."""
    graph: Dict[str, Set[str]] = {}
    for module in MODULES:
        edges = set()
        for name in imports(parsed(module)):
            parts = name.split(".")
            if parts[0] != "entity_resolver":
                continue
            target = parts[1] if len(parts) > 1 and parts[1] in MODULES else "__init__"
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
    assert {"cli", "demo", "render"} <= set(graph)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_no_product_module_imports_the_bench_tooling_when_it_loads():
    offenders = [f"{module}: {name}" for module in MODULES
                 for name in imports(parsed(module), at_import_time=True)
                 if name.split(".")[0] == "bench"]
    assert not offenders, offenders


def test_bench_command_outside_a_checkout_exits_1_saying_where_benchmarks_run(tmp_path):
    # The package as a wheel installs it: no bench/ next to it, none on the path.
    shutil.copytree(PACKAGE, tmp_path / "entity_resolver", ignore=shutil.ignore_patterns("__pycache__"))
    script = ("import sys; root = sys.argv.pop(1); sys.path.insert(0, root)\n"
              "import entity_resolver.cli as cli\n"
              "assert cli.__file__.startswith(root), cli.__file__\n"
              "cli.main()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENTITY_RESOLVER_DSN")}
    env["COLUMNS"] = "200"  # the error is one line; rich wraps at 80 without a terminal
    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), "bench", "--dsn", "host=/nonexistent dbname=x"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "benchmarks run from a repository checkout (make bench)" in lines[0], run.stderr
