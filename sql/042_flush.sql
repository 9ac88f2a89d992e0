-- Flushing the statistics queue: claim → take → entities → pairs → dates →
-- stale entities (_flush_claim … _flush_stale), bank by bank (flush_stats), and at commit (a deferred
-- constraint trigger on stats_queue applies a transaction's own rows).
-- The write path that queues them: 040_write_path.sql.

-- ---------------------------------------------------------------------------
-- Flushing the statistics queue
-- ---------------------------------------------------------------------------

-- _flush_bank runs the steps below in order, under the bank's share lock.
-- The steps pass arrays, never temporary tables: a flush at commit runs in
-- every writer's transaction, and the arrays are sorted once (step 2) so that
-- every later step locks and writes in key order.

-- 1. Claim.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_claim(b text, own_transaction_only boolean)
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    claim_ids bigint[];
    budget bigint;
BEGIN
    -- Rows another flusher has locked are skipped, not waited for: each
    -- committed row is applied by exactly one flusher, and flushers never
    -- queue up behind each other on the queue.
    IF own_transaction_only THEN
        -- Rows of this transaction are invisible to everyone else. (A
        -- transaction without an id has queued nothing: none is assigned.)
        -- Not bounded: they are this transaction's own writes, and they
        -- cannot be split over transactions.
        SELECT array_agg(q.id) INTO claim_ids
        FROM stats_queue AS q
        WHERE q.txid = pg_current_xact_id_if_assigned() AND q.bank_id = b;
        RETURN claim_ids;
    END IF;
    -- The backlog: at most the transaction's remaining budget of rows
    -- (entity_resolver.flush_batch_rows, _flush_budget), oldest first, so
    -- that a flush holds its entity rows only briefly and a decrement is
    -- never applied before the increment it takes back (that was queued
    -- first, by a transaction committed before). What is left stays
    -- queued for the next flush.
    budget := _flush_budget();
    IF budget = 0 THEN
        RETURN NULL;
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
    RETURN claim_ids;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_claim(text, boolean) IS
'Internal (flush step 1): the ids of the queue rows this flush applies (this transaction''s own, '
'or the oldest of the backlog within the budget, skipping rows another flusher holds).';

-- 2. Take: delete what was claimed and aggregate it per entity and per pair.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_take(
    b text,
    claim_ids bigint[],
    own_transaction_only boolean,
    OUT e_ids uuid[],
    OUT e_increments bigint[],
    OUT e_dates timestamptz[],
    OUT e_earliest timestamptz[],
    OUT e_recompute boolean[],
    OUT p_ids_1 uuid[],
    OUT p_ids_2 uuid[],
    OUT p_increments bigint[],
    OUT p_dates timestamptz[],
    OUT p_recompute boolean[]
)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Counts add up (a forgotten mention is a negative increment); dates move
    -- forward, unless something was forgotten: then they are recomputed from
    -- the record (_flush_dates). The claimed ids are joined as a set, never
    -- searched one by one (`id = ANY(array)` read as a filter compares
    -- every row with every id: a fact of 1,000 mentions queues 500,000).
    -- The arrays come out in key order: every later step locks and writes in
    -- that order (one sort feeds them all).
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
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_take(text, bigint[], boolean) IS
'Internal (flush step 2): delete the claimed queue rows and return their totals per entity and per pair, '
'in key order.';

-- 3. Apply entities.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_entities(
    b text,
    e_ids uuid[],
    e_increments bigint[],
    e_dates timestamptz[],
    e_earliest timestamptz[],
    e_recompute boolean[]
)
RETURNS bigint
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    n bigint;
BEGIN
    -- Lock in sorted key order, then update. UPDATE ... FROM locks rows in
    -- whatever order its join produces; two flushers doing that could each
    -- hold a row the other waits for. FOR NO KEY UPDATE does not block the
    -- FOR KEY SHARE of foreign-key checks, so writers linking to these
    -- entities are never held up by a flush. A date that is recomputed
    -- (_flush_dates) is left alone here.
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
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_entities(text, uuid[], bigint[], timestamptz[], timestamptz[], boolean[]) IS
'Internal (flush step 3): lock the entities in key order and add their mention counts and dates; '
'returns the rows updated.';

-- 4. Apply pairs.
-- Which of these entities the bank no longer holds, each id once. Each is
-- looked up by its key under the fence (OFFSET 0), in a plan made for the
-- function, not for the values of one call: planned for the values, a bank
-- the statistics did not know yet (estimated at one entity) was read through
-- another index of the bank, the bank's entities filtered for every id.
CREATE OR REPLACE FUNCTION {{ internal }}._missing_entities(bank_id text, entity_ids uuid[])
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT coalesce(array_agg(u.id ORDER BY u.id), '{}')
    FROM (SELECT DISTINCT x.id FROM unnest(_missing_entities.entity_ids) AS x (id)) AS u
    WHERE NOT EXISTS (
        SELECT 1 FROM entities AS e
        WHERE e.bank_id = _missing_entities.bank_id AND e.id = u.id
        OFFSET 0  -- noqa: AM09
    )
$$;

COMMENT ON FUNCTION {{ internal }}._missing_entities(text, uuid[]) IS
'Internal: which of these entities the bank does not hold (deleted since they were queued), each once, sorted.';

CREATE OR REPLACE FUNCTION {{ internal }}._flush_pairs(
    b text,
    p_ids_1 uuid[],
    p_ids_2 uuid[],
    p_increments bigint[],
    p_dates timestamptz[]
)
RETURNS bigint
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    n bigint;
    gone uuid[];
BEGIN
    -- After all entities, in sorted key order: an INSERT processes its rows
    -- in the order of its SELECT. A pair whose entity was deleted since it
    -- was queued is dropped with it. The entities are looked up once each,
    -- not once per pair (a fact of 1,000 new names is 499,500 pairs of 1,000
    -- entities), and by their key whatever the statistics say of the bank
    -- (_missing_entities). Looked up per pair, in a plan for this call's
    -- values, a bank the statistics did not know yet (estimated at one
    -- entity) was joined in an outer loop around the pairs, or read through
    -- its last_seen index for each pair: that fact took 88-250 s at commit in
    -- place of 11 (docs/benchmarks.md).
    gone := _missing_entities(b, p_ids_1 || p_ids_2);
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
    WHERE cardinality(gone) = 0 OR NOT (u.entity_id_1 = ANY(gone) OR u.entity_id_2 = ANY(gone))
    ORDER BY u.entity_id_1, u.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
        SET
            cooccurrence_count = c.cooccurrence_count + excluded.cooccurrence_count,
            last_cooccurred = greatest(c.last_cooccurred, excluded.last_cooccurred);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_pairs(text, uuid[], uuid[], bigint[], timestamptz[]) IS
'Internal (flush step 4): add the pairs'' co-occurrence counts and dates in key order; returns the rows written.';

-- 5. Recompute dates.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_dates(
    b text,
    e_ids uuid[],
    e_recompute boolean[],
    p_ids_1 uuid[],
    p_ids_2 uuid[],
    p_recompute boolean[]
)
RETURNS void
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Something was forgotten: the dates come from the record, read now that
    -- the rows are locked (a writer cannot apply its own statistics to them
    -- before this transaction ends, so nothing it adds is missed).
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
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_dates(text, uuid[], boolean[], uuid[], uuid[], boolean[]) IS
'Internal (flush step 5): after a forget, recompute the touched entities'' and pairs'' dates from the record.';

-- What "orphan" means, everywhere (the flush, rebuild_stats, the corrections
-- and undo): an entity nothing refers to any more (no mention, no link) that
-- no operator created or named. A set of ids in, a set out: Citus refuses a
-- STABLE function called with column references in an UPDATE or DELETE, and
-- one call for the set is one plan, not one per row. The ids are required
-- (no "NULL: all"): an `ids IS NULL OR id = ANY(ids)` filter keeps the
-- function's plan from the primary key, and every call would read the
-- bank's whole table (reresolve calls it once per fact).
CREATE OR REPLACE FUNCTION {{ internal }}._orphan_ids(bank_id text, entity_ids uuid[])
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT coalesce(array_agg(e.id ORDER BY e.id), '{}')
    FROM entities AS e
    WHERE
        e.bank_id = _orphan_ids.bank_id AND e.id = ANY(_orphan_ids.entity_ids)
        AND NOT e.curated
        AND NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = _orphan_ids.bank_id AND m.entity_id = e.id)
        AND NOT EXISTS (
            SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = _orphan_ids.bank_id AND ue.entity_id = e.id
        )
$$;

COMMENT ON FUNCTION {{ internal }}._orphan_ids(text, uuid[]) IS
'Internal: which of these entities are orphans: not curated, no mention or link refers to them; sorted.';

-- Remove the orphans among these entities, except those already orphans
-- before (were: the ids an image kept; NULL: none), and return the ids
-- removed: the flush after a forget, rebuild_stats, the corrections and
-- undo (facts forgotten since an operation may leave an entity it gives
-- back with nothing: it goes, as the flush would have removed it; one that
-- was an orphan already when the operation ran is given back as it was).
-- The orphans are found once, before the DELETE: in its condition, a
-- plan that reads a bank the statistics do not know by its prefix called
-- _orphan_ids once per entity of the bank (reresolve of 1,001 facts in a
-- new bank: 130 s).
CREATE OR REPLACE FUNCTION {{ internal }}._remove_orphans(bank_id text, entity_ids uuid[], were jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    gone jsonb;
    orphans uuid[] := _orphan_ids(_remove_orphans.bank_id, coalesce(_remove_orphans.entity_ids, '{}'));
BEGIN
    WITH removed AS (
        DELETE FROM entities AS e
        WHERE
            e.bank_id = _remove_orphans.bank_id
            AND e.id = ANY(orphans)
            AND NOT coalesce(_remove_orphans.were, '[]') ? e.id::text
        RETURNING e.id
    )

    SELECT coalesce(jsonb_agg(removed.id ORDER BY removed.id), '[]') INTO gone FROM removed;
    RETURN gone;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._remove_orphans(text, uuid[], jsonb) IS
'Internal: remove the given entities nothing refers to any more, except those that were orphans before (were); '
'the ids removed.';

-- 6. Remove stale entities.
CREATE OR REPLACE FUNCTION {{ internal }}._flush_stale(b text, e_ids uuid[], e_recompute boolean[])
RETURNS void
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    orphans uuid[];
    stale uuid[];
BEGIN
    -- An orphan goes, with its pairs and aliases. Only something forgotten
    -- makes one. One that another transaction is linking to right now (its
    -- key-share lock) is in use: it is skipped, not waited for, and the
    -- check is made again once its row is locked.
    IF e_recompute IS NULL OR NOT TRUE = ANY(e_recompute) THEN
        RETURN;
    END IF;
    orphans := _orphan_ids(b, ARRAY(
        SELECT u.id FROM unnest(e_ids, e_recompute) AS u (id, recompute) WHERE u.recompute
    ));
    SELECT array_agg(e.id) INTO stale
    FROM (
        SELECT e.id
        FROM entities AS e
        WHERE e.bank_id = b AND e.id = ANY(orphans)
        ORDER BY e.id
        FOR UPDATE OF e SKIP LOCKED
    ) AS e;
    IF stale IS NOT NULL THEN
        -- Checked again now that their rows are locked.
        PERFORM _remove_orphans(b, stale, NULL);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_stale(text, uuid[], boolean[]) IS
'Internal (flush step 6): remove the orphans a forget left among the flushed entities.';

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
    t record;
BEGIN
    PERFORM _lock_bank(b);
    entities_updated := 0;
    pairs_updated := 0;
    claim_ids := _flush_claim(b, own_transaction_only);
    IF claim_ids IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO t FROM _flush_take(b, claim_ids, own_transaction_only);
    entities_updated := _flush_entities(b, t.e_ids, t.e_increments, t.e_dates, t.e_earliest, t.e_recompute);
    pairs_updated := _flush_pairs(b, t.p_ids_1, t.p_ids_2, t.p_increments, t.p_dates);
    PERFORM _flush_dates(b, t.e_ids, t.e_recompute, t.p_ids_1, t.p_ids_2, t.p_recompute);
    PERFORM _flush_stale(b, t.e_ids, t.e_recompute);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_bank(text, boolean) IS
'Internal: flush one bank''s queued statistics (all visible rows, or this transaction''s own): '
'claim, take, entities, pairs, dates, stale entities (the _flush_* steps).';

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
