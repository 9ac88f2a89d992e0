-- entity_resolver 0024: a name's identical trigram sets in one index descent (issue 34).
-- Frozen once released: later changes go into a new numbered file.
--
-- A key whose screening stops at an identical name is probed for its names
-- of similarity 1.0 only (plpython/candidates.py, the probe of identical
-- names). The trigram index answered that from its shortest posting lists,
-- which still grow with the bank: about 6 ms a key at 1,000,000 entities,
-- most of a call's probe (docs/benchmarks.md). Similarity 1.0 is an equal
-- trigram set, so a btree over a key of the set answers it in one descent
-- (0.03 ms a key there).
--
-- * trigram_key(name): a hash of pg_trgm's trigram set of the name
--   (show_trgm, sorted and without duplicates, so equal sets give equal
--   arrays), NULL for a name without trigrams (similar to nothing).
--   Different sets may share a hash: the probe keeps its condition of
--   similarity 1.0, so a collision adds no row. LEAKPROOF, as folded()
--   (migration 0012): it computes a value from its argument and raises no
--   error that depends on it, so row-level security lets a bank-bound
--   role's probe use the index too.
-- * entities_bank_trigram_key_idx: the regular entities of a bank by the
--   key of their folded name's trigram set.

CREATE FUNCTION {{ internal }}.trigram_key(name text)
RETURNS bigint
LANGUAGE sql
IMMUTABLE
STRICT
PARALLEL SAFE
LEAKPROOF
SET search_path = {{ search_path }}
AS $$
SELECT CASE WHEN pg_catalog.cardinality(t) > 0 THEN pg_catalog.hash_array_extended(t, 0) END
  FROM {{ trgm_schema }}.show_trgm(name) AS t
$$;

COMMENT ON FUNCTION {{ internal }}.trigram_key(text) IS
'Internal: a hash of pg_trgm''s trigram set of a name (NULL without trigrams); equal sets, equal keys. '
'LEAKPROOF, for the index of identical trigram sets.';

CREATE INDEX entities_bank_trigram_key_idx
ON {{ schema }}.entities (bank_id, {{ internal }}.trigram_key({{ internal }}.folded(canonical_name)))
WHERE entity_kind <> 'label';
