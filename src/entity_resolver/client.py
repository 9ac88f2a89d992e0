"""A small typed client for the entity_resolver SQL functions.

    from entity_resolver.client import Client

    with Client("postgresql://localhost/app") as er:
        er.retain("team", ["Alex Morgan", "Acme", "renewal"], content="...")
        er.flush("team")
        r = er.resolve("team", "Alex", nearby=["Acme", "renewal"])
        for row in er.explain("team", "Alex", nearby=["Acme", "renewal"]):
            print(row.canonical_name, row.score, row.decision)
        op = er.merge("team", ["Alex M."], "Alex Morgan", reason="one person")   # a curator's correction
        er.undo("team", op["operation_id"])

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
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, TextIO, Union

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

try:  # psycopg-pool is a dependency, but the client must not need it to import
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover
    ConnectionPool = None  # type: ignore[assignment,misc]

from entity_resolver.build import internal_schema
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
class Lookup:
    """How a mention would resolve, without writing anything (a row of lookup_mention)."""

    mention: str
    entity_id: Optional[uuid.UUID]      # None: it would create a new entity
    canonical_name: Optional[str]
    score: Optional[float]
    decision: str                       # resolved, alias, memory, label; new when it would create one


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
    # chosen, outscored, below_threshold, word_mismatch, below_floor, label_row; the enhanced
    # profile's type_mismatch, ambiguous, needs_context; alias or memory for an exact hit
    decision: str
    matched_form: Optional[str] = None   # the form of the mention that found it (None: the mention)
    lever: Optional[str] = None          # the enhanced profile's lever that decided, if one did
    # whether resolution reads it for the mention called alone, as the session is set (a new entity
    # records the best score of those): False for a candidate outside the neighbourhood it read
    considered: Optional[bool] = None


@dataclass(frozen=True)
class Expansion:
    """A fact that shares entities with the seed facts (a row of expand_units)."""

    unit_id: uuid.UUID
    shared_entities: int
    fact_id: Optional[str] = None   # the caller's own id of the fact (facts.fact_id), when it has one


@dataclass(frozen=True)
class EntityFact:
    """A fact that mentions an entity (a row of entity_facts)."""

    fact_id: uuid.UUID              # the unit id (facts.id)
    content: Optional[str]          # None for a unit of retain or resolve outside ``facts``
    event_date: Optional[datetime]
    mention_text: str               # how the fact named the entity (its first mention of it)


@dataclass(frozen=True)
class Operation:
    """An operator correction in the bank's ledger (a row of operation_history)."""

    operation_id: int
    kind: str                   # merge, split, rename, add_alias, remove_alias, forget_entity, mark_distinct, ...
    summary: str
    performed_by: str
    performed_at: datetime
    reason: Optional[str]
    entity_ids: List[uuid.UUID]
    undone_at: Optional[datetime]
    undone_by: Optional[str]
    blocked_by: Optional[List[int]]   # later operations to undo first; None once undone


@dataclass(frozen=True)
class Judgement:
    """Two entities an operator judged distinct (a row of list_judgements; entity_a is the smaller id)."""

    entity_a: uuid.UUID
    name_a: str
    entity_b: uuid.UUID
    name_b: str
    judgement: str              # distinct
    reason: Optional[str]
    created_at: datetime
    created_by: str


@dataclass(frozen=True)
class ReviewItem:
    """Something an operator should look at (a row of review_queue), with the dry run that fixes it."""

    item: str                   # the key dismiss_review takes
    kind: str                   # likely_duplicate, likely_over_merge, close_call
    score: float               # numeric in SQL; a float here (JSON has no decimal)
    entity_ids: List[uuid.UUID]
    names: List[str]
    evidence: Dict[str, Any]
    fix: str                    # a dry-run call, valid SQL


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
    type: Optional[str] = None  # person, organization, place, ... (case-folded by the database)
    # What the mention says besides its name: {"email": ..., "birth_date": ...}
    # (identifying or distinguishing per bank; normalised by the database).
    attributes: Optional[Mapping[str, str]] = None

    def as_json(self) -> Any:
        out: Dict[str, Any] = {"text": self.text}
        if self.type is not None:
            out["type"] = self.type
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        if self.nearby is not None:
            out["nearby"] = list(self.nearby)
        if self.event_date is not None:
            out["event_date"] = _iso(self.event_date)
        if not self.resolve:
            out["resolve"] = False
        return out


MentionLike = Union[str, Mention, Mapping[str, Any]]
# An entity: its id, or its canonical name or an alias (case-insensitive).
EntityRef = Union[uuid.UUID, str]
# A fact (unit): its id, or the fact_id it was stored with.
FactRef = Union[uuid.UUID, str]


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


def _attributes(value: Optional[Mapping[str, str]]) -> Optional[Jsonb]:
    """A mention's attributes as the one-mention functions take them (jsonb; NULL for none)."""
    return None if value is None else Jsonb(dict(value))


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
        self._internal = sql.Identifier(internal_schema(schema))
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
        """A statement with ``{s}`` and ``{i}`` replaced by the quoted schema and internal schema names."""
        return sql.SQL(template).format(s=self._schema, i=self._internal)

    def _rows(self, template: str, params: Sequence[Any]) -> List[tuple]:
        with self._connection() as conn:
            return conn.execute(self._q(template), params).fetchall()

    # -- resolution -----------------------------------------------------------
    def resolve(self, bank_id: str, mention: str, nearby: Iterable[str] = (),
                event_date: When = None, resolve: bool = True,
                attributes: Optional[Mapping[str, str]] = None) -> Resolution:
        """Resolve one mention (creating the entity if needed); resolve_mention."""
        row = self._rows(
            "SELECT entity_id, canonical_name, created, score FROM {s}.resolve_mention("
            "%s, %s, %s::text[], coalesce(%s::timestamptz, now()), %s, %s)",
            (bank_id, mention, list(nearby), _when(event_date), resolve, _attributes(attributes)),
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
                event_date: When = None, mention_type: Optional[str] = None,
                attributes: Optional[Mapping[str, str]] = None) -> List[Explanation]:
        """Every candidate for a mention with its signals and decision; writes nothing."""
        rows = self._rows(
            "SELECT candidate_id, canonical_name, trigram_similarity, tokens_compatible,"
            " name_similarity, cooccurrence, recency, score, decision, matched_form, lever, considered"
            " FROM {s}.explain_mention(%s, %s, %s::text[], coalesce(%s::timestamptz, now()), %s, %s)",
            (bank_id, mention, list(nearby), _when(event_date), mention_type, _attributes(attributes)),
        )
        return [Explanation(*r) for r in rows]

    def lookup(self, bank_id: str, mention: str, nearby: Iterable[str] = (), event_date: When = None,
               mention_type: Optional[str] = None, attributes: Optional[Mapping[str, str]] = None) -> Lookup:
        """The entity resolve would choose for a mention, or a new one (decision ``new``); writes nothing."""
        row = self._rows(
            "SELECT entity_id, canonical_name, score, decision FROM {s}.lookup_mention("
            "%s, %s, %s::text[], coalesce(%s::timestamptz, now()), %s, %s)",
            (bank_id, mention, list(nearby), _when(event_date), mention_type, _attributes(attributes)),
        )[0]
        return Lookup(mention, *row)

    # -- write path -------------------------------------------------------------
    def retain(self, bank_id: str, mentions: Sequence[MentionLike], *, content: Optional[str] = None,
               event_date: When = None, fact_id: Union[uuid.UUID, str, None] = None) -> Retained:
        """Store a fact: insert it into ``facts``, whose trigger resolves and links its mentions.

        ``fact_id`` is a UUID or any string (mapped as ``entity-resolver import``
        maps it, and kept in ``facts.fact_id``); a new UUID when omitted.
        Statistics are applied at commit (unless ``flush_at_commit`` is off:
        then call ``flush``).
        """
        unit = _unit_id(fact_id) if fact_id is not None else uuid.uuid4()
        with self._atomic() as conn:
            conn.execute(
                self._q(
                    "INSERT INTO {s}.facts (bank_id, id, fact_id, content, mentions, event_date)"
                    " VALUES (%s, %s, %s, %s, %s, coalesce(%s::timestamptz, now()))"
                ),
                (bank_id, unit, None if fact_id is None else str(fact_id), content,
                 Jsonb([_mention_json(m) for m in mentions]), _when(event_date)),
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
        """Facts sharing entities with the seeds, most shared first; expand_units.

        Seeds are facts named by id or fact_id; each result carries the fact's
        own fact_id.
        """
        with self._connection() as conn:
            rows = conn.execute(self._q(
                "SELECT unit_id, shared_entities, fact_id FROM {s}.expand_units(%s, %s::uuid[], %s)"),
                (bank_id, self.unit_ids(bank_id, list(seed_unit_ids), conn), max_results)).fetchall()
        return [Expansion(r[0], int(r[1]), r[2]) for r in rows]

    def entity_facts(self, bank_id: str, entity: EntityRef, max_results: int = 50) -> List[EntityFact]:
        """The facts that mention an entity (by id, name or alias), newest first; entity_facts.

        An id merged away stands for the entity it became.
        """
        with self._connection() as conn:
            rows = conn.execute(self._q(
                "SELECT fact_id, content, event_date, mention_text FROM {s}.entity_facts(%s, %s, %s)"),
                (bank_id, self._entity_ids(bank_id, [entity], "entity", conn)[0], max_results)).fetchall()
        return [EntityFact(*r) for r in rows]

    def entity_graph(self, bank_id: str, around: Optional[EntityRef] = None, depth: int = 1,
                     max_nodes: int = 200) -> Dict[str, Any]:
        """A bounded neighbourhood of the co-occurrence graph (entity_graph): around an entity (id, name or
        alias) to ``depth`` levels, or the bank's most mentioned entities; ``{nodes, edges, ...}``."""
        with self._connection() as conn:
            center = None if around is None else self._entity_ids(bank_id, [around], "around", conn)[0]
            return conn.execute(self._q("SELECT {s}.entity_graph(%s, %s, %s, %s)"),
                                (bank_id, center, depth, max_nodes)).fetchone()[0]

    # -- correcting identity (a curator's; docs/corrections.md) ----------------------
    # Each returns the operation's plan as a dict, with the operation_id that
    # ``undo`` takes (None for a dry run). Entities may be named by id, or by
    # canonical name or alias (case-insensitive); facts by id or fact_id.

    def entity_id(self, bank_id: str, ref: EntityRef, argument: str = "entity") -> uuid.UUID:
        """The id of an entity named by id, canonical name or alias; ValueError when there is none."""
        return self._entity_ids(bank_id, [ref], argument)[0]

    def _entity_ids(self, bank_id: str, refs: Sequence[EntityRef], argument: str,
                    conn: Optional[psycopg.Connection] = None) -> List[uuid.UUID]:
        if isinstance(refs, (str, uuid.UUID)):
            raise TypeError(f"{argument}: a list of entities, not one")
        ids: List[Optional[uuid.UUID]] = []
        names: List[str] = []
        for ref in refs:
            parsed = _as_uuid(ref)
            ids.append(parsed)
            if parsed is None:
                names.append(str(ref))
        if names:
            with self._on(conn) as c:
                # The names are folded first (MATERIALIZED): fold_name() of a
                # column is not LEAKPROOF, which would keep a bank-bound role's
                # look-ups from the index (folded() of the stored name is).
                # Homonyms share a name: every entity of it, to refuse a guess.
                found = {r[0]: (r[1], r[2]) for r in c.execute(self._q(
                    "WITH n AS MATERIALIZED (SELECT u.name, {s}.fold_name(u.name) AS key"
                    "   FROM unnest(%s::text[]) AS u (name))"
                    " SELECT n.name,"
                    " ARRAY(SELECT e.id FROM {s}.entities e"
                    "   WHERE e.bank_id = %s AND {i}.folded(e.canonical_name) = n.key ORDER BY e.id),"
                    " (SELECT a.entity_id FROM {s}.entity_aliases a"
                    "   WHERE a.bank_id = %s AND {i}.folded(a.alias) = n.key)"
                    " FROM n"), (names, bank_id, bank_id)).fetchall()}
            for i, ref in enumerate(refs):
                if ids[i] is None:
                    named, alias = found.get(str(ref), ([], None))
                    _one_named(bank_id, str(ref), named, argument)
                    ids[i] = named[0] if named else alias
                    if ids[i] is None:
                        raise ValueError(f"{argument}: bank {bank_id!r} has no entity named {str(ref)!r}")
        return ids  # type: ignore[return-value]

    def unit_ids(self, bank_id: str, refs: Sequence[FactRef],
                 conn: Optional[psycopg.Connection] = None) -> List[uuid.UUID]:
        """The unit ids of facts named by id or fact_id (a string no fact has is mapped as the importer maps it)."""
        if isinstance(refs, (str, uuid.UUID)):
            raise TypeError("facts: a list of facts, not one")
        texts = [str(r) for r in refs]
        with self._on(conn) as c:
            rows = dict(c.execute(self._q("SELECT k.ref, f.id FROM unnest(%s::text[]) AS k (ref)"
                                          " JOIN {s}.facts f ON f.bank_id = %s AND f.fact_id = k.ref"),
                                  (texts, bank_id)).fetchall())
        return [rows.get(t) or _unit_id(r) for t, r in zip(texts, refs)]

    def _on(self, conn: Optional[psycopg.Connection]):
        """The given connection (a call's own transaction), or one of the client's."""
        return nullcontext(conn) if conn is not None else self._connection()

    def _correct(self, statement: str, resolve) -> Dict[str, Any]:
        with self._atomic() as conn:
            return conn.execute(self._q(statement), resolve(conn)).fetchone()[0]

    def merge(self, bank_id: str, sources: Sequence[EntityRef], target: EntityRef, *, dry_run: bool = False,
              reason: Optional[str] = None) -> Dict[str, Any]:
        """Merge ``sources`` into ``target`` (merge_entities)."""
        return self._correct(
            "SELECT {s}.merge_entities(%s, %s::uuid[], %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, sources, "sources", c),
                       self._entity_ids(bank_id, [target], "target", c)[0], dry_run, reason))

    def split(self, bank_id: str, entity: EntityRef, facts: Sequence[FactRef], new_name: str, *,
              dry_run: bool = False, reason: Optional[str] = None, keep_aliases: bool = True) -> Dict[str, Any]:
        """Move the entity's mentions in ``facts`` to a new entity named ``new_name`` (split_entity).

        ``aliases_shared`` in the result: the entity's aliases the moved
        mentions are written as; ``keep_aliases=False`` removes them.
        """
        return self._correct(
            "SELECT {s}.split_entity(%s, %s, %s::uuid[], %s, %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, [entity], "entity", c)[0],
                       self.unit_ids(bank_id, facts, c), new_name, dry_run, reason, keep_aliases))

    def rename(self, bank_id: str, entity: EntityRef, new_name: str, *,
               reason: Optional[str] = None) -> Dict[str, Any]:
        """Give an entity another canonical name; the old one stays as an alias (rename_entity)."""
        return self._correct(
            "SELECT {s}.rename_entity(%s, %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, [entity], "entity", c)[0], new_name, reason))

    def add_alias(self, bank_id: str, entity: EntityRef, alias: str) -> Dict[str, Any]:
        """Another name that resolves to the entity exactly (add_alias)."""
        return self._correct("SELECT {s}.add_alias(%s, %s, %s)",
                             lambda c: (bank_id, self._entity_ids(bank_id, [entity], "entity", c)[0], alias))

    def remove_alias(self, bank_id: str, alias: str) -> Dict[str, Any]:
        """Remove an alias (remove_alias)."""
        return self._correct("SELECT {s}.remove_alias(%s, %s)", lambda c: (bank_id, alias))

    def forget_entity(self, bank_id: str, entity: EntityRef, *, dry_run: bool = False,
                      reason: Optional[str] = None, erase: bool = False) -> Dict[str, Any]:
        """Remove an entity with its provenance, links, pairs and aliases (forget_entity).

        ``erase=True`` (a data-protection request) also rewrites the bank's
        ledger without its names: those operations cannot be undone
        (``operations_erased``), and ``facts_naming`` lists the facts that
        still name it.
        """
        return self._correct(
            "SELECT {s}.forget_entity(%s, %s, %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, [entity], "entity", c)[0], dry_run, reason, erase))

    def reresolve(self, bank_id: str, entities: Optional[Sequence[EntityRef]] = None, *,
                  since: Optional[Union[datetime, str]] = None, dry_run: bool = True,
                  reason: Optional[str] = None) -> Dict[str, Any]:
        """Decide the bank's stored facts again against the bank as it stands; a dry run unless ``dry_run=False``.

        ``entities``: only the mentions of these entities; ``since``: only the
        facts dated since. The plan lists the ``moves`` (mention, fact, from,
        to, old and new score, why) and what was ``kept`` and why (reresolve).
        """
        return self._correct(
            "SELECT {s}.reresolve(%s, %s::uuid[], %s::timestamptz, %s, %s)",
            lambda c: (bank_id, None if entities is None else self._entity_ids(bank_id, entities, "entities", c),
                       since, dry_run, reason))

    def reresolve_queued(self, bank_id: str, max_facts: int = 100, *, dry_run: bool = True,
                         reason: Optional[str] = None) -> Dict[str, Any]:
        """Decide again the neighbourhood of the bank's oldest queued facts (auto_reresolve); a dry run unless
        ``dry_run=False``, which also takes them off the queue (reresolve_queued)."""
        return self._correct("SELECT {s}.reresolve_queued(%s, %s, %s, %s)",
                             lambda c: (bank_id, max_facts, dry_run, reason))

    def mark_distinct(self, bank_id: str, a: EntityRef, b: EntityRef, *, reason: Optional[str] = None,
                      dry_run: bool = False) -> Dict[str, Any]:
        """Judge two entities distinct: no merge may make them one until unmarked (mark_distinct)."""
        return self._correct(
            "SELECT {s}.mark_distinct(%s, %s, %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, [a], "a", c)[0],
                       self._entity_ids(bank_id, [b], "b", c)[0], reason, dry_run))

    def unmark_distinct(self, bank_id: str, a: EntityRef, b: EntityRef, *, dry_run: bool = False) -> Dict[str, Any]:
        """Remove the judgement that two entities are distinct (unmark_distinct)."""
        return self._correct(
            "SELECT {s}.unmark_distinct(%s, %s, %s, %s)",
            lambda c: (bank_id, self._entity_ids(bank_id, [a], "a", c)[0],
                       self._entity_ids(bank_id, [b], "b", c)[0], dry_run))

    def judgements(self, bank_id: str, entity: Optional[EntityRef] = None) -> List[Judgement]:
        """The bank's judgements, or those of one entity (list_judgements)."""
        with self._connection() as conn:
            one = None if entity is None else self._entity_ids(bank_id, [entity], "entity", conn)[0]
            rows = conn.execute(self._q(
                "SELECT entity_a, name_a, entity_b, name_b, judgement, reason, created_at, created_by"
                " FROM {s}.list_judgements(%s, %s)"), (bank_id, one)).fetchall()
        return [Judgement(*r) for r in rows]

    def review(self, bank_id: str, *, limit: int = 50) -> List[ReviewItem]:
        """What to review in the bank, best first (review_queue)."""
        with self._connection() as conn:
            rows = conn.execute(self._q(
                "SELECT item, kind, score, entity_ids, names, evidence, fix FROM {s}.review_queue(%s, %s)"),
                (bank_id, limit)).fetchall()
        return [ReviewItem(r[0], r[1], float(r[2]), *r[3:]) for r in rows]

    def dismiss_review(self, bank_id: str, item: str, *, reason: Optional[str] = None) -> Dict[str, Any]:
        """Dismiss a review item until its evidence grows (dismiss_review)."""
        return self._correct("SELECT {s}.dismiss_review(%s, %s, %s)", lambda c: (bank_id, item, reason))

    def undo(self, bank_id: str, operation_id: int) -> Dict[str, Any]:
        """Undo an operation (undo_operation)."""
        return self._correct("SELECT {s}.undo_operation(%s, %s)", lambda c: (bank_id, operation_id))

    def drop_bank(self, bank_id: str, *, dry_run: bool = True) -> Dict[str, Any]:
        """Delete a bank and every row of it, counted per table (drop_bank; administrators only).

        ``dry_run`` (the default) only counts. It cannot be undone.
        """
        return self._correct("SELECT {s}.drop_bank(%s, %s)", lambda c: (bank_id, dry_run))

    def history(self, bank_id: str, max_results: int = 50) -> List[Operation]:
        """The bank's corrections, most recent first (operation_history)."""
        rows = self._rows(
            "SELECT operation_id, kind, summary, performed_by, performed_at, reason, entity_ids, undone_at,"
            " undone_by, blocked_by FROM {s}.operation_history(%s, %s)", (bank_id, max_results))
        return [Operation(*r) for r in rows]

    def current_entity(self, bank_id: str, entity_id: Union[uuid.UUID, str]) -> Optional[uuid.UUID]:
        """The entity an id stands for now: itself, what it was merged into, or None (current_entity)."""
        return self._rows("SELECT {s}.current_entity(%s, %s)", (bank_id, entity_id))[0][0]

    def export(self, bank_id: str, out: Optional[TextIO] = None, *, gold: str = "id") -> Any:
        """The bank's facts in the import format, with each mention's entity as ``gold``.

        With ``out`` (a text file), writes JSON Lines and returns the
        ExportSummary; without, returns an iterator of the lines as dicts
        (it holds a connection until exhausted).
        """
        from entity_resolver.exporter import export_bank, iter_bank

        if out is None:
            def lines() -> Iterator[Dict[str, Any]]:
                with self._connection() as conn:
                    yield from iter_bank(conn, bank_id, schema=self.schema, gold=gold)
            return lines()
        with self._connection() as conn:
            return export_bank(conn, bank_id, out, schema=self.schema, gold=gold)

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
            " WHERE bank_id = %s AND {i}.folded(name) = {s}.fold_name(%s)",
            (bank_id, name),
        )
        _one_named(bank_id, name, [r[0] for r in rows], "name")
        return self._entity(rows[0]) if rows else None

    def homonym_labels(self, bank_id: str, ids: Iterable[Union[str, uuid.UUID]]) -> Dict[str, str]:
        """entity id -> a name that tells it from its homonyms (entities of the bank sharing its name), for those
        among ``ids`` that have any: 'Maria Schmidt (birth_date 1961-05-03, 3f2a9c1e)', the name, a distinguishing
        attribute it holds, and its id's first 8 digits (the database's rule, as corrections' summaries show it)."""
        ids = sorted({str(i) for i in ids if i is not None})
        if not ids:
            return {}
        rows = self._rows(
            "SELECT id, canonical_name, {i}._homonym_tag(bank_id, id, canonical_name) FROM {s}.entities"
            " WHERE bank_id = %s AND id = ANY(%s::uuid[])",
            (bank_id, ids))
        return {str(r[0]): f"{r[1]} ({r[2]})" for r in rows if r[2] is not None}

    def find_entities(self, bank_id: str, name: str, limit: int = 20) -> List[Entity]:
        """Entities whose name starts with ``name`` (case-insensitive): the name itself first, then most mentioned."""
        rows = self._rows(
            "WITH k AS MATERIALIZED (SELECT {s}.fold_name(%s) AS key)"
            " SELECT " + self._ENTITY_COLUMNS + " FROM {s}.entity_overview, k"
            " WHERE bank_id = %s AND left({i}.folded(name), char_length(k.key)) = k.key"
            " ORDER BY {i}.folded(name) = k.key DESC, mention_count DESC, lower(name), entity_id LIMIT %s",
            (name, bank_id, limit),
        )
        return [self._entity(r) for r in rows]

    def neighbors(self, bank_id: str, name: str, limit: int = 50) -> List[Neighbor]:
        """Entities seen in the same facts as ``name`` (case-insensitive), most often first.

        Refused (AmbiguousName) when homonyms share the name: their
        neighbourhoods are not one."""
        self.find_entity(bank_id, name)
        rows = self._rows(
            "SELECT entity_name, neighbor_id, neighbor_name, cooccurrence_count, last_cooccurred"
            " FROM {s}.entity_neighbors WHERE bank_id = %s AND {i}.folded(entity_name) = {s}.fold_name(%s)"
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


class AmbiguousName(ValueError):
    """A name several entities (homonyms) bear, given where one entity is meant: refused, never one picked.

    A ValueError (a bad argument), with the SQLSTATE the SQL functions give
    one (22023) and the ids (``ids``) to choose from."""

    sqlstate = "22023"

    def __init__(self, message: str, ids: Sequence[Any]):
        super().__init__(message)
        self.ids = list(ids)


def _one_named(bank_id: str, name: str, ids: Sequence[Any], argument: str) -> None:
    """Refuse a name several entities (homonyms) bear: the caller names one by id."""
    if len(ids) > 1:
        raise AmbiguousName(f"{argument}: bank {bank_id!r} has {len(ids)} entities named {name!r} (homonyms): "
                            f"name one by id ({', '.join(str(i) for i in ids)})", ids)


def _as_uuid(value: Any) -> Optional[uuid.UUID]:
    """A UUID given as such or as its canonical text; None for anything else (a name)."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        parsed = uuid.UUID(str(value))
    except ValueError:
        return None
    return parsed if str(parsed) == str(value).lower() else None


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
