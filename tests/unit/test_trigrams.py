"""trigrams.py: the fewest trigrams shared to reach a threshold, and the similarity join of a call's names,
against brute force."""

from hypothesis import given, settings as hsettings, strategies as st

import trigrams
from test_small_bank import TRIGRAMS


@hsettings(max_examples=300)
@given(keyed=st.dictionaries(st.sampled_from([f"k{i}" for i in range(15)]), TRIGRAMS),
       threshold=st.sampled_from([0.1, 0.3, 0.3000001, 1 / 3, 0.5, 0.99, 1.0]))
def test_neighbours_are_every_pair_reaching_the_threshold(keyed, threshold):
    found = trigrams.neighbours(keyed, threshold)
    for key, mine in keyed.items():
        every = sorted((other, trigrams.similarity(mine, theirs)) for other, theirs in keyed.items()
                       if trigrams.similarity(mine, theirs) >= threshold)
        assert sorted(found.get(key, [])) == every


@given(size=st.integers(1, 40), threshold=st.sampled_from([0.05, 0.1, 0.3, 0.3000001, 1 / 3, 0.5, 0.99, 1.0]))
def test_the_fewest_trigrams_shared_to_reach_a_threshold_are_the_similarity_s(size, threshold):
    # matches compares only the names sharing this many: any fewer must never reach it, and past the
    # table's end no size may.
    least = trigrams.least_common(size, threshold)
    for other in range(len(least) + 40):
        reaching = [c for c in range(1, min(size, other) + 1) if trigrams.of_counts(c, size, other) >= threshold]
        if other < len(least):
            assert least[other] == (reaching[0] if reaching else size + 1)
        else:
            assert reaching == []
