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
    -- the build; hashtext(bank_id)); held until the transaction ends.
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
    old_units uuid[];
    old_entities uuid[];
    old_dates timestamptz[];
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

    -- 2. The units' earlier links (a unit retained again; none for a new
    -- fact): each unit's links read once, those just added left by a hashed
    -- NOT IN (no NULL on either side). Written as a join with the added rows,
    -- a bank the statistics did not know yet (estimated at a row or so) was
    -- planned as a loop over every added row, each unit's links read per
    -- added link and each checked against the added rows one by one: a fact
    -- of 1,000 new names took 40-57 s to link instead of 3.5
    -- (docs/benchmarks.md).
    SELECT
        array_agg(m.unit_id),
        array_agg(m.entity_id),
        array_agg(m.event_date)
    INTO old_units, old_entities, old_dates
    FROM (SELECT DISTINCT u.unit_id FROM unnest(added_units) AS u (unit_id)) AS d
    INNER JOIN unit_entities AS m ON m.bank_id = b AND m.unit_id = d.unit_id
    WHERE (m.unit_id, m.entity_id) NOT IN (
        SELECT n.unit_id, n.entity_id FROM unnest(added_units, added_entities) AS n (unit_id, entity_id)
    );

    -- 3. One increment per pair with at least one newly linked side, once
    -- per unit, each (unit, pair) produced exactly once: two links just
    -- added pair up from the smaller side (a hash join of the added rows
    -- with themselves, no table read), and a link just added pairs with the
    -- unit's earlier links. A fact of N mentions costs its N(N-1)/2 pairs,
    -- nothing more. cooccurrence_count stays "number of units linked to
    -- both". A pair's date in a unit is the later of its two links' dates,
    -- as rebuild_stats derives it.
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
        INNER JOIN unnest(old_units, old_entities, old_dates) AS old (unit_id, entity_id, event_date)
            ON a.unit_id = old.unit_id
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
SET jit = off
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
    -- A unit forgotten is not decided again (auto_reresolve).
    DELETE FROM reresolve_queue AS q
    WHERE q.bank_id = b AND q.unit_id = ANY(_forget_units.unit_ids);
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
SET jit = off
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
