"""Typed tool functions for agents: one module that every agent surface wraps.

The MCP server (``entity_resolver.mcp_server``, ``entity-resolver mcp``) and
the LangChain adapter (``entity_resolver.langchain_tools``) both expose
:data:`TOOLS`, built from the typed functions below, so the two cannot drift:
the JSON schema of a tool is generated from its function's signature (pydantic),
its description is the function's docstring, its annotations are the spec's.

Each function takes a :class:`Toolbox` first (a connection source, the schema
and the banks a server may touch; no other state) and makes one call of the
client, that is of one SQL function. Repairs are dry runs unless ``apply`` is
true: merge and split through their SQL ``dry_run``, the others (rename,
alias, unalias, undo) inside a transaction that is rolled back, so the plan is
the one the database would carry out. Every failure is a :class:`ToolFailure`
carrying the SQLSTATE and the message (nothing is written then).

Needs pydantic (a dependency of the ``mcp`` and ``langchain`` extras), not the
core install.
"""

import functools
import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Union

import psycopg
from pydantic import BaseModel, BeforeValidator, Field

from entity_resolver.client import DEFAULT_SCHEMA, Client, Mention, to_jsonable
from entity_resolver.render import TAKEN

try:  # a dependency of the core install
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # pragma: no cover
    ConnectionPool = None  # type: ignore[assignment,misc]
    PoolTimeout = TimeoutError  # type: ignore[assignment,misc]


class ToolFailure(Exception):
    """A tool call that failed: the database's SQLSTATE (None for the server's own checks) and message."""

    def __init__(self, message: str, sqlstate: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate

    def __str__(self) -> str:
        return f"SQLSTATE {self.sqlstate}: {self.message}" if self.sqlstate else self.message


def _one_or_many(value: Any) -> Any:
    """Tolerant parsing: a single string where a list is expected is a list of one."""
    if isinstance(value, (str, dict)):
        return [value]
    return value


Bank = Annotated[str, Field(description="The bank (memory) id.")]
EntityRef = Annotated[str, Field(description="An entity: its id, its canonical name or an alias (case-insensitive).")]
Names = Annotated[List[str], BeforeValidator(_one_or_many)]
Nearby = Annotated[Names, Field(
    description="Other mentions of the same fact or conversation: the context that tells namesakes apart.")]
EventDate = Annotated[Optional[str], Field(
    description="When it happened (ISO 8601); default now.")]
MentionType = Annotated[Optional[str], Field(description="The mention's type: person, organization, place, ...")]
Attributes = Annotated[Optional[Dict[str, str]], Field(
    description="What the mention says besides its name, e.g. {\"email\": \"maria@example.org\", \"birth_date\": "
                "\"1961-05-03\"}: an email (phone, url, handle) held by one entity identifies it; another birth date "
                "rules an entity out (two people of one name).")]
Apply = Annotated[bool, Field(description="false (default): a dry run, nothing written; true: carry it out.")]
Reason = Annotated[Optional[str], Field(description="Why, for the history.")]
Limit = Annotated[int, Field(ge=1, le=1000, description="At most this many rows.")]


class MentionIn(BaseModel):
    """One mention of a fact: its text, and optionally its type and context."""

    text: str
    type: Optional[str] = None
    nearby: Optional[List[str]] = None
    attributes: Optional[Dict[str, str]] = None


MentionList = Annotated[List[Union[str, MentionIn]], BeforeValidator(_one_or_many), Field(
    description="The fact's mentions: strings, or objects {text, type, nearby, attributes}.")]


class Toolbox:
    """What a tool needs: a connection source, the schema, and the banks it may touch (None: any)."""

    def __init__(self, source: Union[str, "ConnectionPool", psycopg.Connection], *,
                 schema: str = DEFAULT_SCHEMA, banks: Optional[Iterable[str]] = None):
        self.schema = schema
        self.banks: Optional[FrozenSet[str]] = frozenset(banks) if banks else None
        self._owned = None
        if isinstance(source, str):
            source = self._owned = ConnectionPool(source, min_size=1, max_size=4, open=True,
                                                  kwargs={"autocommit": True},
                                                  check=ConnectionPool.check_connection)
        self.source = source
        self.client = Client(source, schema=schema)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()

    def check_bank(self, bank_id: str) -> None:
        if self.banks is not None and bank_id not in self.banks:
            raise ToolFailure(f"bank_id: {bank_id!r} is not a bank this server serves "
                              f"(it serves {', '.join(sorted(self.banks))})")

    @contextmanager
    def rolled_back(self) -> Iterator[Client]:
        """A client whose calls run in one transaction that is rolled back (a dry run)."""
        if isinstance(self.source, psycopg.Connection):
            with self.source.transaction(force_rollback=True):
                yield Client(self.source, schema=self.schema)
            return
        with self.source.connection() as conn:
            with conn.transaction(force_rollback=True):
                yield Client(conn, schema=self.schema)


def _dry(plan: Dict[str, Any]) -> Dict[str, Any]:
    """A plan computed in a rolled-back transaction, marked as the dry run it was."""
    return dict(plan, dry_run=True, operation_id=None)


# -- look-ups -------------------------------------------------------------------

def lookup(tb: Toolbox, bank_id: Bank, mention: Annotated[str, Field(description="The mention text.")],
           nearby: Nearby = [], type: MentionType = None, event_date: EventDate = None,
           attributes: Attributes = None) -> Dict[str, Any]:
    """Which entity a mention would resolve to (or that it would be new), given its context. Writes nothing."""
    r = tb.client.lookup(bank_id, mention, nearby, event_date, type, attributes=attributes)
    return to_jsonable(r)


def explain(tb: Toolbox, bank_id: Bank, mention: Annotated[str, Field(description="The mention text.")],
            nearby: Nearby = [], type: MentionType = None, event_date: EventDate = None,
            limit: Limit = 10, attributes: Attributes = None) -> Dict[str, Any]:
    """Every candidate for a mention with its signals (name, co-occurrence, recency), score and decision:
    why one is chosen and the others not. Writes nothing."""
    rows = tb.client.explain(bank_id, mention, nearby, event_date, type, attributes=attributes)
    chosen = next((r for r in rows if r.decision in TAKEN), None)
    return {"mention": mention, "resolves_to": to_jsonable(chosen), "candidates": to_jsonable(rows[:limit]),
            "more": max(0, len(rows) - limit)}


def find_entities(tb: Toolbox, bank_id: Bank,
                  name: Annotated[str, Field(description="A name or the start of one (case-insensitive).")],
                  limit: Limit = 20) -> Dict[str, Any]:
    """Entities whose name is or starts with `name`, with their mention counts and degree."""
    return {"entities": to_jsonable(tb.client.find_entities(bank_id, name, limit))}


def entity_facts(tb: Toolbox, bank_id: Bank, entity: EntityRef, limit: Limit = 20) -> Dict[str, Any]:
    """The facts that mention an entity, newest first, each with how it named the entity."""
    return {"facts": to_jsonable(tb.client.entity_facts(bank_id, entity, limit))}


def neighbors(tb: Toolbox, bank_id: Bank,
              name: Annotated[str, Field(description="The entity's canonical name (case-insensitive).")],
              limit: Limit = 20) -> Dict[str, Any]:
    """Entities seen in the same facts as this one, most often first."""
    return {"neighbors": to_jsonable(tb.client.neighbors(bank_id, name, limit))}


def review(tb: Toolbox, bank_id: Bank, limit: Limit = 20) -> Dict[str, Any]:
    """What most likely needs a repair (likely duplicates, likely over-merges), best first, each with its
    evidence and the dry-run call that would fix it."""
    return {"items": to_jsonable(tb.client.review(bank_id, limit=limit))}


def history(tb: Toolbox, bank_id: Bank, limit: Limit = 20) -> Dict[str, Any]:
    """The bank's corrections (merges, splits, renames, aliases, ...), most recent first, and what blocks an undo."""
    return {"operations": to_jsonable(tb.client.history(bank_id, limit))}


# -- writing --------------------------------------------------------------------

def retain(tb: Toolbox, bank_id: Bank, mentions: MentionList,
           content: Annotated[Optional[str], Field(description="The fact's text, stored as given.")] = None,
           event_date: EventDate = None,
           fact_id: Annotated[Optional[str], Field(description="Your own id of the fact; default a new one.")] = None
           ) -> Dict[str, Any]:
    """Store a fact with its mentions: each mention is resolved to an entity (or a new one) and linked."""
    items: List[Any] = []
    for m in mentions:
        if isinstance(m, dict):   # (an adapter may hand the validated model back as a dict)
            m = MentionIn.model_validate(m)
        items.append(m if isinstance(m, str) else Mention(m.text, nearby=m.nearby, type=m.type,
                                                          attributes=m.attributes))
    r = tb.client.retain(bank_id, items, content=content, event_date=event_date, fact_id=fact_id)
    return to_jsonable(r)


# -- repairs (dry run unless apply) -----------------------------------------------

def merge(tb: Toolbox, bank_id: Bank,
          sources: Annotated[Names, Field(description="The entities to merge away (ids, names or aliases).")],
          into: Annotated[str, Field(description="The entity they become (id, name or alias).")],
          reason: Reason = None, apply: Apply = False) -> Dict[str, Any]:
    """Merge entities into one: their mentions, links and pairs move, their names become aliases, their ids
    forward. A dry run unless apply is true; the result's operation_id undoes it."""
    return tb.client.merge(bank_id, sources, into, dry_run=not apply, reason=reason)


def split(tb: Toolbox, bank_id: Bank, entity: EntityRef,
          facts: Annotated[Names, Field(description="The facts whose mentions move (fact ids).")],
          new_name: Annotated[str, Field(description="The new entity's name.")],
          reason: Reason = None, apply: Apply = False) -> Dict[str, Any]:
    """Move an entity's mentions in the given facts to a new entity. A dry run unless apply is true."""
    return tb.client.split(bank_id, entity, facts, new_name, dry_run=not apply, reason=reason)


def rename(tb: Toolbox, bank_id: Bank, entity: EntityRef,
           new_name: Annotated[str, Field(description="Its new canonical name.")],
           reason: Reason = None, apply: Apply = False) -> Dict[str, Any]:
    """Give an entity another canonical name; the old one stays an alias. A dry run unless apply is true."""
    if apply:
        return tb.client.rename(bank_id, entity, new_name, reason=reason)
    with tb.rolled_back() as er:
        return _dry(er.rename(bank_id, entity, new_name, reason=reason))


def alias(tb: Toolbox, bank_id: Bank, entity: EntityRef,
          alias: Annotated[str, Field(description="Another name that resolves to the entity exactly.")],
          apply: Apply = False) -> Dict[str, Any]:
    """Add an alias to an entity. A dry run unless apply is true."""
    if apply:
        return tb.client.add_alias(bank_id, entity, alias)
    with tb.rolled_back() as er:
        return _dry(er.add_alias(bank_id, entity, alias))


def unalias(tb: Toolbox, bank_id: Bank, alias: Annotated[str, Field(description="The alias (case-insensitive).")],
            apply: Apply = False) -> Dict[str, Any]:
    """Remove an alias. A dry run unless apply is true."""
    if apply:
        return tb.client.remove_alias(bank_id, alias)
    with tb.rolled_back() as er:
        return _dry(er.remove_alias(bank_id, alias))


def mark_distinct(tb: Toolbox, bank_id: Bank,
                  a: Annotated[str, Field(description="One entity (id, name or alias).")],
                  b: Annotated[str, Field(description="The other entity (id, name or alias).")],
                  reason: Reason = None, apply: Apply = False) -> Dict[str, Any]:
    """Record that two entities are different (never to be merged). A dry run unless apply is true."""
    return tb.client.mark_distinct(bank_id, a, b, reason=reason, dry_run=not apply)


def reresolve(tb: Toolbox, bank_id: Bank,
              entities: Annotated[Optional[Names], Field(
                  description="Only the mentions of these entities (ids, names or aliases); all when omitted.")] = None,
              since: Annotated[Optional[str], Field(
                  description="Only the facts dated at or after this timestamp.")] = None,
              reason: Reason = None, apply: Apply = False) -> Dict[str, Any]:
    """Decide stored facts again against what the bank knows now; move the mentions whose entity changed.

    A dry run unless apply is true (the moves, each with its why).
    """
    return tb.client.reresolve(bank_id, entities, since=since, dry_run=not apply, reason=reason)


def undo(tb: Toolbox, bank_id: Bank,
         operation_id: Annotated[int, Field(description="The operation to undo (history lists them).")],
         apply: Apply = False) -> Dict[str, Any]:
    """Undo a correction (later ones touching the same entities first). A dry run unless apply is true."""
    if apply:
        return tb.client.undo(bank_id, operation_id)
    with tb.rolled_back() as er:
        return dict(er.undo(bank_id, operation_id), dry_run=True)


# -- the list -------------------------------------------------------------------

@dataclass(frozen=True)
class ToolSpec:
    """A tool: its function and what it does to the bank (MCP annotations are derived from ``kind``)."""

    function: Callable[..., Dict[str, Any]]
    kind: str   # "read" (looks only), "write" (adds facts), "repair" (changes identity; dry run by default)

    @property
    def name(self) -> str:
        return self.function.__name__

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.function.__doc__ or "")

    @property
    def read_only(self) -> bool:
        return self.kind == "read"

    @property
    def destructive(self) -> bool:
        return self.kind == "repair"

    @property
    def idempotent(self) -> bool:
        # Reading twice reads the same; retaining twice stores the fact twice
        # (or fails on its fact_id); a repair applied twice is another change
        # or an error.
        return self.kind == "read"


TOOLS: List[ToolSpec] = [
    ToolSpec(lookup, "read"), ToolSpec(explain, "read"), ToolSpec(find_entities, "read"),
    ToolSpec(entity_facts, "read"), ToolSpec(neighbors, "read"), ToolSpec(history, "read"),
    ToolSpec(review, "read"),
    ToolSpec(retain, "write"),
    ToolSpec(merge, "repair"), ToolSpec(split, "repair"), ToolSpec(rename, "repair"), ToolSpec(alias, "repair"),
    ToolSpec(unalias, "repair"), ToolSpec(mark_distinct, "repair"), ToolSpec(reresolve, "repair"),
    ToolSpec(undo, "repair"),
]


def bind(spec: ToolSpec, tb: Toolbox) -> Callable[..., Dict[str, Any]]:
    """The tool's function with the Toolbox given: its signature without it, its bank checked first,
    every failure a ToolFailure (SQLSTATE and message)."""
    fn = spec.function
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())[1:]

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Dict[str, Any]:
        tb.check_bank(kwargs["bank_id"])
        try:
            return fn(tb, **kwargs)
        except psycopg.Error as exc:
            diag = exc.diag
            message = (diag.message_primary or str(exc) or type(exc).__name__).strip()
            if diag.message_hint:
                message += f" (hint: {diag.message_hint.strip()})"
            raise ToolFailure(message, exc.sqlstate) from None
        except PoolTimeout as exc:
            raise ToolFailure(f"cannot reach the database: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise ToolFailure(str(exc)) from None

    del call.__wrapped__  # type: ignore[attr-defined]  # (inspect would read the Toolbox parameter back)
    call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    call.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "tb"}
    return call
