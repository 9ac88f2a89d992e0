"""The only module that talks to PostgreSQL: prepared plans, statement counting, errors.

Stages hand their SQL and parameters here; plans are prepared once per session
(the modules live in GD, PL/Python's per-session dictionary). Every statement
is counted: a resolve call runs a fixed handful whatever its batch size, and
last_call_statements() lets a test hold it to that.
"""

from contextlib import contextmanager

from errors import InputError

_PLANS = {}
_COUNTER = {"statements": 0}
# What the resolver call in progress read at its start (generic_plans).
_CALL = {"small_bank_probe": "auto", "neighbourhood_probe": "auto", "table_rows": 0.0}

# Names substituted into statements, read from the catalog once per session:
# @trgm@ is pg_trgm's schema (its functions and operators are qualified, so a
# look-alike planted elsewhere is never picked up); @collate@ is the collation
# of entities.canonical_name, which mention texts are lowered with. In a
# database whose LC_CTYPE is C the installer gives the column the C.UTF-8
# collation so that lower() folds 'İ' on the stored side; the probing side
# must fold with the same collation, not the database's. @sim@ is the schema
# of the operator class of the trigram index (migration 0012): ours, whose %
# and %>> are LEAKPROOF so that row-level security lets a bank-bound role's
# probe use the index; pg_trgm's on Citus, whose workers cannot have ours.
# @bank_collate@ is the COLLATE clause that makes the probe's bank condition
# one only the trigram index answers (its bank column has the "C" collation,
# migration 0014; the btrees led by bank_id have the column's): empty when
# the index's collation is the column's (Citus). Equality is the same under
# both (deterministic collations).
SQL_CATALOG_TOKENS = """
SELECT (SELECT e.extnamespace::regnamespace::text FROM pg_catalog.pg_extension AS e
         WHERE e.extname = 'pg_trgm') AS trgm,
       (SELECT o.opcnamespace::regnamespace::text FROM pg_catalog.pg_index AS i
         INNER JOIN pg_catalog.pg_opclass AS o ON i.indclass[1] = o.oid
         WHERE i.indexrelid = to_regclass('entities_name_trgm_idx')) AS trgm_ops,
       (SELECT CASE WHEN a.attcollation = 100 THEN '"default"'
                    ELSE quote_ident(n.nspname) || '.' || quote_ident(c.collname) END
          FROM pg_catalog.pg_attribute AS a
         INNER JOIN pg_catalog.pg_collation AS c ON a.attcollation = c.oid
         INNER JOIN pg_catalog.pg_namespace AS n ON c.collnamespace = n.oid
         WHERE a.attrelid = 'entities'::regclass AND a.attname = 'canonical_name') AS name_collation,
       (SELECT CASE WHEN i.indcollation[0] IN (0, a.attcollation) THEN ''
                    ELSE 'COLLATE ' || quote_ident(n.nspname) || '.' || quote_ident(c.collname) END
          FROM pg_catalog.pg_index AS i
         INNER JOIN pg_catalog.pg_attribute AS a ON i.indrelid = a.attrelid AND i.indkey[0] = a.attnum
         LEFT JOIN pg_catalog.pg_collation AS c ON i.indcollation[0] = c.oid
         LEFT JOIN pg_catalog.pg_namespace AS n ON c.collnamespace = n.oid
         WHERE i.indexrelid = to_regclass('entities_name_trgm_idx')) AS bank_collation
"""


# The resolver's own statements may run with generic plans for the length of
# a call (sql/036_session_plans.sql, _generic_plans_begin, explains when). These
# two are bookkeeping around the call, not its work: they are not counted. The
# first also reads what the call's choice of probe needs (small_bank.py): its
# setting (an error naming it when it is not auto, on or off) and how many
# rows the planner believes the entities table holds (-1: never analysed).
SQL_GENERIC_PLANS_BEGIN = """
SELECT _generic_plans_begin() AS previous,
       _switch_setting('entity_resolver.small_bank_probe', 'auto', TRUE) AS small_bank_probe,
       _switch_setting('entity_resolver.neighbourhood_probe', 'auto', TRUE) AS neighbourhood_probe,
       (SELECT c.reltuples FROM pg_catalog.pg_class AS c WHERE c.oid = to_regclass('entities'))::float8
           AS table_rows
"""
SQL_GENERIC_PLANS_END = "SELECT set_config('plan_cache_mode', $1, TRUE)"


def start_call():
    """Start counting the statements of a new call."""
    _COUNTER["statements"] = 0


def last_call_statements():
    """How many SQL statements the last resolve or explain call of this session ran."""
    return _COUNTER["statements"]


def execute(plpy, plan, args=None, counted=True):
    """Execute a prepared plan (or query text), counting it unless told not to."""
    if counted:
        _COUNTER["statements"] += 1
    if args is None:
        return plpy.execute(plan)
    return plpy.execute(plan, args)


def tokens_of(row):
    """The catalog tokens, from the row of SQL_CATALOG_TOKENS (a mapping by column name)."""
    return {"@trgm@": row["trgm"], "@collate@": row["name_collation"], "@sim@": row["trgm_ops"] or row["trgm"],
            "@bank_collate@": row["bank_collation"] or ""}


def substituted(query, tokens):
    """A statement with its catalog tokens replaced by their values."""
    for token, value in tokens.items():
        query = query.replace(token, value)
    return query


def _tokens(plpy):
    tokens = _PLANS.get("@tokens@")
    if tokens is None:
        tokens = tokens_of(execute(plpy, SQL_CATALOG_TOKENS)[0])
        _PLANS["@tokens@"] = tokens
    return tokens


def leakproof_probe(plpy):
    """Whether the trigram probe's operators are LEAKPROOF (row-level security lets them use the index)."""
    tokens = _tokens(plpy)
    return tokens["@sim@"] != tokens["@trgm@"]


def plan(plpy, name, query, types):
    """Prepare a statement once per session, its catalog tokens substituted."""
    prepared = _PLANS.get(name)
    if prepared is None:
        query = substituted(query, _tokens(plpy))
        prepared = plpy.prepare(query, types)
        _PLANS[name] = prepared
    return prepared


def call_setting(name):
    """What the resolver call in progress read at its start: small_bank_probe, neighbourhood_probe or table_rows."""
    return _CALL[name]


def run(plpy, name, query, types, args):
    """Prepare (once) and execute a statement; return its rows."""
    return execute(plpy, plan(plpy, name, query, types), args)


def _cursor(plpy, plan, args):
    """A cursor over a prepared plan's rows."""
    return plpy.cursor(plan, args)


def stream(plpy, name, query, types, args, batch=10000):
    """Prepare (once) and run a statement through a cursor; yield its rows, ``batch`` at a time from the
    server, so that a set-returning function never holds them all (counted once)."""
    _COUNTER["statements"] += 1
    cursor = _cursor(plpy, plan(plpy, name, query, types), args)
    while True:
        rows = cursor.fetch(batch)
        if not rows:
            return
        yield from rows


@contextmanager
def generic_plans(plpy):
    """Run the block with generic plans when entity_resolver.generic_plans allows it.

    The caller's plan_cache_mode is restored on every way out, an error
    included (a rolled-back subtransaction undoes the switch by itself, but an
    error the caller catches in PL/Python would not).
    """
    begin = plan(plpy, "generic_plans_begin", SQL_GENERIC_PLANS_BEGIN, [])
    row = execute(plpy, begin, [], counted=False)[0]
    previous = row["previous"]
    _CALL["small_bank_probe"] = row["small_bank_probe"]
    _CALL["neighbourhood_probe"] = row["neighbourhood_probe"]
    _CALL["table_rows"] = row["table_rows"] or 0.0
    try:
        yield
    finally:
        if previous is not None:
            end = plan(plpy, "generic_plans_end", SQL_GENERIC_PLANS_END, ["text"])
            execute(plpy, end, [previous], counted=False)


@contextmanager
def attempt(plpy):
    """A subtransaction whose SQL error is returned to the caller instead of raised.

    ``with attempt(plpy) as failed: ...`` then ``failed.error`` is the
    plpy.SPIError (None when the block succeeded); the block's writes are
    rolled back when it failed.
    """
    outcome = _Outcome()
    try:
        with plpy.subtransaction():
            yield outcome
    except plpy.SPIError as exc:
        outcome.error = exc


class _Outcome:
    error = None


def call(plpy, fn, *args):
    """Run an entry point, turning an InputError into an SQL error with its SQLSTATE."""
    try:
        return fn(plpy, *args)
    except InputError as exc:
        error = exc
    # Raised outside the except block: the report carries no exception chain.
    plpy.error(str(error), sqlstate=error.sqlstate)
