"""A normalised snapshot of what an installation of entity_resolver defines.

``snapshot(conn)`` reads the catalog of one database into a dict of
categories (functions, tables, columns, ...), each a dict from an object's
name to a tuple of its properties, with no oids, so two databases compare
with ``==`` and :func:`diff` prints only what differs. Roles are cluster-wide:
the snapshot holds the three group roles' attributes and every privilege our
objects give them, not the roles' other memberships.

What only an extension has (the objects that are its members, the tables
marked for pg_dump) is read apart, by :func:`extension_members` and
:func:`config_dump_marks`, so a test states those differences explicitly.
"""

from __future__ import annotations

from typing import Any

import psycopg
from shared import INTERNAL, ROLES, SCHEMA


Snapshot = dict[str, dict[Any, tuple]]

# Each query returns (key..., properties...): the first ``n`` columns name the
# object, the rest describe it. %(schemas)s is our two schemas.
_QUERIES: dict[str, tuple[int, str]] = {
    "schemas": (1, """
        SELECT n.nspname, pg_get_userbyid(n.nspowner), n.nspacl::text[], obj_description(n.oid, 'pg_namespace')
        FROM pg_namespace n WHERE n.nspname = ANY(%(schemas)s)
    """),
    # The schema pg_trgm lives in: the installation grants USAGE on it.
    "trgm_schema": (1, """
        SELECT n.nspname, n.nspacl::text[]
        FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'
    """),
    "functions": (3, """
        SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid),
               pg_get_function_result(p.oid), l.lanname, p.prokind, p.provolatile, p.proparallel,
               p.prosecdef, p.proisstrict, p.proleakproof, p.proconfig, p.prosrc,
               pg_get_function_arguments(p.oid), pg_get_userbyid(p.proowner), p.proacl::text[],
               obj_description(p.oid, 'pg_proc')
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
        WHERE n.nspname = ANY(%(schemas)s)
    """),
    "relations": (2, """
        SELECT n.nspname, c.relname, c.relkind, c.relpersistence, c.reloptions, c.relrowsecurity,
               c.relforcerowsecurity, pg_get_userbyid(c.relowner), c.relacl::text[],
               obj_description(c.oid, 'pg_class')
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """),
    # Position among the live columns: a dropped column leaves a hole in attnum.
    "columns": (3, """
        SELECT n.nspname, c.relname, a.attname,
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum),
               format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
               a.attidentity, a.attgenerated,
               CASE WHEN a.attcollation <> 0 THEN quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END,
               a.attacl::text[], col_description(c.oid, a.attnum)
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        LEFT JOIN pg_collation co ON co.oid = a.attcollation
        LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
        WHERE n.nspname = ANY(%(schemas)s) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND a.attnum > 0 AND NOT a.attisdropped
    """),
    "constraints": (3, """
        SELECT n.nspname, c.conrelid::regclass::text, c.conname, c.contype, pg_get_constraintdef(c.oid),
               c.condeferrable, c.condeferred, c.convalidated, obj_description(c.oid, 'pg_constraint')
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """),
    "indexes": (2, """
        SELECT schemaname, indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = ANY(%(schemas)s)
    """),
    "triggers": (3, """
        SELECT n.nspname, c.relname, t.tgname, pg_get_triggerdef(t.oid), t.tgenabled,
               obj_description(t.oid, 'pg_trigger')
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%(schemas)s) AND NOT t.tgisinternal
    """),
    "views": (2, """
        SELECT schemaname, viewname, definition FROM pg_views WHERE schemaname = ANY(%(schemas)s)
    """),
    "policies": (3, """
        SELECT n.nspname, c.relname, p.polname, p.polcmd, p.polpermissive,
               ARRAY(SELECT CASE r WHEN 0 THEN 'public' ELSE pg_get_userbyid(r) END
                     FROM unnest(p.polroles) AS r ORDER BY 1),
               pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
               obj_description(p.oid, 'pg_policy')
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(%(schemas)s)
    """),
    "sequences": (2, """
        SELECT schemaname, sequencename, data_type::text, start_value, min_value, max_value, increment_by,
               cycle, cache_size, sequenceowner
        FROM pg_sequences WHERE schemaname = ANY(%(schemas)s)
    """),
    # Types other than the row types of our tables and views (composites,
    # enums, domains): what DROP EXTENSION must remove too.
    "types": (2, """
        SELECT n.nspname, t.typname, t.typtype, format_type(t.typbasetype, t.typtypmod)
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = ANY(%(schemas)s)
          AND NOT (t.typrelid <> 0 AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) <> 'c')
          AND t.typelem = 0
    """),
    "roles": (1, """
        SELECT r.rolname, r.rolsuper, r.rolinherit, r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
               r.rolbypassrls, shobj_description(r.oid, 'pg_authid')
        FROM pg_roles r WHERE r.rolname = ANY(%(roles)s)
    """),
    # Rows the installation itself writes (not applied_at, a timestamp).
    "schema_migrations": (1, "SELECT version, name, checksum FROM entity_resolver.schema_migrations"),
    "plpython_modules": (1, "SELECT name, ordinal, sha256, md5(source) FROM entity_resolver.plpython_modules"),
}


def _norm(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def snapshot(conn: psycopg.Connection) -> Snapshot:
    """Everything our installation defines in this database, by category."""
    params = {"schemas": [SCHEMA, INTERNAL], "roles": list(ROLES)}
    out: Snapshot = {}
    installed = conn.execute("SELECT to_regclass('entity_resolver.schema_migrations') IS NOT NULL").fetchone()[0]
    for category, (n, query) in _QUERIES.items():
        if category in ("schema_migrations", "plpython_modules") and not installed:
            out[category] = {}
            continue
        rows = conn.execute(query, params).fetchall()
        out[category] = {
            (row[0] if n == 1 else tuple(row[:n])): tuple(_norm(v) for v in row[n:]) for row in rows
        }
    return out


def diff(a: Snapshot, b: Snapshot, names: tuple[str, str] = ("a", "b")) -> str:
    """What differs between two snapshots, one line per object; empty when equal."""
    lines = []
    for category in sorted(set(a) | set(b)):
        left, right = a.get(category, {}), b.get(category, {})
        for key in sorted(set(left) | set(right), key=repr):
            if left.get(key) != right.get(key):
                lines.append(f"{category} {key!r}:\n"
                             f"    {names[0]}: {left.get(key)!r}\n    {names[1]}: {right.get(key)!r}")
    return "\n".join(lines)


def extension_members(conn: psycopg.Connection, extension: str = "entity_resolver") -> set[str]:
    """pg_describe_object of every object that belongs to ``extension``."""
    return {r[0] for r in conn.execute(
        "SELECT pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_depend d"
        " JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid"
        " WHERE e.extname = %s AND d.deptype = 'e'", (extension,))}


def config_dump_marks(conn: psycopg.Connection, extension: str = "entity_resolver") -> dict[str, str]:
    """{relation: filter} of what ``extension`` marked with pg_extension_config_dump; {} if none."""
    row = conn.execute(
        "SELECT extconfig::regclass[]::text[], extcondition FROM pg_extension WHERE extname = %s",
        (extension,)).fetchone()
    if row is None or row[0] is None:
        return {}
    return dict(zip(row[0], row[1]))


# The catalogs whose objects live in a schema: (catalog, its schema column, a condition).
_SCHEMA_OBJECTS = (
    ("pg_class", "relnamespace", "relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')"),
    ("pg_proc", "pronamespace", "TRUE"),
    ("pg_type", "typnamespace", "typrelid = 0 AND typelem = 0"),
    ("pg_operator", "oprnamespace", "TRUE"),
    ("pg_opclass", "opcnamespace", "TRUE"),
    ("pg_opfamily", "opfnamespace", "TRUE"),
)


def installed_objects(conn: psycopg.Connection) -> set[str]:
    """Every object of the installer's schemas (as pg_describe_object), for an installer-made database."""
    query = " UNION ALL ".join(
        ["SELECT pg_describe_object('pg_namespace'::regclass, oid, 0) FROM pg_namespace WHERE nspname = ANY(%(s)s)"]
        + [f"SELECT pg_describe_object('{catalog}'::regclass, oid, 0) FROM {catalog}"
           f" WHERE {column} IN (SELECT oid FROM pg_namespace WHERE nspname = ANY(%(s)s)) AND {condition}"
           for catalog, column, condition in _SCHEMA_OBJECTS])
    return {r[0] for r in conn.execute(query, {"s": [SCHEMA, INTERNAL]})}
