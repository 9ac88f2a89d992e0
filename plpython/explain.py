"""explain_mention: every candidate of a mention with its signals and the decision on it.

It runs the same decision function as resolution (decide.evaluate) on a
deeper probe, so what it prints is what resolution did, plus the near misses
under the floor. It writes nothing.
"""

import banks
import db
import decide
import probe
import scoring
from fold import fold
from mentions import check_text, datetime_of
from resolve import ALIAS, probe_threshold

# explain_mention probes lower than resolution so that near misses under the
# floor are visible too.
EXPLAIN_PROBE = 0.15
EXPLAIN_LABEL_ROWS = 20


def _row(cand_id, name, trigram, tokens=None, name_sim=None, cooc=None, recency=None, score=None,
         decision=scoring.BELOW_FLOOR):
    return {"candidate_id": cand_id, "canonical_name": name, "trigram_similarity": trigram,
            "tokens_compatible": tokens, "name_similarity": name_sim, "cooccurrence": cooc,
            "recency": recency, "score": score, "decision": decision}


def _exact_row(hit, decision):
    return _row(hit.id, hit.name, 1.0, True, 1.0, None, None, 1.0, decision)


def explain(plpy, bank_id, mention, nearby, event_date):
    """Return explain_mention's rows: every candidate with its signals and decision."""
    db.start_call()
    check_text(mention, "mention")
    bank = banks.read_bank(plpy, bank_id)
    cfg = bank.cfg
    probe_at = probe_threshold(cfg)
    texts = [mention] + [x for x in (nearby or []) if x is not None]
    lowered, epochs, _ = fold(plpy, texts, [event_date], min(EXPLAIN_PROBE, probe_at), ["event_date"])
    key, near = lowered[0], lowered[1:]
    is_label = bool(bank.matcher) and bank.matcher.is_label(key)
    hits = probe.exact(plpy, bank_id, [key] if is_label else [], [] if is_label else [key])
    if key in hits:
        # A label resolves by exact match only, an alias names its entity:
        # the row it names is the decision.
        return [_exact_row(hits[key], scoring.CHOSEN if is_label else ALIAS)]
    if is_label:
        return []
    rows = probe.explain_candidates(plpy, bank_id, key, cfg["max_candidates"], EXPLAIN_LABEL_ROWS)
    regular = [r["id"] for r in rows if not r["is_label"]]
    ctx = probe.context(plpy, bank_id, regular, near, (), bank.pending) if regular else None
    # Probe order: similarity descending, then name, then id (labels
    # interleaved; they are never scored, so they cannot change a tie).
    rows.sort(key=lambda r: (-r["sim"], r["name"], r["id"]))
    probed = []
    for r in rows:
        partners = {}
        if ctx is not None:
            partners = {name: ctx.degree[n] for name, n in ctx.near.items() if (r["id"], n) in ctx.pairs}
        probed.append(scoring.Candidate(r["id"], r["name"], r["sim"], datetime_of(r["last_seen"]),
                                        r["is_label"], partners, r["entity_type"]))
    # Resolution's probe (pg_trgm %, compared like this) never sees a regular
    # row under its threshold.
    unprobed = {r["id"] for r in rows if not r["is_label"] and r["sim"] < probe_at}
    evaluations, _ = decide.evaluate(key, [c for c in probed if c.id not in unprobed], near,
                                     datetime_of(epochs[0]), cfg)
    by_id = {ev.candidate.id: ev for ev in evaluations}
    names = {r["id"]: r["canonical_name"] for r in rows}
    out = []
    for cand in probed:
        ev = by_id.get(cand.id)
        if ev is None:
            out.append(_row(cand.id, names[cand.id], cand.trigram_similarity))
            continue
        out.append(_row(cand.id, names[cand.id], cand.trigram_similarity, ev.tokens_compatible,
                        ev.name_similarity, ev.cooccurrence, ev.recency, ev.score, ev.decision))
    return out
