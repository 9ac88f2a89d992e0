{# The installer's own functions and ledger, created before the migrations
   run (the script's part after head.sql). #}
-- What depends on the target database is rendered there, at install time:
-- where pg_trgm lives and the collation entity names fold case with.
CREATE OR REPLACE FUNCTION {{ internal }}._install_render(body text)
RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    trgm text;
    coll text := '"default"';
BEGIN
    SELECT quote_ident(n.nspname) INTO trgm
    FROM pg_extension AS e INNER JOIN pg_namespace AS n ON e.extnamespace = n.oid
    WHERE e.extname = 'pg_trgm';
    IF trgm IS NULL THEN
        RAISE EXCEPTION 'entity_resolver needs the pg_trgm extension: CREATE EXTENSION pg_trgm first'
            USING ERRCODE = 'undefined_object';
    END IF;
    -- The trigram index leads with bank_id: btree_gin's operator class for text.
    IF NOT EXISTS (SELECT 1 FROM pg_extension AS e WHERE e.extname = 'btree_gin') THEN
        RAISE EXCEPTION 'entity_resolver needs the btree_gin extension: CREATE EXTENSION btree_gin first'
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Under LC_CTYPE C, lower() folds ASCII letters only: entity names then
    -- take the C.UTF-8 collation, whose lower() folds every letter.
    IF (SELECT d.datctype FROM pg_database AS d WHERE d.datname = current_database()) IN ('C', 'POSIX') THEN
        SELECT quote_ident(n.nspname) || '.' || quote_ident(c.collname) INTO coll
        FROM pg_collation AS c INNER JOIN pg_namespace AS n ON c.collnamespace = n.oid
        WHERE c.collprovider = 'c' AND lower(c.collctype) IN ('c.utf8', 'c.utf-8')
            AND c.collencoding IN (-1, pg_char_to_encoding('UTF8'))
            AND pg_char_to_encoding('UTF8')
            = (SELECT d.encoding FROM pg_database AS d WHERE d.datname = current_database())
        ORDER BY c.collname
        LIMIT 1;
        coll := coalesce(coll, '"default"');
    END IF;
    RETURN replace(replace(body, '{{ trgm_schema }}', trgm), '{{ name_collation }}', coll);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._install_render(text) IS
'Internal (installer): render what depends on this database (pg_trgm''s schema, the name collation) into SQL.';

CREATE OR REPLACE FUNCTION {{ internal }}._install_execute(body text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = {{ search_path }}
AS $$ BEGIN EXECUTE _install_render(body); END; $$;

COMMENT ON FUNCTION {{ internal }}._install_execute(text) IS
'Internal (installer): run SQL after rendering what depends on this database.';

CREATE TABLE IF NOT EXISTS {{ schema }}.schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE {{ schema }}.schema_migrations IS
'Installation metadata: incremental migrations applied, one row each.';
COMMENT ON COLUMN {{ schema }}.schema_migrations.version IS 'The migration''s number (its file''s prefix).';
COMMENT ON COLUMN {{ schema }}.schema_migrations.name IS 'The migration''s file name, without .sql.';
COMMENT ON COLUMN {{ schema }}.schema_migrations.checksum IS
'SHA-256 of the file as applied: an install refuses a migration changed since.';
COMMENT ON COLUMN {{ schema }}.schema_migrations.applied_at IS 'When it was applied.';

CREATE OR REPLACE FUNCTION {{ internal }}._apply_migration(
    version integer, name text, checksum text, body text
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    applied text;
BEGIN
    SELECT m.checksum INTO applied FROM schema_migrations AS m WHERE m.version = _apply_migration.version;
    IF FOUND THEN
        -- Migrations are frozen once applied: an edited one would leave this
        -- database unlike a fresh install.
        IF applied <> _apply_migration.checksum THEN
            RAISE EXCEPTION 'migration % differs from the one applied to this database (checksum %, file %): '
                'released migrations must not be edited; put the change in a new migration',
                _apply_migration.name, left(applied, 12), left(_apply_migration.checksum, 12)
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN FALSE;
    END IF;
    EXECUTE _install_render(body);
    INSERT INTO schema_migrations (version, name, checksum)
    VALUES (_apply_migration.version, _apply_migration.name, _apply_migration.checksum);
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._apply_migration(integer, text, text, text) IS
'Internal (installer): apply one incremental migration unless the ledger has it; refuse one whose text changed.';
