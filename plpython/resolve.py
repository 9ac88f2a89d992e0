"""Resolving the mentions of a call: the pipeline, stage by stage.

    parse → fold → classify → exact names and aliases → probe
          → per fact, in order: candidates → screen → context → decide → cluster → create
          → record (entities, provenance, links, queued statistics)

A call is one resolve_mention(s) or retain, or all the facts of one bank in
one INSERT statement. It reads the bank with a fixed handful of statements,
then decides its facts in order, each seeing what the earlier ones did (the
call's state, callstate.py, combined with the bank as read): a statement of
many facts leaves the bank exactly as one statement per fact would. The
decisions are made by pure stages (screen, scoring, decide, clustering),
which unit tests call in-process.
"""

import dataclasses
import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import banks
import clustering
import db
import decide
import labels
import probe
import record
import screen
import trigrams
from callstate import CallState, pair
from errors import InputError
from fold import fold_call
from mentions import check_text, datetime_of, item, parse_mentions

# Decision codes of provenance (mentions.decision) and of lookup_mention.
RESOLVED, CREATED, LITERAL, LABEL, ALIAS = "resolved", "created", "literal", "label", "alias"
NEW = "new"  # lookup_mention: no entity yet; resolving would create one

# A lost race (an entity deleted between probe and write) is decided again,
# against the bank as it then is; more than this many in a row is an error.
MAX_ATTEMPTS = 3


class Fact(NamedTuple):
    """One unit of a call: its mention items, the unit id, whether it is linked."""

    unit_id: str
    items: List[Dict[str, Any]]
    event_date: Optional[str] = None      # the fact's date; an item's own date wins
    link: bool = False
    first_ordinal: int = 1
    members: Tuple[str, ...] = ()         # entities the unit is linked to already (retain)
    argument: str = "mentions"            # how errors name the fact's mentions


class Outcome(NamedTuple):
    """What one mention resolved to."""

    entity_id: Optional[str]
    canonical_name: Optional[str]
    created: bool
    score: Optional[float]
    decision: str
    lname: str = ""     # lower(canonical_name), for the call's state


def probe_threshold(cfg: Dict[str, Any]) -> float:
    """The pg_trgm threshold of the probe: a candidate under the floor can never be merged."""
    return max(cfg["candidate_similarity"], cfg["merge_min_similarity"])


# -- limits --------------------------------------------------------------------------


def check_limits(facts: List[Fact], cfg: Dict[str, Any]) -> None:
    """Refuse a call larger than the bank's limits before any work (SQLSTATE 54000)."""
    total = sum(len(f.items) for f in facts)
    if total > cfg["max_mentions_per_call"]:
        raise InputError("%d mentions in one call; the limit is max_mentions_per_call = %d"
                         % (total, cfg["max_mentions_per_call"]), "mentions", "54000")
    for f in facts:
        if len(f.items) > cfg["max_mentions_per_fact"]:
            raise InputError("%d mentions in one fact; the limit is max_mentions_per_fact = %d"
                             % (len(f.items), cfg["max_mentions_per_fact"]), f.argument, "54000")
        for it in f.items:
            if it.get("nearby_given") and len(it["nearby"]) > cfg["max_nearby_per_mention"]:
                raise InputError("%d nearby names; the limit is max_nearby_per_mention = %d"
                                 % (len(it["nearby"]), cfg["max_nearby_per_mention"]),
                                 it["date_argument"].replace(".event_date", ".nearby"), "54000")


# -- reading the bank ----------------------------------------------------------------


class Folded(NamedTuple):
    """Every item of a call after folding, flat, in call order."""

    keys: List[str]
    nearby: List[List[str]]
    epochs: List[Optional[float]]
    dates: List[Optional[str]]
    trigrams: Dict[str, frozenset]
    fact_of: List[int]
    spans: List[range]              # per fact, the indexes of its items (contiguous)

    def items_of(self, fact_index: int) -> range:
        return self.spans[fact_index]


def fold_facts(plpy, facts: List[Fact], default_event_date, probe_at: float) -> Folded:
    """Lowercase every text and nearby name, parse every date, take every key's trigrams (one statement)."""
    items = [it for f in facts for it in f.items]
    fact_of = [n for n, f in enumerate(facts) for _ in f.items]
    texts = [it["text"] for it in items]
    spans = []
    for it in items:
        start = len(texts)
        if it.get("nearby") is not None:
            texts.extend(x for x in it["nearby"] if isinstance(x, str))
        spans.append((start, len(texts)))
    # An element's own event_date ("" included, which is not a date) is named
    # by its argument; a missing one takes its fact's, then the call's.
    dates, arguments = [], []
    for i, it in enumerate(items):
        fact = facts[fact_of[i]]
        if it.get("event_date") is not None:
            dates.append(it["event_date"])
            arguments.append(it.get("date_argument") or "mentions[%d].event_date" % i)
        elif fact.event_date is not None:
            dates.append(fact.event_date)
            arguments.append("event_date")
        else:
            dates.append(default_event_date)
            arguments.append("event_date")
    n = len(items)
    lowered, epochs, canon, tri = fold_call(plpy, texts, dates, probe_at, arguments, n)
    keys = lowered[:n]
    fact_spans, start = [], 0
    for f in facts:
        fact_spans.append(range(start, start + len(f.items)))
        start += len(f.items)
    nearby = []
    for i, it in enumerate(items):
        if it.get("nearby") is None:
            # No nearby given: the other mentions of the same fact.
            nearby.append([keys[j] for j in fact_spans[fact_of[i]] if j != i])
        else:
            nearby.append(lowered[spans[i][0]:spans[i][1]])
    return Folded(keys, nearby, epochs, canon, {k: trigrams.parse(t) for k, t in zip(keys, tri)}, fact_of,
                  fact_spans)


def classify(items, keys, bank, cfg) -> Tuple[Dict[int, str], List[int]]:
    """{index: "literal" | "label"} for exact-match items, and the regular items' indexes."""
    exact: Dict[int, str] = {}
    regular: List[int] = []
    for i, it in enumerate(items):
        if not it.get("resolve", True):
            exact[i] = LITERAL
        elif bank.matcher and bank.matcher.is_label(keys[i]):
            exact[i] = LABEL
        else:
            undeclared = bank.matcher.undeclared(keys[i]) if bank.matcher else None
            if undeclared is not None and not cfg["allow_undeclared_labels"]:
                raise InputError(
                    '"%s" is not a declared value of label group "%s" (declared: %s); declare it '
                    'with set_entity_labels, or configure_bank(..., \'{"allow_undeclared_labels": true}\') '
                    "to resolve it as a regular name" % (it["text"], undeclared[0], undeclared[1]),
                    it.get("text_argument") or "mentions[%d]" % i)
            regular.append(i)
    return exact, regular


class Bankview(NamedTuple):
    """What the call read of the bank before its first fact."""

    hits: Dict[str, probe.Hit]                   # exact names (literal, label) and aliases, by key
    candidates: Dict[str, List[Any]]             # pre-call probe, by key
    names: Dict[str, str]                        # candidate id -> canonical name
    pending: Dict[str, Tuple[Optional[float], bool]]


def read_bank(plpy, bank, folded: Folded, exact: Dict[int, str], regular: List[int], cfg) -> Bankview:
    """The exact look-up (names of literal and label mentions, aliases) and the probe: two statements."""
    keys = folded.keys
    # Every key by name: a regular name without trigrams ("!!!", "🔥") is
    # never a trigram candidate, but is the same entity when spelled the same.
    name_keys = set(keys)
    alias_keys = {keys[i] for i, how in exact.items() if how == LITERAL} | {keys[i] for i in regular}
    hits = probe.exact(plpy, bank.id, name_keys, alias_keys)
    # An alias names its entity exactly: no fuzzy probe for it.
    distinct = sorted({keys[i] for i in regular
                       if not (keys[i] in hits and hits[keys[i]].via == "alias")})
    by_key, names = probe.candidates(plpy, bank.id, distinct, cfg["max_candidates"])
    pending = {}
    if bank.pending:
        pending = probe.pending_dates(plpy, bank.id, [c.id for cands in by_key.values() for c in cands])
    return Bankview(hits, by_key, names, pending)


# -- deciding a fact ---------------------------------------------------------------


def _effective_last_seen(c, view: Bankview, state: CallState):
    """A candidate's last_seen: the bank's, this transaction's queued dates, the call's own."""
    epoch = c.last_seen.timestamp() if c.last_seen is not None else None
    queued = view.pending.get(c.id)
    if queued is not None:
        q_epoch, recomputed = queued
        if recomputed:
            epoch = q_epoch
        elif q_epoch is not None and (epoch is None or q_epoch > epoch):
            epoch = q_epoch
    own = state.last_seen_epoch(c.id)
    if own is not None and (epoch is None or own > epoch):
        epoch = own
    if epoch is None:
        return None
    return c.last_seen if c.last_seen is not None and c.last_seen.timestamp() == epoch else datetime_of(epoch)


def candidates_for(key: str, view: Bankview, state: CallState, folded: Folded, cfg) -> List[Any]:
    """The key's candidates in probe order: the bank's as probed, and those the call created."""
    bank_side = view.candidates.get(key, [])
    mine = state.created_candidates(key)
    if not mine:
        return bank_side
    merged = sorted(bank_side + mine, key=lambda c: (-c.trigram_similarity, c.name, c.id))
    return merged[:cfg["max_candidates"]]


def _context(plpy, bank, survivors, near_names, state: CallState):
    """Partners of the survivors among the nearby names, with degrees, bank and call combined."""
    bank_ids = [c.id for c in survivors if not state.is_new(c.id)]
    involved = {c.id for c in survivors}
    involved.update(state.seen_names[n] for n in near_names if n in state.seen_names)
    ask = set()
    for e in involved:
        if state.is_new(e):
            continue
        for x in state.partners_of(e):
            if not state.is_new(x):
                ask.add(pair(e, x))
    needs_bank = bool(bank_ids) or any(
        not state.is_new(x) and state.name_of.get(x) in near_names for c in survivors for x in state.partners_of(c.id))
    # Candidates the call created have no pair in the bank; when their
    # partners among the nearby names are the call's too, the bank has
    # nothing to add.
    ctx = probe.context(plpy, bank.id, bank_ids, near_names, ask, bank.pending) if needs_bank else probe.Context(
        {}, {}, set(), set())
    near = dict(ctx.near)
    for name in near_names:
        ent = state.created.get(name)
        if ent is not None and ent.kind != "label":
            near[name] = ent.id
    degree: Dict[str, int] = {}
    for name, n in near.items():
        extra = sum(1 for x in state.partners_of(n)
                    if state.is_new(n) or state.is_new(x) or pair(n, x) not in ctx.known)
        degree[n] = ctx.degree.get(n, 0) + extra
    for c in survivors:
        mine = state.partners_of(c.id)
        c.partners = {name: degree[n] for name, n in near.items()
                      if (c.id, n) in ctx.pairs or n in mine}


def decide_fact(plpy, bank, cfg, fact_index: int, items, folded: Folded, exact, regular_set,
                view: Bankview, state: CallState) -> Dict[int, Any]:
    """Screen and score the fact's regular mentions; {item index: best evaluation or None, scores}."""
    indexes = [i for i in folded.items_of(fact_index) if i in regular_set]
    screened: Dict[int, List[Any]] = {}
    survivors = []
    near = set()
    for i in indexes:
        key = folded.keys[i]
        hit = view.hits.get(key)
        if hit is not None and hit.via == "alias":
            continue
        cands = candidates_for(key, view, state, folded, cfg)
        rows = []
        live = False
        for c, skipped in screen.screen(key, cands, cfg, stop_at_identical=True):
            if skipped is None:
                # A copy per fact: recency and partners are this fact's.
                c = dataclasses.replace(c, last_seen=_effective_last_seen(c, view, state), partners={})
                survivors.append(c)
                live = True
            rows.append((c, skipped))
        screened[i] = rows
        if live:
            near.update(folded.nearby[i])
    if survivors and near:
        _context(plpy, bank, survivors, near, state)
    out = {}
    for i, rows in screened.items():
        evaluations, best = decide.decide(folded.keys[i], rows, folded.nearby[i],
                                          datetime_of(folded.epochs[i]), cfg)
        scores = [ev.score for ev in evaluations if ev.score is not None]
        out[i] = (best, max(scores) if scores else None)
    return out


def _name_of(c, view: Bankview, state: CallState) -> str:
    if state.is_new(c.id):
        return state.by_id[c.id].name
    return view.names[c.id]


def settle_fact(fact_index: int, fact: Fact, items, folded: Folded, exact, decided, view: Bankview,
                state: CallState, cfg) -> List[Outcome]:
    """Turn a fact's decisions into outcomes: hits, choices, and the entities it creates."""
    indexes = folded.items_of(fact_index)
    keys = folded.keys
    outcomes: Dict[int, Outcome] = {}
    # Exact mentions: an alias, the bank's name, or a name the call created.
    fixed_new: Dict[str, str] = {}
    for i in indexes:
        key = keys[i]
        hit = view.hits.get(key)
        if hit is not None and hit.via == "alias":
            outcomes[i] = Outcome(hit.id, hit.name, False, None, ALIAS, hit.lname)
            continue
        if i not in exact:
            continue
        ent = state.created.get(key)
        if hit is not None:
            outcomes[i] = Outcome(hit.id, hit.name, False, None, exact[i], hit.lname)
        elif ent is not None:
            outcomes[i] = Outcome(ent.id, ent.name, False, None, exact[i], ent.key)
        else:
            fixed_new.setdefault(key, "label" if exact[i] == LABEL else "regular")
    # Regular mentions that chose a candidate.
    for i, (best, _) in decided.items():
        if best is not None:
            c = best.candidate
            outcomes[i] = Outcome(c.id, _name_of(c, view, state), False, best.score, RESOLVED, c.name)
    # New names: literal and label names not found, and clusters of the rest.
    unresolved = [i for i in indexes if i not in outcomes and i not in exact]
    forms = {}
    for i in unresolved:
        # The same name, found by the exact look-up or made earlier in the
        # call, though no trigram candidate: a label row (never a fuzzy
        # candidate), or a name without letters or digits ("!!!").
        hit = view.hits.get(keys[i]) or state.created.get(keys[i])
        if hit is not None:
            outcomes[i] = Outcome(hit.id, hit.name, False, decided.get(i, (None, None))[1], RESOLVED, keys[i])
            continue
        if keys[i] in fixed_new:
            continue
        form = forms.setdefault(keys[i], {"key": keys[i], "spellings": {}, "first_seen": None})
        form["spellings"][items[i]["text"]] = form["spellings"].get(items[i]["text"], 0) + 1
    pairs = []
    if 2 <= len(forms) <= cfg["intrabatch_max_names"]:
        pairs = trigrams.similar_pairs(forms, folded.trigrams, cfg["intrabatch_similarity"])
    clusters = clustering.cluster_forms(list(forms.values()), pairs, cfg["intrabatch_max_names"]) if forms else {}
    made: Dict[str, Any] = {}

    def first_date(members_keys):
        dated = [(folded.epochs[i], folded.dates[i]) for i in indexes
                 if keys[i] in members_keys and folded.epochs[i] is not None]
        return min(dated) if dated else (None, None)

    for key, kind in sorted(fixed_new.items()):
        members = {key}
        # Literal and label names are created spelled exactly as given.
        text = next(items[i]["text"] for i in indexes if keys[i] == key and i in exact)
        epoch, date = first_date(members)
        made[key] = state.create(key, text, kind, None, epoch, date)
    for c in {id(c): c for c in clusters.values()}.values():
        if c.key in made:
            continue
        epoch, date = first_date(set(c.members))
        made[c.key] = state.create(c.key, c.name, "regular", None, epoch, date)
    cluster_of = {m: c.key for c in clusters.values() for m in c.members}
    for i in indexes:
        if i in outcomes:
            continue
        key = keys[i]
        target = key if key in fixed_new else cluster_of.get(key, key)
        ent = made[target]
        how = exact.get(i, CREATED)
        outcomes[i] = Outcome(ent.id, ent.name, True, decided.get(i, (None, None))[1], how, ent.key)
    return [outcomes[i] for i in indexes]


def _record_fact(fact: Fact, indexes: List[int], outcomes: List[Outcome], items, folded: Folded,
                 state: CallState) -> None:
    for n, (i, o) in enumerate(zip(indexes, outcomes)):
        state.meet(o.entity_id, o.lname)
        state.record_mention(o.entity_id, folded.epochs[i], folded.dates[i])
        state.provenance.append((fact.unit_id, fact.first_ordinal + n, items[i]["text"], o.entity_id,
                                 o.decision, o.score, folded.dates[i]))
    if fact.link:
        state.record_unit(fact.unit_id, [o.entity_id for o in outcomes], fact.event_date, fact.members)


# -- the call ----------------------------------------------------------------------


def resolve_call(plpy, bank_id: str, facts: List[Fact], default_event_date, *, write: bool = True,
                 argument: str = "bank_id") -> List[List[Outcome]]:
    """Resolve the facts of a call in order; return each fact's outcomes (one per item, in order)."""
    db.start_call()
    items = [it for f in facts for it in f.items]
    if not items:
        banks.check_bank(plpy, bank_id, argument)
        return [[] for _ in facts]
    for i, it in enumerate(items):
        check_text(it.get("text"), it.get("text_argument") or "mentions[%d].text" % i)
    bank = banks.open_bank(plpy, bank_id, argument) if write else banks.read_bank(plpy, bank_id, argument)
    cfg = bank.cfg
    check_limits(facts, cfg)
    folded = fold_facts(plpy, facts, default_event_date, probe_threshold(cfg))
    exact, regular = classify(items, folded.keys, bank, cfg)
    regular_set = set(regular)
    # Which of the call's keys could be candidates for which (an entity the
    # call creates is one of its keys): once, not per fact.
    near = {}
    if len(facts) > 1:
        keyed = {folded.keys[i]: folded.trigrams[folded.keys[i]] for i in list(exact) + regular}
        near = trigrams.neighbours(keyed, probe_threshold(cfg))
    for attempt in range(MAX_ATTEMPTS):
        view = read_bank(plpy, bank, folded, exact, regular, cfg)
        state = CallState(near)
        results = []
        for n, fact in enumerate(facts):
            decided = decide_fact(plpy, bank, cfg, n, items, folded, exact, regular_set, view, state)
            outcomes = settle_fact(n, fact, items, folded, exact, decided, view, state, cfg)
            indexes = folded.items_of(n)
            _record_fact(fact, indexes, outcomes, items, folded, state)
            results.append(outcomes)
        if not write:
            return results
        lost = record.persist(plpy, bank_id, state)
        if lost is None:
            return _written(results, state)
        if attempt == MAX_ATTEMPTS - 1:
            raise lost
    return results


def _written(results, state: CallState) -> List[List[Outcome]]:
    """Outcomes with the entity ids as written (a provisional id that lost a race is remapped)."""
    written = iter(state.provenance)
    out = []
    for outcomes in results:
        fixed = []
        for o in outcomes:
            row = next(written)
            lost = o.entity_id in state.lost
            fixed.append(o._replace(entity_id=row[3], decision=row[4], created=o.created and not lost))
        out.append(fixed)
    return out


# -- entry points ----------------------------------------------------------------


def _call_unit() -> str:
    """The provenance unit of a resolve call outside any fact."""
    return str(uuid.uuid4())


def resolve_mentions_sql(plpy, bank_id, mentions, event_date):
    """resolve_mentions: one row per element, in order (the elements are one batch)."""
    items = parse_mentions(mentions)
    outcomes = resolve_call(plpy, bank_id, [Fact(_call_unit(), items)], event_date)[0]
    return [(i + 1, items[i]["text"], o.entity_id, o.canonical_name, o.created, o.score)
            for i, o in enumerate(outcomes)]


def _single(mention, nearby, resolve):
    check_text(mention, "mention")
    if resolve is None:
        raise InputError("must not be null", "resolve", "22004")
    it = item(mention, "mention", [x for x in (nearby or []) if x is not None], None, resolve, "mention")
    it["date_argument"] = "event_date"
    return it


def resolve_mention_sql(plpy, bank_id, mention, nearby, event_date, resolve):
    """resolve_mention: the one mention's row (a write: provenance and statistics)."""
    it = _single(mention, nearby, resolve)
    o = resolve_call(plpy, bank_id, [Fact(_call_unit(), [it])], event_date)[0][0]
    return [(o.entity_id, o.canonical_name, o.created, o.score)]


def lookup_mention_sql(plpy, bank_id, mention, nearby, event_date):
    """lookup_mention: what resolve_mention would decide, writing nothing."""
    it = _single(mention, nearby, True)
    o = resolve_call(plpy, bank_id, [Fact("", [it])], event_date, write=False)[0][0]
    if o.created:
        return [(None, None, o.score, NEW)]
    return [(o.entity_id, o.canonical_name, o.score, o.decision)]


def last_call_statements(plpy):
    """How many statements the last resolve or explain call of this session ran."""
    return db.last_call_statements()
