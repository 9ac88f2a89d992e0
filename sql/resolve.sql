-- Resolution: resolve_mention, resolve_mentions, explain_mention.
--
-- Each public function is a thin PL/pgSQL wrapper around an internal
-- PL/Python function (_name). The internal body only loads the resolver
-- modules (once per session) and calls plpython/resolver.py, where the
-- decisions live. The wrapper re-raises bad-input errors without PL/Python's
-- "plpy.Error:" prefix and traceback, keeping their SQLSTATE.
-- SET "pg_trgm.similarity_threshold": the resolver sets the probe threshold
-- with set_config(..., true); the SET clause restores the caller's value.

CREATE OR REPLACE FUNCTION {{ schema }}._resolve_mentions(
    bank_id text,
    mentions jsonb,
    event_date timestamptz
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
SET search_path = {{ schema }}, pg_catalog, pg_temp
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$
key = "entity_resolver:{{ code_version }}"
if key not in GD:
    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])
R = GD[key]["resolver"]
return R.call(plpy, R.resolve_mentions_sql, bank_id, mentions, event_date)
$$;

COMMENT ON FUNCTION {{ schema }}._resolve_mentions(text, jsonb, timestamptz) IS
'Internal: resolve_mentions without the error wrapper.';

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
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN QUERY SELECT * FROM _resolve_mentions(bank_id, mentions, event_date);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.resolve_mentions(text, jsonb, timestamptz) IS
'Resolve a batch of mentions (jsonb array of strings or {text, nearby, event_date, resolve}); one row per element, in order. Same-batch new names are clustered; an element without nearby uses the other mention texts of the batch.';

CREATE OR REPLACE FUNCTION {{ schema }}._resolve_mention(
    bank_id text,
    mention text,
    nearby text[],
    event_date timestamptz,
    resolve boolean
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
SET search_path = {{ schema }}, pg_catalog, pg_temp
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$
key = "entity_resolver:{{ code_version }}"
if key not in GD:
    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])
R = GD[key]["resolver"]
return R.call(plpy, R.resolve_mention_sql, bank_id, mention, nearby, event_date, resolve)
$$;

COMMENT ON FUNCTION {{ schema }}._resolve_mention(text, text, text[], timestamptz, boolean) IS
'Internal: resolve_mention without the error wrapper.';

CREATE OR REPLACE FUNCTION {{ schema }}.resolve_mention(
    bank_id text,
    mention text,
    nearby text[] DEFAULT '{}',
    event_date timestamptz DEFAULT now(),
    resolve boolean DEFAULT TRUE
)
RETURNS TABLE (
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8
)
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN QUERY SELECT * FROM _resolve_mention(bank_id, mention, nearby, event_date, resolve);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.resolve_mention(text, text, text[], timestamptz, boolean) IS
'Resolve one mention to an existing entity (name 0.5, co-occurrence 0.3, recency 0.2; threshold 0.6) or create one. resolve = false: exact case-insensitive match or a new entity spelled as given.';

CREATE OR REPLACE FUNCTION {{ schema }}._explain_mention(
    bank_id text,
    mention text,
    nearby text[],
    event_date timestamptz
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
    decision text
)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$
key = "entity_resolver:{{ code_version }}"
if key not in GD:
    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])
R = GD[key]["resolver"]
return R.call(plpy, R.explain, bank_id, mention, nearby, event_date)
$$;

COMMENT ON FUNCTION {{ schema }}._explain_mention(text, text, text[], timestamptz) IS
'Internal: explain_mention without the error wrapper.';

CREATE OR REPLACE FUNCTION {{ schema }}.explain_mention(
    bank_id text,
    mention text,
    nearby text[] DEFAULT '{}',
    event_date timestamptz DEFAULT now()
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
    decision text
)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN QUERY SELECT * FROM _explain_mention(bank_id, mention, nearby, event_date);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.explain_mention(text, text, text[], timestamptz) IS
'Show every candidate for a mention with its signals, score and decision (below_floor, word_mismatch, label_row, below_threshold, outscored, chosen). Writes nothing; probes down to trigram similarity 0.15.';

CREATE OR REPLACE FUNCTION {{ schema }}._last_call_statements()
RETURNS integer
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
key = "entity_resolver:{{ code_version }}"
if key not in GD:
    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])
return GD[key]["resolver"].last_call_statements()
$$;

COMMENT ON FUNCTION {{ schema }}._last_call_statements() IS
'Internal: how many SQL statements the last resolve or explain call of this session ran (a call runs a fixed handful whatever its batch size).';

CREATE OR REPLACE FUNCTION {{ schema }}.fold_name(name text)
RETURNS text
LANGUAGE sql
STABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
    SELECT lower(name COLLATE {{ name_collation }})
$$;

COMMENT ON FUNCTION {{ schema }}.fold_name(text) IS
'A name folded as the resolver folds it: lower() with the collation of entities.canonical_name (the database default, or C.UTF-8 in a C-locale database). Compare with lower(canonical_name).';
