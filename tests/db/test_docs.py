"""The documentation matches the installed database, and the other way round.

docs/sql-reference.md documents every public function, view and table in a fenced
block whose first line is the object's signature as the catalog prints it
(``pg_get_function_arguments``/``pg_get_function_result``, ``format_type``).
These tests read those blocks and compare them with an installed database; on a
mismatch they print the block to paste. Worked examples (the settings tables,
tuning.md's explanation of the demo, operations.md's re-import) are run as
written and compared with what the pages say they print.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver import demo
from entity_resolver.cli import app
from shared import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

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


def settings_table(page):
    """Rows of the page's settings table: key -> (default, range)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    chunks = text.split("\n| setting | default | range |")
    assert len(chunks) == 2, f"{page}: expected one settings table"
    table = chunks[1].split("\n\n")[0]
    return {key: (default, bounds) for key, default, bounds
            in re.findall(r"^\| `(\w+)` \| `([^`]+)` \| ([^|]+?) \|", table, re.M)}


@pytest.mark.parametrize("page", ["tuning.md", "design.md"])
def test_the_settings_table_lists_every_setting_with_its_default(conn, page):
    effective = conn.execute(f"SELECT {SCHEMA}.configure_bank('docs-check', '{{}}')").fetchone()[0]
    rows = settings_table(page)
    assert set(rows) == set(effective)
    for key, (default, _) in rows.items():
        if default in ("true", "false"):
            assert effective[key] is (default == "true"), key
        elif default == "[]":
            assert effective[key] == [], key
        elif default.startswith("{"):
            assert effective[key] == json.loads(default), key
        elif re.fullmatch(r"[a-z]+", default):
            assert effective[key] == default, key
        else:
            assert float(default) == pytest.approx(effective[key]), key


def _configure(conn, key, value):
    return conn.execute(f"SELECT {SCHEMA}.configure_bank('docs-check', %s)",
                        (json.dumps({key: value}),)).fetchone()[0][key]


@pytest.mark.parametrize("page", ["tuning.md", "design.md"])
def test_the_settings_table_gives_each_range_exactly(conn, page):
    # "0–1" and "1–10000" include both ends; "> 0, ≤ 36500" excludes 0.
    for key, (_, bounds) in settings_table(page).items():
        if bounds in ("true/false", "true/false/auto"):
            assert _configure(conn, key, True) is True and _configure(conn, key, False) is False, (page, key)
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                _configure(conn, key, 1)
            if bounds.endswith("/auto"):
                assert _configure(conn, key, "auto") == "auto", (page, key)
                with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                    _configure(conn, key, "none of them")
            continue
        if "/" in bounds:
            for choice in bounds.split("/"):
                assert _configure(conn, key, choice) == choice, (page, key)
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                _configure(conn, key, "none of them")
            continue
        kinds = re.fullmatch(r"≤ (\d+) kinds", bounds)
        if kinds:
            most = int(kinds.group(1))
            wanted = {f"a{n}": "ignored" for n in range(most)}
            assert _configure(conn, key, wanted) == {**_configure(conn, key, {}), **wanted}, (page, key)
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                _configure(conn, key, {**wanted, "one_more": "ignored"})
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                _configure(conn, key, {"email": "unique"})
            continue
        listed = re.fullmatch(r"≤ (\d+) (pairs|names)", bounds)
        if listed:
            most, what = int(listed.group(1)), listed.group(2)
            entry = ["robert", "bob"] if what == "pairs" else "inc"
            assert len(_configure(conn, key, [entry] * most)) == most, (page, key)
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                _configure(conn, key, [entry] * (most + 1))
            continue
        closed = re.fullmatch(r"(\d+)–(\d+)", bounds)
        half_open = re.fullmatch(r"> (\d+), ≤ (\d+)", bounds)
        assert closed or half_open, f"{page}: range of {key} reads {bounds!r}"
        low, high = (int(x) for x in (closed or half_open).groups())
        accepted = [high] + ([low] if closed else [low + 0.001])
        refused = [high + 0.001] + ([low - 0.001] if closed else [low])
        for value in accepted:
            assert _configure(conn, key, value) == pytest.approx(value), (page, key, value)
        for value in refused:
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=key):
                _configure(conn, key, value)


# -- worked examples ------------------------------------------------------------------

def sql_block(page, containing):
    blocks = [b for b in _BLOCK.findall((DOCS / page).read_text(encoding="utf-8")) if containing in b]
    assert len(blocks) == 1, f"{page}: expected one sql block with {containing!r}"
    return blocks[0]


def sh_block(page, containing):
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if containing in b]
    assert len(blocks) == 1, f"{page}: expected one sh block with {containing!r}"
    return [line.split("  #")[0].strip() for line in blocks[0].splitlines() if line.strip()]


_EXPLAIN_HEADER = "| candidate | trigram | words | name | cooc | recency | score | decision |"


def explain_tables(page):
    """The page's explain_mention tables, each a list of rows (lists of cells)."""
    tables = []
    for chunk in (DOCS / page).read_text(encoding="utf-8").split(_EXPLAIN_HEADER)[1:]:
        lines = chunk.strip().splitlines()[1:]  # after the |---| line
        rows = []
        for line in lines:
            if not line.startswith("|"):
                break
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        tables.append(rows)
    return tables


def as_table_row(name, trigram, words, *rest):
    """An explain_mention row as tuning.md prints it: 3 decimals, yes/no, '–' for NULL."""
    def num(v):
        return "–" if v is None else f"{v:.3f}"
    signals, decision = rest[:-1], rest[-1]
    return [name, num(trigram), {None: "–", True: "yes", False: "no"}[words],
            *(num(v) for v in signals), decision]


def test_tuning_explains_the_demo_as_the_demo_and_the_query_show_it(conn):
    outcomes = demo.play(conn, SCHEMA, "demo")
    as_it_arrives, after_the_demo = explain_tables("tuning.md")

    fact_8 = next(o for o in outcomes if o.fact.content.startswith("Alex flagged a blocker"))
    assert [as_table_row(r.canonical_name, r.trigram_similarity, r.tokens_compatible, r.name_similarity,
                         r.cooccurrence, r.recency, r.score, r.decision)
            for r in fact_8.explanation] == as_it_arrives

    rows = conn.execute(sql_block("tuning.md", "explain_mention('demo'")).fetchall()
    assert [as_table_row(*row) for row in rows] == after_the_demo


def run_documented(line, dsn):
    """Run one documented entity-resolver command line, with $DSN standing for the test database."""
    argv = [dsn if arg == "$DSN" else arg for arg in shlex.split(line)]
    assert argv[0] == "entity-resolver", line
    result = CliRunner().invoke(app, argv[1:], env={"ENTITY_RESOLVER_DSN": None, "COLUMNS": "200"},
                                catch_exceptions=False)
    assert result.exit_code == 0, f"{line}\n{result.output}"
    return result


def test_operations_re_import_round_trip_runs_as_written(conn, tmp_path, monkeypatch):
    info = conn.info
    dsn = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    monkeypatch.chdir(tmp_path)
    facts = [{"fact_id": f"f{n}", "bank_id": "team", "event_date": f"2026-03-0{n}T10:00:00Z",
              "mentions": mentions}
             for n, mentions in enumerate([["Alex Morgan", "Acme"], ["Alex", "Acme", "renewal"],
                                           ["Priya", "Acme"]], 1)]
    Path("facts.jsonl").write_text("".join(json.dumps(f) + "\n" for f in facts), encoding="utf-8")

    def count(bank):
        return conn.execute(f"SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = %s", (bank,)).fetchone()[0]

    first_import, with_options = sh_block("operations.md", "each line names its bank")
    run_documented(first_import, dsn)
    assert count("team") == 3
    run_documented(with_options, dsn)  # the same file into the same bank adds nothing
    assert count("team") == 3

    for line in sh_block("operations.md", "--bank team-v2"):
        run_documented(line, dsn)
    assert count("team-v2") == 3
    settings = conn.execute(f"SELECT settings FROM {SCHEMA}.banks WHERE bank_id = 'team-v2'").fetchone()[0]
    assert settings == {"threshold": 0.65}


def psql_steps(page, section):
    """The steps of a page's psql session: each ```sql block followed by the ```text block of its output."""
    text = (DOCS / page).read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```\n\n```text\n(.*?)```", body, re.S)


def test_the_corrections_session_runs_in_psql_as_written(conn, pg_cluster):
    info = conn.info
    dsn = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    steps = psql_steps("corrections.md", "A worked session: the two Alexes, merged by mistake")
    assert len(steps) == 7
    for statements, expected in steps:
        run = subprocess.run([str(pg_cluster.bindir / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-"],
                             input=statements, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        # psql pads the last header cell; the page does not.
        printed = "\n".join(line.rstrip() for line in run.stdout.strip("\n").splitlines())
        assert printed == expected.strip("\n"), statements


def test_the_corrections_command_lines_run_as_written(conn, tmp_path, monkeypatch):
    info = conn.info
    dsn = f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}"
    monkeypatch.chdir(tmp_path)
    from entity_resolver.client import Client

    er = Client(conn)
    for n, mentions in enumerate([["Alex Morgan", "Acme", "renewal"], ["Alex Kim", "React", "Sprint 14"],
                                  ["Alex Kim", "Priya", "React"], ["Alex Morgan", "Acme", "Priya"]], 1):
        er.retain("team", mentions, event_date=f"2026-03-0{n}T09:00:00Z", fact_id=f"f{n}")
    for line in sh_block("corrections.md", "entity-resolver undo team 1"):
        run_documented(line, dsn)
    assert [o.kind for o in er.history("team")] == ["remove_alias", "add_alias", "rename", "split", "merge"]
    assert len(Path("team.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    for line in sh_block("corrections.md", "--bank team-2"):
        run_documented(line, dsn)
    assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = 'team-2'").fetchone()[0] == 4
