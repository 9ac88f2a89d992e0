"""pg_trgm's similarity, computed exactly from trigram sets PostgreSQL made.

The resolver asks PostgreSQL for each key's trigrams once (show_trgm, in the
fold statement); this module then compares keys with each other as pg_trgm
would, bit for bit: similarity = common / (|a| + |b| - common), computed in
single precision (pg_trgm returns a float4). That lets a call find, without a
round trip, the entities it created itself that a later mention could match,
and the similar new names it clusters. Standard library only.
"""

import functools
import math
import struct
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

# Trigrams arrive joined by this character, which no trigram contains (pg_trgm
# keeps letters, digits and padding spaces, or prints a hex code).
SEPARATOR = "\x01"


def parse(joined: str) -> FrozenSet[str]:
    """A key's trigram set from show_trgm's elements joined by SEPARATOR."""
    return frozenset(joined.split(SEPARATOR)) if joined else frozenset()


def _float4(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def similarity(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """pg_trgm's similarity() of two trigram sets, as the float4 it returns."""
    # Both operands are small integers, exact in float32; dividing in double
    # and rounding once to float32 gives the correctly rounded float32
    # quotient (53 >= 2 * 24 + 2 bits: double rounding is innocuous).
    if not a or not b:
        return 0.0
    return of_counts(len(a & b), len(a), len(b))


def of_counts(common: int, size_a: int, size_b: int) -> float:
    """similarity() of two sets of these sizes sharing ``common`` trigrams."""
    return _float4(common / (size_a + size_b - common))


@functools.lru_cache(maxsize=1024)
def least_common(size: int, threshold: float) -> Optional[Tuple[int, ...]]:
    """For each size of another set (the index), the fewest trigrams it must share with a set of ``size`` to
    reach ``threshold``; size + 1 where no number can. Past the tuple's end, none can. None at a threshold
    of 0 or less, which every set reaches.

    The similarity grows with the trigrams shared (c / (|a| + |b| - c)), and
    float4 rounding keeps that order, so a set sharing fewer cannot reach it.
    Past |a| / t + 2 trigrams, |a| / |b| is below t by far more than float4's
    rounding.
    """
    if threshold <= 0:
        return None
    out = []
    for other in range(int(size / threshold) + 3):
        out.append(next((c for c in range(1, min(size, other) + 1) if of_counts(c, size, other) >= threshold),
                        size + 1))
    return tuple(out)


def prefix_length(size: int, threshold: float) -> int:
    """How many of a set's rarest trigrams another set reaching ``threshold`` must share one of.

    Two sets reach similarity t only if they share at least t * |a| trigrams
    (similarity <= common / |a|), so the other set holds one of any
    |a| - ceil(t * |a|) + 1 of a's trigrams. A margin for float4 rounding: a
    shorter required overlap only lengthens the prefix.
    """
    return size - max(1, math.ceil(threshold * size - 0.01)) + 1


def neighbours(trigrams: Dict[str, FrozenSet[str]], threshold: float) -> Dict[str, List[Tuple[str, float]]]:
    """For every key, the keys (itself included) whose similarity to it reaches ``threshold``.

    A similarity join by prefix filtering: each key's trigrams are ordered
    rarest first, and two keys can reach the threshold only if their first
    |k| - ceil(t * |k|) + 1 trigrams share one (similarity <= |b| / |a|, so
    the keys share at least t * |a| trigrams). The common trigrams that make
    nearly every pair share something are thus never walked; of the
    candidates found, those sharing enough trigrams (least_common) get their
    similarity.
    """
    keys = sorted(trigrams)
    if threshold <= 0:
        return {k: [(o, similarity(trigrams[k], trigrams[o])) for o in keys] for k in keys}
    frequency: Dict[str, int] = {}
    for key in keys:
        for t in trigrams[key]:
            frequency[t] = frequency.get(t, 0) + 1
    postings: Dict[str, List[str]] = {}
    prefixes: Dict[str, List[str]] = {}
    for key in keys:
        tri = sorted(trigrams[key], key=lambda t: (frequency[t], t))
        if not tri:
            continue
        prefix = tri[:prefix_length(len(tri), threshold)]
        prefixes[key] = prefix
        for t in prefix:
            postings.setdefault(t, []).append(key)
    out: Dict[str, List[Tuple[str, float]]] = {}
    for key in keys:
        found = []
        seen = set()
        mine = trigrams[key]
        least = least_common(len(mine), threshold)
        for t in prefixes.get(key, ()):
            for other in postings[t]:
                if other in seen:
                    continue
                seen.add(other)
                theirs = trigrams[other]
                if len(theirs) < len(least):
                    common = len(mine & theirs)
                    if common >= least[len(theirs)]:
                        found.append((other, of_counts(common, len(mine), len(theirs))))
        out[key] = found
    return out


def similar_pairs(keys: Iterable[str], trigrams: Dict[str, FrozenSet[str]],
                  threshold: float) -> List[Tuple[str, str]]:
    """Pairs of distinct keys whose similarity reaches ``threshold`` (in-batch clustering, one fact's new names)."""
    ordered = sorted(set(keys))
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]
            if similarity(trigrams[a], trigrams[b]) >= threshold]
