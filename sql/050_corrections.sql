-- ---------------------------------------------------------------------------
-- Operator corrections: plan → apply → ledger → undo
-- ---------------------------------------------------------------------------
-- Each correction is one function and one transaction on one bank:
--   1. check the arguments (nothing is read or locked for a call that cannot
--      succeed) and that the caller may curate the bank;
--   2. take the bank's lock EXCLUSIVE (no writer of the bank is in flight,
--      none starts until commit; plpython/locks.py) and apply the bank's
--      queued statistics, so the stored numbers equal the record;
--   3. plan: what would change, as jsonb (a dry run returns it and stops);
--   4. ledger: an operations row with the plan and the before-image, the
--      rows as they were, which undo_operation restores;
--   5. apply, then recompute the numbers of every entity and pair it
--      touched from the record (_recount), as rebuild_stats derives them.
-- Only entities nothing refers to are ever deleted: a merged or forgotten
-- entity loses its mentions and links first (the usage roles' restrictive
-- policy orphans_only lets them delete no other, curators included).

CREATE OR REPLACE FUNCTION {{ internal }}._check_curator(bank_id text)
RETURNS void
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    owner oid;
    curators name[];
BEGIN
    -- Superusers and the tables' owner may; anyone else needs a binding of
    -- the bank with may_curate (grant_curation) to a role it has the
    -- privileges of. The curator role is checked first: bank_roles is
    -- readable only by the roles that have bindings to read (bank users,
    -- curators).
    IF (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user) THEN
        RETURN;
    END IF;
    SELECT c.relowner INTO owner FROM pg_class AS c WHERE c.oid = 'banks'::regclass;
    IF pg_has_role(owner, 'USAGE') THEN
        RETURN;
    END IF;
    -- Two statements: a statement reading bank_roles needs the privilege
    -- to, whether or not its first condition holds. The bank's curators are
    -- read before the catalog is: Citus would run a subquery on pg_roles
    -- next to a distributed table as a query of pg_authid, which only
    -- superusers may read.
    IF pg_has_role(_role_name('curator'), 'USAGE') THEN
        curators := ARRAY(
            SELECT b.role_name FROM bank_roles AS b WHERE b.bank_id = _check_curator.bank_id AND b.may_curate
        );
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = ANY(curators) AND pg_has_role(r.oid, 'USAGE')) THEN
            RETURN;
        END IF;
    END IF;
    RAISE EXCEPTION 'bank_id: role % may not correct bank %', quote_ident(current_user), quote_literal(bank_id)
        USING
            ERRCODE = 'insufficient_privilege',
            HINT = format('An administrator grants it: SELECT %I.grant_curation(%L, %L);',
                current_schema(), bank_id, current_user);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_curator(text) IS
'Internal: refuse (42501) a caller who may not correct the bank: not a superuser, not the owner, no grant_curation.';

CREATE OR REPLACE FUNCTION {{ internal }}._correction_lock(bank_id text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- A correction's hold on the bank: exclusive, so no writer is in flight,
    -- and its queued statistics applied, so the numbers it reads are whole.
    PERFORM _lock_bank(_correction_lock.bank_id, TRUE);
    PERFORM _flush_queue(_correction_lock.bank_id, FALSE);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._correction_lock(text) IS
'Internal: lock the bank exclusive and apply its queued statistics (an applied correction; reresolve''s plan).';

-- Homonyms (entities of the bank sharing a name, migration 0018) are named
-- apart wherever a name is shown: by a distinguishing attribute the entity
-- holds (its most mentioned, e.g. a birth date) and the first 8 digits of
-- its id, so that "merge 'Maria Schmidt' into 'Maria Schmidt'" says which.
-- One rule for corrections' summaries (_entity_label) and the client's
-- tables (Client.homonym_labels).
CREATE OR REPLACE FUNCTION {{ internal }}._homonym_tag(bank_id text, entity_id uuid, name text)
RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    telling text[];
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM entities AS o
        WHERE
            o.bank_id = _homonym_tag.bank_id AND folded(o.canonical_name) = fold_name(_homonym_tag.name)
            AND o.id <> _homonym_tag.entity_id
    ) THEN
        RETURN NULL;
    END IF;
    -- The bank's settings, read once (plpgsql: the entity_attributes view is
    -- made after this file).
    telling := _attribute_names(_effective_settings(_homonym_tag.bank_id), 'distinguishing');
    RETURN concat_ws(', ',
        (
            SELECT a.attribute || ' ' || a.value
            FROM entity_attributes AS a
            WHERE a.bank_id = _homonym_tag.bank_id AND a.entity_id = _homonym_tag.entity_id AND a.attribute = ANY(telling)
            ORDER BY a.mentions DESC, a.attribute, a.value
            LIMIT 1
        ),
        left(_homonym_tag.entity_id::text, 8)
    );
END;
$$;

COMMENT ON FUNCTION {{ internal }}._homonym_tag(text, uuid, text) IS
'Internal: what tells an entity named name from its homonyms (NULL when no other entity of the bank bears the '
'name): its most mentioned distinguishing attribute, if any, and the first 8 digits of its id.';

CREATE OR REPLACE FUNCTION {{ internal }}._entity_label(bank_id text, entity_id uuid, name text)
RETURNS text
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT quote_literal(_entity_label.name)
        || coalesce(' (' || _homonym_tag(_entity_label.bank_id, _entity_label.entity_id, _entity_label.name) || ')', '')
$$;

COMMENT ON FUNCTION {{ internal }}._entity_label(text, uuid, text) IS
'Internal: an entity as a correction''s summary names it: its name quoted, and what tells it from its homonyms '
'(_homonym_tag) when another entity of the bank bears the name.';

CREATE OR REPLACE FUNCTION {{ internal }}._correction_begin(bank_id text, dry_run boolean)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(_correction_begin.bank_id);
BEGIN
    PERFORM _check_not_null(_correction_begin.dry_run, 'dry_run');
    PERFORM _check_curator(b);
    IF _correction_begin.dry_run THEN
        -- A plan reads the record as it is; it writes and locks nothing.
        RETURN b;
    END IF;
    -- Under REPEATABLE READ the snapshot would predate the lock: writers
    -- that committed while we waited for it would be invisible, and their
    -- mentions of a merged entity lost with it.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'corrections run under READ COMMITTED; this transaction is %',
            upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state';
    END IF;
    PERFORM _correction_lock(b);
    RETURN b;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._correction_begin(text, boolean) IS
'Internal: the start of every correction: bank_id and dry_run checked, curation checked; unless a dry run, '
'the bank locked exclusive and its queued statistics applied.';

CREATE OR REPLACE FUNCTION {{ internal }}._find_entity(bank_id text, entity_id uuid, argument text)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    found_row jsonb;
    forwarded uuid;
BEGIN
    -- The row as jsonb (callers: jsonb_populate_record(NULL::entities, ...)):
    -- Citus propagates to the workers no function whose signature uses a
    -- distributed table's row type, and corrections run on the bank's worker.
    PERFORM _check_not_null(_find_entity.entity_id, argument);
    SELECT to_jsonb(e) INTO found_row
    FROM entities AS e
    WHERE e.bank_id = _find_entity.bank_id AND e.id = _find_entity.entity_id;
    IF FOUND THEN
        RETURN found_row;
    END IF;
    SELECT f.new_id INTO forwarded
    FROM entity_forwards AS f
    WHERE f.bank_id = _find_entity.bank_id AND f.old_id = _find_entity.entity_id;
    IF forwarded IS NOT NULL THEN
        RAISE EXCEPTION '%: % is not an entity of bank % any more: it was merged into %',
            argument, _find_entity.entity_id, quote_literal(_find_entity.bank_id), forwarded
            USING ERRCODE = 'invalid_parameter_value',
            HINT = 'current_entity(bank_id, id) follows merges.';
    END IF;
    RAISE EXCEPTION '%: % is not an entity of bank %', argument, _find_entity.entity_id,
        quote_literal(_find_entity.bank_id)
        USING ERRCODE = 'invalid_parameter_value';
END;
$$;

COMMENT ON FUNCTION {{ internal }}._find_entity(text, uuid, text) IS
'Internal: an entity of the bank by id, as jsonb (its row), or an error naming the argument (22004, 22023; says '
'where a merged id went).';

CREATE OR REPLACE FUNCTION {{ internal }}._check_correctable(
    entity_id uuid, entity_kind text, canonical_name text, argument text
)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- A label mention resolves by exact name only (never through an alias),
    -- and its names come from the bank's vocabulary: merging, splitting or
    -- renaming a label would make names its mentions can no longer reach.
    IF _check_correctable.entity_kind = 'label' THEN
        RAISE EXCEPTION '%: % (%) is a label; labels are corrected in the vocabulary (set_entity_labels)',
            argument, _check_correctable.entity_id, quote_literal(_check_correctable.canonical_name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_correctable(uuid, text, text, text) IS
'Internal: refuse a label entity where names are corrected (merge, split, rename, aliases).';

CREATE OR REPLACE FUNCTION {{ internal }}._check_name(
    bank_id text, new_name text, argument text, own uuid DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    key text;
    hit record;
BEGIN
    -- A name given by an operator: a canonical name or an alias. Names and
    -- aliases are one namespace per bank after lower() (a mention equal to
    -- either resolves to its entity), so it may be neither another
    -- entity's name nor another entity's alias.
    -- 500: entities_name_length.
    key := fold_name(_check_text(new_name, argument, 500));
    SELECT e.id, e.canonical_name INTO hit
    FROM entities AS e
    WHERE
        e.bank_id = _check_name.bank_id AND folded(e.canonical_name) = key
        AND e.id IS DISTINCT FROM _check_name.own;
    IF FOUND THEN
        RAISE EXCEPTION '%: % is already the name of entity % (%)',
            argument, quote_literal(new_name), hit.id, quote_literal(hit.canonical_name)
            USING
                ERRCODE = 'unique_violation',
                HINT = 'To make them one entity, merge them (merge_entities): the name stays as an alias.';
    END IF;
    SELECT a.entity_id, a.alias, e.canonical_name INTO hit
    FROM entity_aliases AS a
    INNER JOIN entities AS e ON a.bank_id = e.bank_id AND a.entity_id = e.id
    WHERE
        a.bank_id = _check_name.bank_id AND folded(a.alias) = key
        AND a.entity_id IS DISTINCT FROM _check_name.own;
    IF FOUND THEN
        RAISE EXCEPTION '%: % is already an alias of entity % (%)',
            argument, quote_literal(hit.alias), hit.entity_id, quote_literal(hit.canonical_name)
            USING
                ERRCODE = 'unique_violation',
                HINT = 'remove_alias frees it.';
    END IF;
    RETURN key;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_name(text, text, text, uuid) IS
'Internal: check a name an operator gives (1 to 500 characters, not blank, neither another entity''s name nor '
'its alias); returns it folded.';

CREATE OR REPLACE FUNCTION {{ internal }}._record_operation(
    bank_id text, kind text, reason text, entity_ids uuid[], plan jsonb, before_image jsonb
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    op_id bigint;
BEGIN
    INSERT INTO operations AS o (bank_id, kind, reason, entity_ids, plan, before_image)
    VALUES (
        _record_operation.bank_id, _record_operation.kind, _record_operation.reason,
        _record_operation.entity_ids, _record_operation.plan, _record_operation.before_image
    )
    RETURNING o.id INTO op_id;
    RETURN op_id;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._record_operation(text, text, text, uuid[], jsonb, jsonb) IS
'Internal: write a correction to the ledger (who: current_user; when: now()); returns its id.';

CREATE OR REPLACE FUNCTION {{ internal }}._pairs_image(bank_id text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.entity_id_1, c.entity_id_2), '[]')
    FROM entity_cooccurrences AS c
    WHERE
        c.bank_id = _pairs_image.bank_id
        AND (c.entity_id_1 = ANY(_pairs_image.entity_ids) OR c.entity_id_2 = ANY(_pairs_image.entity_ids))
$$;

COMMENT ON FUNCTION {{ internal }}._pairs_image(text, uuid[]) IS
'Internal: every pair with one of these entities, as rows for a before-image.';

CREATE OR REPLACE FUNCTION {{ internal }}._restore_pairs(bank_id text, entity_ids uuid[], image jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    present uuid[];
BEGIN
    -- The pairs of these entities as the image holds them, then corrected
    -- to the record (nothing to correct unless facts came or went since).
    DELETE FROM entity_cooccurrences AS c
    WHERE
        c.bank_id = _restore_pairs.bank_id
        AND (c.entity_id_1 = ANY(_restore_pairs.entity_ids) OR c.entity_id_2 = ANY(_restore_pairs.entity_ids));
    -- Which of the image's entities exist, first: Citus refuses a subquery
    -- on a table correlated with the rows of a set-returning function.
    present := ARRAY(
        SELECT DISTINCT x.id
        FROM jsonb_populate_recordset(NULL::entity_cooccurrences, _restore_pairs.image) AS r,
            LATERAL (VALUES (r.entity_id_1), (r.entity_id_2)) AS x (id)
    );
    present := ARRAY(
        SELECT e.id FROM entities AS e WHERE e.bank_id = _restore_pairs.bank_id AND e.id = ANY(present)
    );
    INSERT INTO entity_cooccurrences
    SELECT r.*
    FROM jsonb_populate_recordset(NULL::entity_cooccurrences, _restore_pairs.image) AS r
    WHERE r.entity_id_1 = ANY(present) AND r.entity_id_2 = ANY(present)
    ORDER BY r.entity_id_1, r.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO NOTHING;
    PERFORM _recount(_restore_pairs.bank_id, _restore_pairs.entity_ids, FALSE);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._restore_pairs(text, uuid[], jsonb) IS
'Internal (undo): put back the pairs of these entities from a before-image, then recount them from the record.';

CREATE OR REPLACE FUNCTION {{ internal }}._relink_mentions(bank_id text, unit_ids uuid[], entity_ids uuid[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    units uuid[];
    linked uuid[];
    dates timestamptz[];
BEGIN
    -- A unit with links links every entity its mentions went to. After an
    -- undo restores a unit's links from the image, a mention the unit
    -- gained since (retain on the same unit) keeps its link, dated as the
    -- unit's other links. Read first, then inserted: Citus refuses an
    -- INSERT ... SELECT with subqueries here.
    SELECT
        array_agg(m.unit_id ORDER BY m.unit_id, m.entity_id),
        array_agg(m.entity_id ORDER BY m.unit_id, m.entity_id),
        array_agg(d.latest ORDER BY m.unit_id, m.entity_id)
    INTO units, linked, dates
    FROM (
        SELECT DISTINCT x.unit_id, x.entity_id
        FROM mentions AS x
        WHERE
            x.bank_id = _relink_mentions.bank_id
            AND x.unit_id = ANY(_relink_mentions.unit_ids)
            AND x.entity_id = ANY(_relink_mentions.entity_ids)
    ) AS m
    INNER JOIN (
        SELECT ue.unit_id, max(ue.event_date) AS latest
        FROM unit_entities AS ue
        WHERE ue.bank_id = _relink_mentions.bank_id AND ue.unit_id = ANY(_relink_mentions.unit_ids)
        GROUP BY ue.unit_id
    ) AS d ON m.unit_id = d.unit_id;
    INSERT INTO unit_entities (bank_id, unit_id, entity_id, event_date)
    SELECT _relink_mentions.bank_id, u.unit_id, u.entity_id, u.event_date
    FROM unnest(units, linked, dates) AS u (unit_id, entity_id, event_date)
    ORDER BY u.unit_id, u.entity_id
    ON CONFLICT ON CONSTRAINT unit_entities_pkey DO NOTHING;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._relink_mentions(text, uuid[], uuid[]) IS
'Internal (undo): link each linked unit to the entities its mentions went to, where a link is missing.';

CREATE OR REPLACE FUNCTION {{ internal }}._orphans(bank_id text, entity_ids uuid[])
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Entities nothing refers to, which the flush would remove (as
    -- rebuild_stats reports them): kept in a before-image, so that an undo
    -- removes only the orphans it made.
    SELECT to_jsonb(_orphan_ids(_orphans.bank_id, coalesce(_orphans.entity_ids, '{}')))
$$;

COMMENT ON FUNCTION {{ internal }}._orphans(text, uuid[]) IS
'Internal: which of these entities nothing refers to (no mention, no link, not curated), as a jsonb array.';
