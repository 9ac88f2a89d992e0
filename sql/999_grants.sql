-- Least privilege and bank isolation (docs/security.md). Applied last, on
-- every install: the end state is exact whatever an earlier version granted.
--
-- Three group roles (NOLOGIN; cluster-wide, so named after the schema and
-- created only if missing):
--   <schema>_user       uses every bank: entity_resolver_user by default.
--   <schema>_bank_user  uses only the banks bound to it in bank_roles
--                       (grant_bank_access), enforced by row-level security.
--   <schema>_curator    adds what operator corrections write (merge, split,
--                       rename, aliases, forget, undo) to a role that uses a
--                       bank; granted per bank (grant_curation), which the
--                       correction functions check.
-- Each holds exactly the privileges the functions, the facts table and the
-- views need; every function runs as its caller (SECURITY INVOKER), so a
-- caller can never do through a function what it could not do directly.
-- Installing needs a superuser (plpython3u is untrusted); using needs only
-- membership in one of these roles.

CREATE OR REPLACE FUNCTION {{ internal }}._role_name(suffix text)
RETURNS name
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    -- current_schema() is this installation's schema (the first entry of the
    -- search_path above). A role name holds 63 bytes: a longer one would be
    -- truncated silently and could collide, so it becomes a digest instead.
    SELECT (
        CASE
            WHEN octet_length(current_schema() || '_' || suffix) <= 63
                THEN current_schema() || '_' || suffix
            ELSE 'er_' || left(md5(current_schema()), 16) || '_' || suffix
        END
    )::name
$$;

COMMENT ON FUNCTION {{ internal }}._role_name(text) IS
'Internal: the name of one of this installation''s roles (<schema>_<suffix>, or a digest when too long).';

CREATE OR REPLACE FUNCTION {{ schema }}.usage_role()
RETURNS name
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _role_name('user')
$$;

COMMENT ON FUNCTION {{ schema }}.usage_role() IS
'The role to grant to applications that use every bank (entity_resolver_user for the default schema).';

CREATE OR REPLACE FUNCTION {{ schema }}.bank_user_role()
RETURNS name
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _role_name('bank_user')
$$;

COMMENT ON FUNCTION {{ schema }}.bank_user_role() IS
'The role whose members see only the banks bound to them (grant_bank_access gives it).';

CREATE OR REPLACE FUNCTION {{ schema }}.curator_role()
RETURNS name
LANGUAGE sql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
    SELECT _role_name('curator')
$$;

COMMENT ON FUNCTION {{ schema }}.curator_role() IS
'The role whose members may correct the banks granted to them (grant_curation gives it).';

CREATE OR REPLACE FUNCTION {{ internal }}._create_group_role(role_name name, description text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = _create_group_role.role_name) THEN
        RETURN;
    END IF;
    -- Roles are cluster-wide: another database may be creating it right now.
    -- Losing that race with a duplicate error is not enough: the other's
    -- commit becomes visible to a fresh snapshot before its invalidations
    -- reach this session, whose role cache may still say "no such role"
    -- to the GRANT that follows. So a superuser takes the catalog's lock
    -- that role creators take (held until commit, it conflicts with CREATE
    -- ROLE's); taking it brings this session's caches up to date. Without
    -- waiting: the installer holds the tables' locks by now, and waiting for
    -- a session that waits for them would be a deadlock. Busy, it is refused
    -- (lock_not_available), and the installer tries again (install.py).
    -- (Other administrators may not lock a catalog: they keep the race.)
    IF (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user) THEN
        BEGIN
            LOCK TABLE pg_catalog.pg_authid IN SHARE ROW EXCLUSIVE MODE NOWAIT;
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION 'role % is being created or changed by another session (maybe an installation in '
                'another database)', quote_ident(_create_group_role.role_name)
                USING ERRCODE = 'lock_not_available', HINT = 'Run it again once that session has committed.';
        END;
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = _create_group_role.role_name) THEN
            RETURN;
        END IF;
    END IF;
    BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', _create_group_role.role_name);
        EXECUTE format('COMMENT ON ROLE %I IS %L', _create_group_role.role_name, _create_group_role.description);
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._create_group_role(name, text) IS
'Internal (administrators): create a NOLOGIN role with that comment, unless it exists.';

CREATE OR REPLACE FUNCTION {{ internal }}._grant_membership(granted name, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- A role that is a member already (itself or through a group) gets no
    -- direct grant: revoking the group's would then leave it one.
    IF NOT pg_has_role(_grant_membership.role_name, _grant_membership.granted, 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', _grant_membership.granted, _grant_membership.role_name);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._grant_membership(name, name) IS
'Internal (administrators): grant the role granted to role_name, unless role_name is a member of it already.';

CREATE OR REPLACE FUNCTION {{ internal }}._revoke_direct_membership(granted name, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    -- Only a membership granted to the role itself is revoked: one it has
    -- through a group is the group's.
    IF EXISTS (
        SELECT 1
        FROM pg_auth_members AS m
        WHERE
            m.roleid = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = _revoke_direct_membership.granted)
            AND m.member = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = _revoke_direct_membership.role_name)
    ) THEN
        EXECUTE format('REVOKE %I FROM %I', _revoke_direct_membership.granted, _revoke_direct_membership.role_name);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._revoke_direct_membership(name, name) IS
'Internal (administrators): revoke the role granted from role_name, if it was granted to role_name directly.';

-- ---------------------------------------------------------------------------
-- Bank isolation: binding roles to banks (administrators only)
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ schema }}.grant_bank_access(bank_id text, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    target oid;
    unrestricted boolean;
    bank_user name := _role_name('bank_user');
    everything name := _role_name('user');
    owner oid;
BEGIN
    PERFORM check_bank_id(grant_bank_access.bank_id);
    PERFORM _check_not_null(grant_bank_access.role_name, 'role_name');
    SELECT r.oid, r.rolsuper OR r.rolbypassrls
    INTO target, unrestricted
    FROM pg_roles AS r
    WHERE r.rolname = grant_bank_access.role_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role_name: role % does not exist', coalesce(quote_ident(grant_bank_access.role_name), 'NULL')
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Row-level security does not apply to these roles: binding them would
    -- promise an isolation that does not exist.
    SELECT c.relowner INTO owner FROM pg_class AS c WHERE c.oid = 'banks'::regclass;
    IF unrestricted OR pg_has_role(target, owner, 'USAGE') THEN
        RAISE EXCEPTION
            'role_name: % is a superuser, has BYPASSRLS or owns the tables; row-level security cannot restrict it',
            quote_ident(grant_bank_access.role_name)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_has_role(target, everything, 'USAGE') THEN
        RAISE EXCEPTION 'role_name: % is a member of %, which uses every bank',
            quote_ident(grant_bank_access.role_name), quote_ident(everything)
            USING ERRCODE = 'invalid_parameter_value',
            HINT = format('REVOKE %I FROM %I first.', everything, grant_bank_access.role_name);
    END IF;
    INSERT INTO bank_roles (bank_id, role_name)
    VALUES (grant_bank_access.bank_id, grant_bank_access.role_name)
    ON CONFLICT ON CONSTRAINT bank_roles_pkey DO NOTHING;
    PERFORM _grant_membership(bank_user, grant_bank_access.role_name);
    IF {{ distributed }} THEN
        -- Distributed (Citus), the policies read no table (sql/citus/):
        -- the binding is also a membership in the bank's own role.
        PERFORM _grant_bank_role(grant_bank_access.bank_id, grant_bank_access.role_name);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.grant_bank_access(text, name) IS
'Administrators: let role_name (and roles that inherit from it) use bank_id, and no bank it is not bound to. '
'Grants the bank-user role; refuses superusers, BYPASSRLS roles and members of the usage role.';

CREATE OR REPLACE FUNCTION {{ schema }}.revoke_bank_access(bank_id text, role_name name)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    bank_user name := _role_name('bank_user');
BEGIN
    PERFORM check_bank_id(revoke_bank_access.bank_id);
    PERFORM _check_not_null(revoke_bank_access.role_name, 'role_name');
    DELETE FROM bank_roles AS b
    WHERE b.bank_id = revoke_bank_access.bank_id AND b.role_name = revoke_bank_access.role_name;
    IF NOT FOUND THEN
        RETURN FALSE;
    END IF;
    -- Curation of the bank goes with the binding.
    PERFORM _drop_curator_membership(revoke_bank_access.role_name);
    IF {{ distributed }} THEN
        PERFORM _revoke_bank_role(revoke_bank_access.bank_id, revoke_bank_access.role_name);
    END IF;
    -- The last binding gone, the membership goes too (it would give nothing).
    IF NOT EXISTS (SELECT 1 FROM bank_roles AS b WHERE b.role_name = revoke_bank_access.role_name) THEN
        PERFORM _revoke_direct_membership(bank_user, revoke_bank_access.role_name);
    END IF;
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.revoke_bank_access(text, name) IS
'Administrators: remove a binding made by grant_bank_access (and the curation of the bank); returns whether there '
'was one.';

-- ---------------------------------------------------------------------------
-- Curation: who may correct a bank (administrators only)
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ internal }}._drop_curator_membership(role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    curator name := _role_name('curator');
BEGIN
    -- The curator role's privileges serve only the banks a role curates:
    -- with none left, the membership goes (if it was granted directly).
    IF NOT EXISTS (
        SELECT 1 FROM bank_roles AS b WHERE b.role_name = _drop_curator_membership.role_name AND b.may_curate
    ) THEN
        PERFORM _revoke_direct_membership(curator, _drop_curator_membership.role_name);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._drop_curator_membership(name) IS
'Internal (administrators): revoke the curator role from a role that curates no bank any more.';

CREATE OR REPLACE FUNCTION {{ schema }}.grant_curation(bank_id text, role_name name)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    target oid;
    curator name := _role_name('curator');
    everything name := _role_name('user');
BEGIN
    PERFORM check_bank_id(grant_curation.bank_id);
    PERFORM _check_not_null(grant_curation.role_name, 'role_name');
    SELECT r.oid INTO target FROM pg_roles AS r WHERE r.rolname = grant_curation.role_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role_name: role % does not exist', coalesce(quote_ident(grant_curation.role_name), 'NULL')
            USING ERRCODE = 'undefined_object';
    END IF;
    -- A curator corrects a bank it already uses: through the usage role, or
    -- its own binding (grant_bank_access). Curation grants no access: the
    -- row a member of the usage role gets here binds nothing for it, and
    -- a role bound through a group is curated through that group (a row of
    -- its own would outlive the group's binding).
    IF NOT pg_has_role(target, everything, 'USAGE') AND NOT EXISTS (
        SELECT 1
        FROM bank_roles AS b
        WHERE b.bank_id = grant_curation.bank_id AND b.role_name = grant_curation.role_name
    ) THEN
        RAISE EXCEPTION 'role_name: % is neither a member of % nor bound to bank % itself',
            quote_ident(grant_curation.role_name), quote_ident(everything), quote_literal(grant_curation.bank_id)
            USING
                ERRCODE = 'invalid_parameter_value',
                HINT = format('SELECT %I.grant_bank_access(%L, %L) first, or grant curation to the bound group.',
                    current_schema(), grant_curation.bank_id, grant_curation.role_name);
    END IF;
    INSERT INTO bank_roles AS b (bank_id, role_name, may_curate)
    VALUES (grant_curation.bank_id, grant_curation.role_name, TRUE)
    ON CONFLICT ON CONSTRAINT bank_roles_pkey DO UPDATE SET may_curate = TRUE;
    PERFORM _grant_membership(curator, grant_curation.role_name);
END;
$$;

COMMENT ON FUNCTION {{ schema }}.grant_curation(text, name) IS
'Administrators: let role_name (and roles that inherit from it) correct bank_id (merge, split, rename, aliases, '
'forget, undo), which it must already use. Grants the curator role.';

CREATE OR REPLACE FUNCTION {{ schema }}.revoke_curation(bank_id text, role_name name)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    PERFORM check_bank_id(revoke_curation.bank_id);
    PERFORM _check_not_null(revoke_curation.role_name, 'role_name');
    UPDATE bank_roles AS b SET may_curate = FALSE
    WHERE b.bank_id = revoke_curation.bank_id AND b.role_name = revoke_curation.role_name AND b.may_curate;
    IF NOT FOUND THEN
        RETURN FALSE;
    END IF;
    -- A member of the usage role is never bound by grant_bank_access: its
    -- row existed for curation only, and left behind it would bind the role
    -- to the bank should it ever become a bank user.
    -- (The catalog is asked first: Citus refuses a DELETE of a distributed
    -- table with a subquery on pg_roles on PostgreSQL 15 and 16.)
    IF EXISTS (
        SELECT 1 FROM pg_roles AS r
        WHERE r.rolname = revoke_curation.role_name AND pg_has_role(r.oid, _role_name('user'), 'USAGE')
    ) THEN
        DELETE FROM bank_roles AS b
        WHERE b.bank_id = revoke_curation.bank_id AND b.role_name = revoke_curation.role_name;
    END IF;
    PERFORM _drop_curator_membership(revoke_curation.role_name);
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION {{ schema }}.revoke_curation(text, name) IS
'Administrators: undo grant_curation (the role keeps using the bank); returns whether it could curate it. The last '
'curation gone, the curator membership goes too.';

-- ---------------------------------------------------------------------------
-- Roles, privileges and policies
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION {{ internal }}._install_grants()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    s name := current_schema();
    -- (an oid, not s::regnamespace: that would parse the name as SQL)
    ns oid := (SELECT n.oid FROM pg_namespace AS n WHERE n.nspname = current_schema());
    -- The internal schema: where this function itself lives.
    internal_ns oid := (SELECT p.pronamespace FROM pg_proc AS p WHERE p.oid = '_install_grants'::regproc);
    internal name := (SELECT n.nspname FROM pg_namespace AS n WHERE n.oid = internal_ns);
    -- Objects of other extensions are theirs to grant; ours (CREATE EXTENSION) are not skipped.
    ours_ext oid := (SELECT e.oid FROM pg_extension AS e WHERE e.extname = 'entity_resolver');
    everything name := _role_name('user');
    bank_user name := _role_name('bank_user');
    curator name := _role_name('curator');
    both_roles text;
    all_roles text;
    trgm name;
    obj record;
    -- Bump the version when a policy below changes: policies are replaced
    -- only then, so a plain reinstall does not re-create them (which takes
    -- an ACCESS EXCLUSIVE lock on every table, stalling running writers).
    marker text;
    visible text;
    own_binding text;
    ours name [];
BEGIN
    -- Roles.
    PERFORM _create_group_role(r.name, format('entity_resolver (schema %s): %s', s, r.what))
    FROM (
        VALUES
        (everything, 'uses every bank'),
        (bank_user, 'uses only the banks bound to it in bank_roles'),
        (curator, 'corrects the banks granted to it (grant_curation)')
    ) AS r (name, what);
    both_roles := format('%I, %I', everything, bank_user);
    all_roles := format('%I, %I, %I', everything, bank_user, curator);

    EXECUTE format('GRANT USAGE ON SCHEMA %I, %I TO %s', s, internal, all_roles);
    SELECT n.nspname
    INTO trgm
    FROM pg_extension AS e
    INNER JOIN pg_namespace AS n ON e.extnamespace = n.oid
    WHERE e.extname = 'pg_trgm';
    IF trgm IS DISTINCT FROM s THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %s', trgm, all_roles);
    END IF;

    -- Tables and views: nothing, then the list. Objects of extensions
    -- installed into the schema (pg_trgm) are left alone.
    FOR obj IN
        SELECT c.oid::regclass AS rel
        FROM pg_class AS c
        WHERE
            c.relnamespace = ns
            AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
            AND NOT EXISTS (
                SELECT 1
                FROM pg_depend AS d
                WHERE
                    d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
                    AND d.refobjid IS DISTINCT FROM ours_ext
            )
    LOOP
        EXECUTE format('REVOKE ALL ON %s FROM PUBLIC, %s', obj.rel, all_roles);
    END LOOP;
    -- What the functions do as their caller, table by table:
    --   banks: created on first use; configure_bank / set_entity_labels.
    --   entities: created by resolution; statistics applied by flushing;
    --     metadata belongs to the application. Names are never renamed.
    --     An entity nothing refers to (no mention, no link) is deleted by
    --     the flush (a restrictive policy lets these roles delete no other).
    --   mentions: provenance, written by resolution, deleted by forgetting.
    --   entity_aliases, entity_forwards, operations, entity_judgements:
    --     read by resolution and merges; written by operator corrections only.
    --   stats_queue: queued by resolution and linking, claimed (FOR UPDATE,
    --     which needs an UPDATE privilege: queued_at, harmless) and deleted
    --     by flushing.
    --   facts: inserted, deleted (links go with them), content corrected.
    --   reresolve_queue: queued by resolution (auto_reresolve), deleted by
    --     forgetting a unit and by reresolve_queued.
    --   name_variants, org_suffixes: installation data, read by resolution.
    -- A bank user reads its bindings (bank_roles). The curator adds to a
    -- usage role what corrections write (the functions of
    -- sql/05*.sql, as their caller): names and the curated flag
    -- of entities; mentions moved to another entity (with the score of a
    -- re-resolution's decision); pairs recounted away;
    -- aliases, forwards and the ledger. It reads its own bindings
    -- (may_curate), as a bank user does.
    FOR obj IN
        SELECT t.tbl, t.privileges, t.grantees
        FROM (
            VALUES
            ('banks', 'SELECT, INSERT, UPDATE (settings, entity_labels)', both_roles),
            ('entities', 'SELECT, INSERT, DELETE, UPDATE (mention_count, first_seen, last_seen, metadata)', both_roles),
            ('unit_entities', 'SELECT, INSERT, DELETE', both_roles),
            ('entity_cooccurrences', 'SELECT, INSERT, UPDATE (cooccurrence_count, last_cooccurred)', both_roles),
            ('stats_queue', 'SELECT, INSERT, DELETE, UPDATE (queued_at)', both_roles),
            ('facts', 'SELECT, INSERT, DELETE, UPDATE (content, fact_id)', both_roles),
            ('mentions', 'SELECT, INSERT, DELETE', both_roles),
            ('entity_aliases', 'SELECT', both_roles),
            ('entity_forwards', 'SELECT', both_roles),
            ('operations', 'SELECT', both_roles),
            ('entity_judgements', 'SELECT', both_roles),
            ('review_dismissals', 'SELECT', both_roles),
            ('reresolve_queue', 'SELECT, INSERT, DELETE', both_roles),
            ('name_variants', 'SELECT', both_roles),
            ('org_suffixes', 'SELECT', both_roles),
            ('plpython_modules', 'SELECT', both_roles),
            ('schema_migrations', 'SELECT', both_roles),
            ('bank_roles', 'SELECT', quote_ident(bank_user)),
            ('entities', 'UPDATE (canonical_name, curated)', quote_ident(curator)),
            ('mentions', 'UPDATE (entity_id, decision, score, decided_at)', quote_ident(curator)),
            ('entity_cooccurrences', 'DELETE', quote_ident(curator)),
            ('entity_aliases', 'INSERT, DELETE, UPDATE (entity_id)', quote_ident(curator)),
            ('entity_forwards', 'INSERT, DELETE, UPDATE (new_id)', quote_ident(curator)),
            ('operations', 'INSERT, UPDATE (undone_at, undone_by)', quote_ident(curator)),
            ('entity_judgements', 'INSERT, DELETE', quote_ident(curator)),
            (
                'review_dismissals', 'INSERT, UPDATE (evidence, reason, dismissed_at, dismissed_by)',
                quote_ident(curator)
            ),
            ('bank_roles', 'SELECT', quote_ident(curator))
        ) AS t (tbl, privileges, grantees)
    LOOP
        EXECUTE format('GRANT %s ON %I.%I TO %s', obj.privileges, s, obj.tbl, obj.grantees);
    END LOOP;
    FOR obj IN
        SELECT c.oid::regclass AS rel, c.reloptions
        FROM pg_class AS c
        WHERE c.relnamespace = ns AND c.relkind = 'v'
    LOOP
        -- A view reads its tables as its owner (the installer, who bypasses
        -- row-level security) unless it is security_invoker.
        IF NOT coalesce('security_invoker=true' = ANY(obj.reloptions), FALSE) THEN
            EXECUTE format('ALTER VIEW %s SET (security_invoker = true)', obj.rel);
        END IF;
        EXECUTE format('GRANT SELECT ON %s TO %s', obj.rel, both_roles);
    END LOOP;

    -- Functions: EXECUTE for the two roles only (PostgreSQL grants it to
    -- PUBLIC by default), except the administrators' functions.
    FOR obj IN
        SELECT p.oid::regprocedure AS fn, p.proname
        FROM pg_proc AS p
        WHERE
            p.pronamespace IN (ns, internal_ns)
            AND NOT EXISTS (
                SELECT 1
                FROM pg_depend AS d
                WHERE
                    d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                    AND d.refobjid IS DISTINCT FROM ours_ext
            )
    LOOP
        EXECUTE format('REVOKE ALL ON ROUTINE %s FROM PUBLIC, %s', obj.fn, all_roles);
        IF obj.proname NOT IN (
            '_install_grants', 'grant_bank_access', 'revoke_bank_access', 'grant_curation', 'revoke_curation',
            'drop_bank', '_check_administrator',
            '_drop_curator_membership', '_create_group_role', '_grant_membership', '_revoke_direct_membership',
            '_install_render', '_install_execute', '_apply_migration',
            '_install_distribute', '_grant_bank_role', '_revoke_bank_role', '_forget_shard_facts'
        ) THEN
            EXECUTE format('GRANT EXECUTE ON ROUTINE %s TO %s', obj.fn, both_roles);
        END IF;
    END LOOP;

    -- Row-level security on every table with a bank_id. The table owner and
    -- superusers are not subject to it; the usage role sees every row (a
    -- constant-true policy costs nothing and keeps every index usable); the
    -- bank-user role sees the banks bound to a role it has the privileges of.
    marker := format('entity_resolver bank isolation v2 (%s, %s, %s)', everything, bank_user, curator);
    own_binding := 'role_name IN (SELECT r.rolname FROM pg_catalog.pg_roles AS r'
        || ' WHERE pg_catalog.pg_has_role(r.oid, ''USAGE''))';
    visible := format(
        'bank_id IN (SELECT b.bank_id FROM %I.bank_roles AS b WHERE b.%s)', s, own_binding
    );
    IF {{ distributed }} THEN
        -- Citus refuses a policy with a subquery on a distributed table, and
        -- a policy function reading a table would run a distributed query on
        -- a shard: distributed, the predicates read only the catalog (a role
        -- per bank, granted by grant_bank_access; sql/citus/).
        marker := format('entity_resolver bank isolation v1 distributed (%s, %s)', everything, bank_user);
        own_binding := 'coalesce(pg_catalog.pg_has_role(pg_catalog.to_regrole('
            || 'pg_catalog.quote_ident(role_name))::pg_catalog.oid, ''USAGE''), false)';
        visible := format('%I._may_use_bank(bank_id)', internal);
    END IF;
    FOR obj IN
        SELECT c.oid::regclass AS rel, c.relname, c.relrowsecurity
        FROM pg_class AS c
        INNER JOIN pg_attribute AS a ON c.oid = a.attrelid AND a.attname = 'bank_id' AND NOT a.attisdropped
        WHERE c.relnamespace = ns AND c.relkind IN ('r', 'p')
    LOOP
        IF NOT obj.relrowsecurity THEN
            EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', obj.rel);
        END IF;
        ours := CASE WHEN obj.relname = 'bank_roles' THEN '{own_bindings}' ELSE '{all_banks,bound_banks}' END;
        -- Replaced only when one of ours is missing or of another version.
        IF (
            SELECT count(*)
            FROM pg_policy AS p
            WHERE
                p.polrelid = obj.rel
                AND p.polname = ANY(ours)
                AND obj_description(p.oid, 'pg_policy') = marker
        ) <> cardinality(ours) THEN
            EXECUTE format('DROP POLICY IF EXISTS all_banks ON %s', obj.rel);
            EXECUTE format('DROP POLICY IF EXISTS bound_banks ON %s', obj.rel);
            EXECUTE format('DROP POLICY IF EXISTS own_bindings ON %s', obj.rel);
            IF obj.relname = 'bank_roles' THEN
                -- A bank user reads its own bindings (the policies below
                -- read them as the caller), a curator its own (may_curate);
                -- only administrators write them.
                EXECUTE format(
                    'CREATE POLICY own_bindings ON %s FOR SELECT TO %I, %I USING (%s)',
                    obj.rel, bank_user, curator, own_binding
                );
                EXECUTE format('COMMENT ON POLICY own_bindings ON %s IS %L', obj.rel, marker);
            ELSE
                EXECUTE format(
                    'CREATE POLICY all_banks ON %s FOR ALL TO %I USING (TRUE) WITH CHECK (TRUE)',
                    obj.rel, everything
                );
                EXECUTE format(
                    'CREATE POLICY bound_banks ON %s FOR ALL TO %I USING (%s) WITH CHECK (%s)',
                    obj.rel, bank_user, visible, visible
                );
                EXECUTE format('COMMENT ON POLICY all_banks ON %s IS %L', obj.rel, marker);
                EXECUTE format('COMMENT ON POLICY bound_banks ON %s IS %L', obj.rel, marker);
            END IF;
        END IF;
    END LOOP;

    -- The usage roles delete entities only as the flush does: one left
    -- without a mention and not curated. Restrictive: it narrows every
    -- permissive policy above instead of widening one.
    marker := format('entity_resolver orphans only v2 (%s, %s)', everything, bank_user);
    IF {{ distributed }} THEN
        marker := format('entity_resolver orphans only v2 distributed (%s, %s)', everything, bank_user);
    END IF;
    IF NOT EXISTS (
        SELECT 1
        FROM pg_policy AS p
        WHERE
            p.polrelid = format('%I.entities', s)::regclass
            AND p.polname = 'orphans_only'
            AND obj_description(p.oid, 'pg_policy') = marker
    ) THEN
        EXECUTE format('DROP POLICY IF EXISTS orphans_only ON %I.entities', s);
        IF {{ distributed }} THEN
            -- No subquery on Citus (above): what is left is the curated flag.
            EXECUTE format(
                'CREATE POLICY orphans_only ON %I.entities AS RESTRICTIVE FOR DELETE TO %s USING (NOT curated)',
                s, both_roles
            );
        ELSE
            EXECUTE format(
                'CREATE POLICY orphans_only ON %I.entities AS RESTRICTIVE FOR DELETE TO %s'
                ' USING (NOT curated AND NOT EXISTS (SELECT 1 FROM %I.mentions AS m'
                ' WHERE m.bank_id = entities.bank_id AND m.entity_id = entities.id)'
                ' AND NOT EXISTS (SELECT 1 FROM %I.unit_entities AS ue'
                ' WHERE ue.bank_id = entities.bank_id AND ue.entity_id = entities.id))',
                s, both_roles, s, s
            );
        END IF;
        EXECUTE format('COMMENT ON POLICY orphans_only ON %I.entities IS %L', s, marker);
    END IF;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._install_grants() IS
'Internal (installer): create the usage roles if missing, grant exactly what they need, enable bank isolation.';

SELECT {{ internal }}._install_grants();
