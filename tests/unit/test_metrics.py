"""The evaluation metrics, on clusterings small enough to check by hand."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from entity_resolver.evaluate import Scored, bcubed, contingency, pairwise, score


def cells(golds, entities):
    return contingency(zip(golds, entities))


def mentions(golds, entities, bank="b"):
    return [Scored(bank, i + 1, f"m{i}", g, e, e.upper()) for i, (g, e) in enumerate(zip(golds, entities))]


def test_perfect_resolution_scores_one_everywhere():
    c = cells("AABBC", "xxyyz")
    assert pairwise(c) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert bcubed(c) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_pairwise_counts_pairs_of_mentions():
    # One entity holds A, A, B: 3 pairs predicted, 1 of them true.
    assert pairwise(cells("AAB", "xxx")) == {"precision": pytest.approx(1 / 3, abs=1e-6),
                                            "recall": 1.0, "f1": pytest.approx(0.5, abs=1e-6)}


def test_nothing_predicted_together_has_precision_one_and_recall_zero():
    assert pairwise(cells("AAB", "xyz")) == {"precision": 1.0, "recall": 0.0, "f1": 0.0}


def test_all_singletons_in_truth_have_recall_one():
    assert pairwise(cells("ABC", "xxy"))["recall"] == 1.0


def test_bcubed_averages_per_mention():
    # A mentions see 2/3 of their entity as A; the B mention 1/3.
    assert bcubed(cells("AAB", "xxx"))["precision"] == pytest.approx(5 / 9, abs=1e-6)
    assert bcubed(cells("AAB", "xxx"))["recall"] == 1.0
    # Split A over two entities: each A mention finds half of A in its entity.
    assert bcubed(cells("AAB", "xyz"))["recall"] == pytest.approx(2 / 3, abs=1e-6)
    assert bcubed(cells("AAB", "xyz"))["precision"] == 1.0


def test_bcubed_on_a_worked_example():
    # Bagga & Baldwin's example: truth {1..5} {6,7} {8..12}, the system joins
    # the last two. A B mention finds 2 of its 7 entity-mates to be B, a C mention 5.
    golds = "AAAAABBCCCCC"
    ents = "xxxxxyyyyyyy"
    p = (5 * 1 + 2 * (2 / 7) + 5 * (5 / 7)) / 12
    r = 1.0
    got = bcubed(cells(golds, ents))
    assert got["precision"] == pytest.approx(p, abs=1e-6)
    assert got["recall"] == r


def test_wrong_merges_and_fragmentation_are_counted_and_listed():
    golds = ["alex-kim", "alex-kim", "alex-morgan", "sarah", "sarah", "sarah"]
    ents = ["alex", "alex", "alex", "sarah-chen", "sarah-chen", "sarah"]
    r = score(mentions(golds, ents))
    assert r["wrong_merges"] == 1
    assert r["fragmented"] == 1
    assert r["entities"] == 3
    assert r["gold_identities"] == 3
    merged = r["worst_merges"][0]
    assert merged["entity"] == "ALEX"
    assert merged["identities"] == 2
    assert merged["misplaced"] == 1
    assert [g["gold"] for g in merged["gold"]] == ["alex-kim", "alex-morgan"]
    split = r["worst_fragments"][0]
    assert split["gold"] == "sarah"
    assert [e["entity"] for e in split["into"]] == ["SARAH-CHEN", "SARAH"]
    assert split["outside_main"] == 1


def test_worst_offenders_come_first():
    golds = ["a", "b", "c", "d", "e"]
    ents = ["x", "x", "x", "y", "y"]
    r = score(mentions(golds, ents))
    assert [w["entity"] for w in r["worst_merges"]] == ["X", "Y"]


def test_the_same_gold_in_two_banks_is_two_identities():
    m = mentions(["p1", "p1"], ["x", "y"], bank="one")
    m[1].bank = "two"
    r = score(m)
    assert r["gold_identities"] == 2
    assert r["fragmented"] == 0


def test_no_mentions_scores_vacuously():
    r = score([])
    assert r["mentions_scored"] == 0
    assert r["pairwise"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert r["wrong_merges"] == r["fragmented"] == 0


def test_result_does_not_depend_on_mention_order():
    rng = random.Random(7)
    golds = [rng.choice("ABCDEFG") for _ in range(200)]
    ents = [rng.choice("stuvwxyz") for _ in range(200)]
    m = mentions(golds, ents)
    first = score(m)
    rng.shuffle(m)
    assert score(m) == first


labels = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(labels)
def test_swapping_truth_and_prediction_swaps_precision_and_recall(pairs):
    c = contingency(pairs)
    swapped = contingency((e, g) for g, e in pairs)
    for metric in (pairwise, bcubed):
        a, b = metric(c), metric(swapped)
        assert a["precision"] == pytest.approx(b["recall"], abs=1e-6)
        assert a["recall"] == pytest.approx(b["precision"], abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(labels)
def test_scores_are_between_zero_and_one(pairs):
    c = contingency(pairs)
    for metric in (pairwise, bcubed):
        for v in metric(c).values():
            assert 0.0 <= v <= 1.0
