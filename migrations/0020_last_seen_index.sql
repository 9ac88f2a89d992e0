-- entity_resolver 0020: the entities seen around a date (issue 34).
-- Frozen once released: later changes go into a new numbered file.
--
-- * entities_bank_last_seen_idx: the entities of a bank last seen within a
--   window, the recency source of the neighbourhood probe
--   (plpython/neighbourhood.py). An update of last_seen is then no longer a
--   HOT update (docs/benchmarks.md measured 1-9 % more time per retain at
--   10,000 entities when the probe dominated); the window it reads costs what
--   the bank's activity around the date costs, not the bank's size.

CREATE INDEX entities_bank_last_seen_idx ON {{ schema }}.entities (bank_id, last_seen);

COMMENT ON INDEX {{ schema }}.entities_bank_last_seen_idx IS
'The entities of a bank last seen within a window of dates (the neighbourhood probe''s recent entities).';
