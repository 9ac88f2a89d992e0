-- Session switches and plan caching: the words a switch setting takes, and
-- generic plans for the resolver's own statements (read once per call by
-- plpython/db.py, SQL_GENERIC_PLANS_BEGIN).

-- ---------------------------------------------------------------------------
-- Generic plans (entity_resolver.generic_plans)
-- ---------------------------------------------------------------------------
-- A write runs each of its statements once or twice; left to choose
-- (plan_cache_mode = auto), PostgreSQL plans some of them afresh at every
-- execution (0.05-0.15 ms each, as much as running them). A generic plan is
-- built once a session, from the statistics the tables have at that moment,
-- and kept until they are next analysed: built on a new database's empty,
-- never-analysed tables it stays bad until autovacuum's first ANALYZE. So the
-- resolver switches to generic plans itself, for its own statements only, and
-- (setting auto, the default) only once entities and mentions have been
-- analysed at a meaningful size. Every probe orders its rows totally, so the
-- plans cannot change a decision. Never distributed: Citus cannot plan a
-- statement generically when its parameters pick the shard.

-- Whether entities and mentions have statistics worth a generic plan: both
-- analysed (by ANALYZE or autovacuum) when they held at least 1000 rows.
-- Checked once every 10 seconds a session, the answer kept in a session
-- setting ("<ready>:<epoch of the next check>"), so a call reads a setting,
-- not the catalog; a new database's first ANALYZE is noticed within 10 s.
CREATE OR REPLACE FUNCTION {{ internal }}._statistics_ready()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    cached text := coalesce(current_setting('entity_resolver.plan_statistics_{{ code_version }}', TRUE), '');
    now_epoch double precision := extract(EPOCH FROM clock_timestamp());
    ready boolean;
    ignored text;
BEGIN
    IF cached <> '' AND split_part(cached, ':', 2)::double precision > now_epoch THEN
        RETURN split_part(cached, ':', 1) = 't';
    END IF;
    SELECT count(*) = 2 INTO ready
    FROM pg_class AS c
    WHERE
        c.oid IN ('entities'::regclass, 'mentions'::regclass)
        AND c.reltuples >= 1000
        AND coalesce(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) IS NOT NULL;
    ignored := set_config(
        'entity_resolver.plan_statistics_{{ code_version }}',
        CASE WHEN ready THEN 't' ELSE 'f' END || ':' || (now_epoch + 10)::text,
        FALSE
    );
    RETURN ready;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._statistics_ready() IS
'Internal: whether entities and mentions were analysed at 1000 rows or more (checked every 10 s a session).';

-- The switches a session sets with SET (entity_resolver.generic_plans,
-- entity_resolver.flush_at_commit) take the words of a boolean setting:
-- on/true/yes/1 and off/false/no/0, any case, blanks around ignored; unset
-- or empty is the switch's default. Anything else is an error naming it.
CREATE OR REPLACE FUNCTION {{ internal }}._switch_setting(setting text, fallback text, allow_auto boolean)
RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    given text := lower(btrim(coalesce(current_setting(_switch_setting.setting, TRUE), '')));
BEGIN
    IF given = '' THEN
        RETURN _switch_setting.fallback;
    ELSIF given IN ('on', 'true', 'yes', '1') THEN
        RETURN 'on';
    ELSIF given IN ('off', 'false', 'no', '0') THEN
        RETURN 'off';
    ELSIF given = 'auto' AND _switch_setting.allow_auto THEN
        RETURN 'auto';
    END IF;
    RAISE EXCEPTION '%: must be %, got %', _switch_setting.setting,
        CASE WHEN _switch_setting.allow_auto THEN 'auto, on or off' ELSE 'on or off' END, quote_literal(given)
        USING ERRCODE = 'invalid_parameter_value';
END;
$$;

COMMENT ON FUNCTION {{ internal }}._switch_setting(text, text, boolean) IS
'Internal: a switch setting as on, off or (allow_auto) auto; unset or empty gives fallback; anything else is '
'an error naming the setting.';

-- entity_resolver.generic_plans: auto (the default) switches to generic plans
-- once the statistics are ready (need_statistics) and the session's
-- plan_cache_mode is auto (a value an operator chose is kept); on switches
-- whatever the statistics; off never. Returns the plan_cache_mode to restore
-- at the caller's end, NULL when it was left alone. The switch is
-- transaction-local (a rollback undoes it) and the callers restore the value
-- on every path out.
CREATE OR REPLACE FUNCTION {{ internal }}._generic_plans_switch(need_statistics boolean)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    wanted text := _switch_setting('entity_resolver.generic_plans', 'auto', TRUE);
    previous text := current_setting('plan_cache_mode');
    ignored text;
BEGIN
    IF {{ distributed }} OR wanted = 'off' OR previous = 'force_generic_plan' THEN
        RETURN NULL;
    END IF;
    IF wanted = 'auto' AND (previous <> 'auto' OR (_generic_plans_switch.need_statistics AND NOT _statistics_ready())) THEN
        RETURN NULL;
    END IF;
    -- An assignment, not PERFORM: PL/pgSQL evaluates it without running a
    -- statement (this runs twice a fact, through _generic_plans_begin).
    ignored := set_config('plan_cache_mode', 'force_generic_plan', TRUE);
    RETURN previous;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._generic_plans_switch(boolean) IS
'Internal: switch this transaction to generic plans when entity_resolver.generic_plans allows it (need_statistics: '
'under auto, only once the statistics are ready); returns the plan_cache_mode to restore (NULL: unchanged).';

-- At the start of a resolver call (plpython/db.py) and of the flush at
-- commit, run once or twice a fact in a session: generic plans only once the
-- statistics are ready, since a plan built on a new database's empty tables
-- would be kept until their first ANALYZE.
CREATE OR REPLACE FUNCTION {{ internal }}._generic_plans_begin()
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- A simple expression: PL/pgSQL evaluates it without running a statement.
    RETURN _generic_plans_switch(TRUE);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._generic_plans_begin() IS
'Internal: switch this transaction to generic plans when entity_resolver.generic_plans allows it and the '
'statistics are ready; returns the plan_cache_mode to restore (NULL: unchanged).';
