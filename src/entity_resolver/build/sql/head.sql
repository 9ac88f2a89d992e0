{# The script's head. Its own statements qualify our names and run our
   functions, which pin their search_path: nothing here may come from public
   or a temporary schema (pgspot checks the script under this path). LOCAL:
   the installer's transaction or CREATE EXTENSION restores it. #}
SET LOCAL search_path = pg_catalog, pg_temp;
SELECT pg_advisory_xact_lock({{ install_lock }});
CREATE SCHEMA IF NOT EXISTS {{ schema }};
CREATE SCHEMA IF NOT EXISTS {{ internal }};
