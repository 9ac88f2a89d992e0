-- Distributed installation (Citus): what only `install --distributed` adds.
--
-- The script of a distributed installation is the single-node one with
-- {{ distributed }} = TRUE, every public function of a bank delegated to the
-- node holding the bank (build.delegate_bank_functions: <name>_impl,
-- <name>_delegated and a coordinator wrapper), and this file, which runs in
-- filename order among the files of sql/ (before 999_grants.sql).
--
-- * Bank isolation reads only the catalog: one NOLOGIN role per bank, which
--   grant_bank_access grants to the bound role; the policies ask whether
--   the current user has the privileges of the bank's role. Citus refuses
--   policies with subqueries on distributed tables, and a policy function
--   reading a table would run a distributed query on a shard; roles and role
--   grants are propagated to every node by Citus.
-- * flush_stats(NULL) flushes bank by bank, one delegated call each.
-- * _install_distribute distributes the tables and the delegated functions
--   (the installer calls it after the script; idempotent).

CREATE OR REPLACE FUNCTION {{ internal }}._bank_role_name(bank_id text)
RETURNS name
LANGUAGE sql
STABLE
PARALLEL SAFE
SECURITY INVOKER
AS $$
    -- Roles are cluster-wide: the name depends on the database, the
    -- installation's schema and the bank, so that no binding reaches another
    -- database's or installation's bank of the same name. No SET clause and
    -- qualified names only: the policies inline it, once per row.
    SELECT (
        CASE
            WHEN pg_catalog.octet_length({{ schema_literal }}) <= 33
                THEN {{ schema_literal }} OPERATOR(pg_catalog.||) '_bank_'
            ELSE 'er_' OPERATOR(pg_catalog.||) pg_catalog.left(pg_catalog.md5({{ schema_literal }}), 16)
                OPERATOR(pg_catalog.||) '_bank_'
        END
        OPERATOR(pg_catalog.||) pg_catalog.left(pg_catalog.md5(
            pg_catalog.current_database() OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) {{ schema_literal }}
            OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) bank_id
        ), 24)
    )::pg_catalog.name
$$;

COMMENT ON FUNCTION {{ internal }}._bank_role_name(text) IS
'Internal (distributed): the NOLOGIN role whose members may use a bank (<schema>_bank_<digest of database, '
'schema, bank>).';

CREATE OR REPLACE FUNCTION {{ internal }}._may_use_bank(bank_id text)
RETURNS boolean
LANGUAGE sql
STABLE
PARALLEL SAFE
SECURITY INVOKER
AS $$
    -- The bank-isolation predicate of a distributed installation: the
    -- current user has the privileges of the bank's role (a bank never
    -- bound has no role: false).
    SELECT coalesce(pg_catalog.pg_has_role(
        pg_catalog.to_regrole(pg_catalog.quote_ident({{ internal }}._bank_role_name(bank_id)))::pg_catalog.oid,
        'USAGE'
    ), FALSE)
$$;

COMMENT ON FUNCTION {{ internal }}._may_use_bank(text) IS
'Internal (distributed): whether the current user may use a bank (the row-level security predicate; reads only '
'the catalog).';

CREATE OR REPLACE FUNCTION {{ internal }}._grant_bank_role(bank_id text, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    bank_role name := _bank_role_name(_grant_bank_role.bank_id);
BEGIN
    -- _create_group_role, _grant_membership: sql/999_grants.sql.
    PERFORM _create_group_role(
        bank_role,
        format('entity_resolver (schema %s, database %s): members use bank %s',
               current_schema(), current_database(), _grant_bank_role.bank_id)
    );
    PERFORM _grant_membership(bank_role, _grant_bank_role.role_name);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._grant_bank_role(text, name) IS
'Internal (distributed, administrators): make role_name a member of the bank''s role (created if missing).';

CREATE OR REPLACE FUNCTION {{ internal }}._revoke_bank_role(bank_id text, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- _revoke_direct_membership: sql/999_grants.sql.
    PERFORM _revoke_direct_membership(_bank_role_name(_revoke_bank_role.bank_id), _revoke_bank_role.role_name);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._revoke_bank_role(text, name) IS
'Internal (distributed, administrators): end role_name''s membership in the bank''s role.';

CREATE OR REPLACE FUNCTION {{ internal }}._forget_shard_facts(shard regclass)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    bank_ids text[];
    ids uuid[];
BEGIN
    -- TRUNCATE facts on a shard (its trigger, on the shard's node): the
    -- facts of the shard's banks are forgotten bank by bank. The shard is
    -- read by its name: a query of the distributed table would ask every
    -- node from a shard, which Citus refuses.
    EXECUTE format('SELECT array_agg(f.bank_id), array_agg(f.id) FROM %s AS f', _forget_shard_facts.shard)
    INTO bank_ids, ids;
    PERFORM _forget_facts(bank_ids, ids);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._forget_shard_facts(regclass) IS
'Internal (distributed): TRUNCATE of a shard of facts forgets its facts first (called by the TRUNCATE trigger '
'on the shard).';

-- flush_stats on the coordinator: one bank, or every bank with queued rows,
-- each by a call delegated to its node (never one statement over every
-- shard). Written by hand: the generated wrappers refuse a NULL bank.
CREATE OR REPLACE FUNCTION {{ schema }}.flush_stats(bank_id text DEFAULT NULL)
RETURNS TABLE (entities_updated bigint, pairs_updated bigint)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    banks text[];
    one text;
    result jsonb;
BEGIN
    entities_updated := 0;
    pairs_updated := 0;
    IF flush_stats.bank_id IS NOT NULL THEN
        banks := ARRAY[check_bank_id(flush_stats.bank_id)];
    ELSE
        SELECT array_agg(DISTINCT q.bank_id ORDER BY q.bank_id) INTO banks FROM stats_queue AS q;
    END IF;
    FOREACH one IN ARRAY coalesce(banks, '{}') LOOP
        SELECT r INTO result FROM flush_stats_delegated(one, '{}'::jsonb) AS r;
        entities_updated := entities_updated + (result -> 0 ->> 'entities_updated')::bigint;
        pairs_updated := pairs_updated + (result -> 0 ->> 'pairs_updated')::bigint;
    END LOOP;
    RETURN NEXT;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.flush_stats(text) IS
'Apply queued mention and co-occurrence statistics (one bank, or all when NULL), aggregated, '
'in sorted key order, at most entity_resolver.flush_batch_rows queue rows (default 5000, oldest first; '
'0: no bound); safe to run from many sessions at once. Returns rows updated. '
'Distributed: one call per bank, on the node holding it, bounded by the setting there.';

CREATE OR REPLACE FUNCTION {{ internal }}._install_distribute(shard_count integer)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    s name := current_schema();
    internal name := (
        SELECT n.nspname FROM pg_proc AS p INNER JOIN pg_namespace AS n ON p.pronamespace = n.oid
        WHERE p.oid = '_install_distribute'::regproc
    );
    anchor regclass := format('%I.banks', current_schema())::regclass;
    obj record;
    progress boolean := TRUE;
    tables text[] := '{}';
    reference text[] := '{}';
    functions text[] := '{}';
BEGIN
    -- A single-node installation being distributed: its trigram index uses
    -- our operator class (migration 0012), which Citus cannot give its
    -- workers; pg_trgm's takes its place, and our operators go.
    IF EXISTS (
        SELECT 1
        FROM pg_index AS i
        INNER JOIN pg_opclass AS o ON i.indclass[1] = o.oid
        WHERE
            i.indexrelid = to_regclass(format('%I.entities_name_trgm_idx', s))
            AND o.opcnamespace = internal::regnamespace
    ) THEN
        DROP INDEX {{ schema }}.entities_name_trgm_idx;
        CREATE INDEX entities_name_trgm_idx
        ON {{ schema }}.entities
        USING gin (bank_id, {{ internal }}.folded(canonical_name) {{ trgm_schema }}.gin_trgm_ops)
        WITH (fastupdate = FALSE)
        WHERE entity_kind <> 'label';
        -- The comment of sql/080_index_comments.sql, lost with the index it was on.
        COMMENT ON INDEX {{ schema }}.entities_name_trgm_idx IS
        'The candidate probe: a bank''s regular names similar to a key (pg_trgm; the bank is a column of the index, '
        'so other banks'' rows are not fetched; no pending list).';
        DROP OPERATOR FAMILY {{ internal }}.trgm_ops USING gin;
        DROP OPERATOR {{ internal }}.% (text, text);
        DROP OPERATOR {{ internal }}.%>> (text, text);
    END IF;
    -- Tenant tables (those with a bank_id) by bank_id, all in the colocation
    -- group of banks, each after the tables its foreign keys reference.
    IF NOT EXISTS (SELECT 1 FROM pg_dist_partition AS d WHERE d.logicalrelid = anchor) THEN
        PERFORM create_distributed_table(anchor, 'bank_id', shard_count => _install_distribute.shard_count);
        tables := tables || anchor::text;
    END IF;
    WHILE progress LOOP
        progress := FALSE;
        FOR obj IN
            SELECT c.oid::regclass AS rel
            FROM pg_class AS c
            INNER JOIN pg_attribute AS a ON c.oid = a.attrelid AND a.attname = 'bank_id' AND NOT a.attisdropped
            WHERE
                c.relnamespace = s::regnamespace AND c.relkind = 'r'
                AND NOT EXISTS (SELECT 1 FROM pg_dist_partition AS d WHERE d.logicalrelid = c.oid)
                AND NOT EXISTS (
                    SELECT 1
                    FROM pg_constraint AS k
                    WHERE
                        k.conrelid = c.oid AND k.contype = 'f' AND k.confrelid <> c.oid
                        AND NOT EXISTS (SELECT 1 FROM pg_dist_partition AS d WHERE d.logicalrelid = k.confrelid)
                )
            ORDER BY c.relname
        LOOP
            PERFORM create_distributed_table(obj.rel, 'bank_id', colocate_with => anchor::text);
            tables := tables || obj.rel::text;
            progress := TRUE;
        END LOOP;
    END LOOP;
    -- Installation metadata (the modules, the migration ledger): on every node.
    FOR obj IN
        SELECT c.oid::regclass AS rel
        FROM pg_class AS c
        WHERE
            c.relnamespace = s::regnamespace AND c.relkind = 'r'
            AND NOT EXISTS (
                SELECT 1 FROM pg_attribute AS a
                WHERE a.attrelid = c.oid AND a.attname = 'bank_id' AND NOT a.attisdropped
            )
            AND NOT EXISTS (SELECT 1 FROM pg_dist_partition AS d WHERE d.logicalrelid = c.oid)
        ORDER BY c.relname
    LOOP
        PERFORM create_reference_table(obj.rel);
        reference := reference || obj.rel::text;
    END LOOP;
    -- Every delegated function: a call runs whole on the node holding its
    -- bank, inside a transaction block too (force_delegation).
    FOR obj IN
        SELECT p.oid::regprocedure AS fn
        FROM pg_proc AS p
        WHERE
            p.pronamespace = internal::regnamespace AND p.proname ~ '_delegated$'
            AND NOT EXISTS (
                SELECT 1 FROM pg_dist_object AS o
                WHERE
                    o.classid = 'pg_proc'::regclass AND o.objid = p.oid
                    AND o.distribution_argument_index = 0 AND o.force_delegation
                    AND o.colocationid = (
                        SELECT d.colocationid FROM pg_dist_partition AS d WHERE d.logicalrelid = anchor
                    )
            )
        ORDER BY p.proname
    LOOP
        PERFORM create_distributed_function(
            obj.fn, 'bank_id', colocate_with => anchor::text, force_delegation => TRUE
        );
        functions := functions || obj.fn::text;
    END LOOP;
    -- Privileges again: a view created over tables that were not distributed
    -- yet reaches the workers with the tables, but without its grants.
    PERFORM _install_grants();
    -- Bindings made before the installation was distributed: their roles.
    FOR obj IN SELECT b.bank_id, b.role_name FROM bank_roles AS b ORDER BY b.bank_id, b.role_name LOOP
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = obj.role_name) THEN
            PERFORM _grant_bank_role(obj.bank_id, obj.role_name);
        END IF;
    END LOOP;
    RETURN jsonb_build_object('tables', tables, 'reference_tables', reference, 'functions', functions);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._install_distribute(integer) IS
'Internal (installer, distributed): distribute the tenant tables by bank_id (colocated), make the other tables '
'reference tables, delegate the <name>_delegated functions; idempotent. Returns what it changed.';
