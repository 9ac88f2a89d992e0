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
    PERFORM _check_max_results(expand_units.max_results);

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

-- Which facts mention an entity: from provenance (mentions), newest first.
CREATE OR REPLACE FUNCTION {{ schema }}.entity_facts(
    bank_id text,
    entity_id uuid,
    max_results integer DEFAULT 50
)
RETURNS TABLE (fact_id uuid, content text, event_date timestamptz, mention_text text)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    target uuid;
BEGIN
    PERFORM check_bank_id(entity_facts.bank_id);
    -- An id merged away stands for the entity it became (current_entity);
    -- one the bank does not have (or this role may not see) is an error
    -- naming the argument (_find_entity), NULL too.
    target := coalesce(current_entity(entity_facts.bank_id, entity_facts.entity_id), entity_facts.entity_id);
    PERFORM _find_entity(entity_facts.bank_id, target, 'entity_id');
    PERFORM _check_max_results(entity_facts.max_results);

    -- One row per fact (unit), its first mention of the entity (a later
    -- one of the same unit is skipped through the primary key), with the
    -- fact's event date as resolution recorded it. A unit of retain or
    -- resolve_mention has no row in facts: no content.
    RETURN QUERY
    SELECT
        m.unit_id,
        f.content,
        m.event_date,
        m.mention
    FROM mentions AS m
    LEFT JOIN facts AS f ON f.bank_id = m.bank_id AND f.id = m.unit_id
    WHERE
        m.bank_id = entity_facts.bank_id
        AND m.entity_id = target
        AND NOT EXISTS (
            SELECT 1
            FROM mentions AS earlier
            WHERE
                earlier.bank_id = m.bank_id AND earlier.unit_id = m.unit_id
                AND earlier.ordinal < m.ordinal AND earlier.entity_id = target
        )
    ORDER BY m.event_date DESC NULLS LAST, m.unit_id ASC
    LIMIT entity_facts.max_results;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.entity_facts(text, uuid, integer) IS
'Which facts mention an entity (from provenance), newest event date first, then id: fact_id is the unit id '
'(facts.id), content NULL for a unit of retain or resolve_mention outside facts, mention_text the fact''s first '
'mention of the entity. An id merged away stands for the entity it became (current_entity).';
