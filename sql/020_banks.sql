-- Banks: the one bank_id rule, bank settings and the entity-label vocabulary.
--
-- PL/Python entry points are declared here by their signature and a body
-- naming the Python function (module.function); the installer generates the
-- PL/Python function in the internal schema (prologue: load the modules once
-- per session) and the public PL/pgSQL wrapper that re-raises errors without
-- PL/Python's exception prefix and traceback (src/entity_resolver/build/entry_points.py).

CREATE OR REPLACE FUNCTION {{ internal }}._check_not_null(value anyelement, argument text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    IF value IS NULL THEN
        RAISE EXCEPTION '%: must not be null', argument USING ERRCODE = 'null_value_not_allowed';
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_not_null(anyelement, text) IS
'Internal: the rule for a required argument: raise an error naming it (22004) when it is null.';

CREATE OR REPLACE FUNCTION {{ internal }}._check_id_array(ids uuid[], argument text, what text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM _check_not_null(ids, argument);
    IF cardinality(ids) = 0 THEN
        RAISE EXCEPTION '%: must name at least one %', argument, what USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF array_position(ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION '%: element % is NULL', argument, array_position(ids, NULL)
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_id_array(uuid[], text, text) IS
'Internal: the rule for an array of ids that names what to correct: not null, not empty, no null element.';

CREATE OR REPLACE FUNCTION {{ internal }}._check_text(value text, argument text, max_length integer)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM _check_not_null(value, argument);
    IF value ~ '^[[:space:]]*$' THEN
        RAISE EXCEPTION '%: must not be empty or blank', argument USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF char_length(value) > max_length THEN
        RAISE EXCEPTION '%: is % characters long; the limit is %', argument, char_length(value), max_length
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    RETURN value;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_text(text, text, integer) IS
'Internal: the rule for a text argument that names something (not null, not blank, at most max_length '
'characters); returns it or raises an error naming the argument.';

CREATE OR REPLACE FUNCTION {{ internal }}._check_range(value integer, argument text, low integer, high integer)
RETURNS integer
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    IF value IS NULL OR value NOT BETWEEN low AND high THEN
        RAISE EXCEPTION '%: must be between % and %, got %', argument, low, high, coalesce(value::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN value;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_range(integer, text, integer, integer) IS
'Internal: the rule for a bounded whole-number argument (low to high, not null); returns it or raises an error '
'naming the argument (22023).';

CREATE OR REPLACE FUNCTION {{ internal }}._check_max_results(max_results integer, argument text DEFAULT 'max_results')
RETURNS integer
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    RETURN _check_range(max_results, argument, 1, 100000);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_max_results(integer, text) IS
'Internal: the rule for a bound on a read''s rows (1 to 100000); returns it or raises an error naming the argument.';

CREATE OR REPLACE FUNCTION {{ internal }}.check_bank_id(bank_id text, argument text DEFAULT 'bank_id')
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- The one rule for a bank id, used by every entry point (PL/Python ones
    -- run it in their first statement): 1 to 100 characters, not blank.
    RETURN _check_text(bank_id, argument, 100);
END;
$$;

COMMENT ON FUNCTION {{ internal }}.check_bank_id(text, text) IS
'Internal: the bank_id rule (1 to 100 characters, not blank); returns the id or raises an error naming the argument.';

CREATE OR REPLACE FUNCTION {{ schema }}.configure_bank(bank_id text, settings jsonb)
RETURNS jsonb
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ banks.configure_bank $$;

COMMENT ON FUNCTION {{ schema }}.configure_bank(text, jsonb) IS
'Validate and store a bank''s setting overrides (replacing earlier ones); returns the effective settings. An '
'unknown key or out-of-range value is an error naming it.';

CREATE OR REPLACE FUNCTION {{ schema }}.set_entity_labels(bank_id text, labels jsonb)
RETURNS jsonb
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ banks.set_entity_labels $$;

COMMENT ON FUNCTION {{ schema }}.set_entity_labels(text, jsonb) IS
'Validate and store a bank''s label groups ({"attributes": [{"key", "type", "values"|"fields"}]}); label '
'mentions then resolve by exact match only.';

CREATE OR REPLACE FUNCTION {{ schema }}.entity_labels_json_schema(bank_id text)
RETURNS jsonb
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ banks.labels_json_schema $$;

COMMENT ON FUNCTION {{ schema }}.entity_labels_json_schema(text) IS
'The bank''s label vocabulary as a JSON Schema for an extractor (an enum per value group).';

CREATE OR REPLACE FUNCTION {{ internal }}._effective_settings(bank_id text)
RETURNS jsonb
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ banks.effective_settings_sql $$;

COMMENT ON FUNCTION {{ internal }}._effective_settings(text) IS
'Internal: the bank''s settings as resolution reads them (defaults of plpython/settings.py and its overrides).';

CREATE OR REPLACE FUNCTION {{ internal }}._attribute_names(settings jsonb, kind text)
RETURNS text[]
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT ARRAY(
        SELECT k.key
        FROM jsonb_each_text(_attribute_names.settings -> 'attribute_kinds') AS k (key, kind)
        WHERE k.kind = _attribute_names.kind
        ORDER BY k.key
    )
$$;

COMMENT ON FUNCTION {{ internal }}._attribute_names(jsonb, text) IS
'Internal: the attributes of that kind (identifying, distinguishing, ignored) in effective settings '
'(_effective_settings), by name.';
