"""trigrams.py: the similarity join of a call's names is every pair a brute force finds."""

from hypothesis import given, settings as hsettings, strategies as st

import trigrams

TRIGRAMS = st.frozensets(st.sampled_from([f"t{i:02d}" for i in range(24)]), max_size=12)


@hsettings(max_examples=300)
@given(keyed=st.dictionaries(st.sampled_from([f"k{i}" for i in range(15)]), TRIGRAMS),
       threshold=st.sampled_from([0.1, 0.3, 0.3000001, 1 / 3, 0.5, 0.99, 1.0]))
def test_neighbours_are_every_pair_reaching_the_threshold(keyed, threshold):
    found = trigrams.neighbours(keyed, threshold)
    for key, mine in keyed.items():
        every = sorted((other, trigrams.similarity(mine, theirs)) for other, theirs in keyed.items()
                       if trigrams.similarity(mine, theirs) >= threshold)
        assert sorted(found.get(key, [])) == every
