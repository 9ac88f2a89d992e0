"""The SQL PL/Python sends is text the module holds, never text built from
values: every plpy.execute / prepare / cursor gets a constant (an upper-case
module constant, a literal, a plan, or a constant with the trigram schema
substituted); values go as parameters (docs/security.md). pgspot cannot read
Python (the Makefile's --ignore-lang plpython3u), so this scan stands in."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _sql_argument_is_constant(node: ast.AST, constants: set[str]) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.Name) and (node.id in constants or node.id in {"plan", "query", "link"}):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr.isupper() or node.attr in {"plan"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _sql_argument_is_constant(node.left, constants) and _sql_argument_is_constant(node.right, constants)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_plan":
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace":
        # query.replace("@trgm@", <schema name quoted by regnamespace::text>)
        return _sql_argument_is_constant(node.func.value, constants)
    return False


def test_plpython_sends_sql_text_only_from_constants_values_go_as_parameters():
    for path in sorted((REPO / "plpython").glob("*.py")):
        tree = ast.parse(path.read_text())
        constants = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name) and t.id.isupper()}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in {"execute", "prepare", "cursor"} and node.args:
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "plpy":
                    assert _sql_argument_is_constant(node.args[0], constants), \
                        f"{path.name}:{node.lineno}: SQL built from a non-constant"
