"""Bulk import of facts from a JSON Lines stream, through the facts trigger.

One JSON object per line::

    {"fact_id": "f1", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
     "content": "Alex flagged a blocker on the Acme renewal.",
     "mentions": [{"text": "Alex", "gold": "p-17", "resolve": true}, "Acme"]}

``content``, ``event_date`` and, per mention, ``gold``, ``resolve``, ``nearby``
and ``event_date`` are optional; a mention may also be a bare string.
``fact_id`` is a string or an integer (``7`` is the fact ``"7"``). ``gold`` is
ground truth for evaluation and is not stored. ``entities`` (written by the
export) describes the entities whose first mention is on the line, keyed as
their gold: a file with it is imported with its curation (the partition of its
golds, names, aliases, judgements; :mod:`entity_resolver.curation`), applied
after the facts. A fact without ``mentions`` (or with an empty list) is stored,
linked to no entity, and counted as a warning.

The import is two passes over the file. The first validates every line with
the server's own rules, so that a line it accepts is a line the database
accepts: mentions are checked by the server's parser (``plpython/mentions.py``,
loaded from the package data), bank ids and dates by the database itself (one
statement per chunk of lines), and strings PostgreSQL cannot hold (NUL,
unpaired surrogates) are refused. A bad line is reported with its number and
key before anything is written (or skipped with ``skip_bad``). The second pass
inserts the good lines in batches, one transaction per batch: the facts of
the batch are inserted by one statement (the statement trigger resolves and
links them together) and the bank's statistics are flushed, so the next batch
is resolved against a graph that includes this one. A batch is all or nothing.

Errors are of two kinds (:func:`is_data_error`): a *data* error is about one
line (SQLSTATE classes 22, 23, 2B and 54: a value, a constraint, a dependent
operation, a limit); any other error is *systemic* (permission, connection,
not installed, read-only, disk full, ...). ``skip_bad`` skips data errors
only; a systemic error stops the import whatever the flag.

Dates without a UTC offset are read as UTC: validation and writing run with
the transaction's TimeZone set to UTC, so a date means the same on every server.

Resumability: ``fact_id`` maps deterministically to the unit id (``facts.id``),
and facts whose id is already present are skipped. A re-run after an
interruption therefore neither loses nor duplicates anything.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

import psycopg
from psycopg import sql

from entity_resolver.curation import Curation
from entity_resolver.build import data_dir, internal_schema

# facts.id = uuid5(FACT_NAMESPACE, fact_id). Fixed forever: changing it would
# make every re-run import the whole file again under new ids.
FACT_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-5b7a-9c41-2e5f0d8b7a13")

DEFAULT_BATCH = 500
MAX_SHOWN_ERRORS = 20
CHECK_CHUNK = 1000       # lines validated per database round trip (dates, bank ids)

FACT_KEYS = ("fact_id", "bank_id", "event_date", "content", "mentions", "entities")
MAX_FACT_ID = 500        # characters; facts.fact_id's check constraint
# Keys of a mention object the importer takes off before the server sees it.
IMPORT_ONLY_MENTION_KEYS = ("gold",)

# SQLSTATE classes that are about the data (of one line, or an argument): 22
# data exception (a value), 23 integrity constraint violation, 2B dependent
# objects still exist (an operation later ones build on, which undo refuses),
# 54 program limit exceeded (a limit such as mentions per fact). Anything else
# is systemic. The command line's exit statuses follow the same rule.
DATA_CLASSES = ("22", "23", "2B", "54")

NO_MENTIONS = "mentions: none; the fact is stored linked to no entity"


# -- the server's parser ----------------------------------------------------------

def _load_server_module(name: str, siblings: Dict[str, ModuleType]) -> ModuleType:
    """Load plpython/<name>.py under a private name; bare imports of ``siblings`` resolve to them."""
    path = data_dir() / "plpython" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"entity_resolver._server_{name}", path)
    module = importlib.util.module_from_spec(spec)
    # The server's modules import each other by bare name (``from errors
    # import ...``), as PL/Python loads them. They are aliased in sys.modules
    # for the duration of the load only: putting plpython/ on sys.path would
    # let its generic names (errors, db, settings) shadow other packages.
    saved = {n: sys.modules.get(n) for n in siblings}
    sys.modules.update(siblings)
    sys.modules[spec.name] = module      # under its private name, as an import would (dataclasses need it)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    finally:
        for n, previous in saved.items():
            if previous is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = previous
    return module


@lru_cache(maxsize=None)
def server_parser() -> ModuleType:
    """The server's mention parser, plpython/mentions.py (with the errors.py it imports)."""
    return _load_server_module("mentions", {"errors": _server_errors()})


@lru_cache(maxsize=None)
def _server_errors() -> ModuleType:
    return _load_server_module("errors", {})


@lru_cache(maxsize=None)
def server_settings() -> ModuleType:
    """The server's settings, plpython/settings.py: a bank's limits are its overrides over these defaults."""
    return _load_server_module("settings", {"errors": _server_errors(), "mentions": server_parser()})


# -- errors ---------------------------------------------------------------------------

class ImportFailed(RuntimeError):
    """The import stopped; the message names the line (or the cause) and the reason.

    ``systemic`` tells a problem of the database or the connection from a
    problem of the data; ``sqlstate`` is the SQLSTATE when there is one;
    ``bad`` lists the bad lines; ``imported`` counts the facts committed before.
    """

    def __init__(self, message: str, *, sqlstate: Optional[str] = None, systemic: bool = False,
                 bad: Optional[List["BadLine"]] = None, imported: int = 0):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.systemic = systemic
        self.bad = bad or []
        self.imported = imported


class BadLine(ValueError):
    """One line of the stream is not a valid fact; ``sqlstate`` is what PostgreSQL would say."""

    def __init__(self, line: int, message: str, sqlstate: Optional[str] = "22023"):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message
        self.sqlstate = sqlstate

    def as_dict(self) -> Dict[str, Any]:
        return {"line": self.line, "error": self.message, "sqlstate": self.sqlstate}


def is_data_error(exc: psycopg.Error) -> bool:
    """True iff the database refused the data (not the role, the connection or the installation)."""
    return bool(exc.sqlstate) and exc.sqlstate[:2] in DATA_CLASSES


def error_line(exc: psycopg.Error) -> str:
    """One line for a database error: SQLSTATE and primary message."""
    text = exc.diag.message_primary or str(exc) or type(exc).__name__
    msg = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"{exc.sqlstate}: {msg}" if exc.sqlstate else msg


def _systemic(exc: psycopg.Error, conn: psycopg.Connection, where: str, imported: int) -> ImportFailed:
    """The ImportFailed for an error that is not about the data."""
    if conn.closed or (isinstance(exc, psycopg.OperationalError) and not exc.sqlstate):
        cause = f"lost the database connection ({error_line(exc)})"
    else:
        cause = error_line(exc)
    return ImportFailed(
        f"{cause} {where}: a systemic error, not a problem of the input (--skip-bad does not "
        f"skip it); {imported} facts were imported before it; fix the cause and run the same "
        f"command again to resume", sqlstate=exc.sqlstate, systemic=True, imported=imported)


# -- fact ids ---------------------------------------------------------------------

def fact_uuid(fact_id: str) -> uuid.UUID:
    """Return the unit id (facts.id) of a fact_id: the id itself if it is a UUID, else uuid5."""
    # A caller whose ids already are UUIDs gets them back unchanged in facts.id,
    # so joining the facts table to the caller's own table needs no mapping.
    try:
        parsed = uuid.UUID(fact_id)
    except ValueError:
        return uuid.uuid5(FACT_NAMESPACE, fact_id)
    if str(parsed) == fact_id.lower():
        return parsed
    # "{...}" or hex-without-dashes spellings are strings like any other.
    return uuid.uuid5(FACT_NAMESPACE, fact_id)


# -- one line -------------------------------------------------------------------------

@dataclass
class FactRecord:
    """One line that passed the structural checks (dates and bank id: see scan())."""

    line: int
    fact_id: str
    bank_id: str
    unit_id: uuid.UUID
    content: Optional[str]
    mentions: List[Any]           # resolve_mentions element format, gold removed
    event_date: Optional[str]     # as written; read by PostgreSQL (UTC when without offset)
    golds: List[Optional[str]] = field(default_factory=list)  # per mention, for evaluation
    # (key, date text) of every event date of the line, the fact's and its mentions'
    dates: List[Tuple[str, str]] = field(default_factory=list)
    entities: Dict[str, Dict[str, Any]] = field(default_factory=dict)   # the export's curation, by gold


def _json_type(value: Any) -> str:
    return server_parser().type_name(value)


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity; JSON (and jsonb) has no such values.
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)   # one, not one per line


def _unstorable(value: Any, where: str) -> Optional[Tuple[str, str]]:
    """The first string PostgreSQL cannot hold, as (message, SQLSTATE); None when all can be stored."""
    if isinstance(value, str):
        if "\x00" in value:
            # text cannot hold a zero byte and jsonb refuses \u0000 (22P05).
            return f"{where}: contains a NUL character (\\u0000), which PostgreSQL cannot store", "22P05"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            return (f"{where}: contains an unpaired surrogate (\\u{code:04x}), which is not "
                    f"valid Unicode", "22P02")
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _unstorable(v, f"{where}[{i}]")
            if found:
                return found
    elif isinstance(value, dict):
        for k, v in value.items():
            path = f"{where}.{k}" if where else str(k)
            found = _unstorable(k, f"{path} (the key)") or _unstorable(v, path)
            if found:
                return found
    return None


def _mention(value: Any, where: str, line: int) -> Tuple[Any, Optional[str], Optional[str]]:
    """Check one mention with the server's parser; return (stored form, gold label, event date)."""
    parser = server_parser()
    gold = None
    stored = value
    if isinstance(value, dict):
        allowed = parser.ELEMENT_KEYS + IMPORT_ONLY_MENTION_KEYS
        for key in value:
            if key not in allowed:
                raise BadLine(line, f'{where}: unknown key "{key}" (allowed: {", ".join(allowed)})')
        gold = value.get("gold")
        if gold is not None and (isinstance(gold, bool) or not isinstance(gold, (str, int))):
            raise BadLine(line, f"{where}.gold: must be a string, got {_json_type(gold)}")
        stored = {k: v for k, v in value.items() if k not in IMPORT_ONLY_MENTION_KEYS}
    try:
        parsed = parser.parse_element(stored, where)
    except parser.InputError as exc:
        raise BadLine(line, str(exc), exc.sqlstate) from None
    return stored, (None if gold is None else str(gold)), parsed["event_date"]


def parse_fact(text: str, line: int, bank: Optional[str] = None) -> FactRecord:
    """Check one line's structure; raise BadLine naming the key and the problem.

    Bank ids and dates are checked by the database, in :func:`scan`.
    """
    try:
        obj = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise BadLine(line, f"not valid JSON: {exc.msg} at column {exc.colno}", "22P02") from None
    except (ValueError, RecursionError) as exc:
        # An integer of more than 4,300 digits, NaN, or nesting deeper than Python's stack.
        what = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise BadLine(line, f"not valid JSON: {what}", "22P02") from None
    if not isinstance(obj, dict):
        raise BadLine(line, f"must be a JSON object, got {_json_type(obj)}", "22P02")
    # A NUL or a lone surrogate can only come from a \\u escape (raw ones are
    # not valid JSON or not valid UTF-8): lines without one need no walk.
    unstorable = _unstorable(obj, "") if "\\u" in text else None
    if unstorable:
        raise BadLine(line, *unstorable)
    for key in obj:
        if key not in FACT_KEYS:
            raise BadLine(line, f'unknown key "{key}" (allowed: {", ".join(FACT_KEYS)})')

    fact_id = obj.get("fact_id")
    if isinstance(fact_id, int) and not isinstance(fact_id, bool):
        fact_id = str(fact_id)   # 7 and "7" are the same fact (documented)
    if not isinstance(fact_id, str) or not fact_id:
        raise BadLine(line, "fact_id: required: a non-empty string or an integer"
                      + ("" if fact_id is None else f", got {_json_type(obj.get('fact_id'))}"))
    if len(fact_id) > MAX_FACT_ID:
        # facts.fact_id keeps it (the facts_fact_id_length constraint).
        raise BadLine(line, f"fact_id: is {len(fact_id)} characters long; the limit is {MAX_FACT_ID}", "22001")

    bank_id = bank if bank is not None else obj.get("bank_id")
    if bank_id is None:
        raise BadLine(line, "bank_id: required (or give --bank)", "22004")
    if not isinstance(bank_id, str):
        raise BadLine(line, f"bank_id: must be a string, got {_json_type(bank_id)}")

    content = obj.get("content")
    if content is not None and not isinstance(content, str):
        raise BadLine(line, f"content: must be a string, got {_json_type(content)}")

    dates: List[Tuple[str, str]] = []
    event_date = obj.get("event_date")
    if event_date is not None:
        if not isinstance(event_date, str):
            raise BadLine(line, f"event_date: must be a timestamp string, got {_json_type(event_date)}")
        dates.append(("event_date", event_date))

    raw = obj.get("mentions", [])
    if raw is None:
        raise BadLine(line, "mentions: must not be null (leave the key out for a fact without mentions)",
                      "22004")
    if not isinstance(raw, list):
        raise BadLine(line, f"mentions: must be a JSON array, got {_json_type(raw)}")
    mentions, golds = [], []
    for i, m in enumerate(raw):
        stored, gold, date = _mention(m, f"mentions[{i}]", line)
        mentions.append(stored)
        golds.append(gold)
        if date is not None:
            dates.append((f"mentions[{i}].event_date", date))
    entities = _entities(obj.get("entities", {}), line)
    return FactRecord(line, fact_id, bank_id, fact_uuid(fact_id), content, mentions, event_date,
                      golds, dates, entities)


def _entities(raw: Any, line: int) -> Dict[str, Dict[str, Any]]:
    """Check a line's ``entities`` (the export's curation): {gold: {"name", "aliases", ...}}."""
    if not isinstance(raw, dict):
        raise BadLine(line, f"entities: must be a JSON object, got {_json_type(raw)}")
    out = {}
    for key, record in raw.items():
        where = f"entities[{json.dumps(key, ensure_ascii=False)}]"
        if not isinstance(record, dict):
            raise BadLine(line, f"{where}: must be a JSON object, got {_json_type(record)}")
        name = record.get("name")
        if not isinstance(name, str) or not name.strip():
            raise BadLine(line, f"{where}.name: required: a non-blank string")
        aliases = record.get("aliases", [])
        if not isinstance(aliases, list):
            raise BadLine(line, f"{where}.aliases: must be a JSON array, got {_json_type(aliases)}")
        texts = []
        for i, a in enumerate(aliases):
            text = a.get("alias") if isinstance(a, dict) else a
            if not isinstance(text, str) or not text.strip():
                raise BadLine(line, f"{where}.aliases[{i}]: must be a non-blank string or {{\"alias\": ...}}")
            texts.append(text)
        out[key] = {"name": name, "aliases": texts, "distinct": _distinct(record.get("distinct", []), where, line)}
    return out


def _distinct(raw: Any, where: str, line: int) -> List[Tuple[str, Optional[str]]]:
    """Check an entity record's ``distinct`` (its judgements): [(other entity's key, reason), ...]."""
    if not isinstance(raw, list):
        raise BadLine(line, f"{where}.distinct: must be a JSON array, got {_json_type(raw)}")
    out = []
    for i, item in enumerate(raw):
        other, reason = (item.get("entity"), item.get("reason")) if isinstance(item, dict) else (item, None)
        if not isinstance(other, str) or not other.strip():
            raise BadLine(line, f"{where}.distinct[{i}]: must be a non-blank string or {{\"entity\": ...}}")
        if reason is not None and not isinstance(reason, str):
            raise BadLine(line, f"{where}.distinct[{i}].reason: must be a string, got {_json_type(reason)}")
        out.append((other, reason))
    return out


# -- what the database refuses -------------------------------------------------------

def _utc(conn: psycopg.Connection) -> None:
    """Read dates without an offset as UTC, until the end of the transaction."""
    conn.execute("SELECT set_config('TimeZone', 'UTC', true)")


def _refusals(conn: psycopg.Connection, query: sql.Composable, values: List[str],
              ) -> Tuple[Dict[int, psycopg.Error], Dict[int, tuple]]:
    """Run ``query`` over an array of values: (refused index -> error, index -> result row).

    One statement when every value passes; when one fails, the halves are
    tried (a bad value costs a few statements, found by bisection). Only a
    data error is a refusal; any other error is raised.
    """
    refused: Dict[int, psycopg.Error] = {}
    results: Dict[int, tuple] = {}

    def run(lo: int, hi: int) -> None:
        try:
            with conn.transaction():
                _utc(conn)
                rows = conn.execute(query, (values[lo:hi],)).fetchall()
        except psycopg.Error as exc:
            if not is_data_error(exc) or conn.closed:
                raise
            if hi - lo == 1:
                refused[lo] = exc
                return
            mid = (lo + hi) // 2
            run(lo, mid)
            run(mid, hi)
            return
        for offset, row in enumerate(rows):
            results[lo + offset] = row

    if values:
        run(0, len(values))
    return refused, results


def _date_query() -> sql.Composable:
    # The server's rule (plpython/fold.py): what PostgreSQL reads as
    # timestamptz, then years 1 to 9999 (checked on the epochs returned).
    return sql.SQL(
        "SELECT extract(epoch FROM d::timestamptz)::float8, d::timestamptz::text"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i")


def _bank_query(schema: str) -> sql.Composable:
    # The server's one bank_id rule (check_bank_id in sql/020_banks.sql).
    return sql.SQL("SELECT {}.check_bank_id(b, 'bank_id') FROM unnest(%s::text[]) AS u (b)").format(
        sql.Identifier(internal_schema(schema)))


def check_dates(conn: psycopg.Connection, dates: List[str]) -> Dict[int, Tuple[str, str]]:
    """The dates the server refuses: index -> (reason, SQLSTATE); one statement when all are good."""
    refused, results = _refusals(conn, _date_query(), dates)
    out = {i: (f"is not a valid timestamp: {json.dumps(dates[i], ensure_ascii=False)} "
               f"({exc.diag.message_primary or exc.sqlstate})", "22007") for i, exc in refused.items()}
    in_range = server_parser().epoch_in_range
    for i, (epoch, text) in results.items():
        if not in_range(epoch):
            out[i] = (f"is out of range ({text}): event dates must be finite, years 1 to 9999", "22007")
    return out


def bank_limits(conn: psycopg.Connection, banks: List[str], schema: str) -> Dict[str, Dict[str, Any]]:
    """Each bank's effective settings (its stored overrides over the server's defaults; a new bank's are the defaults)."""
    stored = dict(conn.execute(
        sql.SQL("SELECT b.bank_id, b.settings::text FROM {}.banks AS b WHERE b.bank_id = ANY(%s)").format(
            sql.Identifier(schema)), (banks,)).fetchall()) if banks else {}
    effective = server_settings().effective_settings
    return {b: effective(json.loads(stored[b]) if stored.get(b) else {}) for b in banks}


def check_bank_ids(conn: psycopg.Connection, banks: List[str], schema: str) -> Dict[int, Tuple[str, str]]:
    """The bank ids the server refuses: index -> (reason without the key, SQLSTATE)."""
    refused, _ = _refusals(conn, _bank_query(schema), banks)
    out = {}
    for i, exc in refused.items():
        message = exc.diag.message_primary or str(exc)
        out[i] = (message.split(": ", 1)[1] if message.startswith("bank_id: ") else message, exc.sqlstate)
    return out


# -- reading ---------------------------------------------------------------------

def spool_stdin() -> Path:
    """Copy standard input to a temporary file (the import reads its input twice)."""
    fd, name = tempfile.mkstemp(prefix="entity_resolver-import-", suffix=".jsonl")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return Path(name)


def _open(path: Union[str, Path]) -> io.BufferedIOBase:
    if str(path) == "-":
        return io.BytesIO(sys.stdin.buffer.read())
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def iter_lines(path: Union[str, Path]) -> Iterator[Tuple[int, Optional[str], Optional[str]]]:
    """Yield (line number, text, decode error) for every non-blank line."""
    with _open(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, None, f"not valid UTF-8 (byte {exc.start + 1} of the line)"
                continue
            if text.strip():
                yield number, text, None


@dataclass
class Scan:
    """The result of the validation pass."""

    good: int = 0
    mentions: int = 0
    bad: List[BadLine] = field(default_factory=list)
    banks: Set[str] = field(default_factory=set)
    warnings: List[Dict[str, Any]] = field(default_factory=list)   # {"line", "warning"}
    curated: bool = False          # a line has "entities": the file's curation is applied after its facts
    limits: Dict[str, Dict[str, Any]] = field(default_factory=dict)   # bank -> its effective settings

    @property
    def bad_lines(self) -> Set[int]:
        return {b.line for b in self.bad}


class _Checker:
    """The validation pass over chunks of lines: structure here, dates and bank ids by the database."""

    def __init__(self, conn: psycopg.Connection, schema: str):
        self.conn, self.schema = conn, schema
        self.result = Scan()
        self.seen: Dict[Tuple[str, uuid.UUID], int] = {}
        self.bank_verdicts: Dict[str, Optional[Tuple[str, str]]] = {}

    def _bank_verdicts(self, records: List[FactRecord]) -> None:
        new = sorted({r.bank_id for r in records} - set(self.bank_verdicts))
        refused = check_bank_ids(self.conn, new, self.schema)
        for i, bank_id in enumerate(new):
            self.bank_verdicts[bank_id] = refused.get(i)
        self.result.limits.update(bank_limits(self.conn, [b for i, b in enumerate(new) if i not in refused],
                                              self.schema))

    def chunk(self, records: List[FactRecord], bad: List[BadLine]) -> None:
        """Finish a chunk: the database's checks, then duplicates and counts, in line order."""
        self._bank_verdicts(records)
        dates = [(r, key, value) for r in records for key, value in r.dates]
        refused = check_dates(self.conn, [value for _, _, value in dates])
        date_errors: Dict[int, BadLine] = {}
        for i in sorted(refused, reverse=True):      # the first bad date of a line wins
            rec, key, _ = dates[i]
            date_errors[rec.line] = BadLine(rec.line, f"{key}: {refused[i][0]}", refused[i][1])
        out = self.result
        for rec in records:
            verdict = self.bank_verdicts[rec.bank_id]
            if verdict is not None:
                bad.append(BadLine(rec.line, f"bank_id: {verdict[0]}", verdict[1]))
                continue
            if rec.line in date_errors:
                bad.append(date_errors[rec.line])
                continue
            try:
                # The server's limits (a fact alone is a call too), before anything is written.
                server_parser().check_sizes([len(rec.mentions)], ["mentions"], out.limits[rec.bank_id])
            except server_parser().InputError as exc:
                bad.append(BadLine(rec.line, str(exc), exc.sqlstate))
                continue
            key = (rec.bank_id, rec.unit_id)
            if key in self.seen:
                bad.append(BadLine(rec.line, f"fact_id: {rec.fact_id!r} already used on line "
                                   f"{self.seen[key]}", "23505"))
                continue
            self.seen[key] = rec.line
            out.good += 1
            out.mentions += len(rec.mentions)
            out.banks.add(rec.bank_id)
            if not rec.mentions:
                out.warnings.append({"line": rec.line, "warning": NO_MENTIONS})
        out.bad.extend(sorted(bad, key=lambda b: b.line))


def check_bank_option(conn: psycopg.Connection, bank: str, schema: str = "entity_resolver") -> None:
    """Refuse a ``--bank`` value the server refuses, once, before reading the file."""
    found = _unstorable(bank, "--bank")
    if found is None:
        refused = check_bank_ids(conn, [bank], schema)
        if refused:
            found = (f"--bank: {refused[0][0]}", refused[0][1])
    if found:
        raise ImportFailed(found[0], sqlstate=found[1])


def scan(conn: psycopg.Connection, path: Union[str, Path], bank: Optional[str] = None,
         schema: str = "entity_resolver") -> Scan:
    """Validate every line (the first pass); writes nothing.

    Structure and mentions are checked here with the server's parser; bank ids
    and event dates by the database, one statement per chunk of lines (and a
    few more to name a bad value). Duplicate fact ids of one bank are bad lines.
    Raises ImportFailed (systemic) when the database cannot be asked.
    """
    checker = _Checker(conn, schema)
    records: List[FactRecord] = []
    bad: List[BadLine] = []
    try:
        if bank is not None:
            check_bank_option(conn, bank, schema)
        for number, text, error in iter_lines(path):
            if error:
                bad.append(BadLine(number, error, "22021"))
            else:
                try:
                    records.append(parse_fact(text, number, bank))
                    checker.result.curated = checker.result.curated or bool(records[-1].entities)
                except BadLine as exc:
                    bad.append(exc)
            if len(records) + len(bad) >= CHECK_CHUNK:
                checker.chunk(records, bad)
                records, bad = [], []
        checker.chunk(records, bad)
    except psycopg.Error as exc:
        raise _systemic(exc, conn, "while validating the file", 0) from None
    return checker.result


def iter_facts(path: Union[str, Path], bank: Optional[str] = None,
               skip: Optional[Set[int]] = None) -> Iterator[FactRecord]:
    """Yield the facts of a scanned stream (the second pass), skipping the given lines."""
    skip = skip or set()
    for number, text, error in iter_lines(path):
        if number in skip or error:
            continue
        try:
            yield parse_fact(text, number, bank)
        except BadLine:
            continue


# -- writing ---------------------------------------------------------------

@dataclass
class ImportSummary:
    facts: int = 0                 # facts inserted by this run
    skipped_existing: int = 0      # facts already present (an earlier, interrupted run)
    skipped_bad: int = 0           # bad lines skipped with skip_bad
    mentions: int = 0              # mentions of the inserted facts
    entities_created: int = 0      # entities the facts this run inserted created (_created_entities)
    batches: int = 0
    seconds: float = 0.0
    banks: List[str] = field(default_factory=list)
    bad: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[Dict[str, Any]] = field(default_factory=list)
    curation: Optional[Dict[str, Any]] = None    # what applying the file's curation did (curation.apply)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "facts": self.facts,
            "skipped_existing": self.skipped_existing,
            "skipped_bad": self.skipped_bad,
            "mentions": self.mentions,
            "entities_created": self.entities_created,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "facts_per_second": round(self.facts / self.seconds, 1) if self.seconds > 0 else None,
            "banks": self.banks,
            "bad_lines": self.bad,
            "facts_without_mentions": sum(1 for w in self.warnings if w["warning"] == NO_MENTIONS),
            "warnings": self.warnings,
            "curation": self.curation,
        }


def batches(records: Iterable[FactRecord], size: int,
            limits: Optional[Dict[str, Dict[str, Any]]] = None) -> Iterator[List[FactRecord]]:
    """``records`` in lists of ``size`` (the last may be shorter), read only as each list is needed.

    ``limits`` (bank -> effective settings): a list also ends before its facts
    of one bank would carry more mentions than that bank's
    max_mentions_per_call, so that no statement is refused for its size (a
    fact over the limit alone was a bad line of the validation).
    """
    batch: List[FactRecord] = []
    carried: Dict[str, int] = {}
    for rec in records:
        cap = (limits or {}).get(rec.bank_id, {}).get("max_mentions_per_call")
        if batch and cap is not None and carried.get(rec.bank_id, 0) + len(rec.mentions) > cap:
            yield batch
            batch, carried = [], {}
        batch.append(rec)
        carried[rec.bank_id] = carried.get(rec.bank_id, 0) + len(rec.mentions)
        if len(batch) >= size:
            yield batch
            batch, carried = [], {}
    if batch:
        yield batch


# The entities a batch's own facts created: a mention of one of them was
# decided as a creation (a literal or a label mention is created under its own
# decision, and also when it reuses a name) and no other unit has a mention of
# it. A count of the bank's entities before and after would also claim those
# another import created meanwhile; an entity this transaction created is
# visible to nobody else until it commits, so only our units can mention it.
CREATED_DECISIONS = ("created", "literal", "label")


def _created_entities(conn: psycopg.Connection, schema: sql.Identifier, inserted: List[Tuple[str, uuid.UUID]]) -> int:
    """How many entities the facts ``inserted`` (bank id, unit id), just written by this transaction, created."""
    created = 0
    for bank in sorted({b for b, _ in inserted}):
        units = [u for b, u in inserted if b == bank]
        created += conn.execute(
            sql.SQL(
                "SELECT count(DISTINCT m.entity_id) FROM {s}.mentions m"
                " WHERE m.bank_id = %(bank)s AND m.unit_id = ANY(%(units)s::uuid[])"
                " AND m.decision = ANY(%(decisions)s::text[])"
                " AND NOT EXISTS (SELECT 1 FROM {s}.mentions o"
                " WHERE o.bank_id = m.bank_id AND o.entity_id = m.entity_id"
                " AND o.unit_id <> ALL(%(units)s::uuid[]))"
            ).format(s=schema),
            {"bank": bank, "units": units, "decisions": list(CREATED_DECISIONS)},
        ).fetchone()[0]
    return created


def _existing(conn: psycopg.Connection, schema: sql.Identifier, batch: List[FactRecord]) -> Set[Tuple[str, uuid.UUID]]:
    rows = conn.execute(
        sql.SQL(
            "SELECT f.bank_id, f.id FROM {}.facts f"
            " JOIN unnest(%s::text[], %s::uuid[]) AS k(bank_id, id)"
            " ON f.bank_id = k.bank_id AND f.id = k.id"
        ).format(schema),
        ([r.bank_id for r in batch], [r.unit_id for r in batch]),
    ).fetchall()
    return {(b, i) for b, i in rows}


def _insert(conn: psycopg.Connection, schema: sql.Identifier, batch: List[FactRecord]) -> List[Tuple[str, uuid.UUID]]:
    # One statement for the whole batch: the statement trigger resolves its
    # facts together (in-batch clustering, one round of probes). Dates go as
    # text and are read by PostgreSQL, in UTC (see _utc).
    # facts.fact_id keeps the line's own id beside the UUID it maps to (export
    # writes it back). RETURNING names the facts this statement inserted: a
    # fact another session inserted first (ON CONFLICT) is not this run's.
    # No conflict target: two sessions inserting one fact at once collide on
    # (bank_id, id) or on (bank_id, fact_id), whichever index the later one
    # checks first; a target names only one, and the other raised 23505.
    return [(b, i) for b, i in conn.execute(
        sql.SQL(
            "INSERT INTO {}.facts (bank_id, id, fact_id, content, mentions, event_date)"
            " SELECT b, i, f, c, m, coalesce(e::timestamptz, now())"
            " FROM unnest(%s::text[], %s::uuid[], %s::text[], %s::text[], %s::jsonb[], %s::text[])"
            " AS t(b, i, f, c, m, e)"
            " ON CONFLICT DO NOTHING"
            " RETURNING bank_id, id"
        ).format(schema),
        (
            [r.bank_id for r in batch],
            [r.unit_id for r in batch],
            [r.fact_id for r in batch],
            [r.content for r in batch],
            [json.dumps(r.mentions, ensure_ascii=False) for r in batch],
            [r.event_date for r in batch],
        ),
    ).fetchall()]


def _insert_within_limits(conn: psycopg.Connection, schema: sql.Identifier,
                          batch: List[FactRecord]) -> List[Tuple[str, uuid.UUID]]:
    """Insert a batch (return what _insert does); over a server limit (54xxx), insert it in halves."""
    # batches() cuts a batch to its banks' max_mentions_per_call, so this is
    # for limits the validation cannot read: the halves keep the batch's
    # transaction (all or nothing), they only resolve in two statements
    # instead of one. A single fact refused is reported as it is (_write_batch).
    try:
        with conn.transaction():
            return _insert(conn, schema, batch)
    except psycopg.Error as exc:
        if len(batch) == 1 or not (exc.sqlstate or "").startswith("54") or conn.closed:
            raise
        mid = len(batch) // 2
        return _insert_within_limits(conn, schema, batch[:mid]) + _insert_within_limits(conn, schema, batch[mid:])


def _flush(conn: psycopg.Connection, schema: sql.Identifier, banks: List[str]) -> None:
    for bank in sorted(set(banks)):
        conn.execute(sql.SQL("SELECT * FROM {}.flush_stats(%s)").format(schema), (bank,))


def _culprit(conn: psycopg.Connection, schema: sql.Identifier, batch: List[FactRecord]) -> Tuple[FactRecord, psycopg.Error]:
    """Find the first fact of a failed batch that the database rejects on its own."""
    first: Optional[Tuple[FactRecord, psycopg.Error]] = None
    with conn.transaction(force_rollback=True):
        _utc(conn)
        for rec in batch:
            try:
                with conn.transaction():
                    _insert(conn, schema, [rec])
            except psycopg.Error as exc:
                if conn.closed:
                    raise
                first = (rec, exc)
                break
    if first is None:
        raise LookupError("no single fact of the batch fails alone")
    return first


def _write_batch(conn: psycopg.Connection, ident: sql.Identifier, batch: List[FactRecord],
                 skip_bad: bool, summary: "ImportSummary") -> Tuple[List[FactRecord], int, int, int]:
    """Insert one batch in one transaction; return (inserted facts, already present, rejected, entities created).

    What this run inserted is what its INSERT returned: a fact another import
    of the same file inserted between the look-up of present ones and the
    INSERT is skipped by ON CONFLICT and counted as present, not as ours.
    """
    rejected = 0
    while batch:
        lines = f"at lines {batch[0].line}-{batch[-1].line}"
        try:
            with conn.transaction():
                _utc(conn)
                present = _existing(conn, ident, batch)
                fresh = [r for r in batch if (r.bank_id, r.unit_id) not in present]
                inserted: List[FactRecord] = []
                created = 0
                if fresh:
                    ours = set(_insert_within_limits(conn, ident, fresh))
                    inserted = [r for r in fresh if (r.bank_id, r.unit_id) in ours]
                    created = _created_entities(conn, ident, sorted(ours)) if ours else 0
                    _flush(conn, ident, [r.bank_id for r in fresh])
            return inserted, len(batch) - len(inserted), rejected, created
        except psycopg.Error as exc:
            if conn.closed or not is_data_error(exc):
                raise _systemic(exc, conn, lines, summary.facts) from None
            if (exc.sqlstate or "").startswith("54"):
                # A limit the validation checked (a bank's settings changed
                # since): the statement is not run again to find a culprit.
                raise ImportFailed(
                    f"{lines}: {exc.diag.message_primary or exc}; {summary.facts} facts were imported before "
                    f"them, run again to resume", sqlstate=exc.sqlstate, imported=summary.facts) from None
            try:
                rec, why = _culprit(conn, ident, batch)
            except LookupError:
                raise ImportFailed(
                    f"{lines}: {error_line(exc)}; {summary.facts} facts were imported before them, "
                    f"run again to resume", sqlstate=exc.sqlstate, imported=summary.facts) from None
            except psycopg.Error as again:
                raise _systemic(again, conn, lines, summary.facts) from None
            if not is_data_error(why):
                raise _systemic(why, conn, f"at line {rec.line}", summary.facts) from None
            bad = BadLine(rec.line, error_line(why), why.sqlstate)
            if not skip_bad:
                raise ImportFailed(
                    f"line {rec.line}: {error_line(why)}; {summary.facts} facts were imported "
                    f"before it; fix the line (or use --skip-bad) and run again to resume",
                    sqlstate=why.sqlstate, bad=[bad], imported=summary.facts) from None
            # The database rejected this fact on its own: skip it, retry the rest.
            rejected += 1
            summary.bad.append(bad.as_dict())
            batch = [r for r in batch if r is not rec]
    return [], 0, rejected, 0


def bad_lines_failure(bad: List[BadLine], good: int, name: str = "the file", show: int = 3) -> ImportFailed:
    """The ImportFailed for a file with bad lines (nothing written), naming the first ``show``."""
    shown = ": " + "; ".join(str(b) for b in bad[:show]) if show else ""
    more = f" (and {len(bad) - show} more)" if show and len(bad) > show else ""
    return ImportFailed(
        f"{len(bad)} bad line(s) in {name}, nothing was imported (fix them, or pass --skip-bad "
        f"to import the other {good}){shown}{more}", sqlstate=bad[0].sqlstate, bad=bad)


def import_file(
    conn: psycopg.Connection,
    path: Union[str, Path],
    *,
    bank: Optional[str] = None,
    batch_size: int = DEFAULT_BATCH,
    skip_bad: bool = False,
    schema: str = "entity_resolver",
    scanned: Optional[Scan] = None,
    on_batch: Optional[Callable[[int, int], None]] = None,
) -> ImportSummary:
    """Import a JSON Lines file of facts; see the module docstring.

    Raises ImportFailed, before writing anything, if a line is bad and
    ``skip_bad`` is false, and at the first systemic error whatever
    ``skip_bad``. ``on_batch(done, skipped)`` is called after each committed
    batch with the facts inserted and skipped in it (for a progress bar).
    """
    if batch_size < 1:
        raise ValueError("batch: must be at least 1")
    if str(path) == "-":
        spooled = spool_stdin()
        try:
            return import_file(conn, spooled, bank=bank, batch_size=batch_size, skip_bad=skip_bad,
                               schema=schema, on_batch=on_batch)
        finally:
            spooled.unlink()
    started = time.monotonic()
    result = scanned if scanned is not None else scan(conn, path, bank, schema)
    summary = ImportSummary(banks=sorted(result.banks), warnings=list(result.warnings))
    summary.bad = [b.as_dict() for b in result.bad]
    if result.bad and not skip_bad:
        raise bad_lines_failure(result.bad, result.good)
    summary.skipped_bad = len(result.bad)
    ident = sql.Identifier(schema)

    records: Iterable[FactRecord] = iter_facts(path, bank, result.bad_lines)
    kept = Curation() if result.curated else None
    if kept is not None:
        records = kept.watch(records)
    for batch in batches(records, batch_size, result.limits):
        inserted, existing, rejected, created = _write_batch(conn, ident, batch, skip_bad, summary)
        summary.entities_created += created
        summary.batches += 1
        summary.facts += len(inserted)
        summary.mentions += sum(len(r.mentions) for r in inserted)
        summary.skipped_existing += existing
        summary.skipped_bad += rejected
        if on_batch:
            on_batch(len(inserted), existing + rejected)

    if kept is not None:
        try:
            summary.curation = kept.apply(conn, schema)
        except psycopg.Error as exc:
            raise _systemic(exc, conn, "while applying the file's curation", summary.facts) from None
    summary.seconds = time.monotonic() - started
    return summary
