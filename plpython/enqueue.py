"""Queueing the mention statistics of a resolved batch.

Each resolved mention adds 1 to its entity's mention_count and moves
last_seen to its event date; the increments are queued in the caller's
transaction (stats_queue) and applied by the flush, aggregated, in sorted
key order (sql/040_write_path.sql).
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import db

SQL_QUEUE_MENTIONS = """
INSERT INTO stats_queue (bank_id, entity_id, increment, event_date)
SELECT $1, q.entity_id, q.n, q.event_date
  FROM unnest($2::uuid[], $3::bigint[], $4::timestamptz[]) AS q (entity_id, n, event_date)
"""


def mention_increments(entity_ids: Sequence[str], epochs: Sequence[Optional[float]],
                       dates: Sequence[Optional[str]]) -> Tuple[List[str], List[int], List[Optional[str]]]:
    """One increment per entity: (ids sorted, mention counts, latest event date of each)."""
    agg: Dict[str, List[Any]] = {}
    for i, ident in enumerate(entity_ids):
        entry = agg.setdefault(ident, [0, None, None])
        entry[0] += 1
        if epochs[i] is not None and (entry[1] is None or epochs[i] > entry[1]):
            entry[1], entry[2] = epochs[i], dates[i]
    ids = sorted(agg)
    return ids, [agg[k][0] for k in ids], [agg[k][2] for k in ids]


def queue_mentions(plpy, bank_id: str, entity_ids, epochs, dates) -> None:
    """Queue the mention increments of a batch (one row per entity)."""
    ids, counts, latest = mention_increments(entity_ids, epochs, dates)
    db.run(plpy, "queue", SQL_QUEUE_MENTIONS, ["text", "uuid[]", "bigint[]", "timestamptz[]"],
           [bank_id, ids, counts, latest])
