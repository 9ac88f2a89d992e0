"""Resolution decisions on a real bank (docs/design.md §3): which entity a mention names.

Each test builds the bank's history (names, recency, co-occurrences), resolves
once and asserts the decision and the rows written.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bank_builders import LONG_AGO, NOW, Bank, statements_of_last_call

# -- the two Alexes (docs/design.md §2) -------------------------------------


def two_alexes(bank):
    engineer = bank.known_with("Alex Kim", ["React", "Sprint 14"], last_seen=NOW)
    customer = bank.known_with("Alex Morgan", ["Acme", "renewal"], last_seen=NOW)
    return engineer, customer


def test_alex_next_to_acme_and_the_renewal_is_the_customer(bank):
    _, customer = two_alexes(bank)

    result = bank.resolve("Alex", ["Acme", "renewal"])

    assert (result["entity_id"], result["created"]) == (customer, False)
    assert "Alex" not in bank.names()


def test_alex_next_to_react_and_sprint_14_is_the_engineer(bank):
    engineer, _ = two_alexes(bank)

    result = bank.resolve("Alex", ["React", "Sprint 14"])

    assert (result["entity_id"], result["created"]) == (engineer, False)
    assert "Alex" not in bank.names()


def test_an_element_without_nearby_takes_the_other_mentions_of_the_batch(bank):
    _, customer = two_alexes(bank)

    alex, _, _ = bank.resolve_batch(["Alex", "Acme", "renewal"])

    assert (alex["entity_id"], alex["created"]) == (customer, False)


def test_an_element_with_an_empty_nearby_has_no_context(bank):
    two_alexes(bank)

    alex, _, _ = bank.resolve_batch([{"text": "Alex", "nearby": []}, "Acme", "renewal"])

    assert alex["created"] is True


def test_an_empty_batch_writes_nothing(shared_conn):
    empty = Bank(shared_conn, "empty batch")

    rows = empty.resolve_batch([])

    assert rows == []
    assert empty.row_counts() == {t: 0 for t in empty.row_counts()}


# -- a weak name needs the other signals ----------------------------------------


def test_sarah_is_not_sarah_chen_on_the_name_alone(bank):
    bank.known_with("Sarah Chen", ["design review"], last_seen=LONG_AGO)

    result = bank.resolve("Sarah")

    assert result["created"] is True
    assert bank.names() == ["Sarah", "Sarah Chen", "design review"]


def test_sarah_is_sarah_chen_when_cooccurrence_and_recency_carry_it(reference_bank):
    bank = reference_bank
    sarah_chen = bank.known_with("Sarah Chen", ["design review"], last_seen=NOW)

    result = bank.resolve("Sarah", ["design review"])

    assert (result["entity_id"], result["created"]) == (sarah_chen, False)
    assert result["score"] == pytest.approx(0.5 * 2 / 3 + 0.3 + 0.2)
    assert bank.names() == ["Sarah Chen", "design review"]


def test_coincidental_short_name_under_the_floor_is_never_merged(bank):
    # "Tigran"/"Iran": sequence ratio 0.80 but trigram similarity 0.20; with
    # every partner nearby and seen today it would score 0.9 without the floor.
    tigran = bank.known_with("Tigran", ["Yerevan", "chess club"], last_seen=NOW)

    result = bank.resolve("Iran", ["Yerevan", "chess club"])

    assert result["created"] is True
    assert result["entity_id"] != tigran
    assert bank.names() == ["Iran", "Tigran", "Yerevan", "chess club"]


# -- the word check, both ways ----------------------------------------------------

# Pairs from docs/design.md §3.4. The floor is lowered to 0.2 so that "New York"/"New
# Jersey" (trigram 0.25) reaches the word check; every candidate has all the
# history a merge could want (its partners nearby, seen today).
WORD_COMPATIBLE = [
    ("São Paulo", "Sao Paulo"),
    ("Microsoft Corp", "Microsoft Corporation"),
    ("John A Smith", "John Smith"),
    ("Alice", "Alice Chen"),
]
WORD_INCOMPATIBLE = [
    ("John Smith", "Jane Smith"),
    ("New York", "New Jersey"),
]


def bank_with_full_history(bank, name):
    bank.configure({"merge_min_similarity": 0.2, "candidate_similarity": 0.2})
    return bank.known_with(name, ["standup", "roadmap"], last_seen=NOW)


@pytest.mark.parametrize("existing, mention",
                         WORD_COMPATIBLE + [(b, a) for a, b in WORD_COMPATIBLE])
def test_word_compatible_names_merge(bank, existing, mention):
    ident = bank_with_full_history(bank, existing)

    result = bank.resolve(mention, ["standup", "roadmap"])

    assert (result["entity_id"], result["created"]) == (ident, False)


@pytest.mark.parametrize("existing, mention",
                         WORD_INCOMPATIBLE + [(b, a) for a, b in WORD_INCOMPATIBLE])
def test_word_incompatible_names_never_merge_whatever_the_history(bank, existing, mention):
    ident = bank_with_full_history(bank, existing)

    result = bank.resolve(mention, ["standup", "roadmap"])

    assert result["created"] is True
    assert result["entity_id"] != ident
    assert mention in bank.names()


# -- numbers ----------------------------------------------------------------------


@pytest.mark.parametrize("existing, mention", [
    ("Room 101", "Room 102"), ("Room 102", "Room 101"),
    ("UA123", "UA124"), ("UA124", "UA123"),
])
def test_names_with_different_numbers_never_merge(bank, existing, mention):
    ident = bank_with_full_history(bank, existing)

    result = bank.resolve(mention, ["standup", "roadmap"])

    assert result["created"] is True
    assert result["entity_id"] != ident


@pytest.mark.parametrize("existing, mention", [
    ("Python", "Python 3"), ("Python 3", "Python"),
    ("Q3 earnings", "Q3 2024 earnings"), ("Q3 2024 earnings", "Q3 earnings"),
    ("UA0123", "UA123"), ("Python 4.0", "Python 4"),
])
def test_a_name_whose_numbers_are_a_subset_can_merge(bank, existing, mention):
    ident = bank_with_full_history(bank, existing)

    result = bank.resolve(mention, ["standup", "roadmap"])

    assert (result["entity_id"], result["created"]) == (ident, False)


# -- identical trigram sets ---------------------------------------------------------


@pytest.mark.parametrize("existing, mention", [
    ("Wren 🎵", "Wren"), ("Wren", "Wren 🎵"), ("GPT-4", "GPT 4"), ("gpt 4", "GPT-4"),
])
def test_identical_trigram_sets_merge_with_no_history(bank, existing, mention):
    ident = bank.entity(existing, last_seen=None)

    result = bank.resolve(mention, event_date=None)

    assert (result["entity_id"], result["created"], result["score"]) == (ident, False, 1.0)
    assert bank.names() == [existing]


def test_an_entity_last_seen_at_infinity_has_no_recency(bank):
    # Written by hand: 'infinity' is a timestamptz but no date Python can hold.
    ident = bank.entity("Alexe", last_seen="infinity")

    result = bank.resolve("Alexa")

    assert (result["created"], result["score"]) == (True, pytest.approx(0.5 * 0.8))
    assert result["entity_id"] != ident


# -- hub damping ----------------------------------------------------------------------


def test_a_hub_partner_cannot_carry_a_weak_name(reference_bank):
    # (the reference profile: under the enhanced one, a first name that fits
    # one entity only has the name signal 1.0, test_levers_db.py)
    bank = reference_bank
    # "user" co-occurs with 1,400 entities, Sarah Chen among them: worth
    # 1/sqrt(1400) = 0.027, so "Sarah" scores 0.33 + 0.008 + 0.2 = 0.54.
    sarah_chen = bank.entity("Sarah Chen", last_seen=NOW)
    bank.cooccur(sarah_chen, bank.hub("user", 1399))

    result = bank.resolve("Sarah", ["user"])

    assert result["created"] is True
    assert result["score"] == pytest.approx(0.5 * 2 / 3 + 0.3 / 1400 ** 0.5 + 0.2)


def test_a_selective_partner_can_carry_a_weak_name(bank):
    sarah_chen = bank.entity("Sarah Chen", last_seen=NOW)
    bank.cooccur(sarah_chen, bank.hub("user", 1399))
    bank.cooccur(sarah_chen, bank.entity("design review"))

    result = bank.resolve("Sarah", ["design review"])

    assert (result["entity_id"], result["created"]) == (sarah_chen, False)


# -- the threshold, exactly -------------------------------------------------------------


def test_a_score_of_exactly_0_6_from_name_and_recency_merges(bank):
    # "alexa"/"alexe": ratio 0.8, so 0.5·0.8 + 0.2·1.0 = 0.6000000000000001.
    ident = bank.entity("Alexe", last_seen=NOW)

    result = bank.resolve("Alexa")

    assert (result["entity_id"], result["created"]) == (ident, False)
    assert round(result["score"], 6) == 0.6


def test_a_score_of_exactly_0_6_from_name_and_cooccurrence_merges(bank):
    # "marlo"/"marek": ratio 0.6, so 0.5·0.6 + 0.3·1.0 = 0.6 exactly.
    ident = bank.known_with("Marek", ["kayak trip"], last_seen=None)

    result = bank.resolve("Marlo", ["kayak trip"])

    assert (result["entity_id"], result["created"]) == (ident, False)
    assert result["score"] == 0.6


# -- literal mentions ------------------------------------------------------------------


def test_a_literal_mention_is_created_as_given_beside_a_resolving_one(bank):
    acme = bank.known_with("Acme Corporation", ["renewal"], last_seen=NOW)

    literal, resolving = bank.resolve_batch([
        {"text": "Acme Corp", "resolve": False, "nearby": ["renewal"]},
        {"text": "Acme Corp.", "nearby": ["renewal"]},
    ])

    assert (literal["canonical_name"], literal["created"]) == ("Acme Corp", True)
    assert (resolving["entity_id"], resolving["created"]) == (acme, False)
    assert bank.names() == ["Acme Corp", "Acme Corporation", "renewal"]


def test_a_literal_mention_reuses_the_entity_of_the_same_name_in_any_case(bank):
    acme = bank.entity("Acme Corporation")

    result = bank.resolve("ACME CORPORATION", literal=True)

    assert (result["entity_id"], result["created"], result["score"]) == (acme, False, None)
    assert bank.names() == ["Acme Corporation"]


def test_a_literal_mention_is_never_clustered_with_a_new_near_duplicate(bank):
    resolving, literal = bank.resolve_batch(["Wren", {"text": "Wren 🕯️", "resolve": False}])

    assert resolving["entity_id"] != literal["entity_id"]
    assert bank.names() == ["Wren", "Wren 🕯️"]


# -- new names clustered in one batch ------------------------------------------------------


def test_spellings_of_one_new_name_in_a_batch_become_one_entity(bank):
    rows = bank.resolve_batch(["Wren 🕯️", "Wren", "wren"])

    assert len({r["entity_id"] for r in rows}) == 1
    assert [r["created"] for r in rows] == [True, True, True]
    assert bank.names() == ["Wren"]


def test_two_new_people_sharing_a_surname_in_a_batch_stay_two(bank):
    john, jane = bank.resolve_batch(["Dr John Richardson", "Dr Jane Richardson"])

    assert john["entity_id"] != jane["entity_id"]
    assert bank.names() == ["Dr Jane Richardson", "Dr John Richardson"]


def test_a_clustered_new_entity_takes_the_commonest_spelling_and_earliest_date(bank):
    rows = bank.resolve_batch([
        {"text": "Wren 🕯️", "event_date": "2024-05-01T00:00:00Z"},
        {"text": "wren", "event_date": "2024-05-02T00:00:00Z"},
        {"text": "Wren", "event_date": "2024-05-03T00:00:00Z"},
    ])

    row = bank.entity_row(rows[0]["entity_id"])
    assert (row["canonical_name"], row["first_seen"]) == (
        "Wren", datetime(2024, 5, 1, tzinfo=timezone.utc))


def test_no_clustering_past_intrabatch_max_names(bank):
    bank.configure({"intrabatch_max_names": 2})

    rows = bank.resolve_batch(["Wren 🕯️", "Wren", "Aster"])

    assert rows[0]["entity_id"] != rows[1]["entity_id"]
    assert bank.names() == ["Aster", "Wren", "Wren 🕯️"]


# -- the candidate cap ----------------------------------------------------------------------


def bank_where_the_fourth_candidate_wins(bank, settings=None):
    # Three close names with no history outrank Alex Morgan by trigram
    # similarity (0.83 against 0.42); only Alex Morgan has the history.
    if settings:
        bank.configure(settings)
    for name in ("Alex A", "Alex B", "Alex C"):
        bank.entity(name, last_seen=None)
    return bank.known_with("Alex Morgan", ["Acme", "renewal"], last_seen=NOW)


def test_candidates_beyond_max_candidates_are_not_probed_by_the_reference(reference_bank):
    bank_where_the_fourth_candidate_wins(reference_bank, settings={"profile": "reference", "max_candidates": 3})

    result = reference_bank.resolve("Alex", ["Acme", "renewal"])

    assert result["created"] is True
    assert result["score"] == pytest.approx(0.5 * 0.8)


def test_a_candidate_of_the_neighbourhood_beyond_max_candidates_is_scored(bank):
    # Alex Morgan is fourth by similarity, and a partner of both nearby names: of the mention's
    # neighbourhood, which the enhanced profile scores past the probe's limit.
    morgan = bank_where_the_fourth_candidate_wins(bank, settings={"max_candidates": 3})

    result = bank.resolve("Alex", ["Acme", "renewal"])

    assert (result["entity_id"], result["created"]) == (morgan, False)


def test_the_same_fourth_candidate_wins_under_the_default_cap(bank):
    morgan = bank_where_the_fourth_candidate_wins(bank)

    result = bank.resolve("Alex", ["Acme", "renewal"])

    assert (result["entity_id"], result["created"]) == (morgan, False)


# -- statistics queued -------------------------------------------------------------------------


def test_resolution_queues_one_increment_per_entity_with_the_latest_date(bank):
    ident = bank.entity("Acme")

    with bank.conn.transaction():
        bank.resolve_batch([{"text": "Acme", "event_date": "2024-05-01T00:00:00Z"},
                             {"text": "acme", "event_date": "2024-05-09T00:00:00Z"}])
        queued = bank.conn.execute(
            "SELECT entity_id, entity_id_2, increment, event_date"
            " FROM entity_resolver.stats_queue WHERE bank_id = %s", (bank.id,)).fetchall()

    assert queued == [(ident, None, 2, datetime(2024, 5, 9, tzinfo=timezone.utc))]


# -- a fixed handful of statements per call ----------------------------------------------------


def known_people(bank, n):
    """n known entities "Person <letters>", each with a selective partner."""
    people = [f"Person {chr(65 + i % 26)}{chr(65 + i // 26)}" for i in range(n)]
    for person in people:
        bank.known_with(person, [f"{person} project"], last_seen=NOW)
    return [{"text": p, "nearby": [f"{p} project"]} for p in people]


def test_resolving_58_known_mentions_takes_as_many_statements_as_1(bank):
    mentions = known_people(bank, 58)
    bank.resolve("warm up the session")

    bank.resolve_batch(mentions[:1])
    one = statements_of_last_call(bank.conn)
    bank.resolve_batch(mentions)
    many = statements_of_last_call(bank.conn)

    # bank, fold, exact names, candidates (in full, or only the identical
    # names where those settle the mention), context, write
    assert one == many == 6


def test_a_batch_of_every_kind_takes_as_many_statements_at_58_mentions_as_at_5(bank):
    # Known names, two spellings of new names (clustered), literal and label
    # mentions: every step of the pipeline has work at both sizes.
    bank.set_labels({"attributes": [{"key": "topic", "type": "text"}]})
    known = known_people(bank, 12)

    def batch(n):
        kinds = [lambda i: known[i],
                 lambda i: f"Fresh Name {chr(65 + i)}",
                 lambda i: f"fresh name {chr(65 + i)} 🕯️",
                 lambda i: {"text": f"Literal {chr(65 + i)}", "resolve": False},
                 lambda i: f"topic:subject {chr(65 + i)}"]
        return [kinds[j % 5](j // 5) for j in range(n)]

    bank.resolve("warm up the session")
    bank.resolve_batch(batch(5))
    few = statements_of_last_call(bank.conn)
    bank.resolve_batch(batch(58))
    many = statements_of_last_call(bank.conn)

    # bank, fold, exact names, candidates, context, create, write
    assert few == many == 7
