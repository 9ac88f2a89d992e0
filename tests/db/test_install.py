"""Installing entity_resolver over a plain connection."""

from __future__ import annotations

import sys
import warnings

import psycopg
import pytest

from entity_resolver.install import InstallError, LocaleWarning, install, installed_version, migrations

TABLES = {"banks", "entities", "unit_entities", "entity_cooccurrences", "facts"}


def columns(conn, schema, table):
    return {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND attnum > 0"
            " AND NOT attisdropped",
            (schema, table),
        )
    }


def catalog_snapshot(conn, schema):
    """Everything an installation defines, as comparable text."""
    rows = conn.execute(
        """
        SELECT 'rel ' || c.relname || ' ' || c.relkind::text
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = %(s)s
        UNION ALL
        SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
               || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE n.nspname = %(s)s AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'con ' || conrelid::regclass::text || ' ' || pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = %(s)s::regnamespace
        UNION ALL
        SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname = %(s)s
        UNION ALL
        SELECT 'fn ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) || ' '
               || coalesce(array_to_string(p.proconfig, ','), '')
          FROM pg_proc p WHERE p.pronamespace = %(s)s::regnamespace
        UNION ALL
        SELECT 'comment ' || coalesce(obj_description(c.oid, 'pg_class'), '<none>') || ' on ' || c.relname
          FROM pg_class c WHERE c.relnamespace = %(s)s::regnamespace AND c.relkind IN ('r', 'v')
        ORDER BY 1
        """,
        {"s": schema},
    ).fetchall()
    return [r[0] for r in rows]


def test_install_creates_the_spec_tables_with_their_columns(empty_db):
    conn = empty_db()
    report = install(conn)
    assert report.version == len(migrations())
    names = {r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'entity_resolver'")}
    assert TABLES <= names
    assert columns(conn, "entity_resolver", "entities") == {
        "bank_id": "text", "id": "uuid", "canonical_name": "text", "entity_kind": "text",
        "mention_count": "bigint", "first_seen": "timestamp with time zone",
        "last_seen": "timestamp with time zone", "metadata": "jsonb",
        "curated": "boolean", "entity_type": "text", "homonym": "uuid",
    }
    assert set(columns(conn, "entity_resolver", "mentions")) == {
        "bank_id", "unit_id", "ordinal", "mention", "entity_id", "decision", "score", "event_date", "decided_at",
        "attributes"}
    assert set(columns(conn, "entity_resolver", "entity_cooccurrences")) == {
        "bank_id", "entity_id_1", "entity_id_2", "cooccurrence_count", "last_cooccurred"}
    assert {"bank_id", "unit_id", "entity_id"} <= set(columns(conn, "entity_resolver", "unit_entities"))
    assert {"bank_id", "settings", "entity_labels"} <= set(columns(conn, "entity_resolver", "banks"))


def test_every_primary_key_includes_bank_id(empty_db):
    conn = empty_db()
    install(conn)
    rows = conn.execute(
        """SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint
            WHERE connamespace = 'entity_resolver'::regnamespace AND contype IN ('p', 'u')
              AND conrelid::regclass::text NOT LIKE '%%plpython_modules'
              AND conrelid::regclass::text NOT LIKE '%%schema_migrations'
              -- installation data, read by every bank (no tenant data)
              AND conrelid::regclass::text NOT LIKE '%%name_variants'
              AND conrelid::regclass::text NOT LIKE '%%org_suffixes'"""
    ).fetchall()
    assert rows
    for table, definition in rows:
        assert "bank_id" in definition, (table, definition)


def test_unique_lower_name_pair_check_and_trigram_index_exist(empty_db):
    conn = empty_db()
    install(conn)
    indexes = {r[0]: r[1] for r in conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'entity_resolver'")}
    unique = [d for d in indexes.values() if "UNIQUE" in d and "(canonical_name)" in d]
    # one name per bank and type (an untyped entity is its own type), after
    # folded() (lower() itself, LEAKPROOF: migration 0013), which also serves
    # every look-up by name; a homonym (migration 0018) holds its own id in
    # the last column, every other entity the same zero uuid
    assert unique == [indexes["entities_bank_folded_name_key"]]
    assert ("(bank_id, entity_resolver_internal.folded(canonical_name), COALESCE(entity_type, ''::text), "
            "COALESCE(homonym, '00000000-0000-0000-0000-000000000000'::uuid))" in unique[0])
    assert "UNIQUE" in indexes["entity_aliases_bank_folded_alias_key"]
    assert "(bank_id, entity_resolver_internal.folded(alias))" in indexes["entity_aliases_bank_folded_alias_key"]
    assert not any("lower(" in d for d in indexes.values())
    # The trigram index: our operator class over folded() (migration 0012), its
    # bank column in the "C" collation, which no btree led by bank_id has
    # (migration 0014); and the alias memory's look-up by folded mention.
    trgm = indexes["entities_name_trgm_idx"]
    assert ('gin (bank_id COLLATE "C", entity_resolver_internal.folded(canonical_name)'
            ' entity_resolver_internal.trgm_ops)') in trgm
    assert "WHERE (entity_kind <> 'label'::text)" in trgm
    assert "entity_resolver_internal.folded(" in indexes["mentions_memory_idx"]
    assert "(bank_id) WHERE (entity_kind = 'label'::text)" in indexes["entities_label_idx"]
    assert any("(bank_id, entity_id, unit_id)" in d for d in indexes.values()), "entity -> units lookup"
    assert any("(bank_id, entity_id_2, entity_id_1)" in d for d in indexes.values()), "reverse pair lookup"
    checks = [r[0] for r in conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'c'"
        " AND conrelid = 'entity_resolver.entity_cooccurrences'::regclass")]
    assert "CHECK ((entity_id_1 < entity_id_2))" in checks
    fks = conn.execute(
        "SELECT count(*) FROM pg_constraint WHERE contype = 'f'"
        " AND conrelid = 'entity_resolver.entity_cooccurrences'::regclass").fetchone()[0]
    assert fks == 2


def test_database_enforces_case_insensitive_uniqueness(empty_db):
    conn = empty_db()
    install(conn)
    conn.execute("INSERT INTO entity_resolver.banks (bank_id) VALUES ('b')")
    conn.execute("INSERT INTO entity_resolver.entities (bank_id, canonical_name) VALUES ('b', 'Sarah Chen')")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("INSERT INTO entity_resolver.entities (bank_id, canonical_name) VALUES ('b', 'SARAH CHEN')")


def test_every_relation_column_index_and_sequence_has_a_comment(empty_db):
    # What \d+, \di+ and \ds+ list, in both schemas, the migration ledger included.
    conn = empty_db()
    install(conn)
    missing = conn.execute(
        """SELECT c.relname || coalesce('.' || a.attname, '') FROM pg_class c
             LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                                     AND c.relkind IN ('r', 'v')
            WHERE c.relnamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)
              AND c.relkind IN ('r', 'v', 'i', 'S')
              AND ((a.attname IS NULL AND obj_description(c.oid, 'pg_class') IS NULL)
                   OR (a.attname IS NOT NULL AND col_description(c.oid, a.attnum) IS NULL))
           UNION ALL
           SELECT c.relname FROM pg_class c
            WHERE c.relnamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)
              AND c.relkind IN ('r', 'v') AND obj_description(c.oid, 'pg_class') IS NULL"""
    ).fetchall()
    assert missing == []
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'entity_resolver'::regnamespace"
                        " AND relkind IN ('i', 'S')").fetchone()[0] > 30


def test_every_function_has_a_comment_and_pins_search_path(empty_db):
    conn = empty_db()
    install(conn)
    rows = conn.execute(
        """SELECT p.oid::regprocedure::text, obj_description(p.oid, 'pg_proc'), p.proconfig
             FROM pg_proc p WHERE p.pronamespace = 'entity_resolver'::regnamespace
              AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"""
    ).fetchall()
    assert rows
    for name, comment, config in rows:
        assert comment, f"{name} has no COMMENT"
        assert config and any(c.startswith("search_path=") for c in config), f"{name} does not pin search_path"


def test_every_function_that_resolves_runs_its_statements_without_jit(empty_db):
    # A large INSERT's statements pass jit_above_cost by their estimates alone, and compiling them cost
    # more than running them (sql/030_resolve.sql); the caller's jit is restored on return.
    conn = empty_db()
    install(conn)
    rows = conn.execute(
        """SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p
            WHERE p.pronamespace IN ('entity_resolver'::regnamespace, 'entity_resolver_internal'::regnamespace)
              AND 'pg_trgm.strict_word_similarity_threshold=1' = ANY(p.proconfig)"""
    ).fetchall()
    assert any(name.startswith("entity_resolver_internal._resolve_and_link_facts_py(") for name, _ in rows)
    assert [name for name, config in rows if "jit=off" not in config] == []
    assert conn.execute("SHOW jit").fetchone()[0] == "on"
    conn.execute("SELECT * FROM entity_resolver.resolve_mention('b', 'Ada')")
    assert conn.execute("SHOW jit").fetchone()[0] == "on"


def test_the_review_queue_runs_its_statements_without_jit(empty_db):
    # Once the statistics know a larger bank, the review queue's statements over a bank's links are
    # estimated past jit_above_cost: compiling one cost 1.15 s of its 1.18 s (docs/benchmarks.md).
    conn = empty_db()
    install(conn)
    config = conn.execute("SELECT proconfig FROM pg_proc"
                          " WHERE oid = 'entity_resolver_internal._review_items(text)'::regprocedure").fetchone()[0]
    assert "jit=off" in config
    conn.execute("SELECT count(*) FROM entity_resolver.review_queue('b')")
    assert conn.execute("SHOW jit").fetchone()[0] == "on"


def test_installing_twice_changes_nothing(empty_db):
    conn = empty_db()
    install(conn)
    before = catalog_snapshot(conn, "entity_resolver")
    report = install(conn)
    assert report.applied_migrations == []
    assert catalog_snapshot(conn, "entity_resolver") == before


def test_upgrade_from_first_version_matches_a_fresh_install(new_db):
    old = new_db()
    install(old, upto=1)
    assert installed_version(old) == 1
    install(old)
    fresh = new_db()  # another database (empty_db() would connect to old's again)
    install(fresh)
    assert installed_version(old) == installed_version(fresh) == len(migrations())
    assert catalog_snapshot(old, "entity_resolver") == catalog_snapshot(fresh, "entity_resolver")


def test_upgrade_one_version_at_a_time_matches_a_fresh_install(new_db):
    old = new_db()
    for version in range(1, len(migrations()) + 1):
        report = install(old, upto=version)
        assert installed_version(old) == version
        assert report.applied_migrations == [version]
    install(old)
    fresh = new_db()  # another database (empty_db() would connect to old's again)
    install(fresh)
    assert installed_version(old) == installed_version(fresh) == len(migrations())
    assert catalog_snapshot(old, "entity_resolver") == catalog_snapshot(fresh, "entity_resolver")


# explain_mention's result type before migration 0021 (no considered column).
_EXPLAIN_BEFORE_0021 = """
CREATE FUNCTION {schema}.{name}(bank_id text, mention text, nearby text[] DEFAULT '{{}}',
                               event_date timestamptz DEFAULT now(), mention_type text DEFAULT NULL,
                               attributes jsonb DEFAULT NULL)
RETURNS TABLE (candidate_id uuid, canonical_name text, trigram_similarity float8, tokens_compatible boolean,
               name_similarity float8, cooccurrence float8, recency float8, score float8, decision text,
               matched_form text, lever text)
LANGUAGE sql AS 'SELECT NULL::uuid, NULL, NULL::float8, NULL::boolean, NULL::float8, NULL::float8,
                        NULL::float8, NULL::float8, NULL, NULL, NULL WHERE false'
"""


def test_an_installation_whose_explain_mention_lacks_considered_upgrades(new_db):
    # The functions as an installation of migration 0020 holds them (the API's and its PL/Python
    # function, with the old result type), which CREATE OR REPLACE cannot change: 0021 drops them.
    old = new_db()
    install(old, upto=20)
    for schema, name in (("entity_resolver", "explain_mention"), ("entity_resolver_internal", "explain_mention_py")):
        old.execute(_EXPLAIN_BEFORE_0021.format(schema=schema, name=name))

    report = install(old)

    assert report.applied_migrations == [21, 22, 23, 24]
    assert "considered" in [c.name for c in old.execute(
        "SELECT * FROM entity_resolver.explain_mention('b', 'Alex') LIMIT 0").description]


# _reresolve_fact's result type before migration 0022 (no untold and leaning columns), both arities.
_DECIDE_BEFORE_0022 = """
CREATE FUNCTION entity_resolver_internal.{name}(bank_id text, unit_id uuid{more})
RETURNS TABLE (ordinal integer, entity_id uuid, canonical_name text, created boolean, score float8, decision text)
LANGUAGE sql AS 'SELECT NULL::integer, NULL::uuid, NULL, NULL::boolean, NULL::float8, NULL WHERE false'
"""


def test_an_installation_whose_reresolve_decisions_lack_untold_upgrades(new_db):
    # reresolve's decisions as an installation of migration 0021 holds them (each with its PL/Python
    # function, the old result type), which CREATE OR REPLACE cannot change: 0022 drops them.
    old = new_db()
    install(old, upto=21)
    for name in ("_reresolve_fact", "_reresolve_fact_py"):
        for more in ("", ", plan_id text, keep boolean"):
            old.execute(_DECIDE_BEFORE_0022.format(name=name, more=more))

    report = install(old)

    assert report.applied_migrations == [22, 23, 24]
    assert [c.name for c in old.execute(
        "SELECT * FROM entity_resolver_internal._reresolve_fact('b', gen_random_uuid()) LIMIT 0").description][-3:-1] \
        == ["untold", "leaning"]


# _reresolve_decide and _reresolve_decide_apart as an installation of migration 0022 holds them.
_DECIDE_BEFORE_0023 = """
CREATE FUNCTION entity_resolver_internal.{name}(bank_id text, unit_id uuid{more})
RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb'
"""


def test_an_installation_with_reresolve_decide_apart_upgrades(new_db):
    # Left beside the new _reresolve_decide (a last argument with a default), the old four-argument
    # one would make reresolve's calls ambiguous: 0023 drops it, its two-argument form and the
    # function it replaces.
    old = new_db()
    install(old, upto=22)
    for name, more in (("_reresolve_decide", ""), ("_reresolve_decide", ", unrecorded uuid[], plan_id text"),
                       ("_reresolve_decide_apart", ", others uuid[], plan_id text")):
        old.execute(_DECIDE_BEFORE_0023.format(name=name, more=more))

    report = install(old)

    assert report.applied_migrations == [23, 24]
    assert [r[0] for r in old.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " WHERE p.pronamespace = 'entity_resolver_internal'::regnamespace AND p.proname IN ('_reresolve_decide', '_reresolve_decide_apart')"
    )] == ["entity_resolver_internal._reresolve_decide(text,uuid,uuid[],text,uuid[])"]
    old.execute("INSERT INTO entity_resolver.facts (bank_id, content, mentions) VALUES ('b', 'met', '[\"Alex Kim\"]')")
    assert old.execute("SELECT entity_resolver.reresolve('b') ->> 'mentions_decided'").fetchone()[0] == "1"


def test_install_into_a_schema_name_that_needs_quoting(empty_db):
    conn = empty_db()
    install(conn, schema="Memory Layer")
    assert conn.execute("SELECT to_regclass('\"Memory Layer\".entities')").fetchone()[0] is not None
    install(conn, schema="Memory Layer")
    assert installed_version(conn, "Memory Layer") == len(migrations())


def test_install_creates_the_extensions(empty_db):
    conn = empty_db()
    install(conn)
    exts = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
    assert {"plpython3u", "pg_trgm", "btree_gin"} <= exts


def test_missing_plpython_names_the_os_package(empty_db, monkeypatch):
    conn = empty_db()
    # A server without PL/Python's files cannot be produced here: pretend the
    # catalog of available extensions lacks it.
    install_mod = sys.modules["entity_resolver.install"]

    real = install_mod.extension_available
    monkeypatch.setattr(install_mod, "extension_available",
                        lambda c, name: False if name == "plpython3u" else real(c, name))
    with pytest.raises(InstallError, match="postgresql-plpython3-15"):
        install(conn)
    assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'plpython3u'").fetchone()[0] == 0


def test_unprivileged_user_is_told_a_superuser_must_create_the_extensions(empty_db):
    admin = empty_db()
    admin.execute("DROP ROLE IF EXISTS er_nobody")
    admin.execute("CREATE ROLE er_nobody LOGIN")
    admin.execute("GRANT CREATE ON DATABASE " + admin.info.dbname + " TO er_nobody")
    try:
        info = admin.info
        with psycopg.connect(host=info.host, port=info.port, user="er_nobody", dbname=info.dbname,
                             autocommit=True) as conn:
            with pytest.raises(InstallError, match="superuser"):
                install(conn)
    finally:
        admin.execute("REVOKE ALL ON DATABASE " + admin.info.dbname + " FROM er_nobody")
        admin.execute("DROP OWNED BY er_nobody")
        admin.execute("DROP ROLE er_nobody")


def test_c_locale_database_gets_a_warning(c_locale_db):
    conn = c_locale_db()
    with pytest.warns(LocaleWarning, match="LC_CTYPE is C"):
        report = install(conn)
    assert report.warnings


def test_utf8_database_gets_no_locale_warning(empty_db):
    conn = empty_db()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LocaleWarning)
        report = install(conn)
    assert report.warnings == []


def test_an_edited_migration_is_refused_on_upgrade(empty_db, tmp_path):
    conn = empty_db()
    install(conn)
    import shutil

    from entity_resolver.install import data_dir

    base = tmp_path / "edited"
    shutil.copytree(data_dir(), base, ignore=shutil.ignore_patterns("__pycache__", ".venv", ".git"))
    first = sorted((base / "migrations").glob("0001_*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after release\n")
    with pytest.raises(InstallError, match="must not be edited"):
        install(conn, base=base)


def test_the_collation_migration_upgrades_an_installation_that_has_views(empty_db):
    # 0006 alters entities.canonical_name, which the views read: on an
    # installation that already has them it must drop them, and the
    # idempotent files re-create them.
    conn = empty_db()
    install(conn)
    conn.execute("INSERT INTO entity_resolver.banks (bank_id) VALUES ('b')")
    conn.execute("INSERT INTO entity_resolver.entities (bank_id, canonical_name) VALUES ('b', 'İstanbul')")
    collation_migration = 6  # migrations/0006_name_collation.sql
    conn.execute("DELETE FROM entity_resolver.schema_migrations WHERE version = %s", (collation_migration,))
    report = install(conn)
    assert report.applied_migrations == [collation_migration]
    assert conn.execute("SELECT name FROM entity_resolver.entity_overview").fetchall() == [("İstanbul",)]
