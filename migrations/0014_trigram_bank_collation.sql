-- entity_resolver 0014: the trigram index keys its banks with the "C"
-- collation, so that the probe's bank condition can be answered by that
-- index alone. Frozen once released: later changes go into a new numbered file.
--
-- The probe names its bank with bank_id = $1, which the primary key and the
-- unique index on names (both led by bank_id) answer as well as the trigram
-- index (migration 0010). When the planner believes a bank small (a table
-- never analysed, or a bank that grew since the last ANALYZE: a new
-- database, an import, an eval replay), it takes a btree's bank prefix and
-- tests every row of the bank with %: measured on a 800-entity bank, about
-- 4 ms a key against 0.3 ms through the trigram index. The probe now compares
-- bank_id COLLATE "C", which only an index column of that collation can
-- answer. Equality is the same under either collation (both deterministic:
-- equal strings are equal bytes). On Citus the index stays as it is (its
-- bank column keeps the column's collation and the probe compares plainly):
-- the resolver reads the collation of the index's first column at the start
-- of a session (plpython/db.py).

DO $bank_collation$
BEGIN
    IF NOT {{ distributed }} THEN
        DROP INDEX {{ schema }}.entities_name_trgm_idx;
        CREATE INDEX entities_name_trgm_idx
        ON {{ schema }}.entities
        USING gin (bank_id COLLATE "C", {{ internal }}.folded(canonical_name) {{ internal }}.trgm_ops)
        WITH (fastupdate = FALSE)
        WHERE entity_kind <> 'label';
    END IF;
END
$bank_collation$;
