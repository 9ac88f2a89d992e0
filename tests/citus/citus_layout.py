"""Distribute an installed entity_resolver by bank: the layout of docs/scaling.md, as it runs today.

A stand-in for `entity-resolver install --distributed` until it exists: the
tests use it to find out what works distributed and what does not. Beyond the
paper plan, three things are needed for the current schema to distribute at
all (each one is measured by a test):

* The bank-isolation policies (``bound_banks``, ``own_bindings``) are dropped:
  Citus refuses a policy with a subquery on a distributed table.
* ``citus.enable_unsafe_triggers`` is on for the session: without it Citus
  refuses to distribute a table with triggers (facts, stats_queue).
* ``entity_resolver.flush_at_commit`` is off for the database: the commit
  flush would run on a shard, where its cross-bank claim cannot run.
"""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql

SCHEMA = "entity_resolver"

# In foreign-key order: a table is distributed after the tables it references.
TENANT_TABLES = ["banks", "entities", "unit_entities", "entity_cooccurrences", "facts", "stats_queue",
                 "bank_roles"]
REFERENCE_TABLES = ["plpython_modules", "schema_migrations"]
BANK_FUNCTIONS = [
    "resolve_mentions(text, jsonb, timestamptz)",
    "resolve_mention(text, text, text[], timestamptz, boolean)",
    "explain_mention(text, text, text[], timestamptz)",
    "link_unit(text, uuid, uuid[], timestamptz)",
    "flush_stats(text)",
    "expand_units(text, uuid[], integer)",
    "configure_bank(text, jsonb)",
    "set_entity_labels(text, jsonb)",
    "entity_labels_json_schema(text)",
]
SUBQUERY_POLICIES = ["bound_banks", "own_bindings"]
SHARD_COUNT = 8  # few shards: the tests' shard moves stay quick


def distribute(conn: psycopg.Connection, *, shard_count: int = SHARD_COUNT) -> None:
    """Distribute tenant tables by bank_id (colocated), replicate metadata, delegate bank functions."""
    conn.execute(sql.SQL("ALTER DATABASE {} SET entity_resolver.flush_at_commit = off").format(
        sql.Identifier(conn.info.dbname)))
    conn.execute("SET entity_resolver.flush_at_commit = off")
    for rel, polname in conn.execute(
        "SELECT p.polrelid::regclass::text, p.polname FROM pg_policy AS p"
        " JOIN pg_class AS c ON c.oid = p.polrelid"
        " WHERE c.relnamespace = %s::regnamespace AND p.polname = ANY(%s)",
        (SCHEMA, SUBQUERY_POLICIES),
    ).fetchall():
        conn.execute(sql.SQL("DROP POLICY {} ON {}").format(sql.Identifier(polname), sql.SQL(rel)))
    conn.execute("SET citus.enable_unsafe_triggers = on")
    conn.execute("SELECT set_config('citus.shard_count', %s, false)", (str(shard_count),))
    anchor = f"{SCHEMA}.{TENANT_TABLES[0]}"
    for table in TENANT_TABLES:
        conn.execute(
            "SELECT create_distributed_table(%s, 'bank_id', colocate_with => %s)",
            (f"{SCHEMA}.{table}", "default" if table == TENANT_TABLES[0] else anchor),
        )
    for table in REFERENCE_TABLES:
        conn.execute("SELECT create_reference_table(%s)", (f"{SCHEMA}.{table}",))
    for signature in BANK_FUNCTIONS:
        # force_delegation: a call inside a transaction block is delegated too
        # (without it Citus runs such a call on the coordinator).
        conn.execute(
            "SELECT create_distributed_function(%s, 'bank_id', colocate_with => %s,"
            " force_delegation => true)",
            (f"{SCHEMA}.{signature}", anchor),
        )


def worker_port_of(conn: psycopg.Connection, bank_id: str) -> int:
    """Port of the node holding ``bank_id``'s shards."""
    return conn.execute(
        "SELECT p.nodeport FROM pg_dist_shard_placement AS p"
        " WHERE p.shardid = get_shard_id_for_distribution_column(%s::regclass, %s::text)",
        (f"{SCHEMA}.banks", bank_id),
    ).fetchone()[0]


def banks_on(conn: psycopg.Connection, port: int, count: int, prefix: str | None = None) -> list[str]:
    """``count`` new bank ids whose shards are on the node listening on ``port``.

    The ids are unique to the call (a random prefix), so that tests sharing
    an installation never share a bank.
    """
    prefix = prefix or f"b{uuid.uuid4().hex[:8]}"
    found: list[str] = []
    n = 0
    while len(found) < count:
        n += 1
        if n > 10_000:
            raise AssertionError(f"no bank id lands on port {port}")
        candidate = f"{prefix}-{n}"
        if worker_port_of(conn, candidate) == port:
            found.append(candidate)
    return found


def remote_commands(conn: psycopg.Connection, query: str, params=None) -> tuple[list, list[tuple[str, int | None]]]:
    """Run ``query`` with citus.log_remote_commands; return its rows and (command, port) per remote command.

    ``port`` is the node the coordinator sent the command to (None for a
    command it ran locally).
    """
    seen: list[tuple[str, int | None]] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if text.startswith("issuing "):
            detail = diag.message_detail or ""
            port = int(detail.split(":", 1)[1].split()[0]) if "on server" in detail else None
            seen.append((text[len("issuing "):], port))

    conn.add_notice_handler(on_notice)
    try:
        conn.execute("SET citus.log_remote_commands = on")
        rows = conn.execute(query, params).fetchall()
    finally:
        conn.execute("RESET citus.log_remote_commands")
        conn.remove_notice_handler(on_notice)
    return rows, seen
