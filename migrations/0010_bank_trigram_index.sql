-- entity_resolver 0010: the trigram index is bank-scoped.
-- Frozen once released: later changes go into a new numbered file.
--
-- 0001's trigram index held lower(canonical_name) only, so a probe read the
-- posting lists of every bank's matching names and dropped the other banks'
-- rows afterwards: a small bank beside large ones paid for their matches
-- (docs/benchmarks.md, "Banks side by side"). With bank_id as the index's
-- first column (btree_gin's operator class for text) the index intersects
-- the bank's entries with the trigram matches itself, and the heap is read
-- for the bank's own candidates only. Same name, same rows (regular
-- entities), no pending list (as 0005 set).

DROP INDEX {{ schema }}.entities_name_trgm_idx;

CREATE INDEX entities_name_trgm_idx
ON {{ schema }}.entities
USING gin (bank_id, lower(canonical_name) {{ trgm_schema }}.gin_trgm_ops)
WITH (fastupdate = FALSE)
WHERE entity_kind <> 'label';
