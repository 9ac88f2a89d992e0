"""Scoring candidates for one mention, and the decision among them.

``evaluate`` is the one decision function: ``resolve_*`` acts on its choice and
``explain_mention`` prints its evaluations, so the two agree by construction.

Names are lowercased by PostgreSQL before they get here; pg_trgm similarities
are computed by PostgreSQL. Standard library only.
"""

# No ``from __future__ import annotations`` here: with string annotations,
# dataclasses look the class's module up in sys.modules, which a module
# executed from a table row may not be registered in yet.

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from difflib import SequenceMatcher
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

import words

# Decision codes, one per evaluated candidate (explain_mention's "decision").
CHOSEN = "chosen"                    # the mention resolves to this entity
OUTSCORED = "outscored"              # passed the threshold, lost to a better one
BELOW_THRESHOLD = "below_threshold"  # scored, but under the threshold
LABEL_ROW = "label_row"              # a label entity: never a fuzzy candidate
BELOW_FLOOR = "below_floor"          # trigram similarity under merge_min_similarity
WORD_MISMATCH = "word_mismatch"      # failed the numbers rule or the word check

# Scores and similarities are compared at this many decimals (see passes_threshold).
PRECISION = 6


@dataclass
class Candidate:
    """An existing entity probed for a mention (name lowercased by PostgreSQL)."""

    id: Any
    name: str
    trigram_similarity: float
    last_seen: Optional[datetime]
    is_label: bool = False
    # lowered partner canonical name -> degree (distinct entities it co-occurs with)
    partners: Dict[str, int] = field(default_factory=dict)


@dataclass
class Evaluation:
    """The signals computed for one candidate and the decision taken on it.

    A signal is None when the decision was made before it was needed:
    a label row or a candidate under the floor has no word check, a word
    mismatch has no score.
    """

    candidate: Candidate
    tokens_compatible: Optional[bool]
    name_similarity: Optional[float]
    cooccurrence: Optional[float]
    recency: Optional[float]
    score: Optional[float]
    decision: str
    # Why the word check failed: "numbers" or "words" (None otherwise).
    detail: Optional[str] = None


def name_similarity(m: str, c: str) -> float:
    """Return difflib's ratio of the two lowered names, mention first."""
    return SequenceMatcher(None, m, c).ratio()


def distinct_nearby(nearby: Iterable[str], mention: Optional[str] = None) -> FrozenSet[str]:
    """Return the distinct non-blank nearby names, without the mention itself."""
    # A fact that says "Acme ... Acme" gives Acme one vote, not two, and a
    # mention is not its own context ("Alex" next to "Alex" proves nothing).
    return frozenset(n for n in nearby if n and not n.isspace() and n != mention)


def cooccurrence_score(nearby: Iterable[str], partners: Dict[str, int],
                       mention: Optional[str] = None) -> float:
    """Return the degree-damped share of nearby names that are partners of the candidate."""
    return _damped_share(distinct_nearby(nearby, mention), partners)


def _damped_share(names: FrozenSet[str], partners: Dict[str, int]) -> float:
    """cooccurrence_score for nearby names already made distinct."""
    if not names:
        return 0.0
    # A partner is worth 1/sqrt(degree): a hub like "user", next to 1,400
    # entities, is worth 0.027, so it cannot vouch for anyone; a partner
    # seen with one entity only is worth 1.0. fsum makes the total exact and
    # independent of set order, so resolve and explain get the same bits.
    total = math.fsum(1.0 / math.sqrt(max(partners[n], 1)) for n in names if n in partners)
    return total / len(names)


def _utc_if_naive(value: datetime) -> datetime:
    """Read a naive datetime as UTC (PostgreSQL timestamptz is UTC underneath)."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def recency_score(event_date: Optional[datetime], last_seen: Optional[datetime],
                  window_days: float) -> float:
    """Return max(0, 1 - d/window) for d days between the dates; 0 if either is missing."""
    if event_date is None or last_seen is None or window_days <= 0:
        return 0.0
    # Mixing aware and naive datetimes would raise; both are read as UTC.
    if (event_date.tzinfo is None) != (last_seen.tzinfo is None):
        event_date = _utc_if_naive(event_date)
        last_seen = _utc_if_naive(last_seen)
    days = abs((event_date - last_seen).total_seconds()) / 86400.0
    if days >= window_days:
        return 0.0
    return max(0.0, 1.0 - days / window_days)


def passes_threshold(score: float, threshold: float) -> bool:
    """True iff the score, rounded to 6 decimals, reaches the threshold."""
    # 0.4 + 0.2 is 0.6000000000000001 and 0.3 + 0.3 is 0.6 in binary floating
    # point: two scores equal on paper must get the same verdict.
    return round(score, PRECISION) >= threshold


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


def decide(mention: str, screened: Iterable[Screened], nearby: Iterable[str],
           event_date: Optional[datetime],
           settings: Dict[str, Any]) -> Tuple[List[Evaluation], Optional[Evaluation]]:
    """The second phase of ``evaluate``: score the screened survivors and choose among them."""
    threshold = settings["threshold"]
    name_weight = settings["name_weight"]
    cooc_weight = settings["cooccurrence_weight"]
    recency_weight = settings["recency_weight"]
    window = settings["recency_window_days"]
    context = distinct_nearby(nearby, mention)

    evaluations: List[Evaluation] = []
    scored: List[Evaluation] = []
    for cand, skipped in screened:
        if skipped is not None:
            evaluations.append(skipped)
            continue
        name = name_similarity(mention, cand.name)
        cooc = _damped_share(context, cand.partners)
        recency = recency_score(event_date, cand.last_seen, window)
        if round(cand.trigram_similarity, PRECISION) >= 1.0:
            # Identical trigram sets: the same words, differing only in case,
            # punctuation or decoration ("Wren 🎵"/"Wren", "GPT-4"/"GPT 4").
            score = 1.0
        else:
            score = name_weight * name + cooc_weight * cooc + recency_weight * recency
        ev = Evaluation(cand, True, name, cooc, recency, score, BELOW_THRESHOLD)
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
