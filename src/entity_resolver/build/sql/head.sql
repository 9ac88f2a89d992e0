SET LOCAL search_path = pg_catalog, pg_temp;
SELECT pg_advisory_xact_lock({{ install_lock }});
CREATE SCHEMA IF NOT EXISTS {{ schema }};
CREATE SCHEMA IF NOT EXISTS {{ internal }};
