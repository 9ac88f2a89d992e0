"""explain_mention: every candidate with its signals and decision; writes nothing."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from bank_builders import NOW, Bank, chosen


def test_explain_writes_nothing_for_an_unknown_bank(shared_conn):
    unknown = Bank(shared_conn, "never used")

    unknown.explain("Alex", ["Acme"])

    assert unknown.row_counts() == {t: 0 for t in unknown.row_counts()}


def test_explain_writes_nothing_where_resolve_would_create_and_queue(bank):
    bank.known_with("Alex Morgan", ["Acme"], last_seen=NOW)
    before = bank.row_counts()

    rows = bank.explain("Alex", ["Acme"])

    assert chosen(rows) is not None
    assert bank.row_counts() == before


def test_explain_runs_in_a_read_only_transaction(bank):
    bank.known_with("Alex Morgan", ["Acme"], last_seen=NOW)

    with bank.conn.transaction():
        bank.conn.execute("SET TRANSACTION READ ONLY")
        rows = bank.explain("Alex", ["Acme"])

    assert chosen(rows)["canonical_name"] == "Alex Morgan"


def test_explain_chosen_row_is_the_entity_resolve_picks(reference_bank):
    bank = reference_bank
    bank.known_with("Alex Kim", ["React", "Sprint 14"], last_seen=NOW)
    bank.known_with("Alex Morgan", ["Acme", "renewal"], last_seen=NOW)

    rows = bank.explain("Alex", ["Acme", "renewal"])
    result = bank.resolve("Alex", ["Acme", "renewal"])

    assert chosen(rows)["candidate_id"] == result["entity_id"]
    assert chosen(rows)["score"] == result["score"]
    assert {r["canonical_name"]: r["decision"] for r in rows} == {
        "Alex Morgan": "chosen", "Alex Kim": "below_threshold"}


def test_explain_shows_a_near_miss_under_the_floor(bank):
    tigran = bank.known_with("Tigran", ["Yerevan"], last_seen=NOW)

    (row,) = bank.explain("Iran", ["Yerevan"])

    assert (row["candidate_id"], row["decision"], row["score"]) == (tigran, "below_floor", None)
    assert row["trigram_similarity"] == pytest.approx(0.2)


def test_explain_marks_a_word_mismatch(bank):
    bank.known_with("Jane Smith", ["standup"], last_seen=NOW)

    (row,) = bank.explain("John Smith", ["standup"])

    assert (row["tokens_compatible"], row["decision"], row["score"]) == (False, "word_mismatch", None)


def test_explain_shows_a_label_row_as_never_a_candidate(bank):
    bank.set_labels({"attributes": [{"key": "pedagogy", "type": "value",
                                     "values": [{"value": "scaffolding"}]}]})
    bank.entity("pedagogy:scaffolding", kind="label")

    (row,) = bank.explain("pedagogy scaffolding")

    assert (row["canonical_name"], row["decision"], row["score"]) == (
        "pedagogy:scaffolding", "label_row", None)


def test_explain_of_a_label_mention_shows_the_exact_row_resolve_takes(bank):
    bank.set_labels({"attributes": [{"key": "pedagogy", "type": "value",
                                     "values": [{"value": "scaffolding"}]}]})
    label = bank.entity("pedagogy:scaffolding", kind="label")

    (row,) = bank.explain("Pedagogy:Scaffolding")
    result = bank.resolve("Pedagogy:Scaffolding")

    assert (row["candidate_id"], row["decision"]) == (label, "chosen")
    assert result["entity_id"] == label


def test_explain_marks_a_passing_runner_up_outscored(bank):
    exact = bank.entity("Acme Corp", last_seen=None)
    bank.known_with("Acme Corporation", ["renewal"], last_seen=NOW)

    rows = bank.explain("Acme Corp", ["renewal"])

    assert chosen(rows)["candidate_id"] == exact
    assert {r["canonical_name"]: r["decision"] for r in rows}["Acme Corporation"] == "outscored"


@pytest.mark.parametrize("way", ["off", "on"])
def test_explain_says_which_candidates_resolution_reads(bank, way):
    # An old namesake without partners in common is outside the mention's
    # neighbourhood; one seen six days ago is in it (recency), with a name
    # further from the mention's.
    bank.known_with("Sarah Chen", ["Acme"], last_seen=NOW - timedelta(days=400))
    bank.known_with("Sarah Chandler", ["Globex"], last_seen=NOW - timedelta(days=6))
    # (The index probes the bank either way: not read whole as a small bank.)
    bank.conn.execute("SELECT set_config('entity_resolver.neighbourhood_probe', %s, false),"
                      " set_config('entity_resolver.small_bank_probe', 'off', false)", (way,))
    try:
        rows = {r["canonical_name"]: r for r in bank.explain("Sarah Chan", ["Initech"])}
        result = bank.resolve("Sarah Chan", ["Initech"])
    finally:
        bank.conn.execute("RESET entity_resolver.neighbourhood_probe")
        bank.conn.execute("RESET entity_resolver.small_bank_probe")

    assert {n: (r["decision"], r["considered"]) for n, r in rows.items()} == {
        "Sarah Chen": ("below_threshold", way == "off"), "Sarah Chandler": ("below_threshold", True)}
    # The full probe records the old namesake's score, the better; the neighbourhood the best it read.
    assert rows["Sarah Chen"]["score"] > rows["Sarah Chandler"]["score"]
    assert result["created"]
    assert result["score"] == rows["Sarah Chen" if way == "off" else "Sarah Chandler"]["score"]


# -- explain and resolve agree -----------------------------------------------------

FIRST = ["Alex", "Alexa", "Sarah", "Sara", "John", "Jane", "Maria", "Marie", "Wren", "Tigran"]
LAST = ["Kim", "Chen", "Smith", "Morgan", "Lee", "Richardson"]
THINGS = ["Room 101", "Room 102", "Python", "Python 3", "Acme", "Acme Corp", "React",
          "Sprint 14", "renewal", "UA123", "São Paulo", "Wren 🎵", "GPT-4", "New York"]


def random_bank(bank, rng):
    names = sorted({f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(30)} | set(THINGS))
    ids = []
    for name in names:
        last_seen = rng.choice([None, NOW + timedelta(days=rng.uniform(-10, 10))])
        ids.append(bank.entity(name, last_seen=last_seen))
    pairs = {frozenset(rng.sample(ids, 2)) for _ in range(90)}
    for a, b in sorted(tuple(sorted(p)) for p in pairs):
        bank.cooccur(a, b, count=rng.randrange(1, 4))
    return names


def random_mention(rng, names):
    name = rng.choice(names + FIRST + LAST)
    change = rng.randrange(6)
    if change == 0:
        name = name.split()[0]
    elif change == 1:
        name = name.upper()
    elif change == 2 and len(name) > 3:
        i = rng.randrange(len(name))
        name = name[:i] + rng.choice("aeiouxyz") + name[i + 1:]
    elif change == 3:
        name = f"{name} {rng.randrange(1, 5)}"
    nearby = rng.sample(names + ["standup", "user"], rng.randrange(4))
    return name, nearby, NOW + timedelta(days=rng.uniform(-9, 9))


def test_explain_agrees_with_resolve_on_random_inputs(bank):
    rng = random.Random(20240603)
    names = random_bank(bank, rng)
    disagreements = []
    merged = 0

    for _ in range(300):
        mention, nearby, when = random_mention(rng, names)
        rows = bank.explain(mention, nearby, event_date=when)
        with bank.conn.transaction(force_rollback=True):
            result = bank.resolve(mention, nearby, event_date=when)
        pick = chosen(rows)
        scores = [r["score"] for r in rows if r["score"] is not None]
        # the chosen row's score (the best one, unless a lever of the enhanced
        # profile chose by context among entities the name fits), else the best
        expected = (pick["candidate_id"] if pick else None, pick is None,
                    pick["score"] if pick else max(scores, default=None))
        got = (None if result["created"] else result["entity_id"], result["created"], result["score"])
        merged += pick is not None
        if expected != got:
            disagreements.append((mention, nearby, expected, got))

    assert disagreements == []
    assert 30 < merged < 270  # the inputs exercise both decisions
