"""Resolving a batch of mentions: the pipeline, stage by stage.

    fold → classify → exact look-up → probe → screen → partners → decide
         → cluster new names → create → queue

One call resolves a whole batch with a fixed handful of statements, whatever
its size. The decisions are made by the pure stages (screen, scoring, decide,
clustering), which unit tests call in-process; this module wires them to the
statements of probe, create and queue.
"""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import banks
import create
import db
import decide
import probe
import enqueue
import screen
from errors import InputError
from fold import fold
from mentions import check_text, datetime_of, item, parse_mentions


class Batch(NamedTuple):
    """A batch after folding: lowered keys, nearby names, event dates (one per item)."""

    keys: List[str]
    nearby: List[List[str]]
    epochs: List[Optional[float]]
    dates: List[Optional[str]]


def probe_threshold(cfg: Dict[str, Any]) -> float:
    """The pg_trgm threshold of the probe: a candidate under the floor can never be merged."""
    return max(cfg["candidate_similarity"], cfg["merge_min_similarity"])


def fold_batch(plpy, items, default_event_date, probe_at: float) -> Batch:
    """Lowercase every text and nearby name and parse every date (one statement)."""
    n = len(items)
    texts = [it["text"] for it in items]
    spans = []
    for it in items:
        start = len(texts)
        if it.get("nearby") is not None:
            texts.extend(x for x in it["nearby"] if isinstance(x, str))
        spans.append((start, len(texts)))
    # An element's own event_date ("" included, which is not a date) is named
    # by its argument; a missing one takes the call's event_date argument.
    own = [it.get("event_date") is not None for it in items]
    dates = [it["event_date"] if own[i] else default_event_date for i, it in enumerate(items)]
    arguments = [(it.get("date_argument") or "mentions[%d].event_date" % i) if own[i] else "event_date"
                 for i, it in enumerate(items)]
    lowered, epochs, canon = fold(plpy, texts, dates, probe_at, arguments)
    keys = lowered[:n]
    nearby = []
    for i, it in enumerate(items):
        if it.get("nearby") is None:
            # No nearby given: the other mentions of the batch.
            nearby.append([keys[j] for j in range(n) if j != i])
        else:
            nearby.append(lowered[spans[i][0]:spans[i][1]])
    return Batch(keys, nearby, epochs, canon)


def classify(items, keys, matcher) -> Tuple[List[int], Dict[str, str]]:
    """Split a batch: regular mentions (by index), and exact keys with the kind they create."""
    regular: List[int] = []
    exact: Dict[str, str] = {}
    for i, it in enumerate(items):
        if not it.get("resolve", True):
            exact.setdefault(keys[i], "regular")
        elif matcher and matcher.is_label(keys[i]):
            exact[keys[i]] = "label"
        else:
            regular.append(i)
    return regular, exact


def screen_keys(by_key, cfg):
    """Screen each distinct key's candidates once, stopping at an identical name that settles it."""
    return {k: screen.screen(k, cands, cfg, stop_at_identical=True) for k, cands in by_key.items() if cands}


def choose(plpy, bank_id: str, batch: Batch, regular: List[int], cfg):
    """Decide every regular mention: {index: best evaluation or None}, {index: best score}, names."""
    distinct = sorted({batch.keys[i] for i in regular})
    by_key, names = probe.candidates(plpy, bank_id, distinct, cfg["max_candidates"])
    screened = screen_keys(by_key, cfg)
    # The floor and the word check need no database: only the survivors'
    # partners are fetched, the only partners ever read.
    survivors = [c for k in screened for c, skipped in screened[k] if skipped is None]
    scored_keys = {c_key for c_key, rows in screened.items() if any(s is None for _, s in rows)}
    near = set()
    for i in regular:
        if batch.keys[i] in scored_keys:
            near.update(batch.nearby[i])
    if survivors and near:
        found = probe.partners(plpy, bank_id, [c.id for c in survivors], near)
        for c in survivors:
            c.partners = found.get(c.id, {})
    chosen, best_scores = {}, {}
    for i in regular:
        k = batch.keys[i]
        if k not in screened:
            continue
        evaluations, best = decide.decide(k, screened[k], batch.nearby[i], datetime_of(batch.epochs[i]), cfg)
        scores = [ev.score for ev in evaluations if ev.score is not None]
        best_scores[i] = max(scores) if scores else None
        if best is not None:
            chosen[i] = best
    return chosen, best_scores, names


def resolve_items(plpy, bank_id: str, items: List[Dict[str, Any]], default_event_date) -> List[Dict[str, Any]]:
    """Resolve a batch of mention items; return one result dict per item, in order.

    Items: {"text", "nearby" (list or None: the other texts of the batch),
    "event_date" (timestamptz text or None: the default), "resolve"}.
    """
    db.start_call()
    if not items:
        banks.check_bank(plpy, bank_id)
        return []
    for i, it in enumerate(items):
        check_text(it.get("text"), it.get("text_argument") or "mentions[%d].text" % i)
    bank = banks.open_bank(plpy, bank_id)
    cfg = bank.cfg
    batch = fold_batch(plpy, items, default_event_date, probe_threshold(cfg))
    keys = batch.keys
    regular, exact_needed = classify(items, keys, bank.matcher)
    existing = probe.exact(plpy, bank_id, exact_needed)
    chosen, best_scores, names = choose(plpy, bank_id, batch, regular, cfg)

    # New names: literal/label keys not found, and regular mentions without a match.
    new_fixed = {k: kind for k, kind in exact_needed.items() if k not in existing}
    forms = create.new_forms(items, keys, batch.epochs, batch.dates,
                             [i for i in regular if i not in chosen], new_fixed)
    clusters = create.cluster(plpy, forms, cfg)
    rows = create.rows_to_insert(items, keys, batch.epochs, batch.dates, new_fixed, forms, clusters)
    created, taken = create.insert(plpy, bank_id, rows)
    existing.update(taken)

    cluster_of = {member: c.key for c in clusters.values() for member in c.members}
    results = []
    for i, k in enumerate(keys):
        if i in chosen:
            ident = chosen[i].candidate.id
            results.append({"entity_id": ident, "canonical_name": names[ident], "created": False,
                            "score": chosen[i].score})
            continue
        target = k if k in new_fixed or k in existing else cluster_of.get(k, k)
        hit = created.get(target)
        (ident, name, _) = hit if hit is not None else existing[target]
        results.append({"entity_id": ident, "canonical_name": name, "created": hit is not None,
                        "score": best_scores.get(i)})
    enqueue.queue_mentions(plpy, bank_id, [r["entity_id"] for r in results], batch.epochs, batch.dates)
    return results


# -- entry points ----------------------------------------------------------------

def resolve_mentions_sql(plpy, bank_id, mentions, event_date):
    """resolve_mentions: one row per element, in order."""
    items = parse_mentions(mentions)
    results = resolve_items(plpy, bank_id, items, event_date)
    return [(i + 1, items[i]["text"], r["entity_id"], r["canonical_name"], r["created"], r["score"])
            for i, r in enumerate(results)]


def resolve_mention_sql(plpy, bank_id, mention, nearby, event_date, resolve):
    """resolve_mention: the one mention's row."""
    check_text(mention, "mention")
    if resolve is None:
        raise InputError("must not be null", "resolve", "22004")
    it = item(mention, "mention", [x for x in (nearby or []) if x is not None], None, resolve, "mention")
    it["date_argument"] = "event_date"
    r = resolve_items(plpy, bank_id, [it], event_date)[0]
    return [(r["entity_id"], r["canonical_name"], r["created"], r["score"])]


def last_call_statements(plpy):
    """How many statements the last resolve or explain call of this session ran."""
    return db.last_call_statements()
