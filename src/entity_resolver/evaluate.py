"""Accuracy on a labelled stream: replay it through the write path, score every gold mention.

    from entity_resolver.evaluate import run_eval
    result = run_eval("postgresql://localhost/app", "bench/corpora/typos.jsonl")
    print(result["bcubed"]["f1"], result["wrong_merges"])

The stream is the import format (``entity_resolver.importer``): one fact per
line, each mention optionally carrying ``gold``, the identity it names.

Replay (docs/evaluation.md). Each stream bank is replayed into a fresh bank
(``eval-<run>-<n>-<bank>``), in file order, through the real write path:
``INSERT INTO facts`` fires the statement trigger, which resolves, links and
records each fact, and the statistics it queued are applied at commit
(``entity_resolver.flush_at_commit`` is forced on, the default). ``batch``
facts go in one statement and one transaction (1: fact by fact, as an
application retaining facts one at a time; more: as a bulk import).

The per-mention decision is read from provenance (``mentions``: the entity
each mention of each fact went to). It is checked against a shadow replay of
the same facts one at a time: in a savepoint rolled back afterwards, each fact
of the statement is first resolved by ``resolve_mentions`` with exactly what
the trigger will pass (its mentions, each with the fact's other mentions as
nearby, its event date; the prediction) and then inserted alone, so the next
prediction sees it; the trigger's links of that single-fact insert must be
the prediction. Entities compare by id, never by name (two entities may share a
canonical name: homonyms, typed homographs): a mention predicted to go to an
entity that existed before the statement must be recorded against that very
entity; one predicted to create an entity (in the rolled-back savepoint, under
an id discarded with it) must be recorded against an entity the real statement
created, the same one for every mention predicted to go there and for no other
(``as_predicted``). A fact whose recorded entities differ from the prediction
counts in ``trace_mismatches`` (expected 0 at every batch size: a batch is a
speed knob, never a different answer). ``replay="functions"`` instead calls ``resolve_mentions`` +
``link_unit`` itself (same resolver code, no facts row, fact by fact).

Scoring uses only mentions with gold. A mention's predicted cluster is its
entity, its true cluster its gold identity (per bank: "p-17" in two banks is
two identities). Conventions for empty denominators: a precision with nothing
predicted together, or a recall with nothing truly together, is 1.0.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, Union

import psycopg
from psycopg import sql

from entity_resolver.importer import FactRecord, batches, iter_facts, scan

WORST = 10          # offenders listed per kind
EXAMPLES = 3        # mention spellings shown per offender
DIGITS = 6

# ---------------------------------------------------------------------------
# Metrics (pure)
# ---------------------------------------------------------------------------


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def _ratio(num: float, den: float) -> float:
    return 1.0 if den == 0 else num / den


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _prf(p: float, r: float) -> Dict[str, float]:
    return {"precision": round(p, DIGITS), "recall": round(r, DIGITS), "f1": round(_f1(p, r), DIGITS)}


def contingency(assignments: Iterable[Tuple[Hashable, Hashable]]) -> Dict[Tuple[Hashable, Hashable], int]:
    """Count mentions per (gold identity, predicted entity)."""
    return dict(Counter((g, e) for g, e in assignments))


def pairwise(cells: Dict[Tuple[Hashable, Hashable], int]) -> Dict[str, float]:
    """Pairwise precision/recall/F1 over all pairs of scored mentions.

    A pair is predicted together when both mentions resolved to one entity,
    truly together when they share a gold identity.
    """
    by_entity: Counter = Counter()
    by_gold: Counter = Counter()
    together = 0
    for (g, e), n in cells.items():
        by_entity[e] += n
        by_gold[g] += n
        together += _pairs(n)
    predicted = sum(_pairs(n) for n in by_entity.values())
    true = sum(_pairs(n) for n in by_gold.values())
    return _prf(_ratio(together, predicted), _ratio(together, true))


def bcubed(cells: Dict[Tuple[Hashable, Hashable], int]) -> Dict[str, float]:
    """B-cubed precision/recall/F1: per mention, the share of its entity that is its identity
    (precision) and the share of its identity that is in its entity (recall), averaged."""
    by_entity: Counter = Counter()
    by_gold: Counter = Counter()
    for (g, e), n in cells.items():
        by_entity[e] += n
        by_gold[g] += n
    total = sum(by_entity.values())
    if total == 0:
        return _prf(1.0, 1.0)
    # Each of the n mentions of a cell scores n / |entity| and n / |identity|;
    # fsum keeps the result independent of dict order.
    p = math.fsum(n * n / by_entity[e] for (g, e), n in cells.items()) / total
    r = math.fsum(n * n / by_gold[g] for (g, e), n in cells.items()) / total
    return _prf(p, r)


@dataclass
class Scored:
    """One scored mention: where it came from, what it is, what it became."""

    bank: str
    line: int
    text: str
    gold: str
    entity: str            # entity id (text); unique across banks
    entity_name: str


def score(mentions: Sequence[Scored], worst: int = WORST) -> Dict[str, Any]:
    """All metrics of a list of scored mentions (identities and entities are per bank)."""
    cells = contingency(((m.bank, m.gold), m.entity) for m in mentions)
    golds_of: Dict[str, Counter] = defaultdict(Counter)
    entities_of: Dict[Tuple[str, str], Counter] = defaultdict(Counter)
    names: Dict[str, str] = {}
    spellings: Dict[Tuple[str, Tuple[str, str]], Counter] = defaultdict(Counter)
    for m in mentions:
        golds_of[m.entity][(m.bank, m.gold)] += 1
        entities_of[(m.bank, m.gold)][m.entity] += 1
        names[m.entity] = m.entity_name
        spellings[(m.entity, (m.bank, m.gold))][m.text] += 1

    def examples(entity: str, gold: Tuple[str, str]) -> List[str]:
        counted = spellings[(entity, gold)]
        return [t for t, _ in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:EXAMPLES]]

    merged = []
    for entity, golds in golds_of.items():
        if len(golds) < 2:
            continue
        ranked = sorted(golds.items(), key=lambda kv: (-kv[1], kv[0]))
        size = sum(golds.values())
        merged.append({
            "entity": names[entity],
            "bank": ranked[0][0][0],
            "mentions": size,
            "identities": len(golds),
            # mentions that are not the entity's main identity
            "misplaced": size - ranked[0][1],
            "gold": [{"gold": g, "mentions": n, "as": examples(entity, (b, g))} for (b, g), n in ranked],
        })
    merged.sort(key=lambda w: (-w["identities"], -w["misplaced"], w["bank"], w["entity"]))

    split = []
    for gold, ents in entities_of.items():
        if len(ents) < 2:
            continue
        ranked = sorted(ents.items(), key=lambda kv: (-kv[1], names[kv[0]]))
        size = sum(ents.values())
        split.append({
            "gold": gold[1],
            "bank": gold[0],
            "mentions": size,
            "entities": len(ents),
            "outside_main": size - ranked[0][1],
            "into": [{"entity": names[e], "mentions": n, "as": examples(e, gold)} for e, n in ranked],
        })
    split.sort(key=lambda w: (-w["entities"], -w["outside_main"], w["bank"], w["gold"]))

    return {
        "mentions_scored": len(mentions),
        "pairwise": pairwise(cells),
        "bcubed": bcubed(cells),
        "wrong_merges": len(merged),
        "fragmented": len(split),
        "entities": len(golds_of),
        "gold_identities": len(entities_of),
        "worst_merges": merged[:worst],
        "worst_fragments": split[:worst],
    }


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------


class EvalError(RuntimeError):
    """The stream cannot be evaluated; the message says why."""


@dataclass
class _Replay:
    conn: psycopg.Connection
    schema: sql.Identifier
    mode: str
    banks: Dict[str, str] = field(default_factory=dict)     # stream bank -> eval bank
    scored: List[Scored] = field(default_factory=list)
    facts: int = 0
    mentions: int = 0
    trace_mismatches: int = 0
    mismatch_lines: List[int] = field(default_factory=list)
    known: Dict[str, set] = field(default_factory=dict)     # eval bank -> ids of its entities so far

    def q(self, template: str) -> sql.Composed:
        return sql.SQL(template).format(s=self.schema)


def _bank_config(path: Path, explicit: Optional[Path]) -> Dict[str, Any]:
    """Per-bank setup read from STREAM.banks.json (or ``explicit``): settings, entity_labels."""
    cfg_path = explicit
    if cfg_path is None:
        candidate = path.with_name(path.name[: -len(path.suffix)] + ".banks.json") if path.suffix else None
        if candidate is not None and candidate.exists():
            cfg_path = candidate
    if cfg_path is None:
        return {}
    try:
        value = json.loads(Path(cfg_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalError(f"{cfg_path}: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise EvalError(f'{cfg_path}: must be an object {{"<bank_id>": {{"settings": ..., "entity_labels": ...}}}}')
    for bank, entry in value.items():
        unknown = set(entry) - {"settings", "entity_labels"}
        if unknown:
            raise EvalError(f"{cfg_path}: bank {bank!r}: unknown key {sorted(unknown)[0]!r}")
    return value


def _fresh_bank(run: str, index: int, bank: str) -> str:
    return f"eval-{run}-{index}-{bank}"[:100]


def _setup_banks(rp: _Replay, banks: Sequence[str], config: Dict[str, Any], run: str,
                 profile: Optional[str] = None, overrides: Optional[Dict[str, Any]] = None) -> None:
    for i, bank in enumerate(banks):
        fresh = _fresh_bank(run, i, bank)
        rp.banks[bank] = fresh
        entry = config.get(bank, {})
        settings = dict(entry.get("settings") or {})
        settings.update(overrides or {})
        if profile is not None:
            settings["profile"] = profile
        if settings:
            rp.conn.execute(rp.q("SELECT {s}.configure_bank(%s, %s::jsonb)"),
                            (fresh, json.dumps(settings)))
        if entry.get("entity_labels"):
            rp.conn.execute(rp.q("SELECT {s}.set_entity_labels(%s, %s::jsonb)"),
                            (fresh, json.dumps(entry["entity_labels"])))


def _mentions_json(rec: FactRecord) -> str:
    return json.dumps(rec.mentions, ensure_ascii=False)


def _text_of(m: Any) -> str:
    return m if isinstance(m, str) else m["text"]


def _predict(rp: _Replay, recs: Sequence[FactRecord], bank: str) -> List[Tuple[List[Tuple[str, bool]], bool]]:
    """The fact-by-fact reference (see above), per fact: (entity id, created) per mention, and
    whether the trigger, given the fact alone, linked it as resolve_mentions predicted.

    The ids are those of the rolled-back single-fact insert: the entities the
    later facts of the statement find there (resolve_mentions' own id of an
    entity it creates is rolled back with it)."""
    seen = set(rp.known.setdefault(bank, set()))
    out = []
    with rp.conn.transaction(force_rollback=True):
        for rec in recs:
            with rp.conn.transaction(force_rollback=True):
                rows = [(ident, created) for ident, created in rp.conn.execute(
                    rp.q("SELECT r.entity_id::text, r.created FROM {s}.resolve_mentions("
                         "%s, %s::jsonb, coalesce(%s::timestamptz, now())) AS r ORDER BY r.ord"),
                    (bank, _mentions_json(rec), rec.event_date)).fetchall()]
            _insert(rp, [rec], bank)
            linked = [ident for ident, _ in _linked(rp, bank, [rec]).get(rec.unit_id, [])]
            alone = as_predicted([rows], [linked], seen)[0]
            out.append(([(ident, created) for ident, (_, created) in zip(linked, rows)], alone))
            seen.update(linked)
    return out


def _linked(rp: _Replay, bank: str, recs: Sequence[FactRecord]) -> Dict[Any, List[Tuple[str, str]]]:
    """Per fact (unit id): (entity id, canonical name) of each mention, in mention order."""
    rows = rp.conn.execute(
        rp.q("SELECT m.unit_id, e.id::text, e.canonical_name"
             " FROM {s}.mentions AS m JOIN {s}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
             " WHERE m.bank_id = %s AND m.unit_id = ANY(%s) ORDER BY m.unit_id, m.ordinal"),
        (bank, [r.unit_id for r in recs])).fetchall()
    out: Dict[Any, List[Tuple[str, str]]] = defaultdict(list)
    for unit, ident, name in rows:
        out[unit].append((ident, name))
    return out


def as_predicted(predicted: Sequence[Sequence[Tuple[str, bool]]], recorded: Sequence[Sequence[str]],
                 existing: Iterable[str]) -> List[bool]:
    """Per fact of one statement: were its mentions recorded against the entities the shadow predicted?

    ``predicted``: per fact, (entity id, created) per mention from the rolled-back
    fact-by-fact replay; ``recorded``: per fact, the entity id each mention was
    linked to by the real statement; ``existing``: the ids of the bank's entities
    before the statement. An entity the shadow found must be the very entity
    recorded; one the shadow created has an id that was rolled back, so it must
    stand for one entity the real statement created, the same for all its
    mentions and no other's. Ids, not names: two entities may share a name.
    """
    before = set(existing)
    twin: Dict[str, str] = {}          # shadow-created id -> the real statement's entity
    taken: set = set()
    out = []
    for want, got in zip(predicted, recorded):
        same = len(want) == len(got)
        for (shadow, created), real in zip(want, got):
            if shadow in twin:
                same = same and twin[shadow] == real
            elif created:
                fresh = real not in before and real not in taken
                same = same and fresh
                if fresh:
                    twin[shadow] = real
                    taken.add(real)
            else:
                same = same and shadow == real
        out.append(same)
    return out


def _insert(rp: _Replay, recs: Sequence[FactRecord], bank: str) -> None:
    """One INSERT statement for the facts, rows in the given order."""
    rp.conn.execute(
        rp.q("INSERT INTO {s}.facts (bank_id, id, content, mentions, event_date, fact_id)"
             " SELECT %s, i, c, m, coalesce(d, now()), f"
             " FROM unnest(%s::uuid[], %s::text[], %s::jsonb[], %s::timestamptz[], %s::text[]) AS t (i, c, m, d, f)"),
        (bank, [r.unit_id for r in recs], [r.content for r in recs], [_mentions_json(r) for r in recs],
         [r.event_date for r in recs], [r.fact_id for r in recs]))


def _replay_trigger(rp: _Replay, recs: Sequence[FactRecord], bank: str) -> List[List[Tuple[str, str]]]:
    """Insert facts of one bank in one statement; return (entity id, name) per mention, per fact."""
    with rp.conn.transaction():
        predicted = _predict(rp, recs, bank)
        _insert(rp, recs, bank)
        recorded = _linked(rp, bank, recs)
    got = [recorded.get(rec.unit_id, []) for rec in recs]
    known = rp.known.setdefault(bank, set())
    verdicts = as_predicted([fact for fact, _ in predicted], [[ident for ident, _ in fact] for fact in got], known)
    for rec, (_, alone), same in zip(recs, predicted, verdicts):
        if not (alone and same):
            rp.trace_mismatches += 1
            rp.mismatch_lines.append(rec.line)
    known.update(ident for fact in got for ident, _ in fact)
    return got


def _replay_functions(rp: _Replay, recs: Sequence[FactRecord], bank: str) -> List[List[Tuple[str, str]]]:
    """resolve_mentions + link_unit, fact by fact (the trigger's steps, called directly)."""
    return [_replay_function(rp, rec, bank) for rec in recs]


def _replay_function(rp: _Replay, rec: FactRecord, bank: str) -> List[Tuple[str, str]]:
    with rp.conn.transaction():
        rows = rp.conn.execute(
            rp.q("SELECT r.entity_id::text, r.canonical_name FROM {s}.resolve_mentions("
                 "%s, %s::jsonb, coalesce(%s::timestamptz, now())) AS r ORDER BY r.ord"),
            (bank, _mentions_json(rec), rec.event_date),
        ).fetchall()
        rp.conn.execute(
            rp.q("SELECT {s}.link_unit(%s, %s, %s::uuid[], coalesce(%s::timestamptz, now()))"),
            (bank, rec.unit_id, [r[0] for r in rows], rec.event_date),
        )
    return [(r[0], r[1]) for r in rows]


def _cleanup(conn: psycopg.Connection, schema: str, banks: Sequence[str]) -> None:
    """Delete every row of the eval banks, in every table of the schema that has a bank_id."""
    if not banks:
        return
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'bank_id' AND NOT a.attisdropped"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY c.relname", (schema,))]
    with conn.transaction():
        # Statistics still queued for these banks would be flushed into nothing.
        conn.execute("SET LOCAL entity_resolver.flush_at_commit = off")
        for table in [t for t in tables if t != "banks"] + (["banks"] if "banks" in tables else []):
            conn.execute(sql.SQL("DELETE FROM {}.{} WHERE bank_id = ANY(%s)").format(
                sql.Identifier(schema), sql.Identifier(table)), (list(banks),))


def _check_installed(conn: psycopg.Connection, schema: str, mode: str) -> None:
    needed = ["resolve_mentions"] + (["link_unit"] if mode == "functions" else [])
    for fn in needed:
        found = conn.execute(
            "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = %s AND p.proname = %s", (schema, fn)).fetchone()
        if not found:
            raise EvalError(f"{schema}.{fn} not found: install entity_resolver first "
                            f"(entity-resolver install --schema {schema})")
    if mode == "trigger":
        found = conn.execute(
            "SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relname = 'facts' AND t.tgname = 'facts_resolve_and_link'",
            (schema,)).fetchone()
        if not found:
            raise EvalError(f"{schema}.facts has no resolve trigger: upgrade the installation "
                            f"(entity-resolver install --schema {schema})")


def _eval_file(conn: psycopg.Connection, path: Path, schema: str, mode: str,
               banks_file: Optional[Path], keep: bool, batch: int = 1,
               profile: Optional[str] = None,
               settings: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], List[Scored]]:
    """Replay and score one stream; return the result and the scored mentions."""
    started = time.monotonic()
    checked = scan(conn, path, schema=schema)
    if checked.bad:
        shown = "; ".join(str(b) for b in checked.bad[:3])
        raise EvalError(f"{path}: {len(checked.bad)} bad line(s): {shown}")
    config = _bank_config(path, banks_file)
    stream_banks = sorted(checked.banks)
    rp = _Replay(conn, sql.Identifier(schema), mode)
    run = uuid.uuid4().hex[:8]
    replay = _replay_trigger if mode == "trigger" else _replay_functions
    policy = conn.execute("SELECT current_setting('entity_resolver.flush_at_commit', true)").fetchone()[0]
    try:
        # Normal use: each committed fact applies its statistics at commit.
        conn.execute("SET entity_resolver.flush_at_commit = on")
        _setup_banks(rp, stream_banks, config, run, profile, settings)
        for eval_bank, ident in conn.execute(
                rp.q("SELECT bank_id, id::text FROM {s}.entities WHERE bank_id = ANY(%s)"),
                (list(rp.banks.values()),)).fetchall():
            rp.known.setdefault(eval_bank, set()).add(ident)
        for chunk in batches(iter_facts(path), batch):
            rp.facts += len(chunk)
            rp.mentions += sum(len(rec.mentions) for rec in chunk)
            # One statement per bank of the chunk, as the trigger resolves
            # the facts of each bank of an INSERT in statement order.
            for bank in sorted({rec.bank_id for rec in chunk}):
                recs = [rec for rec in chunk if rec.bank_id == bank and rec.mentions]
                if not recs:
                    continue
                try:
                    decided = replay(rp, recs, rp.banks[bank])
                except psycopg.Error as exc:
                    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise EvalError(f"{path}: lines {recs[0].line}-{recs[-1].line}: the database refused "
                                    f"the facts: {first}") from exc
                for rec, outcome in zip(recs, decided):
                    for m, gold, (entity, name) in zip(rec.mentions, rec.golds, outcome):
                        if gold is not None:
                            rp.scored.append(Scored(rec.bank_id, rec.line, _text_of(m), gold, entity, name))
        bank_entities = conn.execute(
            rp.q("SELECT bank_id, count(*) FROM {s}.entities WHERE bank_id = ANY(%s) GROUP BY bank_id"),
            (list(rp.banks.values()),)).fetchall()
    finally:
        if not keep:
            _cleanup(conn, schema, list(rp.banks.values()))
        conn.execute("SELECT set_config('entity_resolver.flush_at_commit', %s, false)", (policy or "",))
    counts = dict(bank_entities)
    result = score(rp.scored)
    result.update({
        "stream": str(path),
        "facts": rp.facts,
        "mentions": rp.mentions,
        "replay": mode,
        "batch": batch,
        "profile": profile,
        "trace_mismatches": rp.trace_mismatches,
        "bank_entities": sum(counts.values()),
    })
    if rp.mismatch_lines:
        result["trace_mismatch_lines"] = rp.mismatch_lines[:WORST]
    if keep:
        result["eval_banks"] = dict(rp.banks)
    if len(stream_banks) > 1:
        result["banks"] = {}
        for bank in stream_banks:
            part = score([m for m in rp.scored if m.bank == bank], worst=3)
            part["bank_entities"] = counts.get(rp.banks[bank], 0)
            result["banks"][bank] = part
    result["seconds"] = round(time.monotonic() - started, 3)
    return result, rp.scored


def run_eval(conn_or_dsn: Union[str, psycopg.Connection], path: Union[str, Path],
             schema: str = "entity_resolver", *, replay: str = "trigger",
             banks_file: Optional[Union[str, Path]] = None, keep: bool = False,
             batch: int = 1, profile: Optional[str] = None,
             settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Replay a labelled stream (or every *.jsonl of a directory) and score it.

    Returns the metrics as a JSON-ready dict (see docs/evaluation.md). For a
    directory, the top level scores all files together (their banks are
    distinct) and ``families`` holds one result per file, by file stem.
    ``keep`` leaves the eval banks in place (their names are in ``eval_banks``)
    so that decisions can be inspected with explain_mention. ``profile``
    ("reference" or "enhanced") sets every bank's profile, over the banks file;
    ``settings`` (a configure_bank object, e.g. ``{"bare_names": false}``) is
    set on every bank too, over the banks file and under ``profile``.
    """
    if replay not in ("trigger", "functions"):
        raise ValueError("replay: must be 'trigger' or 'functions'")
    if not isinstance(batch, int) or batch < 1:
        raise ValueError("batch: must be an integer of at least 1")
    if replay == "functions" and batch != 1:
        raise ValueError("batch: the functions replay is fact by fact (batch 1)")
    path = Path(path)
    own = isinstance(conn_or_dsn, str)
    conn = psycopg.connect(conn_or_dsn, autocommit=True) if own else conn_or_dsn
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise EvalError("run_eval needs a connection that is not inside a transaction")
    previous = conn.autocommit
    conn.autocommit = True
    try:
        _check_installed(conn, schema, replay)
        bank_path = Path(banks_file) if banks_file else None
        if bank_path is not None and path.is_dir():
            raise EvalError("banks_file: only for a single stream (a directory's streams use STREAM.banks.json)")
        if not path.is_dir():
            if not path.exists():
                raise EvalError(f"{path}: no such file")
            return _eval_file(conn, path, schema, replay, bank_path, keep, batch, profile, settings)[0]
        started = time.monotonic()
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if not files:
            raise EvalError(f"{path}: no *.jsonl files")
        families: Dict[str, Dict[str, Any]] = {}
        everything: List[Scored] = []
        for f in files:
            res, scored = _eval_file(conn, f, schema, replay, None, keep, batch, profile, settings)
            families[f.stem] = res
            # Two files may use the same bank id: their identities are still distinct.
            everything.extend(Scored(f"{f.stem}/{m.bank}", m.line, m.text, m.gold, m.entity, m.entity_name)
                              for m in scored)
        total = score(everything)
        total.update({
            "stream": str(path),
            "facts": sum(r["facts"] for r in families.values()),
            "mentions": sum(r["mentions"] for r in families.values()),
            "replay": replay,
            "batch": batch,
            "profile": profile,
            "trace_mismatches": sum(r["trace_mismatches"] for r in families.values()),
            "bank_entities": sum(r["bank_entities"] for r in families.values()),
            "families": families,
            "seconds": round(time.monotonic() - started, 3),
        })
        return total
    finally:
        if own:
            conn.close()
        else:
            conn.autocommit = previous


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def summary_row(name: str, r: Dict[str, Any]) -> List[str]:
    return [name, str(r["mentions_scored"]), _pct(r["pairwise"]["precision"]), _pct(r["pairwise"]["recall"]),
            _pct(r["pairwise"]["f1"]), _pct(r["bcubed"]["precision"]), _pct(r["bcubed"]["recall"]),
            _pct(r["bcubed"]["f1"]), str(r["wrong_merges"]), str(r["fragmented"]),
            str(r["entities"]), str(r["gold_identities"])]


SUMMARY_HEADER = ["stream", "mentions", "pair P", "pair R", "pair F1", "B3 P", "B3 R", "B3 F1",
                  "wrong merges", "fragmented", "entities", "identities"]


def _offenders(r: Dict[str, Any], limit: int = 5) -> List[str]:
    lines = []
    for w in r["worst_merges"][:limit]:
        golds = ", ".join(f"{g['gold']} ×{g['mentions']} ({' / '.join(g['as'])})" for g in w["gold"])
        lines.append(f"  merged: {w['entity']!r} [{w['bank']}] holds {w['identities']} identities: {golds}")
    for w in r["worst_fragments"][:limit]:
        into = ", ".join(f"{e['entity']!r} ×{e['mentions']}" for e in w["into"])
        lines.append(f"  split:  {w['gold']} [{w['bank']}] over {w['entities']} entities: {into}")
    return lines


def format_report(result: Dict[str, Any]) -> str:
    """A plain-text report: one summary line per family (or bank) and the worst offenders."""
    rows = [SUMMARY_HEADER]
    parts = result.get("families") or result.get("banks") or {}
    for name, r in parts.items():
        rows.append(summary_row(name, r))
    rows.append(summary_row("all" if parts else Path(result["stream"]).name, result))
    widths = [max(len(row[i]) for row in rows) for i in range(len(SUMMARY_HEADER))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)))
        if n == 0 or (parts and n == len(rows) - 2):
            out.append("  ".join("-" * w for w in widths))
    out.append("")
    out.append(f"{result['facts']} facts, {result['mentions']} mentions replayed ({result['replay']}) "
               f"in {result['seconds']:.1f} s; {result['bank_entities']} entities created; "
               f"trace mismatches: {result['trace_mismatches']}")
    if parts:
        for name, r in parts.items():
            lines = _offenders(r, 3)
            if lines:
                out.append(f"{name}:")
                out.extend(lines)
    else:
        lines = _offenders(result)
        if lines:
            out.append("worst offenders:")
            out.extend(lines)
    return "\n".join(out)


# ---------------------------------------------------------------------------
# docs/evaluation.md
# ---------------------------------------------------------------------------

FIGURES_START = "<!-- figures:start (generated: python -m bench, or evaluate.update_doc) -->"
FIGURES_END = "<!-- figures:end -->"


def markdown(result: Dict[str, Any]) -> str:
    """The figures of a corpus-directory result as Markdown: one row per family, then the offenders."""
    parts = result.get("families") or result.get("banks") or {}
    head = ["family", "mentions", "pairwise P", "pairwise R", "pairwise F1", "B³ P", "B³ R", "B³ F1",
            "wrong merges", "fragmented", "entities", "gold identities"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, r in list(parts.items()) + [("**all**", result)]:
        lines.append("| " + " | ".join(summary_row(name, r)) + " |")
    lines += ["", f"{result['facts']} facts and {result['mentions']} mentions replayed through the "
              f"{'facts trigger' if result['replay'] == 'trigger' else 'SQL functions'} in "
              f"{result['seconds']:.1f} s; trace mismatches (shadow call against trigger): "
              f"{result['trace_mismatches']}. Percentages; pairwise and B-cubed over the mentions with gold.",
              "", "Worst offenders per family (at most three of each kind):", ""]
    for name, r in parts.items():
        shown = _offenders(r, 3)
        if shown:
            lines.append(f"- **{name}**")
            lines.extend("  - " + s.strip() for s in shown)
    return "\n".join(lines)


def markdown_profiles(results: Dict[str, Dict[str, Any]]) -> str:
    """Both profiles of one run side by side, then each profile's own figures (``markdown``)."""
    ref, enh = results["reference"], results["enhanced"]
    fams = ref.get("families") or {}
    head = ["family", "B³ F1 reference", "B³ F1 enhanced", "Δ", "wrong merges reference", "wrong merges enhanced",
            "fragmented reference", "fragmented enhanced"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, r in list(fams.items()) + [("**all**", ref)]:
        e = enh if name == "**all**" else enh["families"][name]
        delta = e["bcubed"]["f1"] - r["bcubed"]["f1"]
        lines.append("| " + " | ".join([name, _pct(r["bcubed"]["f1"]), _pct(e["bcubed"]["f1"]),
                                        f"{100 * delta:+.1f}", str(r["wrong_merges"]), str(e["wrong_merges"]),
                                        str(r["fragmented"]), str(e["fragmented"])]) + " |")
    parts = ["Both profiles replayed the same streams in the same run (`profile` set on every eval bank).", "",
             "\n".join(lines)]
    for profile in ("enhanced", "reference"):
        parts += ["", f"### The {profile} profile", "", markdown(results[profile])]
    return "\n".join(parts)


def update_doc(path: Union[str, Path], result: Dict[str, Any]) -> None:
    """Replace the generated figures in ``path`` (between the markers), or append them.

    ``result``: one eval result, or {"reference": ..., "enhanced": ...} of one run.
    """
    path = Path(path)
    body = markdown_profiles(result) if set(result) == {"reference", "enhanced"} else markdown(result)
    block = f"{FIGURES_START}\n\n{body}\n\n{FIGURES_END}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Evaluation\n"
    if FIGURES_START in text and FIGURES_END in text:
        before = text.split(FIGURES_START, 1)[0]
        after = text.split(FIGURES_END, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
