"""What the database tests share that is not a fixture (fixtures live in
conftest.py, which test modules never import): the schemas the session's
template database installs into (tests/conftest.py installs into the same
default) and the DSN of a test's database."""

from __future__ import annotations

import psycopg

from entity_resolver.build import DEFAULT_SCHEMA

SCHEMA = DEFAULT_SCHEMA
INTERNAL = SCHEMA + "_internal"
# The group roles an installation creates (sql/999_grants.sql).
ROLES = ("entity_resolver_user", "entity_resolver_bank_user", "entity_resolver_curator")


def trgm_schema(conn: psycopg.Connection) -> str:
    """The schema pg_trgm is installed in, as SQL may name it (regnamespace::text)."""
    return conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
                        ).fetchone()[0]


def dsn_of(conn: psycopg.Connection, user: str | None = None) -> str:
    """The DSN of the database ``conn`` is connected to, as ``user`` when given."""
    i = conn.info
    return f"host={i.host} port={i.port} user={user or i.user} dbname={i.dbname}"
