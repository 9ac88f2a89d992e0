"""The documentation matches the installed database, and the other way round.

docs/sql-reference.md documents every public function, view and table in a fenced
block whose first line is the object's signature as the catalog prints it
(``pg_get_function_arguments``/``pg_get_function_result``, ``format_type``).
These tests read those blocks and compare them with an installed database; on a
mismatch they print the block to paste.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCHEMA = "entity_resolver"

_BLOCK = re.compile(r"```sql\n(.*?)```", re.S)
_FUNCTION = re.compile(rf"^{SCHEMA}\.(\w+)\((.*)\)\nRETURNS (.*)$")
_RELATION = re.compile(rf"^(TABLE|VIEW) {SCHEMA}\.(\w+) \((.*)\)$")


def documented():
    """(functions, relations) documented in sql-reference.md: name -> signature."""
    functions, relations = {}, {}
    for block in _BLOCK.findall((DOCS / "sql-reference.md").read_text(encoding="utf-8")):
        lines = block.strip().split("\n")
        head = "\n".join(lines[:2])
        if m := _FUNCTION.match(head):
            assert m.group(1) not in functions, f"{m.group(1)} documented twice"
            functions[m.group(1)] = (m.group(2), m.group(3))
        elif m := _RELATION.match(lines[0]):
            assert m.group(2) not in relations, f"{m.group(2)} documented twice"
            relations[m.group(2)] = (m.group(1), m.group(3))
    return functions, relations


def installed_functions(conn):
    """Public functions of the schema (not internal, not pg_trgm's): name -> signature."""
    rows = conn.execute(
        """
        SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)
          FROM pg_proc p
         WHERE p.pronamespace = %s::regnamespace AND p.proname !~ '^_' AND p.prokind = 'f'
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                           AND d.objid = p.oid AND d.deptype = 'e')
        """, (SCHEMA,)).fetchall()
    return {name: (args, result) for name, args, result in rows}


def installed_relations(conn):
    rows = conn.execute(
        """
        SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END,
               string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
          FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'p', 'v')
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                           AND d.objid = c.oid AND d.deptype = 'e')
         GROUP BY c.relname, c.relkind
        """, (SCHEMA,)).fetchall()
    return {name: (kind, columns) for name, kind, columns in rows}


def test_every_documented_function_exists_with_its_documented_signature(conn):
    docs, actual = documented()[0], installed_functions(conn)
    wrong = {name: sig for name, sig in docs.items() if actual.get(name) != sig}
    assert not wrong, "fix docs/sql-reference.md:\n" + "\n".join(
        f"{SCHEMA}.{n}({actual[n][0]})\nRETURNS {actual[n][1]}" if n in actual else f"{n}: not installed"
        for n in wrong)


def test_every_public_function_is_documented(conn):
    missing = sorted(set(installed_functions(conn)) - set(documented()[0]))
    assert not missing, f"document in docs/sql-reference.md: {missing}"


def test_every_documented_view_and_table_exists_with_its_documented_columns(conn):
    docs, actual = documented()[1], installed_relations(conn)
    wrong = {name: sig for name, sig in docs.items() if actual.get(name) != sig}
    assert not wrong, "fix docs/sql-reference.md:\n" + "\n".join(
        f"{actual[n][0]} {SCHEMA}.{n} ({actual[n][1]})" if n in actual else f"{n}: not installed"
        for n in wrong)


def test_every_view_and_table_is_documented(conn):
    missing = sorted(set(installed_relations(conn)) - set(documented()[1]))
    assert not missing, f"document in docs/sql-reference.md: {missing}"


def test_the_settings_table_in_tuning_lists_every_setting_with_its_default(conn):
    effective = conn.execute(f"SELECT {SCHEMA}.configure_bank('docs-check', '{{}}')").fetchone()[0]
    text = (DOCS / "tuning.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", text, re.M))
    assert set(rows) == set(effective)
    for key, default in rows.items():
        assert float(default) == pytest.approx(effective[key]), key


@pytest.mark.parametrize("page", ["concepts.md", "sql-reference.md", "tuning.md", "operations.md", "scaling.md"])
def test_relative_links_point_at_existing_pages(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([\w\-./]+\.md)(?:#[\w\-]+)?\)", text):
        assert (DOCS / target).exists(), f"{page} links to missing {target}"
