"""A small typed client for the entity_resolver SQL functions.

    from entity_resolver.client import Client

    with Client("postgresql://localhost/app") as er:
        er.retain("team", ["Alex Morgan", "Acme", "renewal"], content="...")
        er.flush("team")
        r = er.resolve("team", "Alex", nearby=["Acme", "renewal"])
        for row in er.explain("team", "Alex", nearby=["Acme", "renewal"]):
            print(row.canonical_name, row.score, row.decision)

``Client`` takes a DSN (it then owns one autocommit connection, closed by
``close()`` or the ``with`` block), a psycopg ``Connection`` or a
``psycopg_pool.ConnectionPool``. There is no global state: every client holds
its own connection source and schema name.

Transactions. With a DSN or a pool, every call is its own transaction. With a
connection you pass in, the client works in whatever state it finds it: in
autocommit mode each call commits by itself; otherwise the calls join your
transaction and you commit (calls made of several statements, such as
``retain``, run inside a savepoint so they are all or nothing).

Errors are psycopg exceptions, carrying the SQLSTATE and the message the
database gave (``exc.sqlstate``, ``exc.diag.message_primary``).
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

try:  # psycopg-pool is a dependency, but the client must not need it to import
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover
    ConnectionPool = None  # type: ignore[assignment,misc]

from entity_resolver.importer import fact_uuid

DEFAULT_SCHEMA = "entity_resolver"

# An event date: a datetime, an ISO 8601 string or anything PostgreSQL reads as
# timestamptz ('2026-03-01', 'yesterday'); None means now().
When = Union[datetime, str, None]


# -- results ----------------------------------------------------------------

@dataclass(frozen=True)
class Resolution:
    """What one mention resolved to (a row of resolve_mention / resolve_mentions)."""

    mention: str
    entity_id: uuid.UUID
    canonical_name: str
    created: bool
    score: Optional[float]      # best score seen; None when there was no candidate
    ord: int = 1                # position in the input, from 1


@dataclass(frozen=True)
class Explanation:
    """One candidate considered for a mention, with its signals (a row of explain_mention)."""

    candidate_id: uuid.UUID
    canonical_name: str
    trigram_similarity: Optional[float]
    tokens_compatible: Optional[bool]
    name_similarity: Optional[float]
    cooccurrence: Optional[float]
    recency: Optional[float]
    score: Optional[float]
    decision: str               # chosen, outscored, below_threshold, word_mismatch, below_floor, label_row


@dataclass(frozen=True)
class Expansion:
    """A fact that shares entities with the seed facts (a row of expand_units)."""

    unit_id: uuid.UUID
    shared_entities: int


@dataclass(frozen=True)
class FlushResult:
    entities_updated: int
    pairs_updated: int


@dataclass(frozen=True)
class LinkedEntity:
    entity_id: uuid.UUID
    canonical_name: str
    entity_kind: str


@dataclass(frozen=True)
class Retained:
    """A stored fact and the entities its mentions were linked to."""

    bank_id: str
    fact_id: uuid.UUID
    entities: List[LinkedEntity]


@dataclass(frozen=True)
class Entity:
    """A row of the entity_overview view."""

    entity_id: uuid.UUID
    canonical_name: str
    entity_kind: str
    mention_count: int
    degree: int
    first_seen: Optional[datetime]
    last_seen: Optional[datetime]


@dataclass(frozen=True)
class Neighbor:
    """A row of the entity_neighbors view: an entity seen in the same facts."""

    entity_name: str
    neighbor_id: uuid.UUID
    neighbor_name: str
    cooccurrence_count: int
    last_cooccurred: Optional[datetime]


@dataclass(frozen=True)
class Mention:
    """A mention in the resolve_mentions element format.

    ``nearby`` None means "the other mentions of the same fact"; ``resolve``
    False stores the text literally (exact match or a new entity, no scoring).
    """

    text: str
    nearby: Optional[Sequence[str]] = None
    event_date: When = None
    resolve: bool = True

    def as_json(self) -> Any:
        out: Dict[str, Any] = {"text": self.text}
        if self.nearby is not None:
            out["nearby"] = list(self.nearby)
        if self.event_date is not None:
            out["event_date"] = _iso(self.event_date)
        if not self.resolve:
            out["resolve"] = False
        return out


MentionLike = Union[str, Mention, Mapping[str, Any]]


def _iso(value: Union[datetime, str]) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _mention_json(m: MentionLike) -> Any:
    if isinstance(m, Mention):
        return m.as_json()
    if isinstance(m, str):
        return m
    if isinstance(m, Mapping):
        out = dict(m)
        if isinstance(out.get("event_date"), datetime):
            out["event_date"] = out["event_date"].isoformat()
        return out
    raise TypeError(f"a mention is a str, a Mention or a mapping, not {type(m).__name__}")


def _unit_id(value: Union[uuid.UUID, str]) -> uuid.UUID:
    """A fact id: a UUID as is, any other string mapped as the importer maps it."""
    if isinstance(value, uuid.UUID):
        return value
    return fact_uuid(str(value))


class Client:
    """Calls entity_resolver's SQL functions; see the module docstring."""

    def __init__(self, source: Union[str, psycopg.Connection, "ConnectionPool"], *,
                 schema: str = DEFAULT_SCHEMA):
        if not isinstance(schema, str) or not schema:
            raise ValueError("schema: must be a non-empty name")
        self.schema = schema
        self._schema = sql.Identifier(schema)
        self._pool = None
        self._conn: Optional[psycopg.Connection] = None
        self._owned = False
        if isinstance(source, str):
            self._conn = psycopg.connect(source, autocommit=True)
            self._owned = True
        elif isinstance(source, psycopg.Connection):
            self._conn = source
        elif ConnectionPool is not None and isinstance(source, ConnectionPool):
            self._pool = source
        else:
            raise TypeError("Client needs a DSN string, a psycopg Connection or a psycopg_pool ConnectionPool")

    # -- connection plumbing ------------------------------------------------
    def close(self) -> None:
        """Close the connection if the client opened it (a DSN); never a borrowed one."""
        if self._owned and self._conn is not None:
            self._conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        if self._pool is not None:
            with self._pool.connection() as conn:
                yield conn
        else:
            yield self._conn  # type: ignore[misc]

    @contextmanager
    def _atomic(self, force_rollback: bool = False) -> Iterator[psycopg.Connection]:
        """A connection with a transaction block around the statements of one call.

        In autocommit mode that is a transaction of its own. Otherwise it is a
        savepoint in the caller's transaction: psycopg would begin *and
        commit* a transaction on an idle connection, so one is begun first
        and left open for the caller to commit or roll back.
        """
        with self._connection() as conn:
            if not conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                conn.execute("SELECT")
            with conn.transaction(force_rollback=force_rollback):
                yield conn

    def _q(self, template: str) -> sql.Composed:
        """A statement with ``{s}`` replaced by the quoted schema name."""
        return sql.SQL(template).format(s=self._schema)

    def _rows(self, template: str, params: Sequence[Any]) -> List[tuple]:
        with self._connection() as conn:
            return conn.execute(self._q(template), params).fetchall()

    # -- resolution -----------------------------------------------------------
    def resolve(self, bank_id: str, mention: str, nearby: Iterable[str] = (),
                event_date: When = None, resolve: bool = True) -> Resolution:
        """Resolve one mention (creating the entity if needed); resolve_mention."""
        row = self._rows(
            "SELECT entity_id, canonical_name, created, score FROM {s}.resolve_mention("
            "%s, %s, %s::text[], coalesce(%s::timestamptz, now()), %s)",
            (bank_id, mention, list(nearby), _when(event_date), resolve),
        )[0]
        return Resolution(mention, row[0], row[1], row[2], row[3])

    def resolve_many(self, bank_id: str, mentions: Sequence[MentionLike],
                     event_date: When = None) -> List[Resolution]:
        """Resolve a batch of mentions together, in input order; resolve_mentions.

        Mentions without ``nearby`` use the other mention texts of the batch.
        """
        rows = self._rows(
            "SELECT ord, mention, entity_id, canonical_name, created, score FROM {s}.resolve_mentions("
            "%s, %s, coalesce(%s::timestamptz, now())) ORDER BY ord",
            (bank_id, Jsonb([_mention_json(m) for m in mentions]), _when(event_date)),
        )
        return [Resolution(r[1], r[2], r[3], r[4], r[5], r[0]) for r in rows]

    def explain(self, bank_id: str, mention: str, nearby: Iterable[str] = (),
                event_date: When = None) -> List[Explanation]:
        """Every candidate for a mention with its signals and decision; writes nothing."""
        rows = self._rows(
            "SELECT candidate_id, canonical_name, trigram_similarity, tokens_compatible,"
            " name_similarity, cooccurrence, recency, score, decision"
            " FROM {s}.explain_mention(%s, %s, %s::text[], coalesce(%s::timestamptz, now()))",
            (bank_id, mention, list(nearby), _when(event_date)),
        )
        return [Explanation(*r) for r in rows]

    # -- write path -------------------------------------------------------------
    def retain(self, bank_id: str, mentions: Sequence[MentionLike], *, content: Optional[str] = None,
               event_date: When = None, fact_id: Union[uuid.UUID, str, None] = None) -> Retained:
        """Store a fact: insert it into ``facts``, whose trigger resolves and links its mentions.

        ``fact_id`` is a UUID or any string (mapped as ``entity-resolver import``
        maps it); a new UUID when omitted. Statistics are queued; call
        ``flush`` to apply them.
        """
        unit = _unit_id(fact_id) if fact_id is not None else uuid.uuid4()
        with self._atomic() as conn:
            conn.execute(
                self._q(
                    "INSERT INTO {s}.facts (bank_id, id, content, mentions, event_date)"
                    " VALUES (%s, %s, %s, %s, coalesce(%s::timestamptz, now()))"
                ),
                (bank_id, unit, content, Jsonb([_mention_json(m) for m in mentions]), _when(event_date)),
            )
            rows = conn.execute(
                self._q(
                    "SELECT e.id, e.canonical_name, e.entity_kind FROM {s}.unit_entities u"
                    " JOIN {s}.entities e ON e.bank_id = u.bank_id AND e.id = u.entity_id"
                    " WHERE u.bank_id = %s AND u.unit_id = %s ORDER BY lower(e.canonical_name), e.id"
                ),
                (bank_id, unit),
            ).fetchall()
        return Retained(bank_id, unit, [LinkedEntity(*r) for r in rows])

    def link(self, bank_id: str, unit_id: Union[uuid.UUID, str], entity_ids: Iterable[uuid.UUID],
             event_date: When = None) -> None:
        """Link a unit of your own (not a row of ``facts``) to resolved entities; link_unit."""
        self._rows(
            "SELECT FROM {s}.link_unit(%s, %s, %s::uuid[], coalesce(%s::timestamptz, now()))",
            (bank_id, _unit_id(unit_id), list(entity_ids), _when(event_date)),
        )

    def flush(self, bank_id: Optional[str] = None) -> FlushResult:
        """Apply queued statistics (all banks when ``bank_id`` is None); flush_stats."""
        row = self._rows("SELECT entities_updated, pairs_updated FROM {s}.flush_stats(%s)", (bank_id,))[0]
        return FlushResult(int(row[0] or 0), int(row[1] or 0))

    # -- retrieval ----------------------------------------------------------------
    def expand(self, bank_id: str, seed_unit_ids: Iterable[Union[uuid.UUID, str]],
               max_results: int = 50) -> List[Expansion]:
        """Facts sharing entities with the seeds, most shared first; expand_units."""
        rows = self._rows(
            "SELECT unit_id, shared_entities FROM {s}.expand_units(%s, %s::uuid[], %s)",
            (bank_id, [_unit_id(u) for u in seed_unit_ids], max_results),
        )
        return [Expansion(r[0], int(r[1])) for r in rows]

    # -- banks --------------------------------------------------------------------
    def configure(self, bank_id: str, settings: Optional[Mapping[str, Any]] = None, *,
                  replace: bool = False, **more: Any) -> Dict[str, Any]:
        """Change a bank's settings (threshold, weights, ...); return the effective settings.

        By default the given keys are merged into the bank's current overrides
        and a key set to None goes back to its default. ``replace=True``
        makes the given keys the only overrides, as ``configure_bank`` does.
        """
        values = dict(settings or {}, **more)
        with self._atomic() as conn:
            if not replace:
                row = conn.execute(
                    self._q("SELECT settings FROM {s}.banks WHERE bank_id = %s FOR UPDATE"), (bank_id,)
                ).fetchone()
                merged = dict(row[0]) if row and row[0] else {}
                merged.update(values)
                values = merged
            values = {k: v for k, v in values.items() if v is not None}
            return conn.execute(self._q("SELECT {s}.configure_bank(%s, %s)"), (bank_id, Jsonb(values))).fetchone()[0]

    def settings(self, bank_id: str) -> Dict[str, Any]:
        """The bank's effective settings (defaults plus its overrides); writes nothing."""
        with self._atomic(force_rollback=True) as conn:
            # configure_bank is the one place that knows the defaults; run it
            # with the stored overrides and roll back.
            return conn.execute(
                self._q("SELECT {s}.configure_bank(%s, coalesce("
                        "(SELECT settings FROM {s}.banks WHERE bank_id = %s), '{{}}'::jsonb))"),
                (bank_id, bank_id),
            ).fetchone()[0]

    def overrides(self, bank_id: str) -> Dict[str, Any]:
        """The settings the bank overrides (empty: all defaults)."""
        rows = self._rows("SELECT settings FROM {s}.banks WHERE bank_id = %s", (bank_id,))
        return dict(rows[0][0]) if rows and rows[0][0] else {}

    def set_labels(self, bank_id: str, labels: Mapping[str, Any]) -> Dict[str, Any]:
        """Declare the bank's label vocabulary; return it as stored."""
        return self._rows("SELECT {s}.set_entity_labels(%s, %s)", (bank_id, Jsonb(dict(labels))))[0][0]

    def labels(self, bank_id: str) -> Dict[str, Any]:
        """The bank's label vocabulary as stored (empty when it declares none)."""
        rows = self._rows("SELECT entity_labels FROM {s}.banks WHERE bank_id = %s", (bank_id,))
        return rows[0][0] if rows and rows[0][0] else {}

    def labels_json_schema(self, bank_id: str) -> Dict[str, Any]:
        """The bank's label vocabulary as a JSON Schema, for an extractor."""
        return self._rows("SELECT {s}.entity_labels_json_schema(%s)", (bank_id,))[0][0]

    # -- inspection -----------------------------------------------------------------
    def bank_exists(self, bank_id: str) -> bool:
        """Whether the bank exists (and, under row-level security, this role may see it)."""
        return bool(self._rows("SELECT EXISTS (SELECT FROM {s}.banks WHERE bank_id = %s)", (bank_id,))[0][0])

    def bank_ids(self, limit: int = 1000) -> List[str]:
        """The ids of the banks this role may see, in order (at most ``limit``)."""
        return [r[0] for r in self._rows("SELECT bank_id FROM {s}.banks ORDER BY bank_id LIMIT %s", (limit,))]

    _ENTITY_COLUMNS = "entity_id, name, kind, mention_count, degree, first_seen, last_seen"

    @staticmethod
    def _entity(r: tuple) -> Entity:
        return Entity(r[0], r[1], r[2], int(r[3] or 0), int(r[4] or 0), r[5], r[6])

    def entities(self, bank_id: str, top: int = 20, kind: Optional[str] = None) -> List[Entity]:
        """The bank's entities, most mentioned first (the entity_overview view)."""
        rows = self._rows(
            "SELECT " + self._ENTITY_COLUMNS + " FROM {s}.entity_overview"
            " WHERE bank_id = %s AND (%s::text IS NULL OR kind = %s)"
            " ORDER BY mention_count DESC, degree DESC, lower(name), entity_id LIMIT %s",
            (bank_id, kind, kind, top),
        )
        return [self._entity(r) for r in rows]

    def find_entity(self, bank_id: str, name: str) -> Optional[Entity]:
        """The entity whose name equals ``name`` case-insensitively (by PostgreSQL's lower())."""
        rows = self._rows(
            "SELECT " + self._ENTITY_COLUMNS + " FROM {s}.entity_overview"
            " WHERE bank_id = %s AND lower(name) = {s}.fold_name(%s)",
            (bank_id, name),
        )
        return self._entity(rows[0]) if rows else None

    def neighbors(self, bank_id: str, name: str, limit: int = 50) -> List[Neighbor]:
        """Entities seen in the same facts as ``name`` (case-insensitive), most often first."""
        rows = self._rows(
            "SELECT entity_name, neighbor_id, neighbor_name, cooccurrence_count, last_cooccurred"
            " FROM {s}.entity_neighbors WHERE bank_id = %s AND lower(entity_name) = {s}.fold_name(%s)"
            " ORDER BY cooccurrence_count DESC, lower(neighbor_name), neighbor_id LIMIT %s",
            (bank_id, name, limit),
        )
        return [Neighbor(r[0], r[1], r[2], int(r[3] or 0), r[4]) for r in rows]

    def fact_contents(self, bank_id: str, fact_ids: Iterable[Union[uuid.UUID, str]]) -> Dict[uuid.UUID, Optional[str]]:
        """The content of the given rows of ``facts`` (ids absent from ``facts`` are left out)."""
        rows = self._rows(
            "SELECT id, content FROM {s}.facts WHERE bank_id = %s AND id = ANY(%s::uuid[])",
            (bank_id, [_unit_id(u) for u in fact_ids]),
        )
        return {r[0]: r[1] for r in rows}

    def similar_names(self, bank_id: str, name: str, limit: int = 5) -> List[str]:
        """Names of the bank that contain ``name`` (case-insensitive), shortest first."""
        rows = self._rows(
            "SELECT canonical_name FROM {s}.entities WHERE bank_id = %s"
            " AND strpos(lower(canonical_name), {s}.fold_name(%s)) > 0"
            " ORDER BY char_length(canonical_name), lower(canonical_name) LIMIT %s",
            (bank_id, name, limit),
        )
        return [r[0] for r in rows]


def _when(value: When) -> Optional[str]:
    """An event date as text for a ``::timestamptz`` cast (None stays None: now())."""
    if value is None:
        return None
    return _iso(value)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, UUIDs and datetimes as plain JSON values (for --json output)."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(asdict(value))
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False, indent=2)
