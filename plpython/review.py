"""The review queue's reading of two names: whether the resolver's own rules let one stand for the other
only with context.

review_queue lists two entities as a likely duplicate when their names are
close and their facts share partners. Some pairs the resolver's screening
(screen.py) passes only as weaker evidence that needs context: a nickname
("Bill Turner" / "William Turner", table name_variants), an initial
("K. Doyle" / "Kevin Doyle"), or a shorter name the longer one's words cover
("Sarah" / "Sarah Connor", the bare_names case). Where the context was not
there when the mention arrived, the resolver made a new entity; later facts
need not link the two, so only review can bring them together. Such a pair is
an item even without partners in common, and says how the names fit.

The check is the resolver's, with the bank's settings and name data: the
screening of one name as a candidate for the other (the word check, two
different given names, legal forms), the shorter name as the mention.
"""

from typing import Any, Dict, Iterator, List, Optional

import banks
import db
import screen
import words
from scoring import Candidate

# How two names fit besides their spelling (screen's Candidate.how), and a
# shorter name whose words the longer one's include.
INITIAL, VARIANT, COVERED = "initial", "variant", "covered"


def fit(a: str, b: str, cfg: Dict[str, Any], data) -> Optional[str]:
    """How one folded name may stand for the other only with context: INITIAL, VARIANT, COVERED; else None.

    None also when the screening refuses the pair (other words, another
    given name): a plain near spelling is left to the partners in common.
    """
    wa, wb = words.split_words(a), words.split_words(b)
    if len(wa) > len(wb):
        a, b, wa, wb = b, a, wb, wa
    # The floor was checked by the caller (pg_trgm similarity): 1.0 here.
    (cand, skipped), = screen.screen(a, [Candidate(None, b, 1.0, None)], cfg, names=data)
    if skipped is not None:
        return None
    if cand.how in (INITIAL, VARIANT):
        return cand.how
    if len(wa) < len(wb) and set(wa) <= set(wb):
        return COVERED
    return None


def name_fits_sql(plpy, bank_id: str, a: Optional[List[str]], b: Optional[List[str]]) -> List[Optional[str]]:
    """_name_fits: for each pair of folded names (a[i], b[i]), how one may stand for the other (fit), or NULL."""
    cfg = banks.read_bank(plpy, bank_id).cfg
    data = banks.name_data(plpy, cfg)
    return [fit(x, y, cfg, data) for x, y in zip(a or [], b or [])]


# The pairs of close names, one probe of the bank's trigram index per entity
# (the operator of the index's class, as the resolver's probe: db.py's
# tokens), where comparing every two entities with similarity() read them
# all: at 14,356 entities 103 million comparisons, 4 minutes, against 9 s
# for the same 273,090 pairs. The floor is pg_trgm.similarity_threshold,
# which _close_names sets (0.3, the resolver's probe floor). Here and in
# SQL_CLOSEST_NAMES, "<> 'label'" is the partial trigram index's predicate,
# written as the resolver's probe writes it; "= 'regular'" is the review's rule.
SQL_CLOSE_NAMES = """
SELECT a.id::text AS a_id, b.id::text AS b_id,
       @trgm@.similarity(folded(a.canonical_name), folded(b.canonical_name))::float8 AS sim
  FROM entities AS a
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT x.id, x.canonical_name
         FROM entities AS x
        WHERE x.bank_id @bank_collate@ = $1 AND x.entity_kind <> 'label' AND x.entity_kind = 'regular'
          AND folded(x.canonical_name) OPERATOR (@sim@.%) folded(a.canonical_name)
          AND x.id > a.id
       ) AS b
 WHERE a.bank_id = $1 AND a.entity_kind = 'regular'
"""


def close_names_sql(plpy, bank_id: str) -> Iterator[Dict[str, Any]]:
    """_close_names: every two regular entities of the bank whose folded names are close (trigram), with
    their similarity; each pair once (the smaller id first). Streamed: a bank of 100,000 entities of the
    benchmark's names has 18.7 million such pairs, which as one list took about 4 GB."""
    return db.stream(plpy, "review_close_names", SQL_CLOSE_NAMES, ["text"], [bank_id])


# A near miss's closest names (review_queue's close calls): the bank's regular
# entities at trigram similarity at least the floor to each name, through the
# trigram index, where a comparison with every entity of the bank per near
# miss took 11.6 of a 14,356-entity bank's 29 s of review. The floor is the
# bank's merge_min_similarity, set as the operator's threshold first (the
# function's SET restores it); a name sharing no trigram is never close, as in
# the resolver's probe.
SQL_SIMILARITY_FLOOR = "SELECT set_config('pg_trgm.similarity_threshold', $1, TRUE) AS floor"

SQL_CLOSEST_NAMES = """
SELECT k.key AS name, x.id::text AS id, x.sim
  FROM (SELECT DISTINCT u.key FROM unnest($2::text[]) AS u (key)) AS k
 CROSS JOIN LATERAL (  -- noqa: ST05
       SELECT e.id, @trgm@.similarity(folded(e.canonical_name), k.key)::float8 AS sim
         FROM entities AS e
        WHERE e.bank_id @bank_collate@ = $1 AND e.entity_kind <> 'label' AND e.entity_kind = 'regular'
          AND folded(e.canonical_name) OPERATOR (@sim@.%) k.key
       ) AS x
"""


def closest_names_sql(plpy, bank_id: str, keys: Optional[List[str]], floor: float) -> List[Dict[str, Any]]:
    """_closest_names: for each folded name, every regular entity of the bank at trigram similarity at least
    ``floor`` to it, with that similarity."""
    db.run(plpy, "review_similarity_floor", SQL_SIMILARITY_FLOOR, ["text"], [repr(float(floor))])
    return list(db.run(plpy, "review_closest_names", SQL_CLOSEST_NAMES, ["text", "text[]"], [bank_id, keys or []]))
