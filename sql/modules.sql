-- Loader of the resolver's PL/Python modules (plpython/*.py, stored as rows
-- of plpython_modules). Every PL/Python entry point calls it once per session
-- and code version; the modules then live in GD, PL/Python's per-session
-- dictionary, so a call costs no extra statement.

CREATE OR REPLACE FUNCTION {{ schema }}._load_modules(gd_key text)
RETURNS void
LANGUAGE plpython3u
SECURITY INVOKER
SET search_path = {{ schema }}, pg_catalog, pg_temp
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

COMMENT ON FUNCTION {{ schema }}._load_modules(text) IS
'Internal: load the resolver modules from plpython_modules into this session.';
