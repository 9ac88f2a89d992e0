"""The Python client: typed results, any connection source, no hidden state."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from entity_resolver.client import (
    Client, Entity, Expansion, Explanation, FlushResult, Mention, Neighbor, Resolution, Retained,
)
from entity_resolver.importer import fact_uuid
from entity_resolver.install import install
from shared import dsn_of

DAY = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)


def count(conn, table, bank="team"):
    return conn.execute(f"SELECT count(*) FROM entity_resolver.{table} WHERE bank_id = %s", (bank,)).fetchone()[0]


@pytest.fixture
def er(conn) -> Client:
    return Client(conn)


# -- connection sources ---------------------------------------------------------

def test_client_from_a_dsn_owns_its_connection_and_closes_it(conn):
    client = Client(dsn_of(conn))
    with client:
        assert client.resolve("team", "Acme").created is True
    assert client._conn.closed


def test_client_never_closes_a_connection_it_was_given(conn):
    with Client(conn) as er:
        er.resolve("team", "Acme")
    assert not conn.closed
    assert count(conn, "entities") == 1


def test_client_works_with_a_connection_pool(conn):
    with ConnectionPool(dsn_of(conn), min_size=1, max_size=2, open=True) as pool:
        er = Client(pool)
        first = er.resolve("team", "Acme", event_date=DAY)
        again = er.resolve("team", "acme", event_date=DAY)
    assert first.created and not again.created
    assert again.entity_id == first.entity_id


def test_client_rejects_what_is_not_a_connection_source():
    with pytest.raises(TypeError):
        Client(42)  # type: ignore[arg-type]


def test_calls_join_the_callers_transaction_on_a_non_autocommit_connection(conn, connect):
    own = connect(autocommit=False)
    er = Client(own)
    er.retain("team", ["Alex Morgan", "Acme"], event_date=DAY)
    er.resolve("team", "renewal")
    own.rollback()
    assert count(conn, "entities") == 0
    assert count(conn, "facts") == 0


def test_two_clients_on_two_schemas_do_not_share_state(conn):
    install(conn, "er_two")
    one, two = Client(conn), Client(conn, schema="er_two")
    one.resolve("team", "Acme")
    assert two.resolve("team", "Acme").created is True
    assert conn.execute("SELECT count(*) FROM er_two.entities").fetchone()[0] == 1
    assert count(conn, "entities") == 1


def test_a_schema_name_that_needs_quoting_works(conn):
    install(conn, "Resolver Two")
    er = Client(conn, schema="Resolver Two")
    assert er.resolve("team", "Acme").created is True
    assert conn.execute('SELECT count(*) FROM "Resolver Two".entities').fetchone()[0] == 1


# -- resolution -----------------------------------------------------------------

def test_resolve_returns_a_typed_resolution(er):
    r = er.resolve("team", "Alex Morgan", nearby=["Acme"], event_date=DAY)
    assert isinstance(r, Resolution)
    assert (r.mention, r.canonical_name, r.created, r.score) == ("Alex Morgan", "Alex Morgan", True, None)
    assert isinstance(r.entity_id, uuid.UUID)


def test_resolve_finds_the_entity_it_created(er):
    first = er.resolve("team", "Alex Morgan", event_date=DAY)
    again = er.resolve("team", "ALEX MORGAN", event_date="2026-03-04T10:00:00Z")
    assert again.entity_id == first.entity_id and not again.created
    assert again.score == pytest.approx(1.0)


def test_resolve_literal_does_not_score(er):
    er.resolve("team", "Room 101", event_date=DAY)
    literal = er.resolve("team", "room 101 ", resolve=False)
    assert literal.created is True and literal.canonical_name == "room 101 "


def test_resolve_many_keeps_input_order_and_accepts_every_mention_form(er):
    rows = er.resolve_many("team", [
        "Acme",
        Mention("Alex Morgan", nearby=["Acme"]),
        {"text": "ACME-1234", "resolve": False},
    ], event_date=DAY)
    assert [(r.ord, r.mention, r.canonical_name) for r in rows] == [
        (1, "Acme", "Acme"), (2, "Alex Morgan", "Alex Morgan"), (3, "ACME-1234", "ACME-1234")]
    assert all(r.created for r in rows)


def test_explain_returns_typed_candidates_and_writes_nothing(conn, er):
    er.retain("team", ["Alex Kim", "React"], event_date=DAY)
    before = count(conn, "entities")
    rows = er.explain("team", "Alex", nearby=["React"], event_date=DAY)
    assert [type(r) for r in rows] == [Explanation]
    assert rows[0].canonical_name == "Alex Kim"
    assert rows[0].decision in {"chosen", "below_threshold"}
    assert count(conn, "entities") == before


# -- write path -----------------------------------------------------------------

def test_retain_stores_the_fact_and_returns_the_linked_entities(conn, er):
    got = er.retain("team", ["Alex Morgan", "Acme", "renewal"], content="Alex Morgan asked.",
                    event_date=DAY, fact_id="f1")
    assert isinstance(got, Retained)
    assert got.fact_id == fact_uuid("f1")
    assert sorted(e.canonical_name for e in got.entities) == ["Acme", "Alex Morgan", "renewal"]
    stored = conn.execute("SELECT content, event_date FROM entity_resolver.facts WHERE id = %s",
                          (got.fact_id,)).fetchone()
    assert stored == ("Alex Morgan asked.", DAY)


def test_retain_without_a_fact_id_makes_a_new_one_each_time(er):
    a = er.retain("team", ["Acme"])
    b = er.retain("team", ["Acme"])
    assert a.fact_id != b.fact_id


def test_retain_twice_with_the_same_fact_id_is_an_error(er):
    er.retain("team", ["Acme"], fact_id="f1")
    with pytest.raises(psycopg.errors.UniqueViolation):
        er.retain("team", ["Acme"], fact_id="f1")


def test_link_then_expand_finds_facts_sharing_entities(er):
    a = er.resolve_many("team", ["Alex Morgan", "Acme"], event_date=DAY)
    b = er.resolve_many("team", ["Acme", "renewal"], event_date=DAY)
    er.link("team", "note-1", [r.entity_id for r in a], DAY)
    er.link("team", "note-2", [r.entity_id for r in b], DAY)
    got = er.expand("team", ["note-1"])
    assert got == [Expansion(fact_uuid("note-2"), 1)]


def test_flush_returns_typed_counts(connect):
    writer = connect()
    writer.execute("SET entity_resolver.flush_at_commit = off")
    er = Client(writer)
    er.retain("team", ["Alex Morgan", "Acme"], event_date=DAY)
    result = er.flush("team")
    assert result == FlushResult(entities_updated=2, pairs_updated=1)
    assert er.flush() == FlushResult(0, 0)


# -- banks ------------------------------------------------------------------------

def test_configure_merges_into_the_current_overrides(er):
    er.configure("team", threshold=0.7)
    effective = er.configure("team", {"name_weight": 0.4})
    assert effective["threshold"] == 0.7 and effective["name_weight"] == 0.4
    assert er.overrides("team") == {"threshold": 0.7, "name_weight": 0.4}


def test_configure_none_restores_the_default_and_replace_drops_the_rest(er):
    er.configure("team", threshold=0.7, name_weight=0.4)
    assert er.configure("team", threshold=None)["threshold"] == 0.6
    er.configure("team", {"max_candidates": 50}, replace=True)
    assert er.overrides("team") == {"max_candidates": 50}


def test_settings_reads_the_effective_settings_without_creating_the_bank(conn, er):
    effective = er.settings("nobody")
    assert effective["threshold"] == 0.6 and effective["max_candidates"] == 200
    assert count(conn, "banks", "nobody") == 0


def test_an_invalid_setting_is_a_database_error_naming_it(er):
    with pytest.raises(psycopg.Error) as info:
        er.configure("team", threshold=2)
    assert info.value.sqlstate == "22023"
    assert "threshold" in info.value.diag.message_primary


def test_labels_round_trip_and_offer_a_json_schema(er):
    labels = {"attributes": [{"key": "person", "type": "value",
                              "values": [{"value": "sarah-chen"}, {"value": "alex-kim"}]}]}
    stored = er.set_labels("team", labels)
    assert stored["attributes"][0]["key"] == "person"
    schema = er.labels_json_schema("team")
    assert "sarah-chen" in str(schema) and "alex-kim" in str(schema)
    r = er.resolve("team", "Person:Sarah-Chen")
    assert r.canonical_name == "Person:Sarah-Chen" and r.created


# -- inspection -------------------------------------------------------------------

def test_entities_lists_the_most_mentioned_first(er):
    er.retain("team", ["Acme", "renewal"], event_date=DAY)
    er.retain("team", ["Acme", "Alex Morgan"], event_date=DAY)
    rows = er.entities("team", top=2)
    assert [type(e) for e in rows] == [Entity, Entity]
    assert (rows[0].canonical_name, rows[0].mention_count, rows[0].degree) == ("Acme", 2, 2)
    assert rows[0].last_seen == DAY


def test_neighbors_are_case_insensitive_and_most_frequent_first(er):
    er.retain("team", ["Acme", "renewal"], event_date=DAY)
    er.retain("team", ["Acme", "renewal", "Alex Morgan"], event_date=DAY)
    rows = er.neighbors("team", "ACME")
    assert [type(n) for n in rows] == [Neighbor, Neighbor]
    assert [(n.neighbor_name, n.cooccurrence_count) for n in rows] == [("renewal", 2), ("Alex Morgan", 1)]
    assert er.find_entity("team", "acme").canonical_name == "Acme"
    assert er.find_entity("team", "nobody") is None


def test_database_errors_reach_the_caller_with_their_sqlstate(er):
    with pytest.raises(psycopg.Error) as info:
        er.resolve("team", "   ")
    assert info.value.sqlstate == "22023"
    assert "mention" in info.value.diag.message_primary
