"""install --distributed on a Citus coordinator (docs/scaling.md): the layout, idempotence, upgrades, refusals."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import psycopg
import pytest
from citus_helpers import SCHEMA, SHARD_COUNT, banks_on, install_distributed, resolve, worker_port_of
from typer.testing import CliRunner

from entity_resolver import build
from entity_resolver.cli import app
from entity_resolver.install import InstallError, install, installed_version, is_distributed

TENANT_TABLES = {"banks", "entities", "unit_entities", "entity_cooccurrences", "facts", "stats_queue", "bank_roles",
                 "mentions", "entity_aliases", "entity_forwards", "operations", "entity_judgements",
                 "review_dismissals", "reresolve_queue"}
# Installation metadata and data (no bank_id): on every node.
REFERENCE_TABLES = {"plpython_modules", "schema_migrations", "name_variants", "org_suffixes"}
# Public functions of a bank that run on the coordinator (they change roles, or
# walk every node's tables): the build's one list.
COORDINATOR_ONLY = set(build.COORDINATOR_FUNCTIONS)


def bank_functions(conn) -> set[str]:
    """Public functions whose first argument is the bank."""
    return {r[0] for r in conn.execute(
        "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = %s::regnamespace"
        " AND p.proargnames[1] = 'bank_id' AND p.proargtypes[0] = 'text'::regtype", (SCHEMA,))}


def layout(conn) -> dict:
    """What is distributed how: tables, their colocation, delegated functions."""
    tables = {r[0].split(".", 1)[1]: r[1:] for r in conn.execute(
        "SELECT table_name::text, citus_table_type, distribution_column, colocation_id, shard_count FROM citus_tables"
        " WHERE table_name::text LIKE %s", (f"{SCHEMA}.%",))}
    functions = {r[0]: r[1:] for r in conn.execute(
        "SELECT p.proname, o.distribution_argument_index, o.force_delegation, o.colocationid"
        " FROM pg_dist_object o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid"
        " WHERE o.distribution_argument_index IS NOT NULL")}
    return {"tables": tables, "functions": functions}


def catalog(conn) -> dict:
    """Every function of the two schemas with its definition, and the policies."""
    return {
        "functions": dict(conn.execute(
            "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p"
            " WHERE p.pronamespace IN (%s::regnamespace, %s::regnamespace)",
            (SCHEMA, f"{SCHEMA}_internal")).fetchall()),
        "policies": sorted(conn.execute(
            "SELECT polrelid::regclass::text, polname, pg_get_expr(polqual, polrelid) FROM pg_policy").fetchall()),
    }


def test_tenant_tables_are_distributed_by_bank_colocated_and_metadata_is_on_every_node(citus, distributed):
    now = layout(distributed)
    tenant = {t: v for t, v in now["tables"].items() if t in TENANT_TABLES}
    assert set(tenant) == TENANT_TABLES
    assert {v[:2] for v in tenant.values()} == {("distributed", "bank_id")}
    assert len({v[2] for v in tenant.values()}) == 1
    assert {v[3] for v in tenant.values()} == {SHARD_COUNT}
    assert {t for t, v in now["tables"].items() if v[0] == "reference"} == REFERENCE_TABLES
    # A reference table has a placement on every node, coordinator included.
    ports = {r[0] for r in distributed.execute(
        "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = ("
        " SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'entity_resolver.plpython_modules'::regclass)")}
    assert ports == {n.port for n in citus.nodes}


def test_every_public_function_of_a_bank_is_delegated_behind_a_wrapper_that_checks_the_bank(distributed):
    now = layout(distributed)
    colocation = now["tables"]["banks"][2]
    delegated = {name[: -len("_delegated")] for name in now["functions"] if name.endswith("_delegated")}
    assert delegated == bank_functions(distributed) - COORDINATOR_ONLY
    assert all(v == (0, True, colocation) for v in now["functions"].values())
    # The public functions themselves are not distributed (Citus 13.2 crashes
    # planning a delegated call whose key is NULL: they reject it first).
    assert not delegated & set(now["functions"])
    for name in sorted(delegated):
        if name == "flush_stats":
            continue  # NULL means every bank (test_write_path)
        args = distributed.execute(
            "SELECT pronargs FROM pg_proc WHERE pronamespace = %s::regnamespace AND proname = %s",
            (SCHEMA, name)).fetchone()[0]
        call = f"SELECT * FROM {SCHEMA}.{name}({', '.join(['NULL'] * args)})"
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="^bank_id: must not be null"):
            distributed.execute(call)
    # Called directly with a NULL bank, a delegated function is STRICT: NULL, no crash.
    assert distributed.execute(
        f"SELECT {SCHEMA}_internal.resolve_mentions_delegated(NULL, '{{}}')").fetchone()[0] is None
    assert distributed.execute(
        f"SELECT r FROM {SCHEMA}_internal.resolve_mentions_delegated(NULL, '{{}}') AS r").fetchone()[0] is None
    assert distributed.execute("SELECT 1").fetchone()[0] == 1


def test_the_code_and_the_name_indexes_are_on_every_worker(citus, distributed):
    dbname = distributed.info.dbname
    # Every function, by signature: Citus leaves on the coordinator a function
    # whose signature uses a distributed table's row type, and a delegated
    # call that needs it fails on the worker.
    signatures = ("SELECT p.oid::regprocedure::text FROM pg_proc p"
                  " WHERE p.pronamespace IN (%s::regnamespace, %s::regnamespace)")
    functions = {r[0] for r in distributed.execute(signatures, (SCHEMA, f"{SCHEMA}_internal"))}
    assert len(functions) > 100
    for worker in citus.workers:
        with psycopg.connect(worker.dsn(dbname)) as conn:
            assert {r[0] for r in conn.execute(signatures, (SCHEMA, f"{SCHEMA}_internal"))} == functions
            assert conn.execute("SELECT count(*) FROM entity_resolver.plpython_modules").fetchone()[0] > 10
            # Shards are hidden from the catalog unless asked for.
            conn.execute("SET citus.override_table_visibility = off")
            shards = conn.execute(
                "SELECT count(*) FROM pg_class WHERE relname ~ '^entities_[0-9]+$' AND relkind = 'r'"
                " AND relnamespace = 'entity_resolver'::regnamespace").fetchone()[0]
            assert shards == SHARD_COUNT // 2
            for index in ("entities_bank_folded_name_key", "entities_name_trgm_idx"):
                assert conn.execute(
                    "SELECT count(*) FROM pg_indexes WHERE schemaname = 'entity_resolver'"
                    " AND indexname ~ %s", (f"^{index}_[0-9]+$",)).fetchone()[0] == shards


def test_installing_again_changes_nothing_and_keeps_the_data(citus_dsn):
    install_distributed(citus_dsn)
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        bank = "again"
        before = resolve(conn, bank, ["Alex Morgan", "Acme"])
        shape, code = layout(conn), catalog(conn)
        report = install(conn, distributed=True)
        assert report.distributed == {"tables": [], "reference_tables": [], "functions": []}
        # distributed=None (the default, as the CLI's automatic upgrade) keeps it distributed.
        install(conn)
        assert layout(conn) == shape and catalog(conn) == code
        assert [(r[1], r[3]) for r in resolve(conn, bank, ["alex morgan", "ACME"])] == [(r[1], False) for r in before]
        with pytest.raises(InstallError, match="is distributed over a Citus cluster"):
            install(conn, distributed=False)


def _base(tmp_path: Path, name: str) -> Path:
    """A copy of the sources the installer reads (migrations/, sql/, plpython/, data/, pyproject.toml)."""
    base = tmp_path / name
    source = build.data_dir()
    for part in ("migrations", "sql", "plpython", "data"):
        shutil.copytree(source / part, base / part)
    shutil.copy(source / "pyproject.toml", base / "pyproject.toml")
    return base


UPGRADE = """-- test upgrade: a column, an index and a tenant table, on a distributed installation.
ALTER TABLE {{ schema }}.entities ADD COLUMN note text;
CREATE INDEX entities_note_idx ON {{ schema }}.entities (bank_id, note);
CREATE TABLE {{ schema }}.bank_notes (
    bank_id text NOT NULL,
    id bigint NOT NULL,
    entity_id uuid,
    note text,
    PRIMARY KEY (bank_id, id),
    FOREIGN KEY (bank_id, entity_id) REFERENCES {{ schema }}.entities (bank_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE {{ schema }}.bank_notes IS 'Test table of an upgrade.';
"""


def test_an_upgrade_applies_its_migration_on_the_shards_and_keeps_the_distribution(citus_dsn, tmp_path):
    old, new = _base(tmp_path, "old"), _base(tmp_path, "new")
    # The next migration after the last one shipped.
    version = max(int(p.name[:4]) for p in (new / "migrations").glob("0*.sql")) + 1
    (new / "migrations" / f"{version:04d}_test_upgrade.sql").write_text(UPGRADE, encoding="utf-8")
    # The new version's code differs: a module and a function body.
    module = new / "plpython" / "resolve.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n# upgraded\n", encoding="utf-8")
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        install(conn, base=old, distributed=True, shard_count=SHARD_COUNT)
        before = resolve(conn, "upgraded", ["Alex Morgan", "Acme"])
        report = install(conn, base=new)
        assert report.applied_migrations == [version] and installed_version(conn) == version
        shape = layout(conn)
        assert shape["tables"]["bank_notes"][:2] == ("distributed", "bank_id")
        assert shape["tables"]["bank_notes"][2] == shape["tables"]["banks"][2]
        assert report.distributed["tables"] == ["bank_notes"]
        assert conn.execute(
            "SELECT count(*) FROM entity_resolver.plpython_modules WHERE source LIKE '%# upgraded%'").fetchone()[0] == 1
        again = resolve(conn, "upgraded", ["alex morgan", "acme", "Berlin"])
        assert [r[1] for r in again[:2]] == [r[1] for r in before] and again[2][3] is True
        conn.execute("UPDATE entity_resolver.entities SET note = 'n' WHERE bank_id = 'upgraded'")
        conn.execute("INSERT INTO entity_resolver.bank_notes (bank_id, id, entity_id) VALUES ('upgraded', 1, %s)",
                     (before[0][1],))
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("INSERT INTO entity_resolver.bank_notes (bank_id, id, entity_id) VALUES ('upgraded', 2, %s)",
                         (uuid.uuid4(),))
    for worker in _workers_of(citus_dsn):
        with psycopg.connect(worker, autocommit=True) as wconn:
            wconn.execute("SET citus.override_table_visibility = off")
            assert wconn.execute(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = 'entity_resolver'"
                " AND indexname ~ '^entities_note_idx_[0-9]+$'").fetchone()[0] == SHARD_COUNT // 2


def _workers_of(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        ports = [r[0] for r in conn.execute(
            "SELECT nodeport FROM pg_dist_node WHERE shouldhaveshards AND noderole = 'primary'")]
        info = conn.info
        return [f"host={info.host} port={p} user={info.user} dbname={info.dbname}" for p in ports]


def trigram_operator_class(conn) -> str:
    """The operator class of the trigram index's name column, schema-qualified."""
    return conn.execute(
        "SELECT o.opcnamespace::regnamespace::text || '.' || o.opcname FROM pg_index AS i"
        " JOIN pg_opclass AS o ON i.indclass[1] = o.oid"
        " WHERE i.indexrelid = 'entity_resolver.entities_name_trgm_idx'::regclass").fetchone()[0]


def test_a_single_node_installation_is_distributed_in_place_with_its_data_and_bindings(citus, citus_dsn):
    role = f"er_conv_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        install(conn)  # single-node, on the coordinator: nothing distributed
        assert not is_distributed(conn)
        assert trigram_operator_class(conn) == "entity_resolver_internal.trgm_ops"
        banks = [f"conv-{n}" for n in range(6)]
        before = {b: resolve(conn, b, ["Alex Morgan", "Acme"]) for b in banks}
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        try:
            conn.execute("SELECT entity_resolver.grant_bank_access(%s, %s)", (banks[0], role))
            install(conn, distributed=True, shard_count=SHARD_COUNT)
            assert is_distributed(conn)
            # Citus cannot give its workers our operator class (migration 0012): pg_trgm's replaces it.
            assert trigram_operator_class(conn).endswith(".gin_trgm_ops")
            assert conn.execute("SELECT count(*) FROM pg_opclass"
                                " WHERE opcnamespace = 'entity_resolver_internal'::regnamespace").fetchone() == (0,)
            assert {worker_port_of(conn, b) for b in banks} == {w.port for w in citus.workers}
            for b in banks:
                assert [(r[1], r[3]) for r in resolve(conn, b, ["alex morgan", "ACME"])] == \
                       [(r[1], False) for r in before[b]]
            # The binding made before distribution holds on the workers.
            for worker in citus.workers:
                with psycopg.connect(worker.dsn(conn.info.dbname), user=role) as bound:
                    seen = {r[0] for r in bound.execute("SELECT DISTINCT bank_id FROM entity_resolver.entities")}
                    assert seen == {banks[0]}
        finally:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def test_without_citus_or_on_a_worker_it_says_so_and_changes_nothing(citus):
    # A database of the coordinator where CREATE EXTENSION citus was not run.
    plain = f"er_plain_{uuid.uuid4().hex[:8]}"
    citus.coordinator.ensure_database(plain)
    try:
        with psycopg.connect(citus.coordinator.dsn(plain), autocommit=True) as conn:
            with pytest.raises(InstallError, match="needs a Citus coordinator: this database has no citus extension"
                                                   ".*nothing was changed"):
                install(conn, distributed=True)
            assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'entity_resolver%'"
                                ).fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname <> 'plpgsql'").fetchone()[0] == 0
        result = CliRunner().invoke(app, ["install", "--dsn", citus.coordinator.dsn(plain), "--distributed"])
        assert result.exit_code == 3 and "no citus extension" in result.output
    finally:
        with psycopg.connect(citus.coordinator.dsn(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{plain}"')


def test_on_a_worker_it_refuses(citus, distributed):
    with psycopg.connect(citus.workers[0].dsn(distributed.info.dbname), autocommit=True) as conn:
        with pytest.raises(InstallError, match="must run on the Citus coordinator"):
            install(conn, distributed=True)


def test_the_cli_installs_distributed_and_says_so(citus_dsn):
    result = CliRunner().invoke(app, ["install", "--dsn", citus_dsn, "--distributed", "--shard-count", "4", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report["distributed"]["tables"]) == TENANT_TABLES
    with psycopg.connect(citus_dsn) as conn:
        assert {v[3] for v in layout(conn)["tables"].values() if v[0] == "distributed"} == {4}
        bank = banks_on(conn, worker_port_of(conn, "x"), 1)[0]
        assert resolve(conn, bank, ["Alex"])[0][3] is True
    result = CliRunner().invoke(app, ["install", "--dsn", citus_dsn])
    assert result.exit_code == 0 and "distributed by bank" in result.output
