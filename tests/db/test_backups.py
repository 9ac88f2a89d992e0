"""Backups that restore, installations that say what they lack, and deliberate drops.

The backup recipes of docs/operations.md ("Backups and restore") are read from
the page and run as written (bash, with $DSN and $TARGET_DSN set): dump,
restore into a new database, insert a fact, it resolves. ``install`` on a
database whose objects are partly missing repairs what the idempotent part
re-creates and refuses, naming them, what only a migration creates.
``drop_bank`` empties every table with a bank_id for that bank and only it;
``uninstall`` refuses while banks hold data.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver.cli import app
from entity_resolver.install import InstallError, install, uninstall

from test_extension import create_extension
from shared import SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def backup_recipes() -> list[str]:
    """The ```sh blocks of operations.md's "Backups and restore" that dump (the re-import one is test_docs')."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("\n## Backups and restore\n", 1)[1].split("\n## ", 1)[0]
    return [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "pg_dump" in b]


def recipe(containing: str) -> str:
    found = [b for b in backup_recipes() if containing in b]
    assert len(found) == 1, f"operations.md: expected one backup recipe with {containing!r}"
    return found[0]


WHOLE, INSTALLER, EXTENSION = "the whole database", "entity-resolver install --dsn", "--extension=entity_resolver"
RECIPES = {WHOLE: "pg_dump --format=custom --file=app.dump", INSTALLER: INSTALLER, EXTENSION: EXTENSION}


def test_every_backup_recipe_of_the_page_is_one_this_file_runs():
    assert len(backup_recipes()) == len(RECIPES)
    for marker in RECIPES.values():
        recipe(marker)


def run_recipe(block: str, pg_cluster, source: psycopg.Connection, target: psycopg.Connection,
               cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DSN=pg_cluster.dsn(source.info.dbname), TARGET_DSN=pg_cluster.dsn(target.info.dbname),
               PATH=f"{pg_cluster.bindir}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env, capture_output=True,
                          text=True)


def write(conn: psycopg.Connection, bank: str, mentions: list[str]) -> None:
    conn.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, content, mentions) VALUES (%s, 'a fact', %s)",
                 (bank, psycopg.types.json.Jsonb(mentions)))


def counts(conn: psycopg.Connection, bank: str) -> dict:
    return dict(conn.execute(f"SELECT canonical_name, mention_count FROM {SCHEMA}.entities WHERE bank_id = %s",
                             (bank,)).fetchall())


def assert_restored_and_resolving(source: psycopg.Connection, target: psycopg.Connection) -> None:
    before = counts(source, "b1")
    assert before and counts(target, "b1") == before
    write(target, "b1", ["Alice Smith", "Zephyr Labs"])
    after = counts(target, "b1")
    assert after["Alice Smith"] == before["Alice Smith"] + 1 and after["Zephyr Labs"] == 1
    linked = target.execute(f"SELECT count(*) FROM {SCHEMA}.mentions WHERE bank_id = 'b1'").fetchone()[0]
    assert linked == sum(after.values())


def source_with_data(conn: psycopg.Connection) -> psycopg.Connection:
    write(conn, "b1", ["Alice Smith", "Acme Corp"])
    write(conn, "b1", ["Alice Smith", "Bob Jones"])
    return conn


@pytest.mark.parametrize("route", ["installer", "extension"])
def test_the_whole_database_recipe_restores_a_database_that_resolves(route, request, new_db, pg_cluster, tmp_path):
    source = new_db()
    if route == "extension":
        request.getfixturevalue("extension_files")
        create_extension(source)
    else:
        install(source)
    source_with_data(source)
    target = new_db()
    done = run_recipe(recipe(RECIPES[WHOLE]), pg_cluster, source, target, tmp_path)
    assert done.returncode == 0, done.stderr
    assert_restored_and_resolving(source, target)


def test_the_installer_schemas_recipe_restores_both_schemas_and_resolves(new_db, pg_cluster, tmp_path):
    source = new_db()
    install(source)
    source_with_data(source)
    source.execute("CREATE TABLE public.other_app (id int)")   # not entity_resolver's: not in this dump
    target = new_db()
    done = run_recipe(recipe(RECIPES[INSTALLER]), pg_cluster, source, target, tmp_path)
    assert done.returncode == 0, done.stderr
    assert target.execute("SELECT to_regclass('public.other_app')").fetchone()[0] is None
    triggers = target.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'entity_resolver.facts'::regclass"
                              " AND NOT tgisinternal").fetchone()[0]
    assert triggers == 4
    assert_restored_and_resolving(source, target)


def test_the_extension_schemas_recipe_restores_the_extension_and_resolves(extension_files, new_db,
                                                                           pg_cluster, tmp_path):
    source = new_db()
    create_extension(source)
    source_with_data(source)
    target = new_db()
    done = run_recipe(recipe(RECIPES[EXTENSION]), pg_cluster, source, target, tmp_path)
    assert done.returncode == 0, done.stderr
    assert target.execute("SELECT extversion FROM pg_extension WHERE extname = 'entity_resolver'").fetchone()
    assert_restored_and_resolving(source, target)


# -- install over an installation whose objects are partly missing ------------------------

def test_install_recreates_a_missing_trigger_and_says_so(conn):
    conn.execute(f"DROP TRIGGER facts_resolve_and_link ON {SCHEMA}.facts")
    report = install(conn)
    assert report.repaired == [f"trigger facts_resolve_and_link on {SCHEMA}.facts"]
    write(conn, "b1", ["Alice Smith"])
    assert counts(conn, "b1") == {"Alice Smith": 1}
    assert install(conn).repaired == []


@pytest.mark.parametrize("damage, named", [
    ("DROP SCHEMA entity_resolver_internal CASCADE", "function entity_resolver_internal.folded"),
    ("DROP TABLE entity_resolver.entity_aliases CASCADE", "table entity_resolver.entity_aliases"),
    ("DROP INDEX entity_resolver.mentions_memory_idx", "index entity_resolver.mentions_memory_idx"),
    ("ALTER TABLE entity_resolver.entities DROP COLUMN metadata CASCADE", "column entity_resolver.entities.metadata"),
])
def test_install_refuses_an_installation_missing_what_migrations_create_and_names_it(conn, damage, named):
    conn.execute(damage)
    schemas = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'er_check_%'").fetchone()[0]
    with pytest.raises(InstallError, match="is incomplete") as refused:
        install(conn)
    assert named in str(refused.value) and "restore both" in str(refused.value)
    assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'er_check_%'").fetchone()[0] == schemas
    dsn = f"host={conn.info.host} port={conn.info.port} user={conn.info.user} dbname={conn.info.dbname}"
    result = CliRunner().invoke(app, ["install", "--dsn", dsn])
    assert result.exit_code == 3 and "is incomplete" in result.output and "42P01" not in result.output


# -- drop_bank -----------------------------------------------------------------------------

def bank_tables(conn: psycopg.Connection) -> list[str]:
    """Every table of the two schemas with a bank_id column, found in the catalog as drop_bank finds them."""
    return [r[0] for r in conn.execute(
        "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
        " AND a.attname = 'bank_id' AND NOT a.attisdropped"
        " WHERE c.relnamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)"
        " AND c.relkind IN ('r', 'p') ORDER BY 1")]


def rows_per_bank(conn: psycopg.Connection) -> dict:
    return {(t, b): n for t in bank_tables(conn)
            for b, n in conn.execute(f"SELECT bank_id, count(*) FROM {t} GROUP BY 1")}


def filled_bank(conn: psycopg.Connection, bank: str, role: str) -> None:
    """A bank with a row in every table: facts, corrections (ledger, alias, forward, judgement), a dismissal, a grant,
    queued statistics."""
    conn.execute(f"SELECT {SCHEMA}.configure_bank(%s, '{{\"threshold\": 0.7}}')", (bank,))
    write(conn, bank, ["Alice Smith", "Acme Corp"])
    write(conn, bank, ["Zed Zorro", "Acme Corp"])
    a, b = (conn.execute(f"SELECT id FROM {SCHEMA}.entities WHERE bank_id = %s AND canonical_name = %s",
                         (bank, n)).fetchone()[0] for n in ("Alice Smith", "Zed Zorro"))
    conn.execute(f"SELECT {SCHEMA}.merge_entities(%s, ARRAY[%s]::uuid[], %s)", (bank, b, a))
    conn.execute(f"SELECT {SCHEMA}.add_alias(%s, %s, 'Ally')", (bank, a))
    acme = conn.execute(f"SELECT id FROM {SCHEMA}.entities WHERE bank_id = %s AND canonical_name = 'Acme Corp'",
                        (bank,)).fetchone()[0]
    conn.execute(f"SELECT {SCHEMA}.mark_distinct(%s, %s, %s)", (bank, a, acme))
    conn.execute(f"SELECT {SCHEMA}.grant_bank_access(%s, %s)", (bank, role))
    # A dismissed review item (dismiss_review needs a standing item; the row is what matters here).
    conn.execute(f"INSERT INTO {SCHEMA}.review_dismissals (bank_id, item, evidence) VALUES (%s, 'likely_over_merge:x', 1)",
                 (bank,))
    conn.execute(f"INSERT INTO {SCHEMA}.reresolve_queue (bank_id, unit_id) VALUES (%s, gen_random_uuid())", (bank,))
    conn.execute("SET entity_resolver.flush_at_commit = off")
    write(conn, bank, ["Alice Smith", "Oslo"])
    conn.execute("RESET entity_resolver.flush_at_commit")


@pytest.fixture
def tenant(conn):
    name = "er_drop_tenant"
    conn.execute(f"DROP ROLE IF EXISTS {name}")
    conn.execute(f"CREATE ROLE {name} LOGIN")
    yield name
    conn.execute(f"DROP OWNED BY {name}")
    conn.execute(f"DROP ROLE {name}")


def test_drop_bank_empties_every_table_with_a_bank_id_for_that_bank_only(conn, tenant):
    # A table another feature adds later, with a foreign key to entities:
    # emptied without drop_bank naming it, before the entities it references.
    conn.execute(f"CREATE TABLE {SCHEMA}.entity_notes (bank_id text, entity_id uuid, note text,"
                 f" FOREIGN KEY (bank_id, entity_id) REFERENCES {SCHEMA}.entities (bank_id, id))")
    filled_bank(conn, "gone", tenant)
    filled_bank(conn, "kept", tenant)
    conn.execute(f"INSERT INTO {SCHEMA}.entity_notes SELECT bank_id, id, 'n' FROM {SCHEMA}.entities")
    before = rows_per_bank(conn)
    tables = bank_tables(conn)
    assert f"{SCHEMA}.entity_notes" in tables
    assert {t for t, b in before if b == "gone"} == set(tables)   # every table has rows of the bank

    dry = conn.execute(f"SELECT {SCHEMA}.drop_bank('gone')").fetchone()[0]
    assert rows_per_bank(conn) == before
    expected = {t.split(".", 1)[1]: n for (t, b), n in before.items() if b == "gone"}
    assert dry == {"bank_id": "gone", "dry_run": True, "rows": expected, "total": sum(expected.values())}

    done = conn.execute(f"SELECT {SCHEMA}.drop_bank('gone', dry_run => false)").fetchone()[0]
    assert done == dict(dry, dry_run=False)
    assert rows_per_bank(conn) == {k: n for k, n in before.items() if k[1] != "gone"}

    with pytest.raises(psycopg.errors.UndefinedObject, match="^bank_id: bank 'gone' does not exist"):
        conn.execute(f"SELECT {SCHEMA}.drop_bank('gone', false)")
    with pytest.raises(psycopg.errors.UndefinedObject, match="^bank_id: bank 'gone' does not exist"):
        conn.execute(f"SELECT * FROM {SCHEMA}.operation_history('gone')")
    with pytest.raises(psycopg.errors.UndefinedObject, match="^bank_id: bank 'gone' does not exist"):
        conn.execute(f"SELECT {SCHEMA}.undo_operation('gone', 1)")
    # The kept bank resolves as before.
    write(conn, "kept", ["Ally"])
    conn.execute(f"SELECT * FROM {SCHEMA}.flush_stats('kept')")
    assert counts(conn, "kept")["Alice Smith"] == 4


def test_drop_bank_refuses_bad_input_and_callers_who_are_not_administrators(conn):
    for args, state in ((("NULL", "false"), "22004"), (("' '", "false"), "22023"), (("'b'", "NULL"), "22004")):
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(f"SELECT {SCHEMA}.drop_bank({args[0]}, {args[1]})")
        assert refused.value.sqlstate == state
    write(conn, "b1", ["Alice Smith"])
    conn.execute("DROP ROLE IF EXISTS er_drop_app")
    conn.execute("CREATE ROLE er_drop_app LOGIN")
    try:
        conn.execute(f"GRANT {SCHEMA}_user TO er_drop_app")
        conn.execute(f"GRANT {SCHEMA}_curator TO er_drop_app")
        conn.execute(f"SELECT {SCHEMA}.grant_curation('b1', 'er_drop_app')")
        app_conn = psycopg.connect(host=conn.info.host, port=conn.info.port, user="er_drop_app",
                                   dbname=conn.info.dbname, autocommit=True)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app_conn.execute(f"SELECT {SCHEMA}.drop_bank('b1', false)")
        assert counts(conn, "b1") == {"Alice Smith": 1}
        app_conn.close()
    finally:
        conn.execute("DROP OWNED BY er_drop_app")
        conn.execute("DROP ROLE er_drop_app")


def test_cli_drop_bank_shows_the_counts_without_yes_and_then_history_and_undo_say_the_bank_is_gone(conn):
    write(conn, "team", ["Alice Smith", "Acme Corp"])
    a = conn.execute(f"SELECT id FROM {SCHEMA}.entities WHERE bank_id = 'team' AND canonical_name = 'Acme Corp'"
                     ).fetchone()[0]
    op = conn.execute(f"SELECT {SCHEMA}.rename_entity('team', %s, 'Acme')", (a,)).fetchone()[0]["operation_id"]
    dsn = f"host={conn.info.host} port={conn.info.port} user={conn.info.user} dbname={conn.info.dbname}"
    runner = CliRunner()
    shown = runner.invoke(app, ["drop-bank", "team", "--dsn", dsn])
    assert shown.exit_code == 0, shown.output
    assert "nothing was deleted" in shown.output and "1 facts" in shown.output and "2 entities" in shown.output
    assert counts(conn, "team")
    dropped = runner.invoke(app, ["drop-bank", "team", "--yes", "--json", "--dsn", dsn])
    assert dropped.exit_code == 0, dropped.output
    assert '"dry_run": false' in dropped.output and '"operations": 1' in dropped.output
    assert counts(conn, "team") == {}
    for args in (["history", "team"], ["undo", "team", str(op)], ["drop-bank", "team", "--yes"]):
        result = runner.invoke(app, args + ["--dsn", dsn])
        assert result.exit_code == 1, (args, result.output)
        assert "does not exist" in result.output and "undone" not in result.output


# -- uninstall -------------------------------------------------------------------------------

def test_uninstall_refuses_while_banks_hold_data_unless_told_to_drop_it(new_db):
    conn = new_db()
    install(conn)
    write(conn, "b1", ["Alice Smith"])
    dsn = f"host={conn.info.host} port={conn.info.port} user={conn.info.user} dbname={conn.info.dbname}"
    refused = CliRunner().invoke(app, ["uninstall", "--dsn", dsn])
    assert refused.exit_code == 3 and "1 facts and 1 entities" in refused.output and "--drop-data" in refused.output
    assert counts(conn, "b1") == {"Alice Smith": 1}
    done = CliRunner().invoke(app, ["uninstall", "--drop-data", "--dsn", dsn])
    assert done.exit_code == 0, done.output
    assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'entity_resolver%'").fetchone()[0] == 0
    with pytest.raises(InstallError, match="not installed"):
        uninstall(conn)
    install(conn)   # an empty installation goes without --drop-data
    assert uninstall(conn).facts == 0


def test_uninstall_of_an_extension_refuses_while_banks_hold_data(extension_files, new_db):
    conn = new_db()
    create_extension(conn)
    write(conn, "b1", ["Alice Smith"])
    with pytest.raises(InstallError, match="deletes them all"):
        uninstall(conn)
    assert counts(conn, "b1") == {"Alice Smith": 1}
    assert uninstall(conn, drop_data=True).method == "extension"
    assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'entity_resolver'").fetchone()[0] == 0
