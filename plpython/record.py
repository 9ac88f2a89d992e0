"""Writing what a call decided: new entities, then provenance, links and queued statistics.

Two statements, whatever the number of facts:

1. the new entities, under the bank's creation lock (locks.py), in
   lower(name) order; a name another session committed since the probe wins
   the race, and the call's rows take that entity instead (remap);
2. one row of provenance per mention, the mention increments queued per
   entity (count, latest and earliest event date), and the units linked
   (_link_units queues one pair increment per unit sharing a pair), and,
   where the bank has auto_reresolve on, the units queued for re-resolution.
"""

from typing import List, Optional

import db
import locks
from callstate import CallState, Entity

SQL_CREATE = """
WITH lock AS (SELECT pg_advisory_xact_lock(%d, hashtext($1)))

INSERT INTO entities (bank_id, id, canonical_name, entity_kind, entity_type, first_seen, last_seen, homonym)
SELECT $1 AS bank_id, r.id, r.name, r.kind, r.type, r.first_seen, r.first_seen AS last_seen,
       CASE WHEN r.homonym THEN r.id END AS homonym
  FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::boolean[])
       AS r (id, name, kind, type, first_seen, homonym),
       (SELECT count(*) FROM lock) AS locked
 ORDER BY lower(r.name)
ON CONFLICT (bank_id, folded(canonical_name), coalesce(entity_type, ''),
             coalesce(homonym, '00000000-0000-0000-0000-000000000000'::uuid)) DO NOTHING
RETURNING id::text AS id
""" % locks.CREATION

SQL_TAKEN = """
SELECT id::text AS id, lower(canonical_name) AS key, coalesce(entity_type, '') AS type
  FROM entities
 WHERE bank_id = $1 AND folded(canonical_name) = ANY($2::text[]) AND homonym IS NULL
"""

SQL_WRITE = """
WITH provenance AS (
    INSERT INTO mentions (bank_id, unit_id, ordinal, mention, entity_id, decision, score, event_date, attributes)
    SELECT $1 AS bank_id, p.unit_id, p.ordinal, p.mention, p.entity_id, p.decision, p.score, p.event_date,
           p.attributes::jsonb AS attributes
      FROM unnest($2::uuid[], $3::int[], $4::text[], $5::uuid[], $6::text[], $7::float8[], $8::timestamptz[],
                  $16::text[])
           AS p (unit_id, ordinal, mention, entity_id, decision, score, event_date, attributes)
),

queued AS (
    INSERT INTO stats_queue (bank_id, entity_id, increment, event_date, earliest)
    SELECT $1 AS bank_id, q.entity_id, q.n, q.latest, q.earliest
      FROM unnest($9::uuid[], $10::bigint[], $11::timestamptz[], $12::timestamptz[])
           AS q (entity_id, n, latest, earliest)
     ORDER BY q.entity_id
),

reresolve_queued AS (
    INSERT INTO reresolve_queue (bank_id, unit_id)
    SELECT $1 AS bank_id, u.unit_id
      FROM unnest($17::uuid[]) AS u (unit_id)
     ORDER BY u.unit_id
        ON CONFLICT (bank_id, unit_id) DO NOTHING
)

SELECT CASE WHEN cardinality($13::uuid[]) > 0 THEN _link_units($1, $13, $14, $15) ELSE 0 END AS links
"""


def create_entities(plpy, bank_id: str, state: CallState) -> None:
    """Insert the call's new entities; remap the ones another session created first."""
    if not state.created:
        return
    ents: List[Entity] = sorted((e for group in state.created.values() for e in group),
                                key=lambda e: (e.key, e.type or ""))
    dates = [state.first_dates[e.id][1] for e in ents]
    inserted = {r["id"] for r in db.run(
        plpy, "create", SQL_CREATE, ["text", "uuid[]", "text[]", "text[]", "text[]", "timestamptz[]", "boolean[]"],
        [bank_id, [e.id for e in ents], [e.name for e in ents], [e.kind for e in ents],
         [e.type for e in ents], dates, [e.homonym for e in ents]])}
    lost = [e for e in ents if e.id not in inserted]
    if not lost:
        return
    taken = {(r["key"], r["type"]): r["id"] for r in db.run(plpy, "taken", SQL_TAKEN, ["text", "text[]"],
                                                            [bank_id, [e.key for e in lost]])}
    state.remap({e.id: taken[(e.key, e.type or "")] for e in lost if (e.key, e.type or "") in taken})


def write(plpy, bank_id: str, state: CallState, queue: bool = False) -> None:
    """Provenance, queued mention statistics and links, in one statement; ``queue``: the units for
    re-resolution too (the bank's auto_reresolve)."""
    prov = state.provenance
    ids = sorted(state.mentions)
    counts = [state.mentions[e] for e in ids]
    links = state.links
    db.run(plpy, "write", SQL_WRITE,
           ["text", "uuid[]", "int[]", "text[]", "uuid[]", "text[]", "float8[]", "timestamptz[]",
            "uuid[]", "bigint[]", "timestamptz[]", "timestamptz[]", "uuid[]", "uuid[]", "timestamptz[]", "text[]",
            "uuid[]"],
           [bank_id,
            [r[0] for r in prov], [r[1] for r in prov], [r[2] for r in prov], [r[3] for r in prov],
            [r[4] for r in prov], [r[5] for r in prov], [r[6] for r in prov],
            ids, [c[0] for c in counts], [c[2] for c in counts], [c[4] for c in counts],
            [u for u, _, _ in links], [e for _, e, _ in links], [d for _, _, d in links],
            [r[7] for r in prov],
            sorted({r[0] for r in prov}) if queue else []])


def persist(plpy, bank_id: str, state: CallState, queue: bool = False) -> Optional[Exception]:
    """Write everything, or nothing: returns the SQL error of a lost race (entity gone), else None.

    An entity chosen by the call may have been deleted since the probe by a
    session that committed in between (a merge, or the forgetting of its last
    mention): the foreign keys refuse the rows. The caller then decides
    again, against the bank as it is now.
    """
    with db.attempt(plpy) as outcome:
        create_entities(plpy, bank_id, state)
        write(plpy, bank_id, state, queue)
    error = outcome.error
    if error is not None and getattr(error, "sqlstate", None) != "23503":
        raise error
    return error
