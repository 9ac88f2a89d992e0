"""small_bank.py: the rows of a bank read whole are the probe's rows, in its order; when reading pays."""

from hypothesis import given, settings as hsettings, strategies as st

import trigrams
from small_bank import BANK_MAX, WORTH_MIN, SmallBank, worth_reading

TRIGRAMS = st.frozensets(st.sampled_from([f"t{i:02d}" for i in range(24)]), max_size=12)


def bank_of(key_sets, name_sets):
    rows = [{"id": f"id{n}", "name": f"name {n}", "canonical_name": f"Name {n}",
             "tri": trigrams.SEPARATOR.join(sorted(s)), "last_seen": None, "entity_type": None}
            for n, s in enumerate(name_sets)]
    return SmallBank(dict(key_sets), rows)


def every_row(bank, key, threshold):
    """The probe's rows by brute force: every name at or above the threshold, best first, then row order."""
    a = bank.keys[key]
    hits = [(trigrams.similarity(a, s), n) for n, s in enumerate(bank.sets)]
    return sorted(((sim, n) for sim, n in hits if sim >= threshold), key=lambda h: (-h[0], h[1]))


@hsettings(max_examples=400)
@given(key=TRIGRAMS, name_sets=st.lists(TRIGRAMS, max_size=40),
       threshold=st.sampled_from([0.1, 0.3, 0.3000001, 0.5, 1 / 3, 0.6, 0.99, 1.0]))
def test_the_rows_walked_through_the_rarest_trigrams_are_every_row_at_the_threshold(key, name_sets, threshold):
    bank = bank_of({"k": key}, name_sets)
    assert bank.matches("k", threshold) == every_row(bank, "k", threshold)


@given(key=TRIGRAMS, name_sets=st.lists(TRIGRAMS, max_size=40), limit=st.integers(1, 5))
def test_candidates_cut_at_the_limit_and_identical_only_keeps_similarity_one(key, name_sets, limit):
    bank = bank_of({"k": key}, name_sets)
    full, _ = bank.candidates(["k"], limit, 0.3)
    assert [c.id for c in full["k"]] == [f"id{n}" for _, n in every_row(bank, "k", 0.3)[:limit]]
    same, names = bank.candidates(["k"], limit, 0.3, identical_only=True)
    assert all(c.trigram_similarity == 1.0 for c in same["k"])
    assert [c.id for c in same["k"]] == [f"id{n}" for n, s in enumerate(bank.sets) if key and s == key][:limit]
    assert set(names) == {c.id for c in same["k"]}


def test_a_key_without_trigrams_has_no_rows():
    bank = bank_of({"": frozenset()}, [frozenset({"t01"})])
    assert bank.matches("", 0.3) == []


def test_reading_pays_only_for_many_keys_beside_many_rows():
    assert worth_reading("off", 100, 10_000_000) == 0
    assert worth_reading("on", 1, 0) == BANK_MAX
    assert worth_reading("auto", 58, 1_000) == 0                 # a bank alone: the index
    assert worth_reading("auto", 58, -1) == 0                   # never analysed
    assert worth_reading("auto", 58, 1_001_000) == BANK_MAX      # a batch beside a million names
    assert worth_reading("auto", 3, 1_001_000) < 1000           # a fact of 3 mentions: not a bank of 1,000
    assert worth_reading("auto", 1, 100_000) == 0               # below WORTH_MIN names
    assert WORTH_MIN <= worth_reading("auto", 2, 500_000)
