-- Entity-link expansion: from seed facts to the other facts that share
-- entities with them (docs/design.md §4.5, the retrieval use of the graph).

CREATE OR REPLACE FUNCTION {{ schema }}.expand_units(
    bank_id text,
    seed_unit_ids uuid[],
    max_results integer DEFAULT 50
)
RETURNS TABLE (unit_id uuid, shared_entities bigint, fact_id text)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    per_entity_limit integer;
    seeds uuid[];
BEGIN
    PERFORM check_bank_id(expand_units.bank_id);
    IF expand_units.seed_unit_ids IS NULL THEN
        RAISE EXCEPTION 'seed_unit_ids: must be an array of unit ids, got NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF expand_units.max_results IS NULL OR expand_units.max_results NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'max_results: must be between 1 and 100000, got %',
            coalesce(expand_units.max_results::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A NULL among the seeds names no fact; it would turn "<> ALL" into NULL.
    seeds := array_remove(expand_units.seed_unit_ids, NULL);

    -- The bank's expansion_per_entity_limit; 200 is the default of
    -- plpython/settings.py (a test holds the two together).
    SELECT (b.settings ->> 'expansion_per_entity_limit')::integer
    INTO per_entity_limit
    FROM banks AS b
    WHERE b.bank_id = expand_units.bank_id;
    per_entity_limit := coalesce(per_entity_limit, 200);

    RETURN QUERY
    WITH seed_entities AS (
        SELECT DISTINCT ue.entity_id
        FROM unit_entities AS ue
        WHERE
            ue.bank_id = expand_units.bank_id
            AND ue.unit_id = ANY(seeds)
    ),

    reached AS (
        -- Each shared entity brings at most per_entity_limit facts, its most
        -- recent ones: a hub such as "user" cannot drag in the whole bank.
        -- Seeds are excluded before the cap, so they never use it up.
        SELECT
            s.entity_id,
            r.unit_id,
            r.event_date
        FROM seed_entities AS s
        CROSS JOIN LATERAL (
            SELECT
                ue.unit_id,
                ue.event_date
            FROM unit_entities AS ue
            WHERE
                ue.bank_id = expand_units.bank_id
                AND ue.entity_id = s.entity_id
                AND ue.unit_id <> ALL(seeds)
            ORDER BY ue.event_date DESC NULLS LAST, ue.unit_id ASC
            LIMIT per_entity_limit
        ) AS r
    )

    -- The caller's own id of each fact (NULL for a unit of retain or link_unit).
    SELECT
        reached.unit_id,
        count(DISTINCT reached.entity_id) AS shared_entities,
        f.fact_id
    FROM reached
    LEFT JOIN facts AS f ON f.bank_id = expand_units.bank_id AND f.id = reached.unit_id
    GROUP BY reached.unit_id, f.fact_id
    ORDER BY shared_entities DESC, max(reached.event_date) DESC NULLS LAST, reached.unit_id ASC
    LIMIT expand_units.max_results;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.expand_units(text, uuid[], integer) IS
'Facts sharing entities with the seed facts (seeds excluded), ranked by distinct shared entities, '
'then most recent event date, then id; each entity contributes at most expansion_per_entity_limit facts. '
'fact_id: the fact''s own id (facts.fact_id; NULL for a unit of retain or link_unit).';
