"""pg_trgm's similarity, computed exactly from trigram sets PostgreSQL made.

The resolver asks PostgreSQL for each key's trigrams once (show_trgm, in the
fold statement); this module then compares keys with each other as pg_trgm
would, bit for bit: similarity = common / (|a| + |b| - common), computed in
single precision (pg_trgm returns a float4). That lets a call find, without a
round trip, the entities it created itself that a later mention could match,
and the similar new names it clusters. Standard library only.
"""

import struct
from typing import Dict, FrozenSet, Iterable, List, Set, Tuple

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
    common = len(a & b)
    return _float4(common / (len(a) + len(b) - common))


class Reach:
    """A growing set of keys, searchable for the keys similar enough to a given one."""

    def __init__(self) -> None:
        self._trigrams: Dict[str, FrozenSet[str]] = {}
        self._index: Dict[str, Set[str]] = {}

    def add(self, key: str, trigrams: FrozenSet[str]) -> None:
        if key in self._trigrams:
            return
        self._trigrams[key] = trigrams
        for t in trigrams:
            self._index.setdefault(t, set()).add(key)

    def __bool__(self) -> bool:
        return bool(self._trigrams)

    def within(self, trigrams: FrozenSet[str], threshold: float) -> List[Tuple[str, float]]:
        """(key, similarity) of every key whose similarity reaches ``threshold`` (pg_trgm's %)."""
        if threshold <= 0:
            # Every key qualifies, sharing a trigram or not.
            seen: Set[str] = set(self._trigrams)
        else:
            seen = set()
            for t in trigrams:
                seen.update(self._index.get(t, ()))
        out = []
        for key in seen:
            sim = similarity(trigrams, self._trigrams[key])
            if sim >= threshold:
                out.append((key, sim))
        return out


def similar_pairs(keys: Iterable[str], trigrams: Dict[str, FrozenSet[str]],
                  threshold: float) -> List[Tuple[str, str]]:
    """Pairs of keys whose similarity reaches ``threshold`` (in-batch clustering)."""
    reach = Reach()
    pairs = []
    for key in sorted(set(keys)):
        for other, _ in reach.within(trigrams[key], threshold):
            pairs.append((other, key))
        reach.add(key, trigrams[key])
    return pairs
