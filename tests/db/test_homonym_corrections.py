"""Corrections with homonyms (issue 31, item 5): several entities of one bank may share a name.

An operator repairs an over-merged namesake by splitting it under the same
name (the split-off entity is a homonym); merges of homonyms add no alias a
remaining namesake would lose its mentions to; every such correction is
undone exactly (a snapshot of the identity tables compares). The property
over random streams is in test_homonym_properties.py.
"""

from __future__ import annotations

import psycopg
import pytest

from corrections_helpers import ER, call, differences, insert_fact, snapshot

BANK = "namesakes"


def person(name, **attributes):
    return {"text": name, "type": "person", "attributes": attributes}


def fact(conn, mentions, day):
    return insert_fact(conn, BANK, mentions, f"2026-03-{day:02d}T09:00:00Z")


def named(conn, name="Maria Schmidt"):
    """The entities of a name: (id, homonym id or None), first entity first."""
    return [(str(r[0]), r[1] and str(r[1])) for r in conn.execute(
        f"SELECT id, homonym FROM {ER}.entities WHERE bank_id = %s AND canonical_name = %s"
        " ORDER BY homonym IS NOT NULL, id", (BANK, name))]


def entity_of(conn, unit):
    return str(conn.execute(f"SELECT entity_id FROM {ER}.mentions WHERE bank_id = %s AND unit_id = %s"
                            " AND mention LIKE '%%Schmidt'", (BANK, unit)).fetchone()[0])


def lookup(conn, mention, nearby=(), attributes=None):
    import json
    return conn.execute(
        f"SELECT entity_id::text, decision FROM {ER}.lookup_mention(%s, %s, %s::text[], %s, 'person', %s::jsonb)",
        (BANK, mention, list(nearby), "2026-03-20T09:00:00Z",
         None if attributes is None else json.dumps(attributes))).fetchone()


@pytest.fixture
def over_merged(conn):
    """One 'Maria Schmidt' holding two people: the colleague (born 1961, Berlin office) and, undated, the
    customer of order 4411, who arrived while only one Maria Schmidt was known."""
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"], 1)
    customer = [fact(conn, [person("Maria Schmidt"), "order 4411"], d) for d in (2, 3)]
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"], 4)
    (maria, _), = named(conn)
    return maria, customer


def test_a_split_keeping_the_name_makes_a_homonym_and_later_mentions_find_their_person(conn, over_merged):
    maria, customer = over_merged
    before = snapshot(conn, BANK)
    dry = call(conn, "split_entity", BANK, maria, customer, "Maria Schmidt", dry_run=True)
    assert dry["new_entity"] == {"entity_id": None, "name": "Maria Schmidt", "homonym": True}
    assert dry["summary"] == "split 'Maria Schmidt' (a new homonym) from 'Maria Schmidt' (2 units)"
    assert snapshot(conn, BANK) == before
    plan = call(conn, "split_entity", BANK, maria, customer, "Maria Schmidt", reason="two people")
    other = str(plan["new_entity"]["entity_id"])
    assert named(conn) == [(maria, None), (other, other)]
    assert [entity_of(conn, u) for u in customer] == [other, other]
    assert differences(conn, BANK)["differences"] == 0
    # Later mentions: by context, by birth date.
    assert lookup(conn, "Maria Schmidt", ["order 4411"]) == (other, "resolved")
    assert lookup(conn, "Maria Schmidt", ["Berlin office"]) == (maria, "resolved")
    assert lookup(conn, "Maria Schmidt", attributes={"birth_date": "1961-05-03"})[0] == maria
    # Summaries name each by its birth date when it holds one, by its id's first digits always.
    judged = call(conn, "mark_distinct", BANK, other, maria, dry_run=True)
    assert judged["summary"] == (
        f"mark 'Maria Schmidt' ({other[:8]}) and 'Maria Schmidt' (birth_date 1961-05-03, {maria[:8]}) distinct")
    call(conn, "undo_operation", BANK, plan["operation_id"])
    assert snapshot(conn, BANK) == before


def test_a_split_under_another_entitys_name_is_still_refused(conn, over_merged):
    maria, customer = over_merged
    fact(conn, ["Maria Weber", "order 4411"], 5)
    with pytest.raises(Exception, match="new_name: 'Maria Weber' is already the name of entity"):
        call(conn, "split_entity", BANK, maria, customer, "Maria Weber")


def test_a_merge_of_two_homonyms_adds_no_alias_and_undo_restores_both(conn):
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"], 1)
    fact(conn, [person("Maria Schmidt", birth_date="1990-11-20"), "order 4411"], 2)
    (first, _), (second, homonym) = named(conn)
    assert homonym == second
    before = snapshot(conn, BANK)
    # The summary (and history) names each by its birth date and its id's first digits: the name alone says
    # nothing. The same labels as the CLI's tables.
    a, b = f"birth_date 1961-05-03, {first[:8]}", f"birth_date 1990-11-20, {second[:8]}"
    judged = call(conn, "mark_distinct", BANK, first, second, dry_run=True)
    assert judged["summary"] == f"mark 'Maria Schmidt' ({a}) and 'Maria Schmidt' ({b}) distinct"
    plan = call(conn, "merge_entities", BANK, [second], first, reason="one person after all")
    assert plan["summary"] == f"merge 'Maria Schmidt' ({b}) into 'Maria Schmidt' ({a})"
    [history] = conn.execute(f"SELECT summary FROM {ER}.operation_history(%s)", (BANK,)).fetchone()
    assert history == plan["summary"]
    assert plan["aliases_added"] == []
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE bank_id = %s", (BANK,)).fetchone()[0] == 0
    assert named(conn) == [(first, None)]
    call(conn, "undo_operation", BANK, plan["operation_id"])
    assert snapshot(conn, BANK) == before


def test_the_first_of_a_name_merged_into_its_homonym_comes_back_on_undo(conn):
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03")], 1)
    fact(conn, [person("Maria Schmidt", birth_date="1990-11-20")], 2)
    (first, _), (second, _) = named(conn)
    before = snapshot(conn, BANK)
    plan = call(conn, "merge_entities", BANK, [first], second)
    assert named(conn) == [(second, second)]
    call(conn, "undo_operation", BANK, plan["operation_id"])
    assert snapshot(conn, BANK) == before


def test_a_homonym_merged_into_another_name_leaves_its_name_to_the_namesake_that_stays(conn):
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"], 1)
    fact(conn, [person("Maria Schmidt", birth_date="1990-11-20"), "order 4411"], 2)
    fact(conn, [person("Customer 4411"), "order 4411", "invoice"], 3)
    (first, _), (second, _) = named(conn)
    (short, _), = named(conn, "Customer 4411")
    before = snapshot(conn, BANK)
    plan = call(conn, "merge_entities", BANK, [second], short)
    # No alias 'Maria Schmidt' -> Customer 4411: it would take every later Maria Schmidt.
    assert plan["aliases_added"] == []
    assert lookup(conn, "Maria Schmidt", ["Berlin office"])[0] == first
    call(conn, "undo_operation", BANK, plan["operation_id"])
    assert snapshot(conn, BANK) == before


def test_a_merge_of_differently_named_entities_still_keeps_the_sources_name_as_an_alias(conn):
    fact(conn, ["Maria Schmidt", "Berlin office"], 1)
    fact(conn, ["Anna Berg", "order 4411"], 2)
    (first, _), = named(conn)
    (anna, _), = named(conn, "Anna Berg")
    plan = call(conn, "merge_entities", BANK, [anna], first)
    assert plan["aliases_added"] == ["Anna Berg"]
    assert conn.execute(f"SELECT alias FROM {ER}.entity_aliases WHERE bank_id = %s", (BANK,)).fetchall() == [
        ("Anna Berg",)]


def test_a_name_two_homonyms_bear_is_refused_where_one_entity_is_meant(conn):
    from entity_resolver.client import Client

    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03")], 1)
    fact(conn, [person("Maria Schmidt", birth_date="1990-11-20")], 2)
    fact(conn, ["Berlin office"], 3)
    er = Client(conn)
    with pytest.raises(ValueError, match=r"^entity: bank 'namesakes' has 2 entities named 'Maria Schmidt' \(homonyms\)"):
        er.entity_id(BANK, "Maria Schmidt")
    with pytest.raises(ValueError, match="homonyms"):
        er.merge(BANK, ["Berlin office"], "maria schmidt", dry_run=True)
    # By id, it works.
    (first, _), _ = named(conn)
    assert str(er.entity_id(BANK, first)) == first


def test_forgetting_an_entity_named_as_an_earlier_alias_of_another_is_undone_exactly(conn):
    # Tom Baker merged into Maria Schmidt leaves her the alias 'Tom Baker'; a later Tom Baker born another
    # day is told apart by the birth date and made an entity of that name beside the alias. Forgetting it
    # and undoing the forget gives back what stood: the alias was there before the forget.
    fact(conn, [person("Tom Baker"), "Acme"], 1)
    fact(conn, [person("Maria Schmidt", birth_date="1961-05-03"), "Acme"], 2)
    (tom, _), = named(conn, "Tom Baker")
    (maria, _), = named(conn)
    call(conn, "merge_entities", BANK, [tom], maria)
    fact(conn, [person("Tom Baker", birth_date="1984-11-20"), "renewal"], 3)
    (later, _), = named(conn, "Tom Baker")
    before = snapshot(conn, BANK)
    forgotten = call(conn, "forget_entity", BANK, later)
    call(conn, "undo_operation", BANK, forgotten["operation_id"])
    assert snapshot(conn, BANK) == before
    # An alias given since the forget still takes the name: the undo is refused and changes nothing.
    forgotten = call(conn, "forget_entity", BANK, later)
    call(conn, "remove_alias", BANK, "Tom Baker")
    call(conn, "add_alias", BANK, maria, "Tom Baker")
    after = snapshot(conn, BANK)
    with pytest.raises(psycopg.errors.UniqueViolation,
                       match="^operation_id: cannot undo operation .* 'Tom Baker' now belongs"):
        call(conn, "undo_operation", BANK, forgotten["operation_id"])
    assert snapshot(conn, BANK) == after
