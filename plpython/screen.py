"""Screening candidates before they are scored: label rows, the floor, the word check.

Screening needs neither the nearby names nor the partners, so a batch screens
every mention's candidates first and fetches the partners of the survivors
only. Standard library only.
"""

import dataclasses
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

import names as names_mod
import words
from scoring import (BELOW_FLOOR, LABEL_ROW, PRECISION, TYPE_MISMATCH, WORD_MISMATCH, Candidate, Evaluation,
                     is_identical)
from settings import BARE_NAMES, NAME_VARIANTS, ORG_SUFFIXES, TYPED_MENTIONS, lever


# The mention types an organisation's legal forms apply to (an untyped mention too).
ORG_TYPES = (None, "organization", "organisation", "org", "company")


def identical_is_final(settings: Dict[str, Any]) -> bool:
    """True iff no candidate can score more than 1.0, the score of identical trigram sets."""
    # Every signal lies in [0, 1] and IEEE rounding is monotonic, so the
    # computed w1*name + w2*cooc + w3*recency is at most the computed
    # w1 + w2 + w3 (summed in the same order): when that is at most 1.0, a
    # candidate scoring 1.0 can be neither beaten nor, being earlier in probe
    # order, lose a tie. (A negative weight, which validation refuses, would
    # bound its term by 0.)
    return (max(settings["name_weight"], 0.0) + max(settings["cooccurrence_weight"], 0.0)
            + max(settings["recency_weight"], 0.0)) <= 1.0


# One candidate screened: its evaluation when it was skipped before scoring
# (label row, under the floor, word mismatch), None when it is to be scored.
Screened = Tuple[Candidate, Optional[Evaluation]]


def stops_at_identical(mention: str, settings: Dict[str, Any]) -> Optional[str]:
    """How screening may stop at an identical name (see ``screen``): "first", "block" or None (never).

    Never for a one-word mention under the bare_names lever: every entity
    with the word in its name may fit, and the context chooses among all of
    them. Under the typed_mentions lever, not before the end of the block of
    identical trigram sets (they come first in probe order): "Jordan" the
    person and "Jordan" the country are both identical to "jordan".
    Never for a mention with an initial under the name_variants lever: the
    full names the initial covers may be told by context over the entity of
    the initial itself (decide._initial_told).
    """
    if not identical_is_final(settings):
        return None
    if lever(settings, BARE_NAMES) and len(words.split_words(mention)) == 1:
        return None
    if lever(settings, NAME_VARIANTS) and any(len(w) == 1 for w in words.split_words(mention)):
        return None
    return "block" if lever(settings, TYPED_MENTIONS) else "first"


class _Rules(NamedTuple):
    """What screening a mention needs besides the candidate: its levers, resolved once."""

    mention: str
    floor: float
    mention_type: Optional[str]                  # compared only under typed_mentions
    orgs: Optional[names_mod.NameData]           # org_suffixes
    variants: Optional[names_mod.NameData]       # name_variants: nicknames and given names


def _rules(mention, settings, mention_type, names) -> _Rules:
    typed = mention_type if lever(settings, TYPED_MENTIONS) else None
    orgs = names if names is not None and lever(settings, ORG_SUFFIXES) and mention_type in ORG_TYPES else None
    variants = names if names is not None and lever(settings, NAME_VARIANTS) else None
    return _Rules(mention, settings["merge_min_similarity"], typed, orgs, variants)


def _skip(cand: Candidate, decision: str, tokens=None, detail=None, lever_name=None) -> Screened:
    return cand, Evaluation(cand, tokens, None, None, None, None, decision, detail, lever_name)


def _screen_one(cand: Candidate, r: _Rules) -> Screened:
    """One candidate: (it, the evaluation that skips it) or (it, possibly with how it matched, None)."""
    if cand.is_label:
        # Labels resolve by exact match only: "pedagogy:scaffolding" must
        # never be fuzzy-merged into a neighbouring value.
        return _skip(cand, LABEL_ROW)
    if r.mention_type is not None and cand.entity_type is not None and cand.entity_type != r.mention_type:
        # "Jordan" the person is no candidate for "Jordan" the country.
        return _skip(cand, TYPE_MISMATCH, lever_name=TYPED_MENTIONS)
    # pg_trgm returns a float4: 0.35 arrives as 0.3499999940395355, so the
    # similarity is compared at 6 decimals, like the score.
    if round(cand.trigram_similarity, PRECISION) < r.floor:
        # "Tigran"/"Iran" is 0.80 by sequence ratio but 0.20 by trigram:
        # short names that merely look alike are not merged on history.
        return _skip(cand, BELOW_FLOOR)
    org = names_mod.organisation_words(r.mention, cand.key, r.orgs) if r.orgs is not None else None
    if org is True and not is_identical(cand):
        # "Acme Inc" / "ACME Corp": one name, its legal forms aside.
        return dataclasses.replace(cand, how="org_suffix"), None
    if org is False:
        # "Acme Bank" is not "Acme Inc"; "Innotech LLC" is not "Initech LLC".
        return _skip(cand, WORD_MISMATCH, False, "words", ORG_SUFFIXES)
    if r.variants is not None and names_mod.different_given_names(r.mention, cand.key, r.variants):
        # "Jean Kerr" is not "Joan Kerr": two given names, one letter apart.
        return _skip(cand, WORD_MISMATCH, False, "given_names", NAME_VARIANTS)
    equivalents = r.variants.equivalents if r.variants is not None else None
    why, how = words.tokens_match(r.mention, cand.key, equivalents)
    if why is not None:
        return _skip(cand, WORD_MISMATCH, False, why)
    if how is not None and equivalents is not None:
        cand = dataclasses.replace(cand, how=how)
    return cand, None


def screen(mention: str, candidates: Iterable[Candidate], settings: Dict[str, Any],
           stop_at_identical: bool = False, mention_type: Optional[str] = None,
           names: Optional[names_mod.NameData] = None) -> List[Screened]:
    """The first phase of ``evaluate``: label rows, types, the floor and the word check, in probe order.

    Returns (candidate, evaluation) for each candidate examined: the
    evaluation of one skipped before scoring, None for one to be scored (a
    copy of it when a lever set how it matched).
    Needs neither the nearby names nor the partners, so a batch can screen
    every mention's candidates before fetching the partners of the survivors.

    With ``stop_at_identical`` (resolution, not explain), screening stops
    after the first candidate with identical trigram sets that passes the
    word check (or, "block", at the first one after it that is not
    identical), as ``stops_at_identical`` allows: it scores 1.0, and no later
    candidate can change the choice or the best score.
    """
    stop = stops_at_identical(mention, settings) if stop_at_identical else None
    rules = _rules(mention, settings, mention_type, names)
    found = False
    out: List[Screened] = []
    for cand in candidates:
        if found and (stop == "first" or round(cand.trigram_similarity, PRECISION) < 1.0):
            break
        row = _screen_one(cand, rules)
        out.append(row)
        found = found or (stop is not None and row[1] is None and is_identical(row[0]))
    return out


def settled_by_identical(mention: str, candidates: List[Candidate], settings: Dict[str, Any],
                         mention_type: Optional[str] = None, names: Optional[names_mod.NameData] = None) -> bool:
    """True iff screening these candidates stops at an identical name that passes (``screen``).

    Then no candidate after them can change the choice or the best score: a
    probe's first rows, those of similarity 1.0, decide the mention.
    """
    if stops_at_identical(mention, settings) is None:
        return False
    return any(skipped is None and is_identical(c)
               for c, skipped in screen(mention, candidates, settings, True, mention_type, names))
