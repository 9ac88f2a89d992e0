-- The write path: link → queue → flush.
--
-- * Linking a unit (a fact) to its entities inserts unit_entities rows and
--   queues one co-occurrence increment per pair of its entities.
-- * Resolution queues the mention increments (resolver.py); nothing here
--   counts a mention again.
-- * flush_stats applies the queue, aggregated, in sorted key order. By default
--   every transaction that queued statistics applies its own rows at commit
--   (a deferred constraint trigger on stats_queue), so a psql user sees exact
--   statistics after COMMIT without knowing flush_stats exists;
--   SET entity_resolver.flush_at_commit = off leaves them to a scheduled
--   flush_stats (docs/write-path.md).
-- * The facts table resolves and links all rows of an INSERT statement in
--   one resolver call; DELETE removes the links.

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
    links_added integer;
BEGIN
    -- One statement for any number of units. The snapshot of unit_entities
    -- read below does not include the rows this statement adds, so a pair is
    -- counted once per unit whether its entities were linked now or earlier:
    -- cooccurrence_count stays "number of units linked to both".
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
            _link_units.bank_id,
            input.unit_id,
            input.entity_id,
            input.event_date
        FROM input
        ORDER BY input.unit_id, input.entity_id
        ON CONFLICT ON CONSTRAINT unit_entities_pkey DO NOTHING
        RETURNING ue.unit_id, ue.entity_id, ue.event_date
    ),

    members AS (
        -- Every entity of a unit that gained a link: linked before, or now.
        SELECT
            ue.unit_id,
            ue.entity_id
        FROM unit_entities AS ue
        WHERE
            ue.bank_id = _link_units.bank_id
            AND ue.unit_id IN (SELECT added.unit_id FROM added)
        UNION ALL
        SELECT
            added.unit_id,
            added.entity_id
        FROM added
    ),

    unit_pairs AS (
        -- Each pair with at least one newly linked side, once per unit.
        SELECT DISTINCT
            added.unit_id,
            least(added.entity_id, members.entity_id) AS entity_id_1,
            greatest(added.entity_id, members.entity_id) AS entity_id_2
        FROM added
        INNER JOIN members
            ON
                added.unit_id = members.unit_id
                AND added.entity_id <> members.entity_id
    ),

    unit_dates AS (
        SELECT
            added.unit_id,
            max(added.event_date) AS event_date
        FROM added
        GROUP BY added.unit_id
    ),

    -- A data-modifying WITH runs whether or not the main query reads it.
    queued AS (
        INSERT INTO stats_queue (bank_id, entity_id, entity_id_2, increment, event_date)
        SELECT
            _link_units.bank_id,
            unit_pairs.entity_id_1,
            unit_pairs.entity_id_2,
            count(*),
            max(unit_dates.event_date)
        FROM unit_pairs
        INNER JOIN unit_dates ON unit_pairs.unit_id = unit_dates.unit_id
        GROUP BY unit_pairs.entity_id_1, unit_pairs.entity_id_2
        ORDER BY unit_pairs.entity_id_1, unit_pairs.entity_id_2
    )

    SELECT count(*)::integer
    INTO links_added
    FROM added;

    RETURN links_added;
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
    IF link_unit.unit_id IS NULL THEN
        RAISE EXCEPTION 'unit_id: must not be null'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF link_unit.entity_ids IS NULL THEN
        RAISE EXCEPTION 'entity_ids: must be an array of entity ids, got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF array_position(link_unit.entity_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'entity_ids: element % is NULL', array_position(link_unit.entity_ids, NULL)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
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
    claim_banks text[];
    claim_ids bigint[];
    e_banks text[];
    e_ids uuid[];
    e_increments bigint[];
    e_dates timestamptz[];
    p_banks text[];
    p_ids_1 uuid[];
    p_ids_2 uuid[];
    p_increments bigint[];
    p_dates timestamptz[];
BEGIN
    -- 1. Claim. Rows another flusher has locked are skipped, not waited for:
    -- each committed row is applied by exactly one flusher, and flushers
    -- never queue up behind each other on the queue.
    IF own_transaction_only THEN
        -- Rows of this transaction are invisible to everyone else.
        SELECT array_agg(q.bank_id), array_agg(q.id)
        INTO claim_banks, claim_ids
        FROM stats_queue AS q
        WHERE q.txid = pg_current_xact_id();
    ELSE
        SELECT array_agg(s.bank_id), array_agg(s.id)
        INTO claim_banks, claim_ids
        FROM (
            SELECT q.bank_id, q.id
            FROM stats_queue AS q
            WHERE _flush_queue.bank_id IS NULL OR q.bank_id = _flush_queue.bank_id
            FOR UPDATE SKIP LOCKED
        ) AS s;
    END IF;
    IF claim_ids IS NULL THEN
        entities_updated := 0;
        pairs_updated := 0;
        RETURN;
    END IF;

    -- 2. Delete what was claimed and aggregate it per entity and per pair.
    WITH claimed AS (
        DELETE FROM stats_queue AS q
        USING unnest(claim_banks, claim_ids) AS c (bank_id, id)
        WHERE q.bank_id = c.bank_id AND q.id = c.id
        RETURNING q.bank_id, q.entity_id, q.entity_id_2, q.increment, q.event_date
    ),

    totals AS (
        SELECT
            claimed.bank_id,
            claimed.entity_id,
            claimed.entity_id_2,
            sum(claimed.increment)::bigint AS increment,
            max(claimed.event_date) AS event_date
        FROM claimed
        GROUP BY claimed.bank_id, claimed.entity_id, claimed.entity_id_2
    )

    SELECT
        array_agg(t.bank_id) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.entity_id) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.increment) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.event_date) FILTER (WHERE t.entity_id_2 IS NULL),
        array_agg(t.bank_id) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.entity_id) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.entity_id_2) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.increment) FILTER (WHERE t.entity_id_2 IS NOT NULL),
        array_agg(t.event_date) FILTER (WHERE t.entity_id_2 IS NOT NULL)
    INTO e_banks, e_ids, e_increments, e_dates, p_banks, p_ids_1, p_ids_2, p_increments, p_dates
    FROM totals AS t;

    -- 3. Entities: lock in sorted key order, then update. UPDATE ... FROM
    -- locks rows in whatever order its join produces; two flushers doing
    -- that could each hold a row the other waits for. FOR NO KEY UPDATE does
    -- not block the FOR KEY SHARE of foreign-key checks, so writers linking
    -- to these entities are never held up by a flush.
    PERFORM 1
    FROM entities AS e
    INNER JOIN unnest(e_banks, e_ids) AS u (bank_id, id)
        ON e.bank_id = u.bank_id AND e.id = u.id
    ORDER BY e.bank_id, e.id
    FOR NO KEY UPDATE OF e;

    UPDATE entities AS e
    SET
        mention_count = e.mention_count + u.increment,
        last_seen = greatest(e.last_seen, u.event_date)
    FROM unnest(e_banks, e_ids, e_increments, e_dates) AS u (bank_id, id, increment, event_date)
    WHERE e.bank_id = u.bank_id AND e.id = u.id;
    GET DIAGNOSTICS entities_updated = ROW_COUNT;

    -- 4. Pairs, after all entities, in sorted key order: an INSERT processes
    -- its rows in the order of its SELECT. A pair whose entity was deleted
    -- since it was queued is dropped with it.
    INSERT INTO entity_cooccurrences AS c (
        bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred
    )
    SELECT
        u.bank_id,
        u.entity_id_1,
        u.entity_id_2,
        u.increment,
        u.event_date
    FROM unnest(p_banks, p_ids_1, p_ids_2, p_increments, p_dates)
        AS u (bank_id, entity_id_1, entity_id_2, increment, event_date)
    WHERE
        EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = u.bank_id AND e.id = u.entity_id_1)
        AND EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = u.bank_id AND e.id = u.entity_id_2)
    ORDER BY u.bank_id, u.entity_id_1, u.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
        SET
            cooccurrence_count = c.cooccurrence_count + excluded.cooccurrence_count,
            last_cooccurred = greatest(c.last_cooccurred, excluded.last_cooccurred);
    GET DIAGNOSTICS pairs_updated = ROW_COUNT;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_queue(text, boolean) IS
'Internal: claim queued statistics (all visible rows, or this transaction''s own), '
'apply them aggregated in sorted key order.';

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
'in sorted key order; safe to run from many sessions at once. Returns rows updated.';

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
    policy text := lower(coalesce(current_setting('entity_resolver.flush_at_commit', TRUE), ''));
    wanted boolean;
BEGIN
    wanted := CASE
        WHEN policy IN ('', 'on', 'true', 'yes', '1') THEN TRUE
        WHEN policy IN ('off', 'false', 'no', '0') THEN FALSE
    END;
    IF wanted IS NULL THEN
        RAISE EXCEPTION 'entity_resolver.flush_at_commit: must be on or off, got %', quote_literal(policy)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
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
    PERFORM _flush_queue(NULL, TRUE);
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._flush_at_commit() IS
'Internal trigger: at commit, apply the statistics this transaction queued.';

DROP TRIGGER IF EXISTS stats_queue_flush_at_commit ON {{ schema }}.stats_queue;
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
AS $$ facts.resolve_and_link_facts_sql $$;

COMMENT ON FUNCTION {{ internal }}._resolve_and_link_facts(text[], text[], text[], text[]) IS
'Internal: the facts trigger''s work (one resolver call per bank for all rows, then linking).';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_resolve_and_link()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM _resolve_and_link_facts(f.bank_ids, f.ids, f.mentions, f.event_dates)
    FROM (
        SELECT
            array_agg(n.bank_id) AS bank_ids,
            array_agg(n.id::text) AS ids,
            array_agg(n.mentions::text) AS mentions,
            array_agg(n.event_date::text) AS event_dates
        FROM new_facts AS n
    ) AS f;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_resolve_and_link() IS
'Internal trigger: resolve the mentions of all facts of an INSERT statement in one resolver call '
'per bank and link each fact (facts.id is the unit id).';

DROP TRIGGER IF EXISTS facts_resolve_and_link ON {{ schema }}.facts;
CREATE TRIGGER facts_resolve_and_link
AFTER INSERT ON {{ schema }}.facts
REFERENCING NEW TABLE AS new_facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_resolve_and_link();

COMMENT ON TRIGGER facts_resolve_and_link ON {{ schema }}.facts IS
'Statement-level: one resolver call per statement (per bank) for all inserted facts.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_unlink()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Links go with the fact. Counts stay: mention_count and
    -- cooccurrence_count count what was written, as in the reference
    -- (docs/design.md §4.4; docs/write-path.md, "Deleting facts").
    DELETE FROM unit_entities AS ue
    USING old_facts AS o
    WHERE ue.bank_id = o.bank_id AND ue.unit_id = o.id;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_unlink() IS
'Internal trigger: deleting facts deletes their unit_entities links (counts are kept).';

DROP TRIGGER IF EXISTS facts_unlink ON {{ schema }}.facts;
CREATE TRIGGER facts_unlink
AFTER DELETE ON {{ schema }}.facts
REFERENCING OLD TABLE AS old_facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_unlink();

COMMENT ON TRIGGER facts_unlink ON {{ schema }}.facts IS
'Statement-level: deleting facts deletes their links.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_unlink_all()
RETURNS trigger
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- TRUNCATE fires no DELETE trigger; before it runs, the facts are still
    -- there to say which links are theirs (units linked by link_unit from
    -- the caller's own tables are kept).
    DELETE FROM unit_entities AS ue
    USING facts AS f
    WHERE ue.bank_id = f.bank_id AND ue.unit_id = f.id;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._facts_unlink_all() IS
'Internal trigger: TRUNCATE facts deletes the links of the facts (counts are kept).';

DROP TRIGGER IF EXISTS facts_unlink_all ON {{ schema }}.facts;
CREATE TRIGGER facts_unlink_all
BEFORE TRUNCATE ON {{ schema }}.facts
FOR EACH STATEMENT
EXECUTE FUNCTION {{ internal }}._facts_unlink_all();

COMMENT ON TRIGGER facts_unlink_all ON {{ schema }}.facts IS
'Statement-level: TRUNCATE facts deletes the links of the facts.';

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
