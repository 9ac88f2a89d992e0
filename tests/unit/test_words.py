"""Words, numbers and the word check (docs/design.md §3.4)."""

from difflib import SequenceMatcher

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from words import (extract_numbers, numbers_conflict, split_words, tokens_check,
                   tokens_compatible, words_match)

# Names made of a few short words over a small alphabet, so that shared
# prefixes, near-misses and numbers actually occur.
WORD = st.text(alphabet="abcdeo", min_size=1, max_size=6)
NUMBER = st.integers(min_value=0, max_value=120).map(str)
TOKEN = st.one_of(WORD, WORD, NUMBER)
NAME = st.lists(TOKEN, min_size=0, max_size=4).map(" ".join)


# -- split_words ---------------------------------------------------------------

def test_words_are_runs_of_letters_and_digits():
    assert split_words("gpt-4 turbo (2024)") == ["gpt", "4", "turbo", "2024"]


def test_underscore_separates_words():
    assert split_words("acme_corp") == ["acme", "corp"]


def test_unicode_letters_are_word_characters():
    assert split_words("são paulo — 東京") == ["são", "paulo", "東京"]


def test_emoji_and_punctuation_are_not_words():
    assert split_words("wren 🕯️!") == ["wren"]


def test_name_without_letters_has_no_words():
    assert split_words("🎵 --") == []


# -- extract_numbers -----------------------------------------------------------

def test_leading_zeros_are_dropped():
    assert extract_numbers("ua0123") == {"123"}


def test_zero_alone_is_kept():
    assert extract_numbers("day 000") == {"0"}


def test_all_zero_fraction_is_dropped():
    assert extract_numbers("python 4.0") == {"4"}
    assert extract_numbers("python 4.00") == {"4"}


def test_fraction_with_trailing_zero_is_kept_whole():
    assert extract_numbers("python 3.10") == {"3.10"}


def test_leading_zeros_dropped_before_a_fraction():
    assert extract_numbers("v03.50") == {"3.50"}


def test_dotted_version_reads_as_two_numbers():
    assert extract_numbers("v1.2.3") == {"1.2", "3"}


def test_unicode_digits_are_read_as_their_value():
    assert extract_numbers("room ١٠١") == {"101"}


def test_name_without_digits_has_no_numbers():
    assert extract_numbers("acme corp") == frozenset()


# -- numbers_conflict ----------------------------------------------------------

@pytest.mark.parametrize("a, b", [("room 101", "room 102"), ("ua123", "ua124")])
def test_different_numbers_conflict(a, b):
    assert numbers_conflict(a, b)


@pytest.mark.parametrize("a, b", [
    ("q3 earnings", "q3 2024 earnings"),
    ("python", "python 3"),
    ("ua0123", "ua123"),
    ("python 4.0", "python 4"),
    ("acme", "acme corp"),
])
def test_subset_of_numbers_does_not_conflict(a, b):
    assert not numbers_conflict(a, b)


# -- words_match ---------------------------------------------------------------

def test_equal_words_match():
    assert words_match("smith", "smith")


def test_prefix_matches_either_way():
    assert words_match("corp", "corporation")
    assert words_match("corporation", "corp")


def test_accent_dropped_matches():
    # são/sao is 0.67
    assert words_match("são", "sao")


def test_different_first_names_do_not_match():
    # john/jane is 0.50
    assert not words_match("john", "jane")


# -- tokens_compatible: every example of docs/design.md §3.4, both ways ---------

@pytest.mark.parametrize("m, c", [
    ("são paulo", "sao paulo"),
    ("microsoft corp", "microsoft corporation"),
    ("john a smith", "john smith"),
    ("alice", "alice chen"),
    ("q3 earnings", "q3 2024 earnings"),
    ("python", "python 3"),
    ("wren 🎵", "wren"),
    ("gpt-4", "gpt 4"),
])
def test_spec_compatible_pairs(m, c):
    assert tokens_compatible(m, c)
    assert tokens_compatible(c, m)


@pytest.mark.parametrize("m, c", [
    ("john smith", "jane smith"),
    ("new york", "new jersey"),
    ("room 101", "room 102"),
    ("ua123", "ua124"),
])
def test_spec_incompatible_pairs(m, c):
    assert not tokens_compatible(m, c)
    assert not tokens_compatible(c, m)


def test_two_one_word_names_are_compatible():
    # "tigran"/"iran" is left to the trigram floor, not the word check.
    assert tokens_compatible("tigran", "iran")


def test_first_name_must_be_covered_on_a_tie():
    # Two words each: smith/smith covers "smith smith" but "jones" is not
    # covered by "smith smith".
    assert tokens_compatible("smith smith", "smith jones")
    assert not tokens_compatible("smith jones", "smith smith")


def test_numbers_are_checked_before_words():
    assert tokens_check("room 101", "room 102") == "numbers"


def test_word_failure_is_reported():
    assert tokens_check("john smith", "jane smith") == "words"


def test_compatible_names_report_nothing():
    assert tokens_check("john a smith", "john smith") is None


# -- properties -----------------------------------------------------------------

@pytest.mark.slow
@hsettings(max_examples=2000)
@given(NAME, NAME)
def test_tokens_compatible_symmetric_when_word_counts_differ(m, c):
    if len(split_words(m)) != len(split_words(c)):
        assert tokens_compatible(m, c) == tokens_compatible(c, m)


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(NAME, NAME)
def test_numbers_conflict_is_symmetric(a, b):
    assert numbers_conflict(a, b) == numbers_conflict(b, a)


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(NAME)
def test_a_name_is_compatible_with_itself(name):
    assert tokens_compatible(name, name)


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(NAME, NUMBER)
def test_adding_a_number_never_creates_a_conflict(name, number):
    assert not numbers_conflict(name, name + " " + number)


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(WORD, WORD)
def test_words_match_is_prefix_or_ratio(a, b):
    expected = (a.startswith(b) or b.startswith(a)
                or SequenceMatcher(None, a, b).ratio() >= 0.6)
    assert words_match(a, b) == expected


def plain_words_match(a, b):
    """words_match as difflib spells it: prefix, else SequenceMatcher's ratio >= 0.6."""
    return a.startswith(b) or b.startswith(a) or SequenceMatcher(None, a, b).ratio() >= 0.6


# Words that are near each other: one word and an edited copy (a letter
# dropped, doubled, swapped or replaced, an accent, a suffix), over letters
# that repeat (so the multiset bound and the exact ratio differ), up to
# words long enough (200+) for difflib's autojunk heuristic.
LETTER = st.sampled_from("aeinorstlmkcéüøß東京ー١٢0123")
SHORT_WORD = st.text(alphabet=LETTER, min_size=1, max_size=12)
LONG_WORD = st.text(alphabet=st.sampled_from("abcde"), min_size=150, max_size=260)


@st.composite
def edited(draw, word):
    chars = list(draw(word))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["drop", "double", "swap", "replace", "insert", "append"]))
        i = draw(st.integers(0, max(len(chars) - 1, 0)))
        if op == "drop" and len(chars) > 1:
            del chars[i]
        elif op == "double" and chars:
            chars.insert(i, chars[i])
        elif op == "swap" and len(chars) > 1:
            j = min(i + 1, len(chars) - 1)
            chars[i], chars[j] = chars[j], chars[i]
        elif op == "replace" and chars:
            chars[i] = draw(LETTER)
        elif op == "insert":
            chars.insert(i, draw(LETTER))
        elif op == "append":
            chars.extend(draw(st.text(alphabet=LETTER, min_size=1, max_size=8)))
    return "".join(chars) or "a"


def word_pair(word):
    independent = st.tuples(word, word)
    related = word.flatmap(lambda w: st.tuples(st.just(w), edited(st.just(w))))
    return st.one_of(independent, related, related.map(lambda p: (p[1], p[0])))


@pytest.mark.slow
@hsettings(max_examples=6000)
@given(st.one_of(word_pair(SHORT_WORD), word_pair(WORD), word_pair(LONG_WORD)))
def test_words_match_bounds_give_difflibs_answer(pair):
    # words_match computes real_quick_ratio and quick_ratio by arithmetic
    # and builds a SequenceMatcher only when both reach 0.6: the answer must
    # be the plain ratio's, bit for bit (uncached, both ways round).
    a, b = pair
    assert words_match.__wrapped__(a, b) == plain_words_match(a, b)
    assert words_match.__wrapped__(b, a) == plain_words_match(b, a)


def test_words_match_bounds_on_a_seeded_sample():
    # Thousands of pairs of real-looking words around the 0.6 cutoff.
    import random
    rng = random.Random(58)
    letters = "aeiounrstlmkdgbhy"
    near = far = 0
    for _ in range(20000):
        a = "".join(rng.choice(letters) for _ in range(rng.randint(1, 10)))
        b = list(a)
        for _ in range(rng.randint(0, 3)):
            i = rng.randrange(len(b) + 1)
            if rng.random() < 0.5 and b:
                b[min(i, len(b) - 1)] = rng.choice(letters)
            else:
                b.insert(i, rng.choice(letters))
        b = "".join(b)
        expected = plain_words_match(a, b)
        assert words_match.__wrapped__(a, b) == expected, (a, b)
        ratio = SequenceMatcher(None, a, b).ratio()
        near += 0.5 <= ratio < 0.7
        far += ratio < 0.5
    assert near > 1000 and far > 1000  # both sides of the cutoff, and close to it


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(st.text(max_size=30))
def test_words_hold_only_letters_and_digits(name):
    for word in split_words(name):
        assert word and "_" not in word and all(ch.isalnum() for ch in word)


@pytest.mark.slow
@hsettings(max_examples=2000)
@given(st.text(max_size=30))
def test_numbers_have_no_leading_zero_and_no_zero_fraction(name):
    for number in extract_numbers(name):
        whole, _, fraction = number.partition(".")
        assert whole == "0" or not whole.startswith("0")
        assert fraction == "" or fraction.strip("0")
        assert number.replace(".", "").isascii()
