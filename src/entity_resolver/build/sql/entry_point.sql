{# An entry point, expanded (build/entry_points.py). The values come from its
   header: name, qual, args (as written), returns, options (one a line; the
   wrapper leaves out the pg_trgm settings, which only the PL/Python side
   needs); impl_args and types list the arguments without their defaults;
   prologue loads the modules once per session and calls the Python
   function; statement calls the PL/Python function as its result needs. #}
CREATE OR REPLACE FUNCTION {{ internal }}.{{ name }}_py({{ impl_args }})
RETURNS {{ returns }}
LANGUAGE plpython3u
{{ impl_options }}
AS $${{ prologue }}$$;

COMMENT ON FUNCTION {{ internal }}.{{ name }}_py({{ types }}) IS
'Internal (generated): the PL/Python body of {{ name }}, which calls it.';

CREATE OR REPLACE FUNCTION {{ qual }}.{{ name }}({{ args }})
RETURNS {{ returns }}
LANGUAGE plpgsql
{{ options }}
AS $$
DECLARE
    msg text;
    state text;
    detail text;
    hint text;
BEGIN
    {{ statement }}
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,
        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
{# RAISE refuses a NULL option and prints an empty DETAIL line for '': pass on
   only what the original error had. #}
    msg := _clean_message(msg);
    IF detail <> '' AND hint <> '' THEN
        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, DETAIL = detail, HINT = hint;
    ELSIF detail <> '' THEN
        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, DETAIL = detail;
    ELSIF hint <> '' THEN
        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, HINT = hint;
    END IF;
    RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state;
END;
$$;
