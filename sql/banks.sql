-- Bank settings and the entity-label vocabulary (wrappers as in resolve.sql).

CREATE OR REPLACE FUNCTION {{ schema }}._clean_message(msg text)
RETURNS text
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
    SELECT regexp_replace(msg, '^(plpy\.Error|spiexceptions\.\w+): ', '')
$$;

COMMENT ON FUNCTION {{ schema }}._clean_message(text) IS
'Internal: strip PL/Python''s exception-class prefix from an error message.';

CREATE OR REPLACE FUNCTION {{ schema }}._bank_call(fn text, bank_id text, arg jsonb)
RETURNS jsonb
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
key = "entity_resolver:{{ code_version }}"
if key not in GD:
    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])
R = GD[key]["resolver"]
return R.call(plpy, R.BANK_CALLS[fn], bank_id, arg)
$$;

COMMENT ON FUNCTION {{ schema }}._bank_call(text, text, jsonb) IS
'Internal: configure_bank, set_entity_labels and entity_labels_json_schema without the error wrapper.';

CREATE OR REPLACE FUNCTION {{ schema }}.configure_bank(bank_id text, settings jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN _bank_call('configure_bank', bank_id, settings);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.configure_bank(text, jsonb) IS
'Validate and store a bank''s setting overrides (replacing earlier ones); returns the effective settings. An unknown key or out-of-range value is an error naming it.';

CREATE OR REPLACE FUNCTION {{ schema }}.set_entity_labels(bank_id text, labels jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN _bank_call('set_entity_labels', bank_id, labels);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.set_entity_labels(text, jsonb) IS
'Validate and store a bank''s label groups ({"attributes": [{"key", "type", "values"|"fields"}]}); label mentions then resolve by exact match only.';

CREATE OR REPLACE FUNCTION {{ schema }}.entity_labels_json_schema(bank_id text)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
    state text;
BEGIN
    RETURN _bank_call('labels_json_schema', bank_id, NULL);
EXCEPTION WHEN data_exception OR insufficient_privilege THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    RAISE EXCEPTION USING MESSAGE = _clean_message(msg), ERRCODE = state;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.entity_labels_json_schema(text) IS
'The bank''s label vocabulary as a JSON Schema for an extractor (an enum per value group).';
