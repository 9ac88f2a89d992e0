-- forget_entity, and erasing a person's names from the ledger (erase => true).
-- The steps of every correction: 050_corrections.sql.

-- ---------------------------------------------------------------------------
-- Erasing (forget_entity with erase => true)
-- ---------------------------------------------------------------------------
-- A name is found in a text as a whole word after fold_name() on both sides:
-- not inside a longer word ('Chris' is not found in 'Christopher'). The names
-- become one regular expression, every character but letters and digits
-- escaped.

CREATE OR REPLACE FUNCTION {{ internal }}._names_pattern(names text[])
RETURNS text
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT
        '(^|[^[:alnum:]])('
        || string_agg(regexp_replace(n.key, '([^[:alnum:]])', '\\\1', 'g'), '|' ORDER BY n.key)
        || ')($|[^[:alnum:]])'
    FROM (
        SELECT DISTINCT fold_name(x.name) AS key
        FROM unnest(_names_pattern.names) AS x (name)
        WHERE btrim(x.name) <> ''
    ) AS n
$$;

COMMENT ON FUNCTION {{ internal }}._names_pattern(text[]) IS
'Internal (erase): the names folded, as one regular expression that finds any of them as a whole word in a folded '
'text (_contains_name); NULL for no names.';

CREATE OR REPLACE FUNCTION {{ internal }}._contains_name(haystack text, pattern text)
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT coalesce(fold_name(_contains_name.haystack) ~ _contains_name.pattern, FALSE)
$$;

COMMENT ON FUNCTION {{ internal }}._contains_name(text, text) IS
'Internal (erase): whether the text holds one of the names of the pattern (_names_pattern) as a whole word, after '
'fold_name().';

CREATE OR REPLACE FUNCTION {{ internal }}._names_in(doc jsonb, pattern text)
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT EXISTS (
        SELECT 1
        FROM jsonb_path_query(_names_in.doc, 'strict $.**') AS v (value)
        WHERE jsonb_typeof(v.value) = 'string' AND _contains_name(v.value #>> '{}', _names_in.pattern)
    )
$$;

COMMENT ON FUNCTION {{ internal }}._names_in(jsonb, text) IS
'Internal (erase): whether any string in the document holds one of the names of the pattern.';

CREATE OR REPLACE FUNCTION {{ internal }}._scrub(doc jsonb, pattern text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    own boolean;
BEGIN
    -- Every string holding a name becomes '[erased]'. A row of the erased
    -- entities (an entity, alias or mention row of a before-image: its id or
    -- entity_id is one of them) loses its texts whatever they hold: a
    -- mention's text need not be one of the names.
    IF jsonb_typeof(_scrub.doc) = 'object' THEN
        own := coalesce((_scrub.doc ->> 'entity_id') = ANY(_scrub.entity_ids::text[]), FALSE)
            OR coalesce((_scrub.doc ->> 'id') = ANY(_scrub.entity_ids::text[]), FALSE);
        RETURN (
            SELECT coalesce(jsonb_object_agg(
                e.key,
                CASE
                    WHEN own AND e.key IN ('canonical_name', 'alias', 'mention', 'name', 'metadata')
                        THEN to_jsonb('[erased]'::text)
                    ELSE _scrub(e.value, _scrub.pattern, _scrub.entity_ids)
                END
            ), '{}')
            FROM jsonb_each(_scrub.doc) AS e
        );
    ELSIF jsonb_typeof(_scrub.doc) = 'array' THEN
        RETURN (
            SELECT coalesce(jsonb_agg(_scrub(e.value, _scrub.pattern, _scrub.entity_ids) ORDER BY e.ordinality), '[]')
            FROM jsonb_array_elements(_scrub.doc) WITH ORDINALITY AS e
        );
    ELSIF jsonb_typeof(_scrub.doc) = 'string' AND _contains_name(_scrub.doc #>> '{}', _scrub.pattern) THEN
        RETURN to_jsonb('[erased]'::text);
    END IF;
    RETURN _scrub.doc;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._scrub(jsonb, text, uuid[]) IS
'Internal (erase): the document with every string that holds one of the names, and the texts of the erased '
'entities'' own rows, replaced by ''[erased]''.';

CREATE OR REPLACE FUNCTION {{ internal }}._erasable_ids(bank_id text, entity_id uuid)
RETURNS uuid[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- The entity and the ids merged into it (its forwards).
    SELECT _erasable_ids.entity_id || ARRAY(
        SELECT f.old_id FROM entity_forwards AS f
        WHERE f.bank_id = _erasable_ids.bank_id AND f.new_id = _erasable_ids.entity_id
        ORDER BY f.old_id
    )
$$;

COMMENT ON FUNCTION {{ internal }}._erasable_ids(text, uuid) IS
'Internal (erase): an entity''s id and every id forwarded to it.';

CREATE OR REPLACE FUNCTION {{ internal }}._erasable_names(bank_id text, entity_ids uuid[])
RETURNS text[]
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _erasable_names.bank_id;
    ids uuid[] := _erasable_names.entity_ids;
    images jsonb;
BEGIN
    -- The names the bank knows these entities by: their names and aliases
    -- now, and those the ledger recorded for them (names before a rename or
    -- a merge, aliases removed since). Images are read first: Citus refuses
    -- a subquery on a table correlated with a set-returning function.
    SELECT coalesce(jsonb_agg(jsonb_build_object('plan', o.plan, 'image', o.before_image)), '[]') INTO images
    FROM operations AS o
    WHERE o.bank_id = b AND o.entity_ids && ids;
    RETURN ARRAY(
        SELECT DISTINCT x.name
        FROM (
            SELECT e.canonical_name::text AS name FROM entities AS e WHERE e.bank_id = b AND e.id = ANY(ids)
            UNION ALL
            SELECT a.alias::text FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = ANY(ids)
            UNION ALL
            SELECT r.canonical_name::text
            FROM jsonb_array_elements(images) AS i (op),
                LATERAL jsonb_populate_recordset(NULL::entities, i.op -> 'image' -> 'entities') AS r
            WHERE r.id = ANY(ids)
            UNION ALL
            SELECT r.alias::text
            FROM jsonb_array_elements(images) AS i (op),
                LATERAL jsonb_populate_recordset(NULL::entity_aliases, i.op -> 'image' -> 'aliases') AS r
            WHERE r.entity_id = ANY(ids)
            UNION ALL
            -- add_alias records its alias in the plan only.
            SELECT i.op -> 'plan' ->> 'alias'
            FROM jsonb_array_elements(images) AS i (op)
            WHERE (i.op -> 'plan' ->> 'entity_id')::uuid = ANY(ids) AND i.op -> 'plan' ? 'alias'
        ) AS x
        WHERE x.name IS NOT NULL
        ORDER BY x.name
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._erasable_names(text, uuid[]) IS
'Internal (erase): every name and alias of these entities, now and as the bank''s ledger recorded them.';

CREATE OR REPLACE FUNCTION {{ internal }}._erasable_operations(bank_id text, pattern text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- The ledger's operations that erasing rewrites: their reason, plan or
    -- before-image holds one of the names, or they touched the entities.
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'operation_id', o.id, 'kind', o.kind, 'undone', o.undone_at IS NOT NULL
    ) ORDER BY o.id), '[]')
    FROM operations AS o
    WHERE
        o.bank_id = _erasable_operations.bank_id
        AND (
            o.entity_ids && _erasable_operations.entity_ids
            OR _contains_name(o.reason, _erasable_operations.pattern)
            OR _names_in(o.plan, _erasable_operations.pattern)
            OR _names_in(o.before_image, _erasable_operations.pattern)
        )
$$;

COMMENT ON FUNCTION {{ internal }}._erasable_operations(text, text, uuid[]) IS
'Internal (erase): the operations whose reason, plan or before-image names the entities, or that touched them '
'(operation_id, kind, undone), as a jsonb array.';

CREATE OR REPLACE FUNCTION {{ internal }}._facts_naming(bank_id text, pattern text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- The facts that still name the entity once it is forgotten: erasing
    -- changes no fact (the application owns them).
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'id', x.id, 'fact_id', x.fact_id, 'in_content', x.in_content, 'in_mentions', x.in_mentions,
        'mentioned', x.mentioned
    ) ORDER BY x.id), '[]')
    FROM (
        SELECT
            f.id,
            f.fact_id,
            _contains_name(f.content, _facts_naming.pattern) AS in_content,
            _names_in(f.mentions, _facts_naming.pattern) AS in_mentions,
            EXISTS (
                SELECT 1 FROM mentions AS m
                WHERE m.bank_id = f.bank_id AND m.unit_id = f.id AND m.entity_id = ANY(_facts_naming.entity_ids)
            ) AS mentioned
        FROM facts AS f
        WHERE f.bank_id = _facts_naming.bank_id
    ) AS x
    WHERE x.in_content OR x.in_mentions OR x.mentioned
$$;

COMMENT ON FUNCTION {{ internal }}._facts_naming(text, text, uuid[]) IS
'Internal (erase): the facts whose content or mentions hold one of the names, or that mention the entities '
'(id, fact_id, in_content, in_mentions, mentioned), as a jsonb array.';

CREATE OR REPLACE FUNCTION {{ internal }}._erase_operations(
    bank_id text, pattern text, entity_ids uuid[], operation_ids bigint[], erased_by bigint
)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Rewritten without the names, and marked: undo_operation refuses an
    -- operation whose plan has erased_by (its before-image no longer holds
    -- what it would restore). An operation erased before keeps its mark.
    UPDATE operations AS o
    SET
        plan = jsonb_build_object('erased_by', _erase_operations.erased_by)
        || _scrub(o.plan, _erase_operations.pattern, _erase_operations.entity_ids),
        before_image = _scrub(o.before_image, _erase_operations.pattern, _erase_operations.entity_ids),
        reason = CASE WHEN _contains_name(o.reason, _erase_operations.pattern) THEN '[erased]' ELSE o.reason END
    WHERE o.bank_id = _erase_operations.bank_id AND o.id = ANY(_erase_operations.operation_ids);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._erase_operations(text, text, uuid[], bigint[], bigint) IS
'Internal (erase): rewrite these operations of the ledger without the names (_scrub) and mark them erased_by the '
'erasing operation, which undo_operation refuses.';

CREATE OR REPLACE FUNCTION {{ schema }}.forget_entity(
    bank_id text,
    entity_id uuid,
    dry_run boolean DEFAULT FALSE,
    reason text DEFAULT NULL,
    erase boolean DEFAULT FALSE
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(forget_entity.bank_id);
    one entities;
    plan jsonb;
    image jsonb;
    op_id bigint;
    n bigint;
    ids uuid[];
    names text[];
    pattern text;
BEGIN
    PERFORM _check_not_null(forget_entity.entity_id, 'entity_id');
    PERFORM _check_not_null(forget_entity.erase, 'erase');
    PERFORM _correction_begin(b, forget_entity.dry_run);
    one := jsonb_populate_record(NULL::entities, _find_entity(b, forget_entity.entity_id, 'entity_id'));

    plan := jsonb_build_object(
        'kind', 'forget_entity',
        'bank_id', b,
        'summary', format('forget %s', _entity_label(b, one.id, one.canonical_name)),
        'entity_id', one.id,
        'name', one.canonical_name,
        'mentions', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id),
        'units', (SELECT count(*) FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id),
        'pairs', (
            SELECT count(*) FROM entity_cooccurrences AS c
            WHERE c.bank_id = b AND (c.entity_id_1 = one.id OR c.entity_id_2 = one.id)
        ),
        'aliases', (
            SELECT coalesce(jsonb_agg(a.alias ORDER BY lower(a.alias)), '[]')
            FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = one.id
        ),
        'forwards', (SELECT count(*) FROM entity_forwards AS f WHERE f.bank_id = b AND f.new_id = one.id)
    );
    IF forget_entity.erase THEN
        -- A data-protection request: the ledger forgets the names too (see
        -- docs/corrections.md, Erasing). The names are in the result only.
        ids := _erasable_ids(b, one.id);
        names := _erasable_names(b, ids);
        pattern := _names_pattern(names);
        plan := plan || jsonb_build_object(
            'erase', TRUE,
            'operations_erased', _erasable_operations(b, pattern, ids),
            'facts_naming', _facts_naming(b, pattern, ids)
        );
    END IF;
    IF forget_entity.dry_run THEN
        RETURN plan || jsonb_build_object('dry_run', TRUE, 'operation_id', NULL)
            || CASE WHEN forget_entity.erase THEN jsonb_build_object('names_erased', to_jsonb(names)) ELSE '{}' END;
    END IF;

    image := jsonb_build_object(
        'entities', jsonb_build_array(to_jsonb(one)),
        'mentions', (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.unit_id, m.ordinal), '[]')
            FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id),
        'links', (SELECT coalesce(jsonb_agg(to_jsonb(ue) ORDER BY ue.unit_id), '[]')
            FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id),
        'pairs', _pairs_image(b, ARRAY[one.id]),
        'orphans', _orphans(b, ARRAY[one.id]),
        'aliases', (SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.alias), '[]')
            FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = one.id),
        'forwards', (SELECT coalesce(jsonb_agg(to_jsonb(f) ORDER BY f.old_id), '[]')
            FROM entity_forwards AS f WHERE f.bank_id = b AND f.new_id = one.id),
        'judgements', _judgements_image(b, ARRAY[one.id]),
        -- Whether each unit was a fact, and held anything else: undo gives
        -- back the entity's mentions only in units that were not forgotten
        -- since (a deleted fact, a retain unit forget_unit emptied).
        'units', (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                'unit_id', u.unit_id,
                'fact', EXISTS (SELECT 1 FROM facts AS f WHERE f.bank_id = b AND f.id = u.unit_id),
                'others', EXISTS (
                    SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.unit_id = u.unit_id AND m.entity_id <> one.id
                ) OR EXISTS (
                    SELECT 1 FROM unit_entities AS ue
                    WHERE ue.bank_id = b AND ue.unit_id = u.unit_id AND ue.entity_id <> one.id
                )
            ) ORDER BY u.unit_id), '[]')
            FROM (
                SELECT m.unit_id FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id
                UNION
                SELECT ue.unit_id FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id
            ) AS u
        )
    );
    IF forget_entity.erase THEN
        -- Nothing to restore from: the operation cannot be undone.
        image := '{}';
    END IF;
    op_id := _record_operation(b, 'forget_entity', forget_entity.reason, ARRAY[one.id], plan, image);
    IF forget_entity.erase THEN
        PERFORM _erase_operations(
            b, pattern, ids,
            ARRAY(SELECT (x ->> 'operation_id')::bigint FROM jsonb_array_elements(plan -> 'operations_erased') AS x)
            || op_id,
            op_id
        );
    END IF;

    DELETE FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id;
    DELETE FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id;
    PERFORM _forget_judgements(b, one.id);
    -- Nothing refers to it now (see merge_entities); its pairs, aliases and
    -- the ids forwarded to it go with it.
    UPDATE entities AS e SET curated = FALSE WHERE e.bank_id = b AND e.id = one.id AND e.curated;
    DELETE FROM entities AS e WHERE e.bank_id = b AND e.id = one.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> 1 THEN
        RAISE EXCEPTION 'entity_id: % could not be removed', one.id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id)
        || CASE WHEN forget_entity.erase THEN jsonb_build_object('names_erased', to_jsonb(names)) ELSE '{}' END;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.forget_entity(text, uuid, boolean, text, boolean) IS
'Operator correction: remove an entity with all its provenance, links, pairs and aliases (the facts stay, without '
'it). One transaction, ledgered (undo_operation); dry_run returns the plan without writing. erase => true (a '
'data-protection request) also rewrites the bank''s ledger without the entity''s names and aliases: those '
'operations, and this one, cannot be undone (operations_erased); facts_naming lists the facts that still name it.';
