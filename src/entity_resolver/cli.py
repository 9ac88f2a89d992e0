"""The ``entity-resolver`` command-line tool.

Every command that needs a database takes ``--dsn`` (or ``ENTITY_RESOLVER_DSN``).
Without one it uses the embedded cluster: a private PostgreSQL started (or
reused) under a data directory it names, running as an unprivileged OS user
when we are root, with entity_resolver installed in its ``entity_resolver``
database. ``entity-resolver db stop`` stops it.

Commands that need entity_resolver installed check the installed version with
one catalog read (no locks). On the embedded cluster they install or upgrade
only when it differs from this package's; with ``--dsn`` they never install
(``entity-resolver install`` does, as a superuser).

Output is a table for people and, with ``--json``, JSON on stdout for scripts.
Errors are one line on stderr (``error: SQLSTATE: message``); with ``--json``
also a JSON object on stdout with the SQLSTATE and the kind of error. The exit
status tells the kinds apart:

* 0: done;
* 1: a data error: the input (a line of a file, an argument, a bank that does
  not exist, an operation later ones build on) is wrong; fix it and run again;
  which SQLSTATEs are data errors is importer.is_data_error's rule;
* 2: a usage error: the command line itself (an unknown option, a missing
  argument, a value not among the choices, a malformed --dsn); with ``--json``
  also a JSON object on stdout;
* 3: a systemic error: the database, the role or the connection (permission
  denied, cannot connect, entity_resolver not installed, read-only, disk
  full, ...); the input may be fine;
* 130: interrupted.
"""

import dataclasses
import difflib
import enum
import functools
import inspect
import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, ContextManager, Dict, Iterator, List, Optional, Tuple

import psycopg
import typer
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from typer.core import TyperGroup
from rich.console import Console
from rich.table import Table
from rich.text import Text

from entity_resolver import __version__
from entity_resolver import importer as importer_mod
from entity_resolver.client import AmbiguousName, Client, dumps, to_jsonable
from entity_resolver.embedded import DEFAULT_DATADIR, EmbeddedCluster, EmbeddedError
from entity_resolver.exporter import GOLD_FORMS
from entity_resolver.install import (DEFAULT_SHARD_COUNT, InstallError, code_version, install,
                                     installed_code_version, installed_version, is_current, uninstall)
from entity_resolver.render import TAKEN, entities_table, explain_table, fmt, new_table, verdict, why_chosen

EMBEDDED_DB = "entity_resolver"

# Exit statuses (see the module docstring); 2 is click's, for usage errors.
EXIT_DATA = 1       # the input is wrong
EXIT_SYSTEMIC = 3   # the database, the role or the connection
EXIT_INTERRUPTED = 130
SYSTEMIC = "a systemic error, not a problem of the input"
# click's usage error as typer raises it (typer may bundle its own click).
_UsageError = typer.BadParameter.__mro__[1]


def _print_json_error(msg: str, sqlstate: Optional[str], kind: str, code: int, **extra: Any) -> None:
    """The JSON object of an error on stdout (--json): the same keys for every kind."""
    print(json.dumps({"error": msg, "sqlstate": sqlstate, "kind": kind, "exit_code": code, **extra},
                     ensure_ascii=False))


def _wants_json(args: List[str]) -> bool:
    """Whether a command line asks for JSON (--json before any ``--``)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


class _Root(TyperGroup):
    """The root command: with --json, a usage error (click's, or a --dsn that is not one) is also JSON on stdout.

    click reports a usage error itself (usage, then the error, exit status 2)
    after the command line is parsed or while a command runs; the JSON object
    is printed here, where every one of them passes.
    """

    def make_context(self, info_name: Optional[str], args: List[str], parent: Any = None, **extra: Any) -> Any:
        wants = _wants_json(list(args))
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except _UsageError as exc:
            if wants:
                _print_json_error(exc.format_message(), None, "usage", exc.exit_code)
            raise
        ctx.meta["entity_resolver.json_errors"] = wants
        return ctx

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _UsageError as exc:
            if ctx.meta.get("entity_resolver.json_errors"):
                _print_json_error(exc.format_message(), None, "usage", exc.exit_code)
            raise


app = typer.Typer(
    cls=_Root,
    name="entity-resolver",
    help="PostgreSQL-native entity resolver: install, demo, import, explain, inspect, correct, export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
db_app = typer.Typer(help="The embedded PostgreSQL cluster (used when no --dsn is given).",
                     no_args_is_help=True, rich_markup_mode=None)
labels_app = typer.Typer(help="A bank's label vocabulary (exact-match entities).",
                         no_args_is_help=True, rich_markup_mode=None)
app.add_typer(db_app, name="db")
app.add_typer(labels_app, name="labels")

# -- shared options --------------------------------------------------------------

DsnOpt = Annotated[Optional[str], typer.Option(
    "--dsn", envvar="ENTITY_RESOLVER_DSN", show_envvar=True,
    help="PostgreSQL connection string; without it, the embedded cluster is used.")]
SchemaOpt = Annotated[str, typer.Option(
    "--schema", envvar="ENTITY_RESOLVER_SCHEMA", help="Schema entity_resolver is installed in.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
DataDirOpt = Annotated[Optional[Path], typer.Option(
    "--data-dir", envvar="ENTITY_RESOLVER_DATADIR",
    help=f"Data directory of the embedded cluster [default: {DEFAULT_DATADIR}].")]
BankArg = Annotated[str, typer.Argument(help="Bank id.")]
EntityArg = Annotated[str, typer.Argument(help="The entity (id, name or alias).")]
MentionArg = Annotated[str, typer.Argument(help="The mention text.")]
NearOpt = Annotated[Optional[List[str]], typer.Option(
    "--near", help="Another mention of the same fact (repeatable): the co-occurrence signal.")]
AtOpt = Annotated[Optional[str], typer.Option(
    "--at", help="Event date (ISO 8601, or anything PostgreSQL reads as timestamptz) [default: now].")]
AttributeOpt = Annotated[Optional[List[str]], typer.Option(
    "--attribute", "-a", metavar="NAME=VALUE",
    help="An attribute of the mention (repeatable), as a mention element's \"attributes\": "
         "email=maria@example.org, birth_date=1961-05-03.")]


def _attributes(values: Optional[List[str]]) -> Optional[Dict[str, str]]:
    """--attribute NAME=VALUE options as a mention's attributes (None: none given); the server checks them."""
    if not values:
        return None
    out: Dict[str, str] = {}
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--attribute: expected NAME=VALUE, got {v!r}")
        if name.strip() in out:
            raise CliError(f"--attribute: {name.strip()!r} given twice")
        out[name.strip()] = value
    return out


def _choices(name: str, values: Tuple[str, ...]) -> Any:
    """An enumeration of ``values``, each named as itself: what typer shows and checks as an option's choices."""
    return enum.Enum(name, [(v, v) for v in values], type=str, module=__name__)


def _out() -> Console:
    return Console(soft_wrap=False, highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


class CliError(Exception):
    """A data error to report as one line (exit status 1)."""


class SystemicError(CliError):
    """A failure of the database, the role or the environment (exit status 3)."""


def _db_error(exc: psycopg.Error) -> Tuple[str, Optional[str]]:
    diag = exc.diag
    text = diag.message_primary or str(exc) or type(exc).__name__
    msg = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if exc.sqlstate == "42883" or exc.sqlstate == "3F000" or exc.sqlstate == "42P01":
        msg += " (is entity_resolver installed in this schema? run: entity-resolver install)"
    if isinstance(exc, psycopg.OperationalError) and not exc.sqlstate:
        msg = f"cannot connect to PostgreSQL: {msg}"
    if diag.message_hint:
        msg += f" (hint: {diag.message_hint.strip().splitlines()[0]})"
    return msg, exc.sqlstate


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _handled(fn: Callable) -> Callable:
    """Turn every expected failure into one line on stderr and its exit status (module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        sqlstate = None
        extra: Dict[str, Any] = {}
        try:
            return fn(*args, **kwargs)
        except psycopg.Error as exc:
            msg, sqlstate = _db_error(exc)
            systemic = not importer_mod.is_data_error(exc)
        except importer_mod.ImportFailed as exc:
            msg, sqlstate, systemic = _first_line(exc), exc.sqlstate, exc.systemic
            extra = {"facts_imported": exc.imported, "bad_lines": [b.as_dict() for b in exc.bad]}
        except (SystemicError, InstallError, EmbeddedError) as exc:
            msg, systemic = _first_line(exc), True
        except (CliError, ValueError, FileNotFoundError, IsADirectoryError) as exc:
            msg, systemic = _first_line(exc), False
            sqlstate = getattr(exc, "sqlstate", None)   # AmbiguousName's
        except OSError as exc:
            msg, systemic = _first_line(exc), True
        except KeyboardInterrupt:
            _err().print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED)
        if systemic and SYSTEMIC not in msg:
            msg += f" ({SYSTEMIC})"
        # The SQLSTATE once: a message that quotes a database error may carry it already.
        line = f"error: {sqlstate}: {msg}" if sqlstate and f"{sqlstate}:" not in msg else f"error: {msg}"
        _err().print(Text(line, style="red"), soft_wrap=True)   # one line, however long
        code = EXIT_SYSTEMIC if systemic else EXIT_DATA
        if as_json:
            _print_json_error(msg, sqlstate, "systemic" if systemic else "data", code, **extra)
        raise typer.Exit(code)

    return wrapper


# -- connecting ------------------------------------------------------------------

def _check_dsn(dsn: str) -> None:
    """Refuse a --dsn libpq cannot parse: a usage error (exit status 2), not a failure to connect."""
    try:
        conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise typer.BadParameter(f"not a PostgreSQL connection string: {_first_line(exc)}",
                                 param_hint="'--dsn'") from None


def _open(dsn: str) -> psycopg.Connection:
    """An autocommit connection to ``dsn`` (checked first: _check_dsn)."""
    _check_dsn(dsn)
    return psycopg.connect(dsn, autocommit=True)


def _embedded(data_dir: Optional[Path], quiet: bool = False) -> EmbeddedCluster:
    cluster = EmbeddedCluster(datadir=data_dir) if data_dir else EmbeddedCluster()
    fresh = not cluster.initialized()
    was_running = cluster.running()
    if fresh and not quiet:
        _err().print(f"creating a private PostgreSQL cluster in {cluster.datadir} (first run, a few seconds)")
    cluster.start()
    cluster.ensure_database(EMBEDDED_DB)
    if not quiet:
        verb = "using the" if was_running else "started the"
        _err().print(
            f"{verb} embedded PostgreSQL in {cluster.datadir} (127.0.0.1:{cluster.port}); "
            f"stop it with: {cluster.stop_hint()}",
            style="dim",
        )
    return cluster


def _connect(dsn: Optional[str], schema: str, data_dir: Optional[Path] = None, *,
             need_install: bool = True, quiet: bool = False) -> psycopg.Connection:
    """An autocommit connection: to ``dsn``, or to the embedded cluster (installed when needed).

    The version check is a catalog read without locks: installing on every
    command took the installer's locks while an import was writing, and
    deadlocked with it.
    """
    if dsn:
        conn = _open(dsn)
        if need_install:
            try:
                _check_installed(conn, schema, quiet)
            except BaseException:
                conn.close()
                raise
        return conn
    cluster = _embedded(data_dir, quiet=quiet)
    conn = psycopg.connect(cluster.dsn(EMBEDDED_DB), autocommit=True)
    if need_install and not is_current(conn, schema):
        # The embedded database is ours: keep it at the installed package's version.
        report = install(conn, schema)
        if not quiet:
            _err().print(f"installed entity_resolver {report.code_version} in schema {schema}"
                         + (f" (migrations {', '.join(map(str, report.applied_migrations))})"
                            if report.applied_migrations else ""), style="dim")
    return conn


def _check_installed(conn: psycopg.Connection, schema: str, quiet: bool) -> None:
    """Refuse a database without entity_resolver; warn when its version is not this package's."""
    if installed_version(conn, schema) == 0:
        raise SystemicError(
            f"entity_resolver is not installed in schema {schema!r} of this database: "
            f"run: entity-resolver install --dsn ... --schema {schema}"
        )
    if not quiet and not is_current(conn, schema):
        _err().print(Text(
            f"warning: entity_resolver in schema {schema} is at code version "
            f"{installed_code_version(conn, schema) or 'unknown'}, this package is at "
            f"{code_version(schema)}: run entity-resolver install to upgrade", style="yellow"))


@contextmanager
def _client(dsn: Optional[str], schema: str, data_dir: Optional[Path] = None,
            quiet: bool = False) -> Iterator[Client]:
    """A Client on a connection of its own, closed at the end of the block."""
    conn = _connect(dsn, schema, data_dir, quiet=quiet)
    try:
        yield Client(conn, schema=schema)
    finally:
        conn.close()


def _print_json(value: Any) -> None:
    print(dumps(value))


def _table(title: str, columns: Tuple[str, ...], right: Tuple[str, ...] = (), **column: Any) -> Table:
    """A table with these columns, those in ``right`` right-justified (numbers), each with ``column``'s options."""
    table = new_table(title)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left", **column)
    return table


def _require_bank(er: Client, bank: str) -> None:
    """Refuse a read of a bank that does not exist (an empty answer would look like a real one)."""
    if er.bank_exists(bank):
        return
    known = er.bank_ids()
    close = difflib.get_close_matches(bank, known, n=3, cutoff=0.6)
    hint = (f"; did you mean: {', '.join(close)}?" if close
            else "; entity-resolver banks lists the banks" if known else "; there are no banks yet")
    raise CliError(f"bank {bank!r} does not exist (or this role may not see it){hint}")


def _existing(er: Client, bank: str, rows: List[Any]) -> List[Any]:
    """``rows``; when there are none, first make sure the bank exists (_require_bank)."""
    if not rows:
        _require_bank(er, bank)
    return rows


# -- the options every database command takes ------------------------------------

DEFAULT_SCHEMA = "entity_resolver"


@dataclass(frozen=True)
class DbOptions:
    """Where a command works (--dsn, --schema, --data-dir) and how it prints (--json)."""

    dsn: Optional[str]
    schema: str
    data_dir: Optional[Path]
    as_json: bool

    def connect(self) -> psycopg.Connection:
        return _connect(self.dsn, self.schema, self.data_dir, quiet=self.as_json)

    def client(self, quiet: Optional[bool] = None) -> ContextManager[Client]:
        return _client(self.dsn, self.schema, self.data_dir, quiet=self.as_json if quiet is None else quiet)


# DbOptions' fields as the command line shows them, in this order.
_DB_OPTIONS = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
               for name, annotation, default in (("dsn", DsnOpt, None), ("schema", SchemaOpt, DEFAULT_SCHEMA),
                                                 ("data_dir", DataDirOpt, None), ("as_json", JsonOpt, False))]


def _command(group: typer.Typer, name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a command of ``group``, its failures handled (_handled).

    A parameter annotated ``DbOptions`` stands for --dsn, --schema,
    --data-dir and --json, which the command line shows in its place: typer
    has no groups of options, so the signature it reads is rewritten, and the
    four values come back to the command as one DbOptions.
    """

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(fn)
        target = next((p.name for p in signature.parameters.values() if p.annotation is DbOptions), None)
        if target is not None:
            fn = _with_db_options(fn, signature, target)
        return group.command(name)(_handled(fn))

    return register


def _with_db_options(fn: Callable[..., None], signature: inspect.Signature, target: str) -> Callable[..., None]:
    """``fn`` taking the four options of DbOptions in place of its parameter ``target``."""

    @functools.wraps(fn)
    def command(*, dsn: Optional[str], schema: str, data_dir: Optional[Path], as_json: bool,
                **kwargs: Any) -> None:
        return fn(**kwargs, **{target: DbOptions(dsn, schema, data_dir, as_json)})

    # Keyword-only, all of them: typer passes every value by name, and the
    # options' defaults may then stand before a required argument.
    params = [q for p in signature.parameters.values()
              for q in (_DB_OPTIONS if p.name == target else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)])]
    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


# -- install ---------------------------------------------------------------------

@_command(app, "install")
def install_cmd(db: DbOptions,
                distributed: Annotated[bool, typer.Option(
                    "--distributed", help="On a Citus coordinator: distribute the banks over the workers "
                    "(docs/scaling.md). A distributed installation stays distributed on later installs.")] = False,
                shard_count: Annotated[int, typer.Option(
                    "--shard-count", min=1, max=64000,
                    help="With --distributed: shards per table, when the tables are distributed the first time.")
                ] = DEFAULT_SHARD_COUNT) -> None:
    """Install or upgrade entity_resolver in a database (idempotent)."""
    import warnings

    if distributed and not db.dsn:
        raise CliError("--distributed: needs --dsn (the Citus coordinator); the embedded cluster is single-node")
    if db.dsn:
        conn = _open(db.dsn)
    else:
        conn = _connect(None, db.schema, db.data_dir, need_install=False, quiet=db.as_json)
    with conn:
        before = installed_version(conn, db.schema)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = install(conn, db.schema, distributed=True if distributed else None, shard_count=shard_count)
        where = f"{conn.info.dbname} on {conn.info.host}:{conn.info.port}"
    if db.as_json:
        _print_json({"schema": report.schema, "database": where, "previous_version": before,
                     "version": report.version, "applied_migrations": report.applied_migrations,
                     "code_version": report.code_version, "warnings": report.warnings,
                     "distributed": report.distributed, "repaired": report.repaired})
        return
    out = _out()
    if report.applied_migrations:
        out.print(f"installed entity_resolver in schema {report.schema} of {where}: "
                  f"migrations {', '.join(map(str, report.applied_migrations))} applied "
                  f"(version {before} -> {report.version})")
    else:
        out.print(f"entity_resolver in schema {report.schema} of {where} is at version "
                  f"{report.version}; functions re-applied (code {report.code_version})")
    if report.repaired:
        out.print(f"repaired (missing, now re-created): {', '.join(report.repaired)}")
    if report.distributed is not None:
        done = report.distributed
        out.print(f"distributed by bank over the Citus workers: {len(done['tables'])} tables, "
                  f"{len(done['reference_tables'])} reference tables and {len(done['functions'])} functions "
                  f"distributed now (the rest already were)")
    for w in report.warnings:
        _err().print(Text(f"warning: {w}", style="yellow"))


@_command(app, "uninstall")
def uninstall_cmd(db: DbOptions,
                  drop_data: Annotated[bool, typer.Option(
                      "--drop-data", help="Remove it even though banks hold facts or entities: deletes them all.")
                  ] = False) -> None:
    """Remove entity_resolver from a database (its schemas, or DROP EXTENSION); refused while banks hold data."""
    if not db.dsn:
        raise CliError("uninstall: needs --dsn (for the embedded cluster: entity-resolver db destroy)")
    with _open(db.dsn) as conn:
        report = uninstall(conn, db.schema, drop_data=drop_data)
    if db.as_json:
        _print_json({"schema": report.schema, "method": report.method, "facts": report.facts,
                     "entities": report.entities, "banks": report.banks})
        return
    how = "DROP EXTENSION entity_resolver" if report.method == "extension" else "its schemas dropped"
    _out().print(f"removed entity_resolver from schema {report.schema} ({how}): {report.facts} facts, "
                 f"{report.entities} entities in {report.banks} bank(s) deleted; the roles stay "
                 f"(docs/security.md, Removing an installation)")


@_command(app, "drop-bank")
def drop_bank_cmd(
    bank: BankArg,
    yes: Annotated[bool, typer.Option("--yes", help="Delete it. Without: show what would be deleted, and stop.")
                   ] = False,
    *, db: DbOptions,
) -> None:
    """Delete a bank and every row of it (facts, entities, aliases, ledger, settings, grants); cannot be undone."""
    with db.client() as er:
        try:
            result = er.drop_bank(bank, dry_run=not yes)
        except psycopg.errors.UndefinedObject as exc:
            if (exc.diag.message_primary or "").startswith("bank_id:"):
                raise CliError(exc.diag.message_primary) from None
            raise
    if db.as_json:
        _print_json(result)
        return
    rows = {name: n for name, n in result["rows"].items() if n}
    listed = ", ".join(f"{n} {name}" for name, n in sorted(rows.items())) or "no rows"
    if yes:
        _out().print(f"dropped bank {bank}: {result['total']} rows deleted ({listed})")
    else:
        _out().print(f"bank {bank}: {result['total']} rows would be deleted ({listed}); nothing was deleted: "
                     f"run again with --yes to drop it (it cannot be undone)")


# -- demo ------------------------------------------------------------------------

@_command(app, "demo")
def demo_cmd(dsn: DsnOpt = None, schema: SchemaOpt = DEFAULT_SCHEMA, data_dir: DataDirOpt = None,
             bank: Annotated[str, typer.Option("--bank", help="Bank the story is loaded into.")] = "demo",
             reset: Annotated[bool, typer.Option(
                 "--reset", help="Wipe the bank first if it exists (always done on the embedded cluster).")] = False,
             as_json: JsonOpt = False) -> None:
    """Play the two-Alexes story, with the reason for each decision."""
    from entity_resolver import demo

    if dsn:
        conn = _open(dsn)
        if not is_current(conn, schema):
            _err().print(f"installing entity_resolver in schema {schema}", style="dim")
            install(conn, schema)
    else:
        conn = _connect(None, schema, data_dir, quiet=as_json)
        reset = True
    with conn:
        ok = demo.run(conn, schema=schema, bank=bank, reset=reset,
                      console=None if as_json else _out(), as_json=as_json,
                      embedded=not dsn)
    if not ok:
        raise typer.Exit(1)


# -- import ----------------------------------------------------------------------

@_command(app, "import")
def import_cmd(
    file: Annotated[str, typer.Argument(help="JSON Lines file of facts (.jsonl, .jsonl.gz, or - for stdin).")],
    bank: Annotated[Optional[str], typer.Option("--bank", help="Load every fact into this bank (overrides bank_id).")] = None,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Facts per transaction.")] = importer_mod.DEFAULT_BATCH,
    skip_bad: Annotated[bool, typer.Option(
        "--skip-bad", help="Skip bad lines (their reasons are printed) instead of rejecting the file; "
                           "never skips a systemic error.")] = False,
    *, db: DbOptions,
) -> None:
    """Bulk-load a JSON Lines file of facts (resumable).

    One fact per line; content, event_date, gold and resolve are optional:

    \b
    {"fact_id": "f1", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
     "content": "...", "mentions": [{"text": "Alex", "gold": "p-17"}, "Acme"]}

    The file is validated first, with the server's rules (dates and bank ids
    are read by the database): a bad line is reported with its number and
    key, and nothing is written (or it is skipped with --skip-bad). Each batch
    is one transaction through the facts trigger. Facts whose id is already
    present are skipped, so re-running after an interruption neither loses
    nor duplicates anything. Exit status: 1 for bad data, 3 for a systemic
    error (permission, connection, not installed), which --skip-bad never skips.
    """
    if file == "-":
        spooled = importer_mod.spool_stdin()
        try:
            return _import(spooled, "standard input", bank, batch, skip_bad, db)
        finally:
            spooled.unlink()
    if not Path(file).is_file():
        raise CliError(f"{file}: no such file")
    _import(Path(file), file, bank, batch, skip_bad, db)


def _print_lines(err: Console, items: List[Dict[str, Any]], what: str, text: Callable[[Dict[str, Any]], str],
                 style: str) -> None:
    """The first MAX_SHOWN_ERRORS items, one per line, and how many more there are."""
    for item in items[: importer_mod.MAX_SHOWN_ERRORS]:
        err.print(Text(text(item), style=style))
    if len(items) > importer_mod.MAX_SHOWN_ERRORS:
        err.print(f"... and {len(items) - importer_mod.MAX_SHOWN_ERRORS} more {what} (--json lists them all)")


# Seconds between two progress lines of an import whose standard error is not a
# terminal (a log, a pipe); the environment variable sets another interval.
PROGRESS_SECONDS = 10.0
PROGRESS_ENV = "ENTITY_RESOLVER_PROGRESS_SECONDS"


class _ProgressLines:
    """An import's progress for a log: every ``every`` seconds one line on stderr (facts done, facts/s).

    A thread of its own prints them, so a batch that takes longer than the
    interval does not leave the log silent. ``advance`` is the progress bar's.
    """

    def __init__(self, console: Console, total: int, every: float):
        self.console, self.total, self.every = console, total, every
        self.done = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="import-progress", daemon=True)

    def advance(self, n: int) -> None:
        self.done += n

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return f"importing: {self.done} of {self.total} facts done, {self.done / elapsed:.1f} facts/s"

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.console.print(self.line(), soft_wrap=True)

    def __enter__(self) -> "_ProgressLines":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _progress_seconds() -> float:
    """PROGRESS_SECONDS, or the environment's PROGRESS_ENV (a positive number of seconds)."""
    text = os.environ.get(PROGRESS_ENV)
    if not text:
        return PROGRESS_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise typer.BadParameter(f"{PROGRESS_ENV}: must be a positive number of seconds, got {text!r}")
    return value


def _import(path: Path, name: str, bank: Optional[str], batch: int, skip_bad: bool, db: DbOptions) -> None:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    err = _err()
    started = time.monotonic()
    every = _progress_seconds()
    conn = db.connect()
    with conn:
        if not db.as_json:
            err.print(f"validating {name} ...", style="dim")
        # Dates and bank ids are checked by the database: validation needs the connection.
        scanned = importer_mod.scan(conn, path, bank, db.schema)
        if scanned.bad and not skip_bad:
            if not db.as_json:
                _print_lines(err, [b.as_dict() for b in scanned.bad], "bad lines",
                             lambda b: f"line {b['line']}: {b['error']}", "red")
            # Printed above, one per line; with --json the object lists them all.
            raise importer_mod.bad_lines_failure(scanned.bad, scanned.good, name, show=1 if db.as_json else 0)
        # A bar on a terminal; in a log, a line every few seconds (a bar is drawn only at the end there).
        if err.is_terminal or db.as_json:
            progress: Any = Progress(
                SpinnerColumn(), TextColumn("importing"), BarColumn(), MofNCompleteColumn(),
                TextColumn("facts"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                console=err, disable=db.as_json, transient=False,
            )
            task = progress.add_task("import", total=scanned.good)
            advance = functools.partial(progress.advance, task)
        else:
            progress = _ProgressLines(err, scanned.good, every)
            advance = progress.advance
        with progress:
            try:
                summary = importer_mod.import_file(
                    conn, path, bank=bank, batch_size=batch, skip_bad=skip_bad, schema=db.schema,
                    scanned=scanned, on_batch=lambda done, skipped: advance(done + skipped),
                )
            except KeyboardInterrupt:
                err.print("interrupted: the batches committed so far are kept; "
                          "run the same command again to resume")
                raise typer.Exit(EXIT_INTERRUPTED) from None
    summary.seconds = time.monotonic() - started
    if db.as_json:
        _print_json(summary.as_dict())
        return
    d = summary.as_dict()
    _print_lines(err, d["bad_lines"], "skipped lines",
                 lambda b: f"skipped line {b['line']}: {b['error']}", "yellow")
    _print_lines(err, d["warnings"], "warnings",
                 lambda w: f"warning: line {w['line']}: {w['warning']}", "yellow")
    table = new_table(f"imported {name}", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("facts imported", str(d["facts"]))
    table.add_row("already present (skipped)", str(d["skipped_existing"]))
    if skip_bad or d["skipped_bad"]:
        table.add_row("bad lines (skipped)", str(d["skipped_bad"]))
    table.add_row("mentions", str(d["mentions"]))
    table.add_row("entities created", str(d["entities_created"]))
    table.add_row("warnings", str(len(d["warnings"]))
                  + (f" ({d['facts_without_mentions']} facts without mentions)"
                     if d["facts_without_mentions"] else ""))
    table.add_row("banks", ", ".join(d["banks"]) or "–")
    table.add_row("time", f"{d['seconds']:.1f} s" + (f" ({d['facts_per_second']:.0f} facts/s)"
                                                     if d["facts_per_second"] else ""))
    _out().print(table)


def _homonyms_named(er: Client, bank: str, rows: List[Any], id_field: str) -> List[Any]:
    """Rows whose entity shares its name with another (homonyms), renamed to tell it apart (Client.homonym_labels)."""
    labels = er.homonym_labels(bank, [getattr(r, id_field) for r in rows])
    return [dataclasses.replace(r, canonical_name=labels[str(getattr(r, id_field))])
            if str(getattr(r, id_field)) in labels else r for r in rows]


# -- resolution ------------------------------------------------------------------

@_command(app, "resolve")
def resolve_cmd(
    bank: BankArg, mention: MentionArg, near: NearOpt = None, at: AtOpt = None,
    literal: Annotated[bool, typer.Option("--literal", help="No scoring: exact match or a new entity.")] = False,
    attribute: AttributeOpt = None,
    *, db: DbOptions,
) -> None:
    """Resolve one mention, creating the entity if needed."""
    attrs = _attributes(attribute)
    with db.client() as er:
        r = er.resolve(bank, mention, near or [], at, resolve=not literal, attributes=attrs)
        er.flush(bank)
        shown = r if db.as_json else _homonyms_named(er, bank, [r], "entity_id")[0]
    if db.as_json:
        _print_json(r)
        return
    table = _table(f"{mention!r} in bank {bank}", ("mention", "entity", "entity id", "created", "score"),
                   right=("score",))
    table.add_row(r.mention, shown.canonical_name, str(r.entity_id),
                  Text("new", style="yellow") if r.created else "existing", fmt(r.score))
    _out().print(table)


@_command(app, "explain")
def explain_cmd(
    bank: BankArg, mention: MentionArg, near: NearOpt = None, at: AtOpt = None,
    mention_type: Annotated[Optional[str], typer.Option(
        "--type", help="The mention's type (person, organization, place, ...), as a mention element's \"type\".")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many candidates (--json lists "
                                                               "them all).")] = 10,
    attribute: AttributeOpt = None,
    *, db: DbOptions,
) -> None:
    """Show a mention's candidates, signals and decision.

    The table fits the terminal: signal columns are left out (least needed
    first) before the candidates' names are ever wrapped; --json has them all.
    """
    attrs = _attributes(attribute)
    with db.client() as er:
        rows = _existing(er, bank, er.explain(bank, mention, near or [], at, mention_type, attributes=attrs))
        if not db.as_json:
            rows = _homonyms_named(er, bank, rows, "candidate_id")
        chosen = next((r for r in rows if r.decision in TAKEN), None)
        # The threshold only to say why a candidate under it won (a lever).
        why = (why_chosen(rows, er.settings(bank)["threshold"])
               if chosen is not None and chosen.lever and not db.as_json else None)
    if db.as_json:
        _print_json({"bank_id": bank, "mention": mention, "nearby": near or [], "event_date": at,
                     "type": mention_type, "attributes": attrs, "resolves_to": to_jsonable(chosen),
                     "candidates": rows})
        return
    # The first rows in the server's order, the chosen one always among them.
    shown = rows[:limit]
    if chosen is not None and chosen not in shown:
        shown = rows[:limit - 1] + [chosen]
    context = f" near {', '.join(near)}" if near else ""
    out = _out()
    hidden: List[str] = []
    out.print(explain_table(shown, title=f"{mention!r}{context} in bank {bank}", width=out.width, hidden=hidden))
    if len(rows) > len(shown):
        out.print(f"{len(rows) - len(shown)} more (--limit {len(rows)} shows them)", style="dim")
    if hidden:
        out.print(f"not shown at {out.width} columns: {', '.join(hidden)} (--json has every signal)", style="dim")
    out.print(verdict(mention, rows))
    if why:
        out.print(why)


# -- inspection ------------------------------------------------------------------

# The kinds of entities (the entities_kind check constraint of migrations/0001).
EntityKind = _choices("EntityKind", ("regular", "label"))


@_command(app, "entities")
def entities_cmd(
    bank: BankArg,
    top: Annotated[int, typer.Option("--top", min=1, help="How many, most mentioned first.")] = 20,
    kind: Annotated[Optional[EntityKind], typer.Option("--kind", help="Only entities of this kind.")] = None,
    *, db: DbOptions,
) -> None:
    """List a bank's entities, most mentioned first."""
    with db.client() as er:
        rows = _existing(er, bank, er.entities(bank, top=top, kind=kind.value if kind else None))
        if not db.as_json:
            rows = _homonyms_named(er, bank, rows, "entity_id")
    if db.as_json:
        _print_json(rows)
        return
    _out().print(entities_table(rows, title=f"entities of bank {bank} (top {top})"))
    if not rows:
        _err().print(f"bank {bank!r} has no entities" + (f" of kind {kind.value}" if kind else ""))


@_command(app, "neighbors")
def neighbors_cmd(
    bank: BankArg,
    name: Annotated[str, typer.Argument(help="Entity name (case-insensitive).")],
    top: Annotated[int, typer.Option("--top", min=1, help="How many, most frequent first.")] = 50,
    *, db: DbOptions,
) -> None:
    """Entities seen in the same facts as NAME."""
    with db.client() as er:
        entity = er.find_entity(bank, name)
        if entity is None:
            _require_bank(er, bank)
            similar = er.similar_names(bank, name)
            hint = f"; did you mean: {', '.join(similar)}?" if similar else ""
            raise CliError(f"bank {bank!r} has no entity named {name!r}{hint}")
        rows = er.neighbors(bank, name, limit=top)
        labels = {} if db.as_json else er.homonym_labels(bank, [n.neighbor_id for n in rows])
    if db.as_json:
        _print_json({"entity": entity, "neighbors": rows})
        return
    table = _table(f"neighbours of {entity.canonical_name} in bank {bank} ({entity.degree} in all)",
                   ("neighbour", "facts together", "last together"), right=("facts together",))
    for n in rows:
        table.add_row(labels.get(str(n.neighbor_id), n.neighbor_name), str(n.cooccurrence_count),
                      fmt(n.last_cooccurred))
    _out().print(table)


@_command(app, "facts")
def facts_cmd(
    bank: BankArg,
    name: EntityArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100000, help="At most this many, newest first.")] = 50,
    *, db: DbOptions,
) -> None:
    """The facts that mention an entity, newest first."""
    with db.client() as er:
        try:
            rows = er.entity_facts(bank, name, max_results=limit)
        except AmbiguousName:
            raise   # the name is there: several entities bear it
        except ValueError:
            _require_bank(er, bank)
            similar = er.similar_names(bank, name)
            hint = f"; did you mean: {', '.join(similar)}?" if similar else ""
            raise CliError(f"bank {bank!r} has no entity named {name!r}{hint}") from None
    if db.as_json:
        _print_json(rows)
        return
    table = new_table(f"facts mentioning {name} in bank {bank} (newest first, at most {limit})")
    table.add_column("when", no_wrap=True)
    table.add_column("as", no_wrap=True)
    table.add_column("content", ratio=1)
    table.add_column("fact id", no_wrap=True)
    for r in rows:
        table.add_row(fmt(r.event_date), r.mention_text, r.content or "–", str(r.fact_id))
    _out().print(table)


@_command(app, "graph")
def graph_cmd(
    bank: BankArg,
    around: Annotated[Optional[str], typer.Option(
        "--around", help="The entity in the middle (id, name or alias) [default: the most mentioned ones].")] = None,
    depth: Annotated[int, typer.Option("--depth", min=1, max=5, help="Levels of neighbours around it.")] = 1,
    max_nodes: Annotated[int, typer.Option("--max-nodes", min=1, max=2000, help="At most this many entities.")] = 200,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Write a picture: FILE.html (self-contained), FILE.svg or FILE.png (Graphviz), FILE.dot "
                      "[default: print the graph as JSON].")] = None,
    *, db: DbOptions,
) -> None:
    """A picture of a bank: its entity graph around one entity, or its busiest part."""
    from entity_resolver import graph as graph_mod

    if out is not None:
        try:
            graph_mod.format_of(out)
        except graph_mod.GraphError as exc:
            raise typer.BadParameter(str(exc).partition(": ")[2], param_hint="--out")
    with db.client() as er:
        _require_bank(er, bank)
        try:
            graph = er.entity_graph(bank, around, depth, max_nodes)
        except AmbiguousName:
            raise   # the name is there: several entities bear it
        except ValueError:
            similar = er.similar_names(bank, around or "")
            hint = f"; did you mean: {', '.join(similar)}?" if similar else ""
            raise CliError(f"bank {bank!r} has no entity named {around!r}{hint}") from None
    if out is None:
        _print_json(graph)
        return
    try:
        fmt = graph_mod.write(graph, out)
    except graph_mod.GraphError as exc:
        raise SystemicError(str(exc))
    summary = {"out": str(out), "format": fmt, "nodes": len(graph["nodes"]), "edges": len(graph["edges"]),
               "truncated": graph["truncated"]}
    if db.as_json:
        _print_json(summary)
    else:
        _out().print(f"wrote {out} ({fmt}): {summary['nodes']} entities, {summary['edges']} edges"
                     + (" (truncated at --max-nodes)" if graph["truncated"] else ""))


@_command(app, "banks")
def banks_cmd(db: DbOptions) -> None:
    """List the banks with their numbers of entities and facts."""
    s = sql.Identifier(db.schema)
    with db.connect() as conn:
        rows = conn.execute(sql.SQL(
            "SELECT b.bank_id,"
            " (SELECT count(*) FROM {s}.entities e WHERE e.bank_id = b.bank_id),"
            " (SELECT count(*) FROM {s}.facts f WHERE f.bank_id = b.bank_id),"
            " b.settings, b.created_at FROM {s}.banks b ORDER BY b.bank_id").format(s=s)).fetchall()
    data = [{"bank_id": r[0], "entities": r[1], "facts": r[2], "settings": r[3], "created_at": r[4]}
            for r in rows]
    if db.as_json:
        _print_json(data)
        return
    table = _table("banks", ("bank", "entities", "facts", "settings", "created"), right=("entities", "facts"))
    for d in data:
        table.add_row(d["bank_id"], str(d["entities"]), str(d["facts"]),
                      json.dumps(d["settings"]) if d["settings"] else "defaults", fmt(d["created_at"]))
    _out().print(table)


@_command(app, "expand")
def expand_cmd(
    bank: BankArg,
    fact_ids: Annotated[List[str], typer.Argument(help="Seed facts: UUIDs or the fact_id strings given to import.")],
    max_results: Annotated[int, typer.Option("--max", min=1, help="At most this many facts.")] = 50,
    *, db: DbOptions,
) -> None:
    """Facts that share entities with the given facts."""
    with db.client() as er:
        rows = _existing(er, bank, er.expand(bank, fact_ids, max_results))
        contents = er.fact_contents(bank, [r.unit_id for r in rows])
    if db.as_json:
        _print_json([{"unit_id": r.unit_id, "fact_id": r.fact_id, "shared_entities": r.shared_entities,
                      "content": contents.get(r.unit_id)} for r in rows])
        return
    table = new_table(f"facts sharing entities with {', '.join(fact_ids)}")
    table.add_column("fact id", no_wrap=True)
    table.add_column("shared", justify="right", no_wrap=True)
    table.add_column("content", ratio=1)
    for r in rows:
        table.add_row(r.fact_id or str(r.unit_id), str(r.shared_entities), contents.get(r.unit_id) or "–")
    _out().print(table)


@_command(app, "flush")
def flush_cmd(bank: Annotated[Optional[str], typer.Argument(help="Bank id [default: every bank].")] = None,
              *, db: DbOptions) -> None:
    """Apply queued mention and co-occurrence statistics."""
    with db.client() as er:
        r = er.flush(bank)
    if db.as_json:
        _print_json(r)
        return
    _out().print(f"flushed {'every bank' if bank is None else 'bank ' + bank}: "
                 f"{r.entities_updated} entities and {r.pairs_updated} pairs updated")


def _setting_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # passed on as a string; the database says why it is wrong


@_command(app, "configure")
def configure_cmd(
    bank: BankArg,
    settings: Annotated[Optional[List[str]], typer.Argument(
        help="KEY=VALUE pairs, e.g. threshold=0.7 (KEY=null: back to the default).")] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Drop every override not given now.")] = False,
    *, db: DbOptions,
) -> None:
    """Show or change a bank's settings."""
    values: Dict[str, Any] = {}
    for item in settings or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"setting {item!r}: expected KEY=VALUE")
        values[key.strip()] = _setting_value(value.strip())
    with db.client() as er:
        if values or reset:
            effective = er.configure(bank, values, replace=reset)
        else:
            effective = er.settings(bank)
        overridden = er.overrides(bank)
    if db.as_json:
        _print_json(effective)
        return
    table = _table(f"settings of bank {bank}", ("setting", "value", ""), right=("value",))
    for k in sorted(effective):
        table.add_row(k, json.dumps(effective[k]), "set for this bank" if k in overridden else "default",
                      style="bold" if k in overridden else "")
    _out().print(table)


# -- correcting identity (docs/corrections.md) ----------------------------------------
# Entities are named by id, canonical name or alias; facts by fact_id or id.
# Each prints what the correction does (or would do, with --dry-run) and the
# operation to undo; --json prints the plan the SQL function returns.

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show the plan; write nothing.")]
ReasonOpt = Annotated[Optional[str], typer.Option("--reason", help="Why, for the history.")]

# The plan's counts worth a line, in this order, as people read them.
_PLAN_FIELDS = (
    ("mentions_moved", "mentions moved"), ("mentions_staying", "mentions staying"),
    ("mentions", "mentions"), ("units", "facts (units)"), ("links_moved", "facts (units) moved"),
    ("pairs_removed", "pairs removed"), ("pairs", "pairs"), ("mention_count", "mentions after"),
    ("aliases_added", "aliases added"), ("aliases", "aliases"), ("alias_added", "alias added"),
    ("alias_removed", "alias removed"), ("forwards", "ids forwarded"),
    ("aliases_shared", "aliases the moved mentions are written as"), ("aliases_removed", "aliases removed"),
    ("mentions_decided", "mentions decided again"), ("mentions_fixed", "mentions fixed (operator, alias, literal, label)"),
    ("entities_removed", "entities left with nothing, removed"),
    ("whole_entities", "entities of one name decided again whole"),
    ("replayed", "every fact replayed in event order first"),
)


def _print_plan(bank: str, plan: Dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json(plan)
        return
    out = _out()
    dry = plan.get("dry_run")
    out.print(Text(plan.get("summary", plan.get("kind", "")), style="bold")
              + Text(" (dry run: nothing written)" if dry else "", style="yellow"))
    for key, label in _PLAN_FIELDS:
        value = plan.get(key)
        if value is None or value == []:
            continue
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        out.print(f"  {label}: {value}")
    new = (plan.get("new_entity") or {}).get("entity_id")
    if new:
        out.print(f"  new entity: {new}")
    made = plan.get("entities_created") or []
    if made:
        out.print("  entities made (the replay held their mentions apart): "
                  + ", ".join(f"{e['canonical_name']} ({e['id']})" for e in made))
    _print_erase(plan)
    if not dry and plan.get("operation_id") is not None:
        out.print(f"operation {plan['operation_id']}; undo with: entity-resolver undo {bank} {plan['operation_id']}",
                  style="dim")


def _print_erase(plan: Dict[str, Any]) -> None:
    """What forget --erase did (or would do) beyond forgetting: the ledger rewritten, the facts left to the caller."""
    if not plan.get("erase"):
        return
    out = _out()
    dry = plan.get("dry_run")
    ops = plan.get("operations_erased") or []
    out.print(f"  names erased: {', '.join(plan.get('names_erased') or [])}")
    listed = ", ".join(f"{o['operation_id']} ({o['kind']})" for o in ops) or "none"
    out.print(f"  ledger operations {'to rewrite' if dry else 'rewritten'} without the names, no longer undoable: "
              f"{listed}" + ("" if dry else "; this one cannot be undone either"))
    facts = plan.get("facts_naming") or []
    out.print(f"  facts that still name it or mentioned it (the application's to change or delete): {len(facts)}")
    for f in facts:
        where = [w for w, key in (("content", "in_content"), ("mentions", "in_mentions"),
                                  ("mentioned it", "mentioned")) if f.get(key)]
        out.print(f"    {f.get('fact_id') or f['id']}: {', '.join(where)}")


def _correct(bank: str, correction: Callable[[Client], Dict[str, Any]], db: DbOptions) -> None:
    """Run one correction on a Client of its own and print the plan it returns."""
    with db.client() as er:
        plan = correction(er)
    _print_plan(bank, plan, db.as_json)


@_command(app, "merge")
def merge_cmd(
    bank: BankArg,
    sources: Annotated[List[str], typer.Argument(help="Entities to merge away (ids, names or aliases).")],
    into: Annotated[str, typer.Option("--into", help="The entity they become (id, name or alias).")],
    dry_run: DryRunOpt = False, reason: ReasonOpt = None,
    *, db: DbOptions,
) -> None:
    """Merge entities into one: mentions, links and pairs move; names become aliases; ids forward."""
    _correct(bank, lambda er: er.merge(bank, sources, into, dry_run=dry_run, reason=reason),
             db)


@_command(app, "split")
def split_cmd(
    bank: BankArg,
    entity: Annotated[str, typer.Argument(help="The entity to split (id, name or alias).")],
    facts: Annotated[List[str], typer.Option("--fact", help="A fact whose mentions move (fact_id or id; repeatable).")],
    name: Annotated[str, typer.Option("--name", help="Name of the new entity.")],
    dry_run: DryRunOpt = False, reason: ReasonOpt = None,
    keep_aliases: Annotated[bool, typer.Option(
        "--keep-aliases/--drop-aliases",
        help="Keep (default) or remove the entity's aliases that the moved mentions are written as.")] = True,
    *, db: DbOptions,
) -> None:
    """Move an entity's mentions in the given facts to a new entity."""
    _correct(bank, lambda er: er.split(bank, entity, facts, name, dry_run=dry_run, reason=reason,
                                       keep_aliases=keep_aliases),
             db)


@_command(app, "rename")
def rename_cmd(
    bank: BankArg,
    entity: EntityArg,
    new_name: Annotated[str, typer.Argument(help="Its new canonical name.")],
    reason: ReasonOpt = None,
    *, db: DbOptions,
) -> None:
    """Give an entity another canonical name; the old one stays as an alias."""
    _correct(bank, lambda er: er.rename(bank, entity, new_name, reason=reason), db)


@_command(app, "alias")
def alias_cmd(
    bank: BankArg,
    entity: EntityArg,
    alias: Annotated[str, typer.Argument(help="Another name that resolves to it exactly.")],
    *, db: DbOptions,
) -> None:
    """Add an alias: a mention equal to it resolves to the entity."""
    _correct(bank, lambda er: er.add_alias(bank, entity, alias), db)


@_command(app, "unalias")
def unalias_cmd(
    bank: BankArg,
    alias: Annotated[str, typer.Argument(help="The alias (case-insensitive).")],
    *, db: DbOptions,
) -> None:
    """Remove an alias."""
    _correct(bank, lambda er: er.remove_alias(bank, alias), db)


@_command(app, "forget")
def forget_cmd(
    bank: BankArg,
    entity: EntityArg,
    dry_run: DryRunOpt = False, reason: ReasonOpt = None,
    erase: Annotated[bool, typer.Option(
        "--erase", help="A data-protection request: also erase its names from the ledger (no undo) and list the "
                        "facts that still name it.")] = False,
    *, db: DbOptions,
) -> None:
    """Remove an entity with its provenance, links, pairs and aliases (the facts stay)."""
    _correct(bank, lambda er: er.forget_entity(bank, entity, dry_run=dry_run, reason=reason, erase=erase),
             db)


@_command(app, "distinct")
def distinct_cmd(
    bank: BankArg,
    a: Annotated[str, typer.Argument(help="One entity (id, name or alias).")],
    b: Annotated[str, typer.Argument(help="The other entity (id, name or alias).")],
    reason: ReasonOpt = None, dry_run: DryRunOpt = False,
    *, db: DbOptions,
) -> None:
    """Judge two entities distinct: no merge may make them one until undistinct."""
    _correct(bank, lambda er: er.mark_distinct(bank, a, b, reason=reason, dry_run=dry_run), db)


@_command(app, "undistinct")
def undistinct_cmd(
    bank: BankArg,
    a: Annotated[str, typer.Argument(help="One entity (id, name or alias).")],
    b: Annotated[str, typer.Argument(help="The other entity (id, name or alias).")],
    dry_run: DryRunOpt = False,
    *, db: DbOptions,
) -> None:
    """Remove the judgement that two entities are distinct."""
    _correct(bank, lambda er: er.unmark_distinct(bank, a, b, dry_run=dry_run), db)


@_command(app, "judgements")
def judgements_cmd(
    bank: BankArg,
    entity: Annotated[Optional[str], typer.Argument(help="Only this entity's (id, name or alias).")] = None,
    *, db: DbOptions,
) -> None:
    """The pairs of entities judged distinct (entity-resolver distinct)."""
    with db.client() as er:
        rows = _existing(er, bank, er.judgements(bank, entity))
    if db.as_json:
        _print_json(rows)
        return
    table = _table(f"judgements of bank {bank}", ("entity", "distinct from", "why", "when", "who"), overflow="fold")
    for r in rows:
        table.add_row(r.name_a, r.name_b, r.reason or "–", fmt(r.created_at), r.created_by)
    _out().print(table)
    if not rows:
        _err().print(f"bank {bank!r} has no judgements" + (f" of {entity!r}" if entity else ""))


@_command(app, "review")
def review_cmd(
    bank: BankArg,
    limit: Annotated[int, typer.Option("--limit", help="At most this many items.")] = 50,
    *, db: DbOptions,
) -> None:
    """What to review: likely duplicates, over-merges and close calls, each with the dry run that fixes it."""
    with db.client() as er:
        rows = _existing(er, bank, er.review(bank, limit=limit))
        # Homonyms named apart (entity_ids and names go in pairs).
        labels = {} if db.as_json else er.homonym_labels(bank, [i for r in rows for i in r.entity_ids])
    if db.as_json:
        _print_json(rows)
        return
    table = _table(f"review of bank {bank}", ("kind", "score", "entities", "why", "fix", "item"), overflow="fold")
    for r in rows:
        shown = [labels.get(str(i), n) for i, n in zip(r.entity_ids, r.names)]
        table.add_row(r.kind, str(r.score), ", ".join(shown), str(r.evidence.get("why", "")), r.fix, r.item)
    _out().print(table)
    if not rows:
        _err().print(f"bank {bank!r} has nothing to review")


@_command(app, "reresolve")
def reresolve_cmd(
    bank: BankArg,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Make the moves (one operation, undone by entity-resolver undo). Without it: a dry run, "
                        "nothing written.")] = False,
    entities: Annotated[Optional[List[str]], typer.Option(
        "--entity", help="Only the mentions of this entity (id, name or alias; repeatable).")] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", help="Only the facts dated since this timestamp (e.g. 2026-03-01).")] = None,
    queued: Annotated[Optional[int], typer.Option(
        "--queued", min=1, max=10000, metavar="N",
        help="Instead: the neighbourhood of the N oldest facts queued by the bank's auto_reresolve setting "
             "(taken off the queue with --apply).")] = None,
    reason: ReasonOpt = None,
    *, db: DbOptions,
) -> None:
    """Decide the bank's stored facts again against the bank as it stands, and move what changed (dry run by default)."""
    if queued is not None and (entities or since):
        raise typer.BadParameter("--queued decides the queued facts' neighbourhood: not with --entity or --since")
    with db.client() as er:
        if queued is not None:
            plan = er.reresolve_queued(bank, queued, dry_run=not apply, reason=reason)
        else:
            plan = er.reresolve(bank, entities or None, since=since, dry_run=not apply, reason=reason)
        # Homonyms named apart (an entity a move removed is no longer there to tell apart: its name).
        labels = {} if db.as_json else er.homonym_labels(
            bank, [m[end]["entity_id"] for m in plan.get("moves") or [] for end in ("from", "to")])
    _print_plan(bank, plan, db.as_json)
    if db.as_json:
        return
    if plan.get("moves"):
        table = _table("moves" + (" (not made: dry run)" if plan.get("dry_run") else ""),
                       ("fact", "mention", "from", "to", "score", "why"), overflow="fold")
        for m in plan["moves"]:
            score = m.get("new_score")
            table.add_row(m.get("fact_id") or str(m["unit_id"]), m["mention"],
                          labels.get(m["from"]["entity_id"], m["from"]["name"]),
                          labels.get(m["to"]["entity_id"], m["to"]["name"]),
                          "–" if score is None else f"{score:.3f}", m["why"])
        _out().print(table)
    for k in plan.get("kept") or []:
        _out().print(f"  kept {k['mention']!r} in {k.get('fact_id') or k['unit_id']} on {k['name']!r}: {k['why']}")
    if plan.get("dry_run") and plan.get("moves"):
        again = f" --queued {queued}" if queued is not None else ""
        _err().print(f"apply with: entity-resolver reresolve {bank}{again} --apply")


@_command(app, "dismiss")
def dismiss_cmd(
    bank: BankArg,
    item: Annotated[str, typer.Argument(help="The item key (entity-resolver review lists them).")],
    reason: ReasonOpt = None,
    *, db: DbOptions,
) -> None:
    """Dismiss a review item: it stays out of the review until its evidence grows."""
    _correct(bank, lambda er: er.dismiss_review(bank, item, reason=reason), db)


@_command(app, "undo")
def undo_cmd(
    bank: BankArg,
    operation_id: Annotated[int, typer.Argument(help="The operation (entity-resolver history lists them).")],
    *, db: DbOptions,
) -> None:
    """Undo a correction (the most recent ones first)."""
    with db.client() as er:
        _require_bank(er, bank)
        result = er.undo(bank, operation_id)
    if db.as_json:
        _print_json(result)
        return
    _out().print(f"undone: operation {result['operation_id']} ({result.get('summary')})")
    kept = result.get("kept")
    if kept:
        _out().print(f"  kept entity {kept['entity_id']}: {kept['mentions']} mentions resolved to it since")


@_command(app, "history")
def history_cmd(
    bank: BankArg,
    max_results: Annotated[int, typer.Option("--max", min=1, help="At most this many, most recent first.")] = 50,
    *, db: DbOptions,
) -> None:
    """The bank's corrections, most recent first, and whether each can be undone."""
    with db.client() as er:
        _require_bank(er, bank)
        rows = er.history(bank, max_results)
    if db.as_json:
        _print_json(rows)
        return
    table = _table(f"corrections of bank {bank}", ("id", "when", "who", "what", "reason", "status"),
                   right=("id",), overflow="fold")
    for r in rows:
        if r.undone_at is not None:
            status = Text(f"undone {fmt(r.undone_at)} by {r.undone_by}", style="dim")
        elif r.blocked_by:
            status = Text("undo " + ", ".join(map(str, r.blocked_by)) + " first", style="yellow")
        else:
            status = Text("can be undone", style="green")
        table.add_row(str(r.operation_id), fmt(r.performed_at), r.performed_by, r.summary, r.reason or "–", status)
    _out().print(table)
    if not rows:
        _err().print(f"bank {bank!r} has no corrections")


@_command(app, "mcp")
def mcp_cmd(
    dsn: DsnOpt = None, schema: SchemaOpt = DEFAULT_SCHEMA, data_dir: DataDirOpt = None,
    bank: Annotated[Optional[List[str]], typer.Option(
        "--bank", help="A bank the server serves (repeatable); a call for another is a tool error [default: any "
                       "bank the role may use].")] = None,
    http: Annotated[Optional[str], typer.Option(
        "--http", metavar="HOST:PORT", help="Serve streamable HTTP on HOST:PORT instead of stdio.")] = None,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Let --http listen on an address other machines reach (it has no authentication of "
                               "its own).")] = False,
) -> None:
    """Run a Model Context Protocol server over the resolver for agents (stdio, or --http). See docs/agents.md."""
    try:
        from entity_resolver import mcp_server
    except ImportError as exc:
        raise SystemicError(f"the MCP server needs the mcp extra: pip install 'pg-entity-resolver[mcp]' ({exc})")
    if http is not None:
        try:
            host, _ = mcp_server.parse_host_port(http)
        except ValueError as exc:
            raise typer.BadParameter(str(exc).partition(": ")[2], param_hint="--http")
        if not mcp_server.is_loopback(host) and not allow_remote:
            raise typer.BadParameter(f"{host} is not a loopback address; add --allow-remote to listen on it",
                                     param_hint="--http")
    # Checks the installation (the embedded cluster is installed when needed); stdout stays the protocol's.
    with _connect(dsn, schema, data_dir, quiet=True) as conn:
        info = conn.info
        target = dsn or (f"host={info.host} port={info.port} user={info.user} dbname={info.dbname}")
    mcp_server.serve(target, schema=schema, banks=bank, http=http)


# How export names the entity of a mention.
GoldForm = _choices("GoldForm", GOLD_FORMS)


@_command(app, "export")
def export_cmd(
    bank: BankArg,
    output: Annotated[str, typer.Option("--output", "-o", help="File to write (- for standard output).")] = "-",
    gold: Annotated[GoldForm, typer.Option("--gold", help="Write each mention's entity as its id or its name.")] = GoldForm.id,
    *, db: DbOptions,
) -> None:
    """Write the bank's facts in the import format, each mention with its entity as gold.

    Facts in the order they were stored, each with its fact_id; importing the
    file into a fresh bank (import --bank NEW) resolves them again in that
    order, and entity-resolver eval scores the resolver against the bank as
    its operators corrected it. The summary goes to standard error when the
    facts go to standard output.
    """
    import os

    with db.client(quiet=db.as_json or output == "-") as er:
        _require_bank(er, bank)
        if output == "-":
            summary = er.export(bank, sys.stdout, gold=gold.value)
        else:
            # Written aside and renamed: an export that fails leaves no half file.
            partial = f"{output}.partial"
            try:
                with open(partial, "w", encoding="utf-8") as fh:
                    summary = er.export(bank, fh, gold=gold.value)
                os.replace(partial, output)
            finally:
                if os.path.exists(partial):
                    os.unlink(partial)
    where = "standard output" if output == "-" else output
    if db.as_json and output != "-":
        _print_json(summary.as_dict())
        return
    _err().print(f"exported {summary.facts} facts ({summary.mentions} mentions"
                 + (f", {summary.without_gold} without an entity" if summary.without_gold else "")
                 + f") of bank {bank} to {where}")


# -- evaluation (a thin wrapper over evaluate.py) --------------------------------

@_command(app, "eval")
def eval_cmd(
    path: Annotated[Path, typer.Argument(help="Labelled stream (import format, mentions with gold), or a directory of *.jsonl.")],
    replay: Annotated[str, typer.Option("--replay", help="trigger (INSERT INTO facts) or functions (resolve_mentions + link_unit).")] = "trigger",
    banks_file: Annotated[Optional[Path], typer.Option("--banks", help="Per-bank settings and labels (default: STREAM.banks.json if present).")] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the eval banks for inspection with explain.")] = False,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Facts per INSERT statement (1: fact by fact).")] = 1,
    profile: Annotated[Optional[str], typer.Option(
        "--profile", help="Every bank's profile: reference or enhanced (default: the banks file's, else the "
        "default profile).")] = None,
    *, db: DbOptions,
) -> None:
    """Replay a labelled stream into fresh banks and score the decisions."""
    if profile is not None and profile not in ("reference", "enhanced"):
        raise CliError(f"--profile: must be reference or enhanced, got {profile!r}")
    from entity_resolver.evaluate import EvalError, format_report, run_eval

    with db.connect() as conn:
        try:
            result = run_eval(conn, path, db.schema, replay=replay, banks_file=banks_file, keep=keep, batch=batch,
                              profile=profile)
        except (EvalError, ValueError) as exc:
            raise CliError(str(exc)) from None
    if db.as_json:
        _print_json(result)
    else:
        print(format_report(result))


# -- labels ----------------------------------------------------------------------

@_command(labels_app, "set")
def labels_set_cmd(
    bank: BankArg,
    file: Annotated[Path, typer.Argument(help="JSON file: {\"attributes\": [...]} (or - for stdin).")],
    *, db: DbOptions,
) -> None:
    """Declare a bank's label vocabulary from a JSON file."""
    text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    try:
        labels = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{file}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    with db.client() as er:
        stored = er.set_labels(bank, labels)
    if db.as_json:
        _print_json(stored)
        return
    groups = stored.get("attributes", []) if isinstance(stored, dict) else []
    _out().print(f"bank {bank}: {len(groups)} label group(s) declared: "
                 + ", ".join(f"{g.get('key')} ({g.get('type')})" for g in groups))


@_command(labels_app, "show")
def labels_show_cmd(bank: BankArg, db: DbOptions) -> None:
    """Print a bank's label vocabulary."""
    with db.client() as er:
        _require_bank(er, bank)
        labels = er.labels(bank)
    if db.as_json:
        _print_json(labels)
        return
    table = _table(f"labels of bank {bank}", ("key", "type", "values / fields"))
    for g in (labels or {}).get("attributes", []):
        items = g.get("values") or g.get("fields") or []
        table.add_row(str(g.get("key")), str(g.get("type")),
                      ", ".join(str(i.get("value", i.get("key"))) for i in items) or "(open)")
    _out().print(table)


@_command(labels_app, "schema")
def labels_schema_cmd(bank: BankArg, db: DbOptions) -> None:
    """Print the bank's labels as a JSON Schema (for an extractor). Always JSON."""
    with db.client(quiet=True) as er:
        _require_bank(er, bank)
        _print_json(er.labels_json_schema(bank))


# -- the embedded cluster --------------------------------------------------------

def _status_dict(cluster: EmbeddedCluster) -> Dict[str, Any]:
    s = cluster.status()
    s["database"] = EMBEDDED_DB
    s["dsn"] = cluster.dsn(EMBEDDED_DB) if cluster.port else None
    s["initialized"] = cluster.initialized()
    return s


def _print_status(cluster: EmbeddedCluster, as_json: bool) -> None:
    s = _status_dict(cluster)
    if as_json:
        _print_json(s)
        return
    out = _out()
    if s["running"] and s["dsn"]:
        # Line one is the DSN alone, for: export DSN="$(entity-resolver db status | head -n 1)"
        out.print(s["dsn"], soft_wrap=True, markup=False)
    out.print(f"embedded PostgreSQL: {'running' if s['running'] else 'stopped'}")
    out.print(f"  data directory  {s['datadir']}{'' if s['initialized'] else ' (not created yet)'}")
    out.print(f"  server log      {s['log']}")
    out.print(f"  runs as         OS user {s['server_user']}")
    if s["port"]:
        out.print(f"  listens on      127.0.0.1:{s['port']} (trust authentication, loopback only)")
        out.print(f"  connect with    psql \"{s['dsn']}\"")
    out.print(f"  stop with       {cluster.stop_hint()}" if s["running"]
              else f"  start with      {cluster.stop_hint().replace(' stop', ' start')}")


@_command(db_app, "start")
def db_start_cmd(data_dir: DataDirOpt = None, schema: SchemaOpt = DEFAULT_SCHEMA,
                 as_json: JsonOpt = False) -> None:
    """Start (creating it on first use) the embedded cluster and install entity_resolver."""
    with _connect(None, schema, data_dir, quiet=True):
        pass
    _print_status(EmbeddedCluster(datadir=data_dir) if data_dir else EmbeddedCluster(), as_json)


@_command(db_app, "stop")
def db_stop_cmd(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Stop the embedded cluster (its data is kept)."""
    cluster = EmbeddedCluster(datadir=data_dir) if data_dir else EmbeddedCluster()
    was = cluster.running()
    cluster.stop()
    if as_json:
        _print_json({"datadir": str(cluster.datadir), "was_running": was, "running": cluster.running()})
        return
    _out().print(f"embedded PostgreSQL in {cluster.datadir} "
                 f"{'stopped' if was else 'was not running'}; its data is kept")


@_command(db_app, "status")
def db_status_cmd(data_dir: DataDirOpt = None, as_json: JsonOpt = False) -> None:
    """Where the embedded cluster is, whether it runs, how to connect and stop it."""
    _print_status(EmbeddedCluster(datadir=data_dir) if data_dir else EmbeddedCluster(), as_json)


@_command(db_app, "destroy")
def db_destroy_cmd(data_dir: DataDirOpt = None,
                   yes: Annotated[bool, typer.Option("--yes", help="Really delete the data.")] = False,
                   as_json: JsonOpt = False) -> None:
    """Stop the embedded cluster and delete its data directory."""
    cluster = EmbeddedCluster(datadir=data_dir) if data_dir else EmbeddedCluster()
    if not yes:
        raise CliError(f"this deletes {cluster.datadir} and everything in it; pass --yes to confirm")
    cluster.destroy()
    if as_json:
        _print_json({"datadir": str(cluster.datadir), "destroyed": True})
        return
    _out().print(f"deleted the embedded cluster in {cluster.datadir}")


# -- entry point -----------------------------------------------------------------

def _version(value: bool) -> None:
    if value:
        print(f"entity-resolver {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None) -> None:
    """PostgreSQL-native entity resolver: install, demo, import, explain, inspect, correct, export."""


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
