-- entity_resolver 0003: what the write path needs beyond 0001/0002.
-- Frozen once released: later changes go into a new numbered file.

-- The transaction that queued a statistic. The flush at commit applies the
-- rows of its own transaction and no one else's: a writer pays for what it
-- wrote, never for another session's backlog. pg_current_xact_id() is the
-- top-level transaction id even inside a savepoint, so rows queued in a
-- subtransaction are found as well.
ALTER TABLE {{ schema }}.stats_queue
ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE INDEX stats_queue_txid_idx
ON {{ schema }}.stats_queue (txid);

COMMENT ON COLUMN {{ schema }}.stats_queue.txid IS
'Top-level transaction that queued the row; the flush at commit applies its own rows.';

-- Entity-link expansion takes, per shared entity, its most recent facts
-- (expansion_per_entity_limit of them). This index hands them over in that
-- order, so a hub entity with 100,000 facts costs a short index scan, not a
-- sort of all its facts.
CREATE INDEX unit_entities_entity_recent_idx
ON {{ schema }}.unit_entities (bank_id, entity_id, event_date DESC NULLS LAST, unit_id);

-- Every flush rewrites entity and pair rows (counts, dates). Free space on
-- each page lets PostgreSQL keep the new row version on the same page
-- without touching the indexes (a HOT update), which matters most for the
-- trigram GIN index of entities. Applies to pages written from now on.
ALTER TABLE {{ schema }}.entities SET (fillfactor = 80);
ALTER TABLE {{ schema }}.entity_cooccurrences SET (fillfactor = 80);
