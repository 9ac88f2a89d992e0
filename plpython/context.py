"""A fact's context: the partners of its candidates among its nearby names, with their degrees.

What the bank knows (one statement, probe.context) combined with what the
earlier facts of the call did (callstate.py): a pair the call formed adds a
partner, and adds to a degree only when the bank did not have it already.
Under the context_by_entity lever a nearby name also reaches its entity through
an alias or its name without legal forms ("Acme Inc" is the partner "Acme").
"""

from typing import Dict, Iterable, Set

import names as names_mod
import probe
from callstate import CallState, pair
from settings import CONTEXT_BY_ENTITY, ORG_SUFFIXES, lever


def near_forms(near_names: Iterable[str], cfg, data: names_mod.NameData) -> Dict[str, Set[str]]:
    """Each nearby name, and (context_by_entity) its form without legal forms: form -> the nearby names of that form.

    Two nearby names can share a form ("Acme" and "Acme Inc" both reach the
    entity Acme): the form stands for both, so what it reaches never depends
    on the order the names come in (a set's order changes from session to
    session).
    """
    out: Dict[str, Set[str]] = {}
    strip = lever(cfg, CONTEXT_BY_ENTITY) and lever(cfg, ORG_SUFFIXES)
    for n in near_names:
        if not n:
            continue
        out.setdefault(n, set()).add(n)
        if strip:
            s = names_mod.stripped(n, data)
            if s is not None:
                out.setdefault(s, set()).add(n)
    return out


def reached_entities(forms: Dict[str, Set[str]], bank_near: Dict[str, Set[str]],
                     state: CallState) -> Dict[str, Set[str]]:
    """The nearby name -> the entities it reaches through its forms: the bank's and the call's new ones.

    One entity, but a name can be an alias too, or (typed_mentions) the name of
    a person and of a place; labels are never partners.
    """
    reach: Dict[str, Set[str]] = {}
    for form, names in forms.items():
        entities = set(bank_near.get(form, ()))
        entities.update(ent.id for ent in state.created.get(form, ()) if ent.kind != "label")
        if entities:
            for name in names:
                reach.setdefault(name, set()).update(entities)
    return reach


def fill_partners(plpy, bank, survivors, near_names: Set[str], state: CallState, cfg,
                  data: names_mod.NameData) -> None:
    """Set each survivor's partners: {nearby name: degree} for the entities the names reach."""
    forms = near_forms(near_names, cfg, data)
    bank_ids = [c.id for c in survivors if not state.is_new(c.id)]
    involved = {c.id for c in survivors}
    for n in forms:
        involved.update(state.seen_keys.get(n, ()))
    ask = set()
    for e in involved:
        if state.is_new(e):
            continue
        for x in state.partners_of(e):
            if not state.is_new(x):
                ask.add(pair(e, x))
    # Candidates the call created have no pair in the bank; when their
    # partners among the nearby names are the call's too, the bank has
    # nothing to add.
    needs_bank = bool(bank_ids) or any(
        not state.is_new(x) and state.key_of.get(x) in forms for c in survivors for x in state.partners_of(c.id))
    by_alias = lever(cfg, CONTEXT_BY_ENTITY)
    ctx = probe.context(plpy, bank.id, bank_ids, forms, ask, bank.pending, by_alias, state.context_read) \
        if needs_bank else probe.Context({}, {}, set(), set())
    reach = reached_entities(forms, ctx.near, state)
    degree: Dict[str, int] = {}
    for n in set().union(*reach.values()) if reach else ():
        extra = sum(1 for x in state.partners_of(n)
                    if state.is_new(n) or state.is_new(x) or pair(n, x) not in ctx.known)
        degree[n] = ctx.degree.get(n, 0) + extra
    # From each candidate's partners to the names that reach them (not from
    # every name to every candidate: a fact of N mentions has N names).
    names_of: Dict[str, Set[str]] = {}
    for name, entities in reach.items():
        for n in entities:
            names_of.setdefault(n, set()).add(name)
    bank_partners: Dict[str, Set[str]] = {}
    for a, b in ctx.pairs:
        bank_partners.setdefault(a, set()).add(b)
    for c in survivors:
        c.partners = {}
        for n in bank_partners.get(c.id, set()) | state.partners_of(c.id):
            for name in names_of.get(n, ()):
                # Of the entities a name reaches, the partner seen with the fewest others.
                if name not in c.partners or degree[n] < c.partners[name]:
                    c.partners[name] = degree[n]
