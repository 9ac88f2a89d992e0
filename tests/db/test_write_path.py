"""The write path: the facts trigger, link_unit, the views, deleting facts."""

from __future__ import annotations

import json
from collections import Counter

import psycopg
import pytest
from helpers import (
    NAMES, expected_from_facts, insert_facts, make_bank, mention_counts, nested_plans, pair_counts, plan_nodes,
    spy_on_resolver, uid,
)


def links(conn, bank_id):
    return Counter(r[0] for r in conn.execute(
        "SELECT unit_id::text FROM entity_resolver.unit_entities WHERE bank_id = %s", (bank_id,)))


# -- the facts trigger ---------------------------------------------------------

def test_multi_row_insert_makes_one_resolver_call(conn):
    calls = spy_on_resolver(conn)
    facts = [[NAMES[i % 16], NAMES[(i + 1) % 16], NAMES[(i + 5) % 16]] for i in range(300)]
    with conn.transaction():
        insert_facts(conn, "team", facts)
        fired = conn.execute(
            "SELECT pg_stat_get_xact_function_calls('entity_resolver_internal._facts_resolve_and_link'::regproc),"
            "       pg_stat_get_xact_function_calls('entity_resolver_internal._link_units'::regproc)").fetchone()
    assert fired == (1, 1)
    made = calls()
    assert len(made) == 1
    assert len(made[0]["items"]) == 900


def test_facts_id_is_the_unit_id(conn):
    ids = insert_facts(conn, "team", [["Acme", "Oslo"], ["Wren"]])
    rows = conn.execute(
        "SELECT ue.unit_id::text, e.canonical_name FROM entity_resolver.unit_entities ue"
        " JOIN entity_resolver.entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id"
        " ORDER BY 2").fetchall()
    assert rows == [(ids[0], "Acme"), (ids[0], "Oslo"), (ids[1], "Wren")]


def test_nearby_is_the_other_mentions_of_the_same_fact(conn):
    calls = spy_on_resolver(conn)
    insert_facts(conn, "team", [["Alex", "Acme", "renewal"], ["Alex", "React"]])
    items = calls()[0]["items"]
    assert [(i["text"], i["nearby"]) for i in items] == [
        ("Alex", ["Acme", "renewal"]),
        ("Acme", ["Alex", "renewal"]),
        ("renewal", ["Alex", "Acme"]),
        ("Alex", ["React"]),
        ("React", ["Alex"]),
    ]


def test_element_nearby_replaces_the_fact_mentions(conn):
    calls = spy_on_resolver(conn)
    insert_facts(conn, "team", [[{"text": "Alex", "nearby": ["Sprint 14"]}, "Acme"]])
    items = calls()[0]["items"]
    assert items[0]["nearby"] == ["Sprint 14"]
    assert items[1]["nearby"] == ["Alex"]


def test_element_event_date_moves_last_seen_and_fact_date_moves_the_pair(conn):
    insert_facts(conn, "team", [[{"text": "Acme", "event_date": "2024-03-09T00:00:00Z"}, "Oslo"]],
                 event_date="2024-03-01T00:00:00Z")
    seen = dict(conn.execute(
        "SELECT name, last_seen::date::text FROM entity_resolver.entity_overview").fetchall())
    assert seen == {"Acme": "2024-03-09", "Oslo": "2024-03-01"}
    assert conn.execute(
        "SELECT last_cooccurred::date::text FROM entity_resolver.entity_cooccurrences").fetchone()[0] == "2024-03-01"


def test_counts_and_pairs_are_exact_after_commit_for_a_known_stream(conn):
    stream = [
        ["Acme", "Alex Morgan", "Renewal"],
        ["Acme", "Renewal"],
        ["Oslo", "Acme", "acme"],            # a name twice in one fact: 2 mentions, pairs once
        ["Priya", "Zephyr", "Oslo", "Acme"],
        [],
        ["Wren"],
    ]
    for start in range(0, len(stream), 2):   # three statements, three transactions
        insert_facts(conn, "team", stream[start:start + 2])
    assert mention_counts(conn, "team") == {
        "acme": 5, "alex morgan": 1, "renewal": 2, "oslo": 2, "priya": 1, "zephyr": 1, "wren": 1}
    assert pair_counts(conn, "team") == {
        ("acme", "alex morgan"): 1, ("acme", "renewal"): 2, ("alex morgan", "renewal"): 1,
        ("acme", "oslo"): 2, ("acme", "priya"): 1, ("acme", "zephyr"): 1,
        ("oslo", "priya"): 1, ("oslo", "zephyr"): 1, ("priya", "zephyr"): 1}
    assert (mention_counts(conn, "team"), pair_counts(conn, "team")) == expected_from_facts(conn, "team")
    assert conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0] == 0


def test_rolled_back_insert_leaves_no_entity_statistic_link_or_pair(conn):
    insert_facts(conn, "team", [["Acme", "Oslo"]], event_date="2024-01-01T00:00:00Z")
    before = conn.execute(
        "SELECT name, mention_count, last_seen FROM entity_resolver.entity_overview ORDER BY 1").fetchall()
    conn.autocommit = False
    insert_facts(conn, "team", [["Acme", "Oslo", "Zephyr"], ["Zephyr", "Wren"]],
                 event_date="2024-06-01T00:00:00Z")
    conn.rollback()
    conn.autocommit = True
    after = conn.execute(
        "SELECT name, mention_count, last_seen FROM entity_resolver.entity_overview ORDER BY 1").fetchall()
    assert after == before                      # Zephyr and Wren vanished with the insert
    assert pair_counts(conn, "team") == {("acme", "oslo"): 1}
    assert sum(links(conn, "team").values()) == 2
    assert conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0] == 0


def test_one_statement_over_two_banks_resolves_each_bank_apart(conn):
    conn.execute(
        "INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES"
        " ('a', '[\"Acme\", \"Oslo\"]'), ('b', '[\"Acme\"]'), ('a', '[\"Acme\"]')")
    rows = conn.execute(
        "SELECT bank_id, name, mention_count FROM entity_resolver.entity_overview ORDER BY 1, 2").fetchall()
    assert rows == [("a", "Acme", 2), ("a", "Oslo", 1), ("b", "Acme", 1)]


def test_fact_without_mentions_is_stored_and_links_nothing(conn):
    ids = insert_facts(conn, "team", [[]])
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts WHERE id = %s", (ids[0],)).fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM entity_resolver.unit_entities").fetchone()[0] == 0


@pytest.mark.parametrize("mentions, problem", [
    ({"text": "Acme"}, "mentions (inserted row 2): must be a JSON array"),
    (["Acme", "  "], "mentions[1] (inserted row 2): must not be empty or blank"),
    ([{"text": "Acme", "when": "today"}], 'mentions[0] (inserted row 2): unknown key "when"'),
    ([{"text": "Acme", "event_date": "soon"}], "mentions[0].event_date (inserted row 2): is not a valid timestamp"),
])
def test_bad_mentions_reject_the_whole_statement_naming_the_row(conn, mentions, problem):
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(
            "INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES ('team', '[\"Oslo\"]'), ('team', %s)",
            (json.dumps(mentions),))
    assert caught.value.sqlstate in ("22023", "22007")
    assert problem in str(caught.value)
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM entity_resolver.entities").fetchone()[0] == 0


def test_empty_bank_id_is_rejected_even_without_mentions(conn):
    with pytest.raises(psycopg.Error) as caught:
        conn.execute("INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES ('', '[]')")
    assert caught.value.sqlstate == "22023"
    assert "bank_id (inserted row 1)" in str(caught.value)


@pytest.mark.parametrize("banks, row", [
    (["  ", "  ", "  "], 1),          # one bank in the statement: its first statement checks it
    (["team", "", "x" * 101], 2),     # several banks: all checked first, the first bad row named
    (["x" * 101, "team", ""], 1),
])
def test_a_bad_bank_id_names_the_first_bad_row(conn, banks, row):
    with pytest.raises(psycopg.Error) as caught:
        conn.execute("INSERT INTO entity_resolver.facts (bank_id, mentions)"
                     " SELECT b, '[\"Oslo\"]' FROM unnest(%s::text[]) WITH ORDINALITY AS u (b, i) ORDER BY i",
                     (banks,))
    assert f"bank_id (inserted row {row}):" in str(caught.value)
    assert conn.execute("SELECT count(*) FROM entity_resolver.entities").fetchone()[0] == 0


def test_a_fact_inserted_alone_runs_the_resolvers_fixed_handful_of_statements(conn):
    insert_facts(conn, "team", [["Acme", "Oslo"]])
    insert_facts(conn, "team", [["Acme", "Oslo"]])
    # bank (with the bank id check), fold, exact names, candidates, context, write
    assert conn.execute("SELECT entity_resolver_internal._last_call_statements()").fetchone()[0] == 6
    insert_facts(conn, "other", [["Acme"]])
    conn.execute("INSERT INTO entity_resolver.facts (bank_id, mentions)"
                 " VALUES ('team', '[\"Acme\", \"Oslo\"]'), ('other', '[\"Acme\"]')")
    # Two banks: their ids checked first, then each bank's handful (one
    # mention in "other": no context to read).
    assert conn.execute("SELECT entity_resolver_internal._last_call_statements()").fetchone()[0] == 1 + 6 + 5


def test_hostile_looking_names_are_stored_literally(conn):
    name = "Robert'); DROP TABLE facts; --"
    insert_facts(conn, "team", [[name, "Wren 🎵", "مرحبا"]])
    names = {r[0] for r in conn.execute("SELECT name FROM entity_resolver.entity_overview")}
    assert names == {name, "Wren 🎵", "مرحبا"}


# -- deleting and updating facts -----------------------------------------------

def test_deleting_a_fact_forgets_its_links_counts_and_pairs(conn):
    ids = insert_facts(conn, "team", [["Acme", "Oslo"], ["Acme", "Oslo"]])
    conn.execute("DELETE FROM entity_resolver.facts WHERE id = %s", (ids[0],))
    assert links(conn, "team") == {ids[1]: 2}
    assert mention_counts(conn, "team") == {"acme": 1, "oslo": 1}
    assert pair_counts(conn, "team") == {("acme", "oslo"): 1}


def test_deleting_the_last_fact_of_an_entity_removes_it(conn):
    ids = insert_facts(conn, "team", [["Acme", "Oslo"], ["Acme"]])
    conn.execute("DELETE FROM entity_resolver.facts WHERE id = %s", (ids[0],))
    assert mention_counts(conn, "team") == {"acme": 1}
    assert pair_counts(conn, "team") == {}


def test_deleting_a_fact_moves_last_seen_back(conn):
    insert_facts(conn, "team", [["Acme"]], event_date="2024-03-01")
    later = insert_facts(conn, "team", [["Acme"]], event_date="2024-03-09")
    conn.execute("DELETE FROM entity_resolver.facts WHERE id = %s", (later[0],))
    assert conn.execute("SELECT last_seen::date::text FROM entity_resolver.entities").fetchone()[0] == "2024-03-01"


def test_deleted_fact_is_no_longer_reached_by_expansion(conn):
    ids = insert_facts(conn, "team", [["Acme"], ["Acme"], ["Acme"]])
    conn.execute("DELETE FROM entity_resolver.facts WHERE id = %s", (ids[1],))
    reached = conn.execute("SELECT unit_id::text FROM entity_resolver.expand_units('team', %s::uuid[])",
                           ([ids[0]],)).fetchall()
    assert reached == [(ids[2],)]


def test_truncate_forgets_the_facts_and_keeps_link_unit_links(conn):
    ent = make_bank(conn, "team", ["Acme"])
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), [ent["Acme"]]))
    insert_facts(conn, "team", [["Acme", "Oslo"]])
    conn.execute("TRUNCATE entity_resolver.facts")
    assert links(conn, "team") == {uid(1): 1}
    # Oslo was only in the fact: nothing refers to it any more.
    assert [r[0] for r in conn.execute("SELECT canonical_name FROM entity_resolver.entities")] == ["Acme"]


def test_truncating_every_table_at_once_forgets_the_facts_first(conn):
    # The forgetting's statistics are applied before the tables are emptied:
    # a flush left for commit would read a queue row of a truncated table.
    ent = make_bank(conn, "team", ["Acme"])
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), [ent["Acme"]]))
    insert_facts(conn, "team", [["Acme", "Oslo"], ["Oslo", "Wren"]])
    conn.execute("TRUNCATE entity_resolver.facts, entity_resolver.stats_queue, entity_resolver.mentions")
    assert links(conn, "team") == {uid(1): 1}
    assert conn.execute("SELECT canonical_name, mention_count FROM entity_resolver.entities").fetchall() == [("Acme", 0)]
    conn.execute("TRUNCATE entity_resolver.banks CASCADE")
    assert conn.execute("SELECT count(*) FROM entity_resolver.entities").fetchone()[0] == 0


def test_updating_the_mentions_of_a_fact_is_refused(conn):
    ids = insert_facts(conn, "team", [["Acme"]])
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="mentions and event_date cannot be updated"):
        conn.execute("UPDATE entity_resolver.facts SET mentions = '[\"Oslo\"]' WHERE id = %s", (ids[0],))


def test_updating_the_content_of_a_fact_is_allowed(conn):
    ids = insert_facts(conn, "team", [["Acme"]])
    conn.execute("UPDATE entity_resolver.facts SET content = 'Acme renewed.' WHERE id = %s", (ids[0],))
    assert links(conn, "team") == {ids[0]: 1}


# -- link_unit -----------------------------------------------------------------

def test_link_unit_links_and_counts_each_pair_once(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo", "Wren"])
    added = conn.execute(
        "SELECT entity_resolver.link_unit('team', %s, %s::uuid[], '2024-02-02')",
        (uid(1), [ent["Acme"], ent["Oslo"], ent["Wren"], ent["Acme"]])).fetchone()[0]
    assert added == 3
    assert pair_counts(conn, "team") == {("acme", "oslo"): 1, ("acme", "wren"): 1, ("oslo", "wren"): 1}


def test_link_unit_does_not_count_mentions(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo"])
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), list(ent.values())))
    assert mention_counts(conn, "team") == {"acme": 0, "oslo": 0}


def test_linking_the_same_unit_again_counts_nothing_twice(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo"])
    for _ in range(2):
        conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), list(ent.values())))
    assert pair_counts(conn, "team") == {("acme", "oslo"): 1}
    assert links(conn, "team") == {uid(1): 2}


def test_linking_more_entities_to_a_unit_pairs_them_with_its_earlier_ones(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo", "Wren"])
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), [ent["Acme"], ent["Oslo"]]))
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), [ent["Acme"], ent["Wren"]]))
    assert pair_counts(conn, "team") == {("acme", "oslo"): 1, ("acme", "wren"): 1, ("oslo", "wren"): 1}


def test_a_fact_in_a_bank_the_statistics_do_not_know_is_linked_without_a_loop_per_link(conn):
    # The statistics know a bank of 6,000 links; a bank made since is estimated at a row or so. Its
    # fact's earlier links are read once per unit all the same: planned as a loop over the added links,
    # each checked against the others one by one, a fact of 1,000 new names took 40-57 s to link.
    conn.execute("INSERT INTO entity_resolver.banks (bank_id) VALUES ('known')")
    conn.execute("INSERT INTO entity_resolver.entities (bank_id, id, canonical_name)"
                 " SELECT 'known', md5('e' || g)::uuid, 'known ' || g FROM generate_series(1, 600) AS g")
    conn.execute("INSERT INTO entity_resolver.unit_entities (bank_id, unit_id, entity_id)"
                 " SELECT 'known', md5('u' || g)::uuid, md5('e' || (1 + (g * 7 + k) % 600))::uuid"
                 " FROM generate_series(1, 1000) AS g, generate_series(1, 6) AS k")
    conn.execute("ANALYZE entity_resolver.entities, entity_resolver.unit_entities")
    n = 150
    plans = nested_plans(conn, analyze=True)
    insert_facts(conn, "fresh", [[f"fresh {i}" for i in range(n)]])
    linking = [p for q, p in plans() if "unit_entities AS m" in q or "INSERT INTO stats_queue" in q]
    assert linking
    for node in (node for p in linking for node in plan_nodes(p)):
        # The added links pair up once (the join filter removes n(n+1)/2 rows); nothing is done n^3 times.
        assert node.get("Rows Removed by Join Filter", 0) <= n * n, json.dumps(node)[:300]
        assert node.get("Actual Rows", 0) * node.get("Actual Loops", 1) <= n * n, json.dumps(node)[:300]
    assert len(pair_counts(conn, "fresh")) == n * (n - 1) // 2


def test_link_unit_keeps_the_later_cooccurrence_date(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo"])
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[], '2024-05-01')", (uid(1), list(ent.values())))
    conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[], '2024-01-01')", (uid(2), list(ent.values())))
    row = conn.execute(
        "SELECT cooccurrence_count, last_cooccurred::date::text FROM entity_resolver.entity_cooccurrences").fetchone()
    assert row == (2, "2024-05-01")


@pytest.mark.parametrize("bank_id, unit_id, entity_ids, argument, error", [
    ("", uid(1), [], "bank_id", psycopg.errors.InvalidParameterValue),
    ("team", None, [], "unit_id", psycopg.errors.NullValueNotAllowed),
    ("team", uid(1), None, "entity_ids", psycopg.errors.NullValueNotAllowed),
    ("team", uid(1), [], "entity_ids", psycopg.errors.InvalidParameterValue),
    ("team", uid(1), [None], "entity_ids", psycopg.errors.NullValueNotAllowed),
    ("team", uid(1), [uid(99)], "entity_ids", psycopg.errors.InvalidParameterValue),
])
def test_link_unit_rejects_bad_arguments_naming_them(conn, bank_id, unit_id, entity_ids, argument, error):
    make_bank(conn, "team", ["Acme"])
    with pytest.raises(error, match=f"^{argument}:"):
        conn.execute("SELECT entity_resolver.link_unit(%s, %s, %s::uuid[])", (bank_id, unit_id, entity_ids))
    assert conn.execute("SELECT count(*) FROM entity_resolver.unit_entities").fetchone()[0] == 0


def test_link_unit_refuses_an_entity_of_another_bank(conn):
    other = make_bank(conn, "other", ["Acme"])
    make_bank(conn, "team")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="is not an entity of bank 'team'"):
        conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (uid(1), [other["Acme"]]))


# -- views ---------------------------------------------------------------------

def test_entity_overview_shows_counts_degree_and_dates(conn):
    insert_facts(conn, "team", [["Acme", "Oslo", "Wren"], ["Acme", "Oslo"]], event_date="2024-04-04T00:00:00Z")
    rows = conn.execute(
        "SELECT name, kind, mention_count, degree, first_seen::date::text, last_seen::date::text"
        " FROM entity_resolver.entity_overview WHERE bank_id = 'team' ORDER BY name").fetchall()
    assert rows == [
        ("Acme", "regular", 2, 2, "2024-04-04", "2024-04-04"),
        ("Oslo", "regular", 2, 2, "2024-04-04", "2024-04-04"),
        ("Wren", "regular", 1, 2, "2024-04-04", "2024-04-04"),
    ]


def test_entity_neighbors_lists_a_neighbourhood_from_either_side(conn):
    insert_facts(conn, "team", [["Acme", "Oslo"], ["Acme", "Wren"], ["Acme", "Wren"]])
    rows = conn.execute(
        "SELECT neighbor_name, cooccurrence_count FROM entity_resolver.entity_neighbors"
        " WHERE bank_id = 'team' AND entity_name = 'Acme' ORDER BY 1").fetchall()
    assert rows == [("Oslo", 1), ("Wren", 2)]
    rows = conn.execute(
        "SELECT neighbor_name FROM entity_resolver.entity_neighbors"
        " WHERE bank_id = 'team' AND entity_name = 'Wren'").fetchall()
    assert rows == [("Acme",)]
