"""small_bank.py: the rows of a bank read whole are the probe's rows, in its order; when reading pays."""

from hypothesis import given, settings as hsettings, strategies as st

import trigrams
from small_bank import BANK_MAX, WORTH_MIN, DictRows, NameMap, Rows, SmallBank, worth_reading

TRIGRAMS = st.frozensets(st.sampled_from([f"t{i:02d}" for i in range(24)]), max_size=12)
# Rows by key: a folded name may stand twice (two entity types).
NAMES = st.lists(st.tuples(st.integers(0, 30), TRIGRAMS), max_size=40)


def bank_of(key, named):
    """A SmallBank of rows (in rank order) whose names carry the given trigram sets (a name's first set wins)."""
    sets = {}
    for number, s in named:
        sets.setdefault(f"name {number}", s)
    rows = DictRows([{"id": f"id{n}", "key": f"name {number}", "canonical_name": f"Name {number}",
                      "last_seen": None, "entity_type": None, "homonym": False}
                     for n, (number, _) in enumerate(named)])
    name_map = NameMap()
    name_map.update(sets)
    return SmallBank({"k": key}, rows, name_map)


def every_row(bank, threshold):
    """The probe's rows by brute force: every row at or above the threshold, best first, then row order."""
    a = bank.keys["k"]
    hits = [(trigrams.similarity(a, bank.map.sets[key]), n) for n, key in enumerate(bank.rows.key)]
    return sorted(((sim, n) for sim, n in hits if sim >= threshold), key=lambda h: (-h[0], h[1]))


@hsettings(max_examples=400)
@given(key=TRIGRAMS, named=NAMES,
       threshold=st.sampled_from([0.1, 0.3, 0.3000001, 0.5, 1 / 3, 0.6, 0.99, 1.0]))
def test_the_rows_walked_through_the_rarest_trigrams_are_every_row_at_the_threshold(key, named, threshold):
    bank = bank_of(key, named)
    assert bank.matches("k", threshold) == every_row(bank, threshold)


@given(key=TRIGRAMS, named=NAMES, limit=st.integers(1, 5))
def test_candidates_cut_at_the_limit_and_identical_only_keeps_similarity_one(key, named, limit):
    bank = bank_of(key, named)
    full, full_names = bank.candidates(["k"], limit, 0.3)
    assert [c.id for c in full["k"]] == [f"id{n}" for _, n in every_row(bank, 0.3)[:limit]]
    same, names = bank.candidates(["k"], limit, 0.3, identical_only=True)
    assert all(c.trigram_similarity == 1.0 for c in same["k"])
    assert [c.id for c in same["k"]] == [f"id{n}" for n, name in enumerate(bank.rows.key)
                                         if key and bank.map.sets[name] == key][:limit]
    assert set(names) == {c.id for c in same["k"]}
    assert not any(c.near for c in full["k"])
    # Read as columns (SQL_SMALL_BANK's arrays), the same rows give the same candidates.
    ranked = {"n": len(bank.rows), "rank": list(range(1, len(bank.rows) + 1)),
              **{c: [r[c] for r in bank.rows.rows] for c in Rows.COLUMNS}}
    as_columns = SmallBank(bank.keys, Rows.of_arrays(ranked), bank.map)
    assert as_columns.candidates(["k"], limit, 0.3) == (full, full_names)
    near, _ = bank.candidates(["k"], None, 0.3, near=True)
    assert [c.id for c in near["k"]] == [f"id{n}" for _, n in every_row(bank, 0.3)]
    assert all(c.near for c in near["k"])


@given(before=st.dictionaries(st.sampled_from([f"n{i}" for i in range(20)]), TRIGRAMS),
       after=st.dictionaries(st.sampled_from([f"n{i}" for i in range(20)]), TRIGRAMS))
def test_a_map_brought_up_to_date_is_the_map_made_afresh(before, after):
    # A name's trigram set depends only on the name: a name in both keeps its set.
    after = {n: before.get(n, s) for n, s in after.items()}
    kept, fresh = NameMap(), NameMap()
    kept.update(before)
    # As a read brings a session's map up to date: only the names new to it with their sets.
    kept.keep(set(after), {n: s for n, s in after.items() if n not in kept.sets})
    fresh.update(after)
    assert kept.sets == fresh.sets
    assert kept.postings == fresh.postings
    assert kept.same == fresh.same


@hsettings(max_examples=300)
@given(key=TRIGRAMS, named=NAMES, threshold=st.sampled_from([0.1, 0.3, 0.5, 1 / 3, 1.0]))
def test_a_map_listed_under_the_keys_trigrams_only_gives_the_same_rows(key, named, threshold):
    # The neighbourhood's map (neighbourhood.read) lists names under the keys' trigrams only.
    bank = bank_of(key, named)
    listed = NameMap()
    listed.update(bank.map.sets, only=key)
    assert all(t in key for t in listed.postings)
    assert SmallBank({"k": key}, bank.rows, listed).matches("k", threshold) == bank.matches("k", threshold)


def test_a_key_without_trigrams_has_no_rows():
    bank = bank_of(frozenset(), [(1, frozenset({"t01"}))])
    assert bank.matches("k", 0.3) == []


def test_reading_pays_only_for_many_keys_beside_many_rows():
    assert worth_reading("off", 100, 10_000_000) == 0
    assert worth_reading("on", 1, 0) == BANK_MAX
    assert worth_reading("auto", 58, 1_000) == 0                # a bank alone: the index
    assert worth_reading("auto", 58, -1) == 0                   # never analysed
    assert worth_reading("auto", 58, 1_001_000) == BANK_MAX     # a batch beside a million names
    assert worth_reading("auto", 3, 1_001_000) < 1000           # a fact of 3 mentions: not a bank of 1,000
    assert worth_reading("auto", 1, 100_000) == 0               # below WORTH_MIN names
    assert WORTH_MIN <= worth_reading("auto", 2, 500_000)



def test_at_threshold_zero_a_key_s_rows_are_those_sharing_a_trigram():
    bank = bank_of(frozenset({"t01", "t02"}), [(1, frozenset({"t01"})), (2, frozenset({"t03"})),
                                              (3, frozenset({"t02", "t05", "t06"}))])
    assert bank.matches("k", 0.0) == [(0.5, 0), (0.25, 2)]


def test_a_read_s_columns_are_put_in_rank_order_whatever_order_they_came_in():
    row = {"n": 3, "key": ["b", "c", "a"], "canonical_name": ["B", "C", "A"], "last_seen": [2.0, None, 1.0],
           "entity_type": [None, "person", None], "id": ["i2", "i3", "i1"], "homonym": [False, True, False],
           "rank": [2, 3, 1]}
    rows = Rows.of_arrays(row)
    assert (rows.key, rows.id, rows.last_seen, rows.entity_type, rows.homonym) == \
        (["a", "b", "c"], ["i1", "i2", "i3"], [1.0, 2.0, None], [None, None, "person"], [False, False, True])
    assert Rows.of_arrays({**row, "rank": [1, 2, 3]}).key == ["b", "c", "a"]
    empty = Rows.of_arrays({"n": 0, **{c: None for c in Rows.COLUMNS}, "rank": None})
    assert len(empty) == 0 and empty.id == []
