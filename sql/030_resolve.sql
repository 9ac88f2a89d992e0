-- Resolution: resolve_mention, resolve_mentions, explain_mention.
--
-- Each is a PL/Python entry point (see 020_banks.sql for how the installer
-- expands the body into the internal PL/Python function and the public
-- wrapper). SET "pg_trgm.similarity_threshold": the resolver sets the probe
-- threshold with set_config(..., true); the SET clause restores the caller's
-- value when the function returns. SET
-- "pg_trgm.strict_word_similarity_threshold" = '1' (where resolution runs,
-- and explain, which reads the bank as resolution does to say which
-- candidates it considered): the neighbourhood's same names
-- (plpython/neighbourhood.py, SQL_ROWS) ask the trigram index for names
-- holding every trigram of a key as whole words, with the caller's value
-- untouched. SET jit = off (the same functions): the resolver's statements
-- read a few rows through indexes, but their estimates for an array of keys
-- grow with the keys, so a large INSERT's statements passed jit_above_cost
-- and compiled each time they ran (0.6 s of the neighbourhood's 1.6 s for
-- 500 facts at 100,000 entities, docs/benchmarks.md), which never paid.

-- The rows of a text array, for the resolver's look-ups one key at a time
-- (plpython/probe.py): unnest itself (its C function), without unnest's row
-- estimate. unnest counts a constant array and guesses 10 for a parameter,
-- so a statement planned for its actual keys always looks cheaper than its
-- generic plan and PostgreSQL plans it again at every call (0.4 ms a
-- statement); 10 rows here in both, and the generic plan is kept.
CREATE OR REPLACE FUNCTION {{ internal }}.each_key(keys text[])
RETURNS SETOF text
LANGUAGE internal
IMMUTABLE
STRICT
PARALLEL SAFE
ROWS 10
AS 'array_unnest';

COMMENT ON FUNCTION {{ internal }}.each_key(text[]) IS
'Internal: the elements of keys, in order (unnest with a fixed row estimate of 10).';

CREATE OR REPLACE FUNCTION {{ schema }}.resolve_mentions(
    bank_id text,
    mentions jsonb,
    event_date timestamptz DEFAULT now()
)
RETURNS TABLE (
    ord integer,
    mention text,
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8
)
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ resolve.resolve_mentions_sql $$;

COMMENT ON FUNCTION {{ schema }}.resolve_mentions(text, jsonb, timestamptz) IS
'Resolve a batch of mentions (jsonb array of strings or {text, nearby, event_date, resolve}); one row per '
'element, in order. Same-batch new names are clustered; an element without nearby uses the other mention texts '
'of the batch.';

CREATE OR REPLACE FUNCTION {{ schema }}.resolve_mention(
    bank_id text,
    mention text,
    nearby text[] DEFAULT '{}',
    event_date timestamptz DEFAULT now(),
    resolve boolean DEFAULT TRUE,
    attributes jsonb DEFAULT NULL
)
RETURNS TABLE (
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8
)
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ resolve.resolve_mention_sql $$;

COMMENT ON FUNCTION {{ schema }}.resolve_mention(text, text, text[], timestamptz, boolean, jsonb) IS
'Resolve one mention to an existing entity (name 0.5, co-occurrence 0.3, recency 0.2; threshold 0.6) or create '
'one. resolve = false: exact case-insensitive match or a new entity spelled as given. attributes: what the '
'mention says besides its name ({"email": ..., "birth_date": ...}). A write: it records provenance and counts '
'the mention (lookup_mention only looks).';

CREATE OR REPLACE FUNCTION {{ schema }}.lookup_mention(
    bank_id text,
    mention text,
    nearby text[] DEFAULT '{}',
    event_date timestamptz DEFAULT now(),
    mention_type text DEFAULT NULL,
    attributes jsonb DEFAULT NULL
)
RETURNS TABLE (
    entity_id uuid,
    canonical_name text,
    score float8,
    decision text
)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ resolve.lookup_mention_sql $$;

COMMENT ON FUNCTION {{ schema }}.lookup_mention(text, text, text[], timestamptz, text, jsonb) IS
'Read-only look-up: the entity resolve_mention would choose (decision resolved, alias, memory, label, identifier '
'or ambiguous), or NULL with decision new when it would create one. mention_type and attributes: the mention''s '
'type (person, place, ...) and attributes, as a mention element''s "type" and "attributes". Writes nothing: no '
'entity, provenance or statistics.';

CREATE OR REPLACE FUNCTION {{ schema }}.explain_mention(
    bank_id text,
    mention text,
    nearby text[] DEFAULT '{}',
    event_date timestamptz DEFAULT now(),
    mention_type text DEFAULT NULL,
    attributes jsonb DEFAULT NULL
)
RETURNS TABLE (
    candidate_id uuid,
    canonical_name text,
    trigram_similarity float8,
    tokens_compatible boolean,
    name_similarity float8,
    cooccurrence float8,
    recency float8,
    score float8,
    decision text,
    matched_form text,
    lever text,
    considered boolean
)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
SET jit = off
AS $$ explain.explain $$;

COMMENT ON FUNCTION {{ schema }}.explain_mention(text, text, text[], timestamptz, text, jsonb) IS
'Show every candidate for a mention with its signals, score and decision (below_floor, word_mismatch, label_row, '
'type_mismatch, attribute_conflict, below_threshold, ambiguous, needs_context, outscored, chosen; alias, memory '
'or identifier for an exact hit). matched_form: the form of the mention that found the candidate (without legal '
'forms, a nickname''s given name), NULL for the mention itself; lever: the enhanced profile''s lever that '
'decided, if one did (attributes, homonyms among them); considered: whether resolution reads the candidate for '
'this mention called alone, as the session is set (the whole bank''s probe, only the identical names where one '
'settles the mention, a small bank read whole, or the mention''s neighbourhood under '
'entity_resolver.neighbourhood_probe): a new entity records the best score of those. Writes nothing; probes '
'down to trigram similarity 0.15.';

CREATE OR REPLACE FUNCTION {{ schema }}.fold_name(name text)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT lower(name COLLATE {{ name_collation }})
$$;

COMMENT ON FUNCTION {{ schema }}.fold_name(text) IS
'A name folded as the resolver folds it: lower() with the collation of entities.canonical_name (the database '
'default, or C.UTF-8 in a C-locale database). Compare with lower(canonical_name).';
