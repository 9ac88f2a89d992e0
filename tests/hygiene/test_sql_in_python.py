"""scripts/sql_in_python.py: `make lint` lints the SQL in plpython/*.py only if it is all extracted."""

import ast
import importlib
import re
from pathlib import Path

import pytest

from scripts import sql_in_python as extractor

REPO = Path(__file__).resolve().parents[2]
PLPYTHON = REPO / "plpython"


def declared_constants():
    """(module, name) of every module-level SQL_ assignment, found without the extractor."""
    found = set()
    for path in PLPYTHON.glob("*.py"):
        for line in path.read_text().splitlines():
            m = re.match(r"(SQL_\w+)\s*(?::[^=]*)?=", line)
            if m:
                found.add((path.stem, m.group(1)))
    return found


def test_every_sql_constant_of_plpython_gets_its_file(tmp_path):
    (tmp_path / "stale.sql").write_text("SELECT 1\n")
    written = extractor.extract(out=tmp_path)
    declared = declared_constants()
    assert len(declared) >= 25
    assert {tuple(p.stem.split("__")) for p in written} == declared
    assert sorted(p.name for p in tmp_path.glob("*.sql")) == sorted(p.name for p in written)  # stale.sql gone
    assert (tmp_path / ".sqlfluff").read_text() == extractor.CONFIG.read_text()
    candidates = (tmp_path / "probe__SQL_CANDIDATES.sql").read_text()
    assert candidates.startswith("-- plpython/probe.py:")
    assert "FROM entities AS e" in candidates
    assert "OPERATOR ({{ internal }}.%)" in candidates
    assert "{{ trgm_schema }}.similarity(" in candidates


@pytest.mark.parametrize("module", sorted({m for m, _ in declared_constants()}))
def test_extracted_text_is_the_value_the_module_sends(module):
    # The module's own value (imported, as the unit tests run the modules) with
    # the stand-ins: the catalog tokens as jinja variables, every number as 0
    # (%d is formatted with 0; the rest of the text keeps its digits, so
    # comparing with all numbers zeroed is exact for everything but them).
    loaded = importlib.import_module(module)
    extracted = extractor.statements(PLPYTHON / f"{module}.py")
    assert extracted
    for name, _, _, text in extracted:
        value = getattr(loaded, name)
        for token, stand_in in extractor.TOKENS.items():
            value = value.replace(token, stand_in)
        assert re.sub(r"\d+", "0", text) == re.sub(r"\d+", "0", value), name
        # every catalog token replaced (an operator such as jsonb's @> stays)
        assert not re.search(r"@[a-z_]+@", text) and "%d" not in text, name


def test_the_by_alias_variants_differ_from_their_statements():
    # They are made by str.replace: were the replaced text to drift, the
    # variant would silently be the statement itself.
    import probe
    assert "entity_aliases" in probe.SQL_CONTEXT_BY_ALIAS and "entity_aliases" not in probe.SQL_CONTEXT
    assert "entity_aliases" in probe.SQL_CONTEXT_PENDING_BY_ALIAS
    assert "entity_aliases" not in probe.SQL_CONTEXT_PENDING


def test_plpython_hands_db_only_named_statements():
    # An inline literal or an expression would reach the server unlinted.
    for path in sorted(PLPYTHON.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "db" \
                    and node.func.attr in {"run", "plan"}:
                query = node.args[2]
                assert isinstance(query, ast.Name), f"{path.name}:{node.lineno}: {ast.unparse(query)}"


@pytest.mark.parametrize("source, message", [
    ("SQL_X = make_sql()\n", "cannot evaluate"),
    ("SQL_X = 'SELECT %s' % name\n", "%s has no stand-in"),
    ("SQL_X = 'SELECT 1'.replace('2', '3')\n", "finds nothing to replace"),
])
def test_a_statement_the_extractor_cannot_read_fails_the_lint(tmp_path, monkeypatch, source, message):
    monkeypatch.setattr(extractor, "REPO", tmp_path)
    module = tmp_path / "m.py"
    module.write_text(source)
    with pytest.raises(extractor.Unsupported, match=message):
        extractor.statements(module)
