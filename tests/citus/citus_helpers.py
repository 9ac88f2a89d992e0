"""Where a bank lives and what the coordinator sends: helpers of the distributed tests."""

from __future__ import annotations

import json
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

import psycopg

from entity_resolver.citus_cluster import CitusCluster
from entity_resolver.embedded import EmbeddedCluster
from entity_resolver.install import install

SCHEMA = "entity_resolver"
SHARD_COUNT = 8  # few shards: the tests' shard moves stay quick
# Durations measured along the way (not asserted), printed after the session.
TIMINGS: dict[str, float] = {}


def new_database(cluster: CitusCluster) -> Iterator[str]:
    """A fresh Citus database on every node (its coordinator DSN), dropped afterwards."""
    dbname = f"er_{uuid.uuid4().hex[:10]}"
    started = time.monotonic()
    dsn = cluster.create_database(dbname)
    TIMINGS.setdefault("create a Citus database on every node", time.monotonic() - started)
    try:
        yield dsn
    finally:
        cluster.drop_database(dbname)


def install_distributed(dsn: str, **kwargs) -> None:
    """install(conn, distributed=True) with the tests' shard count."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.monotonic()
        install(conn, distributed=True, shard_count=SHARD_COUNT, **kwargs)
        TIMINGS.setdefault("install --distributed (fresh)", time.monotonic() - started)


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


@contextmanager
def workers_report_remote_commands(workers: list[EmbeddedCluster], dbname: str) -> Iterator[None]:
    """While inside, every worker reports the commands it sends to other nodes (to the session it serves).

    Workers receive no SET from the coordinator's session: the setting goes
    in their configuration, for this parameter only, and is reset after.
    """
    for worker in workers:
        with psycopg.connect(worker.dsn(dbname), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET citus.log_remote_commands = on")
            conn.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)
    try:
        yield
    finally:
        for worker in workers:
            if worker.running():
                with psycopg.connect(worker.dsn(dbname), autocommit=True) as conn:
                    conn.execute("ALTER SYSTEM RESET citus.log_remote_commands")
                    conn.execute("SELECT pg_reload_conf()")


def notices_of(conn: psycopg.Connection, query: str, params=None) -> list[str]:
    """Run ``query`` on a fresh session's connection; return every notice it received (primary + detail)."""
    seen: list[str] = []
    conn.add_notice_handler(lambda d: seen.append(f"{d.message_primary} {d.message_detail or ''}"))
    conn.execute(query, params)
    return seen


def resolve(conn: psycopg.Connection, bank: str, names: list, nearby_from: str | None = None) -> list[tuple]:
    """resolve_mentions: (mention, entity_id, canonical_name, created) per name, in order."""
    return conn.execute(
        f"SELECT mention, entity_id, canonical_name, created FROM {SCHEMA}.resolve_mentions(%s, %s::jsonb)"
        " ORDER BY ord", (bank, json.dumps(names))).fetchall()


def rebuild_differences(conn: psycopg.Connection, bank: str) -> int:
    """rebuild_stats' dry run: how many kept statistics differ from the record."""
    return conn.execute(f"SELECT ({SCHEMA}.rebuild_stats(%s) ->> 'differences')::int", (bank,)).fetchone()[0]


def stats_differences(conn: psycopg.Connection, bank: str) -> dict[str, int]:
    """How many kept statistics of a bank differ from its record, counted here (rebuild_stats' definition).

    mention_count, first_seen, last_seen from the provenance (mentions);
    cooccurrence_count and last_cooccurred from the links (unit_entities),
    a pair's date in a unit being the later of its two links' dates; plus
    the rows still queued (0 when every call applied its own).
    """
    entities = conn.execute(
        f"""
        SELECT count(*) FROM {SCHEMA}.entities AS e
          LEFT JOIN (SELECT entity_id, count(*) AS n, min(event_date) AS lo, max(event_date) AS hi
                       FROM {SCHEMA}.mentions WHERE bank_id = %(b)s GROUP BY entity_id) AS d ON d.entity_id = e.id
         WHERE e.bank_id = %(b)s
           AND (e.mention_count <> coalesce(d.n, 0) OR e.first_seen IS DISTINCT FROM d.lo
                OR e.last_seen IS DISTINCT FROM d.hi)
        """, {"b": bank}).fetchone()[0]
    pairs = conn.execute(
        f"""
        SELECT count(*) FROM (
            SELECT entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred
              FROM {SCHEMA}.entity_cooccurrences WHERE bank_id = %(b)s AND cooccurrence_count <> 0
        ) AS k
        FULL JOIN (
            SELECT x.entity_id AS entity_id_1, y.entity_id AS entity_id_2, count(*) AS n,
                   max(greatest(x.event_date, y.event_date)) AS hi
              FROM {SCHEMA}.unit_entities AS x
              JOIN {SCHEMA}.unit_entities AS y
                ON y.bank_id = %(b)s AND x.unit_id = y.unit_id AND x.entity_id < y.entity_id
             WHERE x.bank_id = %(b)s
             GROUP BY 1, 2
        ) AS d USING (entity_id_1, entity_id_2)
        WHERE k.cooccurrence_count IS DISTINCT FROM d.n OR k.last_cooccurred IS DISTINCT FROM d.hi
        """, {"b": bank}).fetchone()[0]
    queued = conn.execute(f"SELECT count(*) FROM {SCHEMA}.stats_queue WHERE bank_id = %s", (bank,)).fetchone()[0]
    return {"entities": entities, "pairs": pairs, "queued": queued}


EXACT = {"entities": 0, "pairs": 0, "queued": 0}


# Every table a correction (or its undo) writes, with the key that orders its
# rows; the ledger (operations) is marked by an undo, not rolled back.
IDENTITY_TABLES = {
    "entities": "id",
    "entity_aliases": "entity_id, alias",
    "mentions": "unit_id, ordinal",
    "unit_entities": "unit_id, entity_id",
    "entity_cooccurrences": "entity_id_1, entity_id_2",
    "entity_forwards": "old_id",
    "entity_judgements": "entity_a, entity_b",
    "stats_queue": "id",
}


def snapshot(conn: psycopg.Connection, bank: str) -> dict[str, list[str]]:
    """Every row of a bank's identity tables, as text, in key order (read through the coordinator)."""
    return {table: [r[0] for r in conn.execute(
        f"SELECT t::text FROM {SCHEMA}.{table} AS t WHERE t.bank_id = %s ORDER BY {key}", (bank,))]
        for table, key in IDENTITY_TABLES.items()}
