"""Export a bank's facts in the import format, each mention with the entity it resolved to as ``gold``.

One JSON object per line, as :mod:`entity_resolver.importer` reads it::

    {"fact_id": "f1", "bank_id": "team", "event_date": "2026-03-01T10:00:00+00:00",
     "content": "Alex flagged a blocker on the Acme renewal.",
     "mentions": [{"text": "Alex", "gold": "0b9c..."}, {"text": "Acme", "gold": "5e21..."}]}

* ``fact_id`` is the fact's own id (``facts.fact_id``), or its UUID when it has
  none: importing the line again gives the fact the same ``facts.id``.
* Each mention is the element as it was stored (a bare string becomes
  ``{"text": ...}``), plus ``gold``: the entity its provenance row says it went
  to, as its id (``gold="id"``) or its canonical name (``gold="name"``). A
  mention without provenance (its entity was forgotten, or the fact predates
  provenance) has no ``gold``.
* ``entities`` (the bank's curation): the first line a mention of an entity
  appears on describes that entity, keyed as its ``gold``: its canonical
  ``name``, its ``aliases`` (as written, with where each came from) and the
  ``forwards`` (ids merged into it; ``gold="id"`` only) and, when operators
  judged it distinct from other entities (``mark_distinct``), ``distinct``: each
  other entity by its key, with the judgement's ``reason`` (each judgement once,
  on the record of the first of its pair in id order)::

      "entities": {"0b9c...": {"name": "Alex Morgan", "curated": true,
                               "aliases": [{"alias": "Alex M.", "source": "operator"}],
                               "forwards": ["77d1..."],
                               "distinct": [{"entity": "5e21...", "reason": "two people"}]}}

  Importing the file reproduces them (:mod:`entity_resolver.curation`): the
  same partition of mentions into entities, the same names, aliases and
  judgements.
* Facts come in the order they were stored (``created_at``, then the order of
  the rows of one statement), the order that makes a re-import decide as the
  bank did.

The whole export reads one snapshot (a REPEATABLE READ, READ ONLY transaction
when the connection is idle), through a server-side cursor, so a bank of any
size streams in constant memory and is consistent with itself while writers
carry on.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterator, Optional, TextIO

import psycopg
from psycopg import sql

GOLD_FORMS = ("id", "name")
BATCH = 1000


@dataclass
class ExportSummary:
    bank_id: str
    facts: int = 0
    mentions: int = 0
    without_gold: int = 0      # mentions with no provenance row

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _query(schema: str, gold: str) -> sql.Composed:
    label = "m.entity_id::text" if gold == "id" else "e.canonical_name::text"
    return sql.SQL(
        "SELECT f.id, f.fact_id, f.event_date, f.content, f.mentions,"
        " (SELECT jsonb_object_agg(m.ordinal::text, {label})"
        "    FROM {s}.mentions AS m"
        "    JOIN {s}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
        "   WHERE m.bank_id = f.bank_id AND m.unit_id = f.id) AS gold"
        " FROM {s}.facts AS f WHERE f.bank_id = %s"
        # Rows of one INSERT share created_at; stored_order numbers them in the
        # order the statement wrote them (their physical order need not be:
        # a row goes wherever the free space map finds room).
        " ORDER BY f.created_at, f.stored_order"
    ).format(s=sql.Identifier(schema), label=sql.SQL(label))


def _entities_query(schema: str) -> sql.Composed:
    return sql.SQL(
        "SELECT e.id::text, e.canonical_name::text, e.curated,"
        " (SELECT coalesce(jsonb_agg(jsonb_build_object('alias', a.alias::text, 'source', a.source)"
        "    ORDER BY a.alias), '[]') FROM {s}.entity_aliases AS a"
        "   WHERE a.bank_id = e.bank_id AND a.entity_id = e.id),"
        " (SELECT coalesce(jsonb_agg(f.old_id::text ORDER BY f.old_id), '[]') FROM {s}.entity_forwards AS f"
        "   WHERE f.bank_id = e.bank_id AND f.new_id = e.id)"
        " FROM {s}.entities AS e WHERE e.bank_id = %s"
    ).format(s=sql.Identifier(schema))


def _judgements_query(schema: str) -> sql.Composed:
    # Through list_judgements, as the importer reads them back (curation.py).
    return sql.SQL(
        "SELECT j.entity_a::text, j.entity_b::text, j.reason FROM {s}.list_judgements(%s) AS j"
        " WHERE j.judgement = 'distinct' ORDER BY j.entity_a, j.entity_b"
    ).format(s=sql.Identifier(schema))


def _curation(conn: psycopg.Connection, schema: str, bank_id: str, gold: str) -> Dict[str, Dict[str, Any]]:
    """Each entity of the bank as the ``entities`` key describes it, keyed as its gold."""
    out: Dict[str, Dict[str, Any]] = {}
    keys: Dict[str, str] = {}      # entity id -> its key (its gold)
    for entity_id, name, curated, aliases, forwards in conn.execute(_entities_query(schema), (bank_id,)):
        keys[entity_id] = entity_id if gold == "id" else name
        record: Dict[str, Any] = {"name": name, "curated": curated, "aliases": aliases}
        if gold == "id":
            record["forwards"] = forwards
        out[keys[entity_id]] = record
    # Each standing judgement once, on the record of the pair's first entity
    # (entity_judgements keeps the pair in id order), naming the other by its
    # key: entity_resolver.curation marks the two distinct again on import.
    for entity_a, entity_b, reason in conn.execute(_judgements_query(schema), (bank_id,)):
        judgement: Dict[str, Any] = {"entity": keys[entity_b]}
        if reason is not None:
            judgement["reason"] = reason
        out[keys[entity_a]].setdefault("distinct", []).append(judgement)
    return out


def _describe(line: Dict[str, Any], curation: Dict[str, Dict[str, Any]], written: set) -> None:
    """Add ``entities`` to a line: the entities its mentions are the first of."""
    described = {}
    for item in line["mentions"]:
        key = item.get("gold")
        if key is not None and key not in written and key in curation:
            described[key] = curation[key]
            written.add(key)
    if described:
        line["entities"] = described


def _line(bank_id: str, row: tuple, summary: ExportSummary) -> Dict[str, Any]:
    unit_id, fact_id, event_date, content, mentions, gold = row
    gold = gold or {}
    out: Dict[str, Any] = {"fact_id": fact_id if fact_id is not None else str(unit_id), "bank_id": bank_id,
                           "event_date": event_date.isoformat()}
    if content is not None:
        out["content"] = content
    elements = []
    for ordinal, element in enumerate(mentions or [], 1):
        item = {"text": element} if isinstance(element, str) else dict(element)
        label = gold.get(str(ordinal))
        if label is None:
            summary.without_gold += 1
        else:
            item["gold"] = label
        elements.append(item)
    out["mentions"] = elements
    summary.facts += 1
    summary.mentions += len(elements)
    return out


def iter_bank(conn: psycopg.Connection, bank_id: str, *, schema: str = "entity_resolver", gold: str = "id",
              summary: Optional[ExportSummary] = None) -> Iterator[Dict[str, Any]]:
    """Yield the bank's facts as import lines (dicts), in the order they were stored."""
    if gold not in GOLD_FORMS:
        raise ValueError(f"gold: must be one of {', '.join(GOLD_FORMS)}, got {gold!r}")
    summary = summary if summary is not None else ExportSummary(bank_id)
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with conn.transaction():
        if idle:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        curation = _curation(conn, schema, bank_id, gold)
        written: set = set()
        with conn.cursor(name=f"entity_resolver_export_{uuid.uuid4().hex[:12]}") as cur:
            cur.itersize = BATCH
            cur.execute(_query(schema, gold), (bank_id,))
            for row in cur:
                line = _line(bank_id, row, summary)
                _describe(line, curation, written)
                yield line


def export_bank(conn: psycopg.Connection, bank_id: str, out: TextIO, *, schema: str = "entity_resolver",
                gold: str = "id") -> ExportSummary:
    """Write the bank's facts to ``out`` as JSON Lines; return what was written."""
    summary = ExportSummary(bank_id)
    for line in iter_bank(conn, bank_id, schema=schema, gold=gold, summary=summary):
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return summary
