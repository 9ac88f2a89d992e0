-- The write path: lock → link → queue → flush → forget.
--
-- * Every writer of a bank holds the bank lock in share mode until it
--   commits (_lock_bank; an operator correction holds it exclusive), and a
--   writer that creates entities also holds the bank's creation lock
--   (plpython/locks.py explains why no deadlock comes from our own locks).
-- * Linking a unit (a fact) to its entities inserts unit_entities rows and
--   queues one co-occurrence increment per pair of its entities.
-- * Resolution queues the mention increments and writes provenance
--   (plpython/record.py); nothing here counts a mention again.
-- * flush_stats applies the queue, aggregated, in sorted key order. By default
--   every transaction that queued statistics applies its own rows at commit
--   (a deferred constraint trigger on stats_queue), so a psql user sees exact
--   statistics after COMMIT without knowing flush_stats exists;
--   SET entity_resolver.flush_at_commit = off leaves them to a scheduled
--   flush_stats (docs/write-path.md).
-- * Forgetting (DELETE FROM facts, forget_unit) removes a unit's provenance and
--   links and queues their decrements; the flush recomputes the dates from
--   the record and removes an entity left without a mention or link (unless
--   an operator created or named it: curated).
-- * The facts table resolves, links and records all rows of an INSERT
--   statement, bank by bank, fact by fact in statement order.

CREATE OR REPLACE FUNCTION {{ internal }}._lock_bank(bank_id text, exclusive boolean DEFAULT FALSE)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- The key of plpython/locks.py (BANK, rendered as bank_lock by
    -- build.py; hashtext(bank_id)); held until the transaction ends.
    IF exclusive THEN
        PERFORM pg_advisory_xact_lock({{ bank_lock }}, hashtext(_lock_bank.bank_id));
    ELSE
        PERFORM pg_advisory_xact_lock_shared({{ bank_lock }}, hashtext(_lock_bank.bank_id));
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._lock_bank(text, boolean) IS
'Internal: take a bank''s lock until the transaction ends: share for writers, exclusive for operator corrections.';

-- ---------------------------------------------------------------------------
-- Linking
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ internal }}._link_units(
    bank_id text,
    unit_ids uuid[],
    entity_ids uuid[],
    event_dates timestamptz[]
)
RETURNS integer
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _link_units.bank_id;
    added_units uuid[];
    added_entities uuid[];
    added_dates timestamptz[];
BEGIN
    PERFORM _lock_bank(b);
    -- 1. The links, one statement for any number of units; what was added
    -- comes back as arrays. (A data-modifying WITH whose rows a later part
    -- of the same statement joins to a table is planned in pieces by Citus,
    -- its rows shipped to every node: each step here is a statement of its
    -- own, so that on Citus it runs whole on the bank's shards.)
    WITH input AS (
        SELECT DISTINCT ON (i.unit_id, i.entity_id)
            i.unit_id,
            i.entity_id,
            i.event_date
        FROM unnest(
            _link_units.unit_ids, _link_units.entity_ids, _link_units.event_dates
        ) AS i (unit_id, entity_id, event_date)
        WHERE i.unit_id IS NOT NULL AND i.entity_id IS NOT NULL
        ORDER BY i.unit_id ASC, i.entity_id ASC, i.event_date DESC NULLS LAST
    ),

    added AS (
        INSERT INTO unit_entities AS ue (bank_id, unit_id, entity_id, event_date)
        SELECT
            b,
            input.unit_id,
            input.entity_id,
            input.event_date
        FROM input
        ORDER BY input.unit_id, input.entity_id
        ON CONFLICT ON CONSTRAINT unit_entities_pkey DO NOTHING
        RETURNING ue.unit_id, ue.entity_id, ue.event_date
    )

    SELECT
        array_agg(added.unit_id),
        array_agg(added.entity_id),
        array_agg(added.event_date)
    INTO added_units, added_entities, added_dates
    FROM added;
    IF added_units IS NULL THEN
        RETURN 0;
    END IF;

    -- 2. One increment per pair with at least one newly linked side, once
    -- per unit, each (unit, pair) produced exactly once: two links just
    -- added pair up from the smaller side (a hash join of the added rows
    -- with themselves, no table read), and a link just added pairs with the
    -- unit's earlier links (retain of a unit again; none for a new fact).
    -- A fact of N mentions costs its N(N-1)/2 pairs, nothing more.
    -- cooccurrence_count stays "number of units linked to both". A pair's
    -- date in a unit is the later of its two links' dates, as rebuild_stats
    -- derives it.
    INSERT INTO stats_queue (bank_id, entity_id, entity_id_2, increment, event_date)
    SELECT
        b,
        unit_pairs.entity_id_1,
        unit_pairs.entity_id_2,
        count(*),
        max(unit_pairs.event_date)
    FROM (
        SELECT
            a.entity_id AS entity_id_1,
            c.entity_id AS entity_id_2,
            greatest(a.event_date, c.event_date) AS event_date
        FROM unnest(added_units, added_entities, added_dates) AS a (unit_id, entity_id, event_date)
        INNER JOIN unnest(added_units, added_entities, added_dates) AS c (unit_id, entity_id, event_date)
            ON a.unit_id = c.unit_id AND a.entity_id < c.entity_id
        UNION ALL
        SELECT
            least(a.entity_id, old.entity_id) AS entity_id_1,
            greatest(a.entity_id, old.entity_id) AS entity_id_2,
            greatest(a.event_date, old.event_date) AS event_date
        FROM unnest(added_units, added_entities, added_dates) AS a (unit_id, entity_id, event_date)
        INNER JOIN (
            SELECT
                m.unit_id,
                m.entity_id,
                m.event_date
            FROM unit_entities AS m
            WHERE
                m.bank_id = b
                AND m.unit_id IN (SELECT u.unit_id FROM unnest(added_units) AS u (unit_id))
                AND NOT EXISTS (
                    SELECT 1
                    FROM unnest(added_units, added_entities) AS n (unit_id, entity_id)
                    WHERE n.unit_id = m.unit_id AND n.entity_id = m.entity_id
                )
        ) AS old ON a.unit_id = old.unit_id
    ) AS unit_pairs
    GROUP BY unit_pairs.entity_id_1, unit_pairs.entity_id_2
    ORDER BY unit_pairs.entity_id_1, unit_pairs.entity_id_2;

    RETURN cardinality(added_units);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._link_units(text, uuid[], uuid[], timestamptz[]) IS
'Internal: link (unit, entity, event date) rows set-based and queue one pair increment per unit sharing a pair.';

CREATE OR REPLACE FUNCTION {{ schema }}.link_unit(
    bank_id text,
    unit_id uuid,
    entity_ids uuid[],
    event_date timestamptz DEFAULT now()
)
RETURNS integer
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    missing uuid;
BEGIN
    PERFORM check_bank_id(link_unit.bank_id);
    PERFORM _check_not_null(link_unit.unit_id, 'unit_id');
    PERFORM _check_id_array(link_unit.entity_ids, 'entity_ids', 'entity');
    -- An id of another bank (or of nothing) would otherwise surface as a
    -- foreign-key violation on unit_entities; name the argument instead.
    SELECT i.id
    INTO missing
    FROM unnest(link_unit.entity_ids) WITH ORDINALITY AS i (id, ord)
    WHERE NOT EXISTS (
        SELECT 1
        FROM entities AS e
        WHERE e.bank_id = link_unit.bank_id AND e.id = i.id
    )
    ORDER BY i.ord
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'entity_ids: % is not an entity of bank %', missing, quote_literal(link_unit.bank_id)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN _link_units(
        link_unit.bank_id,
        array_fill(link_unit.unit_id, ARRAY[cardinality(link_unit.entity_ids)]),
        link_unit.entity_ids,
        array_fill(link_unit.event_date, ARRAY[cardinality(link_unit.entity_ids)])
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.link_unit(text, uuid, uuid[], timestamptz) IS
'Link a unit kept in the caller''s own table to resolved entities; queue its co-occurrence pairs. '
'Returns the number of new links. Mention counts are queued by resolution, not here.';

-- ---------------------------------------------------------------------------
-- Flushing the statistics queue
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ internal }}._flush_bank(
    bank_id text,
    own_transaction_only boolean,
    OUT entities_updated bigint,
    OUT pairs_updated bigint
)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _flush_bank.bank_id;
    claim_ids bigint[];
    e_ids uuid[];
    e_increments bigint[];
    e_dates timestamptz[];
    e_earliest timestamptz[];
    e_recompute boolean[];
    p_ids_1 uuid[];
    p_ids_2 uuid[];
    p_increments bigint[];
    p_dates timestamptz[];
    p_recompute boolean[];
    stale uuid[];
    budget bigint;
BEGIN
    PERFORM _lock_bank(b);
    -- 1. Claim. Rows another flusher has locked are skipped, not waited for:
    -- each committed row is applied by exactly one flusher, and flushers
    -- never queue up behind each other on the queue.
    IF own_transaction_only THEN
        -- Rows of this transaction are invisible to everyone else. (A
        -- transaction without an id has queued nothing: none is assigned.)
        -- Not bounded: they are this transaction's own writes, and they
        -- cannot be split over transactions.
        SELECT array_agg(q.id) INTO claim_ids
        FROM stats_queue AS q
        WHERE q.txid = pg_current_xact_id_if_assigned() AND q.bank_id = b;
    ELSE
        -- The backlog: at most the transaction's remaining budget of rows
        -- (entity_resolver.flush_batch_rows, _flush_budget), oldest first, so
        -- that a flush holds its entity rows only briefly and a decrement is
        -- never applied before the increment it takes back (that was queued
        -- first, by a transaction committed before). What is left stays
        -- queued for the next flush.
        budget := _flush_budget();
        IF budget = 0 THEN
            entities_updated := 0;
            pairs_updated := 0;
            RETURN;
        END IF;
        SELECT array_agg(s.id) INTO claim_ids
        FROM (
            SELECT q.id FROM stats_queue AS q WHERE q.bank_id = b
            ORDER BY q.id
            LIMIT budget
            FOR UPDATE SKIP LOCKED
        ) AS s;
        IF budget IS NOT NULL THEN
            PERFORM set_config(
                'entity_resolver.flush_budget_{{ code_version }}',
                (budget - coalesce(cardinality(claim_ids), 0))::text,
                TRUE
            );
        END IF;
    END IF;
    entities_updated := 0;
    pairs_updated := 0;
    IF claim_ids IS NULL THEN
        RETURN;
    END IF;

    -- 2. Delete what was claimed and aggregate it per entity and per pair.
    -- Counts add up (a forgotten mention is a negative increment); dates move
    -- forward, unless something was forgotten: then they are recomputed from
    -- the record (step 5). The claimed ids are joined as a set, never
    -- searched one by one (`id = ANY(array)` read as a filter compares
    -- every row with every id: a fact of 1,000 mentions queues 500,000).
    -- The arrays' order does not matter: every step below locks and writes
    -- in an order of its own (one sort feeds them all).
    -- This transaction's own rows are found by its id, as they were claimed
    -- (no array at all): the queue's statistics are those of whenever it
    -- was last analysed, often empty, and a planner that believes it empty
    -- joins an array of 500,000 ids to it row by row. The backlog's claim
    -- is bounded by flush_batch_rows.
    WITH claimed AS (
        DELETE FROM stats_queue AS q
        USING unnest(claim_ids) AS c (id)
        WHERE q.bank_id = b AND q.id = c.id AND NOT own_transaction_only
        RETURNING q.entity_id, q.entity_id_2, q.increment, q.event_date, q.earliest, q.recompute
    ),

    own AS (
        DELETE FROM stats_queue AS q
        WHERE q.bank_id = b AND q.txid = pg_current_xact_id_if_assigned() AND own_transaction_only
        RETURNING q.entity_id, q.entity_id_2, q.increment, q.event_date, q.earliest, q.recompute
    ),

    totals AS (
        SELECT
            claimed.entity_id,
            claimed.entity_id_2,
            sum(claimed.increment)::bigint AS increment,
            max(claimed.event_date) AS event_date,
            min(claimed.earliest) AS earliest,
            bool_or(claimed.recompute) AS recompute
        FROM (SELECT * FROM claimed UNION ALL SELECT * FROM own) AS claimed
        GROUP BY claimed.entity_id, claimed.entity_id_2
        ORDER BY claimed.entity_id, claimed.entity_id_2
    )

    SELECT
        array_agg(t.entity_id) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.increment) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.event_date) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.earliest) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.recompute) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.entity_id) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.entity_id_2) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.increment) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.event_date) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.recompute) FILTER (WHERE t.entity_id_2 IS NOT NULL)
    INTO e_ids, e_increments, e_dates, e_earliest, e_recompute, p_ids_1, p_ids_2, p_increments, p_dates, p_recompute
    FROM totals AS t;

    -- 3. Entities: lock in sorted key order, then update. UPDATE ... FROM
    -- locks rows in whatever order its join produces; two flushers doing
    -- that could each hold a row the other waits for. FOR NO KEY UPDATE does
    -- not block the FOR KEY SHARE of foreign-key checks, so writers linking
    -- to these entities are never held up by a flush.
    PERFORM 1
    FROM entities AS e
    INNER JOIN unnest(e_ids) AS u (id) ON e.id = u.id
    WHERE e.bank_id = b
    ORDER BY e.id
    FOR NO KEY UPDATE OF e;

    UPDATE entities AS e
    SET
        mention_count = e.mention_count + u.increment,
        last_seen = CASE WHEN u.recompute THEN e.last_seen ELSE greatest(e.last_seen, u.event_date) END,
        first_seen = CASE WHEN u.recompute THEN e.first_seen ELSE least(e.first_seen, u.earliest) END
    FROM unnest(e_ids, e_increments, e_dates, e_earliest, e_recompute)
        AS u (id, increment, event_date, earliest, recompute)
    WHERE e.bank_id = b AND e.id = u.id;
    GET DIAGNOSTICS entities_updated = ROW_COUNT;

    -- 4. Pairs, after all entities, in sorted key order: an INSERT processes
    -- its rows in the order of its SELECT. A pair whose entity was deleted
    -- since it was queued is dropped with it.
    INSERT INTO entity_cooccurrences AS c (
        bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred
    )
    SELECT
        b,
        u.entity_id_1,
        u.entity_id_2,
        u.increment,
        u.event_date
    FROM unnest(p_ids_1, p_ids_2, p_increments, p_dates)
        AS u (entity_id_1, entity_id_2, increment, event_date)
    WHERE
        EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = b AND e.id = u.entity_id_1)
        AND EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = b AND e.id = u.entity_id_2)
    ORDER BY u.entity_id_1, u.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
        SET
            cooccurrence_count = c.cooccurrence_count + excluded.cooccurrence_count,
            last_cooccurred = greatest(c.last_cooccurred, excluded.last_cooccurred);
    GET DIAGNOSTICS pairs_updated = ROW_COUNT;

    -- 5. Something was forgotten: the dates come from the record, read now
    -- that the rows are locked (a writer cannot apply its own statistics to
    -- them before this transaction ends, so nothing it adds is missed).
    IF e_recompute IS NOT NULL AND TRUE = ANY(e_recompute) THEN
        UPDATE entities AS e
        SET
            last_seen = d.last_seen,
            first_seen = d.first_seen
        FROM (
            SELECT
                u.id,
                (SELECT max(m.event_date) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = u.id) AS last_seen,
                (SELECT min(m.event_date) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = u.id) AS first_seen
            FROM unnest(e_ids, e_recompute) AS u (id, recompute)
            WHERE u.recompute
        ) AS d
        WHERE e.bank_id = b AND e.id = d.id;
    END IF;
    IF p_recompute IS NOT NULL AND TRUE = ANY(p_recompute) THEN
        UPDATE entity_cooccurrences AS c
        SET last_cooccurred = (
            SELECT max(greatest(ua.event_date, ub.event_date))
            FROM unit_entities AS ua
            INNER JOIN unit_entities AS ub
                ON ua.bank_id = ub.bank_id AND ua.unit_id = ub.unit_id AND ub.entity_id = c.entity_id_2
            WHERE ua.bank_id = b AND ua.entity_id = c.entity_id_1
        )
        FROM unnest(p_ids_1, p_ids_2, p_recompute) AS u (entity_id_1, entity_id_2, recompute)
        WHERE
            u.recompute
            AND c.bank_id = b AND c.entity_id_1 = u.entity_id_1 AND c.entity_id_2 = u.entity_id_2;
    END IF;

    -- 6. An entity nothing refers to any more (no mention, no link) goes,
    -- with its pairs and aliases, unless an operator created or named it. One that another
    -- transaction is linking to right now (its key-share lock) is in use:
    -- it is skipped, not waited for.
    IF e_recompute IS NOT NULL AND TRUE = ANY(e_recompute) THEN
        SELECT array_agg(e.id) INTO stale
        FROM (
            SELECT e.id
            FROM entities AS e
            INNER JOIN unnest(e_ids, e_recompute) AS u (id, recompute) ON e.id = u.id AND u.recompute
            WHERE
                e.bank_id = b AND NOT e.curated
                AND NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = e.id)
                AND NOT EXISTS (SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = e.id)
            ORDER BY e.id
            FOR UPDATE OF e SKIP LOCKED
        ) AS e;
        IF stale IS NOT NULL THEN
            DELETE FROM entities AS e
            WHERE
                e.bank_id = b AND e.id = ANY(stale)
                AND NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = e.id)
                AND NOT EXISTS (SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = e.id);
        END IF;
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_bank(text, boolean) IS
'Internal: claim one bank''s queued statistics (all visible rows, or this transaction''s own), '
'apply them aggregated in sorted key order; recompute dates and remove orphans after forgetting.';

-- How many queue rows one transaction's flush_stats may still apply: the
-- budget set by _flush_queue from entity_resolver.flush_batch_rows, kept in a
-- transaction-local setting that _flush_bank lowers as it claims rows. NULL:
-- no bound.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_budget()
RETURNS bigint
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    left_over text := coalesce(current_setting('entity_resolver.flush_budget_{{ code_version }}', TRUE), '');
BEGIN
    IF left_over = '' THEN
        -- Not inside _flush_queue (a direct call): the setting itself.
        RETURN _flush_batch_rows();
    END IF;
    RETURN CASE WHEN left_over = 'none' THEN NULL ELSE left_over::bigint END;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_budget() IS
'Internal: the queue rows this transaction''s flush_stats may still apply (NULL: no bound).';

-- entity_resolver.flush_batch_rows: the most queue rows one flush_stats
-- applies (one transaction). A flush locks the entity rows it updates until
-- it commits, and a writer whose commit flush needs one of them waits for it:
-- the bound keeps that wait short whatever the backlog. 0 means no bound.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_batch_rows()
RETURNS bigint
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    raw text := btrim(coalesce(current_setting('entity_resolver.flush_batch_rows', TRUE), ''));
    n bigint;
BEGIN
    IF raw = '' THEN
        RETURN 5000;
    END IF;
    IF raw !~ '^[0-9]{1,18}$' THEN
        RAISE EXCEPTION 'entity_resolver.flush_batch_rows: must be a whole number of queue rows (0: no bound), got %',
            quote_literal(raw)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    n := raw::bigint;
    RETURN CASE WHEN n = 0 THEN NULL ELSE n END;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_batch_rows() IS
'Internal: entity_resolver.flush_batch_rows, the most queue rows one flush_stats applies (NULL: no bound).';

CREATE OR REPLACE FUNCTION {{ internal }}._flush_queue(
    bank_id text,
    own_transaction_only boolean,
    OUT entities_updated bigint,
    OUT pairs_updated bigint
)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    banks text[];
    one text;
    e bigint;
    p bigint;
BEGIN
    -- Bank by bank, in order: each bank's lock (share) is taken before its
    -- rows are claimed, so an operator correction never sees a flush half done.
    IF own_transaction_only THEN
        SELECT array_agg(DISTINCT q.bank_id ORDER BY q.bank_id) INTO banks
        FROM stats_queue AS q WHERE q.txid = pg_current_xact_id_if_assigned();
    ELSIF _flush_queue.bank_id IS NOT NULL THEN
        banks := ARRAY[_flush_queue.bank_id];
    ELSE
        SELECT array_agg(DISTINCT q.bank_id ORDER BY q.bank_id) INTO banks FROM stats_queue AS q;
    END IF;
    entities_updated := 0;
    pairs_updated := 0;
    IF NOT own_transaction_only THEN
        -- One budget for the whole call, whatever the number of banks: the
        -- locks of every bank's flush are held until the transaction ends.
        PERFORM set_config(
            'entity_resolver.flush_budget_{{ code_version }}',
            coalesce(_flush_batch_rows()::text, 'none'),
            TRUE
        );
    END IF;
    FOREACH one IN ARRAY coalesce(banks, '{}') LOOP
        SELECT f.entities_updated, f.pairs_updated INTO e, p FROM _flush_bank(one, own_transaction_only) AS f;
        entities_updated := entities_updated + e;
        pairs_updated := pairs_updated + p;
    END LOOP;
    IF NOT own_transaction_only THEN
        -- A later flush in the same transaction starts a budget of its own.
        PERFORM set_config('entity_resolver.flush_budget_{{ code_version }}', '', TRUE);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_queue(text, boolean) IS
'Internal: flush one bank or every bank with queued rows (or this transaction''s own rows), bank by bank.';

CREATE OR REPLACE FUNCTION {{ schema }}.flush_stats(bank_id text DEFAULT NULL)
RETURNS TABLE (entities_updated bigint, pairs_updated bigint)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- NULL means every bank.
    IF flush_stats.bank_id IS NOT NULL THEN
        PERFORM check_bank_id(flush_stats.bank_id);
    END IF;
    RETURN QUERY
    SELECT f.entities_updated, f.pairs_updated
    FROM _flush_queue(flush_stats.bank_id, FALSE) AS f;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.flush_stats(text) IS
'Apply queued mention and co-occurrence statistics (one bank, or all when NULL), aggregated, '
'in sorted key order, at most entity_resolver.flush_batch_rows queue rows (default 5000, oldest first; '
'0: no bound); safe to run from many sessions at once. Returns rows updated.';

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
-- once the statistics are ready and the session's plan_cache_mode is auto (a
-- value an operator chose is kept); on switches whatever the statistics; off
-- never. Called at the start of a resolver call (plpython/db.py) and of the
-- flush at commit; returns the plan_cache_mode to restore at their end, NULL
-- when it was left alone. The switch is transaction-local (a rollback undoes
-- it) and the callers restore the value on every path out.
CREATE OR REPLACE FUNCTION {{ internal }}._generic_plans_begin()
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
    IF wanted = 'auto' AND (previous <> 'auto' OR NOT _statistics_ready()) THEN
        RETURN NULL;
    END IF;
    -- An assignment, not PERFORM: PL/pgSQL evaluates it without running a
    -- statement (this runs twice a fact).
    ignored := set_config('plan_cache_mode', 'force_generic_plan', TRUE);
    RETURN previous;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._generic_plans_begin() IS
'Internal: switch this transaction to generic plans when entity_resolver.generic_plans allows it; '
'returns the plan_cache_mode to restore (NULL: unchanged).';

-- ---------------------------------------------------------------------------
-- Flush at commit
-- ---------------------------------------------------------------------------
-- A constraint trigger is FOR EACH ROW; fired once per queued row it would
-- cost a function call per statistic at commit. Its WHEN condition is
-- evaluated when the row is queued, not at commit, so it lets exactly one
-- event per transaction through: a transaction-local flag (a GUC set with
-- is_local) marks that the flush is requested. Rolling back to a savepoint
-- undoes the flag together with the event it queued.

CREATE OR REPLACE FUNCTION {{ internal }}._request_commit_flush()
RETURNS boolean
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    wanted boolean := _switch_setting('entity_resolver.flush_at_commit', 'on', FALSE) = 'on';
BEGIN
    -- Decided once per transaction (until a flush fires): "queued" or "off".
    PERFORM set_config(
        'entity_resolver.commit_flush_{{ code_version }}',
        CASE WHEN wanted THEN 'queued' ELSE 'off' END,
        TRUE
    );
    RETURN wanted;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._request_commit_flush() IS
'Internal: at the first statistic a transaction queues, decide (entity_resolver.flush_at_commit) '
'whether it is flushed at commit.';

CREATE OR REPLACE FUNCTION {{ internal }}._flush_at_commit()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    previous text;
    ignored text;
BEGIN
    -- Statistics queued after this point (SET CONSTRAINTS ... IMMEDIATE
    -- fires this before commit) request a flush of their own.
    PERFORM set_config('entity_resolver.commit_flush_{{ code_version }}', '', TRUE);
    -- Under REPEATABLE READ or SERIALIZABLE, updating an entity another
    -- writer updated since the snapshot is a serialization failure: the
    -- writer's facts would be lost to a statistic. Leave the rows queued.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE NOTICE 'entity_resolver: statistics of this % transaction stay queued until flush_stats()',
            current_setting('transaction_isolation');
        RETURN NULL;
    END IF;
    -- The flush runs after the resolver's call has restored the caller's
    -- plan_cache_mode: it switches for itself. An error aborts the
    -- (sub)transaction, which undoes the switch with it.
    previous := _generic_plans_begin();
    PERFORM _flush_queue(NULL, TRUE);
    IF previous IS NOT NULL THEN
        ignored := set_config('plan_cache_mode', previous, TRUE);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_at_commit() IS
'Internal trigger: at commit, apply the statistics this transaction queued.';

DROP TRIGGER IF EXISTS stats_queue_flush_at_commit ON {{ schema }}.stats_queue;
DO $$
BEGIN
    -- Distributed (Citus), the trigger would fire at commit on the worker's
    -- shard, where it cannot find the transaction's banks without asking
    -- every node: there each call applies its own statistics before it
    -- returns instead (docs/scaling.md).
    IF NOT {{ distributed }} THEN
        CREATE CONSTRAINT TRIGGER stats_queue_flush_at_commit
        AFTER INSERT ON {{ schema }}.stats_queue
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW
        WHEN (
            coalesce(current_setting('entity_resolver.commit_flush_{{ code_version }}', TRUE), '') = ''
            AND {{ internal }}._request_commit_flush()
        )
        EXECUTE FUNCTION {{ internal }}._flush_at_commit();

        COMMENT ON TRIGGER stats_queue_flush_at_commit ON {{ schema }}.stats_queue IS
        'Flush at commit: one deferred event per transaction applies the statistics it queued '
        '(SET entity_resolver.flush_at_commit = off to leave them to flush_stats).';
    END IF;
END;
$$;

-- ---------------------------------------------------------------------------
-- Units: retain, forgetting
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ schema }}.retain(
    bank_id text,
    unit_id uuid,
    mentions jsonb,
    event_date timestamptz DEFAULT now()
)
RETURNS TABLE (
    ord integer,
    mention text,
    entity_id uuid,
    canonical_name text,
    created boolean,
    score float8,
    decision text
)
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
AS $$ facts.retain_sql $$;

COMMENT ON FUNCTION {{ schema }}.retain(text, uuid, jsonb, timestamptz) IS
'For facts kept in the caller''s own table: resolve one unit''s mentions (resolve_mentions format), link the unit and '
'record provenance, in one call. Retaining the same unit again adds mentions to it. forget_unit undoes it.';

CREATE OR REPLACE FUNCTION {{ internal }}._forget_units(bank_id text, unit_ids uuid[])
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _forget_units.bank_id;
    n_mentions bigint;
    n_links bigint;
    gone_entities uuid[];
    gone_counts bigint[];
    pair_ids_1 uuid[];
    pair_ids_2 uuid[];
    pair_counts bigint[];
BEGIN
    PERFORM _lock_bank(b);
    -- What the units contributed goes: their provenance (one decrement per
    -- entity) and their links (one decrement per pair and unit). The flush
    -- recomputes the dates from what remains and removes an entity left
    -- without a mention. Each step is a statement of its own (arrays carry
    -- what the previous one removed), so that on Citus it runs whole on the
    -- bank's shards.
    WITH gone AS (
        DELETE FROM mentions AS m
        WHERE m.bank_id = b AND m.unit_id = ANY(_forget_units.unit_ids)
        RETURNING m.entity_id
    )

    SELECT
        array_agg(per_entity.entity_id ORDER BY per_entity.entity_id),
        array_agg(per_entity.n ORDER BY per_entity.entity_id)
    INTO gone_entities, gone_counts
    FROM (
        SELECT
            gone.entity_id,
            count(*) AS n
        FROM gone
        GROUP BY gone.entity_id
    ) AS per_entity;

    INSERT INTO stats_queue (bank_id, entity_id, increment, recompute)
    SELECT
        b,
        g.entity_id,
        -g.n,
        TRUE
    FROM unnest(gone_entities, gone_counts) AS g (entity_id, n)
    ORDER BY g.entity_id;
    n_mentions := coalesce((SELECT sum(g.n) FROM unnest(gone_counts) AS g (n)), 0);

    WITH unlinked AS (
        DELETE FROM unit_entities AS ue
        WHERE ue.bank_id = b AND ue.unit_id = ANY(_forget_units.unit_ids)
        RETURNING ue.unit_id, ue.entity_id
    )

    SELECT
        (SELECT count(*) FROM unlinked),
        array_agg(pairs.entity_id_1 ORDER BY pairs.entity_id_1, pairs.entity_id_2),
        array_agg(pairs.entity_id_2 ORDER BY pairs.entity_id_1, pairs.entity_id_2),
        array_agg(pairs.n ORDER BY pairs.entity_id_1, pairs.entity_id_2)
    INTO n_links, pair_ids_1, pair_ids_2, pair_counts
    FROM (
        SELECT
            x.entity_id AS entity_id_1,
            y.entity_id AS entity_id_2,
            count(*) AS n
        FROM unlinked AS x
        INNER JOIN unlinked AS y ON x.unit_id = y.unit_id AND x.entity_id < y.entity_id
        GROUP BY x.entity_id, y.entity_id
    ) AS pairs;

    INSERT INTO stats_queue (bank_id, entity_id, entity_id_2, increment, recompute)
    SELECT
        b,
        p.entity_id_1,
        p.entity_id_2,
        -p.n,
        TRUE
    FROM unnest(pair_ids_1, pair_ids_2, pair_counts) AS p (entity_id_1, entity_id_2, n)
    ORDER BY p.entity_id_1, p.entity_id_2;

    RETURN jsonb_build_object('mentions', n_mentions, 'links', n_links);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._forget_units(text, uuid[]) IS
'Internal: remove what units contributed (provenance, links) and queue the decrements.';

CREATE OR REPLACE FUNCTION {{ schema }}.forget_unit(bank_id text, unit_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM check_bank_id(forget_unit.bank_id);
    PERFORM _check_not_null(forget_unit.unit_id, 'unit_id');
    RETURN _forget_units(forget_unit.bank_id, ARRAY[forget_unit.unit_id]);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.forget_unit(text, uuid) IS
'Forget a unit of retain or link_unit: its provenance, links, mention counts and co-occurrences go; dates are '
'recomputed; an entity left without a mention or link is removed unless an operator created or named it. '
'Returns counts.';

-- ---------------------------------------------------------------------------
-- The facts table
-- ---------------------------------------------------------------------------

-- The transition table is visible only to the trigger function, so the facts
-- reach the resolver as arrays, in the order the statement inserted them.
-- _resolve_and_link_facts is a PL/Python entry point like the public ones
-- (020_banks.sql): its generated wrapper reports a bad mention with its
-- SQLSTATE and a clean message.
CREATE OR REPLACE FUNCTION {{ internal }}._resolve_and_link_facts(
    bank_ids text[],
    ids text[],
    mentions text[],
    event_dates text[]
)
RETURNS void
LANGUAGE plpython3u
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
SET "pg_trgm.similarity_threshold" = '0.3'
SET "pg_trgm.strict_word_similarity_threshold" = '1'
AS $$ facts.resolve_and_link_facts_sql $$;

COMMENT ON FUNCTION {{ internal }}._resolve_and_link_facts(text[], text[], text[], text[]) IS
'Internal: the facts trigger''s work (the facts of each bank resolved in statement order, linked, recorded).';

CREATE OR REPLACE FUNCTION {{ internal }}._restoring()
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- A restore of a pg_dump (psql or pg_restore) runs with row security off
    -- and function bodies unchecked; an application session does not. The
    -- dump carries the provenance, links and statistics of its facts.
    SELECT current_setting('row_security') = 'off'
        AND current_setting('check_function_bodies') = 'off'
$$;

COMMENT ON FUNCTION {{ internal }}._restoring() IS
'Internal: true in a session restoring a pg_dump, whose facts arrive already resolved.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_resolve_and_link()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    IF _restoring() THEN
        RETURN NULL;
    END IF;
    PERFORM _resolve_and_link_facts(f.bank_ids, f.ids, f.mentions, f.event_dates)
    FROM (
        SELECT
            array_agg(n.bank_id) AS bank_ids,
            array_agg(n.id::text) AS ids,
            array_agg(n.mentions::text) AS mentions,
            array_agg(n.event_date::text) AS event_dates
        FROM new_facts AS n
    ) AS f;
    IF {{ distributed }} THEN
        -- On Citus this runs on the node of each shard the statement wrote:
        -- its statistics are applied here, bank by bank (no commit trigger).
        PERFORM _flush_bank(n.bank_id, TRUE)
        FROM (SELECT DISTINCT x.bank_id FROM new_facts AS x ORDER BY x.bank_id) AS n;
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_resolve_and_link() IS
'Internal trigger: resolve, link and record the facts of an INSERT statement, bank by bank, in statement order '
'(facts.id is the unit id).';

DROP TRIGGER IF EXISTS facts_resolve_and_link ON {{ schema }}.facts;
CREATE TRIGGER facts_resolve_and_link
AFTER INSERT ON {{ schema }}.facts
REFERENCING NEW TABLE AS new_facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_resolve_and_link();

COMMENT ON TRIGGER facts_resolve_and_link ON {{ schema }}.facts IS
'Statement-level: resolve, link and record all inserted facts (bank by bank, in statement order).';

CREATE OR REPLACE FUNCTION {{ internal }}._forget_facts(bank_ids text[], ids uuid[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    one record;
BEGIN
    -- Bank by bank, in bank order. On Citus this runs on the node of the
    -- facts' shard: each bank's statistics are applied here (no commit trigger).
    FOR one IN
        SELECT f.bank_id, array_agg(f.id ORDER BY f.id) AS ids
        FROM unnest(_forget_facts.bank_ids, _forget_facts.ids) AS f (bank_id, id)
        GROUP BY f.bank_id
        ORDER BY f.bank_id
    LOOP
        PERFORM _forget_units(one.bank_id, one.ids);
        IF {{ distributed }} THEN
            PERFORM _flush_bank(one.bank_id, TRUE);
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._forget_facts(text[], uuid[]) IS
'Internal: forget facts (their banks and ids, as the triggers on facts collect them), bank by bank.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_forget()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- A deleted fact takes what it contributed with it (_forget_units).
    PERFORM _forget_facts(array_agg(o.bank_id), array_agg(o.id)) FROM old_facts AS o;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_forget() IS
'Internal trigger: deleting facts forgets them: provenance, links, counts, co-occurrences; dates recomputed.';

DROP TRIGGER IF EXISTS facts_unlink ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS facts_forget ON {{ schema }}.facts;
CREATE TRIGGER facts_forget
AFTER DELETE ON {{ schema }}.facts
REFERENCING OLD TABLE AS old_facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_forget();

COMMENT ON TRIGGER facts_forget ON {{ schema }}.facts IS
'Statement-level: deleting facts forgets what they contributed.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_forget_all()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- TRUNCATE fires no DELETE trigger; before it runs, the facts are still
    -- there to say which units are theirs (units of retain and link_unit
    -- from the caller's own tables are kept).
    IF {{ distributed }} THEN
        -- On Citus, TRUNCATE fires this on the coordinator's (empty) table
        -- and on every shard, on its node: each shard forgets its own facts
        -- (sql/citus/).
        IF TG_TABLE_NAME <> 'facts' THEN
            PERFORM _forget_shard_facts(TG_RELID);
        END IF;
        RETURN NULL;
    END IF;
    PERFORM _forget_facts(array_agg(f.bank_id), array_agg(f.id)) FROM facts AS f;
    -- The forgetting queued statistics, whose flush at commit is a deferred
    -- row event on stats_queue. Left deferred, it would fire after this
    -- TRUNCATE and read its queue row from a table the same statement may
    -- have truncated (TRUNCATE facts, stats_queue: XX001 "could not read
    -- block"). Fire it now (the flush applies the decrements), then defer
    -- the flush again for the rest of the transaction.
    SET CONSTRAINTS {{ schema }}.stats_queue_flush_at_commit IMMEDIATE;
    SET CONSTRAINTS {{ schema }}.stats_queue_flush_at_commit DEFERRED;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_forget_all() IS
'Internal trigger: TRUNCATE facts forgets every fact first.';

DROP TRIGGER IF EXISTS facts_unlink_all ON {{ schema }}.facts;
DROP TRIGGER IF EXISTS facts_forget_all ON {{ schema }}.facts;
CREATE TRIGGER facts_forget_all
BEFORE TRUNCATE ON {{ schema }}.facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_forget_all();

COMMENT ON TRIGGER facts_forget_all ON {{ schema }}.facts IS
'Statement-level: TRUNCATE facts forgets every fact first.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_reject_relink()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- The links and counts were derived from these columns when the fact was
    -- inserted; changing them in place would leave the graph describing a
    -- fact that no longer exists, silently.
    RAISE EXCEPTION 'facts: % cannot be updated (the fact was resolved and linked from it)', TG_ARGV[0]
        USING
            ERRCODE = 'feature_not_supported',
            HINT = 'Delete the fact and insert it again; content can be updated.';
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_reject_relink() IS
'Internal trigger: refuse UPDATE of the columns a fact was resolved and linked from.';

DROP TRIGGER IF EXISTS facts_reject_relink ON {{ schema }}.facts;
CREATE TRIGGER facts_reject_relink
BEFORE UPDATE OF bank_id, id, mentions, event_date ON {{ schema }}.facts
FOR EACH ROW
WHEN (
    old.bank_id IS DISTINCT FROM new.bank_id
    OR old.id IS DISTINCT FROM new.id
    OR old.mentions IS DISTINCT FROM new.mentions
    OR old.event_date IS DISTINCT FROM new.event_date
)
EXECUTE FUNCTION {{ internal }}._facts_reject_relink('bank_id, id, mentions and event_date');

COMMENT ON TRIGGER facts_reject_relink ON {{ schema }}.facts IS
'Refuses UPDATE of bank_id, id, mentions or event_date: delete and re-insert the fact instead.';
