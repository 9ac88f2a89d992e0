"""reresolve.map_clusters: a replay's clusters placed on the bank's entities (sql/058_reresolve.sql)."""

from hypothesis import given, settings as hsettings, strategies as st

from reresolve import made_id, map_clusters


def test_each_cluster_goes_to_the_entity_holding_most_of_its_mentions():
    placed = {("f1", 1): "alex", ("f2", 1): "kim", ("f3", 1): "kim", ("f1", 2): "react"}
    replayed = {("f1", 1): "c1", ("f1", 2): "c2", ("f2", 1): "c1", ("f3", 1): "c1"}
    assert map_clusters(placed, replayed) == {"c1": "kim", "c2": "react"}


def test_an_entity_is_placed_once_and_a_cluster_left_without_one_has_none():
    # Two people the arrival put on one entity: the larger share keeps it, the other is left over.
    placed = {("f1", 1): "sam", ("f2", 1): "sam", ("f3", 1): "sam"}
    replayed = {("f1", 1): "c1", ("f2", 1): "c2", ("f3", 1): "c2"}
    assert map_clusters(placed, replayed) == {"c2": "sam"}


def test_ties_go_to_the_earliest_in_the_replays_order_not_to_an_id():
    placed = {("f1", 1): "zz", ("f2", 1): "aa"}
    for a, b in (("c1", "c2"), ("c2", "c1")):
        replayed = {("f1", 1): a, ("f2", 1): b}
        assert map_clusters(placed, replayed) == {a: "zz", b: "aa"}
    # One entity, two clusters of one mention each: the cluster met first keeps it, whatever its id.
    placed = {("f1", 1): "e", ("f2", 1): "e"}
    assert map_clusters(placed, {("f1", 1): "zz", ("f2", 1): "aa"}) == {"zz": "e"}
    assert map_clusters(placed, {("f1", 1): "aa", ("f2", 1): "zz"}) == {"aa": "e"}


KEYS = st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3)), unique=True, max_size=12)


@hsettings(max_examples=200, deadline=None)
@given(keys=KEYS, data=st.data())
def test_a_placing_is_one_to_one_and_within_the_overlaps(keys, data):
    placed = {k: data.draw(st.sampled_from(["e1", "e2", "e3"])) for k in keys}
    replayed = {k: data.draw(st.sampled_from(["c1", "c2", "c3", "c4"])) for k in keys}
    out = map_clusters(placed, replayed)
    assert len(set(out.values())) == len(out)
    assert all(any(replayed[k] == c and placed[k] == e for k in keys) for c, e in out.items())
    # Renaming the ids changes nothing but the names.
    rename = {"e1": "x3", "e2": "x1", "e3": "x2", "c1": "d4", "c2": "d2", "c3": "d3", "c4": "d1"}
    again = map_clusters({k: rename[v] for k, v in placed.items()}, {k: rename[v] for k, v in replayed.items()})
    assert again == {rename[c]: rename[e] for c, e in out.items()}


def test_an_entity_made_for_a_cluster_has_the_id_its_first_mention_draws_unless_taken():
    first = made_id("crew", "u1", 2, lambda c: False)
    assert first == made_id("crew", "u1", 2, lambda c: False)          # a dry run and its apply agree
    assert first not in {made_id("crew", "u1", 1, lambda c: False), made_id("other", "u1", 2, lambda c: False)}
    second = made_id("crew", "u1", 2, lambda c: c == first)              # an earlier plan's entity holds it
    assert second != first and second == made_id("crew", "u1", 2, {first}.__contains__)
