"""Arrangements for the correction tests: a bank of facts, a snapshot of everything
identity is made of, and the numbers rebuild_stats would change. Helpers arrange
and read; the tests assert (one shared assertion: a refused correction changes nothing)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg import sql
from shared import SCHEMA as ER


# Every table an operator correction (or its undo) may write, with the key
# that orders its rows. The ledger (operations) is not part of the bank's
# identity: undoing marks it, it does not roll it back.
SNAPSHOT_TABLES = {
    "entities": "id",
    "entity_aliases": "entity_id, alias",
    "mentions": "unit_id, ordinal",
    "unit_entities": "unit_id, entity_id",
    "entity_cooccurrences": "entity_id_1, entity_id_2",
    "entity_forwards": "old_id",
    "entity_judgements": "entity_a, entity_b",
    "stats_queue": "id",
}

# Two Alexes, told apart by their neighbours (the README's story), and a few
# more facts so that every table has rows.
TEAM_FACTS = [
    ("2026-03-01T09:00:00Z", ["Alex Morgan", "Acme", "renewal"]),
    ("2026-03-02T09:00:00Z", ["Alex Kim", "React", "Sprint 14"]),
    ("2026-03-03T09:00:00Z", ["Alex Morgan", "Acme", "Priya"]),
    ("2026-03-04T09:00:00Z", ["Alex Kim", "React", "Priya"]),
    ("2026-03-05T09:00:00Z", ["Acme", "renewal", "Priya"]),
    ("2026-03-06T09:00:00Z", ["Alex Kim", "Sprint 14", "Oslo"]),
]


def insert_fact(conn: psycopg.Connection, bank: str, mentions: list, event_date: str = "2026-03-10T09:00:00Z",
                fact_id: str | None = None) -> str:
    """INSERT one fact; returns its id (the unit id)."""
    return str(conn.execute(
        f"INSERT INTO {ER}.facts (bank_id, fact_id, content, mentions, event_date)"
        " VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (bank, fact_id, " / ".join(m if isinstance(m, str) else m["text"] for m in mentions),
         json.dumps(mentions), event_date)).fetchone()[0])


def team(conn: psycopg.Connection, bank: str = "team") -> dict[str, Any]:
    """The team bank: facts inserted one statement each; returns {"facts": [...], name: id, ...}."""
    out: dict[str, Any] = {"facts": []}
    for n, (date, mentions) in enumerate(TEAM_FACTS, 1):
        out["facts"].append(insert_fact(conn, bank, mentions, date, fact_id=f"f{n}"))
    for name, entity_id in conn.execute(
            f"SELECT canonical_name, id FROM {ER}.entities WHERE bank_id = %s", (bank,)):
        out[name] = str(entity_id)
    return out


def entity_id(conn: psycopg.Connection, bank: str, name: str) -> str:
    return str(conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = %s AND canonical_name = %s",
                            (bank, name)).fetchone()[0])


def mention_of(conn: psycopg.Connection, bank: str, unit: Any, ordinal: int = 1) -> tuple[str, str]:
    """(canonical name of its entity, decision) of a stored mention: the fact's unit id and its position."""
    return conn.execute(
        f"SELECT e.canonical_name, m.decision FROM {ER}.mentions AS m"
        f" JOIN {ER}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
        " WHERE m.bank_id = %s AND m.unit_id = %s AND m.ordinal = %s", (bank, unit, ordinal)).fetchone()


def snapshot(conn: psycopg.Connection, bank: str) -> dict[str, list[str]]:
    """Every row of the bank's identity tables, as text, in key order."""
    out = {}
    for table, key in SNAPSHOT_TABLES.items():
        rows = conn.execute(sql.SQL("SELECT t::text FROM {}.{} AS t WHERE t.bank_id = %s ORDER BY {}").format(
            sql.Identifier(ER), sql.Identifier(table), sql.SQL(key)), (bank,)).fetchall()
        out[table] = [r[0] for r in rows]
    return out


def differences(conn: psycopg.Connection, bank: str) -> dict[str, Any]:
    """What rebuild_stats' dry run finds: every number not equal to the record, and the orphans."""
    report = conn.execute(f"SELECT {ER}.rebuild_stats(%s)", (bank,)).fetchone()[0]
    return {"differences": report["differences"], "entities": report["entities"], "pairs": report["pairs"],
            "orphans": report["orphans"]}


def call(conn: psycopg.Connection, function: str, *args: Any, **kwargs: Any) -> Any:
    """SELECT entity_resolver.<function>(args..., name => value...) and return the value."""
    params = [sql.Placeholder()] * len(args) + [
        sql.SQL("{} => {}").format(sql.Identifier(k), sql.Placeholder()) for k in kwargs]
    query = sql.SQL("SELECT {}.{}({})").format(sql.Identifier(ER), sql.Identifier(function),
                                                sql.SQL(", ").join(params))
    return conn.execute(query, (*args, *kwargs.values())).fetchone()[0]


def operations_count(conn: psycopg.Connection, bank: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {ER}.operations WHERE bank_id = %s", (bank,)).fetchone()[0]


def assert_refused_changing_nothing(conn: psycopg.Connection, function: str, args: Any, kwargs: dict[str, Any],
                                    sqlstate: str, argument: str, banks: tuple[str, ...] = ("team", "other")) -> None:
    """Call a correction that must be refused: with ``sqlstate``, a message
    naming ``argument`` first, and no row of ``banks`` or their ledgers changed."""
    before = {b: snapshot(conn, b) for b in banks}
    ledger = [operations_count(conn, b) for b in banks]
    with pytest.raises(psycopg.Error) as refused:
        call(conn, function, *args, **kwargs)
    message = refused.value.diag.message_primary
    assert (refused.value.sqlstate, message.split(": ")[0]) == (sqlstate, argument), message
    assert {b: snapshot(conn, b) for b in banks} == before
    assert [operations_count(conn, b) for b in banks] == ledger
