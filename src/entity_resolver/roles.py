"""Roles and bank isolation from Python (docs/security.md).

    from entity_resolver import roles

    roles.usage_role(conn)                       # 'entity_resolver_user'
    roles.grant_usage(conn, "app")               # app may use every bank
    roles.grant_bank_access(conn, "team-a", "alice")   # alice: bank team-a only
    roles.revoke_bank_access(conn, "team-a", "alice")
    roles.grant_curation(conn, "team-a", "alice")      # alice may correct team-a too
    roles.revoke_curation(conn, "team-a", "alice")

Each call is one SQL statement on the connection given, in its transaction
state (autocommit: it commits by itself). Granting needs an administrator:
the installer (a superuser) or a role with CREATEROLE and the privileges of
the tables' owner. The SQL behind these is in sql/grants.sql.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

DEFAULT_SCHEMA = "entity_resolver"


def _call(conn: psycopg.Connection, schema: str, function: str, *args):
    query = sql.SQL("SELECT {}.{}({})").format(
        sql.Identifier(schema), sql.Identifier(function), sql.SQL(", ").join(sql.Placeholder() * len(args)))
    return conn.execute(query, args).fetchone()[0]


def usage_role(conn: psycopg.Connection, schema: str = DEFAULT_SCHEMA) -> str:
    """The role that uses every bank of the installation (``<schema>_user``)."""
    return _call(conn, schema, "usage_role")


def bank_user_role(conn: psycopg.Connection, schema: str = DEFAULT_SCHEMA) -> str:
    """The role whose members use only the banks bound to them (``<schema>_bank_user``)."""
    return _call(conn, schema, "bank_user_role")


def curator_role(conn: psycopg.Connection, schema: str = DEFAULT_SCHEMA) -> str:
    """The role that lets its members correct the banks granted to them (``<schema>_curator``)."""
    return _call(conn, schema, "curator_role")


def grant_usage(conn: psycopg.Connection, role: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Let ``role`` use every bank: make it a member of the usage role."""
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(usage_role(conn, schema)), sql.Identifier(role)))


def revoke_usage(conn: psycopg.Connection, role: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Undo :func:`grant_usage`."""
    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(usage_role(conn, schema)), sql.Identifier(role)))


def grant_bank_access(conn: psycopg.Connection, bank_id: str, role: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Let ``role`` (and roles inheriting from it) use ``bank_id`` and no bank it is not bound to."""
    _call(conn, schema, "grant_bank_access", bank_id, role)


def revoke_bank_access(conn: psycopg.Connection, bank_id: str, role: str, schema: str = DEFAULT_SCHEMA) -> bool:
    """Remove a binding; returns whether there was one."""
    return _call(conn, schema, "revoke_bank_access", bank_id, role)


def bank_bindings(conn: psycopg.Connection, schema: str = DEFAULT_SCHEMA) -> list[tuple[str, str]]:
    """(bank_id, role) of every binding the connection's role may see, sorted."""
    query = sql.SQL("SELECT bank_id, role_name::text FROM {}.bank_roles ORDER BY 1, 2").format(
        sql.Identifier(schema))
    return [tuple(r) for r in conn.execute(query).fetchall()]


def grant_curation(conn: psycopg.Connection, bank_id: str, role: str, schema: str = DEFAULT_SCHEMA) -> None:
    """Let ``role``, which uses ``bank_id`` already, correct it (merge, split, rename, aliases, forget, undo)."""
    _call(conn, schema, "grant_curation", bank_id, role)


def revoke_curation(conn: psycopg.Connection, bank_id: str, role: str, schema: str = DEFAULT_SCHEMA) -> bool:
    """End a curation; returns whether the role could curate the bank."""
    return _call(conn, schema, "revoke_curation", bank_id, role)
