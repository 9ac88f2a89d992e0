"""Words and numbers of a name, and the word check that vetoes a merge.

Every name given to this module is already lowercased by PostgreSQL
(``lower()``); nothing here case-folds, because Python and PostgreSQL disagree
on some letters (Turkish dotted I) and the database's folding is the contract.

Standard library only: this module runs inside PostgreSQL as PL/Python and is
imported directly by the unit tests.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from difflib import SequenceMatcher
from typing import FrozenSet, List, Optional, Tuple

# A word is a maximal run of Unicode letters or digits. "_" is a word
# character for the regex engine but not for a name: "acme_corp" is "acme corp".
_WORD_RE = re.compile(r"[^\W_]+")

# A number is a run of decimal digits, optionally followed by ".digits"
# ("4.0", "3.10"). ``\d`` means any Unicode decimal digit (category Nd), the
# same digits _WORD_RE counts as word characters; each one is normalised to
# its ASCII value so "room ١٠١" (Arabic-Indic digits) names room 101 too.
# "1.2.3" reads as the numbers "1.2" and "3".
_NUMBER_RE = re.compile(r"(\d+)(?:\.(\d+))?")

# Two words are the same word when their difflib ratio reaches this:
# "são"/"sao" is 0.67 (an accent dropped), "john"/"jane" is 0.50 (two people).
WORD_MATCH_RATIO = 0.6

_CACHE_SIZE = 8192


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _words(name: str) -> Tuple[str, ...]:
    """Words of a name as a tuple (cached: the same names recur across a batch)."""
    return tuple(_WORD_RE.findall(name))


def split_words(name: str) -> List[str]:
    """Return the maximal runs of Unicode letters/digits of ``name``, "_" excluded."""
    return list(_words(name))


def _ascii_digits(run: str) -> str:
    """Map a run of Unicode decimal digits to ASCII digits."""
    if run.isascii():
        return run
    return "".join(str(unicodedata.decimal(ch)) for ch in run)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def extract_numbers(name: str) -> FrozenSet[str]:
    """Return the numbers in ``name``, normalised ("ua0123" -> "123", "4.0" -> "4")."""
    numbers = set()
    for whole, fraction in _NUMBER_RE.findall(name):
        # "UA0123" and "UA123" are the same flight: leading zeros carry no
        # meaning, but "0" itself is a number ("Day 0"), so keep one zero.
        whole = _ascii_digits(whole).lstrip("0") or "0"
        fraction = _ascii_digits(fraction)
        # "Python 3.0" and "Python 3" are one version; only an all-zero
        # fraction goes, so "3.10" (not "3.1") stays a distinct version.
        if fraction.strip("0"):
            numbers.add(whole + "." + fraction)
        else:
            numbers.add(whole)
    return frozenset(numbers)


def numbers_conflict(a: str, b: str) -> bool:
    """True iff each name has a number the other lacks ("room 101"/"room 102")."""
    # Numbers name one specific thing: "Room 101" and "Room 102" are two
    # rooms, not a typo, although their spelling differs by one character.
    # A subset is only more detail: "Q3 earnings"/"Q3 2024 earnings",
    # "Python"/"Python 3".
    na = extract_numbers(a)
    nb = extract_numbers(b)
    return bool(na - nb) and bool(nb - na)


@functools.lru_cache(maxsize=_CACHE_SIZE * 4)
def words_match(a: str, b: str) -> bool:
    """True iff the words are equal, one is a prefix of the other, or ratio >= 0.6."""
    # Prefixes are abbreviations: "corp"/"corporation", "j"/"john".
    if a.startswith(b) or b.startswith(a):
        return True
    # difflib's real_quick_ratio and quick_ratio are upper bounds of ratio():
    # when a bound is already under the cutoff the exact ratio cannot reach
    # it. Both are computed here as difflib computes them (2.0 * matches /
    # total length), without building a SequenceMatcher, which indexes b
    # first; most pairs of a candidate's words stop at a bound.
    length = len(a) + len(b)
    if 2.0 * min(len(a), len(b)) / length < WORD_MATCH_RATIO:
        return False
    # quick_ratio's matches: the size of the multiset intersection of the
    # two words' characters.
    avail = {}
    for ch in b:
        avail[ch] = avail.get(ch, 0) + 1
    matches = 0
    for ch in a:
        left = avail.get(ch, 0)
        if left > 0:
            avail[ch] = left - 1
            matches += 1
    if 2.0 * matches / length < WORD_MATCH_RATIO:
        return False
    return SequenceMatcher(None, a, b).ratio() >= WORD_MATCH_RATIO


def tokens_check(m: str, c: str) -> Optional[str]:
    """Return None when ``m`` and ``c`` pass the word check, else "numbers" or "words"."""
    return tokens_match(m, c)[0]


def tokens_match(m: str, c: str, equivalents=None) -> Tuple[Optional[str], Optional[str]]:
    """The word check, and how it passed: (None or "numbers"/"words", None or "initial"/"variant").

    ``equivalents`` (a word -> its nicknames or given names, the enhanced
    profile's name_variants lever) lets "bob" cover "robert". How it passed is
    weaker evidence than equal words: "initial" when a single letter covered
    a word it begins ("r" in "r smith" for "robert smith"), "variant" when a
    nickname covered its name.
    """
    if numbers_conflict(m, c):
        return "numbers", None
    wm = _words(m)
    wc = _words(c)
    # Two one-word names ("aster"/"astor") are left to the score: the word
    # check has nothing to compare that the name similarity does not see.
    if len(wm) < 2 and len(wc) < 2:
        if equivalents is not None and wm and wc and wm[0] != wc[0] and wc[0] in equivalents(wm[0]):
            return None, "variant"
        return None, None
    # The shorter name must be covered by the longer one: "john a smith" is
    # "john smith" with a middle initial, "alice" is "alice chen" in short.
    # On a tie the first name (the mention) is the one that must be covered.
    if len(wm) <= len(wc):
        shorter, longer = wm, wc
    else:
        shorter, longer = wc, wm
    how = None
    for word in set(shorter):
        # "john smith"/"jane smith": john/jane is 0.50, two people who share a
        # surname; "new york"/"new jersey": york has no match, two places.
        matched = [other for other in longer if words_match(word, other)]
        if matched:
            if all(_initial_of(word, o) for o in matched):
                # Only an initial stands for the word ("r" / "robert").
                how = how or "initial"
            continue
        if equivalents is not None and any(other in equivalents(word) for other in longer):
            how = "variant"
            continue
        return "words", None
    return None, how


def _initial_of(a: str, b: str) -> bool:
    """True iff one word is a single letter the other (longer) word begins with."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) == 1 and len(long_) > 1 and long_.startswith(short)


def tokens_compatible(m: str, c: str) -> bool:
    """True iff ``m`` and ``c`` pass the numbers rule and the word check."""
    return tokens_check(m, c) is None
