"""The signals that score a candidate, and the records a decision is made of.

A candidate (an existing entity probed for a mention) is screened
(screen.py), scored here, and the best one chosen (decide.py). Each signal is
one small function; ``score`` combines them with the bank's weights.

Names are lowercased by PostgreSQL before they get here; pg_trgm similarities
are computed by PostgreSQL. Standard library only.
"""

# No ``from __future__ import annotations`` here: with string annotations,
# dataclasses look the class's module up in sys.modules, which a module
# executed from a table row may not be registered in yet.

import functools
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from difflib import SequenceMatcher
from typing import Any, Dict, FrozenSet, Iterable, Optional

# Decision codes, one per evaluated candidate (explain_mention's "decision").
CHOSEN = "chosen"                    # the mention resolves to this entity
OUTSCORED = "outscored"              # passed the threshold, lost to a better one
BELOW_THRESHOLD = "below_threshold"  # scored, but under the threshold
LABEL_ROW = "label_row"              # a label entity: never a fuzzy candidate
BELOW_FLOOR = "below_floor"          # trigram similarity under merge_min_similarity
WORD_MISMATCH = "word_mismatch"      # failed the numbers rule or the word check
# The enhanced profile (docs/accuracy.md):
TYPE_MISMATCH = "type_mismatch"      # a typed mention, an entity of another type
AMBIGUOUS = "ambiguous"              # one of several the name fits; the context chose another or none
NEEDS_CONTEXT = "needs_context"      # matched by an initial or a nickname only, without enough context
ATTRIBUTE_CONFLICT = "attribute_conflict"  # holds another value of a distinguishing attribute (birth_date)

# Scores and similarities are compared at this many decimals (see passes_threshold).
PRECISION = 6


@dataclass
class Candidate:
    """An existing entity probed for a mention: ``key``, its name folded by PostgreSQL's lower()."""

    id: Any
    key: str
    trigram_similarity: float
    last_seen: Optional[datetime]
    is_label: bool = False
    # partner key (folded canonical name) -> degree (distinct entities it co-occurs with)
    partners: Dict[str, int] = field(default_factory=dict)
    # the type the entity was created with (lowercased), None when untyped
    entity_type: Optional[str] = None
    # the enhanced profile's levers: the form of the mention that found the
    # candidate (a nickname's given name, the name without legal forms; None:
    # the mention itself), and how the word check passed (initial, variant,
    # org_suffix; None: equal words)
    form: Optional[str] = None
    how: Optional[str] = None
    # Created as a homonym (entities.homonym): another entity of the bank
    # holds its name and type first.
    homonym: bool = False
    # Of the mention's neighbourhood, read past the probe's limit where it binds (candidates.py): kept
    # whatever its rank.
    near: bool = False


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
    # The enhanced profile's lever that decided, when one did (explain shows it).
    lever: Optional[str] = None
    # The bare entity (or an initial's) chosen as nothing told apart the
    # entities a name fits (decide._by_context, _initial_told): the one of
    # them the context leaned to, short of deciding (None: no such one).
    leaning: Optional[str] = None
    # Chosen by its score among entities a name fits that nothing told apart,
    # with no bare entity to hold the mention (decide._untold).
    by_score: bool = False


# A call scores one name against the same candidates once per mention of it
# (a 500-fact INSERT: 29,000 scores, of 1,300 names); the ratio is a pure
# function of the two strings, kept for the session like words.py's checks.
@functools.lru_cache(maxsize=16384)
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
    return damped_share(distinct_nearby(nearby, mention), partners)


def damped_share(names: FrozenSet[str], partners: Dict[str, int]) -> float:
    """cooccurrence_score for nearby names already made distinct."""
    if not names:
        return 0.0
    # A partner is worth 1/sqrt(degree): a hub like "user", next to 1,400
    # entities, is worth 0.027, so it cannot vouch for anyone; a partner
    # seen with one entity only is worth 1.0. fsum makes the total exact and
    # independent of set order, so resolve and explain get the same bits.
    total = math.fsum(1.0 / math.sqrt(max(partners[n], 1)) for n in names if n in partners)
    return total / len(names)


def specificity(names: FrozenSet[str], partners: Dict[str, int], entities: int) -> float:
    """How well the nearby names single the candidate out in a bank of ``entities``: 0 (a hub) to 1.

    The inverse document frequency of its most specific partner among them,
    log(N/d) / log(N) for a partner seen with d of the bank's N entities: 1
    for a partner seen with this entity only, 0 for one seen with every
    entity. A hub is next to a large share of the bank whatever its degree:
    "town hall" next to 23 of 34 entities (0.11), a state next to 364 of 879
    (0.13); a suburb next to 9 of 879 entities is specific (0.68). The
    co-occurrence signal's 1/sqrt(d) cannot tell them apart: it credits the
    small bank's hub 0.21 and the large bank's suburb 0.33.
    """
    if entities < 2:
        return 0.0
    degrees = [max(partners[n], 1) for n in names if n in partners]
    if not degrees:
        return 0.0
    return max(0.0, math.log(entities / min(degrees)) / math.log(entities))


def fewest_entities(names: FrozenSet[str], partners: Dict[str, int], at_least: float) -> Optional[int]:
    """The fewest entities a bank must hold for ``names`` to be ``at_least`` specific of the candidate
    (specificity rounded to PRECISION); None where no nearby name is its partner.

    Specificity only grows with the bank (log(N/d) / log(N) rises with N), so
    "is it specific enough?" is "does the bank hold this many?": a count that
    stops there, where the bank's exact size costs a scan of all of it.
    """
    if not any(n in partners for n in names):
        return None

    def enough(entities: int) -> bool:
        return round(specificity(names, partners, entities), PRECISION) >= at_least

    high = 2
    while not enough(high):
        if high > 1 << 62:  # at_least above 1: no bank is large enough
            return None
        high *= 2
    low = high // 2  # not enough (or below 2): the answer is in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


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


def is_identical(cand: Candidate) -> bool:
    """The same name as the mention: identical trigram sets, or one organisation's name."""
    if cand.how == "org_suffix":
        return True
    return cand.form is None and round(cand.trigram_similarity, PRECISION) >= 1.0


def score(mention: str, cand: Candidate, context: FrozenSet[str], event_date: Optional[datetime],
          settings: Dict[str, Any]) -> Evaluation:
    """Score a candidate that passed the screen: every signal, the weighted total."""
    name = name_similarity(cand.form or mention, cand.key)
    cooc = damped_share(context, cand.partners)
    recency = recency_score(event_date, cand.last_seen, settings["recency_window_days"])
    if is_identical(cand):
        # Identical trigram sets: the same words, differing only in case,
        # punctuation or decoration ("Wren 🎵"/"Wren", "GPT-4"/"GPT 4"), or
        # (enhanced) only in legal forms ("Acme Inc"/"ACME Corp").
        total = 1.0
    else:
        total = weighted(settings, name, cooc, recency)
    return Evaluation(cand, True, name, cooc, recency, total, BELOW_THRESHOLD)


def weighted(settings: Dict[str, Any], name: float, cooc: float, recency: float) -> float:
    """The score of the signals: their weighted sum."""
    return (settings["name_weight"] * name + settings["cooccurrence_weight"] * cooc
            + settings["recency_weight"] * recency)
