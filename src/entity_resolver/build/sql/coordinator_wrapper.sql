{# The public function of a bank function's signature on the Citus
   coordinator (build/citus.py): it checks the bank and delegates the call to
   <name>_delegated on the bank's node. Values: name; header (its arguments
   as declared, one a line); signature (their types); returns; volatility;
   packed (the jsonb of the arguments after bank_id); return_result (the
   RETURN of the delegated jsonb as the declared type). #}
CREATE OR REPLACE FUNCTION {{ schema }}.{{ name }}(
    {{ header }}
)
RETURNS {{ returns }}
LANGUAGE plpgsql
{{ volatility }}
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    result jsonb;
BEGIN
    -- Checked here, on the coordinator: Citus 13.2 crashes the server planning
    -- a delegated call whose bank is NULL (citusdata/citus#7242).
    PERFORM check_bank_id({{ name }}.bank_id);
    SELECT r INTO result FROM {{ internal }}.{{ name }}_delegated({{ name }}.bank_id, {{ packed }}) AS r;
    {{ return_result }}
END;
$$;

COMMENT ON FUNCTION {{ schema }}.{{ name }}({{ signature }}) IS
'See {{ internal }}.{{ name }}_impl (distributed: the call runs on the node holding the bank).';
