-- ---------------------------------------------------------------------------
-- undo_operation and the history
-- ---------------------------------------------------------------------------
-- Undo puts back the rows of the before-image, then recounts what it touched
-- from the record. Undoing the most recent operation restores the bank
-- exactly; undoing an older one waits for the later operations that touched
-- the same entities to be undone first. Facts that came or went since keep
-- their effect: a mention resolved after the operation stays where it was
-- resolved, a forgotten one stays forgotten.

CREATE OR REPLACE FUNCTION {{ internal }}._check_free_names(
    bank_id text, names text[], own uuid, operation_id bigint
)
RETURNS void
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    hit record;
    keys text[];
    performed timestamptz;
BEGIN
    -- A name an undo gives back must be free: another entity may have been
    -- created with it, or given it as an alias, since. A homonym may share
    -- its name (_image_names leaves homonyms out): only another first entity
    -- of the name (homonym NULL) takes it. An alias held since before the
    -- operation stood beside the name then, and may again: the resolver
    -- makes an entity of a name another entity holds as an alias when an
    -- attribute tells them apart (a merged 'Tom Baker', a later one born
    -- another day), and forgetting that entity must stay undoable.
    SELECT o.performed_at INTO performed
    FROM operations AS o
    WHERE o.bank_id = _check_free_names.bank_id AND o.id = _check_free_names.operation_id;
    -- Folded first: fold_name() of a row is not LEAKPROOF, and a bank-bound
    -- curator's look-ups would then read the bank's names.
    keys := ARRAY(SELECT fold_name(n.name) FROM unnest(_check_free_names.names) WITH ORDINALITY AS n (name, i)
                  ORDER BY n.i);
    SELECT n.name, e.id, e.canonical_name INTO hit
    FROM unnest(_check_free_names.names, keys) AS n (name, key)
    INNER JOIN entities AS e
        ON e.bank_id = _check_free_names.bank_id AND folded(e.canonical_name) = n.key
    WHERE e.id IS DISTINCT FROM _check_free_names.own AND e.homonym IS NULL
    LIMIT 1;
    IF NOT FOUND THEN
        SELECT n.name, e.id, e.canonical_name INTO hit
        FROM unnest(_check_free_names.names, keys) AS n (name, key)
        INNER JOIN entity_aliases AS a
            ON a.bank_id = _check_free_names.bank_id AND folded(a.alias) = n.key
        INNER JOIN entities AS e ON a.bank_id = e.bank_id AND a.entity_id = e.id
        WHERE e.id IS DISTINCT FROM _check_free_names.own AND a.created_at >= performed
        LIMIT 1;
    END IF;
    IF hit.id IS NOT NULL THEN
        RAISE EXCEPTION 'operation_id: cannot undo operation %: the name % now belongs to entity % (%)',
            _check_free_names.operation_id, quote_literal(hit.name), hit.id, quote_literal(hit.canonical_name)
            USING
                ERRCODE = 'unique_violation',
                HINT = 'Rename that entity, or remove the alias, first.';
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_free_names(text, text[], uuid, bigint) IS
'Internal (undo): refuse (23505) when a name to give back is now another entity''s name, or an alias given since '
'the operation.';

CREATE OR REPLACE FUNCTION {{ internal }}._image_names(image jsonb, entity_ids uuid[])
RETURNS text[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Reads only the image: no table, so nothing for Citus to plan.
    SELECT ARRAY(
        SELECT r.canonical_name FROM jsonb_populate_recordset(NULL::entities, _image_names.image -> 'entities') AS r
        WHERE r.id = ANY(_image_names.entity_ids) AND r.homonym IS NULL
        UNION ALL
        SELECT r.alias FROM jsonb_populate_recordset(NULL::entity_aliases, _image_names.image -> 'aliases') AS r
    )
$$;

COMMENT ON FUNCTION {{ internal }}._image_names(jsonb, uuid[]) IS
'Internal (undo): the names a before-image gives back: those of the given entities (homonyms aside: they share '
'theirs), and every alias in it.';

CREATE OR REPLACE FUNCTION {{ internal }}._restore_mentions(bank_id text, image jsonb, moved_to uuid)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    n bigint;
BEGIN
    -- Only the mentions still where the operation moved them: one forgotten
    -- since stays forgotten, one corrected since stays corrected. (The score
    -- too: reresolve records the score of its new decision.)
    UPDATE mentions AS m
    SET entity_id = r.entity_id, decision = r.decision, score = r.score, decided_at = r.decided_at
    FROM jsonb_populate_recordset(NULL::mentions, _restore_mentions.image -> 'mentions') AS r
    WHERE
        m.bank_id = _restore_mentions.bank_id AND m.unit_id = r.unit_id AND m.ordinal = r.ordinal
        AND m.entity_id = _restore_mentions.moved_to;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._restore_mentions(text, jsonb, uuid) IS
'Internal (undo): move the before-image''s mentions that are still on moved_to back where they were; returns how '
'many.';

CREATE OR REPLACE FUNCTION {{ internal }}._restore_links(bank_id text, image jsonb, moved_to uuid, cleared uuid[])
RETURNS uuid[]
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    units uuid[];
BEGIN
    -- The image's units that still hold moved_to get back the links they
    -- had to the cleared entities (those first go). Their links to other
    -- entities were not the operation's: a later one may have moved them
    -- (a split), and giving them back would link a unit to an entity none
    -- of its mentions holds.
    units := ARRAY(
        SELECT DISTINCT r.unit_id
        FROM jsonb_populate_recordset(NULL::unit_entities, _restore_links.image -> 'links') AS r
        WHERE EXISTS (
            SELECT 1 FROM unit_entities AS ue
            WHERE
                ue.bank_id = _restore_links.bank_id AND ue.unit_id = r.unit_id
                AND ue.entity_id = _restore_links.moved_to
        )
        ORDER BY r.unit_id
    );
    DELETE FROM unit_entities AS ue
    WHERE
        ue.bank_id = _restore_links.bank_id AND ue.unit_id = ANY(units)
        AND ue.entity_id = ANY(_restore_links.cleared);
    INSERT INTO unit_entities
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::unit_entities, _restore_links.image -> 'links') AS r
    WHERE r.unit_id = ANY(units) AND r.entity_id = ANY(_restore_links.cleared)
    ORDER BY r.unit_id, r.entity_id
    ON CONFLICT ON CONSTRAINT unit_entities_pkey DO NOTHING;
    RETURN units;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._restore_links(text, jsonb, uuid, uuid[]) IS
'Internal (undo): give the before-image''s units that still hold moved_to their links back (those to the cleared '
'entities replaced); returns the units.';

CREATE OR REPLACE FUNCTION {{ internal }}._undo_merge(
    bank_id text, operation_id bigint, plan jsonb, before_image jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _undo_merge.bank_id;
    image jsonb := _undo_merge.before_image;
    target uuid := (_undo_merge.plan -> 'target' ->> 'entity_id')::uuid;
    sources uuid[];
    everyone uuid[];
    units uuid[];
    n_mentions bigint;
BEGIN
    sources := ARRAY(
        SELECT (s ->> 'entity_id')::uuid FROM jsonb_array_elements(_undo_merge.plan -> 'sources') AS s
    );
    everyone := sources || target;

    -- Names: the sources' names stop being the target's aliases and are
    -- names again; their own aliases go back to them. (The names are folded
    -- into an array first: fold_name() of a row is not LEAKPROOF, and a
    -- bank-bound curator's look-up would then read the bank's aliases.)
    DELETE FROM entity_aliases AS a
    WHERE
        a.bank_id = b AND a.entity_id = target AND a.source = 'merge'
        AND folded(a.alias) = ANY(ARRAY(
            SELECT fold_name(r.canonical_name)
            FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
            WHERE r.id = ANY(sources)
        ));
    DELETE FROM entity_aliases AS a
    WHERE
        a.bank_id = b AND a.entity_id = target
        AND folded(a.alias) = ANY(ARRAY(
            SELECT fold_name(r.alias) FROM jsonb_populate_recordset(NULL::entity_aliases, image -> 'aliases') AS r
        ));
    PERFORM _check_free_names(b, _image_names(image, sources), NULL, _undo_merge.operation_id);
    INSERT INTO entities
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
    WHERE r.id = ANY(sources)
    ORDER BY r.id;
    INSERT INTO entity_aliases
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_aliases, image -> 'aliases') AS r
    ORDER BY r.entity_id, r.alias;

    -- Ids: the merge's forwards go; forwards it re-pointed point back.
    DELETE FROM entity_forwards AS f
    WHERE f.bank_id = b AND f.operation_id = _undo_merge.operation_id AND f.old_id = ANY(sources);
    DELETE FROM entity_forwards AS f
    WHERE
        f.bank_id = b
        AND f.old_id IN (
            SELECT r.old_id FROM jsonb_populate_recordset(NULL::entity_forwards, image -> 'forwards') AS r
        );
    INSERT INTO entity_forwards
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_forwards, image -> 'forwards') AS r
    ORDER BY r.old_id;

    -- The moved mentions go back (a forgotten one stays forgotten), and the
    -- units that still hold the target get the links they had.
    n_mentions := _restore_mentions(b, image, target);
    units := _restore_links(b, image, target, everyone);
    PERFORM _relink_mentions(b, units, everyone);
    PERFORM _restore_pairs(b, everyone, image -> 'pairs');
    -- The judgements moved to the target go back to the sources.
    PERFORM _restore_judgements(b, image -> 'judgements', everyone);
    RETURN jsonb_build_object(
        'entities_restored', cardinality(sources), 'mentions_restored', n_mentions,
        'units_restored', cardinality(units),
        'orphans_removed', _remove_orphans(b, everyone, image -> 'orphans')
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._undo_merge(text, bigint, jsonb, jsonb) IS
'Internal (undo_operation): give a merge''s sources back their rows, names, aliases, ids, mentions and links.';

CREATE OR REPLACE FUNCTION {{ internal }}._undo_split(
    bank_id text, operation_id bigint, plan jsonb, before_image jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _undo_split.bank_id;
    image jsonb := _undo_split.before_image;
    original uuid := (_undo_split.plan -> 'entity' ->> 'entity_id')::uuid;
    split_off uuid := (_undo_split.plan -> 'new_entity' ->> 'entity_id')::uuid;
    units uuid[];
    n_mentions bigint;
    kept boolean;
BEGIN
    -- The entity split from is not curated: forgetting its remaining facts
    -- since may have removed it. It comes back from the image.
    IF NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = b AND e.id = original) THEN
        PERFORM _check_free_names(b, _image_names(image, ARRAY[original]), NULL, _undo_split.operation_id);
        INSERT INTO entities
        SELECT r.* FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r;
    END IF;
    n_mentions := _restore_mentions(b, image, split_off);
    -- (its links to both entities come back: the split replaced the one by the other)
    units := _restore_links(b, image, split_off, ARRAY[original, split_off]);
    PERFORM _relink_mentions(b, units, ARRAY[original, split_off]);
    -- Aliases the split removed (keep_aliases => false) go back.
    PERFORM _check_free_names(b, _image_names(image, '{}'), original, _undo_split.operation_id);
    INSERT INTO entity_aliases
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_aliases, image -> 'aliases') AS r
    ORDER BY r.alias
    ON CONFLICT DO NOTHING;

    -- The split-off entity goes, unless facts resolved to it since: those
    -- stay where they were resolved.
    kept := EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = split_off)
        OR EXISTS (SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = split_off);
    IF kept THEN
        PERFORM _restore_pairs(b, ARRAY[original, split_off], image -> 'pairs');
    ELSE
        UPDATE entities AS e SET curated = FALSE WHERE e.bank_id = b AND e.id = split_off AND e.curated;
        DELETE FROM entities AS e WHERE e.bank_id = b AND e.id = split_off;
        PERFORM _restore_pairs(b, ARRAY[original], image -> 'pairs');
    END IF;
    RETURN jsonb_build_object(
        'mentions_restored', n_mentions, 'units_restored', cardinality(units),
        'orphans_removed', _remove_orphans(b, ARRAY[original], image -> 'orphans'),
        'kept', CASE WHEN kept THEN jsonb_build_object(
            'entity_id', split_off,
            'mentions', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = split_off)
        ) END
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._undo_split(text, bigint, jsonb, jsonb) IS
'Internal (undo_operation): move a split''s mentions and links back; remove the new entity unless facts resolved '
'to it since.';

CREATE OR REPLACE FUNCTION {{ internal }}._undo_rename(
    bank_id text, operation_id bigint, plan jsonb, before_image jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _undo_rename.bank_id;
    image jsonb := _undo_rename.before_image;
    was entities;
BEGIN
    SELECT r.* INTO was FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r;
    DELETE FROM entity_aliases AS a
    WHERE
        a.bank_id = b AND a.entity_id = was.id AND a.source = 'rename'
        AND folded(a.alias) = fold_name(_undo_rename.plan ->> 'alias_added');
    PERFORM _check_free_names(b, _image_names(image, ARRAY[was.id]), was.id, _undo_rename.operation_id);
    UPDATE entities AS e SET canonical_name = was.canonical_name, curated = was.curated
    WHERE e.bank_id = b AND e.id = was.id;
    INSERT INTO entity_aliases
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_aliases, image -> 'aliases') AS r;
    RETURN jsonb_build_object('name', was.canonical_name);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._undo_rename(text, bigint, jsonb, jsonb) IS
'Internal (undo_operation): give a renamed entity its old name (and curated flag) back.';

CREATE OR REPLACE FUNCTION {{ internal }}._undo_forget(
    bank_id text, operation_id bigint, plan jsonb, before_image jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _undo_forget.bank_id;
    image jsonb := _undo_forget.before_image;
    was entities;
    units uuid[];
    n_mentions bigint;
BEGIN
    SELECT r.* INTO was FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r;
    PERFORM _check_free_names(b, _image_names(image, ARRAY[was.id]), NULL, _undo_forget.operation_id);
    INSERT INTO entities
    SELECT r.* FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r;
    INSERT INTO entity_aliases
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_aliases, image -> 'aliases') AS r
    ORDER BY r.alias;
    INSERT INTO entity_forwards
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_forwards, image -> 'forwards') AS r
    ORDER BY r.old_id
    ON CONFLICT ON CONSTRAINT entity_forwards_pkey DO NOTHING;
    -- Units forgotten since stay forgotten: a fact deleted, or a unit of
    -- retain that held other mentions and holds none now.
    units := ARRAY(
        SELECT (u ->> 'unit_id')::uuid
        FROM jsonb_array_elements(image -> 'units') AS u
        WHERE CASE
            WHEN (u ->> 'fact')::boolean THEN EXISTS (
                SELECT 1 FROM facts AS f WHERE f.bank_id = b AND f.id = (u ->> 'unit_id')::uuid
            )
            WHEN (u ->> 'others')::boolean THEN EXISTS (
                SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.unit_id = (u ->> 'unit_id')::uuid
            ) OR EXISTS (
                SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.unit_id = (u ->> 'unit_id')::uuid
            )
            ELSE TRUE
        END
    );
    INSERT INTO mentions
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::mentions, image -> 'mentions') AS r
    WHERE r.unit_id = ANY(units)
    ORDER BY r.unit_id, r.ordinal
    ON CONFLICT ON CONSTRAINT mentions_pkey DO NOTHING;
    GET DIAGNOSTICS n_mentions = ROW_COUNT;
    INSERT INTO unit_entities
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::unit_entities, image -> 'links') AS r
    WHERE r.unit_id = ANY(units)
    ORDER BY r.unit_id
    ON CONFLICT ON CONSTRAINT unit_entities_pkey DO NOTHING;
    PERFORM _restore_pairs(b, ARRAY[was.id], image -> 'pairs');
    PERFORM _restore_judgements(b, image -> 'judgements');
    RETURN jsonb_build_object(
        'entities_restored', 1, 'mentions_restored', n_mentions,
        'orphans_removed', _remove_orphans(b, ARRAY[was.id], image -> 'orphans')
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._undo_forget(text, bigint, jsonb, jsonb) IS
'Internal (undo_operation): give a forgotten entity back, with its mentions and links in units that still exist.';

CREATE OR REPLACE FUNCTION {{ internal }}._undo_reresolve(
    bank_id text, operation_id bigint, plan jsonb, before_image jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _undo_reresolve.bank_id;
    image jsonb := _undo_reresolve.before_image;
    touched uuid[];
    missing uuid[];
    target uuid;
    units uuid[] := '{}';
    n_mentions bigint := 0;
BEGIN
    -- As a merge's undo, per entity the moves went to (sql/058_reresolve.sql).
    -- The entities a replay made are touched too: left with nothing, they go.
    touched := ARRAY(
        SELECT r.id FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
        UNION ALL
        SELECT r.id
        FROM jsonb_populate_recordset(NULL::entities, coalesce(_undo_reresolve.plan -> 'entities_created', '[]')) AS r
    );
    -- The names a replay gave, back (all first out of the way, so that no
    -- name is held twice on the way).
    UPDATE entities AS e
    SET canonical_name = e.id::text
    FROM jsonb_array_elements(coalesce(_undo_reresolve.plan -> 'entities_renamed', '[]')) AS n (r)
    WHERE e.bank_id = b AND e.id = (n.r ->> 'entity_id')::uuid;
    UPDATE entities AS e
    SET canonical_name = r.canonical_name
    FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
    WHERE
        e.bank_id = b AND e.id = r.id
        AND (_undo_reresolve.plan -> 'entities_renamed') @> jsonb_build_array(jsonb_build_object('entity_id', r.id));
    -- The entities the moves left with nothing, which went, come back.
    missing := ARRAY(
        SELECT r.id FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
        WHERE NOT EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = b AND e.id = r.id)
    );
    PERFORM _check_free_names(b, _image_names(image, missing), NULL, _undo_reresolve.operation_id);
    INSERT INTO entities
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entities, image -> 'entities') AS r
    WHERE r.id = ANY(missing)
    ORDER BY r.id;
    FOR target IN
        SELECT DISTINCT (mv -> 'to' ->> 'entity_id')::uuid FROM jsonb_array_elements(_undo_reresolve.plan -> 'moves') AS mv
    LOOP
        -- The mentions moved to it go back; the facts that still hold it get
        -- their links back (those to the touched entities replaced).
        n_mentions := n_mentions + _restore_mentions(b, jsonb_build_object('mentions', (
            SELECT coalesce(jsonb_agg(r), '[]') FROM jsonb_array_elements(image -> 'mentions') AS r
            WHERE EXISTS (
                SELECT 1 FROM jsonb_array_elements(_undo_reresolve.plan -> 'moves') AS mv
                WHERE
                    mv ->> 'unit_id' = r ->> 'unit_id' AND mv ->> 'ordinal' = r ->> 'ordinal'
                    AND (mv -> 'to' ->> 'entity_id')::uuid = target
            )
        )), target);
        units := units || _restore_links(b, image, target, touched);
    END LOOP;
    units := ARRAY(SELECT DISTINCT x.id FROM unnest(units) AS x (id) ORDER BY x.id);
    PERFORM _relink_mentions(b, units, touched);
    PERFORM _restore_pairs(b, touched, image -> 'pairs');
    RETURN jsonb_build_object(
        'entities_restored', cardinality(missing), 'mentions_restored', n_mentions, 'units_restored', cardinality(units),
        'orphans_removed', _remove_orphans(b, touched, image -> 'orphans')
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._undo_reresolve(text, bigint, jsonb, jsonb) IS
'Internal (undo_operation): move a re-resolution''s mentions back, give their facts their links back, and bring '
'back the entities it left with nothing.';

CREATE OR REPLACE FUNCTION {{ schema }}.undo_operation(bank_id text, operation_id bigint)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(undo_operation.bank_id);
    op operations;
    blockers text;
    result jsonb;
    was record;
BEGIN
    PERFORM _check_not_null(undo_operation.operation_id, 'operation_id');
    PERFORM _correction_begin(b, FALSE);
    -- Under the bank's lock: a bank dropped (drop_bank) has no ledger to undo.
    PERFORM _require_bank(b);
    SELECT o.* INTO op
    FROM operations AS o
    WHERE o.bank_id = b AND o.id = undo_operation.operation_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'operation_id: bank % has no operation %', quote_literal(b), undo_operation.operation_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF op.undone_at IS NOT NULL THEN
        RAISE EXCEPTION 'operation_id: operation % was already undone (at %, by %)', op.id, op.undone_at,
            quote_ident(op.undone_by)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF op.plan ? 'erased_by' THEN
        RAISE EXCEPTION 'operation_id: operation % (%) cannot be undone: erased by operation % (forget_entity, erase)',
            op.id, op.kind, op.plan ->> 'erased_by'
            USING
                ERRCODE = 'invalid_parameter_value',
                HINT = 'Its before-image no longer holds what it would restore.';
    END IF;
    -- Later operations that touched one of its entities (or touched one that
    -- such an operation touched, and so on) build on it.
    WITH RECURSIVE later AS (
        SELECT o.id, o.kind, o.entity_ids
        FROM operations AS o
        WHERE o.bank_id = b AND o.id > op.id AND o.undone_at IS NULL AND o.entity_ids && op.entity_ids
        UNION
        SELECT o.id, o.kind, o.entity_ids
        FROM operations AS o
        INNER JOIN later AS l ON o.id > l.id AND o.entity_ids && l.entity_ids
        WHERE o.bank_id = b AND o.undone_at IS NULL
    )

    SELECT string_agg(format('%s (%s)', x.id, x.kind), ', ' ORDER BY x.id DESC) INTO blockers
    FROM (SELECT DISTINCT later.id, later.kind FROM later) AS x;
    IF blockers IS NOT NULL THEN
        RAISE EXCEPTION 'operation_id: operation % (%) cannot be undone: later operations build on it: %',
            op.id, op.kind, blockers
            USING
                ERRCODE = 'dependent_objects_still_exist',
                HINT = 'Undo them first, most recent first.';
    END IF;

    result := '{}';
    IF op.kind = 'merge' THEN
        result := _undo_merge(b, op.id, op.plan, op.before_image);
    ELSIF op.kind = 'split' THEN
        result := _undo_split(b, op.id, op.plan, op.before_image);
    ELSIF op.kind = 'rename' THEN
        result := _undo_rename(b, op.id, op.plan, op.before_image);
    ELSIF op.kind = 'forget_entity' THEN
        result := _undo_forget(b, op.id, op.plan, op.before_image);
    ELSIF op.kind = 'reresolve' THEN
        result := _undo_reresolve(b, op.id, op.plan, op.before_image);
    ELSIF op.kind = 'add_alias' THEN
        DELETE FROM entity_aliases AS a
        WHERE
            a.bank_id = b AND a.entity_id = (op.plan ->> 'entity_id')::uuid
            AND folded(a.alias) = fold_name(op.plan ->> 'alias');
    ELSIF op.kind = 'remove_alias' THEN
        SELECT r.* INTO was FROM jsonb_populate_recordset(NULL::entity_aliases, op.before_image -> 'aliases') AS r;
        PERFORM _check_free_names(b, ARRAY[was.alias::text], NULL, op.id);
        -- (unless its entity was removed since: nothing refers to it any more)
        IF EXISTS (SELECT 1 FROM entities AS e WHERE e.bank_id = b AND e.id = was.entity_id) THEN
            INSERT INTO entity_aliases
            SELECT r.*
            FROM jsonb_populate_recordset(NULL::entity_aliases, op.before_image -> 'aliases') AS r;
        END IF;
    ELSIF op.kind = 'mark_distinct' THEN
        -- (sql/055_judgements.sql)
        DELETE FROM entity_judgements AS j
        WHERE
            j.bank_id = b AND j.entity_a = (op.plan -> 'pair' ->> 0)::uuid
            AND j.entity_b = (op.plan -> 'pair' ->> 1)::uuid;
    ELSIF op.kind = 'unmark_distinct' THEN
        PERFORM _restore_judgements(b, op.before_image -> 'judgements');
    END IF;

    UPDATE operations AS o SET undone_at = now(), undone_by = current_user
    WHERE o.bank_id = b AND o.id = op.id;
    RETURN jsonb_build_object(
        'bank_id', b, 'operation_id', op.id, 'kind', op.kind, 'summary', op.plan ->> 'summary', 'undone', TRUE
    ) || result;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.undo_operation(text, bigint) IS
'Operator correction: undo a ledgered operation. The most recent restores the bank exactly; an older one is refused '
'(2BP01) while later operations on the same entities are in effect. Facts resolved since stay where they were '
'resolved; statistics are recounted from the record.';

CREATE OR REPLACE FUNCTION {{ schema }}.operation_history(bank_id text, max_results integer DEFAULT 50)
RETURNS TABLE (
    operation_id bigint,
    kind text,
    summary text,
    performed_by name,
    performed_at timestamptz,
    reason text,
    entity_ids uuid[],
    undone_at timestamptz,
    undone_by name,
    blocked_by bigint[]
)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM check_bank_id(operation_history.bank_id);
    PERFORM _require_bank(operation_history.bank_id);
    PERFORM _check_max_results(operation_history.max_results);
    RETURN QUERY
    SELECT
        o.id,
        o.kind,
        o.plan ->> 'summary',
        o.performed_by,
        o.performed_at,
        o.reason,
        o.entity_ids,
        o.undone_at,
        o.undone_by,
        CASE WHEN o.undone_at IS NULL THEN ARRAY(
            SELECT l.id
            FROM operations AS l
            WHERE
                l.bank_id = operation_history.bank_id AND l.id > o.id AND l.undone_at IS NULL
                AND l.entity_ids && o.entity_ids
            ORDER BY l.id DESC
        ) END
    FROM operations AS o
    WHERE o.bank_id = operation_history.bank_id
    ORDER BY o.id DESC
    LIMIT operation_history.max_results;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.operation_history(text, integer) IS
'The bank''s operator corrections, most recent first: what (summary), who, when, why, whether undone, and the later '
'operations in effect that touched the same entities (blocked_by: undo those first).';
