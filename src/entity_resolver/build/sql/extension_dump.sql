{# The extension script's tail. Tenant tables' rows belong to the user:
   pg_dump dumps them (extension member tables are otherwise dumped as nothing
   but CREATE EXTENSION). Their sequences too: restored with its start value,
   stats_queue's id sequence would hand out the ids of restored queue rows
   again (a duplicate key at the next write). One call per statement: each
   call rewrites the pg_extension row. #}
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN
        SELECT c.oid::regclass
        FROM pg_class AS c INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
        WHERE n.nspname = {{ schema_literal }} AND c.relkind IN ('r', 'S')
            AND c.relname NOT IN ('schema_migrations', 'plpython_modules', 'name_variants', 'org_suffixes')
        ORDER BY c.relname
    LOOP
        PERFORM pg_catalog.pg_extension_config_dump(t, '');
    END LOOP;
END;
$$;
