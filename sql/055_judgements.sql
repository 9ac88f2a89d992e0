-- Judgements: an operator's word that two entities are different things.
--
-- mark_distinct records a cannot-link between two entities (a row of
-- entity_judgements, the pair in id order); while it stands, merge_entities
-- refuses any merge that would make the two one entity: the two themselves,
-- a source and the target, or two sources (_check_not_judged). Judgements
-- follow identity: an id merged away stands for the entity it became (mark
-- and unmark follow current_entity), a merge moves its sources' judgements
-- to the target, a split leaves them on the entity split from, and
-- forget_entity removes the forgotten entity's. Mark and unmark are
-- corrections like the others (sql/050_corrections.sql): checked, curated,
-- run under the bank's lock, ledgered, undone by undo_operation.

CREATE OR REPLACE FUNCTION {{ internal }}._judged_entity(bank_id text, entity_id uuid, argument text)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- The entity an id stands for now (an id merged away: the entity it was
    -- merged into), as jsonb, with the id as given; an error naming the
    -- argument for NULL or an id the bank never had (or forgot).
    PERFORM _check_not_null(_judged_entity.entity_id, argument);
    RETURN _find_entity(
        _judged_entity.bank_id,
        coalesce(_current_entity(_judged_entity.bank_id, _judged_entity.entity_id), _judged_entity.entity_id),
        argument
    ) || jsonb_build_object('given_id', _judged_entity.entity_id);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._judged_entity(text, uuid, text) IS
'Internal: the entity an id stands for now (following merges), as jsonb with given_id, or an error naming the '
'argument (22004, 22023).';

CREATE OR REPLACE FUNCTION {{ internal }}._judged_pair(bank_id text, entity_a uuid, entity_b uuid)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    one jsonb := _judged_entity(_judged_pair.bank_id, _judged_pair.entity_a, 'entity_a');
    other jsonb := _judged_entity(_judged_pair.bank_id, _judged_pair.entity_b, 'entity_b');
BEGIN
    -- Both entities of a mark or unmark, checked: two different entities of
    -- the bank (after following merges). Returns {a, b, pair: [lo, hi]}.
    IF one ->> 'id' = other ->> 'id' THEN
        IF _judged_pair.entity_a = _judged_pair.entity_b THEN
            RAISE EXCEPTION 'entity_b: % is entity_a itself; a judgement is on two different entities',
                _judged_pair.entity_b
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        RAISE EXCEPTION 'entity_b: % and % are the same entity now, % (%)',
            _judged_pair.entity_a, _judged_pair.entity_b, one ->> 'id', quote_literal(one ->> 'canonical_name')
            USING
                ERRCODE = 'invalid_parameter_value',
                HINT = 'One was merged into the other: undo the merge, or split the entity, first.';
    END IF;
    RETURN jsonb_build_object(
        'a', one,
        'b', other,
        'pair', jsonb_build_array(
            least((one ->> 'id')::uuid, (other ->> 'id')::uuid), greatest((one ->> 'id')::uuid, (other ->> 'id')::uuid)
        )
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._judged_pair(text, uuid, uuid) IS
'Internal: the two entities of a judgement, checked (each exists, after following merges; not the same one; '
'22004, 22023), and the pair in id order.';

CREATE OR REPLACE FUNCTION {{ internal }}._judgement_entity(judged jsonb)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- One side of a judgement, as a plan shows it.
    SELECT jsonb_build_object(
        'entity_id', _judgement_entity.judged -> 'id',
        'name', _judgement_entity.judged -> 'canonical_name',
        'forwarded_from', CASE
            WHEN _judgement_entity.judged ->> 'given_id' <> _judgement_entity.judged ->> 'id'
                THEN _judgement_entity.judged -> 'given_id'
        END
    )
$$;

COMMENT ON FUNCTION {{ internal }}._judgement_entity(jsonb) IS
'Internal: one entity of a judgement as a plan shows it (entity_id, name, forwarded_from: the merged id given).';

CREATE OR REPLACE FUNCTION {{ internal }}._judgement_plan(bank_id text, verb text, judged jsonb)
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- What mark_distinct's and unmark_distinct's plans share: the two sides
    -- and a summary naming them as corrections do (_entity_label).
    SELECT jsonb_build_object(
        'kind', _judgement_plan.verb || '_distinct',
        'bank_id', _judgement_plan.bank_id,
        'summary', format('%s %s and %s distinct',
            _judgement_plan.verb,
            _entity_label(_judgement_plan.bank_id, (_judgement_plan.judged -> 'a' ->> 'id')::uuid,
                          _judgement_plan.judged -> 'a' ->> 'canonical_name'),
            _entity_label(_judgement_plan.bank_id, (_judgement_plan.judged -> 'b' ->> 'id')::uuid,
                          _judgement_plan.judged -> 'b' ->> 'canonical_name')),
        'entity_a', _judgement_entity(_judgement_plan.judged -> 'a'),
        'entity_b', _judgement_entity(_judgement_plan.judged -> 'b'),
        'pair', _judgement_plan.judged -> 'pair'
    )
$$;

COMMENT ON FUNCTION {{ internal }}._judgement_plan(text, text, jsonb) IS
'The plan mark_distinct and unmark_distinct (verb: mark or unmark) share for a judged pair (_judged_pair): kind, '
'bank, summary, both sides.';

CREATE OR REPLACE FUNCTION {{ schema }}.mark_distinct(
    bank_id text,
    entity_a uuid,
    entity_b uuid,
    reason text DEFAULT NULL,
    dry_run boolean DEFAULT FALSE
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(mark_distinct.bank_id);
    judged jsonb;
    lo uuid;
    hi uuid;
    existing record;
    plan jsonb;
    op_id bigint;
BEGIN
    PERFORM _check_not_null(mark_distinct.entity_a, 'entity_a');
    PERFORM _check_not_null(mark_distinct.entity_b, 'entity_b');
    PERFORM _correction_begin(b, mark_distinct.dry_run);
    judged := _judged_pair(b, mark_distinct.entity_a, mark_distinct.entity_b);
    lo := (judged -> 'pair' ->> 0)::uuid;
    hi := (judged -> 'pair' ->> 1)::uuid;
    SELECT j.created_at, j.created_by INTO existing
    FROM entity_judgements AS j
    WHERE j.bank_id = b AND j.entity_a = lo AND j.entity_b = hi;
    IF FOUND THEN
        RAISE EXCEPTION 'entity_b: % (%) and % (%) are already judged distinct (by %, at %)',
            judged -> 'a' ->> 'id', quote_literal(judged -> 'a' ->> 'canonical_name'),
            judged -> 'b' ->> 'id', quote_literal(judged -> 'b' ->> 'canonical_name'),
            quote_ident(existing.created_by), existing.created_at
            USING ERRCODE = 'unique_violation';
    END IF;

    plan := _judgement_plan(b, 'mark', judged) || jsonb_build_object('reason', mark_distinct.reason);
    IF mark_distinct.dry_run THEN
        RETURN plan || jsonb_build_object('dry_run', TRUE, 'operation_id', NULL);
    END IF;
    op_id := _record_operation(b, 'mark_distinct', mark_distinct.reason, ARRAY[lo, hi], plan, '{"judgements": []}');
    INSERT INTO entity_judgements (bank_id, entity_a, entity_b, judgement, reason)
    VALUES (b, lo, hi, 'distinct', mark_distinct.reason);
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.mark_distinct(text, uuid, uuid, text, boolean) IS
'Operator correction: judge two entities distinct; while the judgement stands, merge_entities refuses (23P01) any '
'merge that would make them one. An id merged away stands for the entity it became. Ledgered (undo_operation); '
'dry_run returns the plan without writing.';

CREATE OR REPLACE FUNCTION {{ schema }}.unmark_distinct(
    bank_id text,
    entity_a uuid,
    entity_b uuid,
    dry_run boolean DEFAULT FALSE
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(unmark_distinct.bank_id);
    judged jsonb;
    lo uuid;
    hi uuid;
    row_image jsonb;
    plan jsonb;
    op_id bigint;
BEGIN
    PERFORM _check_not_null(unmark_distinct.entity_a, 'entity_a');
    PERFORM _check_not_null(unmark_distinct.entity_b, 'entity_b');
    PERFORM _correction_begin(b, unmark_distinct.dry_run);
    judged := _judged_pair(b, unmark_distinct.entity_a, unmark_distinct.entity_b);
    lo := (judged -> 'pair' ->> 0)::uuid;
    hi := (judged -> 'pair' ->> 1)::uuid;
    SELECT to_jsonb(j) INTO row_image
    FROM entity_judgements AS j
    WHERE j.bank_id = b AND j.entity_a = lo AND j.entity_b = hi;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'entity_b: % (%) and % (%) are not judged distinct',
            judged -> 'a' ->> 'id', quote_literal(judged -> 'a' ->> 'canonical_name'),
            judged -> 'b' ->> 'id', quote_literal(judged -> 'b' ->> 'canonical_name')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    plan := _judgement_plan(b, 'unmark', judged) || jsonb_build_object('judgement', row_image - 'bank_id');
    IF unmark_distinct.dry_run THEN
        RETURN plan || jsonb_build_object('dry_run', TRUE, 'operation_id', NULL);
    END IF;
    op_id := _record_operation(
        b, 'unmark_distinct', NULL, ARRAY[lo, hi], plan, jsonb_build_object('judgements', jsonb_build_array(row_image))
    );
    DELETE FROM entity_judgements AS j WHERE j.bank_id = b AND j.entity_a = lo AND j.entity_b = hi;
    RETURN plan || jsonb_build_object('dry_run', FALSE, 'operation_id', op_id);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.unmark_distinct(text, uuid, uuid, boolean) IS
'Operator correction: remove the judgement that two entities are distinct (they may be merged again). An id '
'merged away stands for the entity it became. Ledgered (undo_operation); dry_run returns the plan without writing.';

CREATE OR REPLACE FUNCTION {{ schema }}.list_judgements(bank_id text, entity_id uuid DEFAULT NULL)
RETURNS TABLE (
    entity_a uuid,
    name_a text,
    entity_b uuid,
    name_b text,
    judgement text,
    reason text,
    created_at timestamptz,
    created_by name
)
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(list_judgements.bank_id);
    one uuid;
BEGIN
    -- Every judgement of the bank, or those of one entity (an id merged
    -- away: of the entity it became), by the names of the pair.
    IF list_judgements.entity_id IS NOT NULL THEN
        one := (_judged_entity(b, list_judgements.entity_id, 'entity_id') ->> 'id')::uuid;
    END IF;
    RETURN QUERY
    SELECT j.entity_a, x.canonical_name, j.entity_b, y.canonical_name, j.judgement, j.reason, j.created_at,
        j.created_by
    FROM entity_judgements AS j
    INNER JOIN entities AS x ON j.bank_id = x.bank_id AND j.entity_a = x.id
    INNER JOIN entities AS y ON j.bank_id = y.bank_id AND j.entity_b = y.id
    WHERE j.bank_id = b AND (one IS NULL OR j.entity_a = one OR j.entity_b = one)
    ORDER BY lower(x.canonical_name), lower(y.canonical_name), j.entity_a, j.entity_b;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.list_judgements(text, uuid) IS
'The bank''s judgements (mark_distinct), or those of one entity (following merges): the pair by id and name, why, '
'when and by whom.';

-- ---------------------------------------------------------------------------
-- What the other corrections do with judgements (sql/051_merge_split_rename.sql to sql/054_undo.sql)
-- ---------------------------------------------------------------------------

-- Whether two entities are judged distinct, whichever is named first (a
-- judgement is stored once, in id order: entity_judgements_order).
CREATE OR REPLACE FUNCTION {{ internal }}._judged_distinct(bank_id text, one uuid, other uuid)
RETURNS boolean
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT EXISTS (
        SELECT 1 FROM entity_judgements AS j
        WHERE
            j.bank_id = _judged_distinct.bank_id
            AND j.entity_a = least(_judged_distinct.one, _judged_distinct.other)
            AND j.entity_b = greatest(_judged_distinct.one, _judged_distinct.other)
    )
$$;

COMMENT ON FUNCTION {{ internal }}._judged_distinct(text, uuid, uuid) IS
'Internal: whether the two entities are judged distinct (in either order).';

CREATE OR REPLACE FUNCTION {{ internal }}._check_not_judged(bank_id text, entity_ids uuid[])
RETURNS void
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    hit record;
BEGIN
    -- merge_entities: refused while two of the entities it would make one
    -- are judged distinct (the judgement names them both).
    SELECT j.entity_a, x.canonical_name AS name_a, j.entity_b, y.canonical_name AS name_b, j.created_by,
        j.created_at, j.reason
    INTO hit
    FROM entity_judgements AS j
    INNER JOIN entities AS x ON j.bank_id = x.bank_id AND j.entity_a = x.id
    INNER JOIN entities AS y ON j.bank_id = y.bank_id AND j.entity_b = y.id
    WHERE
        j.bank_id = _check_not_judged.bank_id
        AND j.entity_a = ANY(_check_not_judged.entity_ids) AND j.entity_b = ANY(_check_not_judged.entity_ids)
    ORDER BY j.entity_a, j.entity_b
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'source_ids: % (%) and % (%) are judged distinct (by %, at %)%; the merge would make them one',
            hit.entity_a, quote_literal(hit.name_a), hit.entity_b, quote_literal(hit.name_b),
            quote_ident(hit.created_by), hit.created_at, coalesce(': ' || quote_literal(hit.reason), '')
            USING
                ERRCODE = 'exclusion_violation',
                HINT = format('To merge them, remove the judgement first: SELECT %I.unmark_distinct(%L, %L, %L);',
                    current_schema(), _check_not_judged.bank_id, hit.entity_a, hit.entity_b);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_not_judged(text, uuid[]) IS
'Internal (merge_entities): refuse (23P01) when two of these entities are judged distinct, naming both.';

CREATE OR REPLACE FUNCTION {{ internal }}._judgements_image(bank_id text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Every judgement of these entities, as rows for a before-image.
    RETURN (
        SELECT coalesce(jsonb_agg(to_jsonb(j) ORDER BY j.entity_a, j.entity_b), '[]')
        FROM entity_judgements AS j
        WHERE
            j.bank_id = _judgements_image.bank_id
            AND (j.entity_a = ANY(_judgements_image.entity_ids) OR j.entity_b = ANY(_judgements_image.entity_ids))
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._judgements_image(text, uuid[]) IS
'Internal: every judgement of these entities, as rows for a before-image.';

CREATE OR REPLACE FUNCTION {{ internal }}._move_judgements(bank_id text, sources uuid[], target uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- merge_entities: the sources' judgements become the target's, one per
    -- other entity (the target's own, or else the earliest, is kept). None
    -- is between two of the merged entities: _check_not_judged refused that.
    INSERT INTO entity_judgements AS j (bank_id, entity_a, entity_b, judgement, reason, created_at, created_by)
    SELECT DISTINCT ON (o.other)
        _move_judgements.bank_id,
        least(_move_judgements.target, o.other),
        greatest(_move_judgements.target, o.other),
        o.judgement, o.reason, o.created_at, o.created_by
    FROM (
        SELECT
            CASE WHEN s.entity_a = ANY(_move_judgements.sources) THEN s.entity_b ELSE s.entity_a END AS other,
            s.judgement, s.reason, s.created_at, s.created_by
        FROM entity_judgements AS s
        WHERE
            s.bank_id = _move_judgements.bank_id
            AND (s.entity_a = ANY(_move_judgements.sources) OR s.entity_b = ANY(_move_judgements.sources))
    ) AS o
    ORDER BY o.other, o.created_at
    ON CONFLICT ON CONSTRAINT entity_judgements_pkey DO NOTHING;
    DELETE FROM entity_judgements AS j
    WHERE
        j.bank_id = _move_judgements.bank_id
        AND (j.entity_a = ANY(_move_judgements.sources) OR j.entity_b = ANY(_move_judgements.sources));
END;
$$;

COMMENT ON FUNCTION {{ internal }}._move_judgements(text, uuid[], uuid) IS
'Internal (merge_entities): move the sources'' judgements to the target, one per other entity.';

CREATE OR REPLACE FUNCTION {{ internal }}._forget_judgements(bank_id text, entity_id uuid)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- forget_entity: the entity's judgements go with it (its before-image
    -- holds them: _judgements_image).
    DELETE FROM entity_judgements AS j
    WHERE
        j.bank_id = _forget_judgements.bank_id
        AND (j.entity_a = _forget_judgements.entity_id OR j.entity_b = _forget_judgements.entity_id);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._forget_judgements(text, uuid) IS
'Internal (forget_entity): remove the judgements of an entity.';

CREATE OR REPLACE FUNCTION {{ internal }}._restore_judgements(
    bank_id text, image jsonb, complete_for uuid[] DEFAULT '{}'
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    r record;
    x uuid;
    y uuid;
    n bigint := 0;
    inserted bigint;
BEGIN
    -- Undo: put back the judgements of a before-image. When the image holds
    -- every judgement of some entities as they were (complete_for: a
    -- merge's), the judgements of theirs it does not hold go first (those
    -- the operation moved to them). An entity merged away since stands for
    -- the one it became; a judgement whose entity is gone stays gone. Row
    -- by row: Citus refuses a statement correlating a table with the rows
    -- of a set-returning function, and judgements are few.
    IF cardinality(_restore_judgements.complete_for) > 0 THEN
        -- The containment test is a PL/pgSQL expression, not part of the
        -- DELETE: Citus refuses STABLE functions over column references in
        -- a modifying statement.
        FOR r IN
            SELECT j.entity_a, j.entity_b FROM entity_judgements AS j
            WHERE
                j.bank_id = _restore_judgements.bank_id
                AND (
                    j.entity_a = ANY(_restore_judgements.complete_for)
                    OR j.entity_b = ANY(_restore_judgements.complete_for)
                )
        LOOP
            CONTINUE WHEN coalesce(_restore_judgements.image, '[]') @> jsonb_build_array(
                jsonb_build_object('entity_a', r.entity_a, 'entity_b', r.entity_b)
            );
            DELETE FROM entity_judgements AS j
            WHERE
                j.bank_id = _restore_judgements.bank_id
                AND j.entity_a = r.entity_a
                AND j.entity_b = r.entity_b;
        END LOOP;
    END IF;
    FOR r IN
        SELECT * FROM jsonb_populate_recordset(NULL::entity_judgements, coalesce(_restore_judgements.image, '[]'))
    LOOP
        x := _current_entity(_restore_judgements.bank_id, r.entity_a);
        y := _current_entity(_restore_judgements.bank_id, r.entity_b);
        CONTINUE WHEN x IS NULL OR y IS NULL OR x = y;
        INSERT INTO entity_judgements (bank_id, entity_a, entity_b, judgement, reason, created_at, created_by)
        VALUES (_restore_judgements.bank_id, least(x, y), greatest(x, y), r.judgement, r.reason, r.created_at,
            r.created_by)
        ON CONFLICT ON CONSTRAINT entity_judgements_pkey DO NOTHING;
        GET DIAGNOSTICS inserted = ROW_COUNT;
        n := n + inserted;
    END LOOP;
    RETURN n;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._restore_judgements(text, jsonb, uuid[]) IS
'Internal (undo): put back a before-image''s judgements (following merges since; those of a gone entity stay gone); '
'complete_for: the entities whose judgements the image holds all of, whose others go first. Returns how many.';
