"""Screening candidates before they are scored: label rows, the floor, the word check.

Screening needs neither the nearby names nor the partners, so a batch screens
every mention's candidates first and fetches the partners of the survivors
only. Standard library only.
"""

from typing import Any, Dict, Iterable, List, Optional, Tuple

import words
from scoring import (BELOW_FLOOR, LABEL_ROW, PRECISION, WORD_MISMATCH, Candidate, Evaluation)


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


def screen(mention: str, candidates: Iterable[Candidate], settings: Dict[str, Any],
           stop_at_identical: bool = False) -> List[Screened]:
    """The first phase of ``evaluate``: label rows, the floor and the word check, in probe order.

    Returns (candidate, evaluation) for each candidate examined: the
    evaluation of one skipped before scoring, None for one to be scored.
    Needs neither the nearby names nor the partners, so a batch can screen
    every mention's candidates before fetching the partners of the survivors.

    With ``stop_at_identical`` (resolution, not explain), screening stops
    after the first candidate with identical trigram sets that passes the
    word check, when ``identical_is_final``: it scores 1.0, and no later
    candidate can change the choice or the best score.
    """
    floor = settings["merge_min_similarity"]
    stop = stop_at_identical and identical_is_final(settings)
    out: List[Screened] = []
    for cand in candidates:
        if cand.is_label:
            # Labels resolve by exact match only: "pedagogy:scaffolding" must
            # never be fuzzy-merged into a neighbouring value.
            out.append((cand, Evaluation(cand, None, None, None, None, None, LABEL_ROW)))
            continue
        trigram = round(cand.trigram_similarity, PRECISION)
        # pg_trgm returns a float4: 0.35 arrives as 0.3499999940395355, so the
        # similarity is compared at 6 decimals, like the score.
        if trigram < floor:
            # "Tigran"/"Iran" is 0.80 by sequence ratio but 0.20 by trigram:
            # short names that merely look alike are not merged on history.
            out.append((cand, Evaluation(cand, None, None, None, None, None, BELOW_FLOOR)))
            continue
        why = words.tokens_check(mention, cand.name)
        if why is not None:
            out.append((cand, Evaluation(cand, False, None, None, None, None, WORD_MISMATCH, why)))
            continue
        out.append((cand, None))
        if stop and trigram >= 1.0:
            break
    return out
