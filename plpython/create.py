"""The entities a fact creates: literal and label names not found, and clusters of new names.

A fact may name one new entity under several spellings ("Wren 🕯️" and "Wren"):
its new names are clustered (union-find over similar, word-compatible pairs,
clustering.py) so it creates one entity, not near-duplicates. Clustering is
per fact: two facts of one statement are never joined by spelling alone. New
names of different types are never clustered together. The entities are
registered in the call's state (callstate.py) and written at the end of the
call (record.py). Pure: no database.
"""

from typing import Any, Dict, List, Optional, Set, Tuple

import attributes
import clustering
import trigrams
from callstate import CallState, Entity


def _first_date(indexes, keys, folded, members) -> Tuple[Optional[float], Optional[str]]:
    """The earliest event date among the mentions of the given keys."""
    dated = [(folded.epochs[i], folded.dates[i]) for i in indexes
             if keys[i] in members and folded.epochs[i] is not None]
    return min(dated) if dated else (None, None)


def fixed(items, indexes, folded, fixed_new: Dict[Tuple[str, Optional[str]], str], state: CallState
          ) -> Dict[Tuple[str, Optional[str]], Entity]:
    """Literal and label names not found: created spelled exactly as given."""
    made = {}
    for (key, etype), kind in sorted(fixed_new.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        text = next(items[i]["text"] for i in indexes if folded.keys[i] == key)
        epoch, date = _first_date(indexes, folded.keys, folded, {key})
        made[(key, etype)] = state.create(key, text, kind, etype, epoch, date)
    return made


def clusters(items, indexes, unresolved: List[int], folded, cfg, state: CallState,
             homonyms: Set[int] = frozenset(),
             distinguishing: Optional[Dict[int, Dict[str, str]]] = None) -> Dict[int, Entity]:
    """New names of the fact's regular mentions, clustered per type; item index -> its new entity.

    ``homonyms``: items whose every entity of their name an attribute ruled
    out; the entity of their cluster is created as a homonym.
    ``distinguishing``: items' distinguishing attributes; an item whose value
    conflicts with its cluster's (two Maria Schmidts born apart, named in one
    fact) is another entity of the name, a homonym (_apart).
    """
    out: Dict[int, Entity] = {}
    by_type: Dict[Optional[str], List[int]] = {}
    for i in unresolved:
        by_type.setdefault(folded.types[i], []).append(i)
    for etype in sorted(by_type, key=lambda t: t or ""):
        group = by_type[etype]
        forms: Dict[str, Dict[str, Any]] = {}
        for i in group:
            form = forms.setdefault(folded.keys[i], {"key": folded.keys[i], "spellings": {}, "first_seen": None})
            form["spellings"][items[i]["text"]] = form["spellings"].get(items[i]["text"], 0) + 1
        pairs = []
        if 2 <= len(forms) <= cfg["intrabatch_max_names"]:
            pairs = trigrams.similar_pairs(forms, folded.trigrams, cfg["intrabatch_similarity"])
        grouped = clustering.cluster_forms(list(forms.values()), pairs, cfg["intrabatch_max_names"])
        made: Dict[str, Entity] = {}
        for c in sorted({id(c): c for c in grouped.values()}.values(), key=lambda c: c.key):
            epoch, date = _first_date(indexes, folded.keys, folded, set(c.members))
            homonym = any(folded.keys[i] == c.key for i in group if i in homonyms)
            made[c.key] = state.create(c.key, c.name, "regular", etype, epoch, date, homonym)
        for i in group:
            out[i] = made[grouped[folded.keys[i]].key]
        if distinguishing:
            _apart(group, out, distinguishing, state)
    return out


def _apart(group: List[int], out: Dict[int, Entity], distinguishing: Dict[int, Dict[str, str]],
           state: CallState) -> None:
    """Within each new entity, items whose distinguishing values conflict go to homonyms of it, in fact order."""
    parts: Dict[str, List[Tuple[Entity, Dict[str, Set[str]]]]] = {}
    for i in group:
        first = out[i]
        mine = distinguishing.get(i) or {}
        kept = parts.setdefault(first.id, [(first, {})])
        for ent, values in kept:
            if not attributes.fit(mine, values).conflicts:
                break
        else:
            ent, values = state.create(first.key, first.name, first.kind, first.type, *state.first_dates[first.id],
                                       True), {}
            kept.append((ent, values))
        for name, value in mine.items():
            values.setdefault(name, set()).add(value)
        out[i] = ent
