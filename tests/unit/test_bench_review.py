"""bench/review.py's reading of what is left wrong: an entity holding two gold identities is a
wrong merge; two entities mostly of one gold identity are a duplicate pair; banks stay apart."""

from bench.review import problems


def gold(*rows):
    """(bank, fact, ordinal, gold) rows -> the golds mapping bench.order._golds builds."""
    return {(b, f, n): (g, "text", 1) for b, f, n, g in rows}


def test_an_entity_of_two_identities_is_a_wrong_merge_and_two_entities_of_one_are_a_duplicate():
    golds = gold(("b", "f1", 1, "alex-kim"), ("b", "f2", 1, "alex-morgan"), ("b", "f3", 1, "alex-morgan"),
                 ("b", "f4", 1, "sam"), ("b", "f5", 1, "sam"), ("b", "f6", 1, "sam"))
    part = {("b", "f1", 1): ("E1", "Alex"), ("b", "f2", 1): ("E1", "Alex"), ("b", "f3", 1): ("E2", "Alex Morgan"),
            ("b", "f4", 1): ("E3", "Sam"), ("b", "f5", 1): ("E4", "Samuel"), ("b", "f6", 1): ("E3", "Sam")}
    merged, duplicates = problems(golds, part)
    assert merged == {"b": {"E1"}}
    # E1 holds one mention of each Alex (a tie: its first, Alex Kim, counts as its identity), E2
    # only Alex Morgan's: not a duplicate pair. E3 and E4 hold only Sam's: one.
    assert duplicates == {("b", "E3", "E4")}


def test_a_right_partition_has_nothing_to_repair_and_banks_never_pair():
    golds = gold(("a", "f1", 1, "sam"), ("c", "f1", 1, "sam"))
    part = {("a", "f1", 1): ("E1", "Sam"), ("c", "f1", 1): ("E2", "Sam")}
    assert problems(golds, part) == ({}, set())
