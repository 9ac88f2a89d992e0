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
            SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = _entity_stats.bank_id AND ue.entity_id = e.id
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
    PERFORM _check_not_null(rebuild_stats.dry_run, 'dry_run');
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
            WHERE r.kept_count <> r.count OR r.kept_last IS DISTINCT FROM r.last_cooccurred
        ), '[]')
    INTO n_pairs, pair_diffs
    FROM _pair_stats(b) AS r;

    IF NOT rebuild_stats.dry_run THEN
        DELETE FROM stats_queue AS q WHERE q.bank_id = b;
        -- The recount the corrections use, on every entity of the bank (and
        -- so every pair): one definition of the derived numbers.
        PERFORM _recount(b, ARRAY(SELECT e.id FROM entities AS e WHERE e.bank_id = b), TRUE);
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

CREATE OR REPLACE FUNCTION {{ internal }}._current_entity(bank_id text, entity_id uuid)
RETURNS uuid
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- An id held by an application keeps working after a merge: it forwards
    -- to the entity it became (chains are collapsed when merges are made).
    -- (Internal, for the functions that follow ids, sql/055_judgements.sql:
    -- a distributed installation delegates the public one.)
    SELECT coalesce(
        (SELECT e.id FROM entities AS e WHERE e.bank_id = _current_entity.bank_id
            AND e.id = _current_entity.entity_id),
        (SELECT f.new_id FROM entity_forwards AS f WHERE f.bank_id = _current_entity.bank_id
            AND f.old_id = _current_entity.entity_id)
    )
$$;

COMMENT ON FUNCTION {{ internal }}._current_entity(text, uuid) IS
'Internal: current_entity without the bank_id check.';

CREATE OR REPLACE FUNCTION {{ schema }}.current_entity(bank_id text, entity_id uuid)
RETURNS uuid
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _current_entity(check_bank_id(current_entity.bank_id), current_entity.entity_id)
$$;

COMMENT ON FUNCTION {{ schema }}.current_entity(text, uuid) IS
'The entity an id stands for now: itself, the entity it was merged into, or NULL when it never existed or was '
'forgotten.';

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
    PERFORM _lock_bank(b, TRUE);
    PERFORM _flush_queue(b, FALSE);
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

CREATE OR REPLACE FUNCTION {{ internal }}._recount(bank_id text, entity_ids uuid[], prune boolean)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := _recount.bank_id;
    ids uuid[] := _recount.entity_ids;
BEGIN
    -- The numbers of these entities and of every pair with one of them,
    -- derived from the record exactly as rebuild_stats derives them. Rows
    -- already equal are not written.
    UPDATE entities AS e
    SET mention_count = d.n, first_seen = d.first_seen, last_seen = d.last_seen
    FROM (
        SELECT
            i.id,
            count(m.entity_id) AS n,
            min(m.event_date) AS first_seen,
            max(m.event_date) AS last_seen
        FROM (SELECT DISTINCT u.id FROM unnest(ids) AS u (id)) AS i
        LEFT JOIN mentions AS m ON m.bank_id = b AND i.id = m.entity_id
        GROUP BY i.id
    ) AS d
    WHERE
        e.bank_id = b AND e.id = d.id
        AND (
            e.mention_count IS DISTINCT FROM d.n
            OR e.first_seen IS DISTINCT FROM d.first_seen
            OR e.last_seen IS DISTINCT FROM d.last_seen
        );

    WITH units AS (
        SELECT DISTINCT ue.unit_id
        FROM unit_entities AS ue
        WHERE ue.bank_id = b AND ue.entity_id = ANY(ids)
    ),

    derived AS (
        SELECT
            x.entity_id AS entity_id_1,
            y.entity_id AS entity_id_2,
            count(*) AS n,
            max(greatest(x.event_date, y.event_date)) AS last_cooccurred
        FROM units
        INNER JOIN unit_entities AS x ON x.bank_id = b AND units.unit_id = x.unit_id
        INNER JOIN unit_entities AS y
            ON y.bank_id = b AND units.unit_id = y.unit_id AND x.entity_id < y.entity_id
        WHERE x.entity_id = ANY(ids) OR y.entity_id = ANY(ids)
        GROUP BY x.entity_id, y.entity_id
    )

    INSERT INTO entity_cooccurrences AS c (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)
    SELECT b, d.entity_id_1, d.entity_id_2, d.n, d.last_cooccurred
    FROM derived AS d
    ORDER BY d.entity_id_1, d.entity_id_2
    ON CONFLICT ON CONSTRAINT entity_cooccurrences_pkey DO UPDATE
        SET cooccurrence_count = excluded.cooccurrence_count, last_cooccurred = excluded.last_cooccurred
        WHERE
            c.cooccurrence_count IS DISTINCT FROM excluded.cooccurrence_count
            OR c.last_cooccurred IS DISTINCT FROM excluded.last_cooccurred;

    -- A pair no unit holds any more: removed after a correction (prune), set
    -- to zero after an undo, which restores the rows the image holds
    -- (a zero pair a forgetting left behind is one of them). A zero pair has
    -- no date, as a forgetting's recount leaves it: a date kept from a fact
    -- gone since would beat the date of any later, earlier-dated fact in the
    -- flush's greatest().
    IF _recount.prune THEN
        DELETE FROM entity_cooccurrences AS c
        WHERE
            c.bank_id = b AND (c.entity_id_1 = ANY(ids) OR c.entity_id_2 = ANY(ids))
            AND NOT EXISTS (
                SELECT 1
                FROM unit_entities AS x
                INNER JOIN unit_entities AS y
                    ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND y.entity_id = c.entity_id_2
                WHERE x.bank_id = b AND x.entity_id = c.entity_id_1
            );
    ELSE
        UPDATE entity_cooccurrences AS c
        SET cooccurrence_count = 0, last_cooccurred = NULL
        WHERE
            c.bank_id = b AND (c.entity_id_1 = ANY(ids) OR c.entity_id_2 = ANY(ids))
            AND (c.cooccurrence_count <> 0 OR c.last_cooccurred IS NOT NULL)
            AND NOT EXISTS (
                SELECT 1
                FROM unit_entities AS x
                INNER JOIN unit_entities AS y
                    ON x.bank_id = y.bank_id AND x.unit_id = y.unit_id AND y.entity_id = c.entity_id_2
                WHERE x.bank_id = b AND x.entity_id = c.entity_id_1
            );
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._recount(text, uuid[], boolean) IS
'Internal: recompute the statistics of these entities and of their pairs from the record (as rebuild_stats); '
'prune removes pairs no unit holds.';

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
    SELECT coalesce(jsonb_agg(e.id ORDER BY e.id), '[]')
    FROM entities AS e
    WHERE
        e.bank_id = _orphans.bank_id AND e.id = ANY(_orphans.entity_ids) AND NOT e.curated
        AND NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.bank_id = _orphans.bank_id AND m.entity_id = e.id)
        AND NOT EXISTS (
            SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = _orphans.bank_id AND ue.entity_id = e.id
        )
$$;

COMMENT ON FUNCTION {{ internal }}._orphans(text, uuid[]) IS
'Internal: which of these entities nothing refers to (no mention, no link, not curated), as a jsonb array.';

CREATE OR REPLACE FUNCTION {{ internal }}._remove_orphans(bank_id text, entity_ids uuid[], were jsonb)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    gone jsonb;
BEGIN
    -- Facts forgotten since the operation may leave an entity it gives back
    -- with nothing: it goes, as the flush would have removed it. One that
    -- was an orphan already when the operation ran is given back as it was.
    WITH removed AS (
        DELETE FROM entities AS e
        WHERE
            e.bank_id = _remove_orphans.bank_id AND e.id = ANY(_remove_orphans.entity_ids) AND NOT e.curated
            AND NOT coalesce(_remove_orphans.were, '[]') ? e.id::text
            AND NOT EXISTS (
                SELECT 1 FROM mentions AS m WHERE m.bank_id = _remove_orphans.bank_id AND m.entity_id = e.id
            )
            AND NOT EXISTS (
                SELECT 1 FROM unit_entities AS ue WHERE ue.bank_id = _remove_orphans.bank_id AND ue.entity_id = e.id
            )
        RETURNING e.id
    )

    SELECT coalesce(jsonb_agg(removed.id ORDER BY removed.id), '[]') INTO gone FROM removed;
    RETURN gone;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._remove_orphans(text, uuid[], jsonb) IS
'Internal (undo): remove the given entities nothing refers to any more, except those that were orphans before.';

-- ---------------------------------------------------------------------------
-- merge_entities
-- ---------------------------------------------------------------------------

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

    SELECT jsonb_build_object(
        'kind', 'merge',
        'bank_id', b,
        'summary', format(
            'merge %s into %s',
            string_agg(quote_literal(e.canonical_name), ', ' ORDER BY lower(e.canonical_name))
                FILTER (WHERE e.id <> target.id),
            quote_literal(target.canonical_name)
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
        'aliases_added', jsonb_agg(e.canonical_name ORDER BY lower(e.canonical_name)) FILTER (WHERE e.id <> target.id),
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
    SELECT b, e.canonical_name, target.id, 'merge'
    FROM entities AS e
    WHERE e.bank_id = b AND e.id = ANY(sources)
    ORDER BY lower(e.canonical_name);

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
    PERFORM _check_name(b, split_entity.new_name, 'new_name');
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
        'summary', format('split %s from %s (%s units)', quote_literal(split_entity.new_name),
            quote_literal(one.canonical_name), cardinality(units)),
        'entity', jsonb_build_object('entity_id', one.id, 'name', one.canonical_name),
        'new_entity', jsonb_build_object('entity_id', NULL, 'name', split_entity.new_name),
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
    INSERT INTO entities (bank_id, id, canonical_name, entity_kind, entity_type, curated)
    VALUES (b, new_id, split_entity.new_name, one.entity_kind, one.entity_type, TRUE);
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
'new_name (curated). One transaction, ledgered (undo_operation); dry_run returns the plan without writing. '
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
        'summary', format('rename %s to %s', quote_literal(one.canonical_name), quote_literal(rename_entity.new_name)),
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
        'summary', format('add alias %s to %s', quote_literal(add_alias.alias), quote_literal(one.canonical_name)),
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
        'summary', format('remove alias %s of %s', quote_literal(one.alias), quote_literal(one.canonical_name)),
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
        'summary', format('forget %s', quote_literal(one.canonical_name)),
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
BEGIN
    -- A name an undo gives back must be free: another entity may have been
    -- created with it, or given it as an alias, since.
    -- Folded first: fold_name() of a row is not LEAKPROOF, and a bank-bound
    -- curator's look-ups would then read the bank's names.
    keys := ARRAY(SELECT fold_name(n.name) FROM unnest(_check_free_names.names) WITH ORDINALITY AS n (name, i)
                  ORDER BY n.i);
    SELECT n.name, e.id, e.canonical_name INTO hit
    FROM unnest(_check_free_names.names, keys) AS n (name, key)
    INNER JOIN entities AS e
        ON e.bank_id = _check_free_names.bank_id AND folded(e.canonical_name) = n.key
    WHERE e.id IS DISTINCT FROM _check_free_names.own
    LIMIT 1;
    IF NOT FOUND THEN
        SELECT n.name, e.id, e.canonical_name INTO hit
        FROM unnest(_check_free_names.names, keys) AS n (name, key)
        INNER JOIN entity_aliases AS a
            ON a.bank_id = _check_free_names.bank_id AND folded(a.alias) = n.key
        INNER JOIN entities AS e ON a.bank_id = e.bank_id AND a.entity_id = e.id
        WHERE e.id IS DISTINCT FROM _check_free_names.own
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
'Internal (undo): refuse (23505) when a name to give back is now another entity''s name or alias.';

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
        WHERE r.id = ANY(_image_names.entity_ids)
        UNION ALL
        SELECT r.alias FROM jsonb_populate_recordset(NULL::entity_aliases, _image_names.image -> 'aliases') AS r
    )
$$;

COMMENT ON FUNCTION {{ internal }}._image_names(jsonb, uuid[]) IS
'Internal (undo): the names a before-image gives back: those of the given entities, and every alias in it.';

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
    -- since stays forgotten, one corrected since stays corrected.
    UPDATE mentions AS m
    SET entity_id = r.entity_id, decision = r.decision, decided_at = r.decided_at
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
    -- had, after their links to the cleared entities go.
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
    WHERE r.unit_id = ANY(units)
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
    units := _restore_links(b, image, split_off, ARRAY[split_off]);
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
