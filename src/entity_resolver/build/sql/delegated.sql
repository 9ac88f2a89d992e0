{# The call of a bank function on the node holding the bank (Citus), generated
   by build/citus.py for each bank function: <name>_delegated(bank_id, args)
   unpacks the arguments from jsonb, calls <name>_impl and returns its result
   as jsonb. Values: name; volatility (the function's); result (the statement
   that calls <name>_impl into result); flush (for a function that writes:
   the statement that applies its statistics, else nothing). #}
CREATE OR REPLACE FUNCTION {{ internal }}.{{ name }}_delegated(bank_id text, args jsonb)
RETURNS jsonb
LANGUAGE plpgsql
{{ volatility }}
STRICT
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    result jsonb;
BEGIN
    {{ result }}{{ flush }}
    RETURN result;
END;
$$;

COMMENT ON FUNCTION {{ internal }}.{{ name }}_delegated(text, jsonb) IS
'Internal (generated, distributed): runs {{ name }} on the node holding the bank; called by '
'{{ name }} on the coordinator. STRICT: a NULL bank never reaches the Citus planner.';
