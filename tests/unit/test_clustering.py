"""In-batch clustering of new names (docs/design.md §3.7)."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from clustering import Cluster, Form, cluster_forms

DAY1 = datetime(2025, 3, 1, tzinfo=timezone.utc)
DAY2 = DAY1 + timedelta(days=1)


def form(key, first_seen=None, s=None):
    """A new form as the resolver passes it; spelled once as its key unless ``s`` says otherwise."""
    return {"key": key, "spellings": s or {key: 1}, "first_seen": first_seen}


def test_decorated_and_plain_name_become_one_entity():
    forms = [form("wren 🕯️", s={"Wren 🕯️": 1}), form("wren", s={"Wren": 2, "wren": 1})]
    clusters = cluster_forms(forms, [("wren 🕯️", "wren")], 250)
    assert clusters["wren 🕯️"] is clusters["wren"]
    assert (clusters["wren"].name, clusters["wren"].key) == ("Wren", "wren")
    assert clusters["wren"].members == ("wren", "wren 🕯️")


def test_two_people_sharing_a_surname_stay_two():
    forms = [form("dr john richardson"), form("dr jane richardson")]
    clusters = cluster_forms(forms, [("dr john richardson", "dr jane richardson")], 250)
    assert clusters["dr john richardson"] is not clusters["dr jane richardson"]


def test_different_numbers_stay_apart():
    clusters = cluster_forms([form("room 101"), form("room 102")], [("room 101", "room 102")], 250)
    assert clusters["room 101"].key == "room 101" and clusters["room 102"].key == "room 102"


def test_only_similar_pairs_are_joined():
    clusters = cluster_forms([form("acme"), form("acme corp")], [], 250)
    assert clusters["acme"] is not clusters["acme corp"]


def test_pairs_join_transitively():
    forms = [form("acme"), form("acme corp"), form("acme corporation")]
    clusters = cluster_forms(forms, [("acme", "acme corp"), ("acme corp", "acme corporation")], 250)
    assert clusters["acme"] is clusters["acme corporation"]


def test_canonical_form_has_the_most_mentions():
    forms = [form("acme", s={"Acme": 1}), form("acme corp", s={"Acme Corp": 2, "ACME corp": 1})]
    clusters = cluster_forms(forms, [("acme", "acme corp")], 250)
    assert clusters["acme"].key == "acme corp"


def test_mention_tie_goes_to_the_shortest_form():
    forms = [form("acme corp"), form("acme")]
    assert cluster_forms(forms, [("acme", "acme corp")], 250)["acme"].key == "acme"


def test_length_tie_goes_to_the_smallest_form():
    forms = [form("wren!"), form("wren?")]
    assert cluster_forms(forms, [("wren?", "wren!")], 250)["wren?"].key == "wren!"


def test_name_is_the_most_used_spelling():
    clusters = cluster_forms([form("aster", s={"aster": 1, "Aster": 3})], [], 250)
    assert clusters["aster"].name == "Aster"


def test_spelling_tie_goes_to_the_smallest_string():
    clusters = cluster_forms([form("aster", s={"aster": 2, "Aster": 2})], [], 250)
    assert clusters["aster"].name == "Aster"


def test_first_seen_is_the_earliest_member_date():
    forms = [form("wren", DAY2), form("wren 🎵", DAY1), form("wren!", None)]
    clusters = cluster_forms(forms, [("wren", "wren 🎵"), ("wren", "wren!")], 250)
    assert clusters["wren"].first_seen == DAY1


def test_first_seen_is_none_without_dates():
    assert cluster_forms([form("wren")], [], 250)["wren"].first_seen is None


def test_single_form_is_its_own_cluster():
    assert cluster_forms([form("wren")], [], 250) == {
        "wren": Cluster("wren", "wren", None, ("wren",))}


def test_more_forms_than_max_names_are_not_clustered():
    forms = [form("acme"), form("acme corp"), form("acme inc")]
    clusters = cluster_forms(forms, [("acme", "acme corp"), ("acme", "acme inc")], 2)
    assert len({id(c) for c in clusters.values()}) == 3


def test_max_names_zero_switches_clustering_off():
    clusters = cluster_forms([form("acme"), form("acme corp")], [("acme", "acme corp")], 0)
    assert clusters["acme"] is not clusters["acme corp"]


def test_pairs_naming_unknown_forms_are_ignored():
    clusters = cluster_forms([form("acme"), form("acme corp")], [("acme", "zzz"), ("acme", "acme")], 250)
    assert clusters["acme"] is not clusters["acme corp"]


def test_repeated_form_keys_add_up():
    forms = [form("acme", DAY2, s={"Acme": 1}), form("acme", DAY1, s={"Acme": 1, "ACME": 1}),
             form("acme corp", s={"Acme Corp": 2})]
    clusters = cluster_forms(forms, [("acme", "acme corp")], 250)
    assert (clusters["acme"].key, clusters["acme"].name, clusters["acme"].first_seen) == (
        "acme", "Acme", DAY1)


def test_form_objects_are_accepted():
    clusters = cluster_forms([Form("wren", {"Wren": 1}, DAY1), Form("wren 🎵", {"Wren 🎵": 1})],
                             [("wren", "wren 🎵")], 250)
    assert clusters["wren 🎵"].name == "Wren"


def test_mixed_naive_and_aware_dates_compare_as_utc():
    forms = [form("wren", DAY1), form("wren 🎵", datetime(2025, 2, 28))]
    assert cluster_forms(forms, [("wren", "wren 🎵")], 250)["wren"].first_seen == datetime(2025, 2, 28)


def test_result_is_independent_of_input_order():
    forms = [form("acme", s={"Acme": 1}), form("acme corp", s={"Acme Corp": 1}),
             form("smith jones"), form("smith smith")]
    pairs = [("acme", "acme corp"), ("smith jones", "smith smith")]
    forward = cluster_forms(forms, pairs, 250)
    backward = cluster_forms(forms[::-1], [(b, a) for a, b in pairs[::-1]], 250)
    assert forward == backward


# -- properties -------------------------------------------------------------------------

KEY = st.lists(st.one_of(st.text("abeo", min_size=1, max_size=5), st.sampled_from(["1", "2"])),
               min_size=1, max_size=3).map(" ".join)
FORMS = st.lists(
    st.fixed_dictionaries({
        "key": KEY,
        "spellings": st.dictionaries(st.text("aAbBeEoO ", min_size=1, max_size=4),
                                     st.integers(1, 3), min_size=1, max_size=3),
        "first_seen": st.one_of(st.none(), st.integers(0, 5).map(lambda d: DAY1 + timedelta(days=d))),
    }),
    max_size=8,
)


def _pairs(forms, data):
    keys = sorted({f["key"] for f in forms})
    if len(keys) < 2:
        return []
    return data.draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(keys)), max_size=12))


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(FORMS, st.data(), st.randoms(use_true_random=False))
def test_clusters_do_not_depend_on_order_of_forms_pairs_or_pair_sides(forms, data, rnd):
    pairs = _pairs(forms, data)
    shuffled_forms = list(forms)
    rnd.shuffle(shuffled_forms)
    shuffled_pairs = [(b, a) if rnd.random() < 0.5 else (a, b) for a, b in pairs]
    rnd.shuffle(shuffled_pairs)
    assert cluster_forms(forms, pairs, 250) == cluster_forms(shuffled_forms, shuffled_pairs, 250)


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(FORMS, st.data())
def test_clusters_partition_the_forms(forms, data):
    clusters = cluster_forms(forms, _pairs(forms, data), 250)
    assert set(clusters) == {f["key"] for f in forms}
    for key, cluster in clusters.items():
        assert key in cluster.members and cluster.key in cluster.members
        assert all(clusters[member] is cluster for member in cluster.members)
