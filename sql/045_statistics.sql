-- Correctable identity: statistics rebuilt from the record, ids that forward.
--
-- Every number the resolver keeps is derived from the record:
--   mention_count, first_seen, last_seen   from mentions (provenance);
--   cooccurrence_count, last_cooccurred    from unit_entities (a pair's date
--                                          in a unit is the later of its
--                                          two links' dates).
-- rebuild_stats compares the kept numbers (plus what is queued and not yet
-- applied) with the record, and can make them equal.

CREATE OR REPLACE FUNCTION {{ internal }}._entity_stats(bank_id text)
RETURNS TABLE (
    id uuid, name text, orphan boolean,
    kept_count bigint, kept_first timestamptz, kept_last timestamptz,
    count bigint, first_seen timestamptz, last_seen timestamptz
)
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Kept = applied + queued: counts add up; dates move as the flush will
    -- move them (or come from the record, when something was forgotten).
    -- The orphans are asked for once (MATERIALIZED): as a scalar beside
    -- every row, the planner pulled the call up into the row's expression
    -- and asked once per entity (4 minutes for 10,000 entities with no
    -- record); as a subquery joined, a bank the statistics do not know (a
    -- row or so) made it the inner side of a loop, asked again per entity.
    WITH orphans AS MATERIALIZED (
        SELECT unnest(_orphan_ids(
            _entity_stats.bank_id, ARRAY(SELECT x.id FROM entities AS x WHERE x.bank_id = _entity_stats.bank_id)
        )) AS id
    )

    SELECT
        e.id,
        e.canonical_name,
        o.id IS NOT NULL,
        e.mention_count + coalesce(q.increment, 0),
        CASE WHEN q.recompute THEN d.first_seen ELSE least(e.first_seen, q.earliest) END,
        CASE WHEN q.recompute THEN d.last_seen ELSE greatest(e.last_seen, q.latest) END,
        coalesce(d.n, 0),
        d.first_seen,
        d.last_seen
    FROM entities AS e
    LEFT JOIN (
        SELECT
            m.entity_id,
            count(*) AS n,
            min(m.event_date) AS first_seen,
            max(m.event_date) AS last_seen
        FROM mentions AS m
        WHERE m.bank_id = _entity_stats.bank_id
        GROUP BY m.entity_id
    ) AS d ON e.id = d.entity_id
    LEFT JOIN (
        SELECT
            x.entity_id,
            sum(x.increment) AS increment,
            max(x.event_date) AS latest,
            min(x.earliest) AS earliest,
            bool_or(x.recompute) AS recompute
        FROM stats_queue AS x
        WHERE x.bank_id = _entity_stats.bank_id AND x.entity_id_2 IS NULL
        GROUP BY x.entity_id
    ) AS q ON e.id = q.entity_id
    LEFT JOIN orphans AS o ON e.id = o.id
    WHERE e.bank_id = _entity_stats.bank_id
$$;

COMMENT ON FUNCTION {{ internal }}._entity_stats(text) IS
'Internal: each entity''s statistics as kept (applied + queued) and as derived from provenance.';

CREATE OR REPLACE FUNCTION {{ internal }}._pair_stats(bank_id text)
RETURNS TABLE (
    entity_id_1 uuid, entity_id_2 uuid,
    kept_count bigint, kept_last timestamptz, count bigint, last_cooccurred timestamptz
)
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT
        coalesce(k.entity_id_1, d.entity_id_1),
        coalesce(k.entity_id_2, d.entity_id_2),
        coalesce(k.cooccurrence_count, 0),
        -- A pair whose date is to be recomputed is compared on its count.
        CASE WHEN k.recompute THEN d.last_cooccurred ELSE k.last_cooccurred END,
        coalesce(d.n, 0),
        d.last_cooccurred
    FROM (
        SELECT
            coalesce(c.entity_id_1, q.entity_id) AS entity_id_1,
            coalesce(c.entity_id_2, q.entity_id_2) AS entity_id_2,
            coalesce(c.cooccurrence_count, 0) + coalesce(q.increment, 0) AS cooccurrence_count,
            greatest(c.last_cooccurred, q.latest) AS last_cooccurred,
            coalesce(q.recompute, FALSE) AS recompute
        FROM (
            SELECT * FROM entity_cooccurrences AS x WHERE x.bank_id = _pair_stats.bank_id
        ) AS c
        FULL JOIN (
            SELECT
                x.entity_id,
                x.entity_id_2,
                sum(x.increment) AS increment,
                max(x.event_date) AS latest,
                bool_or(x.recompute) AS recompute
            FROM stats_queue AS x
            WHERE x.bank_id = _pair_stats.bank_id AND x.entity_id_2 IS NOT NULL
            GROUP BY x.entity_id, x.entity_id_2
        ) AS q ON c.entity_id_1 = q.entity_id AND c.entity_id_2 = q.entity_id_2
    ) AS k
    FULL JOIN (
        SELECT
            x.entity_id AS entity_id_1,
            y.entity_id AS entity_id_2,
            count(*) AS n,
            max(greatest(x.event_date, y.event_date)) AS last_cooccurred
        FROM unit_entities AS x
        INNER JOIN unit_entities AS y
            ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND x.entity_id < y.entity_id
        WHERE x.bank_id = _pair_stats.bank_id
        GROUP BY x.entity_id, y.entity_id
    ) AS d ON k.entity_id_1 = d.entity_id_1 AND k.entity_id_2 = d.entity_id_2
$$;

COMMENT ON FUNCTION {{ internal }}._pair_stats(text) IS
'Internal: each co-occurring pair''s count and date as kept (applied + queued) and as derived from the links.';

CREATE OR REPLACE FUNCTION {{ schema }}.rebuild_stats(bank_id text, dry_run boolean DEFAULT TRUE)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(rebuild_stats.bank_id);
    entity_diffs jsonb;
    pair_diffs jsonb;
    orphans jsonb;
    n_entities bigint;
    n_pairs bigint;
BEGIN
    PERFORM _check_not_null(rebuild_stats.dry_run, 'dry_run');
    IF NOT rebuild_stats.dry_run THEN
        -- Nobody else writes the bank meanwhile: every queued row is committed
        -- (or ours), so the record already holds what it would add.
        PERFORM _lock_bank(b, TRUE);
    END IF;

    SELECT
        count(*),
        coalesce(jsonb_agg(jsonb_build_object(
            'entity_id', r.id, 'name', r.name,
            'mention_count', jsonb_build_array(r.kept_count, r.count),
            'first_seen', jsonb_build_array(r.kept_first, r.first_seen),
            'last_seen', jsonb_build_array(r.kept_last, r.last_seen)
        ) ORDER BY r.name) FILTER (
            WHERE r.kept_count IS DISTINCT FROM r.count
            OR r.kept_first IS DISTINCT FROM r.first_seen
            OR r.kept_last IS DISTINCT FROM r.last_seen
        ), '[]'),
        coalesce(jsonb_agg(jsonb_build_object('entity_id', r.id, 'name', r.name) ORDER BY r.name)
            FILTER (WHERE r.orphan), '[]')
    INTO n_entities, entity_diffs, orphans
    FROM _entity_stats(b) AS r;

    SELECT
        count(*),
        coalesce(jsonb_agg(jsonb_build_object(
            'entity_id_1', r.entity_id_1, 'entity_id_2', r.entity_id_2,
            'cooccurrence_count', jsonb_build_array(r.kept_count, r.count),
            'last_cooccurred', jsonb_build_array(r.kept_last, r.last_cooccurred)
        ) ORDER BY r.entity_id_1, r.entity_id_2) FILTER (
            WHERE r.kept_count <> r.count OR r.kept_last IS DISTINCT FROM r.last_cooccurred
        ), '[]')
    INTO n_pairs, pair_diffs
    FROM _pair_stats(b) AS r;

    IF NOT rebuild_stats.dry_run THEN
        DELETE FROM stats_queue AS q WHERE q.bank_id = b;
        -- The recount the corrections use, on every entity of the bank (and
        -- so every pair): one definition of the derived numbers.
        PERFORM _recount(b, ARRAY(SELECT e.id FROM entities AS e WHERE e.bank_id = b), TRUE);
        PERFORM _remove_orphans(b, ARRAY(SELECT e.id FROM entities AS e WHERE e.bank_id = b), NULL);
    END IF;

    RETURN jsonb_build_object(
        'bank_id', b,
        'dry_run', rebuild_stats.dry_run,
        'entities_checked', n_entities,
        'pairs_checked', n_pairs,
        'differences', jsonb_array_length(entity_diffs) + jsonb_array_length(pair_diffs),
        'entities', entity_diffs,
        'pairs', pair_diffs,
        'orphans', orphans
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.rebuild_stats(text, boolean) IS
'Recompute mention counts, first/last seen and co-occurrences from the record (provenance, links) and report every '
'difference ([kept, derived] pairs; kept includes queued increments) and entities nothing refers to (orphans). '
'dry_run = false makes them equal (and removes the orphans unless curated), under the bank''s exclusive lock.';

CREATE OR REPLACE FUNCTION {{ internal }}._current_entity(bank_id text, entity_id uuid)
RETURNS uuid
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- An id held by an application keeps working after a merge: it forwards
    -- to the entity it became (chains are collapsed when merges are made).
    -- (Internal, for the functions that follow ids, sql/055_judgements.sql:
    -- a distributed installation delegates the public one.)
    SELECT coalesce(
        (SELECT e.id FROM entities AS e WHERE e.bank_id = _current_entity.bank_id
            AND e.id = _current_entity.entity_id),
        (SELECT f.new_id FROM entity_forwards AS f WHERE f.bank_id = _current_entity.bank_id
            AND f.old_id = _current_entity.entity_id)
    )
$$;

COMMENT ON FUNCTION {{ internal }}._current_entity(text, uuid) IS
'Internal: current_entity without the bank_id check.';

CREATE OR REPLACE FUNCTION {{ schema }}.current_entity(bank_id text, entity_id uuid)
RETURNS uuid
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _current_entity(check_bank_id(current_entity.bank_id), current_entity.entity_id)
$$;

COMMENT ON FUNCTION {{ schema }}.current_entity(text, uuid) IS
'The entity an id stands for now: itself, the entity it was merged into, or NULL when it never existed or was '
'forgotten.';

CREATE OR REPLACE FUNCTION {{ internal }}._recount_entities(bank_id text, entity_ids uuid[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _recount_entities.bank_id;
    ids uuid[] := _recount_entities.entity_ids;
BEGIN
    -- The numbers of these entities (not their pairs), derived from the
    -- record exactly as rebuild_stats derives them. Rows already equal are
    -- not written.
    UPDATE entities AS e
    SET mention_count = d.n, first_seen = d.first_seen, last_seen = d.last_seen
    FROM (
        SELECT
            i.id,
            count(m.entity_id) AS n,
            min(m.event_date) AS first_seen,
            max(m.event_date) AS last_seen
        FROM (SELECT DISTINCT u.id FROM unnest(ids) AS u (id)) AS i
        LEFT JOIN mentions AS m ON m.bank_id = b AND i.id = m.entity_id
        GROUP BY i.id
    ) AS d
    WHERE
        e.bank_id = b AND e.id = d.id
        AND (
            e.mention_count IS DISTINCT FROM d.n
            OR e.first_seen IS DISTINCT FROM d.first_seen
            OR e.last_seen IS DISTINCT FROM d.last_seen
        );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._recount_entities(text, uuid[]) IS
'Internal: recompute the mention count, first and last seen of these entities from the record (as rebuild_stats), '
'not their pairs.';

CREATE OR REPLACE FUNCTION {{ internal }}._recount(bank_id text, entity_ids uuid[], prune boolean)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _recount.bank_id;
    ids uuid[] := _recount.entity_ids;
BEGIN
    -- The numbers of these entities and of every pair with one of them,
    -- derived from the record exactly as rebuild_stats derives them. Rows
    -- already equal are not written.
    PERFORM _recount_entities(b, ids);

    WITH units AS (
        SELECT DISTINCT ue.unit_id
        FROM unit_entities AS ue
        WHERE ue.bank_id = b AND ue.entity_id = ANY(ids)
    ),

    derived AS (
        SELECT
            x.entity_id AS entity_id_1,
            y.entity_id AS entity_id_2,
            count(*) AS n,
            max(greatest(x.event_date, y.event_date)) AS last_cooccurred
        FROM units
        INNER JOIN unit_entities AS x ON x.bank_id = b AND units.unit_id = x.unit_id
        INNER JOIN unit_entities AS y
            ON y.bank_id = b AND units.unit_id = y.unit_id AND x.entity_id < y.entity_id
        WHERE x.entity_id = ANY(ids) OR y.entity_id = ANY(ids)
        GROUP BY x.entity_id, y.entity_id
    )

    INSERT INTO entity_cooccurrences AS c (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)
    SELECT b, d.entity_id_1, d.entity_id_2, d.n, d.last_cooccurred
    FROM derived AS d
    ORDER BY d.entity_id_1, d.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
        SET cooccurrence_count = excluded.cooccurrence_count, last_cooccurred = excluded.last_cooccurred
        WHERE
            c.cooccurrence_count IS DISTINCT FROM excluded.cooccurrence_count
            OR c.last_cooccurred IS DISTINCT FROM excluded.last_cooccurred;

    -- A pair no unit holds any more: removed after a correction (prune), set
    -- to zero after an undo, which restores the rows the image holds
    -- (a zero pair a forgetting left behind is one of them). A zero pair has
    -- no date, as a forgetting's recount leaves it: a date kept from a fact
    -- gone since would beat the date of any later, earlier-dated fact in the
    -- flush's greatest().
    IF _recount.prune THEN
        DELETE FROM entity_cooccurrences AS c
        WHERE
            c.bank_id = b AND (c.entity_id_1 = ANY(ids) OR c.entity_id_2 = ANY(ids))
            AND NOT EXISTS (
                SELECT 1
                FROM unit_entities AS x
                INNER JOIN unit_entities AS y
                    ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND y.entity_id = c.entity_id_2
                WHERE x.bank_id = b AND x.entity_id = c.entity_id_1
            );
    ELSE
        UPDATE entity_cooccurrences AS c
        SET cooccurrence_count = 0, last_cooccurred = NULL
        WHERE
            c.bank_id = b AND (c.entity_id_1 = ANY(ids) OR c.entity_id_2 = ANY(ids))
            AND (c.cooccurrence_count <> 0 OR c.last_cooccurred IS NOT NULL)
            AND NOT EXISTS (
                SELECT 1
                FROM unit_entities AS x
                INNER JOIN unit_entities AS y
                    ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND y.entity_id = c.entity_id_2
                WHERE x.bank_id = b AND x.entity_id = c.entity_id_1
            );
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._recount(text, uuid[], boolean) IS
'Internal: recompute the statistics of these entities and of their pairs from the record (as rebuild_stats); '
'prune removes pairs no unit holds.';
