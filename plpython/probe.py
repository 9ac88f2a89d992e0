"""Finding what a mention could be: exact names, trigram candidates, and their partners.

Every comparison folds case with PostgreSQL's lower() on both sides. One
statement serves a whole batch: the exact look-up takes every key, the probe
every distinct key, the partner look-up every surviving candidate.
"""

from typing import Dict, Iterable, List, Tuple

import db
from mentions import datetime_of
from scoring import Candidate

SQL_EXACT = """
SELECT lower(canonical_name) AS key, id::text AS id, canonical_name, entity_kind
  FROM entities
 WHERE bank_id = $1 AND lower(canonical_name) = ANY ($2::text[])
"""

SQL_CANDIDATES = """
SELECT q.i::int AS i, c.id::text AS id, c.canonical_name, c.name, c.sim::float8 AS sim,
       c.last_seen
  FROM unnest($2::text[]) WITH ORDINALITY AS q (m, i)
 CROSS JOIN LATERAL (
       SELECT e.id, e.canonical_name, lower(e.canonical_name) AS name,
              @trgm@.similarity(lower(e.canonical_name), q.m) AS sim,
              extract(epoch FROM e.last_seen)::float8 AS last_seen
         FROM entities AS e
        WHERE e.bank_id = $1
          AND e.entity_kind <> 'label'
          AND lower(e.canonical_name) OPERATOR(@trgm@.%) q.m
        ORDER BY sim DESC, e.id
        LIMIT $3
       ) AS c
 ORDER BY q.i, c.sim DESC, c.id
"""

# explain_mention: regular rows at a lower probe (plus the label rows, which
# resolution never sees, so that explain can say why they were skipped).
SQL_EXPLAIN_CANDIDATES = """
(SELECT e.id::text AS id, e.canonical_name, lower(e.canonical_name) AS name,
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(epoch FROM e.last_seen)::float8 AS last_seen, false AS is_label
   FROM entities AS e
  WHERE e.bank_id = $1 AND e.entity_kind <> 'label'
    AND lower(e.canonical_name) OPERATOR(@trgm@.%) $2
  ORDER BY sim DESC, e.id
  LIMIT $3)
UNION ALL
(SELECT e.id::text, e.canonical_name, lower(e.canonical_name),
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(epoch FROM e.last_seen)::float8, true
   FROM entities AS e
  WHERE e.bank_id = $1 AND e.entity_kind = 'label'
    AND lower(e.canonical_name) OPERATOR(@trgm@.%) $2
  ORDER BY sim DESC, e.id
  LIMIT $4)
"""

# Partners of the candidates among the nearby names only (the only partners
# that can count), with each partner's degree (distinct co-occurring entities).
SQL_PARTNERS = """
WITH near AS (
    SELECT e.id, lower(e.canonical_name) AS name
      FROM entities AS e
     WHERE e.bank_id = $1 AND lower(e.canonical_name) = ANY ($3::text[])
),
pairs AS (
    SELECT c.entity_id_1 AS cand, c.entity_id_2 AS partner
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 = ANY ($2::uuid[])
       AND c.entity_id_2 IN (SELECT id FROM near) AND c.cooccurrence_count > 0
    UNION ALL
    SELECT c.entity_id_2, c.entity_id_1
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 = ANY ($2::uuid[])
       AND c.entity_id_1 IN (SELECT id FROM near) AND c.cooccurrence_count > 0
),
degrees AS (
    SELECT p.partner,
           (SELECT count(*) FROM entity_cooccurrences AS x
             WHERE x.bank_id = $1 AND x.entity_id_1 = p.partner AND x.cooccurrence_count > 0)
           + (SELECT count(*) FROM entity_cooccurrences AS x
             WHERE x.bank_id = $1 AND x.entity_id_2 = p.partner AND x.cooccurrence_count > 0)
           AS degree
      FROM (SELECT DISTINCT partner FROM pairs) AS p
)
SELECT pairs.cand::text AS cand, near.name, degrees.degree::bigint AS degree
  FROM pairs
  JOIN near ON near.id = pairs.partner
  JOIN degrees ON degrees.partner = pairs.partner
"""

# An exact hit: (entity id, canonical name, kind).
Hit = Tuple[str, str, str]


def exact(plpy, bank_id: str, keys: Iterable[str]) -> Dict[str, Hit]:
    """The entities whose lowered name is one of ``keys``, by key."""
    keys = list(keys)
    if not keys:
        return {}
    rows = db.run(plpy, "exact", SQL_EXACT, ["text", "text[]"], [bank_id, keys])
    return {r["key"]: (r["id"], r["canonical_name"], r["entity_kind"]) for r in rows}


def candidates(plpy, bank_id: str, keys: List[str], limit: int) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
    """Probe every key at once; return its candidates in probe order and every candidate's name."""
    by_key = {k: [] for k in keys}
    names = {}
    if not keys:
        return by_key, names
    rows = db.run(plpy, "candidates", SQL_CANDIDATES, ["text", "text[]", "int"], [bank_id, keys, limit])
    for r in rows:
        by_key[keys[r["i"] - 1]].append(
            Candidate(r["id"], r["name"], r["sim"], datetime_of(r["last_seen"])))
        names[r["id"]] = r["canonical_name"]
    return by_key, names


def explain_candidates(plpy, bank_id: str, key: str, limit: int, label_rows: int):
    """Explain's probe: regular candidates and label rows, with canonical names."""
    return list(db.run(plpy, "explain_candidates", SQL_EXPLAIN_CANDIDATES,
                       ["text", "text", "int", "int"], [bank_id, key, limit, label_rows]))


def partners(plpy, bank_id: str, candidate_ids: Iterable[str], near_names: Iterable[str]) -> Dict[str, Dict[str, int]]:
    """Partners of the candidates among the nearby names: {candidate id: {lowered name: degree}}."""
    ids = sorted(set(candidate_ids))
    names = sorted(set(n for n in near_names if n))
    out: Dict[str, Dict[str, int]] = {}
    if not ids or not names:
        return out
    for r in db.run(plpy, "partners", SQL_PARTNERS, ["text", "uuid[]", "text[]"], [bank_id, ids, names]):
        out.setdefault(r["cand"], {})[r["name"]] = r["degree"]
    return out
