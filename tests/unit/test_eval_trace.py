"""eval's trace check (as_predicted): the shadow's prediction against the recorded links, by entity id."""

from __future__ import annotations

import json

from entity_resolver.evaluate import _mentions_json, as_predicted
from entity_resolver.importer import parse_fact


def test_a_mention_predicted_to_an_existing_entity_must_be_linked_to_that_entity():
    assert as_predicted([[("e1", False)]], [["e1"]], {"e1", "e2"}) == [True]


def test_a_homonym_linked_instead_of_the_predicted_entity_is_a_mismatch():
    # e1 and e2 are both "Maria Schmidt": equal names, two entities.
    assert as_predicted([[("e1", False)]], [["e2"]], {"e1", "e2"}) == [False]


def test_a_predicted_creation_is_any_entity_the_statement_created():
    # The shadow's id of an entity it created was rolled back: only freshness counts.
    assert as_predicted([[("shadow-1", True)]], [["new-9"]], {"e1"}) == [True]


def test_a_predicted_creation_linked_to_an_existing_entity_is_a_mismatch():
    assert as_predicted([[("shadow-1", True)]], [["e1"]], {"e1"}) == [False]


def test_a_created_entity_found_by_a_later_fact_of_the_statement_must_be_the_same():
    predicted = [[("shadow-1", True)], [("shadow-1", False)], [("shadow-1", False)]]
    assert as_predicted(predicted, [["new-9"], ["new-9"], ["new-8"]], set()) == [True, True, False]


def test_two_predicted_creations_are_two_entities():
    predicted = [[("shadow-1", True), ("shadow-2", True)]]
    assert as_predicted(predicted, [["new-9", "new-8"]], set()) == [True]
    assert as_predicted(predicted, [["new-9", "new-9"]], set()) == [False]


def test_a_mention_left_unrecorded_is_a_mismatch():
    assert as_predicted([[("e1", False), ("e2", False)]], [["e1"]], {"e1", "e2"}) == [False]


def test_eval_sends_each_mention_as_the_stream_gives_it_but_its_gold():
    mention = {"text": "Jordan", "type": "person", "nearby": ["Payments API"],
               "event_date": "2026-03-01T10:00:00Z", "gold": "p"}
    line = {"fact_id": "f1", "bank_id": "team", "mentions": [mention, "Acme"]}
    sent = json.loads(_mentions_json(parse_fact(json.dumps(line), 1)))
    assert sent == [{k: v for k, v in mention.items() if k != "gold"}, "Acme"]
