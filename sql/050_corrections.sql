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
    SELECT
        e.id,
        e.canonical_name,
        coalesce(d.n, 0) = 0 AND NOT e.curated
        AND NOT EXISTS (
            SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = e.bank_id AND ue.entity_id = e.id
        ),
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
    IF rebuild_stats.dry_run IS NULL THEN
        RAISE EXCEPTION 'dry_run: must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
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
            WHERE r.kept_count <> r.count OR (r.count > 0 AND r.kept_last IS DISTINCT FROM r.last_cooccurred)
        ), '[]')
    INTO n_pairs, pair_diffs
    FROM _pair_stats(b) AS r;

    IF NOT rebuild_stats.dry_run THEN
        DELETE FROM stats_queue AS q WHERE q.bank_id = b;
        UPDATE entities AS e
        SET mention_count = r.count, first_seen = r.first_seen, last_seen = r.last_seen
        FROM _entity_stats(b) AS r
        WHERE
            e.bank_id = b AND e.id = r.id
            AND (
                e.mention_count IS DISTINCT FROM r.count
                OR e.first_seen IS DISTINCT FROM r.first_seen
                OR e.last_seen IS DISTINCT FROM r.last_seen
            );
        DELETE FROM entity_cooccurrences AS c
        WHERE
            c.bank_id = b
            AND NOT EXISTS (
                SELECT 1 FROM unit_entities AS x
                INNER JOIN unit_entities AS y
                    ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND y.entity_id = c.entity_id_2
                WHERE x.bank_id = b AND x.entity_id = c.entity_id_1
            );
        INSERT INTO entity_cooccurrences AS c (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)
        SELECT b, r.entity_id_1, r.entity_id_2, r.count, r.last_cooccurred
        FROM _pair_stats(b) AS r
        WHERE r.count > 0
        ORDER BY r.entity_id_1, r.entity_id_2
        ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
            SET cooccurrence_count = excluded.cooccurrence_count, last_cooccurred = excluded.last_cooccurred;
        DELETE FROM entities AS e
        WHERE
            e.bank_id = b AND NOT e.curated
            AND NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = e.id)
            AND NOT EXISTS (SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = e.id);
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

CREATE OR REPLACE FUNCTION {{ schema }}.current_entity(bank_id text, entity_id uuid)
RETURNS uuid
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- An id held by an application keeps working after a merge: it forwards
    -- to the entity it became (chains are collapsed when merges are made).
    SELECT coalesce(
        (SELECT e.id FROM entities AS e WHERE e.bank_id = check_bank_id(current_entity.bank_id)
            AND e.id = current_entity.entity_id),
        (SELECT f.new_id FROM entity_forwards AS f WHERE f.bank_id = current_entity.bank_id
            AND f.old_id = current_entity.entity_id)
    )
$$;

COMMENT ON FUNCTION {{ schema }}.current_entity(text, uuid) IS
'The entity an id stands for now: itself, the entity it was merged into, or NULL when it never existed or was forgotten.';
