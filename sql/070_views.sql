-- psql inspection: a bank's entities and their neighbourhoods.
--   SELECT * FROM entity_resolver.entity_overview WHERE bank_id = 'team' ORDER BY mention_count DESC;
--   SELECT * FROM entity_resolver.entity_neighbors WHERE bank_id = 'team' AND entity_name = 'Alex Morgan';
-- Both read the applied statistics: what flush_stats (or the flush at commit)
-- has applied, not rows still waiting in stats_queue.

CREATE OR REPLACE VIEW {{ schema }}.entity_overview
WITH (security_invoker = TRUE) AS
SELECT
    e.bank_id,
    e.id AS entity_id,
    e.canonical_name AS name,
    e.entity_kind AS kind,
    e.mention_count,
    -- Partners on either side of the pair: entity_id_1 is the smaller id.
    (
        SELECT count(*)
        FROM {{ schema }}.entity_cooccurrences AS c
        WHERE c.bank_id = e.bank_id AND c.entity_id_1 = e.id AND c.cooccurrence_count > 0
    )
    + (
        SELECT count(*)
        FROM {{ schema }}.entity_cooccurrences AS c
        WHERE c.bank_id = e.bank_id AND c.entity_id_2 = e.id AND c.cooccurrence_count > 0
    ) AS degree,
    e.first_seen,
    e.last_seen
FROM {{ schema }}.entities AS e;

COMMENT ON VIEW {{ schema }}.entity_overview IS
'One row per entity: name, kind, applied mention count, degree in the co-occurrence graph, first and last seen.';
COMMENT ON COLUMN {{ schema }}.entity_overview.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_overview.entity_id IS 'Entity id.';
COMMENT ON COLUMN {{ schema }}.entity_overview.name IS 'Canonical name.';
COMMENT ON COLUMN {{ schema }}.entity_overview.kind IS 'regular or label.';
COMMENT ON COLUMN {{ schema }}.entity_overview.mention_count IS
'Resolved mentions applied so far (flush at commit or flush_stats).';
COMMENT ON COLUMN {{ schema }}.entity_overview.degree IS
'Number of distinct entities it has co-occurred with (the hub measure of the co-occurrence signal).';
COMMENT ON COLUMN {{ schema }}.entity_overview.first_seen IS
'Earliest event date of the mentions that created it.';
COMMENT ON COLUMN {{ schema }}.entity_overview.last_seen IS
'Latest event date of an applied mention.';

CREATE OR REPLACE VIEW {{ schema }}.entity_neighbors
WITH (security_invoker = TRUE) AS
-- Each stored pair appears twice, once from each side, so that filtering on
-- entity_name lists an entity's whole neighbourhood. The sides are a UNION ALL
-- of plain columns of the pair table, which the planner flattens: an entity
-- found by name reaches each side through its own index (the primary key,
-- entity_cooccurrences_reverse_idx). A WHERE inside the branches would stop
-- that and read the whole bank's pairs.
SELECT
    c.bank_id,
    c.entity_id,
    e.canonical_name AS entity_name,
    c.neighbor_id,
    n.canonical_name AS neighbor_name,
    c.cooccurrence_count,
    c.last_cooccurred
FROM (
    SELECT
        p.bank_id,
        p.entity_id_1 AS entity_id,
        p.entity_id_2 AS neighbor_id,
        p.cooccurrence_count,
        p.last_cooccurred
    FROM {{ schema }}.entity_cooccurrences AS p
    UNION ALL
    SELECT
        p.bank_id,
        p.entity_id_2,
        p.entity_id_1,
        p.cooccurrence_count,
        p.last_cooccurred
    FROM {{ schema }}.entity_cooccurrences AS p
) AS c
INNER JOIN {{ schema }}.entities AS e
    ON c.bank_id = e.bank_id AND c.entity_id = e.id
INNER JOIN {{ schema }}.entities AS n
    ON c.bank_id = n.bank_id AND c.neighbor_id = n.id
WHERE c.cooccurrence_count > 0;

COMMENT ON VIEW {{ schema }}.entity_neighbors IS
'The co-occurrence graph from each side: every pair twice, so WHERE entity_name = ... lists a neighbourhood.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.entity_id IS 'The entity whose neighbourhood this row belongs to.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.entity_name IS 'Its canonical name.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.neighbor_id IS 'An entity it co-occurred with.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.neighbor_name IS 'The neighbour''s canonical name.';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.cooccurrence_count IS
'Number of facts that mentioned both (applied so far).';
COMMENT ON COLUMN {{ schema }}.entity_neighbors.last_cooccurred IS
'Latest event date of a fact that mentioned both.';

-- What the bank knows of each entity besides its names: the attributes its
-- mentions carried (normalised), derived from the provenance. Merge, split,
-- forget, undo and re-resolution move or delete provenance rows, so this
-- follows them with no rule of its own (migration 0018).
--   SELECT * FROM entity_resolver.entity_attributes WHERE bank_id = 'team' AND attribute = 'email';
CREATE OR REPLACE VIEW {{ schema }}.entity_attributes
WITH (security_invoker = TRUE) AS
SELECT
    m.bank_id,
    m.entity_id,
    a.key AS attribute,
    a.value,
    min(m.event_date) AS first_seen,
    max(m.event_date) AS last_seen,
    count(*) AS mentions
FROM {{ schema }}.mentions AS m
CROSS JOIN LATERAL jsonb_each_text(m.attributes) AS a (key, value)
WHERE m.attributes IS NOT NULL
GROUP BY m.bank_id, m.entity_id, a.key, a.value;

COMMENT ON VIEW {{ schema }}.entity_attributes IS
'One row per entity, attribute and value its mentions carried (normalised): first and last seen, how many mentions.';
COMMENT ON COLUMN {{ schema }}.entity_attributes.bank_id IS 'Owning bank.';
COMMENT ON COLUMN {{ schema }}.entity_attributes.entity_id IS 'The entity (its name: entity_overview).';
COMMENT ON COLUMN {{ schema }}.entity_attributes.attribute IS 'The attribute''s name (birth_date, email, ...).';
COMMENT ON COLUMN {{ schema }}.entity_attributes.value IS
'The value, normalised (email lowercased, phone digits only, dates ISO).';
COMMENT ON COLUMN {{ schema }}.entity_attributes.first_seen IS 'Earliest event date of a mention that carried it.';
COMMENT ON COLUMN {{ schema }}.entity_attributes.last_seen IS 'Latest event date of a mention that carried it.';
COMMENT ON COLUMN {{ schema }}.entity_attributes.mentions IS 'How many of its mentions carried it.';
