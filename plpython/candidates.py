"""A mention's candidates: the bank as the call read it, combined with what the call did since.

The call reads the bank once, before its first fact (``read_view``): the
exact look-up (names, aliases, remembered forms) and the trigram probe, for
every key of the call and, in the enhanced profile, every probe form of a key
(the name without legal forms, the name with a nickname replaced by its given
name: names.py). A fact's candidates for a mention (``for_mention``) are the
bank's, as probed, and the entities the call created that pg_trgm would have
found, merged per entity in probe order.
"""

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import db
import decide
import memory
import names as names_mod
import neighbourhood
import probe
import screen
import small_bank
from callstate import CallState
from mentions import datetime_of
from scoring import Candidate
from settings import NAME_VARIANTS, ORG_SUFFIXES, lever


def probe_threshold(cfg: Dict[str, Any]) -> float:
    """The pg_trgm threshold of the probe: a candidate under the floor can never be merged."""
    return max(cfg["candidate_similarity"], cfg["merge_min_similarity"])


def forms_of(key: str, cfg: Dict[str, Any], data: names_mod.NameData) -> List[str]:
    """The forms a key is probed with: itself, then (enhanced) without legal forms, with given names."""
    forms = [key]
    if lever(cfg, ORG_SUFFIXES):
        s = names_mod.stripped(key, data)
        if s is not None:
            forms.append(s)
    if lever(cfg, NAME_VARIANTS):
        forms.extend(f for f in names_mod.variant_forms(key, data) if f not in forms)
    return forms


class Forms(NamedTuple):
    """A key's other forms: probed by trigrams (without legal forms: "acme" finds "Acme Inc"), or looked
    up by exact name (a given name for a nickname: "robert smith"; a probe per form would cost as much
    again as the probe of the keys, since most names of people have some)."""

    probed: List[str]
    exact: List[str]


def split_forms(key: str, cfg: Dict[str, Any], data: names_mod.NameData) -> Forms:
    """The key's other forms (forms_of without the key), by how they are looked up."""
    others = forms_of(key, cfg, data)[1:]
    s = names_mod.stripped(key, data) if lever(cfg, ORG_SUFFIXES) else None
    return Forms([f for f in others if f == s], [f for f in others if f != s])


class View(NamedTuple):
    """What the call read of the bank before its first fact."""

    hits: Dict[str, List[probe.Hit]]             # exact names, aliases, remembered forms, by key or form
    candidates: Dict[str, List[Candidate]]       # pre-call probe, by key
    names: Dict[str, str]                        # candidate id -> canonical name
    pending: Dict[str, Tuple[Optional[float], bool]]
    forms: Dict[str, Forms]                      # key -> its other forms (enhanced profile)
    # (attribute, value) -> the bank's entities holding an identifying value of the call (attributes.holders)
    holders: Optional[Dict[tuple, List[Dict[str, Any]]]] = None
    # entity id -> attribute -> values: the distinguishing values of identical names read to settle a key
    held: Optional[Dict[str, Dict[str, Set[str]]]] = None


def read_view(plpy, bank, keys: List[str], literal_keys: List[str], regular_keys: List[str],
              memory_keys: List[str], cfg, data: names_mod.NameData,
              types: Optional[Dict[str, Set[Optional[str]]]] = None, prober=None,
              surviving: Optional[Callable[[Dict[str, List[Candidate]]], Tuple[Dict[str, List[List[Candidate]]],
                                                                                 Dict]]] = None,
              around: Optional[neighbourhood.Around] = None) -> View:
    """The exact look-up and the probe of a call: two statements (one more with queued dates, one more
    for a key whose identical names do not settle it). A small bank in a crowded table is read whole
    instead of probed through the index (small_bank.py): the same rows, from one statement.

    A key's other forms are looked up by exact name, with the keys: "bob
    smith" finds "Robert Smith" as its form "robert smith", "acme inc" finds
    "Acme" as "acme" (a trigram probe per form would cost as much again as
    the probe of the keys). ``types``: the mention types each regular key
    is resolved with (None: untyped only). ``prober``: what answers the
    probe instead of probe.candidates_and_identical, with its arguments and
    results (reresolve's memo of a plan's probes, plpython/reresolve.py).
    ``surviving``: given the identical names found per key, the ones each
    mention with a distinguishing attribute leaves (attributes.fit), per key,
    and the values it read (View.held). A key is settled by its identical
    names only when what every mention leaves settles it; else it is probed
    in full (a near spelling may be the one when every Maria Schmidt the
    bank knows was born another day). ``around``: the call's nearby names and
    dates, for reading its neighbourhood instead of the full probe
    (neighbourhood.py), where that applies.
    """
    forms = {k: split_forms(k, cfg, data) for k in regular_keys}
    exact = {f for fs in forms.values() for f in fs.exact}
    # Every key by name: a regular name without trigrams ("!!!", "🔥") is
    # never a trigram candidate, but is the same entity when spelled the same.
    hits = probe.exact(plpy, bank.id, set(keys) | exact, set(literal_keys) | set(regular_keys), memory_keys,
                       memory.MEMORY_MIN_SCORE)
    # An alias names its entity exactly: no fuzzy probe for it.
    fuzzy = [k for k in regular_keys if probe.alias_hit(hits, k) is None]
    probed_forms = {f for k in fuzzy for f in forms[k].probed}
    narrow = _narrow_keys(fuzzy, forms, probed_forms, hits, cfg)
    full = sorted((set(fuzzy) - set(narrow)) | probed_forms)
    limit, threshold = cfg["max_candidates"], probe_threshold(cfg)
    small = small_bank.read(plpy, bank, full + narrow, db.call_setting("small_bank_probe"),
                            db.call_setting("table_rows"))
    read_around: Set[str] = set()
    if small is None:
        by_key, identical, names, read_around = _probe(plpy, bank, full, narrow, limit, threshold, hits, forms,
                                                       cfg, data, prober, around)
    else:
        by_key, names = small.candidates(full, limit, threshold)
        identical, identical_names = small.candidates(narrow, limit, threshold, identical_only=True)
        names.update(identical_names)
    left, held = surviving(identical) if surviving is not None and identical else ({}, {})
    unsettled = []
    for k, rows in identical.items():
        if all(screen.settled_by_identical(k, some, cfg, t, data)
               for some in [rows] + left.get(k, []) for t in (types or {}).get(k) or {None}):
            by_key[k] = rows
        else:
            unsettled.append(k)
    if unsettled:
        # Rare: no identical name passes the screen (a word or type mismatch),
        # or an attribute rules every one out.
        rest, rest_names = probe.candidates(plpy, bank.id, unsettled, limit) if small is None \
            else small.candidates(unsettled, limit, threshold)
        by_key.update(rest)
        names.update(rest_names)
    bound = [k for k in sorted(set(full) | set(unsettled)) if k not in read_around and len(by_key.get(k, ())) >= limit]
    if bound and around is not None and neighbourhood.counts(cfg):
        _add_neighbourhood(plpy, bank, bound, by_key, names, threshold, around, hits, forms, cfg, data)
    for f in exact:
        for h in hits.get(f, ()):
            names.setdefault(h.id, h.name)
    pending = {}
    if bank.pending:
        ids = [c.id for cands in by_key.values() for c in cands] + [h.id for f in exact for h in hits.get(f, ())]
        pending = probe.pending_dates(plpy, bank.id, ids)
    return View(hits, by_key, names, pending, forms, held=held)


def _probe(plpy, bank, full: List[str], narrow: List[str], limit: int, threshold: float, hits,
           forms: Dict[str, Forms], cfg, data, prober, around: Optional[neighbourhood.Around]):
    """The probe of a call's keys: in full and for identical names (narrow), or, where the call may read
    its neighbourhood instead (neighbourhood.py), that for the full keys.

    Returns (candidates by key, identical candidates by narrow key, every candidate's name, the keys whose
    candidates are their neighbourhood's).
    """
    if prober is not None or around is None or not full or not neighbourhood.applies(
            cfg, db.call_setting("neighbourhood_probe"), db.call_setting("table_rows")) \
            or (bank.isolated and not db.leakproof_probe(plpy)):
        by_key, identical, names = (prober or probe.candidates_and_identical)(plpy, bank.id, full, narrow, limit)
        return by_key, identical, names, set()
    by_key, identical, names = probe.candidates_and_identical(plpy, bank.id, [], narrow, limit)
    read, read_names = _neighbourhood(plpy, bank, full, threshold, around, hits, forms, cfg, data)
    by_key.update(read)
    names.update(read_names)
    return by_key, identical, names, set(full)


# -- where the probe's limit binds -------------------------------------------------------------
#
# The probe keeps a key's max_candidates most similar names. Where the limit
# binds (a first name some thousands of the bank's names hold), the best of a
# mention's neighbourhood (a partner, an entity seen yesterday) may be ranked
# past it, and the probe alone would never score the one candidate that can
# win. So, in the enhanced profile where the neighbourhood suffices
# (neighbourhood.counts), a key's candidates are its probe's and its whole
# neighbourhood (docs/design.md 3.11): a key the probe cut at the limit has
# its neighbourhood read and added. A call that reads its neighbourhood
# instead of probing takes all of it, uncut: the candidates the two ways
# differ by are then outside every neighbourhood, which changes no decision.


def _neighbourhood(plpy, bank, keys: List[str], threshold: float, around: neighbourhood.Around, hits,
                   forms: Dict[str, Forms], cfg, data) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
    """Every candidate of the keys' neighbourhood (the call's union), uncut: by key, and their names."""
    near = _to_probed(around.near, forms)
    fit_words = _to_probed({k: decide.fit_words(k, cfg, data) for k in forms}, forms)
    found = {h.id for rows in hits.values() for h in rows}
    rows = neighbourhood.read(plpy, bank.id, keys, around._replace(near=near, ids=around.ids | found),
                              threshold, cfg, data, fit_words)
    return rows.candidates(keys, None, threshold, near=True)


def _add_neighbourhood(plpy, bank, keys: List[str], by_key: Dict[str, List[Candidate]], names: Dict[str, str],
                       threshold: float, around: neighbourhood.Around, hits, forms: Dict[str, Forms], cfg,
                       data) -> None:
    """The keys' neighbourhoods added to their candidates, each candidate once, in probe order.

    A call of several facts adds every candidate its probe found for any key:
    an earlier fact may go to one, which fact by fact is then recent for the
    later facts, of their neighbourhood where the limit cuts it from their
    keys' probes (a few more rows, of no neighbourhood, change no decision).
    """
    if around.facts > 1:
        around = around._replace(ids=around.ids | {c.id for cands in by_key.values() for c in cands})
    read, read_names = _neighbourhood(plpy, bank, keys, threshold, around, hits, forms, cfg, data)
    for k in keys:
        near = {c.id: c for c in read.get(k, ())}
        by_key[k] = sorted([near.pop(c.id, c) for c in by_key.get(k, ())] + list(near.values()),
                           key=probe.order_key)
    for i, n in read_names.items():
        names.setdefault(i, n)


def _to_probed(of_key: Dict[str, Iterable[str]], forms: Dict[str, Forms]) -> Dict[str, Set[str]]:
    """What each mention key has, given to every key it is probed by: itself and its probed forms."""
    out: Dict[str, Set[str]] = {}
    for k, values in of_key.items():
        for f in [k] + (forms[k].probed if k in forms else []):
            out.setdefault(f, set()).update(values)
    return out


# -- the probe of identical names ------------------------------------------------------------
#
# A key whose screening stops at an identical name (screen.stops_at_identical)
# is decided by the first rows of its probe, those of similarity 1.0, when one
# of them passes the screen: it scores 1.0, and no later candidate can change
# the choice or the best score. The bank's rows of similarity 1.0 come from
# one descent of the btree over their trigram sets' key (probe.SQL_PROBE,
# migration 0024), where the probe at the similarity threshold reads every
# posting list of the key's trigrams; the entities the call creates merge
# into them in probe order as into the full list. A key none of whose
# identical rows passes (for a type it is resolved with) is probed in full
# after. Under row-level security (a bank-bound role) an index answers a
# condition only through LEAKPROOF functions: trigram_key() is one, so the
# identical probe uses its btree there too, on Citus as well (whose trigram
# index keeps pg_trgm's operators, which are not: migration 0012).


def _narrow_keys(fuzzy: List[str], forms: Dict[str, Forms], probed_forms: Set[str], hits, cfg) -> List[str]:
    """The keys worth probing for identical names first: a name of the bank, stopping at it, no probed forms.

    Forms looked up by exact name are candidates of similarity 1.0 (to the
    form): they join the identical rows, as in the full list. A key that is
    also another key's probed form keeps its full probe: that key's
    candidates are read from it.
    """
    return sorted(k for k in set(fuzzy)
                  if not forms[k].probed and k not in probed_forms
                  and screen.stops_at_identical(k, cfg) is not None
                  and any(h.via == "name" and h.kind != "label" for h in hits.get(k, ())))


def _form_candidates(form: str, view: View, state: CallState) -> List[Candidate]:
    """The entities named exactly by a form, as candidates found by it (similarity 1.0 to the form)."""
    out = [Candidate(h.id, h.key, 1.0, datetime_of(h.last_seen), entity_type=h.type, form=form, homonym=h.homonym)
           for h in view.hits.get(form, ()) if h.via == "name" and h.kind != "label"]
    out.extend(Candidate(e.id, e.key, 1.0, None, entity_type=e.type, form=form, homonym=e.homonym)
               for e in state.created.get(form, ()) if e.kind != "label")
    return out


def for_mention(key: str, view: View, state: CallState, cfg) -> List[Candidate]:
    """The key's candidates in probe order: the bank's as probed, and those the call created.

    With other forms (enhanced profile), one entry per entity: found by the
    form most similar to it, the key itself on a tie.
    """
    bank_side = view.candidates.get(key, [])
    mine = state.created_candidates(key)
    forms = view.forms.get(key)
    if forms is None or not (forms.probed or forms.exact):
        if not mine:
            return _cut(bank_side, state, cfg)
        return _cut(sorted(bank_side + mine, key=probe.order_key), state, cfg)
    found = bank_side + mine
    for f in forms.probed:
        found.extend(dataclasses.replace(c, form=f)
                     for c in view.candidates.get(f, []) + state.created_candidates(f))
    for f in forms.exact:
        found.extend(_form_candidates(f, view, state))
    best: Dict[str, Candidate] = {}
    for c in found:
        old = best.get(c.id)
        if old is None or c.trigram_similarity > old.trigram_similarity:
            best[c.id] = c
    return _cut(sorted(best.values(), key=probe.order_key), state, cfg)


def _cut(ranked: List[Candidate], state: CallState, cfg) -> List[Candidate]:
    """The probe's limit on candidates in probe order; those of the neighbourhood stay whatever their rank.

    So do, where the neighbourhood counts, the entities an earlier fact of the
    call went to or created: fact by fact they would be in the bank as those
    facts left it, recent and partners of the names they came with, and
    scored past the limit as of the neighbourhood, so one statement of many
    facts decides as one statement per fact. The few of no neighbourhood it
    keeps too change no decision (docs/design.md 3.11).
    """
    limit = cfg["max_candidates"]
    if len(ranked) <= limit:
        return ranked
    touched = (state.latest.keys() | state.by_id.keys()) if neighbourhood.counts(cfg) else set()
    return ranked[:limit] + [c for c in ranked[limit:] if c.near or c.id in touched]


def effective_last_seen(c: Candidate, view: View, state: CallState):
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


def name_of(c: Candidate, view: View, state: CallState) -> str:
    """A candidate's canonical name as written."""
    if state.is_new(c.id):
        return state.by_id[c.id].name
    return view.names[c.id]
