-- entity_resolver 0012: a bank-bound role's look-ups use the indexes.
-- Frozen once released: later changes go into a new numbered file.
--
-- Row-level security evaluates a condition before the policy only when every
-- function in it is LEAKPROOF; otherwise the condition waits until the row
-- has passed the policy, and cannot be an index condition. lower() and
-- pg_trgm's operators are not marked LEAKPROOF, so a bank-bound role's
-- look-ups by lowered name and its trigram probe read every row of its bank
-- (28x to 46x the owner's time, docs/benchmarks.md before this version).
--
-- folded() is lower() itself (the same built-in C function, so the same
-- folding, with the caller's collation), and trgm_similar() and
-- trgm_strict_word_similar() are pg_trgm's own C functions behind % and
-- %>>, each declared LEAKPROOF: they compute a value from their arguments
-- and raise no error that depends on them (out of memory aside). They run
-- no SQL and look up no names, so they pin no search_path: the setting would
-- protect nothing and cost a save and restore of it per call, per row of a
-- probe (about 0.8 microseconds, +40 % on the operator). The
-- resolver's look-ups compare folded(...) and probe with the operators of
-- this schema, so the indexes below serve them under the policies too.
--
-- Citus does not distribute a table whose index needs an operator class of
-- its own (its workers would not have it): a distributed installation keeps
-- pg_trgm's gin_trgm_ops over folded() (sql/citus/900_citus.sql also
-- converts a single-node installation it distributes), and a bank-bound role
-- there still probes without the trigram index.

CREATE FUNCTION {{ internal }}.folded(name text)
RETURNS text
LANGUAGE internal
IMMUTABLE
STRICT
PARALLEL SAFE
LEAKPROOF
AS 'lower';

COMMENT ON FUNCTION {{ internal }}.folded(text) IS
'Internal: lower() itself, declared LEAKPROOF so that a bank-bound role''s look-ups by folded name use an index.';

CREATE FUNCTION {{ internal }}.trgm_similar(a text, b text)
RETURNS boolean
LANGUAGE c
STABLE
STRICT
PARALLEL SAFE
LEAKPROOF
AS '$libdir/pg_trgm', 'similarity_op';

COMMENT ON FUNCTION {{ internal }}.trgm_similar(text, text) IS
'Internal: pg_trgm''s a % b (similarity at least pg_trgm.similarity_threshold), declared LEAKPROOF.';

CREATE FUNCTION {{ internal }}.trgm_strict_word_similar(a text, b text)
RETURNS boolean
LANGUAGE c
STABLE
STRICT
PARALLEL SAFE
LEAKPROOF
AS '$libdir/pg_trgm', 'strict_word_similarity_commutator_op';

COMMENT ON FUNCTION {{ internal }}.trgm_strict_word_similar(text, text) IS
'Internal: pg_trgm''s a %>> b (strict word similarity of b in a at least '
'pg_trgm.strict_word_similarity_threshold), declared LEAKPROOF.';

DROP INDEX {{ schema }}.entities_name_trgm_idx;
DROP INDEX {{ schema }}.mentions_memory_idx;

DO $leakproof$
BEGIN
    IF {{ distributed }} THEN
        CREATE INDEX entities_name_trgm_idx
        ON {{ schema }}.entities
        USING gin (bank_id, {{ internal }}.folded(canonical_name) {{ trgm_schema }}.gin_trgm_ops)
        WITH (fastupdate = FALSE)
        WHERE entity_kind <> 'label';
    ELSE
        CREATE OPERATOR {{ internal }}.% (
            LEFTARG = text, RIGHTARG = text, FUNCTION = {{ internal }}.trgm_similar,
            COMMUTATOR = OPERATOR({{ internal }}.%), RESTRICT = contsel, JOIN = contjoinsel
        );
        COMMENT ON OPERATOR {{ internal }}.% (text, text) IS
        'Internal: pg_trgm''s % (similarity at least pg_trgm.similarity_threshold), LEAKPROOF.';
        CREATE OPERATOR {{ internal }}.%>> (
            LEFTARG = text, RIGHTARG = text, FUNCTION = {{ internal }}.trgm_strict_word_similar,
            RESTRICT = contsel, JOIN = contjoinsel
        );
        COMMENT ON OPERATOR {{ internal }}.%>> (text, text) IS
        'Internal: pg_trgm''s %>> (strict word similarity at least pg_trgm.strict_word_similarity_threshold), '
        'LEAKPROOF.';
        -- pg_trgm's GIN support functions with the two operators above, at
        -- the strategy numbers gin_trgm_ops gives % and %>> (1 and 9).
        CREATE OPERATOR CLASS {{ internal }}.trgm_ops FOR TYPE text USING gin AS
        OPERATOR 1 {{ internal }}.% (text, text),
        OPERATOR 9 {{ internal }}.%>> (text, text),
        FUNCTION 1 pg_catalog.btint4cmp (integer, integer),
        FUNCTION 2 {{ trgm_schema }}.gin_extract_value_trgm (text, internal),
        FUNCTION 3 {{ trgm_schema }}.gin_extract_query_trgm (text, internal, smallint, internal, internal, internal,
            internal),
        FUNCTION 4 {{ trgm_schema }}.gin_trgm_consistent (internal, smallint, text, integer, internal, internal,
            internal, internal),
        FUNCTION 6 {{ trgm_schema }}.gin_trgm_triconsistent (internal, smallint, text, integer, internal, internal,
            internal),
        STORAGE integer;
        COMMENT ON OPERATOR CLASS {{ internal }}.trgm_ops USING gin IS
        'Internal: gin_trgm_ops with LEAKPROOF operators, for the trigram index a bank-bound role may use.';
        CREATE INDEX entities_name_trgm_idx
        ON {{ schema }}.entities
        USING gin (bank_id, {{ internal }}.folded(canonical_name) {{ internal }}.trgm_ops)
        WITH (fastupdate = FALSE)
        WHERE entity_kind <> 'label';
    END IF;
END
$leakproof$;

-- The resolver's look-ups by exact name (the unique index on
-- lower(canonical_name) stays: it keeps names unique, and the corrections
-- and the client look names up through it).
CREATE INDEX entities_folded_name_idx
ON {{ schema }}.entities (bank_id, {{ internal }}.folded(canonical_name));

CREATE INDEX mentions_memory_idx
ON {{ schema }}.mentions (bank_id, {{ internal }}.folded(mention COLLATE {{ name_collation }}))
WHERE decision = 'resolved';
