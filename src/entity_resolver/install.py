"""Install or upgrade entity_resolver over a plain connection.

Two kinds of SQL, as in timescale/pgai:

* ``migrations/NNNN_name.sql`` - incremental (tables, indexes), applied once
  each, in order, each in its own transaction, recorded in
  ``<schema>.schema_migrations``; frozen once released.
* ``sql/*.sql`` - idempotent (``CREATE OR REPLACE`` functions, views, grants),
  re-applied on every install, so a fix to a function never needs a migration.

The PL/Python modules (``plpython/*.py``) are stored as rows of
``<schema>.plpython_modules``; nothing is read from the server's file system.
Files are templates: ``{{ schema }}`` and ``{{ trgm_schema }}`` become quoted
identifiers, ``{{ code_version }}`` a digest of everything installed.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import psycopg
from psycopg import sql

# Idempotent files, in the order they must be applied.
SQL_FILES = [
    "modules.sql",
    "banks.sql",
    "resolve.sql",
    "write_path.sql",
    "retrieval.sql",
    "views.sql",
    "grants.sql",
]
# PL/Python modules, in load order (each may import the earlier ones).
PLPYTHON_MODULES = ["words", "settings", "scoring", "clustering", "labels", "resolver"]

INSTALL_LOCK = 7_310_447_224_051  # pg_advisory_xact_lock key for installers


class InstallError(RuntimeError):
    """Installation cannot proceed; the message says what to do."""


class LocaleWarning(UserWarning):
    """The database's LC_CTYPE folds only ASCII letters."""


@dataclass
class InstallReport:
    schema: str
    applied_migrations: list[int] = field(default_factory=list)
    version: int = 0
    code_version: str = ""
    warnings: list[str] = field(default_factory=list)


def data_dir() -> Path:
    """Where sql/, migrations/ and plpython/ are: in the wheel, or in the repository."""
    packaged = Path(str(resources.files("entity_resolver"))) / "_data"
    if (packaged / "migrations").is_dir():
        return packaged
    repo = Path(__file__).resolve().parents[2]
    if (repo / "migrations").is_dir():
        return repo
    raise InstallError("entity_resolver data files (sql/, migrations/, plpython/) not found")


def migrations(base: Path | None = None) -> list[tuple[int, str, str]]:
    """(version, name, text) of every incremental migration, in order."""
    base = base or data_dir()
    out = []
    for path in sorted((base / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql")):
        out.append((int(path.name[:4]), path.stem, path.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in out]
    if versions != list(range(1, len(versions) + 1)):
        raise InstallError(f"migration numbers must be 1..n without gaps, got {versions}")
    return out


def module_sources(base: Path | None = None) -> list[tuple[str, str]]:
    base = base or data_dir()
    return [(name, (base / "plpython" / f"{name}.py").read_text(encoding="utf-8"))
            for name in PLPYTHON_MODULES if (base / "plpython" / f"{name}.py").exists()]


def sql_sources(base: Path | None = None) -> list[tuple[str, str]]:
    base = base or data_dir()
    return [(name, (base / "sql" / name).read_text(encoding="utf-8"))
            for name in SQL_FILES if (base / "sql" / name).exists()]


_TOKEN = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def render(text: str, values: dict[str, str]) -> str:
    """Replace ``{{ name }}`` tokens; an unknown token is an error, not a silent blank."""

    def sub(m: re.Match) -> str:
        if m.group(1) not in values:
            raise InstallError(f"unknown template token {m.group(0)}")
        return values[m.group(1)]

    return _TOKEN.sub(sub, text)


def _quote_ident(conn: psycopg.Connection, name: str) -> str:
    return sql.Identifier(name).as_string(conn)


def extension_available(conn: psycopg.Connection, name: str) -> bool:
    """Whether the server has the extension's files (control file) installed."""
    row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone()
    return row is not None


def _ensure_extension(conn: psycopg.Connection, name: str, schema_ident: str | None) -> None:
    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone()
    if row:
        return
    major = conn.info.server_version // 10000
    if not extension_available(conn, name):
        package = {
            "plpython3u": f"postgresql-plpython3-{major}",
            "pg_trgm": f"postgresql-contrib (postgresql-{major} on Debian 12 and later)",
        }.get(name, name)
        raise InstallError(
            f"the server has no {name} extension: install the OS package {package} "
            f"on the database server, then run the installer again"
        )
    stmt = f"CREATE EXTENSION IF NOT EXISTS {name}"
    if schema_ident:
        stmt += f" WITH SCHEMA {schema_ident}"
    try:
        with conn.transaction():
            conn.execute(stmt)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise InstallError(
            f"not allowed to create extension {name} as role {conn.info.user}: "
            f"a superuser must run CREATE EXTENSION {name} once, or run the installer as a superuser"
        ) from exc


def _ctype(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()[0]


def unicode_collation(conn: psycopg.Connection) -> str | None:
    """A libc C.UTF-8 collation of this UTF-8 database, as a quoted name; None if there is none."""
    row = conn.execute(
        "SELECT quote_ident(n.nspname) || '.' || quote_ident(c.collname) FROM pg_collation c"
        " JOIN pg_namespace n ON n.oid = c.collnamespace"
        " WHERE c.collprovider = 'c' AND lower(c.collctype) IN ('c.utf8', 'c.utf-8')"
        " AND c.collencoding IN (-1, pg_char_to_encoding('UTF8'))"
        " AND pg_char_to_encoding('UTF8') = (SELECT encoding FROM pg_database"
        " WHERE datname = current_database())"
        " ORDER BY c.collname LIMIT 1"
    ).fetchone()
    return row[0] if row else None


def name_collation(conn: psycopg.Connection) -> str:
    """The collation entity names fold case with (the canonical_name column's).

    Under LC_CTYPE C, lower() folds ASCII letters only, so 'İstanbul' would
    never meet 'istanbul' in the unique index. There the column takes the
    C.UTF-8 collation, whose lower() folds every letter (İ -> i, as in a UTF-8
    database); the resolver lowers mention texts with the column's collation,
    so both sides of every comparison still fold alike.
    """
    if _ctype(conn) in ("C", "POSIX"):
        return unicode_collation(conn) or '"default"'
    return '"default"'


def check_locale(conn: psycopg.Connection) -> str | None:
    """Return a warning text when LC_CTYPE is C/POSIX, else None."""
    ctype = _ctype(conn)
    if ctype not in ("C", "POSIX"):
        return None
    if unicode_collation(conn):
        folding = (
            "entity names fold case with the C.UTF-8 collation ('İstanbul' = 'istanbul'), but "
        )
    else:
        folding = "lower() folds ASCII letters only ('İstanbul' <> 'istanbul'), and "
    return (
        f"database LC_CTYPE is {ctype}: {folding}pg_trgm treats non-ASCII letters as "
        f"non-letters, so names like 'Zoë' or CJK names lose fuzzy matching (exact matches "
        f"still work); create the database with a UTF-8 locale such as C.UTF-8 for full "
        f"Unicode fuzzy matching"
    )


def code_version(schema: str, base: Path | None = None) -> str:
    h = hashlib.sha256(schema.encode())
    for name, text in module_sources(base) + sql_sources(base):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def installed_version(conn: psycopg.Connection, schema: str = "entity_resolver") -> int:
    """Highest applied migration, 0 when not installed."""
    reg = conn.execute(
        "SELECT to_regclass(format('%%I.schema_migrations', %s::text))", (schema,)
    ).fetchone()[0]
    if reg is None:
        return 0
    return conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations").format(sql.Identifier(schema))
    ).fetchone()[0]


def install(
    conn: psycopg.Connection,
    schema: str = "entity_resolver",
    *,
    upto: int | None = None,
    base: Path | None = None,
) -> InstallReport:
    """Install or upgrade entity_resolver in ``schema``; idempotent.

    ``upto`` stops after that migration and skips the idempotent files (which
    target the newest schema): it reproduces an old installation's tables so
    that upgrades can be tested step by step.
    The connection is used in autocommit mode and returned as it was.
    """
    if not isinstance(schema, str) or not schema.strip() or len(schema.encode()) > 63:
        raise InstallError("schema: must be a non-empty name of at most 63 bytes")
    base = base or data_dir()
    report = InstallReport(schema=schema)
    previous_autocommit = conn.autocommit
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise InstallError("install() needs a connection that is not inside a transaction")
    conn.autocommit = True
    try:
        superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if not (superuser and superuser[0]):
            # PL/Python is an untrusted language: only a superuser may create
            # functions in it (and the plpython3u extension itself).
            raise InstallError(
                f"installing needs a superuser: role {conn.info.user} may not create PL/Python "
                f"(plpython3u) functions; run the installer as a superuser, then grant the "
                f"usage role ({schema}_user) to application roles"
            )
        warning = check_locale(conn)
        if warning:
            report.warnings.append(warning)
            warnings.warn(warning, LocaleWarning, stacklevel=2)
        schema_ident = _quote_ident(conn, schema)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema_ident}")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {schema_ident}.schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute(
                f"COMMENT ON TABLE {schema_ident}.schema_migrations IS "
                "'Installation metadata: incremental migrations applied, one row each.'"
            )
        _ensure_extension(conn, "plpython3u", None)
        _ensure_extension(conn, "pg_trgm", schema_ident)
        trgm_schema = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'pg_trgm'"
        ).fetchone()[0]
        version = code_version(schema, base)
        values = {
            "schema": schema_ident,
            "trgm_schema": _quote_ident(conn, trgm_schema),
            "code_version": version,
            "name_collation": name_collation(conn),
        }
        for number, name, text in migrations(base):
            if upto is not None and number > upto:
                break
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
                done = conn.execute(
                    f"SELECT checksum FROM {schema_ident}.schema_migrations WHERE version = %s", (number,)
                ).fetchone()
                checksum = hashlib.sha256(text.encode()).hexdigest()
                if done:
                    if done[0] != checksum:
                        # Migrations are frozen once applied: an edited one
                        # would leave this database unlike a fresh install.
                        raise InstallError(
                            f"migration {name} differs from the one applied to this database "
                            f"(checksum {done[0][:12]}, file {checksum[:12]}): released migrations "
                            f"must not be edited; put the change in a new migration"
                        )
                    continue
                conn.execute(render(text, values))
                conn.execute(
                    f"INSERT INTO {schema_ident}.schema_migrations (version, name, checksum)"
                    " VALUES (%s, %s, %s)",
                    (number, name, checksum),
                )
                report.applied_migrations.append(number)
        report.version = installed_version(conn, schema)
        if upto is not None:
            return report
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
            _install_modules(conn, schema_ident, base)
            for _, text in sql_sources(base):
                conn.execute(render(text, values))
        report.code_version = version
        return report
    finally:
        conn.autocommit = previous_autocommit


def _install_modules(conn: psycopg.Connection, schema_ident: str, base: Path) -> None:
    modules = module_sources(base)
    names = [n for n, _ in modules]
    conn.execute(
        f"DELETE FROM {schema_ident}.plpython_modules WHERE NOT (name = ANY(%s))", (names,)
    )
    for ordinal, (name, text) in enumerate(modules):
        conn.execute(
            f"INSERT INTO {schema_ident}.plpython_modules (name, ordinal, source, sha256)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET"
            " ordinal = excluded.ordinal, source = excluded.source, sha256 = excluded.sha256",
            (name, ordinal, text, hashlib.sha256(text.encode()).hexdigest()),
        )
