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
from resolve import probe_threshold

# explain_mention probes lower than resolution so that near misses under the
# floor are visible too.
EXPLAIN_PROBE = 0.15
EXPLAIN_LABEL_ROWS = 20


def _row(cand_id, name, trigram, tokens=None, name_sim=None, cooc=None, recency=None, score=None,
         decision=scoring.BELOW_FLOOR):
    return {"candidate_id": cand_id, "canonical_name": name, "trigram_similarity": trigram,
            "tokens_compatible": tokens, "name_similarity": name_sim, "cooccurrence": cooc,
            "recency": recency, "score": score, "decision": decision}


def _label_rows(plpy, bank_id, key):
    # A label resolves by exact match only: the row it names, if any.
    return [_row(ident, name, 1.0, True, 1.0, None, None, 1.0, scoring.CHOSEN)
            for key_, (ident, name, _) in probe.exact(plpy, bank_id, [key]).items()]


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
    if bank.matcher and bank.matcher.is_label(key):
        return _label_rows(plpy, bank_id, key)
    rows = probe.explain_candidates(plpy, bank_id, key, cfg["max_candidates"], EXPLAIN_LABEL_ROWS)
    regular = [r["id"] for r in rows if not r["is_label"]]
    found = probe.partners(plpy, bank_id, regular, near) if regular else {}
    # Probe order: similarity descending, then id (labels interleaved; they
    # are never scored, so they cannot change a tie).
    rows.sort(key=lambda r: (-r["sim"], r["id"]))
    probed = [scoring.Candidate(r["id"], r["name"], r["sim"], datetime_of(r["last_seen"]),
                                r["is_label"], found.get(r["id"], {})) for r in rows]
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
