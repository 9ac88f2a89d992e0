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

-- A picture of a bank: a bounded neighbourhood of the co-occurrence graph.
CREATE OR REPLACE FUNCTION {{ schema }}.entity_graph(
    bank_id text,
    around_entity uuid DEFAULT NULL,
    depth integer DEFAULT 1,
    max_nodes integer DEFAULT 200
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(entity_graph.bank_id);
    -- A hub: a partner worth at most 1/sqrt(25) = 0.2 in the co-occurrence
    -- signal (docs/design.md, 3.5).
    hub_degree constant integer := 25;
    -- A correction in effect made in the last week marks its entities.
    recent_window constant interval := interval '7 days';
    center uuid;
    chosen uuid [];
    frontier uuid [];
    added uuid [];
    room integer;
    level integer := 0;
    truncated boolean := FALSE;
    recent uuid [];
BEGIN
    PERFORM _check_range(entity_graph.depth, 'depth', 1, 5);
    PERFORM _check_range(entity_graph.max_nodes, 'max_nodes', 1, 2000);

    IF entity_graph.around_entity IS NOT NULL THEN
        -- Breadth first from the entity (a merged-away id stands for the
        -- entity it became), each level's new neighbours strongest first,
        -- until depth levels or max_nodes entities.
        center := coalesce(current_entity(b, entity_graph.around_entity), entity_graph.around_entity);
        PERFORM _find_entity(b, center, 'around_entity');
        chosen := ARRAY[center];
        frontier := chosen;
        WHILE level < entity_graph.depth AND cardinality(frontier) > 0 LOOP
            level := level + 1;
            room := entity_graph.max_nodes - cardinality(chosen);
            SELECT coalesce(array_agg(n.other ORDER BY n.weight DESC, n.other), '{}')
            INTO added
            FROM (
                SELECT
                    p.other,
                    max(p.cnt) AS weight
                FROM (
                    SELECT
                        c.entity_id_2 AS other,
                        c.cooccurrence_count AS cnt
                    FROM entity_cooccurrences AS c
                    WHERE c.bank_id = b AND c.entity_id_1 = ANY(frontier) AND c.cooccurrence_count > 0
                    UNION ALL
                    SELECT
                        c.entity_id_1 AS other,
                        c.cooccurrence_count AS cnt
                    FROM entity_cooccurrences AS c
                    WHERE c.bank_id = b AND c.entity_id_2 = ANY(frontier) AND c.cooccurrence_count > 0
                ) AS p
                WHERE p.other <> ALL(chosen)
                GROUP BY p.other
                ORDER BY weight DESC, p.other ASC
                LIMIT room + 1
            ) AS n;
            IF cardinality(added) > room THEN
                truncated := TRUE;
                added := added[1:room];
            END IF;
            chosen := chosen || added;
            frontier := added;
        END LOOP;
    ELSE
        -- The busiest part: the most mentioned entities.
        SELECT coalesce(array_agg(e.id ORDER BY e.mention_count DESC, e.id), '{}')
        INTO chosen
        FROM (
            SELECT
                x.id,
                x.mention_count
            FROM entities AS x
            WHERE x.bank_id = b
            ORDER BY x.mention_count DESC, x.id ASC
            LIMIT entity_graph.max_nodes + 1
        ) AS e;
        IF cardinality(chosen) > entity_graph.max_nodes THEN
            truncated := TRUE;
            chosen := chosen[1:entity_graph.max_nodes];
        END IF;
    END IF;

    recent := ARRAY(
        SELECT DISTINCT u.id
        FROM operations AS o
        CROSS JOIN LATERAL unnest(o.entity_ids) AS u (id)
        WHERE o.bank_id = b AND o.undone_at IS NULL AND o.performed_at > now() - recent_window
    );

    RETURN jsonb_build_object(
        'bank_id', b,
        'around', center,
        'depth', CASE WHEN center IS NULL THEN NULL ELSE entity_graph.depth END,
        'max_nodes', entity_graph.max_nodes,
        'truncated', truncated,
        'nodes', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', v.entity_id,
                'name', v.name,
                'type', e.entity_type,
                'kind', v.kind,
                'mention_count', v.mention_count,
                'degree', v.degree,
                'hub', v.degree >= hub_degree,
                'recently_corrected', v.entity_id = ANY(recent)
            ) ORDER BY array_position(chosen, v.entity_id))
            FROM entity_overview AS v
            INNER JOIN entities AS e ON v.bank_id = e.bank_id AND v.entity_id = e.id
            WHERE v.bank_id = b AND v.entity_id = ANY(chosen)
        ), '[]'::jsonb),
        'edges', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'a', c.entity_id_1,
                'b', c.entity_id_2,
                'cooccurrence_count', c.cooccurrence_count
            ) ORDER BY c.cooccurrence_count DESC, c.entity_id_1, c.entity_id_2)
            FROM entity_cooccurrences AS c
            WHERE
                c.bank_id = b AND c.entity_id_1 = ANY(chosen) AND c.entity_id_2 = ANY(chosen)
                AND c.cooccurrence_count > 0
        ), '[]'::jsonb)
    );
END;
$$;

COMMENT ON FUNCTION {{ schema }}.entity_graph(text, uuid, integer, integer) IS
'A bounded neighbourhood of the co-occurrence graph as jsonb {bank_id, around, depth, max_nodes, truncated, nodes, '
'edges}: around_entity''s partners breadth first to depth levels (strongest first), or without it the most '
'mentioned entities; at most max_nodes. Nodes: id, name, type, kind, mention_count, degree, hub (degree >= 25), '
'recently_corrected (in a correction in effect of the last 7 days); edges: a, b, cooccurrence_count among them.';
