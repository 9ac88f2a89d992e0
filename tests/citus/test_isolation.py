"""Bank isolation on a distributed installation: a role bound to one bank sees no other, on any node.

Distributed, the row-level security predicate reads only the catalog: one
NOLOGIN role per bank, which grant_bank_access grants to the bound role, and
Citus propagates to every node (sql/citus/900_citus.sql).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from citus_helpers import SCHEMA, banks_on, resolve


@pytest.fixture
def bound(citus, distributed) -> Iterator[tuple[str, str, str]]:
    """(role, its bank, another bank): a login role bound to a bank on the first worker; the other on the second."""
    mine = banks_on(distributed, citus.workers[0].port, 1)[0]
    other = banks_on(distributed, citus.workers[1].port, 1)[0]
    for bank in (mine, other):
        distributed.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Alex Morgan\", \"Acme\"]')",
                            (bank,))
    role = f"er_app_{uuid.uuid4().hex[:8]}"
    distributed.execute(f'CREATE ROLE "{role}" LOGIN')
    distributed.execute(f"SELECT {SCHEMA}.grant_bank_access(%s, %s)", (mine, role))
    try:
        yield role, mine, other
    finally:
        distributed.execute(f'DROP OWNED BY "{role}"')
        distributed.execute(f'DROP ROLE "{role}"')


TABLES = ["banks", "entities", "unit_entities", "entity_cooccurrences", "facts", "mentions", "bank_roles"]


def test_a_bound_role_reads_only_its_bank_on_every_node_and_in_every_shard(citus, distributed, bound):
    role, mine, other = bound
    dbname = distributed.info.dbname
    for node in citus.nodes:
        with psycopg.connect(node.dsn(dbname), user=role, autocommit=True) as conn:
            for table in TABLES:
                seen = {r[0] for r in conn.execute(f"SELECT DISTINCT bank_id FROM {SCHEMA}.{table}")}
                assert seen <= {mine} and (seen or table == "bank_roles"), (node.port, table, seen)
            assert {r[0] for r in conn.execute(f"SELECT bank_id FROM {SCHEMA}.entity_overview")} == {mine}
            # Calls run on the bank's worker, as the role: the other bank is invisible.
            assert conn.execute(f"SELECT decision FROM {SCHEMA}.lookup_mention(%s, 'Alex Morgan')",
                                (other,)).fetchone()[0] == "new"
            assert conn.execute(f"SELECT decision FROM {SCHEMA}.lookup_mention(%s, 'Alex Morgan')",
                                (mine,)).fetchone()[0] == "resolved"
    # The shards themselves, read directly on their worker.
    for worker in citus.workers:
        with psycopg.connect(worker.dsn(dbname), user=role, autocommit=True) as conn:
            conn.execute("SET citus.override_table_visibility = off")
            shards = [r[0] for r in conn.execute(
                "SELECT format('%%I.%%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname ~ '^entities_[0-9]+$' AND c.relkind = 'r'", (SCHEMA,))]
            assert shards
            seen = {r[0] for shard in shards for r in conn.execute(f"SELECT DISTINCT bank_id FROM {shard}")}
            assert seen <= {mine}


def test_a_bound_role_writes_only_its_bank(distributed, bound):
    role, mine, other = bound
    with psycopg.connect(distributed.info.dsn, user=role, autocommit=True) as conn:
        assert resolve(conn, mine, ["Berlin"])[0][3] is True
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            resolve(conn, other, ["Berlin"])
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Berlin\"]')", (other,))
        assert conn.execute(f"DELETE FROM {SCHEMA}.facts WHERE bank_id = %s", (other,)).rowcount == 0
    assert distributed.execute(f"SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = %s", (other,)).fetchone()[0] == 1


def test_revoking_the_binding_ends_access_on_every_node(citus, distributed, bound):
    role, mine, _ = bound
    assert distributed.execute(f"SELECT {SCHEMA}.revoke_bank_access(%s, %s)", (mine, role)).fetchone()[0] is True
    for node in citus.nodes:
        with psycopg.connect(node.dsn(distributed.info.dbname), user=role, autocommit=True) as conn:
            # The role is no longer a bank user at all (its last binding went).
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT count(*) FROM {SCHEMA}.entities").fetchone()


def test_bank_roles_are_named_per_database_schema_and_bank(distributed, bound):
    role, mine, _ = bound
    bank_role = distributed.execute(f"SELECT {SCHEMA}_internal._bank_role_name(%s)", (mine,)).fetchone()[0]
    assert bank_role.startswith(f"{SCHEMA}_bank_") and len(bank_role) <= 63
    assert distributed.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, bank_role)).fetchone()[0]
    # The same bank id in another database is another role.
    other_db = distributed.execute(
        "SELECT %s::text || '_bank_' || left(md5('other_db/' || %s || '/' || %s), 24)",
        (SCHEMA, SCHEMA, mine)).fetchone()[0]
    assert other_db != bank_role
