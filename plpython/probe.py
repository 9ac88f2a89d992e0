"""Finding what a mention could be: exact names and aliases, trigram candidates, their context.

Every comparison folds case with PostgreSQL's lower() on both sides: on the
bank's side as folded() (lower() declared LEAKPROOF, migration 0012), and the
trigram probe uses the operators of the trigram index's operator class
(@sim@), so that a bank-bound role's look-ups use the indexes too. One
statement serves a whole call: the exact look-up takes every key, the probe
every distinct key. The context statement (partners and degrees) runs per fact,
for the candidates that survived the screen.

Statistics a transaction queued and has not applied yet (stats_queue rows of
its own transaction id) count here as if applied: a later statement of the
same transaction sees the graph the earlier ones made, as a later
transaction would after the flush at commit.
"""

from typing import Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import db
import trigrams
from mentions import datetime_of
from scoring import Candidate


class Hit(NamedTuple):
    """An entity found by exact name or alias."""

    id: str
    name: str                # canonical_name, as written
    kind: str
    type: Optional[str] = None
    via: str = "name"        # "name", "alias" or "memory"
    key: str = ""            # lower(canonical_name)
    entities: int = 1        # memory: how many entities the form was resolved to, at any score
    last_seen: Optional[float] = None   # epoch of the entity's last_seen (names)
    homonym: bool = False    # a homonym (names): the first entity of its name comes first
    confident: bool = True   # memory: one of the resolutions had the score memory asks for


# Names are looked up one key at a time: each_key (sql/030_resolve.sql), then
# a LATERAL subquery per key, kept from being flattened into a join by
# OFFSET 0, a fence and not a page (sqlfluff's ST05 and AM09 are silenced
# for it). With `= ANY(keys)` a planner that believes the bank small (no
# statistics for it yet: a new database, a bank created since the last
# ANALYZE) reads every row of the bank through the index's bank prefix and
# filters, where a key costs one index descent whatever the bank's size.
SQL_EXACT = """
SELECT lower(e.canonical_name) AS key, e.id::text AS id, e.canonical_name, e.entity_kind, e.entity_type,
       'name' AS via, lower(e.canonical_name) AS entity_key, 1::bigint AS n,
       extract(EPOCH FROM e.last_seen)::float8 AS last_seen, e.homonym IS NOT NULL AS homonym, TRUE AS confident
  FROM each_key($2::text[]) AS k (key)
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT x.id, x.canonical_name, x.entity_kind, x.entity_type, x.last_seen, x.homonym
         FROM entities AS x
        WHERE x.bank_id = $1 AND folded(x.canonical_name) = k.key
       OFFSET 0) AS e  -- noqa: AM09
UNION ALL
SELECT lower(a.alias) AS key, e.id::text AS id, e.canonical_name, e.entity_kind, e.entity_type, 'alias' AS via,
       lower(e.canonical_name) AS entity_key, 1 AS n, NULL AS last_seen, FALSE AS homonym, TRUE AS confident
  FROM entity_aliases AS a
 INNER JOIN entities AS e ON a.bank_id = e.bank_id AND a.entity_id = e.id
 WHERE a.bank_id = $1 AND folded(a.alias) = ANY($3::text[])
"""

# alias_memory (memory.py, MEMORY_MIN_SCORE): the entities a form was resolved
# to, from the provenance (so forgetting, merging and splitting keep it
# true): one of them (one resolved with confidence first), how many there
# are at any score, and whether one resolution had the confidence (the
# score rounded to 6 places, as memory.learn and every threshold). The id is
# cast back to uuid inside the subquery: a cast in the join condition is not
# LEAKPROOF, and a bank-bound role's join would then read the bank's entities.
# One key at a time, as SQL_EXACT's names, and the remembered entity by its
# id after it (a plain join let a planner that believes the bank small read
# the bank once per key). A fragment (not an SQL_ statement):
# SQL_EXACT_MEMORY is SQL_EXACT followed by it.
_UNION_MEMORY = """
UNION ALL
SELECT r.key, e.id::text AS id, e.canonical_name, e.entity_kind, e.entity_type, 'memory' AS via,
       lower(e.canonical_name) AS entity_key, r.n, NULL AS last_seen, FALSE AS homonym, r.confident
  FROM each_key($4::text[]) AS k (key)
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT k.key,
              coalesce(min(m.entity_id::text) FILTER (WHERE m.confident), min(m.entity_id::text))::uuid AS id,
              count(DISTINCT m.entity_id) AS n, coalesce(bool_or(m.confident), FALSE) AS confident
         FROM (SELECT x.entity_id, round(x.score::numeric, 6) >= $5::numeric AS confident
                 FROM mentions AS x
                WHERE x.bank_id = $1 AND folded(x.mention COLLATE @collate@) = k.key
                  AND x.decision = 'resolved' AND x.score IS NOT NULL) AS m) AS r
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT x.id, x.canonical_name, x.entity_kind, x.entity_type
         FROM entities AS x
        WHERE x.bank_id = $1 AND x.id = r.id
       OFFSET 0) AS e  -- noqa: AM09
"""

SQL_EXACT_MEMORY = SQL_EXACT + _UNION_MEMORY

# Ties on similarity go to the smaller name, then type, then id: a name is
# unique per bank and type, so the order never depends on random ids, and a
# stream loaded in one statement or one fact at a time meets its candidates
# in the same order. The subquery is LATERAL (it reads each q.m), which no CTE
# can replace: sqlfluff's ST05 is silenced for it (noqa). The bank is compared
# with @bank_collate@ (db.py): a condition only the trigram index answers, so
# a bank the planner believes small (no statistics yet) is not read row by
# row through a btree's bank prefix instead (migration 0014).
SQL_CANDIDATES = """
SELECT q.i::int AS i, c.id::text AS id, c.canonical_name, c.key, c.sim::float8 AS sim,
       c.last_seen, c.entity_type, c.homonym
  FROM unnest($2::text[]) WITH ORDINALITY AS q (m, i)
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT e.id, e.canonical_name, e.entity_type, lower(e.canonical_name) AS key,
              @trgm@.similarity(lower(e.canonical_name), q.m) AS sim,
              extract(EPOCH FROM e.last_seen)::float8 AS last_seen, e.homonym IS NOT NULL AS homonym
         FROM entities AS e
        WHERE e.bank_id @bank_collate@ = $1
          AND e.entity_kind <> 'label'
          AND folded(e.canonical_name) OPERATOR (@sim@.%) q.m
        ORDER BY sim DESC, lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
        LIMIT $3
       ) AS c
 ORDER BY q.i ASC, c.sim DESC, c.key ASC, coalesce(c.entity_type, '') ASC, c.id ASC
"""

# A call's probe, in one statement: the keys marked narrow ($4) read only
# their candidates of identical trigram sets (similarity 1.0), the others
# every candidate. A narrow key's rows are the first rows SQL_CANDIDATES
# gives it, in the same order and limit: similarity 1.0 is an equal trigram
# set, which the btree over trigram_key() finds in one descent (migration
# 0024; the trigram index's shortest posting lists grow with the bank: 6 ms
# a key at 1,000,000 entities, against 0.03). The key is a hash: the
# similarity condition drops a collision. Each branch runs only for its keys
# (a one-time filter on the key's mark).
_IDENTICAL_ROWS = """
      (SELECT e.id, e.canonical_name, e.entity_type, lower(e.canonical_name) AS key,
              @trgm@.similarity(lower(e.canonical_name), q.m) AS sim,
              extract(EPOCH FROM e.last_seen)::float8 AS last_seen, e.homonym IS NOT NULL AS homonym
         FROM entities AS e
        WHERE q.narrow AND e.bank_id = $1
          AND e.entity_kind <> 'label'
          AND trigram_key(folded(e.canonical_name)) = trigram_key(q.m)
          AND @trgm@.similarity(lower(e.canonical_name), q.m) >= 1
        ORDER BY sim DESC, lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
        LIMIT $3)
"""

SQL_PROBE = (SQL_CANDIDATES
             .replace("unnest($2::text[]) WITH ORDINALITY AS q (m, i)",
                      "unnest($2::text[], $4::boolean[]) WITH ORDINALITY AS q (m, narrow, i)")
             .replace("-- noqa: ST05\n       SELECT", "-- noqa: ST05\n      (SELECT")
             .replace("WHERE e.bank_id @bank_collate@ = $1",
                      "WHERE NOT q.narrow AND e.bank_id @bank_collate@ = $1")
             .replace("LIMIT $3\n       ) AS c", "LIMIT $3)\n       UNION ALL" + _IDENTICAL_ROWS + "       ) AS c"))


# explain_mention: regular rows at a lower probe (plus the label rows, which
# resolution never sees, so that explain can say why they were skipped).
SQL_EXPLAIN_CANDIDATES = """
(SELECT e.id::text AS id, e.canonical_name, lower(e.canonical_name) AS key,
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(EPOCH FROM e.last_seen)::float8 AS last_seen, FALSE AS is_label, e.entity_type,
        e.homonym IS NOT NULL AS homonym
   FROM entities AS e
  WHERE e.bank_id @bank_collate@ = $1 AND e.entity_kind <> 'label'
    AND folded(e.canonical_name) OPERATOR (@sim@.%) $2
  ORDER BY sim DESC, lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
  LIMIT $3)
UNION ALL
(SELECT e.id::text AS id, e.canonical_name, lower(e.canonical_name) AS key,
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(EPOCH FROM e.last_seen)::float8 AS last_seen, TRUE AS is_label, e.entity_type,
        e.homonym IS NOT NULL AS homonym
   FROM entities AS e
  WHERE e.bank_id = $1 AND e.entity_kind = 'label'
    AND folded(e.canonical_name) OPERATOR (@sim@.%) $2
  ORDER BY sim DESC, lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
  LIMIT $4)
"""

# The context of a fact's candidates, in one statement:
#   near  - every entity named by a nearby name, with its degree (distinct
#           entities it co-occurs with);
#   pair  - the co-occurrences between the candidates and those entities;
#   known - which of the given pairs the bank already has (so that pairs made
#           earlier in the same call are counted in a degree only once).
# The nearby names' entities (context_by_entity adds aliases: _NEAR_BY_NAME_OR_ALIAS).
_NEAR_BY_NAME = """near AS (
    SELECT e.id, lower(e.canonical_name) AS key
      FROM each_key($3::text[]) AS k (key)
     CROSS JOIN LATERAL (  -- noqa: ST05
           SELECT x.id, x.canonical_name FROM entities AS x
            WHERE x.bank_id = $1 AND folded(x.canonical_name) = k.key
           OFFSET 0) AS e  -- noqa: AM09
)"""

# The nearby entities ($3: their names) with their partners in the bank,
# counted unless the call knows the count already ($6: it does not change
# during a call, and a hub's, 1,500 pairs at 100,000 entities, was counted
# again for every fact naming it). The pairs between the candidates ($2)
# and the nearby entities: one branch per side a nearby entity is on, each
# answered by an index from the few nearby entities (a pair on both sides
# comes twice; Context keeps a set). As one OR of both sides, every pair of
# every bank was read in a sequential scan: 39 ms at 100,000 entities,
# growing with the table.
SQL_CONTEXT = """
WITH """ + _NEAR_BY_NAME + """

SELECT 'near' AS kind, near.id::text AS a, near.key AS b,
       CASE WHEN near.id = ANY($6::uuid[]) THEN NULL ELSE
       (SELECT count(*) FROM entity_cooccurrences AS x
         WHERE x.bank_id = $1 AND x.entity_id_1 = near.id AND x.cooccurrence_count > 0)
       + (SELECT count(*) FROM entity_cooccurrences AS x
         WHERE x.bank_id = $1 AND x.entity_id_2 = near.id AND x.cooccurrence_count > 0) END AS n
  FROM near
UNION ALL
SELECT 'pair' AS kind, c.entity_id_1::text AS a, c.entity_id_2::text AS b, NULL AS n
  FROM (SELECT DISTINCT near.id FROM near) AS n
 INNER JOIN entity_cooccurrences AS c ON n.id = c.entity_id_2 AND c.bank_id = $1
 WHERE c.entity_id_1 = ANY($2::uuid[]) AND c.cooccurrence_count > 0
UNION ALL
SELECT 'pair' AS kind, c.entity_id_1::text AS a, c.entity_id_2::text AS b, NULL AS n
  FROM (SELECT DISTINCT near.id FROM near) AS n
 INNER JOIN entity_cooccurrences AS c ON n.id = c.entity_id_1 AND c.bank_id = $1
 WHERE c.entity_id_2 = ANY($2::uuid[]) AND c.cooccurrence_count > 0
UNION ALL
SELECT 'known' AS kind, k.a::text AS a, k.b::text AS b, NULL AS n
  FROM unnest($4::uuid[], $5::uuid[]) AS k (a, b)
 WHERE EXISTS (SELECT 1 FROM entity_cooccurrences AS c
                WHERE c.bank_id = $1 AND c.entity_id_1 = k.a AND c.entity_id_2 = k.b
                  AND c.cooccurrence_count > 0)
"""

# context_by_entity: a nearby name reaches its entity through an alias too.
_NEAR_BY_NAME_OR_ALIAS = _NEAR_BY_NAME.replace("-- noqa: AM09\n)", """-- noqa: AM09
    UNION
    SELECT a.entity_id AS id, lower(a.alias) AS key
      FROM entity_aliases AS a
     WHERE a.bank_id = $1 AND folded(a.alias) = ANY($3::text[])
)""")

# The neighbourhood's nearby entities (neighbourhood.py): those the nearby
# names ($3) reach by name or alias, each with its partners counted up to
# $2 + 1 (a hub's are not all read; which pairs the count stops at does not
# matter, so the LIMITs have no ORDER BY: AM09 silenced), and whether this
# transaction queued a pair of it a decrement (its degree may then be lower
# than counted here).
SQL_NEAR_PARTNERS = """
WITH """ + _NEAR_BY_NAME_OR_ALIAS + """

SELECT near.key, near.id::text AS id,
       EXISTS(SELECT 1 FROM stats_queue AS q
               WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.increment < 0
                 AND q.entity_id_2 IS NOT NULL AND (q.entity_id = near.id OR q.entity_id_2 = near.id)) AS unsettled,
       (SELECT count(*) FROM (SELECT 1 FROM entity_cooccurrences AS c
                               WHERE c.bank_id = $1 AND c.entity_id_1 = near.id AND c.cooccurrence_count > 0
                               LIMIT $2 + 1) AS p)  -- noqa: AM09
       + (SELECT count(*) FROM (SELECT 1 FROM entity_cooccurrences AS c
                                 WHERE c.bank_id = $1 AND c.entity_id_2 = near.id AND c.cooccurrence_count > 0
                                 LIMIT $2 + 1) AS p) AS partners  -- noqa: AM09
  FROM near
"""

# The same, counting this transaction's queued pair increments as applied.
# The bank's pairs it reads are one branch per way of touching the call
# (UNION: a pair row is one row however many branches reach it), each the
# condition one index answers; as one OR of them, the pairs of every bank
# were read in a sequential scan.
SQL_CONTEXT_PENDING = """
WITH pend AS (
    SELECT q.entity_id AS a, q.entity_id_2 AS b, sum(q.increment) AS inc
      FROM stats_queue AS q
     WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.entity_id_2 IS NOT NULL
     GROUP BY q.entity_id, q.entity_id_2
),

""" + _NEAR_BY_NAME + """,

touching AS (
    SELECT c.entity_id_1 AS a, c.entity_id_2 AS b, c.cooccurrence_count AS n
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 IN (SELECT near.id FROM near)
    UNION
    SELECT c.entity_id_1 AS a, c.entity_id_2 AS b, c.cooccurrence_count AS n
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 IN (SELECT near.id FROM near)
    UNION
    SELECT c.entity_id_1 AS a, c.entity_id_2 AS b, c.cooccurrence_count AS n
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 = ANY($2::uuid[])
    UNION
    SELECT c.entity_id_1 AS a, c.entity_id_2 AS b, c.cooccurrence_count AS n
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 = ANY($2::uuid[])
    UNION
    SELECT c.entity_id_1 AS a, c.entity_id_2 AS b, c.cooccurrence_count AS n
      FROM unnest($4::uuid[], $5::uuid[]) AS k (a, b)
     INNER JOIN entity_cooccurrences AS c ON c.bank_id = $1 AND k.a = c.entity_id_1 AND k.b = c.entity_id_2
),

eff AS (
    SELECT coalesce(t.a, p.a) AS a, coalesce(t.b, p.b) AS b, coalesce(t.n, 0) + coalesce(p.inc, 0) AS n
      FROM touching AS t
      FULL JOIN pend AS p ON t.a = p.a AND t.b = p.b
)

SELECT 'near' AS kind, near.id::text AS a, near.key AS b,
       CASE WHEN near.id = ANY($6::uuid[]) THEN NULL ELSE
       (SELECT count(*) FROM eff WHERE eff.n > 0 AND (eff.a = near.id OR eff.b = near.id)) END AS n
  FROM near
UNION ALL
SELECT 'pair' AS kind, eff.a::text AS a, eff.b::text AS b, NULL AS n
  FROM eff
 WHERE eff.n > 0
   AND ((eff.a = ANY($2::uuid[]) AND eff.b IN (SELECT near.id FROM near))
        OR (eff.b = ANY($2::uuid[]) AND eff.a IN (SELECT near.id FROM near)))
UNION ALL
SELECT 'known' AS kind, k.a::text AS a, k.b::text AS b, NULL AS n
  FROM unnest($4::uuid[], $5::uuid[]) AS k (a, b)
 WHERE EXISTS (SELECT 1 FROM eff WHERE eff.a = k.a AND eff.b = k.b AND eff.n > 0)
"""

# context_by_entity: the same statements with the alias-aware near (the
# replaced text must stay the same in both, which tests/hygiene/test_sql_in_python.py
# checks).
SQL_CONTEXT_BY_ALIAS = SQL_CONTEXT.replace(_NEAR_BY_NAME, _NEAR_BY_NAME_OR_ALIAS)
SQL_CONTEXT_PENDING_BY_ALIAS = SQL_CONTEXT_PENDING.replace(_NEAR_BY_NAME, _NEAR_BY_NAME_OR_ALIAS)

# Dates this transaction queued and has not applied: the latest event date per
# entity, or, for an entity something was forgotten of, its date recomputed
# from the record.
SQL_PENDING_DATES = """
SELECT q.entity_id::text AS id,
       CASE WHEN bool_or(q.recompute)
            THEN (SELECT extract(EPOCH FROM max(m.event_date))::float8 FROM mentions AS m
                   WHERE m.bank_id = $1 AND m.entity_id = q.entity_id)
            ELSE extract(EPOCH FROM max(q.event_date))::float8 END AS last_seen,
       bool_or(q.recompute) AS recompute
  FROM stats_queue AS q
 WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.entity_id_2 IS NULL
   AND q.entity_id = ANY($2::uuid[])
 GROUP BY q.entity_id
"""


def exact(plpy, bank_id: str, names: Iterable[str], aliases: Iterable[str] = (), memory: Iterable[str] = (),
          memory_min_score: float = 1.0) -> Dict[str, List[Hit]]:
    """Entities whose lowered name is one of ``names``, whose alias is one of ``aliases``, by key.

    A key may name several entities: one per type (typed_mentions), and an
    alias is never also a name. ``memory``: keys to look up in the
    provenance too (alias memory), resolved with at least ``memory_min_score``.
    """
    names, aliases, memory = sorted(set(names)), sorted(set(aliases)), sorted(set(memory))
    if not names and not aliases:
        return {}
    if memory:
        rows = db.run(plpy, "exact_memory", SQL_EXACT_MEMORY, ["text", "text[]", "text[]", "text[]", "float8"],
                      [bank_id, names, aliases, memory, memory_min_score])
    else:
        rows = db.run(plpy, "exact", SQL_EXACT, ["text", "text[]", "text[]"], [bank_id, names, aliases])
    out: Dict[str, List[Hit]] = {}
    for r in rows:
        out.setdefault(r["key"], []).append(
            Hit(r["id"], r["canonical_name"], r["entity_kind"], r["entity_type"], r["via"], r["entity_key"], r["n"],
                r["last_seen"], r["homonym"], r["confident"]))
    order = {"alias": 0, "name": 1, "memory": 2}
    for hits in out.values():
        # Homonyms after the entity that held the name first (a literal
        # mention is exact by rule: it takes that one), then by id.
        hits.sort(key=lambda h: (order[h.via], h.type is not None, h.type or "", h.homonym, h.id))
    return out


def memory_hit(hits: Dict[str, List[Hit]], key: str) -> Optional[Hit]:
    """The remembered entity of a form (alias memory), with how many entities the bank remembers for it."""
    for h in hits.get(key, ()):
        if h.via == "memory":
            return h
    return None


def alias_hit(hits: Dict[str, List[Hit]], key: str) -> Optional[Hit]:
    """The entity an alias names, when the key is an alias."""
    for h in hits.get(key, ()):
        if h.via == "alias":
            return h
    return None


def name_hit(hits: Dict[str, List[Hit]], key: str, mention_type: Optional[str]) -> Optional[Hit]:
    """The entity of this exact name for a mention: of the mention's type, else an untyped one.

    An untyped mention takes the untyped entity first, then any (types in
    order); a typed one never takes an entity of another type.
    """
    names_ = [h for h in hits.get(key, ()) if h.via == "name"]
    if mention_type is None:
        return names_[0] if names_ else None
    for h in names_:
        if h.type == mention_type:
            return h
    for h in names_:
        if h.type is None:
            return h
    return None


def candidates(plpy, bank_id: str, keys: List[str], limit: int) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
    """Probe every key at once; return its candidates in probe order and every candidate's name."""
    if not keys:
        return {}, {}
    return _by_key(keys, db.run(plpy, "candidates", SQL_CANDIDATES, ["text", "text[]", "int"],
                                [bank_id, keys, limit]))


def candidates_and_identical(plpy, bank_id: str, keys: List[str], narrow: List[str], limit: int):
    """Probe ``keys`` in full and ``narrow`` for their identical names, at once (SQL_PROBE).

    Returns (candidates by key, identical candidates by narrow key, every candidate's name).
    """
    every = keys + narrow
    if not every:
        return {}, {}, {}
    by_key, names = _by_key(every, db.run(plpy, "probe", SQL_PROBE, ["text", "text[]", "int", "boolean[]"],
                                          [bank_id, every, limit, [False] * len(keys) + [True] * len(narrow)]))
    return {k: by_key[k] for k in keys}, {k: by_key[k] for k in narrow}, names


def _by_key(keys: List[str], rows) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
    """A probe's rows as candidates of each key (``i``: the key's position, from 1) and every candidate's name."""
    by_key: Dict[str, List[Candidate]] = {k: [] for k in keys}
    names: Dict[str, str] = {}
    for r in rows:
        by_key[keys[r["i"] - 1]].append(
            Candidate(r["id"], r["key"], r["sim"], datetime_of(r["last_seen"]), entity_type=r["entity_type"],
                      homonym=r["homonym"]))
        names[r["id"]] = r["canonical_name"]
    return by_key, names


def explain_candidates(plpy, bank_id: str, key: str, limit: int, label_rows: int):
    """Explain's probe: regular candidates and label rows, with canonical names."""
    return list(db.run(plpy, "explain_candidates", SQL_EXPLAIN_CANDIDATES,
                       ["text", "text", "int", "int"], [bank_id, key, limit, label_rows]))


class Context(NamedTuple):
    """What the bank knows around a fact: entities by nearby name, their degrees, pairs."""

    near: Dict[str, Set[str]]     # key (folded name or alias) -> the entities of that name (or alias)
    degree: Dict[str, int]        # entity id -> distinct partners
    pairs: Set[Tuple[str, str]]   # (candidate id, near entity id) that co-occur
    known: Set[Tuple[str, str]]   # of the pairs asked about, those the bank has


def context(plpy, bank_id: str, candidate_ids: Iterable[str], near_names: Iterable[str],
            ask: Iterable[Tuple[str, str]] = (), pending: bool = False, by_alias: bool = False,
            read: Optional[Tuple[Dict[str, Set[str]], Dict[str, int]]] = None) -> Context:
    """The bank's context for candidates (partners among the nearby names, degrees); one statement.

    ``by_alias``: a nearby name also reaches the entity it is an alias of.
    ``read``: what this call's earlier contexts read (nearby key -> its entities, entity id -> its
    partners in the bank): the degrees of the entities of these names found there are not counted
    again, and those counted here are added.
    """
    near_read, degrees = read if read is not None else ({}, {})
    ids = sorted(set(candidate_ids))
    names = sorted(set(n for n in near_names if n))
    asked = sorted(set(ask))
    ctx = Context({}, {}, set(), set())
    if not names and not asked:
        return ctx
    known = sorted({i for n in names for i in near_read.get(n, ()) if i in degrees})
    if pending:
        sql, name = (SQL_CONTEXT_PENDING_BY_ALIAS, "context_pending_alias") if by_alias \
            else (SQL_CONTEXT_PENDING, "context_pending")
    else:
        sql, name = (SQL_CONTEXT_BY_ALIAS, "context_alias") if by_alias else (SQL_CONTEXT, "context")
    for r in db.run(plpy, name, sql, ["text", "uuid[]", "text[]", "uuid[]", "uuid[]", "uuid[]"],
                    [bank_id, ids, names, [a for a, _ in asked], [b for _, b in asked], known]):
        if r["kind"] == "near":
            ctx.near.setdefault(r["b"], set()).add(r["a"])
            near_read.setdefault(r["b"], set()).add(r["a"])
            if r["n"] is None:
                ctx.degree[r["a"]] = degrees[r["a"]]
            else:
                ctx.degree[r["a"]] = degrees[r["a"]] = r["n"]
        elif r["kind"] == "pair":
            ctx.pairs.add((r["a"], r["b"]))
            ctx.pairs.add((r["b"], r["a"]))
        else:
            ctx.known.add((r["a"], r["b"]))
    return ctx


def near_partners(plpy, bank_id: str, near_names: List[str], cap: int):
    """The entities the nearby names reach by name or alias: rows (key, id, unsettled, partners), partners
    counted up to ``cap`` + 1."""
    return db.run(plpy, "near_partners", SQL_NEAR_PARTNERS, ["text", "int", "text[]"], [bank_id, cap, near_names])


def pending_dates(plpy, bank_id: str, entity_ids: Iterable[str]) -> Dict[str, Tuple[Optional[float], bool]]:
    """This transaction's unapplied last_seen per entity: {id: (epoch, recomputed)}."""
    ids = sorted(set(entity_ids))
    if not ids:
        return {}
    return {r["id"]: (r["last_seen"], r["recompute"])
            for r in db.run(plpy, "pending_dates", SQL_PENDING_DATES, ["text", "uuid[]"], [bank_id, ids])}


# How many entities a bank holds, counted up to $2: whether it holds as many
# as a partner's specificity needs (decide.py, the misspellings lever). In the
# primary key's order, so that its index answers; the whole count cost 10 ms
# at 100,000 entities.
SQL_BANK_ENTITIES = """
SELECT count(*) AS n
  FROM (SELECT 1 FROM entities AS e
         WHERE e.bank_id = $1
         ORDER BY e.id
         LIMIT $2) AS b
"""


class BankSize:
    """Whether a bank holds n entities or more (this transaction's included), counted only as far as asked."""

    def __init__(self, plpy, bank_id: str) -> None:
        self.plpy, self.bank_id = plpy, bank_id
        self.at_least = 0                      # the bank holds this many, or more
        self.exactly: Optional[int] = None     # known once a count stopped short

    def holds(self, n: int) -> bool:
        if self.exactly is not None:
            return self.exactly >= n
        if n <= self.at_least:
            return True
        counted = int(db.run(self.plpy, "bank_entities", SQL_BANK_ENTITIES, ["text", "int8"],
                             [self.bank_id, n])[0]["n"])
        self.at_least = max(self.at_least, counted)
        if counted < n:
            self.exactly = counted
        return counted >= n


SQL_TRIGRAMS = """
SELECT ARRAY(SELECT array_to_string(@trgm@.show_trgm(k), chr(%d))
               FROM unnest($1::text[]) WITH ORDINALITY AS u (k, i) ORDER BY i) AS trigrams
""" % ord(trigrams.SEPARATOR)


def trigrams_of(plpy, keys: List[str]) -> List[str]:
    """show_trgm of already lowered keys (the probe forms of a call), joined as trigrams.parse reads them."""
    if not keys:
        return []
    return db.run(plpy, "trigrams", SQL_TRIGRAMS, ["text[]"], [keys])[0]["trigrams"]


def order_key(c: Candidate):
    """Probe order: similarity descending, then name, type and id (see SQL_CANDIDATES)."""
    return (-c.trigram_similarity, c.key, c.entity_type or "", c.id)
