-- The corrections an operator makes to identity: merge_entities, split_entity,
-- rename_entity, add_alias, remove_alias. Each follows the steps of
-- 050_corrections.sql (check → lock → plan → ledger → apply → recount);
-- forget_entity is in 052_forget.sql, undo_operation in 054_undo.sql.

-- ---------------------------------------------------------------------------
-- merge_entities
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ internal }}._merged_names(bank_id text, sources uuid[])
RETURNS text[]
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- The sources' names a merge makes aliases of its target: each once, and
    -- not one an entity that stays still bears (the target's own name, when
    -- homonyms merge; another homonym's, which must keep its mentions: an
    -- alias would take every later mention of the name).
    SELECT coalesce(array_agg(n.name ORDER BY lower(n.name)), '{}')
    FROM (
        SELECT DISTINCT ON (folded(e.canonical_name)) e.canonical_name AS name
        FROM entities AS e
        WHERE
            e.bank_id = _merged_names.bank_id AND e.id = ANY(_merged_names.sources)
            AND NOT EXISTS (
                SELECT 1 FROM entities AS o
                WHERE
                    o.bank_id = e.bank_id AND o.id <> ALL(_merged_names.sources)
                    AND folded(o.canonical_name) = folded(e.canonical_name)
            )
        ORDER BY folded(e.canonical_name), e.id
    ) AS n
$$;

COMMENT ON FUNCTION {{ internal }}._merged_names(text, uuid[]) IS
'Internal (merge_entities): the sources'' names that become aliases of the target (not a name an entity that '
'stays still bears: homonyms keep their name).';

CREATE OR REPLACE FUNCTION {{ schema }}.merge_entities(
    bank_id text,
    source_ids uuid[],
    target_id uuid,
    dry_run boolean DEFAULT FALSE,
    reason text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(merge_entities.bank_id);
    sources uuid[];
    source uuid;
    target entities;
    one entities;
    everyone uuid[];
    taken record;
    plan jsonb;
    image jsonb;
    op_id bigint;
    n bigint;
    units uuid[];
    dates timestamptz[];
    new_aliases text[];
BEGIN
    PERFORM _check_id_array(merge_entities.source_ids, 'source_ids', 'entity');
    PERFORM _check_not_null(merge_entities.target_id, 'target_id');
    IF merge_entities.target_id = ANY(merge_entities.source_ids) THEN
        RAISE EXCEPTION 'source_ids: the target % is among the sources', merge_entities.target_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM _correction_begin(b, merge_entities.dry_run);

    target := jsonb_populate_record(NULL::entities, _find_entity(b, merge_entities.target_id, 'target_id'));
    PERFORM _check_correctable(target.id, target.entity_kind, target.canonical_name, 'target_id');
    -- In the order given: the first bad one is named.
    FOREACH source IN ARRAY merge_entities.source_ids LOOP
        one := jsonb_populate_record(NULL::entities, _find_entity(b, source, 'source_ids'));
        PERFORM _check_correctable(one.id, one.entity_kind, one.canonical_name, 'source_ids');
    END LOOP;
    sources := ARRAY(SELECT DISTINCT s.id FROM unnest(merge_entities.source_ids) AS s (id) ORDER BY s.id);
    everyone := sources || target.id;
    -- Two of them judged distinct (mark_distinct): refused (sql/055_judgements.sql).
    PERFORM _check_not_judged(b, everyone);
    -- A source's name becomes an alias of the target; it cannot be an alias
    -- of another entity already (names and aliases are disjoint), but an
    -- installation written to by hand might disagree.
    SELECT a.alias, a.entity_id INTO taken
    FROM entity_aliases AS a
    INNER JOIN entities AS e ON e.bank_id = a.bank_id AND e.id = ANY(sources)
    WHERE a.bank_id = b AND folded(a.alias) = folded(e.canonical_name) AND a.entity_id <> ALL(sources);
    IF FOUND THEN
        RAISE EXCEPTION 'source_ids: the name % is already an alias of entity %', quote_literal(taken.alias),
            taken.entity_id
            USING ERRCODE = 'unique_violation', HINT = 'remove_alias frees it.';
    END IF;
    new_aliases := _merged_names(b, sources);

    SELECT jsonb_build_object(
        'kind', 'merge',
        'bank_id', b,
        'summary', format(
            'merge %s into %s',
            string_agg(_entity_label(b, e.id, e.canonical_name), ', ' ORDER BY lower(e.canonical_name), e.id)
                FILTER (WHERE e.id <> target.id),
            _entity_label(b, target.id, target.canonical_name)
        ),
        'target', jsonb_build_object(
            'entity_id', target.id, 'name', target.canonical_name,
            'mentions', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = target.id),
            'units', (SELECT count(*) FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = target.id)
        ),
        'sources', jsonb_agg(jsonb_build_object(
            'entity_id', e.id, 'name', e.canonical_name,
            'mentions', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = e.id),
            'units', (SELECT count(*) FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = e.id),
            'aliases', (
                SELECT coalesce(jsonb_agg(a.alias ORDER BY lower(a.alias)), '[]')
                FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = e.id
            )
        ) ORDER BY lower(e.canonical_name)) FILTER (WHERE e.id <> target.id),
        'mentions_moved', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = ANY(sources)),
        'mention_count', (SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = ANY(everyone)),
        'units', (
            SELECT count(DISTINCT ue.unit_id) FROM unit_entities AS ue
            WHERE ue.bank_id = b AND ue.entity_id = ANY(everyone)
        ),
        'pairs_removed', (
            SELECT count(*) FROM entity_cooccurrences AS c
            WHERE c.bank_id = b AND c.entity_id_1 = ANY(everyone) AND c.entity_id_2 = ANY(everyone)
        ),
        'aliases_added', to_jsonb(new_aliases),
        'forwards', (
            SELECT count(*) FROM entity_forwards AS f WHERE f.bank_id = b AND f.new_id = ANY(sources)
        ) + cardinality(sources)
    )
    INTO plan
    FROM entities AS e
    WHERE e.bank_id = b AND e.id = ANY(everyone);
    IF merge_entities.dry_run THEN
        RETURN plan || jsonb_build_object('dry_run', TRUE, 'operation_id', NULL);
    END IF;

    image := jsonb_build_object(
        'entities', (SELECT jsonb_agg(to_jsonb(e) ORDER BY e.id) FROM entities AS e
            WHERE e.bank_id = b AND e.id = ANY(everyone)),
        'mentions', (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.unit_id, m.ordinal), '[]')
            FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = ANY(sources)),
        'links', (SELECT coalesce(jsonb_agg(to_jsonb(ue) ORDER BY ue.unit_id, ue.entity_id), '[]')
            FROM unit_entities AS ue
            WHERE
                ue.bank_id = b AND ue.entity_id = ANY(everyone)
                AND ue.unit_id IN (
                    SELECT s.unit_id FROM unit_entities AS s WHERE s.bank_id = b AND s.entity_id = ANY(sources)
                )),
        'pairs', _pairs_image(b, everyone),
        'orphans', _orphans(b, everyone),
        'aliases', (SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.entity_id, a.alias), '[]')
            FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = ANY(sources)),
        'forwards', (SELECT coalesce(jsonb_agg(to_jsonb(f) ORDER BY f.old_id), '[]')
            FROM entity_forwards AS f WHERE f.bank_id = b AND f.new_id = ANY(sources)),
        'judgements', _judgements_image(b, everyone)
    );
    op_id := _record_operation(b, 'merge', merge_entities.reason, everyone, plan, image);

    -- Mentions and links move to the target; a unit linked to several of
    -- them keeps one link (at the latest of their dates, as _link_units
    -- would have linked it).
    UPDATE mentions AS m
    SET entity_id = target.id, decision = 'operator', decided_at = now()
    WHERE m.bank_id = b AND m.entity_id = ANY(sources);
    WITH gone AS (
        DELETE FROM unit_entities AS ue
        WHERE
            ue.bank_id = b
            AND (
                ue.entity_id = ANY(sources)
                OR (
                    ue.entity_id = target.id
                    AND ue.unit_id IN (
                        SELECT s.unit_id FROM unit_entities AS s WHERE s.bank_id = b AND s.entity_id = ANY(sources)
                    )
                )
            )
        RETURNING ue.unit_id, ue.event_date
    )

    SELECT array_agg(g.unit_id ORDER BY g.unit_id), array_agg(g.event_date ORDER BY g.unit_id)
    INTO units, dates
    FROM (SELECT gone.unit_id, max(gone.event_date) AS event_date FROM gone GROUP BY gone.unit_id) AS g;
    INSERT INTO unit_entities (bank_id, unit_id, entity_id, event_date)
    SELECT b, u.unit_id, target.id, u.event_date
    FROM unnest(units, dates) AS u (unit_id, event_date)
    ORDER BY u.unit_id;

    -- Names: the sources' aliases and names become the target's aliases.
    UPDATE entity_aliases AS a SET entity_id = target.id
    WHERE a.bank_id = b AND a.entity_id = ANY(sources);
    INSERT INTO entity_aliases (bank_id, alias, entity_id, source)
    SELECT b, n.name, target.id, 'merge'
    FROM unnest(new_aliases) AS n (name)
    ORDER BY lower(n.name);

    -- Ids: the sources, and ids already forwarded to them, forward to the
    -- target (chains stay one step long).
    UPDATE entity_forwards AS f SET new_id = target.id
    WHERE f.bank_id = b AND f.new_id = ANY(sources);
    INSERT INTO entity_forwards (bank_id, old_id, new_id, operation_id)
    SELECT b, s.id, target.id, op_id
    FROM unnest(sources) AS s (id)
    ORDER BY s.id;

    -- Judgements: the sources' become the target's (sql/055_judgements.sql).
    PERFORM _move_judgements(b, sources, target.id);

    -- Nothing refers to the sources now. Curated ones are uncurated first:
    -- the usage roles may delete only entities the flush would (orphans_only).
    UPDATE entities AS e SET curated = FALSE
    WHERE e.bank_id = b AND e.id = ANY(sources) AND e.curated;
    DELETE FROM entities AS e WHERE e.bank_id = b AND e.id = ANY(sources);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(sources) THEN
        RAISE EXCEPTION 'source_ids: % of % entities could not be removed', cardinality(sources) - n,
            cardinality(sources)
            USING ERRCODE = 'insufficient_privilege';
    END IF;

    PERFORM _recount(b, ARRAY[target.id], TRUE);
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.merge_entities(text, uuid[], uuid, boolean, text) IS
'Operator correction: merge entities into target_id: their mentions, links and pairs move to it (counts add up; a '
'pair between merged entities disappears), their names become its aliases, their ids forward to it. One '
'transaction, ledgered (undo_operation); dry_run returns the plan without writing.';

-- ---------------------------------------------------------------------------
-- split_entity, rename_entity, add_alias, remove_alias, forget_entity
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ schema }}.split_entity(
    bank_id text,
    entity_id uuid,
    unit_ids uuid[],
    new_name text,
    dry_run boolean DEFAULT FALSE,
    reason text DEFAULT NULL,
    keep_aliases boolean DEFAULT TRUE
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(split_entity.bank_id);
    one entities;
    units uuid[];
    missing uuid;
    new_id uuid;
    plan jsonb;
    image jsonb;
    op_id bigint;
    moved_keys text[];
    shared jsonb;
    same_name boolean;
BEGIN
    PERFORM _check_not_null(split_entity.entity_id, 'entity_id');
    PERFORM _check_id_array(split_entity.unit_ids, 'unit_ids', 'unit (fact)');
    PERFORM _check_not_null(split_entity.new_name, 'new_name');
    PERFORM _check_not_null(split_entity.keep_aliases, 'keep_aliases');
    PERFORM _correction_begin(b, split_entity.dry_run);

    one := jsonb_populate_record(NULL::entities, _find_entity(b, split_entity.entity_id, 'entity_id'));
    PERFORM _check_correctable(one.id, one.entity_kind, one.canonical_name, 'entity_id');
    units := ARRAY(SELECT DISTINCT u.id FROM unnest(split_entity.unit_ids) AS u (id) ORDER BY u.id);
    SELECT u.id INTO missing
    FROM unnest(split_entity.unit_ids) WITH ORDINALITY AS u (id, ord)
    WHERE
        NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.unit_id = u.id AND m.entity_id = one.id)
        AND NOT EXISTS (
            SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.unit_id = u.id AND ue.entity_id = one.id
        )
    ORDER BY u.ord
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unit_ids: unit % holds no mention of entity % (%)', missing, one.id,
            quote_literal(one.canonical_name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id <> ALL(units)
    ) AND NOT EXISTS (
        SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id AND ue.unit_id <> ALL(units)
    ) THEN
        RAISE EXCEPTION 'unit_ids: every mention of entity % (%) is in these units; nothing would stay',
            one.id, quote_literal(one.canonical_name)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'To give the entity another name, use rename_entity.';
    END IF;
    -- The entity's own name: the split-off entity is a homonym of it (two
    -- people of one name, an over-merge repaired); later mentions of the name
    -- are told apart by attributes and context. Any other name must be free.
    same_name := fold_name(_check_text(split_entity.new_name, 'new_name', 500)) = fold_name(one.canonical_name);
    IF NOT same_name THEN
        PERFORM _check_name(b, split_entity.new_name, 'new_name');
    END IF;
    -- The source's aliases that moved mentions are written as: kept, every
    -- later mention equal to one still goes to the source, whatever its
    -- context (keep_aliases => false removes them). Folded first (see
    -- _undo_merge: fold_name() of a row is not LEAKPROOF).
    moved_keys := ARRAY(
        SELECT DISTINCT fold_name(m.mention) FROM mentions AS m
        WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id = ANY(units)
    );
    SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.alias), '[]') INTO shared
    FROM entity_aliases AS a
    WHERE a.bank_id = b AND a.entity_id = one.id AND folded(a.alias) = ANY(moved_keys);

    plan := jsonb_build_object(
        'kind', 'split',
        'bank_id', b,
        'summary', format('split %s%s from %s (%s units)', quote_literal(split_entity.new_name),
            CASE WHEN same_name THEN ' (a new homonym)' ELSE '' END, _entity_label(b, one.id, one.canonical_name),
            cardinality(units)),
        'entity', jsonb_build_object('entity_id', one.id, 'name', one.canonical_name),
        'new_entity', jsonb_build_object('entity_id', NULL, 'name', split_entity.new_name, 'homonym', same_name),
        'units', cardinality(units),
        'mentions_moved', (
            SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id = ANY(units)
        ),
        'mentions_staying', (
            SELECT count(*) FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id <> ALL(units)
        ),
        'links_moved', (
            SELECT count(*) FROM unit_entities AS ue
            WHERE ue.bank_id = b AND ue.entity_id = one.id AND ue.unit_id = ANY(units)
        ),
        'aliases_shared', (SELECT coalesce(jsonb_agg(x ->> 'alias'), '[]') FROM jsonb_array_elements(shared) AS x),
        'aliases_removed', CASE WHEN split_entity.keep_aliases THEN '[]'::jsonb ELSE (
            SELECT coalesce(jsonb_agg(x ->> 'alias'), '[]') FROM jsonb_array_elements(shared) AS x
        ) END,
        -- Moved mentions written as the source's name itself: it stays its
        -- name (a rename keeps it as an alias; remove_alias frees it then).
        'name_shared', fold_name(one.canonical_name) = ANY(moved_keys)
    );
    IF split_entity.dry_run THEN
        RETURN plan || jsonb_build_object('dry_run', TRUE, 'operation_id', NULL);
    END IF;

    new_id := gen_random_uuid();
    plan := jsonb_set(plan, '{new_entity,entity_id}', to_jsonb(new_id));
    image := jsonb_build_object(
        'entities', jsonb_build_array(to_jsonb(one)),
        'mentions', (SELECT coalesce(jsonb_agg(to_jsonb(m) ORDER BY m.unit_id, m.ordinal), '[]')
            FROM mentions AS m WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id = ANY(units)),
        'links', (SELECT coalesce(jsonb_agg(to_jsonb(ue) ORDER BY ue.unit_id), '[]')
            FROM unit_entities AS ue WHERE ue.bank_id = b AND ue.entity_id = one.id AND ue.unit_id = ANY(units)),
        'pairs', _pairs_image(b, ARRAY[one.id]),
        'orphans', _orphans(b, ARRAY[one.id]),
        'aliases', CASE WHEN split_entity.keep_aliases THEN '[]'::jsonb ELSE shared END
    );
    op_id := _record_operation(b, 'split', split_entity.reason, ARRAY[one.id, new_id], plan, image);
    IF NOT split_entity.keep_aliases THEN
        DELETE FROM entity_aliases AS a
        WHERE
            a.bank_id = b AND a.entity_id = one.id
            AND a.alias IN (SELECT x ->> 'alias' FROM jsonb_array_elements(shared) AS x);
    END IF;

    -- Created by an operator: kept when its last mention is forgotten.
    INSERT INTO entities (bank_id, id, canonical_name, entity_kind, entity_type, curated, homonym)
    VALUES (
        b, new_id, split_entity.new_name, one.entity_kind, one.entity_type, TRUE,
        CASE WHEN same_name THEN new_id END
    );
    UPDATE mentions AS m
    SET entity_id = new_id, decision = 'operator', decided_at = now()
    WHERE m.bank_id = b AND m.entity_id = one.id AND m.unit_id = ANY(units);
    WITH gone AS (
        DELETE FROM unit_entities AS ue
        WHERE ue.bank_id = b AND ue.entity_id = one.id AND ue.unit_id = ANY(units)
        RETURNING ue.unit_id, ue.event_date
    )

    INSERT INTO unit_entities (bank_id, unit_id, entity_id, event_date)
    SELECT b, gone.unit_id, new_id, gone.event_date
    FROM gone
    ORDER BY gone.unit_id;

    PERFORM _recount(b, ARRAY[one.id, new_id], TRUE);
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.split_entity(text, uuid, uuid[], text, boolean, text, boolean) IS
'Operator correction: the mentions and links of an entity in the given units (facts) move to a new entity named '
'new_name (curated; a homonym when new_name is the entity''s own name). One transaction, ledgered '
'(undo_operation); dry_run returns the plan without writing. '
'aliases_shared: the entity''s aliases that moved mentions are written as; keep_aliases => false removes them.';

CREATE OR REPLACE FUNCTION {{ schema }}.rename_entity(
    bank_id text,
    entity_id uuid,
    new_name text,
    reason text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(rename_entity.bank_id);
    one entities;
    key text;
    own_alias jsonb;
    alias_added text;
    plan jsonb;
    op_id bigint;
BEGIN
    PERFORM _check_not_null(rename_entity.entity_id, 'entity_id');
    PERFORM _check_not_null(rename_entity.new_name, 'new_name');
    PERFORM _correction_begin(b, FALSE);
    one := jsonb_populate_record(NULL::entities, _find_entity(b, rename_entity.entity_id, 'entity_id'));
    PERFORM _check_correctable(one.id, one.entity_kind, one.canonical_name, 'entity_id');
    -- Its own name in another case, or one of its own aliases, is allowed.
    key := _check_name(b, rename_entity.new_name, 'new_name', one.id);
    IF rename_entity.new_name = one.canonical_name THEN
        RAISE EXCEPTION 'new_name: entity % is already named %', one.id, quote_literal(one.canonical_name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The old name stays a name of the entity (an alias), unless only its
    -- case changes: names and aliases are one namespace after lower().
    IF key <> fold_name(one.canonical_name) THEN
        alias_added := one.canonical_name;
    END IF;
    SELECT to_jsonb(a) INTO own_alias
    FROM entity_aliases AS a
    WHERE a.bank_id = b AND a.entity_id = one.id AND folded(a.alias) = key;

    plan := jsonb_build_object(
        'kind', 'rename',
        'bank_id', b,
        'summary', format('rename %s to %s', _entity_label(b, one.id, one.canonical_name),
            quote_literal(rename_entity.new_name)),
        'entity_id', one.id,
        'old_name', one.canonical_name,
        'new_name', rename_entity.new_name,
        'alias_added', alias_added,
        'alias_removed', own_alias ->> 'alias'
    );
    op_id := _record_operation(
        b, 'rename', rename_entity.reason, ARRAY[one.id], plan,
        jsonb_build_object(
            'entities', jsonb_build_array(to_jsonb(one)),
            'aliases', CASE WHEN own_alias IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(own_alias) END
        )
    );

    DELETE FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = one.id AND folded(a.alias) = key;
    -- Named by an operator: kept when its last mention is forgotten.
    UPDATE entities AS e SET canonical_name = rename_entity.new_name, curated = TRUE
    WHERE e.bank_id = b AND e.id = one.id;
    IF alias_added IS NOT NULL THEN
        INSERT INTO entity_aliases (bank_id, alias, entity_id, source) VALUES (b, alias_added, one.id, 'rename');
    END IF;
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.rename_entity(text, uuid, text, text) IS
'Operator correction: give an entity another canonical name; the old name stays as an alias, and the entity is '
'curated. Ledgered (undo_operation).';

CREATE OR REPLACE FUNCTION {{ schema }}.add_alias(bank_id text, entity_id uuid, alias text)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(add_alias.bank_id);
    one entities;
    plan jsonb;
    op_id bigint;
BEGIN
    PERFORM _check_not_null(add_alias.entity_id, 'entity_id');
    PERFORM _check_not_null(add_alias.alias, 'alias');
    PERFORM _correction_begin(b, FALSE);
    one := jsonb_populate_record(NULL::entities, _find_entity(b, add_alias.entity_id, 'entity_id'));
    PERFORM _check_correctable(one.id, one.entity_kind, one.canonical_name, 'entity_id');
    IF fold_name(add_alias.alias) = fold_name(one.canonical_name) THEN
        RAISE EXCEPTION 'alias: % is the name of entity % itself', quote_literal(add_alias.alias), one.id
            USING ERRCODE = 'unique_violation';
    END IF;
    PERFORM _check_name(b, add_alias.alias, 'alias');

    plan := jsonb_build_object(
        'kind', 'add_alias',
        'bank_id', b,
        'summary', format('add alias %s to %s', quote_literal(add_alias.alias),
            _entity_label(b, one.id, one.canonical_name)),
        'entity_id', one.id,
        'name', one.canonical_name,
        'alias', add_alias.alias
    );
    op_id := _record_operation(b, 'add_alias', NULL, ARRAY[one.id], plan, '{"aliases": []}');
    INSERT INTO entity_aliases (bank_id, alias, entity_id, source) VALUES (b, add_alias.alias, one.id, 'operator');
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.add_alias(text, uuid, text) IS
'Operator correction: another name for an entity (unique per bank after lower(), never a canonical name); a mention '
'equal to it resolves to the entity. Ledgered (undo_operation).';

CREATE OR REPLACE FUNCTION {{ schema }}.remove_alias(bank_id text, alias text)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(remove_alias.bank_id);
    one record;
    plan jsonb;
    op_id bigint;
BEGIN
    PERFORM _check_not_null(remove_alias.alias, 'alias');
    PERFORM _correction_begin(b, FALSE);
    SELECT a.*, e.canonical_name INTO one
    FROM entity_aliases AS a
    INNER JOIN entities AS e ON a.bank_id = e.bank_id AND a.entity_id = e.id
    WHERE a.bank_id = b AND folded(a.alias) = fold_name(remove_alias.alias);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'alias: % is not an alias in bank %', quote_literal(remove_alias.alias), quote_literal(b)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    plan := jsonb_build_object(
        'kind', 'remove_alias',
        'bank_id', b,
        'summary', format('remove alias %s of %s', quote_literal(one.alias),
            _entity_label(b, one.entity_id, one.canonical_name)),
        'entity_id', one.entity_id,
        'name', one.canonical_name,
        'alias', one.alias,
        'source', one.source
    );
    op_id := _record_operation(
        b, 'remove_alias', NULL, ARRAY[one.entity_id], plan,
        jsonb_build_object('aliases', (
            SELECT jsonb_agg(to_jsonb(a)) FROM entity_aliases AS a
            WHERE a.bank_id = b AND a.entity_id = one.entity_id AND a.alias = one.alias
        ))
    );
    DELETE FROM entity_aliases AS a WHERE a.bank_id = b AND a.entity_id = one.entity_id AND a.alias = one.alias;
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.remove_alias(text, text) IS
'Operator correction: remove an alias (matched case-insensitively); mentions already resolved through it stay. '
'Ledgered (undo_operation).';
