"""Entity-link expansion: expand_units."""

from __future__ import annotations

import psycopg
import pytest
import settings
from helpers import insert_facts, make_bank, uid


@pytest.fixture
def bank(conn):
    """Bank 'team' with entities A..E; link(n, names, date) links unit uid(n)."""
    ent = make_bank(conn, "team", ["A", "B", "C", "D", "E"])

    def link(n, names, date="2024-01-01"):
        conn.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[], %s)",
                     (uid(n), [ent[x] for x in names], date))

    return link


def expand(conn, seeds, max_results=50, bank_id="team"):
    return conn.execute(
        "SELECT unit_id::text, shared_entities FROM entity_resolver.expand_units(%s, %s::uuid[], %s)",
        (bank_id, [uid(s) for s in seeds], max_results)).fetchall()


def test_expansion_ranks_by_distinct_shared_entities(conn, bank):
    bank(1, ["A", "B", "C"])
    bank(2, ["A"])
    bank(3, ["A", "B", "C", "D"])
    bank(4, ["B", "C"])
    bank(5, ["D", "E"])
    assert expand(conn, [1]) == [(uid(3), 3), (uid(4), 2), (uid(2), 1)]


def test_expansion_breaks_ties_by_most_recent_event_date_then_id(conn, bank):
    bank(1, ["A"])
    bank(2, ["A"], "2024-01-01")
    bank(3, ["A"], "2024-03-01")
    bank(4, ["A"], "2024-02-01")
    bank(6, ["A"], "2024-02-01")
    bank(5, ["A"], "2024-02-01")
    assert [u for u, _ in expand(conn, [1])] == [uid(3), uid(4), uid(5), uid(6), uid(2)]


def test_expansion_excludes_the_seeds(conn, bank):
    bank(1, ["A", "B"])
    bank(2, ["A", "B"])
    bank(3, ["B"])
    assert expand(conn, [1, 2]) == [(uid(3), 1)]


def test_each_entity_contributes_at_most_expansion_per_entity_limit_facts(conn, bank):
    conn.execute("SELECT entity_resolver.configure_bank('team', '{\"expansion_per_entity_limit\": 2}')")
    bank(1, ["A", "B"])
    for n, day in zip(range(10, 15), range(1, 6)):
        bank(n, ["A"], f"2024-01-0{day}")      # a hub: five facts
    bank(20, ["B"], "2023-01-01")
    # The hub brings its two most recent facts; B's only fact still comes in.
    assert expand(conn, [1]) == [(uid(14), 1), (uid(13), 1), (uid(20), 1)]


def test_seeds_do_not_use_up_the_per_entity_cap(conn, bank):
    conn.execute("SELECT entity_resolver.configure_bank('team', '{\"expansion_per_entity_limit\": 1}')")
    bank(1, ["A"], "2024-09-01")
    bank(2, ["A"], "2024-01-01")
    assert expand(conn, [1]) == [(uid(2), 1)]


def test_default_per_entity_cap_is_the_settings_default(conn, bank):
    limit = settings.DEFAULTS["expansion_per_entity_limit"]
    ent = conn.execute("SELECT id FROM entity_resolver.entities WHERE canonical_name = 'A'").fetchone()[0]
    bank(1, ["A"])
    conn.execute(
        "INSERT INTO entity_resolver.unit_entities (bank_id, unit_id, entity_id, event_date)"
        " SELECT 'team', gen_random_uuid(), %s, now() FROM generate_series(1, %s)", (ent, limit + 5))
    assert len(expand(conn, [1], max_results=100000)) == limit


def test_expansion_returns_at_most_max_results(conn, bank):
    bank(1, ["A"])
    for n in range(2, 12):
        bank(n, ["A"])
    assert len(expand(conn, [1], max_results=3)) == 3


def test_expansion_of_an_unknown_bank_or_unlinked_seed_is_empty(conn, bank):
    bank(1, ["A"])
    bank(2, ["A"])
    assert expand(conn, [1], bank_id="nobody") == []
    assert expand(conn, [99]) == []
    assert expand(conn, []) == []


def test_expansion_follows_facts_inserted_into_the_facts_table(conn):
    ids = insert_facts(conn, "team", [["Acme", "Oslo"], ["Oslo", "Acme", "Wren"], ["Wren"], ["Zephyr"]])
    rows = conn.execute("SELECT unit_id::text, shared_entities FROM entity_resolver.expand_units('team', %s::uuid[])",
                        ([ids[0]],)).fetchall()
    assert rows == [(ids[1], 2)]


def test_expansion_carries_each_facts_own_fact_id_and_null_for_a_retained_unit(conn):
    conn.execute("INSERT INTO entity_resolver.facts (bank_id, fact_id, content, mentions) VALUES"
                 " ('team', 'note-1', 'x', '[\"Acme\", \"Oslo\"]'), ('team', 'note-2', 'y', '[\"Oslo\"]')")
    conn.execute("SELECT entity_resolver.retain('team', %s, '[\"Acme\"]', now())", (uid(7),))
    seed = conn.execute("SELECT id FROM entity_resolver.facts WHERE fact_id = 'note-1'").fetchone()[0]
    rows = conn.execute("SELECT unit_id::text, shared_entities, fact_id FROM entity_resolver.expand_units('team', %s)",
                        ([seed],)).fetchall()
    note_2 = conn.execute("SELECT id::text FROM entity_resolver.facts WHERE fact_id = 'note-2'").fetchone()[0]
    assert sorted(rows) == sorted([(note_2, 1, "note-2"), (uid(7), 1, None)])


@pytest.mark.parametrize("bank_id, seeds, max_results, argument", [
    ("", [], 50, "bank_id"),
    ("team", None, 50, "seed_unit_ids"),
    ("team", [], 0, "max_results"),
    ("team", [], None, "max_results"),
])
def test_expansion_rejects_bad_arguments_naming_them(conn, bank_id, seeds, max_results, argument):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=f"^{argument}:"):
        conn.execute("SELECT * FROM entity_resolver.expand_units(%s, %s::uuid[], %s)", (bank_id, seeds, max_results))
