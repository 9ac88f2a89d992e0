"""Least privilege and a hostile environment (docs/design.md §8, docs/security.md).

The installation creates a usage role holding exactly what the resolver
needs; every function runs as its caller with a pinned search_path, so objects
an unprivileged user plants in public, or temp tables named like ours, change
nothing. Roles are cluster-wide: each test makes its own (uuid names) and
drops them."""

from __future__ import annotations

import json
import re
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from entity_resolver.install import install
from shared import INTERNAL, SCHEMA, trgm_schema

REPO = Path(__file__).resolve().parents[2]

# What the usage roles may do, table by table (sql/grants.sql); anything else
# is refused. Column lists are the only UPDATE they get.
EXPECTED_TABLE_PRIVILEGES = {
    "banks": {"SELECT", "INSERT", "UPDATE(settings)", "UPDATE(entity_labels)"},
    # DELETE: the flush removes an entity nothing refers to (a restrictive
    # policy lets these roles delete no other).
    "entities": {"SELECT", "INSERT", "DELETE", "UPDATE(mention_count)", "UPDATE(first_seen)", "UPDATE(last_seen)",
                 "UPDATE(metadata)"},
    "unit_entities": {"SELECT", "INSERT", "DELETE"},
    "entity_cooccurrences": {"SELECT", "INSERT", "UPDATE(cooccurrence_count)", "UPDATE(last_cooccurred)"},
    "stats_queue": {"SELECT", "INSERT", "DELETE", "UPDATE(queued_at)"},
    "facts": {"SELECT", "INSERT", "DELETE", "UPDATE(content)", "UPDATE(fact_id)"},
    "mentions": {"SELECT", "INSERT", "DELETE"},
    "entity_aliases": {"SELECT"},
    "entity_forwards": {"SELECT"},
    "operations": {"SELECT"},
    "entity_judgements": {"SELECT"},
    "review_dismissals": {"SELECT"},
    "reresolve_queue": {"SELECT", "INSERT", "DELETE"},
    "plpython_modules": {"SELECT"},
    "name_variants": {"SELECT"},
    "org_suffixes": {"SELECT"},
    "schema_migrations": {"SELECT"},
    "entity_overview": {"SELECT"},
    "entity_neighbors": {"SELECT"},
    "entity_attributes": {"SELECT"},
}
# What the curator role adds to a role that uses a bank (sql/999_grants.sql):
# what the correction functions write, as their caller. Corrections are
# allowed per bank by the functions (grant_curation); see test_curation.py.
EXPECTED_CURATOR_PRIVILEGES = {
    "entities": {"UPDATE(canonical_name)", "UPDATE(curated)"},
    "mentions": {"UPDATE(entity_id)", "UPDATE(decision)", "UPDATE(score)", "UPDATE(decided_at)"},  # score: reresolve
    "entity_cooccurrences": {"DELETE"},
    "entity_aliases": {"INSERT", "DELETE", "UPDATE(entity_id)"},
    "entity_forwards": {"INSERT", "DELETE", "UPDATE(new_id)"},
    "operations": {"INSERT", "UPDATE(undone_at)", "UPDATE(undone_by)"},
    "entity_judgements": {"INSERT", "DELETE"},
    "review_dismissals": {"INSERT", "UPDATE(evidence)", "UPDATE(reason)", "UPDATE(dismissed_at)",
                          "UPDATE(dismissed_by)"},
    "bank_roles": {"SELECT"},
}
ADMIN_FUNCTIONS = {"_install_grants", "grant_bank_access", "revoke_bank_access", "grant_curation", "revoke_curation",
                   "_drop_curator_membership", "_create_group_role", "_grant_membership",
                   "_revoke_direct_membership", "drop_bank", "_check_administrator"}
# The installer's helpers: run by the install script only.
INSTALLER_FUNCTIONS = {"_install_render", "_install_execute", "_apply_migration"}


def usage_role(conn) -> str:
    return conn.execute("SELECT entity_resolver.usage_role()").fetchone()[0]


# -- functions: who they run as, where they look names up -------------------


def own_functions(conn, schema=SCHEMA):
    """Every function of the installation: its schema and its internal schema."""
    return conn.execute(
        """SELECT p.oid::regprocedure::text, p.proname, p.prosecdef, p.proconfig, l.lanname, p.prosrc
             FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
            WHERE p.pronamespace IN (%s::regnamespace, %s::regnamespace)""",
        (schema, schema + "_internal"),
    ).fetchall()


# Built-in and C functions: those declared LEAKPROOF (migration 0012) and
# each_key (unnest's C function with its own row estimate). They run no SQL
# and look up no names, so a search_path setting would protect nothing and
# cost a save and restore of it per call, per row of a probe.
NATIVE = {f"{INTERNAL}.folded(text)", f"{INTERNAL}.trgm_similar(text,text)",
          f"{INTERNAL}.trgm_strict_word_similar(text,text)", f"{INTERNAL}.each_key(text[])"}


def test_every_function_and_trigger_function_pins_search_path_with_pg_temp_last(conn):
    functions = own_functions(conn)
    assert len(functions) > 15
    native = {(signature, language, bool(config)) for signature, _, _, config, language, _ in functions
              if language in ("c", "internal")}
    assert {signature for signature, *_ in native} == NATIVE
    assert all(not config for *_, config in native)
    for signature, _, _, config, language, _ in functions:
        if signature in NATIVE:
            continue
        paths = [c for c in (config or []) if c.startswith("search_path=")]
        assert paths, f"{signature} does not pin search_path"
        entries = [e.strip() for e in paths[0].split("=", 1)[1].split(",")]
        assert entries == ["entity_resolver", "entity_resolver_internal", "pg_catalog", "pg_temp"], \
            (signature, entries)


def test_every_trigger_on_our_tables_runs_one_of_our_functions(conn):
    rows = conn.execute(
        """SELECT t.tgname, t.tgfoid::regprocedure::text, p.pronamespace::regnamespace::text
             FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
            WHERE t.tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'entity_resolver'::regnamespace)
              AND NOT t.tgisinternal"""
    ).fetchall()
    assert {r[0] for r in rows} >= {"facts_resolve_and_link", "stats_queue_flush_at_commit"}
    assert {r[2] for r in rows} == {INTERNAL}


def test_no_function_is_security_definer(conn):
    definers = [sig for sig, _, secdef, *_ in own_functions(conn) if secdef]
    assert definers == []


def test_dynamic_sql_is_built_only_with_format_quoting_in_reviewed_functions(conn):
    """EXECUTE appears only in the reviewed administration functions, always through format()."""
    for signature, name, _, _, language, source in own_functions(conn):
        if language != "plpgsql":
            continue
        # Strip comments and string literals, then look for the EXECUTE statement.
        code = re.sub(r"--[^\n]*", "", source)
        code = re.sub(r"'(?:[^']|'')*'", "''", code)
        executes = re.findall(r"\bEXECUTE\b\s*(\S+)", code, flags=re.IGNORECASE)
        if name in INSTALLER_FUNCTIONS:
            # The install script's own text, rendered for this database.
            assert executes in ([], ["_install_render(body);"]), (signature, executes)
        elif name not in ADMIN_FUNCTIONS:
            assert executes == [], f"{signature} runs dynamic SQL"
        else:
            assert all(e.lower().startswith("format(") for e in executes), (signature, executes)
    # In the grants, every value that does not come from the catalog goes
    # through %I or %L; %s only ever takes regclass/regprocedure, a constant
    # privilege list or a list of already-quoted roles.
    grants = (REPO / "sql" / "999_grants.sql").read_text()
    for fmt in re.findall(r"format\(\s*'((?:[^']|'')*)'", grants):
        assert set(re.findall(r"%(.)", fmt)) <= {"I", "L", "s"}, fmt


# -- the usage role: exactly what is needed ---------------------------------

def granted(conn, role: str) -> dict[str, set[str]]:
    """Table and column privileges of ``role`` (directly granted) in the schema."""
    out: dict[str, set[str]] = {}
    for table, privilege in conn.execute(
        """SELECT c.relname, a.privilege_type
             FROM pg_class c, aclexplode(c.relacl) a
            WHERE c.relnamespace = 'entity_resolver'::regnamespace AND a.grantee = %s::regrole""",
        (role,),
    ):
        out.setdefault(table, set()).add(privilege)
    for table, column, privilege in conn.execute(
        """SELECT c.relname, att.attname, a.privilege_type
             FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid AND att.attnum > 0,
                  aclexplode(att.attacl) a
            WHERE c.relnamespace = 'entity_resolver'::regnamespace AND a.grantee = %s::regrole""",
        (role,),
    ):
        out.setdefault(table, set()).add(f"{privilege}({column})")
    return out


def test_install_creates_the_usage_role_named_after_the_schema(conn):
    assert usage_role(conn) == "entity_resolver_user"
    assert conn.execute("SELECT entity_resolver.bank_user_role()").fetchone()[0] == "entity_resolver_bank_user"
    assert conn.execute("SELECT entity_resolver.curator_role()").fetchone()[0] == "entity_resolver_curator"
    rows = conn.execute(
        "SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles"
        " WHERE rolname IN ('entity_resolver_user', 'entity_resolver_bank_user', 'entity_resolver_curator')"
        " ORDER BY 1").fetchall()
    assert rows == [("entity_resolver_bank_user", False, False, False, False, False),
                    ("entity_resolver_curator", False, False, False, False, False),
                    ("entity_resolver_user", False, False, False, False, False)]


def test_usage_roles_hold_exactly_the_listed_table_privileges(conn):
    for role in ("entity_resolver_user", "entity_resolver_bank_user"):
        got = granted(conn, role)
        expected = dict(EXPECTED_TABLE_PRIVILEGES)
        if role == "entity_resolver_bank_user":
            expected["bank_roles"] = {"SELECT"}     # its own bindings (row-level security)
        assert got == expected, role


def test_the_curator_role_holds_exactly_what_corrections_write(conn):
    assert granted(conn, "entity_resolver_curator") == EXPECTED_CURATOR_PRIVILEGES


def test_every_table_of_the_schema_is_in_the_privilege_list(conn):
    """A new table must be given its privileges deliberately (sql/grants.sql)."""
    tables = {r[0] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'entity_resolver'::regnamespace"
        " AND relkind IN ('r', 'p', 'v', 'm')")}
    assert tables == set(EXPECTED_TABLE_PRIVILEGES) | {"bank_roles"}


def test_public_has_no_privilege_on_the_schema_or_its_objects(conn):
    public_acl = conn.execute(
        """SELECT count(*) FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
            WHERE n.nspname IN ('entity_resolver', 'entity_resolver_internal') AND a.grantee = 0""").fetchone()[0]
    assert public_acl == 0
    public_execute = conn.execute(
        """SELECT array_agg(p.oid::regprocedure::text) FROM pg_proc p,
                  aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
            WHERE p.pronamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)
              AND a.grantee = 0""").fetchone()[0]
    assert public_execute is None


def test_administration_functions_are_not_executable_by_the_usage_roles(conn):
    for fn in ADMIN_FUNCTIONS | INSTALLER_FUNCTIONS:
        for role in ("entity_resolver_user", "entity_resolver_bank_user"):
            allowed = conn.execute(
                "SELECT bool_or(has_function_privilege(%s, p.oid, 'EXECUTE')) FROM pg_proc p"
                " WHERE p.pronamespace IN ('entity_resolver'::regnamespace,"
                " 'entity_resolver_internal'::regnamespace) AND p.proname = %s",
                (role, fn)).fetchone()[0]
            assert allowed is False, (fn, role)


def test_a_member_of_the_usage_role_can_use_every_interface(conn, roles, connect_as):
    app = connect_as(roles(usage_role(conn)))
    er = "entity_resolver"
    created = app.execute(f"SELECT * FROM {er}.resolve_mentions('team', %s)",
                          (json.dumps(["Alex Morgan", "Acme", "renewal"]),)).fetchall()
    assert [r[4] for r in created] == [True, True, True]
    assert app.execute(f"SELECT entity_id FROM {er}.resolve_mention('team', 'alex morgan')").fetchone()[0] \
        == created[0][2]
    assert app.execute(f"SELECT count(*) FROM {er}.explain_mention('team', 'Alex')").fetchone()[0] >= 1
    app.execute(f"SELECT {er}.configure_bank('team', '{{\"threshold\": 0.65}}')")
    app.execute(f"SELECT {er}.set_entity_labels('team', %s)", (json.dumps(
        {"attributes": [{"key": "person", "type": "value", "values": [{"value": "sarah-chen"}]}]}),))
    assert "person" in json.dumps(app.execute(f"SELECT {er}.entity_labels_json_schema('team')").fetchone()[0])
    ids = app.execute(
        f"INSERT INTO {er}.facts (bank_id, content, mentions) VALUES"
        " ('team', 'one', '[\"Alex Morgan\", \"Acme\"]'), ('team', 'two', '[\"Acme\", \"person:sarah-chen\"]')"
        " RETURNING id").fetchall()
    unit = uuid.uuid4()
    assert app.execute(f"SELECT {er}.link_unit('team', %s, %s)",
                       (unit, [created[0][2], created[2][2]])).fetchone()[0] == 2
    app.execute(f"SELECT * FROM {er}.flush_stats()")
    app.execute(f"SELECT * FROM {er}.flush_stats('team')")
    assert app.execute(f"SELECT count(*) FROM {er}.expand_units('team', %s)", ([ids[0][0]],)).fetchone()[0] >= 1
    assert app.execute(f"SELECT count(*) FROM {er}.entity_facts('team', %s)", (created[1][2],)).fetchone()[0] == 3
    assert len(app.execute(f"SELECT {er}.entity_graph('team')").fetchone()[0]["nodes"]) >= 3
    overview = dict(app.execute(f"SELECT name, mention_count FROM {er}.entity_overview").fetchall())
    assert overview["Acme"] == 3
    assert app.execute(f"SELECT count(*) FROM {er}.entity_neighbors").fetchone()[0] > 0
    app.execute(f"UPDATE {er}.facts SET content = 'corrected' WHERE id = %s", (ids[1][0],))
    app.execute(f"UPDATE {er}.entities SET metadata = '{{\"note\": 1}}' WHERE canonical_name = 'Acme'")
    app.execute(f"DELETE FROM {er}.facts WHERE id = %s", (ids[1][0],))
    # With statistics left to a scheduled flush, as a worker would run it.
    app.execute("SET entity_resolver.flush_at_commit = off")
    app.execute(f"INSERT INTO {er}.facts (bank_id, mentions) VALUES ('team', '[\"Acme\", \"Oslo\"]')")
    assert app.execute(f"SELECT count(*) FROM {er}.stats_queue").fetchone()[0] > 0
    app.execute(f"SELECT * FROM {er}.flush_stats()")
    assert app.execute(f"SELECT count(*) FROM {er}.stats_queue").fetchone()[0] == 0


@pytest.mark.parametrize("statement", [
    "UPDATE entity_resolver.plpython_modules SET source = 'import os'",
    "INSERT INTO entity_resolver.plpython_modules VALUES ('evil', 99, 'x', 'x')",
    "CREATE TABLE entity_resolver.mine (x int)",
    "CREATE FUNCTION entity_resolver.lower(text) RETURNS text LANGUAGE sql AS 'SELECT $1'",
    "TRUNCATE entity_resolver.facts",
    "UPDATE entity_resolver.entities SET canonical_name = 'x'",
    "UPDATE entity_resolver.entities SET bank_id = 'other'",
    "UPDATE entity_resolver.facts SET bank_id = 'other'",
    "DELETE FROM entity_resolver.banks",
    "INSERT INTO entity_resolver.schema_migrations (version, name, checksum) VALUES (99, 'x', 'x')",
    "INSERT INTO entity_resolver.bank_roles (bank_id, role_name) VALUES ('x', current_user)",
    "SELECT entity_resolver.grant_bank_access('x', current_user)",
    "SELECT entity_resolver_internal._install_grants()",
    "ALTER TABLE entity_resolver.entities DISABLE ROW LEVEL SECURITY",
    "DROP POLICY all_banks ON entity_resolver.entities",
    "CREATE OR REPLACE FUNCTION entity_resolver_internal._load_modules(text) RETURNS void LANGUAGE sql AS ''",
    "CREATE FUNCTION entity_resolver_internal.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'",
])
def test_the_usage_role_cannot_change_code_schema_or_history(conn, roles, connect_as, statement):
    app = connect_as(roles(usage_role(conn)))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute(statement)


def test_a_role_without_the_usage_role_can_use_nothing(conn, roles, connect_as):
    stranger = connect_as(roles())
    for statement in ("SELECT * FROM entity_resolver.resolve_mention('team', 'Alex')",
                      "SELECT count(*) FROM entity_resolver.entities",
                      "INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES ('team', '[\"x\"]')"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            stranger.execute(statement)
    assert conn.execute("SELECT count(*) FROM entity_resolver.banks").fetchone()[0] == 0


def test_reinstalling_keeps_roles_and_privileges_identical(conn):
    before = {r: granted(conn, r) for r in ("entity_resolver_user", "entity_resolver_bank_user",
                                            "entity_resolver_curator")}
    policies = conn.execute(
        "SELECT polrelid::regclass::text, polname, oid FROM pg_policy ORDER BY 1, 2").fetchall()
    install(conn)
    install(conn)
    assert {r: granted(conn, r) for r in before} == before
    # Unchanged policies are not replaced (no lock on the tables at reinstall).
    assert conn.execute(
        "SELECT polrelid::regclass::text, polname, oid FROM pg_policy ORDER BY 1, 2").fetchall() == policies


def test_reinstalling_revokes_privileges_granted_by_hand(conn):
    conn.execute("GRANT DELETE, TRUNCATE ON entity_resolver.entities TO entity_resolver_user")
    conn.execute("GRANT EXECUTE ON FUNCTION entity_resolver.grant_bank_access(text, name) TO PUBLIC")
    install(conn)
    assert granted(conn, "entity_resolver_user")["entities"] == EXPECTED_TABLE_PRIVILEGES["entities"]
    assert conn.execute(
        "SELECT has_function_privilege('entity_resolver_user',"
        " 'entity_resolver.grant_bank_access(text, name)', 'EXECUTE')").fetchone()[0] is False


def test_installing_needs_a_superuser_and_says_so(empty_db, roles):
    owner = roles()
    admin = empty_db()
    dbname = admin.info.dbname
    admin.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(dbname), sql.Identifier(owner)))
    try:
        with psycopg.connect(host=admin.info.host, port=admin.info.port, user=owner, dbname=dbname,
                             autocommit=True) as conn:
            with pytest.raises(Exception) as failure:
                install(conn)
        assert "superuser" in str(failure.value)
        # With the extensions created by a superuser, it is the functions
        # (plpython3u is untrusted) that still need one.
        admin.execute("CREATE EXTENSION plpython3u")
        admin.execute("CREATE EXTENSION pg_trgm")
        with psycopg.connect(host=admin.info.host, port=admin.info.port, user=owner, dbname=dbname,
                             autocommit=True) as conn:
            with pytest.raises(Exception) as failure:
                install(conn)
        assert "plpython3u" in str(failure.value)
    finally:
        admin.execute(sql.SQL("ALTER DATABASE {} OWNER TO postgres").format(sql.Identifier(dbname)))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(owner)))


def test_two_schemas_get_two_usage_roles_and_neither_reaches_the_other(empty_db, roles):
    admin = empty_db()
    suffix = uuid.uuid4().hex[:8]
    schemas = [f"er_a_{suffix}", f"er_b_{suffix}"]
    try:
        for s in schemas:
            install(admin, s)
        names = [admin.execute(sql.SQL("SELECT {}.usage_role()").format(sql.Identifier(s))).fetchone()[0]
                 for s in schemas]
        assert names == [f"{s}_user" for s in schemas]
        user_a = roles(names[0])
        with psycopg.connect(host=admin.info.host, port=admin.info.port, user=user_a,
                             dbname=admin.info.dbname, autocommit=True) as a:
            a.execute(sql.SQL("SELECT * FROM {}.resolve_mention('team', 'Alex')").format(sql.Identifier(schemas[0])))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                a.execute(sql.SQL("SELECT * FROM {}.resolve_mention('team', 'Alex')").format(
                    sql.Identifier(schemas[1])))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(user_a)))
    finally:
        _drop_installation_roles(admin, schemas)


def test_an_awkward_schema_name_gets_a_working_role(empty_db, roles):
    """Quotes, spaces and a name too long for '<schema>_user' (63 bytes) still work."""
    admin = empty_db()
    schemas = [f"o'brien \"er\" {uuid.uuid4().hex[:6]}", "é" * 28 + uuid.uuid4().hex[:6]]
    try:
        for schema in schemas:
            install(admin, schema)
            role = admin.execute(sql.SQL("SELECT {}.usage_role()").format(sql.Identifier(schema))).fetchone()[0]
            assert len(role.encode()) <= 63
            user = roles(role)
            with psycopg.connect(host=admin.info.host, port=admin.info.port, user=user,
                                 dbname=admin.info.dbname, autocommit=True) as c:
                row = c.execute(sql.SQL("SELECT created FROM {}.resolve_mention('b', 'Zoë')").format(
                    sql.Identifier(schema))).fetchone()
                assert row == (True,)
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(user)))
    finally:
        _drop_installation_roles(admin, schemas)


def _drop_installation_roles(admin, schemas):
    for schema in schemas:
        try:
            names = admin.execute(sql.SQL("SELECT {0}.usage_role(), {0}.bank_user_role(), {0}.curator_role()").format(
                sql.Identifier(schema))).fetchone()
        except psycopg.Error:
            continue
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        for name in names:
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


# -- a hostile environment ---------------------------------------------------

# Look-alikes an unprivileged user could plant in public, for every function
# and operator the resolver uses, with signatures that would win overload
# resolution against pg_catalog's if public were searched first (varchar,
# unknown-friendly text variants). Each logs its call before lying.
HOSTILE_FUNCTIONS = [
    ("lower", "varchar"), ("lower", "text, text"), ("upper", "varchar"), ("btrim", "varchar"),
    ("similarity", "varchar, varchar"), ("similarity", "text, text"), ("word_similarity", "text, text"),
    ("char_length", "varchar"), ("length", "varchar"), ("regexp_replace", "varchar, varchar, varchar"),
    ("format", "varchar"), ("quote_literal", "varchar"), ("set_config", "varchar, varchar, boolean"),
    ("current_setting", "varchar, boolean"), ("jsonb_typeof", "json"), ("gen_random_uuid", "integer"),
    ("pg_current_xact_id", "integer"), ("array_position", "text[], text"), ("cardinality", "text[]"),
    ("unnest", "text[]"), ("now", "integer"), ("show_limit", ""), ("set_limit", "real"),
    ("extract", "text, text"), ("date_part", "text, text"), ("pg_has_role", "varchar, text"),
]
HOSTILE_OPERATORS = [("%", "text", "text"), ("=", "text", "varchar"), ("<>", "uuid", "text"),
                     ("%", "varchar", "varchar"), ("=", "uuid", "text"), ("<", "uuid", "text")]


def plant(m: psycopg.Connection) -> None:
    """As an unprivileged user with CREATE on public: look-alikes of everything
    the resolver calls, each logging its call (those pg_trgm already defines
    in public, when it lives there, cannot be created and are skipped)."""
    m.execute("CREATE TABLE public.pwned (what text, at timestamptz DEFAULT clock_timestamp())")
    m.execute("GRANT INSERT, SELECT ON public.pwned TO PUBLIC")
    m.execute(
        "CREATE FUNCTION public.pwn(what text) RETURNS boolean LANGUAGE sql VOLATILE AS"
        " $$ INSERT INTO public.pwned (what) VALUES (what) RETURNING true $$")
    statements = []
    for name, args in HOSTILE_FUNCTIONS:
        params = ", ".join(f"a{i} {t.strip()}" for i, t in enumerate(args.split(","))) if args else ""
        statements.append(
            f"CREATE FUNCTION public.{name}({params}) RETURNS text LANGUAGE sql VOLATILE AS"
            f" $$ SELECT CASE WHEN public.pwn('{name}({args})') THEN 'pwned' END $$")
    for op, left, right in HOSTILE_OPERATORS:
        fn = f"op_{abs(hash((op, left, right)))}"
        statements.append(
            f"CREATE FUNCTION public.{fn}(a {left}, b {right}) RETURNS boolean LANGUAGE sql VOLATILE AS"
            f" $$ SELECT public.pwn('operator {op}({left}, {right})') $$")
        statements.append(
            f"CREATE OPERATOR public.{op} (LEFTARG = {left}, RIGHTARG = {right}, FUNCTION = public.{fn})")
    for statement in statements:
        try:
            with m.transaction():
                m.execute(statement)
        except (psycopg.errors.DuplicateFunction, psycopg.errors.DuplicateObject,
                psycopg.errors.InvalidFunctionDefinition):
            pass


@pytest.fixture
def hostile(conn, roles, connect_as):
    """An unprivileged user who may create in public (as in PostgreSQL 14 and
    older) plants look-alikes of everything the resolver calls."""
    mallory = roles()
    conn.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(sql.Identifier(mallory)))
    m = connect_as(mallory)
    plant(m)
    return m


def pwned(conn) -> list:
    return conn.execute("SELECT what FROM public.pwned ORDER BY at").fetchall()


def run_workload(c) -> list:
    """Every entry point once; returns what a caller sees (ids replaced by names)."""
    er = "entity_resolver"
    out = []
    c.execute(f"SELECT {er}.configure_bank('hostile', '{{\"threshold\": 0.6}}')")
    c.execute(f"SELECT {er}.set_entity_labels('hostile', %s)", (json.dumps(
        {"attributes": [{"key": "topic", "type": "text"}]}),))
    c.execute(f"INSERT INTO {er}.facts (bank_id, mentions, event_date) VALUES"
              " ('hostile', '[\"Alex Morgan\", \"Acme Corp\", \"topic:renewal\"]', '2024-05-01'),"
              " ('hostile', '[\"Alex Kim\", \"React\", \"Sprint 14\"]', '2024-05-02')")
    out += c.execute(f"SELECT mention, canonical_name, created, round(score::numeric, 6)"
                     f" FROM {er}.resolve_mentions('hostile', %s, '2024-05-03')",
                     (json.dumps(["alex morgan", "ACME corp", "Alex", "Acme Corporation", "topic:renewal"]),)
                     ).fetchall()
    out += c.execute(f"SELECT canonical_name, created FROM {er}.resolve_mention("
                     "'hostile', 'Alex', ARRAY['React', 'Sprint 14'], '2024-05-03')").fetchall()
    out += c.execute(f"SELECT canonical_name, round(trigram_similarity::numeric, 6), tokens_compatible,"
                     f" round(score::numeric, 6), decision FROM {er}.explain_mention("
                     "'hostile', 'Alex', ARRAY['Acme Corp'], '2024-05-03') ORDER BY 1").fetchall()
    out += c.execute(f"SELECT * FROM {er}.flush_stats('hostile')").fetchall()
    facts = [r[0] for r in c.execute(f"SELECT id FROM {er}.facts WHERE bank_id = 'hostile' ORDER BY event_date")]
    out += c.execute(f"SELECT shared_entities FROM {er}.expand_units('hostile', %s)", (facts[:1],)).fetchall()
    out += c.execute(f"SELECT name, kind, mention_count, degree FROM {er}.entity_overview"
                     " WHERE bank_id = 'hostile' ORDER BY name").fetchall()
    out += c.execute(f"SELECT entity_name, neighbor_name, cooccurrence_count FROM {er}.entity_neighbors"
                     " WHERE bank_id = 'hostile' ORDER BY 1, 2").fetchall()
    out.append(c.execute(f"SELECT {er}.entity_labels_json_schema('hostile')::text").fetchone())
    return out


def test_objects_planted_in_public_change_no_result_and_are_never_called(conn, connect, hostile, roles, connect_as):
    baseline = run_workload(connect())
    conn.execute("DELETE FROM entity_resolver.banks WHERE bank_id = 'hostile'")
    conn.execute("DELETE FROM entity_resolver.facts WHERE bank_id = 'hostile'")
    # The bait works: a query that searches public first does call it.
    probe = connect()
    probe.execute("SET search_path = public, entity_resolver")
    probe.execute("SELECT 'abc'::text = 'abd'::varchar")
    assert pwned(conn) == [("operator =(text, varchar)",)]
    conn.execute("DELETE FROM public.pwned")
    # Victims: a superuser and a member of the usage role, public first.
    for victim in (connect(), connect_as(roles(usage_role(conn)))):
        victim.execute("SET search_path = public, \"$user\", entity_resolver")
        assert run_workload(victim) == baseline
        assert pwned(conn) == []
        conn.execute("DELETE FROM entity_resolver.banks WHERE bank_id = 'hostile'")
        conn.execute("DELETE FROM entity_resolver.facts WHERE bank_id = 'hostile'")


def test_temp_tables_named_like_ours_are_never_read_or_written(conn, roles, connect_as):
    """pg_temp is searched last: a session's own temp tables cannot stand in for
    the resolver's (nor smuggle Python code in as plpython_modules)."""
    app = connect_as(roles(usage_role(conn)))
    app.execute("CREATE TEMP TABLE plpython_modules (name text, ordinal int, source text, sha256 text)")
    app.execute("INSERT INTO plpython_modules VALUES ('resolver', 0, 'raise Exception(\"smuggled\")', '')")
    for table in ("banks", "entities", "stats_queue", "entity_cooccurrences", "unit_entities"):
        app.execute(f"CREATE TEMP TABLE {table} (LIKE entity_resolver.{table})")
    app.execute("SET search_path = pg_temp, entity_resolver, public")
    row = app.execute("SELECT created FROM entity_resolver.resolve_mention('team', 'Alex Morgan')").fetchone()
    assert row == (True,)
    app.execute("INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES ('team', '[\"Alex\", \"Acme\"]')")
    app.execute("SELECT * FROM entity_resolver.flush_stats()")
    for table in ("banks", "entities", "stats_queue", "entity_cooccurrences", "unit_entities"):
        assert app.execute(f"SELECT count(*) FROM pg_temp.{table}").fetchone()[0] == 0, table
    names = {r[0] for r in conn.execute("SELECT canonical_name FROM entity_resolver.entities")}
    assert {"Alex Morgan", "Acme"} <= names


def test_hostile_text_is_stored_literally(conn):
    names = ["'; DROP TABLE entity_resolver.entities; --", "Robert'); DELETE FROM banks;--",
             "$$; SELECT pg_sleep(10); $$", "%I %L %s", "\\x00\\'", "{{ schema }}", "@trgm@",
             "שלום עולם", "مرحبا", "e\u0301\u200d\U0001F469\u200d\U0001F4BB", "\u202eevil\u202c",
             "\t\x01\x1f\x7f control"]
    rows = conn.execute("SELECT mention, canonical_name FROM entity_resolver.resolve_mentions('odd', %s)",
                        (json.dumps([{"text": n, "resolve": False} for n in names]),)).fetchall()
    assert rows == [(n, n) for n in names]
    stored = {r[0] for r in conn.execute("SELECT canonical_name FROM entity_resolver.entities")}
    assert stored == set(names)


def group_roles(schema):
    """The installation's three roles, for a schema name short enough to keep them readable (999_grants.sql)."""
    return [f"{schema}_{suffix}" for suffix in ("user", "bank_user", "curator")]


def test_installs_racing_in_two_databases_both_create_or_reuse_the_roles(pg_cluster):
    """Roles are cluster-wide: two databases installing the same new schema at
    once must not fail on the role the other is creating."""
    schema = f"er_race_{uuid.uuid4().hex[:8]}"
    dbs = [f"race_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
        for db in dbs:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run(db):
        try:
            with psycopg.connect(pg_cluster.dsn(db), autocommit=True) as c:
                barrier.wait()
                install(c, schema)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(db,)) for db in dbs]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
    finally:
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
            for db in dbs:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
            for role in group_roles(schema):
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_a_role_another_database_is_creating_is_refused_without_waiting_then_usable(conn, pg_cluster, new_db):
    """One interleaving of the race above, made certain: the other database has
    created the role and not committed. Ours does not wait (the installer holds
    its tables' locks by then, and a session waiting for them could be the one
    it waits for): it is refused, lock_not_available, naming the role, and
    nothing is left behind. Once the other commits, the next attempt grants to
    the role in the same transaction. (The narrower window, a commit seen before
    its cache invalidations arrive, is left to the test above.)"""
    role = f"er_wait_{uuid.uuid4().hex[:8]}"
    grant = sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), sql.Identifier(role))
    other = new_db()
    other.autocommit = False
    try:
        other.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
        with psycopg.connect(pg_cluster.dsn(conn.info.dbname)) as ours:
            with pytest.raises(psycopg.errors.LockNotAvailable, match=f"role {role} is being created"):
                with ours.transaction():
                    ours.execute(f"SELECT {INTERNAL}._create_group_role(%s, 'race')", (role,))
            other.commit()
            with ours.transaction():
                ours.execute(f"SELECT {INTERNAL}._create_group_role(%s, 'race')", (role,))
                ours.execute(grant)
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (role,)).fetchone()[0] == 1
    finally:
        other.rollback()
        conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM {}").format(sql.Identifier(SCHEMA), sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_an_install_meeting_a_role_being_created_tries_again_and_succeeds(pg_cluster, new_db):
    """The installer itself: while another session holds its uncommitted CREATE ROLE of
    one of the installation's roles, an install is refused that attempt, rolls back
    and tries again; once the other commits, it reuses the role."""
    schema = f"er_busy_{uuid.uuid4().hex[:8]}"
    other = new_db()
    other.autocommit = False
    target = new_db()
    done: list[BaseException | None] = []
    try:
        other.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(f"{schema}_user")))

        def run():
            try:
                install(target, schema)
                done.append(None)
            except BaseException as exc:  # noqa: BLE001 - reported below
                done.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(5)
        assert thread.is_alive() and done == [], done   # still trying, nothing installed yet
        other.commit()
        thread.join(120)
        assert done == [None]
        assert target.execute("SELECT count(*) FROM pg_roles WHERE rolname = ANY(%s)",
                              (group_roles(schema),)).fetchone()[0] == 3
    finally:
        other.rollback()
        target.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        target.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(f"{schema}_internal")))
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
            for role in group_roles(schema):
                if target.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    target.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_pg_trgm_living_in_public_with_hostile_neighbours_changes_nothing(empty_db):
    """The common setup where pg_trgm was installed into public before us:
    the resolver then calls public.similarity and OPERATOR(public.%), next to
    whatever an unprivileged user planted there."""
    admin = empty_db()
    admin.execute("CREATE EXTENSION pg_trgm")                 # into public
    install(admin)
    assert trgm_schema(admin) == "public"
    suffix = uuid.uuid4().hex[:8]
    app, mallory = f"er_app_{suffix}", f"er_mallory_{suffix}"
    for role in (app, mallory):
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    admin.execute(sql.SQL("GRANT entity_resolver_user TO {}").format(sql.Identifier(app)))
    admin.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(sql.Identifier(mallory)))
    info = dict(host=admin.info.host, port=admin.info.port, dbname=admin.info.dbname, autocommit=True)
    try:
        with psycopg.connect(**info, user=app) as a:
            baseline = run_workload(a)
        admin.execute("DELETE FROM entity_resolver.facts")
        admin.execute("DELETE FROM entity_resolver.banks")
        with psycopg.connect(**info, user=mallory) as m:
            plant(m)
        with psycopg.connect(**info, user=app) as a:
            a.execute("SET search_path = public, \"$user\"")
            assert run_workload(a) == baseline
        assert pwned(admin) == []
    finally:
        for role in (app, mallory):
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
