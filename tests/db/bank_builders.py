"""Builders for the resolver's database tests: arrange a bank in a few lines.

A bank is built by writing its rows directly (bank first, then entities, then
co-occurrences), so each test states exactly the history the resolver sees:
which names exist, when each was last seen, and who co-occurs with whom.
The helpers build, call and read; they never assert — the tests do.

Banks are tenants: every row and every query carries the bank id. So the
``bank`` fixture (tests/db/conftest.py) gives each test its own fresh bank inside one database per
test module (cloning a database costs most of a second; a bank costs one
row). Tests about a whole database (sessions, locale, statement counts) use
the ``conn`` fixture of tests/conftest.py and wrap it: ``Bank(conn, "b")``.

Scoring reminders (docs/design.md §3.5): score = 0.5·name + 0.3·cooc + 0.2·recency.
A partner that co-occurs only with the candidate has degree 1 and is worth
1.0; recency is 1.0 when last_seen equals the event date (``NOW``) and 0
when it is ``LONG_AGO``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from shared import SCHEMA

NOW = datetime(2024, 6, 3, 12, 0, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=90)

# Tables the resolver may write, each with its bank_id column.
TABLES = ("banks", "entities", "stats_queue", "unit_entities", "entity_cooccurrences")

class Bank:
    """One memory bank on one connection: arrange its history, call the resolver, read it."""

    def __init__(self, conn: psycopg.Connection, bank_id: str):
        self.conn = conn
        self.id = bank_id

    # -- arranging ---------------------------------------------------------------------

    def create(self) -> Bank:
        """Insert the bank row (no settings, no labels)."""
        self.conn.execute(f"INSERT INTO {SCHEMA}.banks (bank_id) VALUES (%s)", (self.id,))
        return self

    def configure(self, settings: dict) -> dict:
        """configure_bank: validate and store setting overrides; returns the effective settings."""
        return self.conn.execute(f"SELECT {SCHEMA}.configure_bank(%s, %s::jsonb)",
                                 (self.id, json.dumps(settings))).fetchone()[0]

    def set_labels(self, config: dict) -> dict:
        """set_entity_labels: validate and store the label groups."""
        return self.conn.execute(f"SELECT {SCHEMA}.set_entity_labels(%s, %s::jsonb)",
                                 (self.id, json.dumps(config))).fetchone()[0]

    def entity(self, name: str, *, last_seen: datetime | None = LONG_AGO,
               kind: str = "regular") -> UUID:
        """Insert one entity and return its id."""
        return self.conn.execute(
            f"INSERT INTO {SCHEMA}.entities"
            " (bank_id, canonical_name, entity_kind, first_seen, last_seen)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (self.id, name, kind, last_seen, last_seen),
        ).fetchone()[0]

    def cooccur(self, a: UUID, b: UUID, count: int = 1) -> None:
        """Record that entities a and b appeared together ``count`` times."""
        self.conn.execute(
            f"INSERT INTO {SCHEMA}.entity_cooccurrences"
            " (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)"
            " VALUES (%s, least(%s::uuid, %s::uuid), greatest(%s::uuid, %s::uuid), %s, %s)",
            (self.id, a, b, a, b, count, LONG_AGO),
        )

    def queue_pair(self, a: UUID, b: UUID, increment: int) -> None:
        """Queue a change of the pair a, b in this transaction, not applied (as linking or forgetting a fact does)."""
        self.conn.execute(
            f"INSERT INTO {SCHEMA}.stats_queue (bank_id, entity_id, entity_id_2, increment)"
            " VALUES (%s, least(%s::uuid, %s::uuid), greatest(%s::uuid, %s::uuid), %s)",
            (self.id, a, b, a, b, increment),
        )

    def known_with(self, name: str, partners: Iterable[str], *,
                   last_seen: datetime | None = LONG_AGO) -> UUID:
        """An entity co-occurring with each of ``partners`` (found by name or created)."""
        ident = self.entity(name, last_seen=last_seen)
        for partner in partners:
            self.cooccur(ident, self.id_of(partner) or self.entity(partner))
        return ident

    def hub(self, name: str, degree: int) -> UUID:
        """An entity co-occurring with ``degree`` filler entities ("user", next to everyone)."""
        ident = self.entity(name)
        self.conn.execute(
            f"""
            WITH filler AS (
                INSERT INTO {SCHEMA}.entities (bank_id, canonical_name)
                SELECT %(b)s, 'qqfiller' || g FROM generate_series(1, %(n)s) AS g
                RETURNING id
            )
            INSERT INTO {SCHEMA}.entity_cooccurrences
                (bank_id, entity_id_1, entity_id_2, cooccurrence_count)
            SELECT %(b)s, least(f.id, %(h)s::uuid), greatest(f.id, %(h)s::uuid), 1 FROM filler AS f
            """,
            {"b": self.id, "n": degree, "h": ident},
        )
        return ident

    # -- acting ------------------------------------------------------------------------

    def resolve(self, mention: str | None, nearby: Sequence[str] | None = (), *,
                event_date: datetime | None = NOW, literal: bool = False) -> dict[str, Any]:
        """resolve_mention; its row as a dict."""
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                f"SELECT * FROM {SCHEMA}.resolve_mention(%s, %s, %s::text[], %s::timestamptz, %s)",
                (self.id, mention, None if nearby is None else list(nearby), event_date,
                 not literal),
            ).fetchone()

    def resolve_batch(self, mentions: Any, *,
                      event_date: datetime | None = NOW) -> list[dict[str, Any]]:
        """resolve_mentions with ``mentions`` (a Python value sent as jsonb); rows in order."""
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, %s::jsonb, %s::timestamptz)"
                " ORDER BY ord",
                (self.id, json.dumps(mentions), event_date),
            ).fetchall()

    def explain(self, mention: str, nearby: Sequence[str] = (), *,
                event_date: datetime | None = NOW) -> list[dict[str, Any]]:
        """explain_mention; its rows as dicts."""
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                f"SELECT * FROM {SCHEMA}.explain_mention(%s, %s, %s::text[], %s::timestamptz)",
                (self.id, mention, list(nearby), event_date),
            ).fetchall()

    # -- reading -----------------------------------------------------------------------

    def id_of(self, name: str) -> UUID | None:
        """The id of the entity named ``name``, compared by PostgreSQL's lower()."""
        row = self.conn.execute(
            f"SELECT id FROM {SCHEMA}.entities"
            " WHERE bank_id = %s AND lower(canonical_name) = lower(%s)", (self.id, name),
        ).fetchone()
        return row[0] if row else None

    def names(self) -> list[str]:
        """The bank's canonical names, sorted by code point."""
        return [r[0] for r in self.conn.execute(
            f"SELECT canonical_name FROM {SCHEMA}.entities WHERE bank_id = %s"
            " ORDER BY canonical_name COLLATE \"C\"", (self.id,))]

    def entity_row(self, ident: UUID) -> dict[str, Any]:
        """One entity's row as a dict."""
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(f"SELECT * FROM {SCHEMA}.entities WHERE bank_id = %s AND id = %s",
                               (self.id, ident)).fetchone()

    def settings(self) -> dict | None:
        """The stored setting overrides (None when the bank row does not exist)."""
        row = self.conn.execute(f"SELECT settings FROM {SCHEMA}.banks WHERE bank_id = %s",
                                (self.id,)).fetchone()
        return row[0] if row else None

    def row_counts(self) -> dict[str, int]:
        """This bank's rows in every table the resolver may write."""
        return {t: self.conn.execute(f"SELECT count(*) FROM {SCHEMA}.{t} WHERE bank_id = %s",
                                     (self.id,)).fetchone()[0] for t in TABLES}


def chosen(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The explain_mention row whose decision is "chosen", if any."""
    picked = [r for r in rows if r["decision"] == "chosen"]
    return picked[0] if picked else None


def row_counts(conn: psycopg.Connection) -> dict[str, int]:
    """Rows of every table the resolver may write, all banks together."""
    return {t: conn.execute(f"SELECT count(*) FROM {SCHEMA}.{t}").fetchone()[0] for t in TABLES}


def statements_of_last_call(conn: psycopg.Connection) -> int:
    """SQL statements run by this session's last resolve or explain call."""
    return conn.execute(f"SELECT {SCHEMA}_internal._last_call_statements()").fetchone()[0]
