"""entity_resolver as a PostgreSQL extension (CREATE EXTENSION), against the Python installer.

Both run one script (src/entity_resolver/build/), so they must leave the
same catalog: what differs is stated here, explicitly (the extension owns its
objects and marks the tenant tables and their sequence for pg_dump). Upgrades
(ALTER EXTENSION ... UPDATE from the released 0.1.0, the installer over a
0.1.0 installation) must equal a fresh install and keep the data; DROP
EXTENSION must leave nothing of ours; pg_dump / pg_restore must round-trip a
bank and let resolution continue.

The extension's files are this checkout's build: the ``extension_files``
fixture (tests/db/conftest.py) writes them into the server's share directory,
as ``make install-extension`` does, when a test here needs them.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest

from entity_resolver import build
from entity_resolver.install import InstallError, install, installed_version, migrations

from catalog import (INTERNAL, ROLES, SCHEMA, config_dump_marks, diff, extension_members, installed_objects,
                     snapshot)

VERSION = build.package_version()
RELEASED = Path(build.data_dir()) / "extension" / "released"

# Tables whose rows are the user's data (every one has a bank_id): marked for
# pg_dump, with the identity sequence of the queue. schema_migrations and
# plpython_modules are the installation's own rows, which CREATE EXTENSION writes.
TENANT_TABLES = ("bank_roles", "banks", "entities", "entity_aliases", "entity_cooccurrences", "entity_forwards",
                 "entity_judgements", "facts", "mentions", "operations", "reresolve_queue", "review_dismissals",
                 "stats_queue", "unit_entities")
# Rows only operators write (empty in a bank written through the resolver).
CORRECTION_TABLES = ("entity_aliases", "entity_forwards", "entity_judgements", "operations", "review_dismissals")
CONFIG_DUMPED = {f"{SCHEMA}.{t}" for t in TENANT_TABLES} | {
    f"{SCHEMA}.stats_queue_id_seq", f"{SCHEMA}.operations_id_seq", f"{SCHEMA}.facts_stored_order_seq"}


def create_extension(conn: psycopg.Connection, version: str | None = None) -> None:
    stmt = "CREATE EXTENSION entity_resolver CASCADE"
    if version:
        stmt = f"CREATE EXTENSION entity_resolver VERSION '{version}' CASCADE"
    conn.execute(stmt)


def extension_version(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'entity_resolver'").fetchone()
    return row[0] if row else None


def assert_same_catalog(a: psycopg.Connection, b: psycopg.Connection, names: tuple[str, str]) -> dict:
    left, right = snapshot(a), snapshot(b)
    # Not two empty catalogs: both hold a whole installation.
    for snap in (left, right):
        assert set(snap["schemas"]) == {SCHEMA, INTERNAL}
        assert len(snap["functions"]) > 30 and len(snap["policies"]) > 5 and snap["triggers"]
        assert set(snap["roles"]) == set(ROLES)
        assert len(snap["schema_migrations"]) == len(migrations())
    differences = diff(left, right, names)
    assert not differences, "catalogs differ:\n" + differences
    return left


# -- writing and reading a bank ----------------------------------------------------

def write_facts(conn: psycopg.Connection, bank_id: str, facts: list[list[str]]) -> None:
    """One INSERT of facts (the trigger resolves and links them), as an application writes them."""
    conn.execute(
        "INSERT INTO entity_resolver.facts (bank_id, content, mentions, event_date)"
        " SELECT %s, 'fact ' || f.ord, f.mentions, '2024-06-03 12:00+00'::timestamptz + f.ord * interval '1 hour'"
        " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS f (mentions, ord) ORDER BY f.ord",
        (bank_id, psycopg.types.json.Jsonb(facts)))


def entity_state(conn: psycopg.Connection) -> dict:
    """{(bank, name): (id, mention_count)}, {(bank, name, name) in name order: count} and the number of links."""
    entities = {(b, n): (str(i), c) for b, n, i, c in conn.execute(
        "SELECT bank_id, canonical_name, id, mention_count FROM entity_resolver.entities")}
    pairs = {(b, *sorted((n1, n2))): c for b, n1, n2, c in conn.execute(
        "SELECT c.bank_id, e1.canonical_name, e2.canonical_name, c.cooccurrence_count"
        " FROM entity_resolver.entity_cooccurrences c"
        " JOIN entity_resolver.entities e1 ON e1.bank_id = c.bank_id AND e1.id = c.entity_id_1"
        " JOIN entity_resolver.entities e2 ON e2.bank_id = c.bank_id AND e2.id = c.entity_id_2")}
    links = conn.execute("SELECT count(*) FROM entity_resolver.unit_entities").fetchone()[0]
    return {"entities": entities, "pairs": pairs, "links": links}


def tenant_rows(conn: psycopg.Connection) -> dict[str, list[str]]:
    """Every row of every table with a bank_id, as sorted JSON text."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'bank_id'"
        " WHERE c.relnamespace = 'entity_resolver'::regnamespace AND c.relkind = 'r' ORDER BY 1")]
    assert set(tables) == set(TENANT_TABLES)
    return {t: [r[0] for r in conn.execute(f"SELECT to_jsonb(t)::text FROM entity_resolver.{t} AS t ORDER BY 1")]
            for t in tables}


FACTS = [["Alice Smith", "Acme Corp"], ["Alice Smith", "Bob Jones"], ["Acme Corp", "Oslo"]]


def assert_resolution_continues(conn: psycopg.Connection, before: dict, bank_id: str = "b1") -> None:
    """Known names resolve to their ids; a new fact counts once more for each of its entities."""
    ids = before["entities"]
    row = conn.execute("SELECT entity_id, created FROM entity_resolver.resolve_mention(%s, 'Alice Smith')",
                       (bank_id,)).fetchone()
    assert (str(row[0]), row[1]) == (ids[(bank_id, "Alice Smith")][0], False)
    write_facts(conn, bank_id, [["Alice Smith", "Oslo", "Zephyr Labs"]])
    after = entity_state(conn)
    assert after["entities"][(bank_id, "Alice Smith")] == (ids[(bank_id, "Alice Smith")][0],
                                                           ids[(bank_id, "Alice Smith")][1] + 2)
    assert after["entities"][(bank_id, "Oslo")][1] == ids[(bank_id, "Oslo")][1] + 1
    assert after["entities"][(bank_id, "Zephyr Labs")][1] == 1
    assert after["pairs"][(bank_id, "Alice Smith", "Oslo")] == before["pairs"].get(
        (bank_id, "Alice Smith", "Oslo"), 0) + 1
    assert after["links"] == before["links"] + 3


# -- CREATE EXTENSION and the installer --------------------------------------------

def test_create_extension_gives_the_catalog_of_the_python_installer(extension_files, new_db):
    ext = new_db()
    create_extension(ext)
    inst = new_db()
    install(inst)
    assert_same_catalog(ext, inst, ("CREATE EXTENSION", "installer"))

    # What only the extension has: every object of ours is its member (and
    # nothing else is), and the tenant tables and their sequence are marked
    # for pg_dump.
    members = extension_members(ext)
    assert members == installed_objects(ext)
    assert {"schema entity_resolver", "schema entity_resolver_internal",
            "table entity_resolver.facts", "function entity_resolver.resolve_mention"
            "(text,text,text[],timestamp with time zone,boolean,jsonb)"} <= members
    assert config_dump_marks(ext) == {name: "" for name in CONFIG_DUMPED}
    assert extension_version(ext) == VERSION
    assert extension_version(inst) is None and extension_members(inst) == set()


def test_create_extension_requires_plpython_pg_trgm_and_btree_gin_and_puts_them_outside_our_schemas(
        extension_files, new_db):
    conn = new_db()
    create_extension(conn)
    rows = dict(conn.execute(
        "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname IN ('plpython3u', 'pg_trgm', 'btree_gin')").fetchall())
    assert rows == {"plpython3u": "pg_catalog", "pg_trgm": "public", "btree_gin": "public"}
    assert conn.execute(
        "SELECT count(*) FROM pg_proc WHERE proname = 'similarity'"
        " AND pronamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)"
    ).fetchone()[0] == 0


def test_create_extension_refuses_a_schema_another_role_created_first(extension_files, new_db):
    # Were the script's CREATE SCHEMA IF NOT EXISTS to take over a schema
    # someone else owns, its owner could replace our objects (plpython_modules
    # holds the code the resolver runs). PostgreSQL refuses it inside an
    # extension script: the reason pgspot's PS010 is suppressed (Makefile).
    conn = new_db()
    role = f"er_squatter_{uuid.uuid4().hex[:8]}"
    conn.execute(f"CREATE ROLE {role}")
    try:
        conn.execute(f"CREATE SCHEMA entity_resolver_internal AUTHORIZATION {role}")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="not a member of extension"):
            create_extension(conn)
        assert extension_version(conn) is None
    finally:
        conn.execute("DROP SCHEMA entity_resolver_internal")
        conn.execute(f"DROP ROLE {role}")


def test_installer_refuses_a_schema_another_role_created_first(new_db):
    conn = new_db()
    role = f"er_squatter_{uuid.uuid4().hex[:8]}"
    conn.execute(f"CREATE ROLE {role}")
    try:
        conn.execute(f"CREATE SCHEMA entity_resolver AUTHORIZATION {role}")
        with pytest.raises(InstallError, match=role):
            install(conn)
    finally:
        conn.execute("DROP SCHEMA IF EXISTS entity_resolver, entity_resolver_internal CASCADE")
        conn.execute(f"DROP ROLE {role}")


def test_installer_refuses_a_database_where_create_extension_installed_it(extension_files, new_db, pg_cluster):
    conn = new_db()
    create_extension(conn)
    before = snapshot(conn)
    with pytest.raises(InstallError, match="installed by CREATE EXTENSION: upgrade it with ALTER EXTENSION"):
        install(conn)
    assert snapshot(conn) == before
    dx = subprocess.run([str(pg_cluster.bindir / "psql"), "-X", "-A", "-t", "-d", pg_cluster.dsn(conn.info.dbname),
                         "-c", r"\dx entity_resolver"], check=True, capture_output=True, text=True).stdout
    assert dx.split("|")[:2] == ["entity_resolver", VERSION]


# -- upgrades ------------------------------------------------------------------------

def test_alter_extension_update_from_0_1_0_equals_a_fresh_create_extension_and_keeps_the_data(
        extension_files, new_db):
    old = new_db()
    create_extension(old, "0.1.0")
    assert extension_version(old) == "0.1.0"
    write_facts(old, "b1", FACTS)
    write_facts(old, "b2", [["Alice Smith"]])
    before = entity_state(old)
    assert before["entities"][("b1", "Alice Smith")][1] == 2

    old.execute("ALTER EXTENSION entity_resolver UPDATE")
    assert extension_version(old) == VERSION
    fresh = new_db()
    create_extension(fresh)
    assert_same_catalog(old, fresh, ("0.1.0 updated", "fresh"))
    assert extension_members(old) == extension_members(fresh)
    assert config_dump_marks(old) == config_dump_marks(fresh)

    assert entity_state(old) == before
    assert_resolution_continues(old, before)


def test_installer_upgrading_a_0_1_0_installation_equals_a_fresh_install_and_keeps_the_data(new_db):
    # 0.1.0's Python installer put pg_trgm into our schema and the internal
    # functions beside the API. Its objects are those of the released 0.1.0
    # script (the extension's), run here over the connection without what
    # only CREATE EXTENSION may run.
    old = new_db()
    old.execute("CREATE EXTENSION plpython3u")
    old.execute("CREATE SCHEMA entity_resolver")
    old.execute("CREATE EXTENSION pg_trgm WITH SCHEMA entity_resolver")
    text = (RELEASED / "entity_resolver--0.1.0.sql").read_text(encoding="utf-8")
    echo = '\\echo Use "CREATE EXTENSION entity_resolver" to load this file. \\quit\n'
    config_dump = text.rindex("\nDO $$\nDECLARE\n    t regclass;")
    assert echo in text and "pg_extension_config_dump" in text[config_dump:]
    with old.transaction():
        old.execute(text[:config_dump].replace(echo, "").encode())
    assert installed_version(old) == 6
    assert old.execute("SELECT to_regprocedure('entity_resolver._load_modules(text)')").fetchone()[0]
    write_facts(old, "b1", FACTS)
    before = entity_state(old)

    report = install(old)
    assert report.applied_migrations == [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    fresh = new_db()
    install(fresh)
    assert_same_catalog(old, fresh, ("0.1.0 upgraded", "fresh"))
    assert old.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_trgm'").fetchone()[0] == "public"
    assert entity_state(old) == before
    assert_resolution_continues(old, before)


# -- DROP EXTENSION ------------------------------------------------------------------

def test_drop_extension_leaves_nothing_of_ours_in_the_database(extension_files, new_db):
    conn = new_db()
    create_extension(conn)
    write_facts(conn, "b1", FACTS)
    trgm_acl_before = snapshot(conn)["trgm_schema"]["public"][0]

    conn.execute("DROP EXTENSION entity_resolver")

    assert installed_objects(conn) == set()
    assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'entity_resolver%'").fetchone()[0] == 0
    assert extension_version(conn) is None
    left = snapshot(conn)
    for category in ("schemas", "functions", "relations", "columns", "constraints", "indexes", "triggers",
                     "views", "policies", "sequences", "types"):
        assert left[category] == {}, category
    assert conn.execute("SELECT count(*) FROM pg_policy WHERE polname IN ('all_banks', 'bound_banks',"
                        " 'own_bindings')").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pg_init_privs i WHERE NOT EXISTS (SELECT 1 FROM pg_class c"
                        " WHERE i.classoid = 'pg_class'::regclass AND c.oid = i.objoid)"
                        " AND i.classoid = 'pg_class'::regclass").fetchone()[0] == 0
    # The extensions it required stay: the DBA may use them (DROP ... CASCADE
    # does not remove them either).
    assert {r[0] for r in conn.execute("SELECT extname FROM pg_extension")} >= {"plpython3u", "pg_trgm"}

    # What remains, as docs/security.md ("Removing an installation") says:
    # the roles, cluster-wide, and in this database their USAGE on pg_trgm's
    # schema, which DROP OWNED BY revokes; then nothing here holds them.
    assert set(left["roles"]) == set(ROLES)
    assert left["trgm_schema"]["public"][0] == trgm_acl_before
    granted = {a.split("=")[0] for a in trgm_acl_before}
    assert set(ROLES) <= granted
    assert holds_of_roles(conn) == {"schema public"}
    conn.execute("DROP OWNED BY entity_resolver_user, entity_resolver_bank_user, entity_resolver_curator")
    assert holds_of_roles(conn) == set()


def holds_of_roles(conn: psycopg.Connection) -> set[str]:
    """What in this database depends on the usage roles (privileges, ownership, policies)."""
    return {r[0] for r in conn.execute(
        "SELECT pg_describe_object(s.classid, s.objid, s.objsubid) FROM pg_shdepend s"
        " JOIN pg_database d ON d.oid = s.dbid AND d.datname = current_database()"
        " WHERE s.refclassid = 'pg_authid'::regclass"
        "   AND s.refobjid IN (SELECT oid FROM pg_roles WHERE rolname = ANY(%s))", (list(ROLES),))}


# -- pg_dump / pg_restore -------------------------------------------------------------

def dump_and_restore(pg_cluster, source: psycopg.Connection, target: psycopg.Connection,
                     tmp_path: Path) -> subprocess.CompletedProcess:
    """docs/operations.md's backup and restore of a whole database: pg_dump -Fc, then pg_restore."""
    dump = tmp_path / "app.dump"
    subprocess.run([str(pg_cluster.bindir / "pg_dump"), "--format=custom", f"--file={dump}",
                    pg_cluster.dsn(source.info.dbname)], check=True, capture_output=True, text=True)
    return subprocess.run([str(pg_cluster.bindir / "pg_restore"), f"--dbname={pg_cluster.dsn(target.info.dbname)}",
                           str(dump)], capture_output=True, text=True)


@pytest.fixture
def tenant_role(new_db):
    """A login role bound to a bank (a row of bank_roles); dropped afterwards."""
    name = f"er_tenant_{uuid.uuid4().hex[:8]}"
    admin = new_db()
    admin.execute(f"CREATE ROLE {name} LOGIN")
    yield name
    admin.execute(f"DROP ROLE {name}")


def test_dump_and_restore_round_trips_banks_written_through_the_functions(
        extension_files, new_db, pg_cluster, tmp_path, tenant_role):
    source = new_db()
    create_extension(source)
    # auto_reresolve: the units written are queued (reresolve_queue), and restored with the rest.
    source.execute("SELECT entity_resolver.configure_bank('b1', '{\"threshold\": 0.7, \"auto_reresolve\": true}')")
    ids = [r[0] for r in source.execute(
        "SELECT entity_id FROM entity_resolver.resolve_mentions('b1', '[\"Alice Smith\", \"Acme Corp\"]')"
        " ORDER BY ord")]
    source.execute("SELECT entity_resolver.link_unit('b1', %s, %s)", (uuid.uuid4(), ids))
    source.execute("SELECT entity_resolver.grant_bank_access('b1', %s)", (tenant_role,))
    # Statistics still queued at dump time (a scheduled flush_stats had not run).
    source.execute("SET entity_resolver.flush_at_commit = off")
    source.execute("SELECT * FROM entity_resolver.resolve_mentions('b1', '[\"Alice Smith\", \"Oslo\"]')")
    rows = tenant_rows(source)
    assert all(rows[t] for t in TENANT_TABLES if t not in ("facts",) + CORRECTION_TABLES)
    assert len(rows["stats_queue"]) == 2
    sequence = "SELECT last_value, is_called FROM entity_resolver.stats_queue_id_seq"

    target = new_db()
    restored = dump_and_restore(pg_cluster, source, target, tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert extension_version(target) == VERSION
    assert tenant_rows(target) == rows
    assert_same_catalog(target, source, ("restored", "dumped"))
    # Or the next write would be given the id of a restored queue row.
    assert target.execute(sequence).fetchone() == source.execute(sequence).fetchone()

    # Resolution continues where it stopped: the queue's next id is not one
    # the restored rows have, and the restored queue is applied by a flush.
    known = entity_state(source)["entities"]
    for conn in (source, target):
        conn.execute("SET entity_resolver.flush_at_commit = off")
        conn.execute("SELECT * FROM entity_resolver.resolve_mentions('b1', '[\"Alice Smith\", \"Bergen\"]')")
        conn.execute("SELECT * FROM entity_resolver.flush_stats()")
    after = {conn: entity_state(conn) for conn in (source, target)}
    counts = {conn: {k: count for k, (_, count) in state["entities"].items()} for conn, state in after.items()}
    assert counts[target] == counts[source]
    assert counts[target][("b1", "Alice Smith")] == 3 and counts[target][("b1", "Bergen")] == 1
    assert {k: after[target]["entities"][k][0] for k in known} == {k: v[0] for k, v in known.items()}
    assert after[target]["pairs"] == after[source]["pairs"]


def test_dump_and_restore_of_facts_keeps_the_counts(extension_files, new_db, pg_cluster, tmp_path):
    source = new_db()
    create_extension(source)
    write_facts(source, "b1", FACTS)
    write_facts(source, "b2", [["Alice Smith", "Bob Jones"]])
    rows = tenant_rows(source)
    before = entity_state(source)

    target = new_db()
    restored = dump_and_restore(pg_cluster, source, target, tmp_path)
    assert entity_state(target) == before
    assert tenant_rows(target) == rows
    assert restored.returncode == 0, restored.stderr
    assert_resolution_continues(target, before)
