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
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import attributes
import banks
import candidates
import context
import create
import db
import decide
import memory
import mentions as mentions_mod
import names as names_mod
import neighbourhood
import probe
import record
import screen
import trigrams
from callstate import CallState
from candidates import View
from errors import InputError
from fold import Folded, fold_facts
from mentions import check_text, check_type, datetime_of, item, load_mentions, parse_elements
from settings import TYPED_MENTIONS, lever

# Decision codes of provenance (mentions.decision) and of lookup_mention.
RESOLVED, CREATED, LITERAL, LABEL, ALIAS = "resolved", "created", "literal", "label", "alias"
MEMORY = "memory"   # alias memory (memory.py): a form the bank resolved with confidence
# Attributes (attributes.py): an identifying value one entity holds; or
# identifying values pointing at several entities (or at one a distinguishing
# value rules out), or homonyms nothing told apart, placed by the rule.
IDENTIFIER, AMBIGUOUS = "identifier", "ambiguous"
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
    # The mentions array as loaded (load_mentions), its elements not yet
    # checked: they are, into items, once the call is within its limits.
    elements: Optional[List[Any]] = None
    where: str = ""                       # added to the arguments its errors name ("(inserted row 3)")

    def size(self) -> int:
        """How many mentions the fact carries (before or after parsing)."""
        return len(self.items) if self.elements is None else len(self.elements)

    def parsed(self) -> "Fact":
        """The fact with its elements checked into items (an error names the element and ``where``)."""
        if self.elements is None:
            return self
        try:
            items = parse_elements(self.elements)
        except InputError as error:
            error.argument += self.where
            raise
        for it in items:
            it["text_argument"] += self.where
            it["date_argument"] += self.where
            it["attributes_argument"] += self.where
        return self._replace(items=items, elements=None)


class Outcome(NamedTuple):
    """What one mention resolved to."""

    entity_id: Optional[str]
    canonical_name: Optional[str]
    created: bool
    score: Optional[float]
    decision: str
    key: str = ""       # lower(canonical_name), for the call's state
    # The bare entity (or an initial's), as nothing told apart the entities the name fits, and the one of
    # them the context leaned to, too little to decide (decide._leaning): what reresolve keeps a mention on.
    untold: bool = False
    leaning: Optional[str] = None
    # One of the entities the name fits, nothing told apart and no bare entity: the best score chose it
    # (decide._untold).
    by_score: bool = False


# -- limits --------------------------------------------------------------------------


def check_sizes(facts: List[Fact], cfg: Dict[str, Any]) -> None:
    """Refuse a call or a fact larger than the bank's limits (SQLSTATE 54000) before any per-mention work.

    Counted from the loaded arrays, before their elements are checked: a
    fact's context grows with the square of its mentions.
    """
    mentions_mod.check_sizes([f.size() for f in facts], [f.argument for f in facts], cfg)


def check_nearby(facts: List[Fact], cfg: Dict[str, Any]) -> None:
    """Refuse a mention with more nearby names of its own than the bank allows (SQLSTATE 54000)."""
    for f in facts:
        for it in f.items:
            if it.get("nearby_given") and len(it["nearby"]) > cfg["max_nearby_per_mention"]:
                raise InputError("%d nearby names; the limit is max_nearby_per_mention = %d"
                                 % (len(it["nearby"]), cfg["max_nearby_per_mention"]),
                                 it["date_argument"].replace(".event_date", ".nearby"), "54000")


# -- classifying ---------------------------------------------------------------------


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


def mention_type(folded: Folded, exact: Dict[int, str], i: int) -> Optional[str]:
    """The type a mention is resolved and created with: its own, except for a label (labels are untyped)."""
    return None if exact.get(i) == LABEL else folded.types[i]


def compatible(etype: Optional[str], wanted: Optional[str]) -> bool:
    """An entity of type ``etype`` may be what a mention of type ``wanted`` names (untyped fits any)."""
    return wanted is None or etype is None or etype == wanted


# -- deciding a fact ---------------------------------------------------------------


class Call(NamedTuple):
    """What every fact of a call shares: the bank, its settings and name data, the folded items."""

    plpy: Any
    bank: Any
    cfg: Dict[str, Any]
    data: names_mod.NameData
    items: List[Dict[str, Any]]
    folded: Folded
    exact: Dict[int, str]
    regular: frozenset
    # attribute name -> kind (attributes.kinds); empty when the profile reads none (reference)
    kinds: Dict[str, str] = {}


def direct(call: Call, i: int, view: View, state: CallState) -> Optional[Outcome]:
    """An alias or a remembered form: the entity, without scoring."""
    key, wanted = call.folded.keys[i], mention_type(call.folded, call.exact, i)
    hit = probe.alias_hit(view.hits, key)
    if hit is not None and compatible(hit.type, wanted) and not ruled_out(call, i, [hit.id], view, state):
        return Outcome(hit.id, hit.name, False, None, ALIAS, hit.key)
    if i not in call.regular:
        return None
    found = memory.remembered(key, wanted, view.hits, state, call.cfg)
    if found is not None and not ruled_out(call, i, [found[0]], view, state):
        return Outcome(found[0], found[1], False, None, MEMORY, found[2])
    return None


def decide_fact(call: Call, fact_index: int, view: View, state: CallState):
    """Decide the fact's regular mentions: ({index: direct outcome}, {index: (best evaluation or None, max score)})."""
    folded, cfg = call.folded, call.cfg
    settled: Dict[int, Outcome] = {}
    screened: Dict[int, List[Any]] = {}
    survivors, near, live_shared = [], set(), []
    fits: Dict[int, Dict[str, attributes.Fit]] = {}
    for i in folded.items_of(fact_index):
        found = by_identifier(call, i, view, state) or direct(call, i, view, state)
        if found is not None:
            settled[i] = found
            continue
        if i not in call.regular:
            continue
        key = folded.keys[i]
        rows, live = [], False
        # A distinguishing attribute may rule the identical name out: every candidate is screened then.
        distinguishing = bool(given(call, i, attributes.DISTINGUISHING))
        for c, skipped in screen.screen(key, candidates.for_mention(key, view, state, cfg), cfg, not distinguishing,
                                        mention_type(folded, call.exact, i), call.data):
            if skipped is None:
                # A copy per fact: recency and partners are this fact's.
                c = dataclasses.replace(c, last_seen=candidates.effective_last_seen(c, view, state), partners={})
                survivors.append(c)
                live = True
            rows.append((c, skipped))
        screened[i] = rows
        if distinguishing:
            fits[i] = attribute_fits(call, i, [c.id for c, skipped in rows if skipped is None], view, state)
        if live and folded.nearby_given[i]:
            near.update(folded.nearby[i])
        elif live:
            live_shared.append(i)
    near.update(_others_of_fact(folded, fact_index, live_shared))
    if survivors and near:
        context.fill_partners(call.plpy, call.bank, survivors, near, state, cfg, call.data)

    def bank_holds(n: int) -> bool:
        # The bank as the call found it (counted once per call, as far as
        # asked) and the entities the call created since, so that a statement
        # of many facts sees what fact by fact would.
        if state.bank_size is None:
            state.bank_size = probe.BankSize(call.plpy, call.bank.id)
        return state.bank_size.holds(n - state.entities_created())

    decided = {}
    for i, rows in screened.items():
        evaluations, best = decide.decide(folded.keys[i], rows, folded.nearby[i],
                                          datetime_of(folded.epochs[i]), cfg, call.data, bank_holds, fits.get(i),
                                          lambda a, b: judged(call, state, a, b))
        _flag(i, folded.keys[i], evaluations, best, state)
        scores = [ev.score for ev in evaluations if ev.score is not None]
        decided[i] = (best, max(scores) if scores else None)
    return settled, decided


def _flag(i: int, key: str, evaluations, best, state: CallState) -> None:
    """What the attributes made of a decision: a homonym to create, and whether nothing told homonyms apart."""
    if best is not None:
        return
    ambiguous, homonym = decide.new_entity_flags(evaluations, key)
    if homonym:
        state.homonyms.add(i)
    if ambiguous:
        state.flags[i] = AMBIGUOUS


# Whether two entities were judged distinct (mark_distinct): read when a
# mention fits two about equally (decide.judged_rival), once per pair and call.
SQL_JUDGED = """
SELECT count(*) > 0 AS judged
  FROM entity_judgements
 WHERE bank_id = $1 AND entity_a = least($2::uuid, $3::uuid) AND entity_b = greatest($2::uuid, $3::uuid)
"""


def judged_distinct(plpy, bank_id: str, a: str, b: str) -> bool:
    """Whether entities ``a`` and ``b`` of the bank were judged distinct."""
    return db.run(plpy, "judged_distinct", SQL_JUDGED, ["text", "text", "text"], [bank_id, a, b])[0]["judged"]


def judged(call: Call, state: CallState, a: str, b: str) -> bool:
    """judged_distinct, once per pair and call; an entity the call made was never judged."""
    if state.is_new(a) or state.is_new(b):
        return False
    pair = (a, b) if a < b else (b, a)
    if pair not in state.judged:
        state.judged[pair] = judged_distinct(call.plpy, call.bank.id, a, b)
    return state.judged[pair]


def _others_of_fact(folded: Folded, fact_index: int, live: List[int]) -> Set[str]:
    """The union, over the mentions ``live`` (without nearby of their own), of the fact's other mentions' keys.

    Once per fact, not once per mention: two or more of them cover every key
    of the fact; one covers every key but its own, unless the fact names it
    twice.
    """
    if not live:
        return set()
    keys = folded.keys[folded.items_of(fact_index).start:folded.items_of(fact_index).stop]
    out = set(keys)
    if len(live) == 1 and keys.count(folded.keys[live[0]]) == 1:
        out.discard(folded.keys[live[0]])
    return out


def _named(call: Call, i: int, view: View, state: CallState, scored: bool):
    """The entity of exactly this name for the mention, found by the look-up or made earlier in the call.

    For a regular mention that was scored (``scored``), only where the probe
    cannot find it: a label row (never a fuzzy candidate), or a name without
    letters or digits ("!!!"). In the enhanced profile, an entity the scoring
    passed over (an ambiguous name, another type) is not taken by spelling.
    """
    key, wanted = call.folded.keys[i], mention_type(call.folded, call.exact, i)
    hit = probe.name_hit(view.hits, key, wanted) or state.created_named(key, wanted)
    if hit is None or not scored or call.cfg.get("profile") == "reference":
        return hit
    if hit.kind == "label" or not call.folded.trigrams.get(key):
        return hit
    return None


def settle_fact(call: Call, fact_index: int, settled: Dict[int, Outcome], decided, view: View,
                state: CallState) -> List[Outcome]:
    """Turn a fact's decisions into outcomes: hits, choices, and the entities it creates."""
    indexes = call.folded.items_of(fact_index)
    outcomes: Dict[int, Outcome] = dict(settled)
    fixed_new: Dict[Tuple[str, Optional[str]], str] = {}
    for i in indexes:
        if i in outcomes or i not in call.exact:
            continue
        # Literal and label mentions: the bank's name, or a name the call created.
        hit = _named(call, i, view, state, False)
        if hit is not None:
            outcomes[i] = Outcome(hit.id, hit.name, False, None, call.exact[i], hit.key)
        else:
            fixed_new.setdefault((call.folded.keys[i], mention_type(call.folded, call.exact, i)),
                                 "label" if call.exact[i] == LABEL else "regular")
    for i, (best, _) in decided.items():
        if best is not None:
            c = best.candidate
            outcomes[i] = Outcome(c.id, candidates.name_of(c, view, state), False, best.score, RESOLVED, c.key,
                                  best.detail == decide.UNTOLD, best.leaning, best.by_score)
    unresolved = []
    for i in indexes:
        if i in outcomes or i in call.exact:
            continue
        if (call.folded.keys[i], mention_type(call.folded, call.exact, i)) in fixed_new:
            continue        # the same name as a literal one of the fact, not found: that entity
        hit = _named(call, i, view, state, True)
        if hit is not None:
            outcomes[i] = Outcome(hit.id, hit.name, False, decided.get(i, (None, None))[1], RESOLVED, hit.key)
        else:
            unresolved.append(i)
    made = create.fixed(call.items, indexes, call.folded, fixed_new, state)
    clustered = create.clusters(call.items, indexes, unresolved, call.folded, call.cfg, state,
                                state.homonyms & set(unresolved),
                                {i: given(call, i, attributes.DISTINGUISHING) for i in unresolved})
    for i in indexes:
        if i in outcomes:
            continue
        ent = clustered.get(i) or made[(call.folded.keys[i], mention_type(call.folded, call.exact, i))]
        outcomes[i] = Outcome(ent.id, ent.name, True, decided.get(i, (None, None))[1],
                              call.exact.get(i, CREATED), ent.key)
    return [outcomes[i] for i in indexes]


def _record_fact(call: Call, fact_index: int, fact: Fact, outcomes: List[Outcome], decided,
                 state: CallState) -> None:
    """Register a fact's outcomes in the call's state: provenance, dates, pairs, memory."""
    folded = call.folded
    indexes = folded.items_of(fact_index)
    for n, (i, o) in enumerate(zip(indexes, outcomes)):
        state.meet(o.entity_id, o.key)
        state.record_mention(o.entity_id, folded.epochs[i], folded.dates[i])
        said = folded.attributes_of(i)
        state.provenance.append((fact.unit_id, fact.first_ordinal + n, call.items[i]["text"], o.entity_id,
                                 o.decision, o.score, folded.dates[i], attributes.as_json(said)))
        state.hold(o.entity_id, said, o.canonical_name, o.key)
        if state.flags.get(i) == AMBIGUOUS and o.decision in (RESOLVED, CREATED, MEMORY):
            # Attributes pointed at several entities: placed by name and context, and said so.
            state.provenance[-1] = state.provenance[-1][:4] + (AMBIGUOUS,) + state.provenance[-1][5:]
            outcomes[n] = o._replace(decision=AMBIGUOUS)
        # What the provenance records: an ambiguous placement teaches no memory.
        if outcomes[n].decision == RESOLVED and decided.get(i, (None,))[0] is not None:
            etype = decided[i][0].candidate.entity_type
            memory.learn(state, folded.keys[i], o.score, (o.entity_id, etype, o.canonical_name, o.key), call.cfg)
    if fact.link:
        state.record_unit(fact.unit_id, [o.entity_id for o in outcomes], fact.event_date, fact.members)


# -- the call ----------------------------------------------------------------------


def resolve_call(plpy, bank_id: str, facts: List[Fact], default_event_date, *, write: bool = True,
                 argument: str = "bank_id", count_from_here: bool = True, prober=None) -> List[List[Outcome]]:
    """Resolve the facts of a call in order; return each fact's outcomes (one per item, in order).

    ``count_from_here``: last_call_statements counts from this call (the
    facts trigger counts its whole statement instead). ``prober``: see
    candidates.read_view (a call that writes nothing only).
    """
    if count_from_here:
        db.start_call()
    with db.generic_plans(plpy):
        return _resolve_call(plpy, bank_id, facts, default_event_date, write, argument, None if write else prober)


def _resolve_call(plpy, bank_id: str, facts: List[Fact], default_event_date, write: bool,
                  argument: str, prober=None) -> List[List[Outcome]]:
    if not any(f.size() for f in facts):
        banks.check_bank(plpy, bank_id, argument)
        return [[] for _ in facts]
    # The bank's settings first (one statement), then the limits, counted
    # from the arrays as loaded: a call or fact over them is refused before
    # any of its mentions is checked, folded or decided.
    def within_limits(bank) -> None:
        check_sizes(facts, bank.cfg)

    if write:
        bank = banks.open_bank(plpy, bank_id, argument, within_limits)
    else:
        bank = banks.read_bank(plpy, bank_id, argument)
        within_limits(bank)
    facts = [f.parsed() for f in facts]
    items = [it for f in facts for it in f.items]
    for i, it in enumerate(items):
        check_text(it.get("text"), it.get("text_argument") or "mentions[%d].text" % i)
    check_nearby(facts, bank.cfg)
    call = _prepare(plpy, bank, facts, default_event_date)
    literal_keys = [call.folded.keys[i] for i, how in call.exact.items() if how == LITERAL]
    regular_keys = [call.folded.keys[i] for i in sorted(call.regular)]
    memory_keys = [k for k in regular_keys if memory.remembers(k, call.cfg)]
    near = _call_neighbours(call, facts)
    types: Dict[str, Set[Optional[str]]] = {}
    for i in call.regular:
        types.setdefault(call.folded.keys[i], set()).add(mention_type(call.folded, call.exact, i))
    identifying = [kv for i in call.regular for kv in given(call, i, attributes.IDENTIFYING).items()]
    for attempt in range(MAX_ATTEMPTS):
        holders = attributes.holders(plpy, bank.id, identifying) if identifying else None
        view = candidates.read_view(plpy, bank, call.folded.keys, literal_keys, regular_keys, memory_keys,
                                    call.cfg, call.data, types, prober, _surviving(call), _around(call, holders))
        if identifying:
            view = view._replace(holders=holders)
        state = CallState(near)
        state.bank_held.update(view.held or {})
        results = []
        for n, fact in enumerate(facts):
            settled, decided = decide_fact(call, n, view, state)
            outcomes = settle_fact(call, n, settled, decided, view, state)
            _record_fact(call, n, fact, outcomes, decided, state)
            results.append(outcomes)
        if not write:
            return results
        lost = record.persist(plpy, bank_id, state, bool(bank.cfg["auto_reresolve"]))
        if lost is None:
            return _written(results, state)
        if attempt == MAX_ATTEMPTS - 1:
            raise lost
    return results


def _around(call: Call, holders) -> neighbourhood.Around:
    """What the call's neighbourhood is read from: each regular key's nearby names, the call's event
    dates, and the holders of its identifiers (each resolves a mention early in the call)."""
    near: Dict[str, Set[str]] = {}
    for i in call.regular:
        near.setdefault(call.folded.keys[i], set()).update(call.folded.nearby[i])
    epochs = {call.folded.epochs[i] for i in call.regular if call.folded.epochs[i] is not None}
    ids = {r["id"] for rows in (holders or {}).values() for r in rows}
    return neighbourhood.Around(near, epochs, ids, len(call.folded.spans))


def _prepare(plpy, bank, facts: List[Fact], default_event_date) -> Call:
    """Fold the call's items and classify them."""
    cfg = bank.cfg
    items = [it for f in facts for it in f.items]
    folded = fold_facts(plpy, facts, default_event_date, candidates.probe_threshold(cfg),
                        lever(cfg, TYPED_MENTIONS))
    exact, regular = classify(items, folded.keys, bank, cfg)
    kinds = attributes.kinds(cfg) if cfg.get("profile") == "enhanced" else {}
    return Call(plpy, bank, cfg, banks.name_data(plpy, cfg), items, folded, exact, frozenset(regular), kinds)


def _surviving(call: Call):
    """read_view's ``surviving`` for the call's mentions with a distinguishing attribute; None when it has none."""
    dated: Dict[str, List[Dict[str, str]]] = {}
    for i in sorted(call.regular):
        mine = given(call, i, attributes.DISTINGUISHING)
        if mine:
            dated.setdefault(call.folded.keys[i], []).append(mine)
    return surviving_of(call.plpy, call.bank.id, call.kinds, dated) if dated else None


def surviving_of(plpy, bank_id: str, kinds, dated: Dict[str, List[Dict[str, str]]]):
    """read_view's ``surviving``: the identical names each mention with a distinguishing attribute leaves.

    ``dated``: key -> the distinguishing attributes of each of its mentions
    that has any. One statement reads the distinguishing values of every
    identical name of such keys.
    """
    def surviving(identical):
        ids = [c.id for k, rows in identical.items() if k in dated for c in rows if not c.is_label]
        held = attributes.held(plpy, bank_id, ids, attributes.named(kinds, attributes.DISTINGUISHING))
        left = {k: [[c for c in rows if c.is_label or not attributes.fit(mine, held.get(c.id, {})).conflicts]
                    for mine in dated[k]]
                for k, rows in identical.items() if k in dated}
        return left, held
    return surviving


def given(call: Call, i: int, kind: str) -> Dict[str, str]:
    """A regular mention's attributes of one kind, as the profile reads them (none under reference)."""
    if not call.kinds or i not in call.regular:
        return {}
    return attributes.of_kind(call.folded.attributes_of(i), call.kinds, kind)


def attribute_fits(call: Call, i: int, ids, view: View, state: CallState) -> Dict[str, attributes.Fit]:
    """The entities among ``ids`` a distinguishing attribute of the mention rules out or agrees with (attributes.fits).

    The bank's values of entities not yet read are read here (one statement
    per fact that needs any), then the call's own are added (CallState).
    """
    mine = given(call, i, attributes.DISTINGUISHING)
    if not mine:
        return {}
    unread = [e for e in ids if not state.is_new(e) and e not in state.bank_held]
    if unread:
        names = attributes.named(call.kinds, attributes.DISTINGUISHING)
        state.bank_held.update(attributes.held(call.plpy, call.bank.id, unread, names))
    return attributes.fits(mine, ids, state.values_of)


def ruled_out(call: Call, i: int, ids, view: View, state: CallState) -> bool:
    """Whether a distinguishing attribute of the mention rules out any of ``ids``."""
    return bool(attributes.ruled_out(attribute_fits(call, i, ids, view, state)))


def holding(rows: Iterable[Dict[str, Any]], wanted: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """id -> row, for the bank's holders of identifying values (attributes.holders) a mention may resolve to.

    A label never holds an identity; a typed mention, only entities of a
    compatible type (compatible()).
    """
    return {r["id"]: r for r in rows if r["entity_kind"] != "label" and compatible(r["entity_type"], wanted)}


def by_identifier(call: Call, i: int, view: View, state: CallState) -> Optional[Outcome]:
    """The one entity holding an identifying value of the mention, unless an attribute rules it out.

    Several entities holding them, or the one ruled out, flag the mention
    ambiguous (state.flags): it is then placed by name and context, as
    without identifiers, and provenance says so.
    """
    mine = given(call, i, attributes.IDENTIFYING)
    if not mine:
        return None
    wanted = mention_type(call.folded, call.exact, i)
    found: Dict[str, Tuple[str, str]] = {}
    for name, value in sorted(mine.items()):
        for e, r in holding((view.holders or {}).get((name, value), ()), wanted).items():
            found[e] = (r["canonical_name"], r["key"])
        for e in state.holders_of(name, value):
            ent = state.by_id.get(e)
            if ent is None or compatible(ent.type, wanted):
                found[e] = state.held_as[e]
    chosen, ambiguous = attributes.identified(found, lambda e: ruled_out(call, i, [e], view, state))
    if ambiguous:
        state.flags[i] = AMBIGUOUS
    if chosen is None:
        return None
    name, key = found[chosen]
    return Outcome(chosen, name, False, None, IDENTIFIER, key)


def _call_neighbours(call: Call, facts: List[Fact]) -> Dict[str, List[Tuple[str, float]]]:
    """Which of the call's keys and probed forms could be candidates for which: once, not per fact.

    An entity the call creates is one of its keys: a later fact finds it as
    pg_trgm would have, had the earlier fact been its own statement.
    """
    if len(facts) < 2:
        return {}
    folded = call.folded
    keyed = {folded.keys[i]: folded.trigrams[folded.keys[i]] for i in list(call.exact) + sorted(call.regular)}
    extra = sorted({f for i in call.regular
                    for f in candidates.split_forms(folded.keys[i], call.cfg, call.data).probed} - set(keyed))
    for form, joined in zip(extra, probe.trigrams_of(call.plpy, extra)):
        keyed[form] = trigrams.parse(joined)
    return trigrams.neighbours(keyed, candidates.probe_threshold(call.cfg))


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


def element_text(element: Any) -> str:
    """The text of a mentions element that parse_elements accepted (a string or an object)."""
    return element if isinstance(element, str) else element["text"]


def resolve_mentions_sql(plpy, bank_id, mentions, event_date):
    """resolve_mentions: one row per element, in order (the elements are one batch)."""
    with banks.bank_id_first(plpy, bank_id):
        elements = load_mentions(mentions)
    outcomes = resolve_call(plpy, bank_id, [Fact(_call_unit(), [], elements=elements)], event_date)[0]
    return [(i + 1, element_text(elements[i]), o.entity_id, o.canonical_name, o.created, o.score)
            for i, o in enumerate(outcomes)]


def single_attributes(raw: Optional[str]) -> Optional[Dict[str, str]]:
    """The ``attributes`` jsonb argument of a one-mention function (its text), checked as an element's."""
    return mentions_mod.check_attributes(None if raw is None else mentions_mod.load_json(raw, "attributes"),
                                         "attributes")


def _single(mention, nearby, resolve, etype=None, attrs=None):
    check_text(mention, "mention")
    if resolve is None:
        raise InputError("must not be null", "resolve", "22004")
    check_type(etype, "mention_type")
    it = item(mention, "mention", [x for x in (nearby or []) if x is not None], None, resolve, "mention", etype,
              single_attributes(attrs), "attributes")
    it["date_argument"] = "event_date"
    return it


def resolve_mention_sql(plpy, bank_id, mention, nearby, event_date, resolve, attrs=None):
    """resolve_mention: the one mention's row (a write: provenance and statistics)."""
    with banks.bank_id_first(plpy, bank_id):
        it = _single(mention, nearby, resolve, None, attrs)
    o = resolve_call(plpy, bank_id, [Fact(_call_unit(), [it])], event_date)[0][0]
    return [(o.entity_id, o.canonical_name, o.created, o.score)]


def lookup_mention_sql(plpy, bank_id, mention, nearby, event_date, mention_type=None, attrs=None):
    """lookup_mention: what resolve_mention would decide, writing nothing."""
    with banks.bank_id_first(plpy, bank_id):
        it = _single(mention, nearby, True, mention_type, attrs)
    o = resolve_call(plpy, bank_id, [Fact("", [it])], event_date, write=False)[0][0]
    if o.created:
        # A homonym nothing tells apart from its namesakes would be created: ambiguous, as provenance records it.
        return [(None, None, o.score, AMBIGUOUS if o.decision == AMBIGUOUS else NEW)]
    return [(o.entity_id, o.canonical_name, o.score, o.decision)]


def last_call_statements(plpy):
    """How many statements the last resolve or explain call of this session ran."""
    return db.last_call_statements()
