-- Deleting a bank: every row of it, in every table of the two schemas, as one call.
--
-- drop_bank does not name its tables: it deletes from every table of the
-- schema and the internal schema that has a bank_id column, so a table
-- added later (a migration of another feature) is emptied for the bank
-- without a change here. The order respects the foreign keys between those
-- tables: a table is emptied before the tables it references. Administrators
-- only (superusers and the tables' owner), like grant_bank_access: a bank
-- takes its grants with it (docs/security.md).

CREATE OR REPLACE FUNCTION {{ internal }}._require_bank(bank_id text)
RETURNS void
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- The rule for a bank an operation needs (history, undo): it has its
    -- row in banks (under row-level security: one this role may see).
    IF NOT EXISTS (SELECT 1 FROM banks AS b WHERE b.bank_id = _require_bank.bank_id) THEN
        RAISE EXCEPTION 'bank_id: bank % does not exist (or this role may not see it)',
            quote_literal(_require_bank.bank_id)
            USING ERRCODE = 'undefined_object';
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._require_bank(text) IS
'Internal: refuse (42704, naming bank_id) a bank that has no row in banks, or one row-level security hides.';

CREATE OR REPLACE FUNCTION {{ internal }}._bank_tables()
RETURNS TABLE (relation regclass, label text, ordinal integer)
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- Every ordinary table of the two schemas with a bank_id column. depth:
    -- the longest chain of foreign keys (among these tables) that ends at a
    -- table, so a table comes after every table that references it. Within
    -- a depth, facts come after the other tables (its delete trigger then
    -- finds no provenance or links left to forget) and stats_queue after
    -- facts (so nothing that trigger queued stays behind).
    WITH RECURSIVE tables AS (
        SELECT c.oid, n.nspname, c.relname
        FROM pg_class AS c
        INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
        INNER JOIN pg_attribute AS a ON c.oid = a.attrelid AND a.attname = 'bank_id' AND NOT a.attisdropped
        WHERE
            n.nspname IN ({{ schema_literal }}, (SELECT p.pronamespace::regnamespace::text
                FROM pg_proc AS p WHERE p.oid = '_bank_tables'::regproc))
            AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ),

    refs AS (
        SELECT DISTINCT k.conrelid AS child, k.confrelid AS parent
        FROM pg_constraint AS k
        INNER JOIN tables AS t1 ON k.conrelid = t1.oid
        INNER JOIN tables AS t2 ON k.confrelid = t2.oid
        WHERE k.contype = 'f' AND k.conrelid <> k.confrelid
    ),

    depth (oid, depth) AS (
        SELECT t.oid, 0 FROM tables AS t
        UNION
        SELECT r.parent, d.depth + 1
        FROM depth AS d INNER JOIN refs AS r ON d.oid = r.child
        WHERE d.depth < 100
    )

    SELECT
        t.oid::regclass,
        CASE WHEN t.nspname = {{ schema_literal }} THEN t.relname::text
            ELSE format('%I.%I', t.nspname, t.relname) END,
        (row_number() OVER (
            ORDER BY
                max(d.depth),
                -- A searched CASE: pgspot (PS009) flags the simple form's implied =.
                CASE WHEN t.relname = 'facts' THEN 1 WHEN t.relname = 'stats_queue' THEN 2 ELSE 0 END,
                t.nspname, t.relname
        ))::integer
    FROM tables AS t INNER JOIN depth AS d ON t.oid = d.oid
    GROUP BY t.oid, t.nspname, t.relname
$$;

COMMENT ON FUNCTION {{ internal }}._bank_tables() IS
'Internal: every table of the two schemas with a bank_id column, in the order drop_bank empties them '
'(referencing tables before the tables they reference).';

CREATE OR REPLACE FUNCTION {{ internal }}._check_administrator(bank_id text)
RETURNS void
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Superusers and the tables' owner (a role with its privileges): not
    -- subject to row-level security, they see every row of the bank.
    IF (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
        OR pg_has_role((SELECT c.relowner FROM pg_class AS c WHERE c.oid = 'banks'::regclass), 'USAGE') THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'bank_id: role % may not drop bank %: only a superuser or the owner of the tables may',
        quote_ident(current_user), quote_literal(_check_administrator.bank_id)
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

COMMENT ON FUNCTION {{ internal }}._check_administrator(text) IS
'Internal: refuse (42501) a caller who is neither a superuser nor a member of the tables'' owner.';

CREATE OR REPLACE FUNCTION {{ schema }}.drop_bank(bank_id text, dry_run boolean DEFAULT TRUE)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    b text := check_bank_id(drop_bank.bank_id);
    t record;
    n bigint;
    counts jsonb := '{}';
    total bigint := 0;
    existed boolean;
BEGIN
    PERFORM _check_not_null(drop_bank.dry_run, 'dry_run');
    PERFORM _check_administrator(b);
    IF NOT drop_bank.dry_run THEN
        -- The corrections' lock, exclusive: writers, flushers and corrections
        -- of the bank in flight finish first (they hold it shared or
        -- exclusive until they commit), none starts until this commits, and
        -- nothing of the bank is locked here before it.
        PERFORM _lock_bank(b, TRUE);
    END IF;
    existed := EXISTS (SELECT 1 FROM banks AS x WHERE x.bank_id = b);
    FOR t IN SELECT * FROM _bank_tables() ORDER BY ordinal LOOP
        IF drop_bank.dry_run THEN
            EXECUTE format('SELECT count(*) FROM %s AS t WHERE t.bank_id = $1', t.relation) INTO n USING b;
        ELSE
            EXECUTE format('DELETE FROM %s AS t WHERE t.bank_id = $1', t.relation) USING b;
            GET DIAGNOSTICS n = ROW_COUNT;
        END IF;
        counts := counts || jsonb_build_object(t.label, n);
        total := total + n;
    END LOOP;
    IF NOT existed AND total = 0 THEN
        RAISE EXCEPTION 'bank_id: bank % does not exist', quote_literal(b)
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN jsonb_build_object('bank_id', b, 'dry_run', drop_bank.dry_run, 'rows', counts, 'total', total);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.drop_bank(text, boolean) IS
'Administrators: delete a bank: its rows in every table with a bank_id (facts, entities, provenance, links, pairs, '
'aliases, forwards, the ledger, settings, grants, queued statistics), counted per table. dry_run (the default) only '
'counts. Cannot be undone.';
