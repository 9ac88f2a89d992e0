"""Shared arrangements for the write-path tests: a spy on the resolver, fact
streams and what their statistics must be, and the plans of the resolver's
statements. Helpers arrange and read; the assertions stay in the tests."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import combinations

import db as er_db
import psycopg

from entity_resolver.install import code_version
from shared import SCHEMA


# Names that never resolve to one another: pairwise pg_trgm similarity under
# 0.1 and no shared words, so every name is exactly one entity.
NAMES = [
    "Alex Morgan", "Acme", "Renewal", "Kubernetes", "Oslo", "Priya", "Zephyr",
    "Quarterly Review", "Budget", "Helsinki", "Marigold", "Tokyo Office",
    "Sprint 14", "Docker", "Wren", "Ivanova",
]


def plan_nodes(plan: dict):
    """Every node of an EXPLAIN (FORMAT JSON) plan, the node first, then its children in order."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def nested_plans(conn: psycopg.Connection, analyze: bool = False) -> Callable[[], list[tuple[str, dict]]]:
    """Switch auto_explain on for this session, every nested statement reported to the client; return a
    reader of the (query text, plan) of every statement run since the last read. ``analyze``: the plans
    carry what each node did (rows, loops, rows removed)."""
    seen: list[tuple[str, dict]] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if "plan:" in text:
            explain = json.loads(text.split("plan:", 1)[1])
            seen.append((explain.get("Query Text", ""), explain["Plan"]))

    conn.add_notice_handler(on_notice)
    conn.execute("LOAD 'auto_explain'")
    for setting, value in (("log_min_duration", "0"), ("log_nested_statements", "on"),
                           ("log_level", "notice"), ("log_format", "json"),
                           ("log_analyze", "on" if analyze else "off")):
        conn.execute(f"SET auto_explain.{setting} = '{value}'")

    def read() -> list[tuple[str, dict]]:
        out = list(seen)
        seen.clear()
        return out

    return read


def statement_plan(conn: psycopg.Connection, query: str, types: list[str], args: list,
                   analyze: bool = False) -> dict:
    """The plan of a resolver statement as the resolver runs it: its catalog tokens
    substituted (db.plan()), under the resolver's search_path, prepared with
    ``types`` and executed with ``args`` (EXPLAIN, ANALYZE too when asked)."""
    conn.execute(f"SET search_path = {SCHEMA}, {SCHEMA}_internal, pg_catalog")
    cur = conn.execute(er_db.SQL_CATALOG_TOKENS)
    tokens = er_db.tokens_of(dict(zip([c.name for c in cur.description], cur.fetchone())))
    conn.execute(f"PREPARE resolver_statement ({', '.join(types)}) AS " + er_db.substituted(query, tokens))
    try:
        cur = psycopg.ClientCursor(conn)
        options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
        cur.execute(f"EXPLAIN ({options}) EXECUTE resolver_statement ({', '.join(['%s'] * len(args))})", args)
        return cur.fetchone()[0][0]["Plan"]
    finally:
        conn.execute("DEALLOCATE resolver_statement")


def uid(n: int) -> str:
    """A readable, ordered uuid: uid(1) < uid(2) < ..."""
    return str(uuid.UUID(int=n))


def make_bank(conn: psycopg.Connection, bank_id: str, names: Iterable[str] = ()) -> dict[str, str]:
    """Create a bank and entities directly (no resolver); return name -> id."""
    conn.execute("INSERT INTO entity_resolver.banks (bank_id) VALUES (%s) ON CONFLICT DO NOTHING", (bank_id,))
    ids = {}
    for name in names:
        ids[name] = str(conn.execute(
            "INSERT INTO entity_resolver.entities (bank_id, canonical_name) VALUES (%s, %s) RETURNING id",
            (bank_id, name),
        ).fetchone()[0])
    return ids


def insert_facts(conn: psycopg.Connection, bank_id: str, facts: list[list], event_date: str | None = None):
    """INSERT all facts in one statement; each fact is its mentions list. Returns fact ids."""
    rows = conn.execute(
        "INSERT INTO entity_resolver.facts (bank_id, content, mentions, event_date)"
        " SELECT %s, 'fact ' || f.ord, f.mentions, coalesce(%s::timestamptz, now())"
        " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS f (mentions, ord)"
        " ORDER BY f.ord RETURNING id",
        (bank_id, event_date, json.dumps(facts)),
    ).fetchall()
    return [str(r[0]) for r in rows]


def spy_on_resolver(conn: psycopg.Connection) -> Callable[[], list]:
    """Wrap resolve.resolve_call in this session; return a reader of its calls.

    Each call is recorded as {"bank_id", "items"} (the items of all its facts,
    in order, parsed as the resolver parses them once the call is within its
    limits; an item without nearby of its own shows its fact's other mentions,
    its context); the real resolver still runs.
    """
    key = "entity_resolver:" + code_version(SCHEMA)
    conn.execute(
        "DO $$\n"
        f"key = {key!r}\n"
        "if key not in GD:\n"
        "    plpy.execute(plpy.prepare('SELECT entity_resolver_internal._load_modules($1)', ['text']), [key])\n"
        "R = GD[key]['resolve']\n"
        "real = getattr(R, '_spied', None) or R.resolve_call\n"
        "R._spied = real\n"
        "calls = GD['write_path_test_calls'] = []\n"
        "def spy(plpy, bank_id, facts, default_event_date, **kw):\n"
        "    items = []\n"
        "    for f in facts:\n"
        "        parsed = f.parsed().items\n"
        "        texts = [i['text'] for i in parsed]\n"
        "        for n, i in enumerate(parsed):\n"
        "            items.append(dict(i, nearby=texts[:n] + texts[n + 1:] if i['nearby'] is None else i['nearby']))\n"
        "    calls.append({'bank_id': bank_id, 'items': items})\n"
        "    return real(plpy, bank_id, facts, default_event_date, **kw)\n"
        "R.resolve_call = spy\n"
        "$$ LANGUAGE plpython3u"
    )
    conn.execute(
        "CREATE OR REPLACE FUNCTION pg_temp.resolver_calls() RETURNS text LANGUAGE plpython3u AS $$\n"
        "import json\n"
        "return json.dumps(GD.get('write_path_test_calls', []), default=str)\n"
        "$$"
    )

    def calls() -> list:
        return json.loads(conn.execute("SELECT pg_temp.resolver_calls()").fetchone()[0])

    return calls


def expected_from_facts(conn: psycopg.Connection, bank_id: str) -> tuple[Counter, Counter]:
    """Mention and pair counts the committed facts of a bank imply, keyed by lower(name).

    Every mention counts once; a pair counts once per fact naming both.
    Names are folded by PostgreSQL, as the resolver folds them.
    """
    rows = conn.execute(
        "SELECT f.id, lower(coalesce(m ->> 'text', m #>> '{}'))"
        " FROM entity_resolver.facts AS f, jsonb_array_elements(f.mentions) AS m"
        " WHERE f.bank_id = %s",
        (bank_id,),
    ).fetchall()
    mentions: Counter = Counter()
    per_fact: dict = {}
    for fact_id, key in rows:
        mentions[key] += 1
        per_fact.setdefault(fact_id, set()).add(key)
    pairs: Counter = Counter()
    for keys in per_fact.values():
        for a, b in combinations(sorted(keys), 2):
            pairs[(a, b)] += 1
    return mentions, pairs


def mention_counts(conn: psycopg.Connection, bank_id: str) -> Counter:
    """Applied mention_count per lower(name) (entities with a zero count included)."""
    return Counter({k: v for k, v in conn.execute(
        "SELECT lower(name), mention_count FROM entity_resolver.entity_overview WHERE bank_id = %s",
        (bank_id,),
    ).fetchall()})


def pair_counts(conn: psycopg.Connection, bank_id: str) -> Counter:
    """Applied cooccurrence_count per (lower(name), lower(name)), names in sorted order."""
    out: Counter = Counter()
    for a, b, n in conn.execute(
        "SELECT lower(entity_name), lower(neighbor_name), cooccurrence_count"
        " FROM entity_resolver.entity_neighbors WHERE bank_id = %s",
        (bank_id,),
    ).fetchall():
        if a < b:
            out[(a, b)] = n
    return out


def run_for(seconds: float, workers: list[Callable[[threading.Event], None]]) -> list[BaseException]:
    """Run workers in threads until ``seconds`` pass; return the exceptions they raised."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def wrap(fn):
        try:
            fn(stop)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=wrap, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    return errors
