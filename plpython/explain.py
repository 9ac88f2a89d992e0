"""explain_mention: every candidate of a mention with its signals and the decision on it.

It runs the same decision function as resolution (decide.evaluate) on a
deeper probe, with the same probe forms (candidates.forms_of), the same
context (context.fill_partners) and the same exact look-ups (alias, alias
memory), so what it prints is what resolution did, plus the near misses under
the floor. Which of its candidates resolution reads (``considered``) comes
from resolution's own read of the bank (candidates.read_view), for the
mention called alone: the whole bank's probe, a small bank read whole, or the
mention's neighbourhood (neighbourhood.py), as the session is set. It writes
nothing.
"""

import attributes
import banks
import candidates as candidates_mod
import context
import db
import decide
import memory
import neighbourhood
import probe
import scoring
from callstate import CallState
from fold import fold
from mentions import check_text, check_type, datetime_of
from resolve import ALIAS, IDENTIFIER, MEMORY, compatible, holding, judged_distinct, single_attributes, surviving_of
from settings import ALIAS_MEMORY, TYPED_MENTIONS, lever

# explain_mention probes lower than resolution so that near misses under the
# floor are visible too.
EXPLAIN_PROBE = 0.15
EXPLAIN_LABEL_ROWS = 20


def _row(cand, name, considered, ev=None, decision=scoring.BELOW_FLOOR):
    out = {"candidate_id": cand.id, "canonical_name": name, "trigram_similarity": cand.trigram_similarity,
           "tokens_compatible": None, "name_similarity": None, "cooccurrence": None, "recency": None,
           "score": None, "decision": decision, "matched_form": cand.form, "lever": None,
           "considered": considered}
    if ev is not None:
        out.update(tokens_compatible=ev.tokens_compatible, name_similarity=ev.name_similarity,
                   cooccurrence=ev.cooccurrence, recency=ev.recency, score=ev.score, decision=ev.decision,
                   lever=ev.lever)
    return out


def _exact_row(entity_id, name, decision, lever_name=None):
    return {"candidate_id": entity_id, "canonical_name": name, "trigram_similarity": 1.0,
            "tokens_compatible": True, "name_similarity": 1.0, "cooccurrence": None, "recency": None,
            "score": 1.0 if decision != MEMORY else None, "decision": decision, "matched_form": None,
            "lever": lever_name, "considered": True}


def _probed(plpy, bank_id, key, forms, cfg):
    """Regular candidates and label rows of the key and of its probed forms, and the entities its
    exact forms name; merged per entity as resolution merges them (candidates.for_mention)."""
    best, names, found = {}, {}, []
    for form in [key] + forms.probed:
        rows = probe.explain_candidates(plpy, bank_id, form, cfg["max_candidates"], EXPLAIN_LABEL_ROWS)
        found.extend(scoring.Candidate(r["id"], r["key"], r["sim"], datetime_of(r["last_seen"]), r["is_label"], {},
                                       r["entity_type"], None if form == key else form, homonym=r["homonym"])
                     for r in rows)
        names.update((r["id"], r["canonical_name"]) for r in rows)
    hits = probe.exact(plpy, bank_id, forms.exact) if forms.exact else {}
    for form in forms.exact:
        for h in hits.get(form, ()):
            if h.kind != "label":
                names[h.id] = h.name
                found.append(scoring.Candidate(h.id, h.key, 1.0, datetime_of(h.last_seen), False, {}, h.type,
                                               form, homonym=h.homonym))
    for cand in found:
        old = best.get(cand.id)
        if old is None or cand.trigram_similarity > old.trigram_similarity:
            best[cand.id] = cand
    # Probe order: similarity descending, then name, type and id (labels
    # interleaved; they are never scored, so they cannot change a tie).
    return sorted(best.values(), key=probe.order_key), names


def explain(plpy, bank_id, mention, nearby, event_date, mention_type=None, attrs=None):
    """Return explain_mention's rows: every candidate with its signals and decision."""
    db.start_call()
    with banks.bank_id_first(plpy, bank_id):
        check_text(mention, "mention")
        check_type(mention_type, "mention_type")
        said = single_attributes(attrs)
    bank = banks.read_bank(plpy, bank_id)
    cfg = bank.cfg
    data = banks.name_data(plpy, cfg)
    probe_at = candidates_mod.probe_threshold(cfg)
    texts = [mention] + [x for x in (nearby or []) if x is not None]
    typed = mention_type is not None and lever(cfg, TYPED_MENTIONS)
    if typed:
        texts.append(mention_type)
    lowered, epochs, _ = fold(plpy, texts, [event_date], min(EXPLAIN_PROBE, probe_at), ["event_date"])
    key = lowered[0]
    near = lowered[1:-1] if typed else lowered[1:]
    wanted = lowered[-1].strip() if typed else None
    is_label = bool(bank.matcher) and bank.matcher.is_label(key)
    said = attributes.normalise_one(plpy, said, "attributes")
    kinds = attributes.kinds(cfg) if cfg.get("profile") == "enhanced" and not is_label else {}
    ruled = _Ruled(plpy, bank_id, attributes.of_kind(said, kinds, attributes.DISTINGUISHING))
    identifier, holders = _identifier(plpy, bank_id, attributes.of_kind(said, kinds, attributes.IDENTIFYING),
                                      wanted, ruled)
    if identifier is not None:
        return identifier
    exact = _exact(plpy, bank_id, key, wanted, is_label, cfg, ruled)
    if exact is not None or is_label:
        return exact or []
    forms = candidates_mod.split_forms(key, cfg, data)
    probed, names = _probed(plpy, bank_id, key, forms, cfg)
    # As resolution reads the bank: with its plans and the session's settings read at the call's start.
    with db.generic_plans(plpy):
        read, read_names = _considered(plpy, bank, key, near, epochs[0], wanted, (ruled.mine, kinds), holders, data)
    # The full evaluation scores the mention's neighbourhood too where the probe's limit cut it
    # (candidates.py): what resolution read of it past the limit joins the probe's rows.
    shown = {c.id for c in probed}
    probed = sorted(probed + [c for c in read if c.near and c.id not in shown], key=probe.order_key)
    names.update((i, n) for i, n in read_names.items() if i not in names)
    # Resolution's probe (pg_trgm %, compared like this) never sees a regular
    # row under its threshold.
    seen = [c for c in probed if c.is_label or c.trigram_similarity >= probe_at]
    regular = [c for c in seen if not c.is_label]
    if regular:
        context.fill_partners(plpy, bank, regular, set(n for n in near if n), CallState(), cfg, data)
    evaluations, _ = decide.evaluate(key, seen, near, datetime_of(epochs[0]), cfg, mention_type=wanted,
                                     names=data, bank_holds=probe.BankSize(plpy, bank_id).holds,
                                     fits=ruled.of(c.id for c in regular) if ruled.mine else None,
                                     judged=lambda a, b: judged_distinct(plpy, bank_id, a, b))
    by_id = {ev.candidate.id: ev for ev in evaluations}
    considered = {c.id for c in read}
    out = []
    for cand in probed:
        ev = by_id.get(cand.id)
        out.append(_row(ev.candidate if ev is not None else cand, names[cand.id], cand.id in considered, ev))
    return out


def _considered(plpy, bank, key, near, epoch, wanted, distinguishing, holders, data):
    """The candidates resolution reads for the mention called alone, as the session is set
    (candidates.read_view, then candidates.for_mention): what a new entity's best score is the best of;
    and their names."""
    cfg = bank.cfg
    mine, kinds = distinguishing
    around = neighbourhood.Around({key: set(near)}, {epoch} if epoch is not None else set(), holders)
    view = candidates_mod.read_view(plpy, bank, [key], [], [key], [key] if memory.remembers(key, cfg) else [],
                                    cfg, data, {key: {wanted}},
                                    surviving=surviving_of(plpy, bank.id, kinds, {key: [mine]}) if mine else None,
                                    around=around)
    return candidates_mod.for_mention(key, view, CallState(), cfg), view.names


class _Ruled:
    """How a distinguishing attribute of the mention meets the bank's entities (resolve.attribute_fits, for one
    mention, read from the bank)."""

    def __init__(self, plpy, bank_id, mine):
        self.plpy, self.bank_id, self.mine = plpy, bank_id, mine

    def of(self, ids):
        ids = list(ids)
        if not self.mine or not ids:
            return {}
        held = attributes.held(self.plpy, self.bank_id, ids, list(self.mine))
        return attributes.fits(self.mine, ids, lambda e: held.get(e, {}))

    def __call__(self, entity_id):
        return bool(attributes.ruled_out(self.of([entity_id])))


def _identifier(plpy, bank_id, mine, wanted, ruled):
    """The row of the one entity holding an identifying value of the mention (resolve.by_identifier), else
    None; and the ids of the bank's entities holding any of its identifying values."""
    if not mine:
        return None, set()
    held = attributes.holders(plpy, bank_id, mine.items())
    found = {e: r for rows in held.values() for e, r in holding(rows, wanted).items()}
    chosen, _ = attributes.identified(found, ruled)
    ids = {r["id"] for rows in held.values() for r in rows}
    if chosen is None:
        return None, ids
    return [_exact_row(chosen, found[chosen]["canonical_name"], IDENTIFIER, decide.ATTRIBUTES)], ids


def _exact(plpy, bank_id, key, wanted, is_label, cfg, ruled):
    """The row of a label, an alias or a remembered form, which resolve without scoring; else None."""
    remember = [key] if not is_label and memory.remembers(key, cfg) else []
    hits = probe.exact(plpy, bank_id, [key], [] if is_label else [key], remember, memory.MEMORY_MIN_SCORE)
    if is_label:
        # A label resolves by exact match only: the row it names is the decision.
        hit = probe.name_hit(hits, key, None)
        return [_exact_row(hit.id, hit.name, scoring.CHOSEN)] if hit is not None else None
    hit = probe.alias_hit(hits, key)
    if hit is not None and compatible(hit.type, wanted) and not ruled(hit.id):
        return [_exact_row(hit.id, hit.name, ALIAS)]
    found = memory.remembered(key, wanted, hits, CallState(), cfg)
    if found is not None and not ruled(found[0]):
        return [_exact_row(found[0], found[1], MEMORY, ALIAS_MEMORY)]
    return None
