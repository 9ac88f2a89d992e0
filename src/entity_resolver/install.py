"""Install or upgrade entity_resolver over a plain connection (no server file access needed).

Two ways to install, one script (the build package renders it from migrations/, sql/
and plpython/):

* ``CREATE EXTENSION entity_resolver`` after ``make install-extension`` put
  the control file and scripts into the server's extension directory: what a
  DBA expects (``\\dx``, ``pg_dump`` as one line, ``ALTER EXTENSION UPDATE``).
* :func:`install`, for users who cannot put files on the server: it runs the
  same script over the connection, in one transaction, as a superuser.

:func:`install` says which path an installation took (``InstallReport.method``)
and refuses to run over an installation made by CREATE EXTENSION (upgrade
that one with ALTER EXTENSION ... UPDATE).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, TypeVar

import psycopg
from psycopg import sql

import entity_resolver.build as build
from entity_resolver.build import (BuildError, code_version, data_dir, internal_schema,  # noqa: F401
                                   migrations, package_version)

INSTALL_LOCK = build.INSTALL_LOCK  # pg_advisory_xact_lock key for installers (also in the script)
# Shards per distributed table when install --distributed distributes them:
# well above the number of workers, so that banks can be rebalanced onto new
# ones shard by shard (docs/scaling.md).
DEFAULT_SHARD_COUNT = 32


class InstallError(RuntimeError):
    """Installation cannot proceed; the message says what to do."""


class LocaleWarning(UserWarning):
    """The database's LC_CTYPE folds only ASCII letters."""


@dataclass
class InstallReport:
    schema: str
    applied_migrations: List[int] = field(default_factory=list)
    version: int = 0
    code_version: str = ""
    warnings: List[str] = field(default_factory=list)
    # "installer" (this module) or "extension" (CREATE EXTENSION, found installed)
    method: str = "installer"
    changed: bool = True
    # install --distributed: what was distributed now ({"tables": [...],
    # "reference_tables": [...], "functions": [...]}); None when not distributed.
    distributed: Optional[dict] = None
    # Objects of the idempotent part (triggers, policies, views, functions)
    # that were missing on a re-install of the same code, and are back.
    repaired: List[str] = field(default_factory=list)


def extension_available(conn: psycopg.Connection, name: str) -> bool:
    """Whether the server has the extension's files (control file) installed."""
    row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone()
    return row is not None


def _create_extension(conn: psycopg.Connection, name: str, schema: Optional[str] = None) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone():
        return
    major = conn.info.server_version // 10000
    if not extension_available(conn, name):
        package = {
            "plpython3u": f"postgresql-plpython3-{major}",
            "pg_trgm": f"postgresql-contrib (postgresql-{major} on Debian 12 and later)",
            "btree_gin": f"postgresql-contrib (postgresql-{major} on Debian 12 and later)",
        }.get(name, name)
        raise InstallError(
            f"the server has no {name} extension: install the OS package {package} "
            f"on the database server, then run the installer again"
        )
    stmt = sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(name))
    if schema:
        stmt += sql.SQL(" WITH SCHEMA {}").format(sql.Identifier(schema))
    try:
        with conn.transaction():
            conn.execute(stmt)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise InstallError(
            f"not allowed to create extension {name} as role {conn.info.user}: "
            f"a superuser must run CREATE EXTENSION {name} once, or run the installer as a superuser"
        ) from exc


def _trgm_home(conn: psycopg.Connection, name: str = "pg_trgm") -> str:
    """Where a new pg_trgm (or btree_gin) goes: public, or a schema of its own when there is no public."""
    if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'public'").fetchone():
        return "public"
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(name)))
    return name


def _ensure_trgm(conn: psycopg.Connection, schema: str) -> None:
    """pg_trgm installed, and never in our schemas (0.1.0 installed it into ours: moved out)."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_trgm'").fetchone()
    if row is None:
        _create_extension(conn, "pg_trgm", _trgm_home(conn))
    elif row[0] in (schema, internal_schema(schema)):
        # pg_trgm is relocatable; the trigram index keeps its operator class
        # (referenced by oid) and the script re-renders every qualified use.
        with conn.transaction():
            conn.execute(sql.SQL("ALTER EXTENSION pg_trgm SET SCHEMA {}").format(
                sql.Identifier(_trgm_home(conn))))


def _ensure_btree_gin(conn: psycopg.Connection) -> None:
    """btree_gin installed: the trigram index leads with bank_id (migration 0010), which takes
    btree_gin's GIN operator class for text (the default one, found wherever the extension lives)."""
    if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'").fetchone():
        _create_extension(conn, "btree_gin", _trgm_home(conn, "btree_gin"))


def _refuse_foreign_schemas(conn: psycopg.Connection, schema: str) -> None:
    """Refuse to install into a schema a role that is not a superuser owns.

    Its owner could replace the PL/Python modules (plpython_modules) with code
    every caller, superusers included, would then run as the server's OS
    user. CREATE EXTENSION refuses such a schema by itself.
    """
    for name in (schema, internal_schema(schema)):
        row = conn.execute(
            "SELECT r.rolname, r.rolsuper FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner"
            " WHERE n.nspname = %s", (name,)).fetchone()
        if row is not None and not row[1]:
            raise InstallError(
                f"schema {name} exists and is owned by role {row[0]}, which is not a superuser: its owner "
                f"could replace the resolver's code; drop it or make a superuser its owner "
                f"(ALTER SCHEMA {name} OWNER TO ...), then install again"
            )


def _ctype(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()[0]


def unicode_collation(conn: psycopg.Connection) -> Optional[str]:
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


def check_locale(conn: psycopg.Connection) -> Optional[str]:
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


def installed_code_version(conn: psycopg.Connection, schema: str = "entity_resolver") -> Optional[str]:
    """The code version of the installed functions (None when not installed); a cheap read, no locks."""
    internal = internal_schema(schema)
    row = conn.execute(
        "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = %s AND p.proname = '_last_call_statements_py'", (internal,)
    ).fetchone()
    if row is None:
        return None
    marker = 'key = "entity_resolver:'
    start = row[0].find(marker)
    if start < 0:
        return None
    return row[0][start + len(marker):].split('"', 1)[0]


def is_current(conn: psycopg.Connection, schema: str = "entity_resolver", base: Optional[Path] = None) -> bool:
    """True iff the installed code is exactly this package's (nothing for install() to do)."""
    return (installed_code_version(conn, schema) == code_version(schema, base)
            and installed_version(conn, schema) == len(migrations(base)))


def installed_by_extension(conn: psycopg.Connection, schema: str = "entity_resolver") -> Optional[str]:
    """The extension version when entity_resolver in ``schema`` was installed by CREATE EXTENSION."""
    row = conn.execute(
        "SELECT e.extversion FROM pg_extension e JOIN pg_depend d"
        "   ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid AND d.deptype = 'e'"
        " JOIN pg_namespace n ON d.classid = 'pg_namespace'::regclass AND d.objid = n.oid"
        " WHERE e.extname = %s AND n.nspname = %s", (build.EXTENSION, schema)).fetchone()
    return row[0] if row else None


def citus_version(conn: psycopg.Connection) -> Optional[str]:
    """The version of the Citus extension in this database, None without Citus."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
    return row[0] if row else None


def is_distributed(conn: psycopg.Connection, schema: str = "entity_resolver") -> bool:
    """True iff entity_resolver in ``schema`` was installed with ``distributed=True`` (its banks table is distributed)."""
    if citus_version(conn) is None:
        return False
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(format('%%I.banks', %s::text)))",
        (schema,)).fetchone()[0]


def _check_citus(conn: psycopg.Connection, schema: str) -> None:
    """Refuse a distributed installation where it cannot be made; nothing is changed."""
    version = citus_version(conn)
    if version is None:
        available = extension_available(conn, "citus")
        raise InstallError(
            "install --distributed needs a Citus coordinator: this database has no citus extension"
            + ("" if available else " (and the server has no Citus installed)")
            + "; install Citus on every node (its packages), add shared_preload_libraries = 'citus', "
              "CREATE EXTENSION citus in the database and add the workers (citus_add_node); "
              "nothing was changed")
    coordinator, nodes = conn.execute(
        "SELECT citus_is_coordinator(), (SELECT count(*) FROM pg_dist_node"
        " WHERE isactive AND noderole = 'primary' AND shouldhaveshards)").fetchone()
    if not coordinator:
        raise InstallError("install --distributed must run on the Citus coordinator, not on a worker; "
                           "nothing was changed")
    if nodes == 0:
        raise InstallError("the Citus cluster has no node for shards: add the workers first "
                           "(SELECT citus_add_node(host, port)); nothing was changed")


def install(
    conn: psycopg.Connection,
    schema: str = "entity_resolver",
    *,
    upto: Optional[int] = None,
    base: Optional[Path] = None,
    distributed: Optional[bool] = None,
    shard_count: int = DEFAULT_SHARD_COUNT,
) -> InstallReport:
    """Install or upgrade entity_resolver in ``schema`` by running the build script; idempotent.

    ``upto`` stops after that migration and skips the idempotent files (which
    target the newest schema): it reproduces an old installation's tables so
    that upgrades can be tested step by step.
    ``distributed``: True installs on a Citus coordinator and distributes the
    banks over the workers (docs/scaling.md); False refuses a distributed
    installation; None (the default) keeps what the installation is.
    ``shard_count`` applies when the tables are distributed the first time.
    The connection is used in autocommit mode and returned as it was.
    """
    if not isinstance(schema, str) or not schema.strip() or len(schema.encode()) > 63:
        raise InstallError("schema: must be a non-empty name of at most 63 bytes")
    if not isinstance(shard_count, int) or not 1 <= shard_count <= 64000:
        raise InstallError("shard_count: must be an integer from 1 to 64000")
    base = base or data_dir()
    report = InstallReport(schema=schema)
    previous_autocommit = conn.autocommit
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise InstallError("install() needs a connection that is not inside a transaction")
    conn.autocommit = True
    try:
        already = is_distributed(conn, schema)
        if distributed is None:
            distributed = already
        elif already and not distributed:
            raise InstallError(
                f"entity_resolver in schema {schema} is distributed over a Citus cluster: install it with "
                f"distributed=True (entity-resolver install --distributed); a distributed installation "
                f"cannot be made single-node again in place")
        if distributed:
            if upto is not None:
                raise InstallError("upto: not with distributed=True (it builds old single-node installations)")
            _check_citus(conn, schema)
        extension_version = installed_by_extension(conn, schema)
        if extension_version is not None:
            report.method = "extension"
            raise InstallError(
                f"entity_resolver {extension_version} in schema {schema} was installed by CREATE EXTENSION: "
                f"upgrade it with ALTER EXTENSION entity_resolver UPDATE (after make install-extension)"
            )
        superuser = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if not (superuser and superuser[0]):
            # PL/Python is an untrusted language: only a superuser may create
            # functions in it (and the plpython3u extension itself).
            raise InstallError(
                f"installing needs a superuser: role {conn.info.user} may not create PL/Python "
                f"(plpython3u) functions; run the installer as a superuser, then grant the "
                f"usage role ({schema}_user) to application roles"
            )
        _refuse_foreign_schemas(conn, schema)
        warning = check_locale(conn)
        if warning:
            report.warnings.append(warning)
            warnings.warn(warning, LocaleWarning, stacklevel=2)
        try:
            if distributed:
                parts = build.script_parts(schema, base=base, distributed=True)
            else:
                text = build.script(schema, upto=upto, base=base)
        except BuildError as exc:
            raise InstallError(str(exc)) from exc
        _create_extension(conn, "plpython3u")
        _ensure_trgm(conn, schema)
        _ensure_btree_gin(conn)
        before = _applied(conn, schema)
        recreatable: Optional[set] = None
        if before and not distributed:
            _refuse_incomplete(conn, schema, max(before), base)
            if installed_code_version(conn, schema) == code_version(schema, base):
                recreatable = _objects(conn, schema)
        try:
            if distributed:
                report.distributed = _run_distributed(conn, schema, parts, shard_count)
            else:
                _run_locked(conn, schema, text.encode())
        except psycopg.errors.ObjectNotInPrerequisiteState as exc:
            # A released migration edited since this database applied it.
            raise InstallError(exc.diag.message_primary or str(exc)) from None
        report.applied_migrations = [v for v in _applied(conn, schema) if v not in before]
        report.version = installed_version(conn, schema)
        if upto is None:
            report.code_version = code_version(schema, base)
        if recreatable is not None:
            report.repaired = sorted(_objects(conn, schema) - recreatable)
        return report
    finally:
        conn.autocommit = previous_autocommit


# -- an installation whose objects are partly missing ------------------------------

_OBJECTS = """
SELECT format('schema %%I', n.nspname) FROM pg_namespace AS n WHERE n.nspname IN (%(s)s, %(i)s)
UNION ALL
SELECT CASE c.relkind WHEN 'i' THEN 'index ' WHEN 'S' THEN 'sequence ' WHEN 'v' THEN 'view '
       WHEN 'm' THEN 'materialized view ' ELSE 'table ' END || format('%%I.%%I', n.nspname, c.relname)
FROM pg_class AS c INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s) AND c.relkind IN ('r', 'p', 'i', 'S', 'v', 'm')
UNION ALL
SELECT format('column %%I.%%I.%%I', n.nspname, c.relname, a.attname)
FROM pg_attribute AS a INNER JOIN pg_class AS c ON a.attrelid = c.oid
INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s) AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT format('constraint %%I on %%I.%%I', k.conname, n.nspname, c.relname)
FROM pg_constraint AS k INNER JOIN pg_class AS c ON k.conrelid = c.oid
INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s)
UNION ALL
SELECT format('trigger %%I on %%I.%%I', t.tgname, n.nspname, c.relname)
FROM pg_trigger AS t INNER JOIN pg_class AS c ON t.tgrelid = c.oid
INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s) AND NOT t.tgisinternal
UNION ALL
SELECT format('policy %%I on %%I.%%I', p.polname, n.nspname, c.relname)
FROM pg_policy AS p INNER JOIN pg_class AS c ON p.polrelid = c.oid
INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s)
UNION ALL
SELECT format('function %%I.%%I(%%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))
FROM pg_proc AS p INNER JOIN pg_namespace AS n ON p.pronamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s)
UNION ALL
SELECT format('operator %%I.%%s(%%s, %%s)', n.nspname, o.oprname, o.oprleft::regtype, o.oprright::regtype)
FROM pg_operator AS o INNER JOIN pg_namespace AS n ON o.oprnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s)
UNION ALL
SELECT format('operator class %%I.%%I', n.nspname, o.opcname)
FROM pg_opclass AS o INNER JOIN pg_namespace AS n ON o.opcnamespace = n.oid
WHERE n.nspname IN (%(s)s, %(i)s)
"""


def _objects(conn: psycopg.Connection, schema: str, as_schema: Optional[str] = None) -> set:
    """What a psql user sees of the two schemas (relations, columns, constraints, triggers, policies,
    functions, operators), each as a line such as ``index entity_resolver.mentions_memory_idx``.

    ``as_schema``: the objects of ``schema`` named as if they were in ``as_schema`` (and its internal schema).
    """
    internal = internal_schema(schema)
    rows = conn.execute(_OBJECTS, {"s": schema, "i": internal}).fetchall()
    if as_schema is None:
        return {r[0] for r in rows}
    # Every schema name in a line is quoted as %I quotes it (the scratch names need no quotes).
    names = {build.quote_ident(internal): build.quote_ident(internal_schema(as_schema)),
             build.quote_ident(schema): build.quote_ident(as_schema)}
    out = set()
    for (line,) in rows:
        for old, new in names.items():
            line = line.replace(old, new)
        out.add(line)
    return out


class _Rollback(Exception):
    """Leave the transaction of the completeness check without a trace."""


def _expected_objects(conn: psycopg.Connection, schema: str, version: int, base: Path) -> set:
    """What migrations 1..version create, named as in ``schema``: built in scratch schemas, rolled back."""
    scratch = "er_check_" + hashlib.md5(f"{schema}:{time.time()}".encode()).hexdigest()[:12]
    found: set = set()
    try:
        with conn.transaction():
            # The preamble's objects (the ledger, the installer's functions) every install re-creates.
            conn.execute(build.script(scratch, upto=0, base=base).encode())
            preamble = _objects(conn, scratch, as_schema=schema)
            conn.execute(build.script(scratch, upto=version, base=base).encode())
            found = _objects(conn, scratch, as_schema=schema) - preamble
            raise _Rollback
    except _Rollback:
        pass
    return found


def _refuse_incomplete(conn: psycopg.Connection, schema: str, version: int, base: Path) -> None:
    """Refuse, naming them, when objects the applied migrations create are missing (a partial restore).

    The idempotent part (functions, triggers, policies, views, grants) is
    re-created by every install, so what is missing of it is repaired; but
    tables, columns, indexes, constraints and the functions and operators of
    a migration are created once, by their migration: re-creating them would
    need the data they held or a migration run twice.
    """
    kinds = ("schema", "table", "column", "constraint", "index", "sequence", "function", "operator")
    missing = sorted(_expected_objects(conn, schema, version, base) - _objects(conn, schema),
                     key=lambda line: (kinds.index(line.split(" ", 1)[0]) if line.split(" ", 1)[0] in kinds
                                       else len(kinds), line))
    if not missing:
        return
    shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    raise InstallError(
        f"entity_resolver in schema {schema} is incomplete: {len(missing)} object(s) its migrations "
        f"1-{version} created are missing ({shown}), as after a restore of only one of the schemas "
        f"{schema} and {internal_schema(schema)}; restore both from a complete backup (docs/operations.md, "
        f"Backups and restore) or install into a new database and import the banks' exports; nothing was changed")


# Taking the locks: how long one wait for the facts table may last, how many
# attempts in all, and the pause between attempts (doubling, up to a second).
LOCK_WAIT = "2s"
LOCK_ATTEMPTS = 60
LOCK_PAUSE = 0.05


def _relations(conn: psycopg.Connection, schema: str) -> List[str]:
    """Every table and view of the two schemas (quoted), the facts table first."""
    rows = conn.execute(
        "SELECT format('%%I.%%I', n.nspname, c.relname), c.relname = 'facts' AND n.nspname = %s"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname IN (%s, %s) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        " ORDER BY 2 DESC, 1", (schema, schema, internal_schema(schema))).fetchall()
    return [r[0] for r in rows]


def _lock_everything(conn: psycopg.Connection, schema: str) -> bool:
    """Inside the install transaction: take every relation's ACCESS EXCLUSIVE lock, or none.

    The script drops and creates triggers and policies and replaces views,
    which take ACCESS EXCLUSIVE locks one relation after another, in the
    script's order; a writer locks the same relations in its own order, so
    taking them as the script goes deadlocks against running writers (and
    the deadlock detector may pick the writer). Instead the only lock waited
    for is the first, the facts table's, while nothing else is held (new
    writers queue behind it, running ones finish); every other lock is taken
    with NOWAIT. When one is busy, the caller rolls back, releasing all, and
    tries again: the installer never waits while holding a table lock, so it
    cannot be part of a deadlock. Returns False when a lock was busy.
    """
    relations = _relations(conn, schema)
    conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
    try:
        for n, rel in enumerate(relations):
            nowait = " NOWAIT" if n else ""
            conn.execute(f"LOCK TABLE {rel} IN ACCESS EXCLUSIVE MODE{nowait}")
    except psycopg.errors.LockNotAvailable:
        return False
    conn.execute("SET LOCAL lock_timeout = 0")
    return True


T = TypeVar("T")


class _Busy(Exception):
    """A lock was busy: roll the attempt back and try again."""


def _with_every_lock(conn: psycopg.Connection, schema: str, work: Callable[[], T]) -> T:
    """``work()`` in one transaction that first holds every lock it needs (see above), retried while a lock is busy."""
    pause = LOCK_PAUSE
    for _ in range(LOCK_ATTEMPTS):
        try:
            with conn.transaction():
                # Installers one at a time (the script takes the same lock again).
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
                if not _lock_everything(conn, schema):
                    raise _Busy
                try:
                    return work()
                except psycopg.errors.LockNotAvailable as exc:
                    # The script takes no lock it would wait for while these
                    # are held: one busy (a role another database is
                    # creating, sql/999_grants.sql) is another attempt.
                    raise _Busy from exc
        except _Busy:
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
    raise InstallError(
        f"could not lock the tables of schema {schema} in {LOCK_ATTEMPTS} attempts: sessions keep "
        f"them busy (see pg_locks; a session idle in transaction holds its locks); run the "
        f"installer again at a quieter moment")


def _run_locked(conn: psycopg.Connection, schema: str, script: bytes) -> None:
    """Run the script with every lock held (_with_every_lock)."""
    _with_every_lock(conn, schema, lambda: conn.execute(script))


def _run_distributed(conn: psycopg.Connection, schema: str, parts: List[build.Part], shard_count: int) -> dict:
    """The distributed flavour of the script, one statement at a time, then the distribution; one transaction.

    Citus forwards DDL on a distributed table to its shards as the query
    string it came in, and refuses a string of several statements there: the
    script goes statement by statement (build.split_statements), and each
    pending migration too (its statements through _install_execute, then its
    ledger row) instead of as one _apply_migration call.
    """
    internal = sql.Identifier(internal_schema(schema))

    def work() -> dict:
        # Triggers on distributed tables (facts) are what the write
        # path is made of; Citus asks for this to create them.
        conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        for part in parts:
            if part.migration is None:
                for statement in build.split_statements(part.text):
                    conn.execute(statement)
            else:
                _apply_migration_distributed(conn, schema, internal, part)
        return conn.execute(sql.SQL("SELECT {}._install_distribute(%s)").format(internal),
                            (shard_count,)).fetchone()[0]

    return _with_every_lock(conn, schema, work)


def _apply_migration_distributed(conn: psycopg.Connection, schema: str, internal: sql.Identifier,
                                 part: build.Part) -> None:
    """What _apply_migration does, a statement at a time (see _run_distributed)."""
    m = part.migration
    ledger = sql.SQL("{}.schema_migrations").format(sql.Identifier(schema))
    row = conn.execute(sql.SQL("SELECT checksum FROM {} WHERE version = %s").format(ledger), (m.version,)).fetchone()
    if row is not None:
        if row[0] != m.checksum:
            raise InstallError(
                f"migration {m.name} differs from the one applied to this database (checksum {row[0][:12]}, "
                f"file {m.checksum[:12]}): released migrations must not be edited; put the change in a new migration")
        return
    for statement in build.split_statements(part.body):
        conn.execute(sql.SQL("SELECT {}._install_execute(%s)").format(internal), (statement,))
    conn.execute(sql.SQL("INSERT INTO {} (version, name, checksum) VALUES (%s, %s, %s)").format(ledger),
                 (m.version, m.name, m.checksum))


def _applied(conn: psycopg.Connection, schema: str) -> List[int]:
    if installed_version(conn, schema) == 0:
        return []
    return [r[0] for r in conn.execute(
        sql.SQL("SELECT version FROM {}.schema_migrations ORDER BY 1").format(sql.Identifier(schema)))]


# -- removing an installation ---------------------------------------------------------

@dataclass
class UninstallReport:
    schema: str
    method: str              # "installer" (the schemas dropped) or "extension" (DROP EXTENSION)
    facts: int = 0           # what was deleted with it (only with drop_data=True)
    entities: int = 0
    banks: int = 0


def uninstall(conn: psycopg.Connection, schema: str = "entity_resolver", *, drop_data: bool = False) -> UninstallReport:
    """Remove entity_resolver from ``schema``: its two schemas, or DROP EXTENSION when CREATE EXTENSION made it.

    Refused (InstallError, nothing changed) while any bank holds facts or
    entities, unless ``drop_data`` is True: removing the installation deletes
    every bank's memory with it. The cluster-wide roles stay
    (docs/security.md, Removing an installation).
    """
    if installed_version(conn, schema) == 0:
        raise InstallError(f"entity_resolver is not installed in schema {schema} of this database; nothing was changed")
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise InstallError("uninstall() needs a connection that is not inside a transaction")
    extension_version = installed_by_extension(conn, schema)
    report = UninstallReport(schema=schema, method="extension" if extension_version else "installer")
    ident = sql.Identifier(schema)
    with conn.transaction():
        # The installers' lock: no install runs meanwhile.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (INSTALL_LOCK,))
        report.facts, report.entities, report.banks = conn.execute(sql.SQL(
            "SELECT (SELECT count(*) FROM {s}.facts), (SELECT count(*) FROM {s}.entities),"
            " (SELECT count(*) FROM {s}.banks)").format(s=ident)).fetchone()
        if (report.facts or report.entities) and not drop_data:
            raise InstallError(
                f"schema {schema} holds {report.facts} facts and {report.entities} entities in {report.banks} "
                f"bank(s): removing entity_resolver deletes them all; export the banks first "
                f"(entity-resolver export BANK) and pass drop_data=True (--drop-data) to remove it anyway; "
                f"nothing was changed")
        if extension_version:
            conn.execute(sql.SQL("DROP EXTENSION {}").format(sql.Identifier(build.EXTENSION)))
        else:
            conn.execute(sql.SQL("DROP SCHEMA {}, {} CASCADE").format(
                ident, sql.Identifier(internal_schema(schema))))
    return report
