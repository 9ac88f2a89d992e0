"""Bulk import of facts from a JSON Lines stream, through the facts trigger.

One JSON object per line::

    {"fact_id": "f1", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
     "content": "Alex flagged a blocker on the Acme renewal.",
     "mentions": [{"text": "Alex", "gold": "p-17", "resolve": true}, "Acme"]}

``content``, ``event_date`` and, per mention, ``gold``, ``resolve``, ``nearby``
and ``event_date`` are optional; a mention may also be a bare string.
``gold`` is ground truth for evaluation and is not stored.

The import is two passes over the file. The first validates every line, so a
bad line is reported with its number before anything is written (or skipped
with ``skip_bad``); the second inserts the good lines in batches, one
transaction per batch: the facts of the batch are inserted by one statement
(the statement trigger resolves and links them together) and the bank's
statistics are flushed, so the next batch is resolved against a graph that
includes this one. A batch is all or nothing.

Resumability: ``fact_id`` maps deterministically to the unit id (``facts.id``),
and facts whose id is already present are skipped. A re-run after an
interruption therefore neither loses nor duplicates anything.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

import psycopg
from psycopg import sql

# facts.id = uuid5(FACT_NAMESPACE, fact_id). Fixed forever: changing it would
# make every re-run import the whole file again under new ids.
FACT_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-5b7a-9c41-2e5f0d8b7a13")

DEFAULT_BATCH = 500
MAX_BANK_ID = 100        # banks_bank_id_length
MAX_NAME = 500           # entities_name_length: a longer mention can never be stored
MAX_SHOWN_ERRORS = 20

_FACT_KEYS = {"fact_id", "bank_id", "event_date", "content", "mentions"}
_MENTION_KEYS = {"text", "gold", "resolve", "nearby", "event_date"}

# ISO 8601 as JSON producers write it: a date, optionally a time (seconds and
# fraction optional), optionally Z or an offset. Parsed here rather than with
# datetime.fromisoformat, which before Python 3.11 rejects "Z" and ".123".
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


class ImportFailed(RuntimeError):
    """The import stopped; the message names the line and the reason."""


class BadLine(ValueError):
    """One line of the stream is not a valid fact."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


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


def parse_timestamp(value: str) -> datetime:
    """Parse an ISO 8601 date or date-time; without an offset it is read as UTC."""
    m = _ISO.fullmatch(value.strip())
    if not m:
        raise ValueError(f"not an ISO 8601 date-time: {value!r}")
    year, month, day, hour, minute, second, frac, tz = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    tzinfo = timezone.utc
    if tz and tz not in ("Z", "z"):
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        if hours > 23 or minutes > 59:
            raise ValueError(f"invalid UTC offset in {value!r}")
        tzinfo = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                        int(second or 0), micro, tzinfo=tzinfo)
    except ValueError as exc:
        raise ValueError(f"invalid date-time {value!r}: {exc}") from None


@dataclass
class FactRecord:
    """One validated line, ready to insert."""

    line: int
    fact_id: str
    bank_id: str
    unit_id: uuid.UUID
    content: Optional[str]
    mentions: List[Any]           # resolve_mentions element format, gold removed
    event_date: Optional[datetime]
    golds: List[Optional[str]] = field(default_factory=list)  # per mention, for evaluation


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _text(value: Any, where: str, line: int) -> str:
    if not isinstance(value, str):
        raise BadLine(line, f"{where}: must be a string, got {_json_type(value)}")
    if not value.strip():
        raise BadLine(line, f"{where}: must not be blank")
    if len(value) > MAX_NAME:
        raise BadLine(line, f"{where}: {len(value)} characters, at most {MAX_NAME} can be stored")
    return value


def _mention(value: Any, where: str, line: int) -> Tuple[Any, Optional[str]]:
    """Validate one mention; return its stored form and its gold label."""
    if isinstance(value, str):
        return _text(value, where, line), None
    if not isinstance(value, dict):
        raise BadLine(line, f"{where}: must be a string or an object, got {_json_type(value)}")
    unknown = sorted(set(value) - _MENTION_KEYS)
    if unknown:
        raise BadLine(line, f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_MENTION_KEYS))})")
    if "text" not in value:
        raise BadLine(line, f"{where}: missing \"text\"")
    out: Dict[str, Any] = {"text": _text(value["text"], f"{where}.text", line)}
    if "resolve" in value:
        if not isinstance(value["resolve"], bool):
            raise BadLine(line, f"{where}.resolve: must be true or false, got {_json_type(value['resolve'])}")
        out["resolve"] = value["resolve"]
    if "nearby" in value:
        nearby = value["nearby"]
        if not isinstance(nearby, list) or not all(isinstance(n, str) for n in nearby):
            raise BadLine(line, f"{where}.nearby: must be an array of strings")
        out["nearby"] = nearby
    if "event_date" in value and value["event_date"] is not None:
        if not isinstance(value["event_date"], str):
            raise BadLine(line, f"{where}.event_date: must be an ISO 8601 string")
        try:
            parse_timestamp(value["event_date"])
        except ValueError as exc:
            raise BadLine(line, f"{where}.event_date: {exc}") from None
        out["event_date"] = value["event_date"]
    gold = value.get("gold")
    if gold is not None and not isinstance(gold, (str, int)):
        raise BadLine(line, f"{where}.gold: must be a string, got {_json_type(gold)}")
    return out, (None if gold is None else str(gold))


def parse_fact(text: str, line: int, bank: Optional[str] = None) -> FactRecord:
    """Validate one line of the stream; raise BadLine naming the problem."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(line, f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(obj, dict):
        raise BadLine(line, f"must be a JSON object, got {_json_type(obj)}")
    unknown = sorted(set(obj) - _FACT_KEYS)
    if unknown:
        raise BadLine(line, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_FACT_KEYS))})")

    fact_id = obj.get("fact_id")
    if isinstance(fact_id, int) and not isinstance(fact_id, bool):
        fact_id = str(fact_id)
    if not isinstance(fact_id, str) or not fact_id:
        raise BadLine(line, "fact_id: required, a non-empty string")

    bank_id = bank if bank is not None else obj.get("bank_id")
    if bank_id is None:
        raise BadLine(line, "bank_id: required (or give --bank)")
    if not isinstance(bank_id, str) or not bank_id.strip():
        raise BadLine(line, "bank_id: must be a non-empty string")
    if len(bank_id) > MAX_BANK_ID:
        raise BadLine(line, f"bank_id: {len(bank_id)} characters, at most {MAX_BANK_ID}")

    content = obj.get("content")
    if content is not None and not isinstance(content, str):
        raise BadLine(line, f"content: must be a string, got {_json_type(content)}")

    event_date = None
    if obj.get("event_date") is not None:
        if not isinstance(obj["event_date"], str):
            raise BadLine(line, f"event_date: must be an ISO 8601 string, got {_json_type(obj['event_date'])}")
        try:
            event_date = parse_timestamp(obj["event_date"])
        except ValueError as exc:
            raise BadLine(line, f"event_date: {exc}") from None

    raw = obj.get("mentions", [])
    if not isinstance(raw, list):
        raise BadLine(line, f"mentions: must be an array, got {_json_type(raw)}")
    mentions, golds = [], []
    for i, m in enumerate(raw):
        stored, gold = _mention(m, f"mentions[{i}]", line)
        mentions.append(stored)
        golds.append(gold)
    return FactRecord(line, fact_id, bank_id, fact_uuid(fact_id), content, mentions, event_date, golds)


# -- reading ---------------------------------------------------------------

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

    @property
    def bad_lines(self) -> Set[int]:
        return {b.line for b in self.bad}


def scan(path: Union[str, Path], bank: Optional[str] = None) -> Scan:
    """Validate every line (the first pass); duplicate fact ids of one bank are bad lines."""
    result = Scan()
    seen: Dict[Tuple[str, uuid.UUID], int] = {}
    for number, text, error in iter_lines(path):
        if error:
            result.bad.append(BadLine(number, error))
            continue
        try:
            rec = parse_fact(text, number, bank)
        except BadLine as exc:
            result.bad.append(exc)
            continue
        key = (rec.bank_id, rec.unit_id)
        if key in seen:
            result.bad.append(BadLine(number, f"fact_id {rec.fact_id!r} already used on line {seen[key]}"))
            continue
        seen[key] = number
        result.good += 1
        result.mentions += len(rec.mentions)
        result.banks.add(rec.bank_id)
    return result


def iter_facts(path: Union[str, Path], bank: Optional[str] = None,
               skip: Optional[Set[int]] = None) -> Iterator[FactRecord]:
    """Yield the valid facts of the stream (the second pass), skipping the given lines."""
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
    entities_created: int = 0
    batches: int = 0
    seconds: float = 0.0
    banks: List[str] = field(default_factory=list)
    bad: List[Dict[str, Any]] = field(default_factory=list)

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
        }


def _batches(records: Iterator[FactRecord], size: int) -> Iterator[List[FactRecord]]:
    batch: List[FactRecord] = []
    for rec in records:
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _count_entities(conn: psycopg.Connection, schema: sql.Identifier, banks: List[str]) -> int:
    return conn.execute(
        sql.SQL("SELECT count(*) FROM {}.entities WHERE bank_id = ANY(%s)").format(schema), (banks,)
    ).fetchone()[0]


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


def _insert(conn: psycopg.Connection, schema: sql.Identifier, batch: List[FactRecord]) -> None:
    # One statement for the whole batch: the statement trigger resolves its
    # facts together (in-batch clustering, one round of probes).
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.facts (bank_id, id, content, mentions, event_date)"
            " SELECT b, i, c, m, coalesce(e, now())"
            " FROM unnest(%s::text[], %s::uuid[], %s::text[], %s::jsonb[], %s::timestamptz[])"
            " AS t(b, i, c, m, e)"
            " ON CONFLICT (bank_id, id) DO NOTHING"
        ).format(schema),
        (
            [r.bank_id for r in batch],
            [r.unit_id for r in batch],
            [r.content for r in batch],
            [json.dumps(r.mentions, ensure_ascii=False) for r in batch],
            [r.event_date for r in batch],
        ),
    )


def _flush(conn: psycopg.Connection, schema: sql.Identifier, banks: List[str]) -> None:
    for bank in sorted(set(banks)):
        conn.execute(sql.SQL("SELECT * FROM {}.flush_stats(%s)").format(schema), (bank,))


def _culprit(conn: psycopg.Connection, schema: sql.Identifier, batch: List[FactRecord]) -> Tuple[FactRecord, psycopg.Error]:
    """Find the first fact of a failed batch that the database rejects on its own."""
    first: Optional[Tuple[FactRecord, psycopg.Error]] = None
    try:
        with conn.transaction(force_rollback=True):
            for rec in batch:
                try:
                    with conn.transaction():
                        _insert(conn, schema, [rec])
                except psycopg.Error as exc:
                    if isinstance(exc, psycopg.OperationalError) and conn.closed:
                        raise
                    first = (rec, exc)
                    break
    except psycopg.Error:
        if conn.closed:
            raise
    if first is None:
        raise LookupError("no single fact of the batch fails alone")
    return first


def error_line(exc: psycopg.Error) -> str:
    """One line for a database error: SQLSTATE and primary message."""
    text = exc.diag.message_primary or str(exc) or type(exc).__name__
    msg = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"{exc.sqlstate}: {msg}" if exc.sqlstate else msg


def _write_batch(conn: psycopg.Connection, ident: sql.Identifier, batch: List[FactRecord],
                 skip_bad: bool, summary: "ImportSummary") -> Tuple[List[FactRecord], int, int]:
    """Insert one batch in one transaction; return (inserted facts, already present, rejected)."""
    rejected = 0
    while batch:
        try:
            with conn.transaction():
                present = _existing(conn, ident, batch)
                fresh = [r for r in batch if (r.bank_id, r.unit_id) not in present]
                if fresh:
                    _insert(conn, ident, fresh)
                    _flush(conn, ident, [r.bank_id for r in fresh])
            return fresh, len(batch) - len(fresh), rejected
        except psycopg.Error as exc:
            if conn.closed or isinstance(exc, psycopg.OperationalError):
                raise ImportFailed(
                    f"lost the database connection at line {batch[0].line} ({error_line(exc)}); "
                    f"{summary.facts} facts were imported, run the same command again to resume"
                ) from None
            try:
                rec, why = _culprit(conn, ident, batch)
            except LookupError:
                raise ImportFailed(
                    f"lines {batch[0].line}-{batch[-1].line}: {error_line(exc)}; "
                    f"{summary.facts} facts were imported before them, run again to resume"
                ) from None
            if not skip_bad:
                raise ImportFailed(
                    f"line {rec.line}: {error_line(why)}; {summary.facts} facts were imported "
                    f"before it; fix the line (or use --skip-bad) and run again to resume"
                ) from None
            # The database rejected this fact on its own: skip it, retry the rest.
            rejected += 1
            summary.bad.append({"line": rec.line, "error": error_line(why)})
            batch = [r for r in batch if r is not rec]
    return [], 0, rejected


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
    ``skip_bad`` is false. ``on_batch(done, skipped)`` is called after each
    committed batch with the facts inserted and skipped in it (for a progress bar).
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
    result = scanned if scanned is not None else scan(path, bank)
    summary = ImportSummary(banks=sorted(result.banks))
    summary.bad = [{"line": b.line, "error": b.message} for b in result.bad]
    if result.bad and not skip_bad:
        shown = "; ".join(str(b) for b in result.bad[:3])
        more = f" (and {len(result.bad) - 3} more)" if len(result.bad) > 3 else ""
        raise ImportFailed(f"{len(result.bad)} bad line(s), nothing imported: {shown}{more}")
    summary.skipped_bad = len(result.bad)
    ident = sql.Identifier(schema)
    banks = summary.banks
    before = _count_entities(conn, ident, banks) if banks else 0

    for batch in _batches(iter_facts(path, bank, result.bad_lines), batch_size):
        inserted, existing, rejected = _write_batch(conn, ident, batch, skip_bad, summary)
        summary.batches += 1
        summary.facts += len(inserted)
        summary.mentions += sum(len(r.mentions) for r in inserted)
        summary.skipped_existing += existing
        summary.skipped_bad += rejected
        if on_batch:
            on_batch(len(inserted), existing + rejected)

    if banks:
        summary.entities_created = _count_entities(conn, ident, banks) - before
    summary.seconds = time.monotonic() - started
    return summary
