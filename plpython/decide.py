"""Choosing among the scored candidates of one mention.

``evaluate`` (screen, then decide) is the one decision function: resolution
acts on its choice and explain_mention prints its evaluations, so the two agree
by construction. Standard library only.
"""

from datetime import datetime
from typing import Any, Dict, Iterable, List, Optional, Tuple

import scoring
from scoring import CHOSEN, OUTSCORED, PRECISION, Candidate, Evaluation, passes_threshold
from screen import Screened, screen


def best_evaluation(evaluations: Iterable[Evaluation]) -> Optional[Evaluation]:
    """Return the scored evaluation with the highest score, the first on a tie."""
    # Scores are compared at the threshold's precision, so float noise
    # (0.6000000000000001 against 0.6) cannot overturn the probe order.
    best = None
    best_rounded = 0.0
    for ev in evaluations:
        if ev.score is None:
            continue
        rounded = round(ev.score, PRECISION)
        if best is None or rounded > best_rounded:
            best, best_rounded = ev, rounded
    return best


def decide(mention: str, screened: Iterable[Screened], nearby: Iterable[str],
           event_date: Optional[datetime],
           settings: Dict[str, Any]) -> Tuple[List[Evaluation], Optional[Evaluation]]:
    """The second phase of ``evaluate``: score the screened survivors and choose among them."""
    threshold = settings["threshold"]
    context = scoring.distinct_nearby(nearby, mention)
    evaluations: List[Evaluation] = []
    scored: List[Evaluation] = []
    for cand, skipped in screened:
        if skipped is not None:
            evaluations.append(skipped)
            continue
        ev = scoring.score(mention, cand, context, event_date, settings)
        evaluations.append(ev)
        scored.append(ev)

    best = best_evaluation(scored)
    if best is None or not passes_threshold(best.score, threshold):
        # A duplicate is recoverable, a bad merge is not: nothing good enough
        # means a new entity, and every scored candidate says why.
        return evaluations, None
    for ev in scored:
        if ev is best:
            ev.decision = CHOSEN
        elif passes_threshold(ev.score, threshold):
            ev.decision = OUTSCORED
    return evaluations, best


def evaluate(mention: str, candidates: Iterable[Candidate], nearby: Iterable[str],
             event_date: Optional[datetime], settings: Dict[str, Any],
             stop_at_identical: bool = False) -> Tuple[List[Evaluation], Optional[Evaluation]]:
    """Evaluate candidates in probe order; return all evaluations and the chosen one (or None).

    ``candidates`` must be in probe order (trigram similarity descending,
    then id): a tie on score goes to the earlier one. ``settings`` are the
    effective settings. Decisions: label_row, below_floor, word_mismatch for
    candidates skipped before scoring; among the scored, the best one is
    "chosen" iff it passes the threshold; then every other scored candidate is
    "outscored" when it would have passed too, else "below_threshold". When the
    best does not pass, every scored candidate is "below_threshold".

    ``stop_at_identical`` (see ``screen``) returns the evaluations up to the
    first passing candidate with identical trigram sets only: the choice and
    the best score are the same as without it. Resolution uses it (through
    ``screen`` and ``decide``); explain_mention evaluates every candidate.
    """
    return decide(mention, screen(mention, candidates, settings, stop_at_identical),
                  nearby, event_date, settings)
