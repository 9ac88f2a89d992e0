"""Re-resolution (reresolve, sql/058_reresolve.sql): one stored fact decided again by the resolver.

The fact's mentions as the application stored them (facts.mentions, with its
event_date) go through the pipeline of the facts trigger (resolve.resolve_call),
writing nothing. The SQL around this call takes the fact's own contribution out
of the bank first (its provenance, links and the statistics they made), so the
fact is decided as if it arrived now; it then compares these outcomes with the
provenance and moves what changed. There is no second resolver here.
"""

import db
import resolve
from facts import fact_elements

# The fact as stored, as the trigger receives it (texts, sql/040_write_path.sql).
SQL_FACT = """
SELECT f.mentions::text AS mentions, f.event_date::text AS event_date
  FROM facts AS f
 WHERE f.bank_id = $1 AND f.id = $2
"""


def decide_fact_sql(plpy, bank_id, unit_id):
    """_reresolve_fact: per mention of the fact, in order, what the resolver decides now.

    Rows (ordinal, entity_id, canonical_name, created, score, decision); a
    mention that would create an entity has no entity_id (the id resolution
    would draw is not an entity of the bank).
    """
    rows = db.run(plpy, "reresolve_fact", SQL_FACT, ["text", "uuid"], [bank_id, unit_id])
    if not rows:
        return []
    fact = resolve.Fact(unit_id, [], rows[0]["event_date"], elements=fact_elements(rows[0]["mentions"]))
    outcomes = resolve.resolve_call(plpy, bank_id, [fact], None, write=False)[0]
    return [(n + 1, None if o.created else o.entity_id, o.canonical_name, o.created, o.score, o.decision)
            for n, o in enumerate(outcomes)]
