"""Mention attributes and homonyms (issue 31): what a caller sees through SQL.

Identifying attributes (email, phone, url, handle) resolve a mention to the
one entity holding the value whatever the name's spelling; distinguishing
ones (birth_date) rule an entity out, and a mention whose every entity of its
name is ruled out creates a homonym. The reference profile stores attributes
and decides as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from bank_builders import NOW, Bank
from corrections_helpers import differences, snapshot
from shared import SCHEMA as ER

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"


def insert_fact(b: Bank, mentions, event_date=NOW) -> None:
    b.conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) VALUES (%s, %s::jsonb, %s)",
                   (b.id, json.dumps(mentions), event_date))


def person(name, **attributes):
    return {"text": name, "type": "person", "attributes": attributes}


def placed(b: Bank):
    """Each mention in order: (text, entity id, canonical name, decision, attributes)."""
    return [tuple(r) for r in b.conn.execute(
        f"SELECT m.mention, m.entity_id::text, e.canonical_name, m.decision, m.attributes FROM {ER}.mentions AS m"
        f" JOIN {ER}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
        " JOIN " + ER + ".facts AS f ON f.bank_id = m.bank_id AND f.id = m.unit_id"
        " WHERE m.bank_id = %s ORDER BY f.stored_order, m.ordinal", (b.id,))]


def entity_count(b: Bank, name: str) -> int:
    return b.conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = %s AND canonical_name = %s",
                          (b.id, name)).fetchone()[0]


def resolve(b: Bank, mentions):
    with b.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(f"SELECT * FROM {ER}.resolve_mentions(%s, %s::jsonb, %s)",
                           (b.id, json.dumps(mentions), NOW)).fetchall()


# -- shape and normalisation -----------------------------------------------------------

@pytest.mark.parametrize("attrs, argument, sqlstate", [
    ("x", "mentions[0].attributes", "22023"),
    ({"Email": "a@b.c"}, "mentions[0].attributes", "22023"),
    ({"email": 5}, "mentions[0].attributes.email", "22023"),
    ({"email": "  "}, "mentions[0].attributes.email", "22023"),
    ({"email": "x" * 501}, "mentions[0].attributes.email", "22001"),
    ({"birth_date": "the fifth of May"}, "mentions[0].attributes.birth_date", "22007"),
    ({"phone": "call me"}, "mentions[0].attributes.phone", "22023"),
])
def test_a_bad_attribute_is_refused_naming_it_and_nothing_is_written(bank, attrs, argument, sqlstate):
    with pytest.raises(psycopg.Error) as err:
        resolve(bank, [{"text": "Maria Schmidt", "attributes": attrs}])
    assert err.value.sqlstate == sqlstate
    assert argument in str(err.value)
    assert bank.conn.execute(f"SELECT count(*) FROM {ER}.mentions WHERE bank_id = %s", (bank.id,)).fetchone()[0] == 0


def test_attributes_are_stored_normalised_and_shown_per_entity(bank):
    insert_fact(bank, [person("Sarah Chen", email=" Sarah.Chen@ACME.com ", phone="+1 (555) 010-2000",
                              birth_date="1980-02-29", handle="@SChen", team="Platform")])
    (_, eid, _, _, stored), = placed(bank)
    assert stored == {"email": "sarah.chen@acme.com", "phone": "15550102000", "birth_date": "1980-02-29",
                      "handle": "schen", "team": "platform"}
    rows = bank.conn.execute(f"SELECT attribute, value, mentions FROM {ER}.entity_attributes"
                             " WHERE bank_id = %s AND entity_id = %s ORDER BY attribute", (bank.id, eid)).fetchall()
    assert [tuple(r) for r in rows] == [("birth_date", "1980-02-29", 1), ("email", "sarah.chen@acme.com", 1),
                                        ("handle", "schen", 1), ("phone", "15550102000", 1),
                                        ("team", "platform", 1)]


# -- identifying attributes -------------------------------------------------------------

def test_an_identifying_value_resolves_to_its_one_holder_whatever_the_spelling(bank):
    insert_fact(bank, [person("Sarah Chen", email="sarah@acme.com"), "Acme"])
    insert_fact(bank, [person("S. Chen", email="SARAH@acme.com")])
    insert_fact(bank, [person("Chen Sarah", email="sarah@acme.com")])
    rows = placed(bank)
    sarah = rows[0][1]
    assert [(r[0], r[1] == sarah, r[3]) for r in rows if r[0] != "Acme"] == [
        ("Sarah Chen", True, "created"), ("S. Chen", True, "identifier"), ("Chen Sarah", True, "identifier")]


def test_on_the_email_corpus_every_mention_whose_email_one_entity_holds_resolves_to_it(bank):
    # bench/corpora/homonym_emails: namesakes, spellings ("T. Pereira", "Tea
    # Pereira"), emails on a share of mentions. Replayed fact by fact, a
    # mention whose (normalised) email exactly one entity held before it goes
    # to that entity, with decision identifier, whatever its spelling.
    stream = [json.loads(line) for line in (CORPORA / "homonym_emails.jsonl").read_text(encoding="utf-8").splitlines()]
    for fact in stream:
        mentions = [{k: v for k, v in m.items() if k != "gold"} for m in fact["mentions"]]
        insert_fact(bank, mentions, fact["event_date"])
    holders, checked = {}, 0
    for text, entity, _, decision, attrs in placed(bank):
        email = (attrs or {}).get("email")
        if email is None:
            continue
        if len(holders.get(email, ())) == 1:
            assert (entity, decision) == (next(iter(holders[email])), "identifier"), text
            checked += 1
        holders.setdefault(email, set()).add(entity)
    assert checked >= 40
    assert all(len(ids) == 1 for ids in holders.values())


def test_an_identifying_value_held_by_two_entities_is_ambiguous_not_a_guess(bank):
    # Two people sharing a family inbox, told apart by their birth dates.
    insert_fact(bank, [person("Maria Schmidt", email="family@example.org", birth_date="1961-05-03")])
    insert_fact(bank, [person("Maria Schmidt", email="family@example.org", birth_date="1990-11-20")])
    insert_fact(bank, [person("M. Schmidt", email="family@example.org")])
    rows = placed(bank)
    assert rows[1][1] != rows[0][1]
    assert rows[2][3] == "ambiguous"


def test_an_identifying_value_resolves_a_mention_with_another_name_to_its_holder(bank):
    # The rule as the issue states it: one holder, whatever the name says.
    insert_fact(bank, [person("Sam Lee", email="sam@acme.com")])
    insert_fact(bank, [person("Samuel Lee-Park", email="sam@acme.com")])
    first, second = placed(bank)
    assert second[1] == first[1] and second[3] == "identifier"


def test_identifying_agreement_with_a_conflicting_birth_date_is_ambiguous(bank):
    insert_fact(bank, [person("Maria Schmidt", email="m@example.org", birth_date="1961-05-03")])
    insert_fact(bank, [person("Maria Schmidt", email="m@example.org", birth_date="1990-01-01")])
    first, second = placed(bank)
    assert second[1] != first[1]
    assert second[3] == "ambiguous"


# -- distinguishing attributes and homonyms ---------------------------------------------------

def test_a_conflicting_birth_date_creates_a_homonym_and_later_mentions_follow_their_dates(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "customer call"])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "customer call"])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "Berlin office"])
    rows = [r for r in placed(bank) if r[0] == "Maria Schmidt"]
    assert entity_count(bank, "Maria Schmidt") == 2
    older, younger = rows[0][1], rows[1][1]
    assert older != younger
    assert [r[1] for r in rows] == [older, younger, older, younger]
    assert [r[3] for r in rows] == ["created", "created", "resolved", "resolved"]
    homonym = bank.conn.execute(f"SELECT homonym::text FROM {ER}.entities WHERE bank_id = %s AND id = %s",
                                (bank.id, younger)).fetchone()[0]
    assert homonym == younger


def test_two_namesakes_born_apart_in_one_fact_are_two_entities(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "met",
                       person("Maria Schmidt", birth_date="1990-11-20"), person("Maria Schmidt")])
    rows = [r for r in placed(bank) if r[0] == "Maria Schmidt"]
    assert rows[0][1] != rows[1][1]
    assert rows[2][1] == rows[0][1]  # no date: no conflict with the first
    assert entity_count(bank, "Maria Schmidt") == 2
    # Later mentions follow their dates.
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    assert placed(bank)[-1][1] == rows[1][1]


def test_a_mention_without_attributes_is_placed_among_homonyms_by_context(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "customer call"])
    insert_fact(bank, [person("Maria Schmidt"), "customer call"])
    rows = [r for r in placed(bank) if r[0] == "Maria Schmidt"]
    assert rows[2][1] == rows[1][1]
    assert rows[2][3] == "resolved"


def test_homonyms_nothing_tells_apart_are_not_guessed_the_mention_is_an_entity_of_its_own(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03")])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    insert_fact(bank, [person("Maria Schmidt")])
    rows = [r for r in placed(bank) if r[0] == "Maria Schmidt"]
    assert rows[2][1] not in (rows[0][1], rows[1][1])
    assert rows[2][3] == "ambiguous"
    assert entity_count(bank, "Maria Schmidt") == 3
    homonym = bank.conn.execute(f"SELECT homonym::text FROM {ER}.entities WHERE bank_id = %s AND id = %s",
                                (bank.id, rows[2][1])).fetchone()[0]
    assert homonym == rows[2][1]
    explained = bank.conn.execute(
        f"SELECT decision, lever FROM {ER}.explain_mention(%s, 'Maria Schmidt')", (bank.id,)).fetchall()
    assert explained and all(r == ("ambiguous", "homonyms") for r in explained)


def test_the_one_homonym_holding_the_mentions_birth_date_is_chosen_over_one_that_holds_none(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03")])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    insert_fact(bank, [person("Maria Schmidt")])  # nothing tells: a third, holding no birth date
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03")])
    rows = [r for r in placed(bank) if r[0] == "Maria Schmidt"]
    assert [r[1] for r in rows[3:]] == [rows[1][1], rows[0][1]]
    assert [r[3] for r in rows[3:]] == ["resolved", "resolved"]
    explained = {r[0]: r[1:] for r in bank.conn.execute(
        f"SELECT candidate_id::text, decision, lever FROM {ER}.explain_mention(%s, 'Maria Schmidt', "
        "attributes => '{\"birth_date\": \"1990-11-20\"}')", (bank.id,))}
    assert explained[rows[1][1]] == ("chosen", "attributes")
    assert explained[rows[0][1]] == ("attribute_conflict", "attributes")
    assert explained[rows[2][1]] == ("outscored", "homonyms")


def test_batch_equals_fact_by_fact_with_attributes(shared_conn, request):
    facts = [
        [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"],
        [person("Maria Schmidt", birth_date="1990-11-20"), "customer call"],
        [person("M. Schmidt", email="ms@example.org", birth_date="1990-11-20"), "customer call"],
        [person("Maria Schmidt", email="ms@example.org")],
        [person("Maria Schmidt"), "Berlin office"],
    ]
    one = Bank(shared_conn, "attrs-one:" + request.node.name[:60]).create()
    for f in facts:
        insert_fact(one, f)
    batch = Bank(shared_conn, "attrs-batch:" + request.node.name[:60]).create()
    shared_conn.execute(
        f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) SELECT %s, m, %s FROM jsonb_array_elements(%s) AS m",
        (batch.id, NOW, json.dumps(facts)))

    def shape(b):
        rows = placed(b)
        first = {}
        return [(r[0], first.setdefault(r[1], len(first)), r[3]) for r in rows]

    assert shape(one) == shape(batch)


def test_the_reference_profile_stores_attributes_and_decides_as_before(reference_bank):
    insert_fact(reference_bank, [person("Maria Schmidt", birth_date="1961-05-03")])
    insert_fact(reference_bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    insert_fact(reference_bank, [person("M. Schmidt", email="x@y.z")])
    rows = placed(reference_bank)
    assert rows[1][1] == rows[0][1]
    assert rows[1][4] == {"birth_date": "1990-11-20"}
    assert entity_count(reference_bank, "Maria Schmidt") == 1


def test_attribute_kinds_are_configurable(bank):
    effective = bank.configure({"attribute_kinds": {"employee_id": "identifying", "birth_date": "ignored"}})
    assert effective["attribute_kinds"] == {"email": "identifying", "phone": "identifying", "url": "identifying",
                                            "handle": "identifying", "birth_date": "ignored",
                                            "employee_id": "identifying"}
    insert_fact(bank, [person("Maria Schmidt", employee_id="E-17", birth_date="1961-05-03")])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20")])
    insert_fact(bank, [person("Schmidt, M.", employee_id="e-17")])
    rows = placed(bank)
    assert rows[1][1] == rows[0][1]             # birth_date ignored: one entity
    assert rows[2][1] == rows[0][1] and rows[2][3] == "identifier"
    with pytest.raises(psycopg.Error) as err:
        bank.configure({"attribute_kinds": {"email": "unique"}})
    assert err.value.sqlstate == "22023" and "attribute_kinds" in str(err.value)


# -- the one-mention functions and explain ---------------------------------------------------

def explain(b: Bank, mention, attrs=None, nearby=()):
    with b.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(f"SELECT * FROM {ER}.explain_mention(%s, %s, %s::text[], %s, %s, %s::jsonb)",
                           (b.id, mention, list(nearby), NOW, "person",
                            None if attrs is None else json.dumps(attrs))).fetchall()


def lookup(b: Bank, mention, attrs=None, nearby=()):
    return tuple(b.conn.execute(
        f"SELECT entity_id::text, decision FROM {ER}.lookup_mention(%s, %s, %s::text[], %s, %s, %s::jsonb)",
        (b.id, mention, list(nearby), NOW, "person", None if attrs is None else json.dumps(attrs))).fetchone())


def test_explain_and_lookup_show_what_the_attributes_decided(bank):
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03", email="maria@example.org")])
    (_, maria, _, _, _), = placed(bank)
    # An identifying value: the holder, whatever the spelling.
    assert [(r["candidate_id"] and str(r["candidate_id"]), r["decision"], r["lever"])
            for r in explain(bank, "M. Schmidt", {"email": "MARIA@example.org"})] == [
        (maria, "identifier", "attributes")]
    assert lookup(bank, "M. Schmidt", {"email": "MARIA@example.org"}) == (maria, "identifier")
    # A conflicting birth date: ruled out, and resolving would create a homonym.
    rows = explain(bank, "Maria Schmidt", {"birth_date": "1990-11-20"})
    assert [(str(r["candidate_id"]), r["decision"], r["lever"]) for r in rows] == [
        (maria, "attribute_conflict", "attributes")]
    assert lookup(bank, "Maria Schmidt", {"birth_date": "1990-11-20"}) == (None, "new")
    # The same birth date, or none: the entity.
    assert lookup(bank, "Maria Schmidt", {"birth_date": "1961-05-03"}) == (maria, "resolved")
    assert lookup(bank, "Maria Schmidt") == (maria, "resolved")


def test_resolve_mention_takes_attributes_and_refuses_a_bad_one(bank):
    row = bank.conn.execute(
        f"SELECT entity_id::text, created FROM {ER}.resolve_mention(%s, %s, attributes => %s::jsonb)",
        (bank.id, "Sarah Chen", json.dumps({"email": "sarah@acme.com"}))).fetchone()
    again = bank.conn.execute(
        f"SELECT entity_id::text, created FROM {ER}.resolve_mention(%s, %s, attributes => %s::jsonb)",
        (bank.id, "S. Chen", json.dumps({"email": "Sarah@Acme.com"}))).fetchone()
    assert again == (row[0], False)
    with pytest.raises(psycopg.Error) as err:
        bank.conn.execute(f"SELECT * FROM {ER}.resolve_mention(%s, %s, attributes => %s::jsonb)",
                          (bank.id, "S. Chen", json.dumps(["sarah@acme.com"])))
    assert err.value.sqlstate == "22023" and "attributes" in str(err.value)


def test_explain_agrees_with_resolution_on_attributes(bank):
    """Whatever resolution did with attributes, explain_mention shows it (the same decision function)."""
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"])
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "customer call"])
    cases = [({"birth_date": "1961-05-03"}, ["customer call"]), ({"birth_date": "1990-11-20"}, ["Berlin office"]),
             ({"birth_date": "2001-01-01"}, []), (None, ["customer call"]), (None, [])]
    for attrs, nearby in cases:
        rows = explain(bank, "Maria Schmidt", attrs, nearby)
        chosen = [str(r["candidate_id"]) for r in rows if r["decision"] == "chosen"]
        looked = lookup(bank, "Maria Schmidt", attrs, nearby)
        assert (chosen[0] if chosen else None) == looked[0], (attrs, nearby, rows)
    # Nothing tells the two apart: resolving would make a third, ambiguous, as provenance would record it.
    assert lookup(bank, "Maria Schmidt") == (None, "ambiguous")
    insert_fact(bank, [person("Maria Schmidt")])
    (text, _, _, decision, _) = placed(bank)[-1]
    assert (text, decision) == ("Maria Schmidt", "ambiguous")
    assert bank.conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = %s AND canonical_name = %s",
                             (bank.id, "Maria Schmidt")).fetchone() == (3,)


def test_a_near_spelling_is_found_when_the_birth_date_rules_out_every_identical_name(bank):
    # Resolution reads a dated name's identical names first and probes in full
    # only when the date rules all of them out; explain always probes in full.
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"])
    insert_fact(bank, [person("Maria Schmitt", birth_date="1990-11-20"), "harbour project", "Kiel"])
    insert_fact(bank, [person("Maria Schmitt"), "harbour project", "Kiel"])
    schmidt, schmitt = (dict((r[0], r[1]) for r in placed(bank))[n] for n in ("Maria Schmidt", "Maria Schmitt"))
    for attrs, expected in (({"birth_date": "1990-11-20"}, schmitt), ({"birth_date": "1961-05-03"}, schmidt)):
        rows = explain(bank, "Maria Schmidt", attrs, ["harbour project", "Kiel"])
        chosen = [str(r["candidate_id"]) for r in rows if r["decision"] == "chosen"]
        assert chosen == [expected]
        assert lookup(bank, "Maria Schmidt", attrs, ["harbour project", "Kiel"])[0] == expected
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "harbour project", "Kiel"])
    assert placed(bank)[-3][:2] == ("Maria Schmidt", schmitt)


def test_the_client_passes_attributes_on_every_path(bank):
    from entity_resolver.client import Client, Mention

    er = Client(bank.conn)
    first = er.retain(bank.id, [Mention("Sarah Chen", type="person", attributes={"email": "sarah@acme.com"})])
    sarah = first.entities[0].entity_id
    many = er.resolve_many(bank.id, [Mention("S. Chen", type="person", attributes={"email": "SARAH@acme.com"})])
    one = er.resolve(bank.id, "Chen, S.", attributes={"email": "sarah@acme.com"})
    assert many[0].entity_id == one.entity_id
    assert many[0].entity_id == sarah
    assert er.lookup(bank.id, "Sarah C.", attributes={"email": "sarah@acme.com"}).decision == "identifier"
    assert [e.decision for e in er.explain(bank.id, "Sarah C.", attributes={"email": "sarah@acme.com"})] == [
        "identifier"]


def test_reresolve_moves_a_mention_to_the_homonym_later_evidence_points_at_and_undo_restores(bank):
    # Heard of before anyone knew there were two: the only Maria Schmidt.
    insert_fact(bank, [person("Maria Schmidt", birth_date="1961-05-03"), "Berlin office"], "2026-03-01T09:00:00Z")
    insert_fact(bank, [person("Maria Schmidt"), "order 4411"], "2026-03-02T09:00:00Z")
    # The customer, born another day, about the same order: a homonym.
    insert_fact(bank, [person("Maria Schmidt", birth_date="1990-11-20"), "order 4411"], "2026-03-03T09:00:00Z")
    colleague, undated, customer = (r[1] for r in placed(bank) if r[0] == "Maria Schmidt")
    assert undated == colleague and customer != colleague
    before = snapshot(bank.conn, bank.id)
    plan = bank.conn.execute(f"SELECT {ER}.reresolve(%s)", (bank.id,)).fetchone()[0]
    assert [(m["from"]["entity_id"], m["to"]["entity_id"]) for m in plan["moves"]] == [(colleague, customer)]
    assert snapshot(bank.conn, bank.id) == before
    applied = bank.conn.execute(f"SELECT {ER}.reresolve(%s, dry_run => false)", (bank.id,)).fetchone()[0]
    assert [r[1] for r in placed(bank) if r[0] == "Maria Schmidt"] == [colleague, customer, customer]
    assert differences(bank.conn, bank.id)["differences"] == 0
    bank.conn.execute(f"SELECT {ER}.undo_operation(%s, %s)", (bank.id, applied["operation_id"]))
    assert snapshot(bank.conn, bank.id) == before
