-- The resolver's PL/Python modules (plpython/*.py) and how a session loads them.
--
-- The modules are rows of plpython_modules, written by the installer in
-- import order. Every PL/Python entry point starts with a prologue generated
-- at install (src/entity_resolver/build/entry_points.py) that calls
-- _load_modules once per session and code version; the modules then live in
-- GD, PL/Python's per-session dictionary, so a call costs no extra statement.

COMMENT ON SCHEMA {{ schema }} IS
'entity_resolver: entity resolution for AI-agent memory. Start with resolve_mention, explain_mention and the '
'facts table; internals live in the _internal schema.';
COMMENT ON SCHEMA {{ internal }} IS
'entity_resolver internals: PL/Python bodies, triggers and helpers called by the public functions. Not an API.';

CREATE OR REPLACE FUNCTION {{ internal }}._load_modules(gd_key text)
RETURNS void
LANGUAGE plpython3u
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
import sys
import types

rows = plpy.execute(
    "SELECT name, source FROM plpython_modules ORDER BY ordinal"
)
loaded = {}
saved = {}
try:
    for row in rows:
        name = row["name"]
        module = types.ModuleType("entity_resolver_" + name)
        module.__file__ = "<entity_resolver/" + name + ".py>"
        # Bare-name imports between modules ("import words") resolve to the
        # modules being loaded, not to anything on the server's sys.path.
        saved.setdefault(name, sys.modules.get(name))
        sys.modules[name] = module
        exec(compile(row["source"], module.__file__, "exec"), module.__dict__)
        loaded[name] = module
finally:
    for name, previous in saved.items():
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
# Drop this schema's code of an older version loaded earlier in this session
# (a reinstall); installations in other schemas keep theirs.
schema = plpy.execute("SELECT current_schema() AS s")[0]["s"]
current = GD.setdefault("entity_resolver:schemas", {})
previous = current.get(schema)
if previous is not None and previous != gd_key:
    GD.pop(previous, None)
current[schema] = gd_key
GD[gd_key] = loaded
$$;

COMMENT ON FUNCTION {{ internal }}._load_modules(text) IS
'Internal: load the resolver modules from plpython_modules into this session.';

CREATE OR REPLACE FUNCTION {{ internal }}._clean_message(msg text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT regexp_replace(msg, '^(plpy\.Error|spiexceptions\.\w+): ', '')
$$;

COMMENT ON FUNCTION {{ internal }}._clean_message(text) IS
'Internal: strip PL/Python''s exception-class prefix from an error message (used by the generated wrappers).';

CREATE OR REPLACE FUNCTION {{ internal }}._last_call_statements()
RETURNS integer
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ resolve.last_call_statements $$;

COMMENT ON FUNCTION {{ internal }}._last_call_statements() IS
'Internal: how many SQL statements the last resolve or explain call of this session ran (a call runs a fixed '
'handful whatever its batch size).';
