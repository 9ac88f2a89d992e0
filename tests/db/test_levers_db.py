"""The enhanced profile's levers through the SQL interface: what a caller sees (docs/accuracy.md)."""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest
from psycopg.rows import dict_row

from bank_builders import NOW, Bank
from shared import SCHEMA as ER


def insert_fact(b: Bank, mentions, event_date=NOW) -> None:
    b.conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) VALUES (%s, %s::jsonb, %s)",
                   (b.id, json.dumps(mentions), event_date))


def entities(b: Bank):
    return sorted(b.conn.execute(f"SELECT canonical_name, entity_type FROM {ER}.entities WHERE bank_id = %s",
                                 (b.id,)).fetchall(), key=lambda r: (r[0], r[1] or ""))


def decisions(b: Bank):
    return [tuple(r) for r in b.conn.execute(
        f"SELECT m.mention, e.canonical_name, m.decision FROM {ER}.mentions AS m"
        f" JOIN {ER}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
        " WHERE m.bank_id = %s ORDER BY m.event_date, m.decided_at, m.ordinal", (b.id,))]


def explain(b: Bank, mention, nearby=(), mention_type=None):
    with b.conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(f"SELECT * FROM {ER}.explain_mention(%s, %s, %s::text[], %s, %s)",
                           (b.id, mention, list(nearby), NOW, mention_type)).fetchall()


def lookup(b: Bank, mention, nearby=(), mention_type=None):
    return b.conn.execute(f"SELECT canonical_name, decision FROM {ER}.lookup_mention(%s, %s, %s::text[], %s, %s)",
                          (b.id, mention, list(nearby), NOW, mention_type)).fetchone()


# -- typed mentions --------------------------------------------------------------------

def test_a_typed_mention_stores_its_type_and_never_merges_into_another_type(bank):
    insert_fact(bank, [{"text": "Jordan", "type": "Person"}, "standup"])
    insert_fact(bank, [{"text": "Jordan", "type": "place"}, "Amman"])
    insert_fact(bank, [{"text": "jordan", "type": "PERSON"}, "standup"])

    assert entities(bank) == [("Amman", None), ("Jordan", "person"), ("Jordan", "place"), ("standup", None)]
    assert [d[1:] for d in decisions(bank) if d[0].lower() == "jordan"] == [
        ("Jordan", "created"), ("Jordan", "created"), ("Jordan", "resolved")]
    rows = explain(bank, "Jordan", ["Amman"], "place")
    assert {r["decision"] for r in rows} == {"type_mismatch", "chosen"}
    assert lookup(bank, "Jordan", ["Amman"], "place") == ("Jordan", "resolved")


def test_an_untyped_mention_of_a_name_two_types_share_is_decided_by_context(bank):
    insert_fact(bank, [{"text": "Jordan", "type": "person"}, "standup"])
    insert_fact(bank, [{"text": "Jordan", "type": "place"}, "Amman"])

    rows = explain(bank, "Jordan", ["Amman"])
    chosen = [r for r in rows if r["decision"] == "chosen"]
    assert [r["lever"] for r in chosen] == ["bare_names"] and len(rows) == 2
    place = bank.conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = %s AND entity_type = 'place'",
                              (bank.id,)).fetchone()[0]
    assert chosen[0]["candidate_id"] == place


def test_types_are_ignored_when_the_lever_is_off(bank):
    bank.configure({"typed_mentions": False})
    insert_fact(bank, [{"text": "Jordan", "type": "person"}])
    insert_fact(bank, [{"text": "Jordan", "type": "place"}])
    assert entities(bank) == [("Jordan", None)]


@pytest.mark.parametrize("bad, sqlstate", [(1, "22023"), ("", "22023"), ("  ", "22023"), ("x" * 101, "22001")])
def test_a_bad_type_is_refused_naming_it_and_changes_nothing(bank, bad, sqlstate):
    before = bank.row_counts()
    with pytest.raises(psycopg.Error) as err:
        bank.resolve_batch(["Acme", {"text": "Jordan", "type": bad}])
    assert err.value.sqlstate == sqlstate
    assert "mentions[1].type" in str(err.value)
    assert bank.row_counts() == before


def test_a_misspelt_lever_is_refused_naming_it_and_changes_nothing(bank):
    # Read as a setting nobody wrote, "bare_name" would leave the lever as it was, unnoticed.
    bank.configure({"bare_names": False})
    with pytest.raises(psycopg.Error) as err:
        bank.configure({"bare_name": True})
    assert err.value.sqlstate == "22023"
    assert str(err.value).startswith('settings: unknown key "bare_name" (did you mean "bare_names"?)')
    assert bank.conn.execute(f"SELECT settings FROM {ER}.banks WHERE bank_id = %s",
                             (bank.id,)).fetchone()[0] == {"bare_names": False}


# -- organisations and nicknames ---------------------------------------------------------

def test_an_organisation_under_several_legal_forms_is_one_entity(bank):
    for name in ["Acme Inc", "ACME Corp", "Acme Corporation", "Acme", "Acme Bank"]:
        insert_fact(bank, [name])
    assert [n for n, _ in entities(bank)] == ["Acme Bank", "Acme Inc"]
    rows = explain(bank, "Acme Ltd")
    assert {(r["canonical_name"], r["decision"], r["lever"]) for r in rows} >= {
        ("Acme Inc", "chosen", "org_suffixes"), ("Acme Bank", "word_mismatch", "org_suffixes")}


def test_a_nickname_finds_its_given_name_by_exact_form(bank):
    insert_fact(bank, ["Robert Smith", "Acme"])

    row = next(r for r in explain(bank, "Bob Smith", ["Acme"]) if r["canonical_name"] == "Robert Smith")
    assert (row["matched_form"], row["decision"], row["lever"]) == ("robert smith", "chosen", "name_variants")
    insert_fact(bank, ["Bob Smith", "Acme"])
    assert decisions(bank)[-2][1:] == ("Robert Smith", "resolved")


def test_an_initial_needs_context(bank):
    insert_fact(bank, ["Robert Smith", "Acme"])
    assert lookup(bank, "R. Smith", ["lunch"]) == (None, "new")
    assert lookup(bank, "R. Smith", ["Acme"]) == ("Robert Smith", "resolved")
    row = explain(bank, "R. Smith", ["lunch"])[0]
    assert row["decision"] == "needs_context"


def test_a_bank_adds_its_own_nicknames_and_legal_forms(bank):
    insert_fact(bank, ["Kookaburra Brewing Zzq", "Robert Smith"])
    assert lookup(bank, "Kookaburra Brewing Inc")[1] == "new"
    assert lookup(bank, "Zorbo Smith", ["Kookaburra Brewing Zzq"])[1] == "new"
    bank.configure({"org_suffixes_add": ["ZZQ"], "name_variants_add": [["Robert", "Zorbo"]]})
    assert lookup(bank, "Kookaburra Brewing Inc") == ("Kookaburra Brewing Zzq", "resolved")
    assert lookup(bank, "Zorbo Smith", ["Kookaburra Brewing Zzq"]) == ("Robert Smith", "resolved")
    bank.configure({"org_suffixes_remove": ["Inc"]})
    insert_fact(bank, ["Acme Inc"])
    assert lookup(bank, "Acme Corp")[1] == "new"


# -- bare names --------------------------------------------------------------------------

def test_bare_names_are_decided_by_context_and_never_merged_on_a_guess(bank):
    insert_fact(bank, ["Alex Kim", "React"])
    insert_fact(bank, ["Alex Morgan", "Acme"])

    assert lookup(bank, "Alex", ["Acme"]) == ("Alex Morgan", "resolved")
    assert lookup(bank, "Alex", ["React"]) == ("Alex Kim", "resolved")
    assert lookup(bank, "Alex", ["lunch"]) == (None, "new")
    insert_fact(bank, ["Alex", "lunch"])
    # the bare entity now holds the bare name nobody could place; context still wins
    assert lookup(bank, "Alex", ["lunch"]) == ("Alex", "resolved")
    assert lookup(bank, "Alex", ["Acme"]) == ("Alex Morgan", "resolved")


def test_the_reference_profile_merges_a_bare_name_by_its_spelling(reference_bank):
    insert_fact(reference_bank, ["Alex Kim", "React"])
    insert_fact(reference_bank, ["Alex", "lunch"])
    insert_fact(reference_bank, ["Alex", "React"])
    assert [d[1] for d in decisions(reference_bank) if d[0] == "Alex"] == ["Alex", "Alex"]


# -- misspellings ------------------------------------------------------------------------

def test_a_misspelt_record_months_later_joins_its_entity_through_its_context(bank, reference_bank):
    # The copy has a typo in the street too: only the suburb and the state,
    # the state seen with everyone, are shared. Too little for the reference's
    # score. (The suburb is hers among the bank's: a suburb every record of
    # a bank shares would be a hub, issue 31 item 6.)
    copy = ["Chloe Beatie", "Leichhardt", "Burkit Street", "NSW"]
    for b in (bank, reference_bank):
        for i, f in enumerate([["Chloe Beattie", "Leichhardt", "Burkitt Street", "NSW"],
                               ["Tom Hale", "Glebe", "Pitt Street", "NSW"],
                               ["Ann Roe", "Newtown", "King Street", "NSW"]]):
            insert_fact(b, f, NOW - timedelta(days=120 - i))
        insert_fact(b, copy)
    assert decisions(bank)[-4][1:] == ("Chloe Beattie", "resolved")
    assert decisions(reference_bank)[-4][1:] == ("Chloe Beatie", "created")
    bank.conn.execute(f"DELETE FROM {ER}.facts WHERE bank_id = %s AND mentions @> '[\"Chloe Beatie\"]'", (bank.id,))
    rows = explain(bank, "Chloe Beatie", copy[1:])
    chosen = [r for r in rows if r["decision"] == "chosen"]
    assert [(r["canonical_name"], r["lever"]) for r in chosen] == [("Chloe Beattie", "misspellings")]
    assert chosen[0]["score"] < 0.6
    bank.configure({"misspellings": False})
    assert lookup(bank, "Chloe Beatie", copy[1:]) == (None, "new")


# -- alias memory ------------------------------------------------------------------------

def test_a_confident_form_is_remembered_and_forgotten_with_its_fact(bank):
    insert_fact(bank, ["Margaret Lowe", "Acme"])
    insert_fact(bank, ["Peggy Lowe", "Acme"])           # a nickname, with context: confident
    assert decisions(bank)[-2][1:] == ("Margaret Lowe", "resolved")
    # Without context a nickname is not enough (needs_context); the bank remembers it.
    assert lookup(bank, "Peggy Lowe", ["somewhere else"]) == ("Margaret Lowe", "memory")
    row = explain(bank, "Peggy Lowe")[0]
    assert (row["decision"], row["lever"]) == ("memory", "alias_memory")
    bank.configure({"alias_memory": False})
    assert lookup(bank, "Peggy Lowe", ["somewhere else"]) == (None, "new")
    bank.configure({})
    # Forgetting the fact that taught it forgets the memory.
    bank.conn.execute(f"DELETE FROM {ER}.facts WHERE bank_id = %s AND mentions @> '[\"Peggy Lowe\"]'",
                      (bank.id,))
    assert lookup(bank, "Peggy Lowe", ["somewhere else"]) == (None, "new")


def test_a_form_the_bank_resolved_to_two_entities_is_no_memory(bank):
    # "Pat" is short for Patty and for Patrick. The first "Pat Nguyen" went to
    # Patty by its score, under the confidence memory asks for; the second to
    # Patrick with it. The form names both: a third next to Patty's lab is
    # Patty's, not Patrick's by memory. Re-resolution moves nothing: with its
    # own fact left out, the first would go to Patrick by the memory of the
    # second, and a memory does not overturn what a score decided.
    facts = [["Patty Nguyen", "Lab"], ["Patrick Nguyen", "Gym"], ["Pat Nguyen", "Lab"], ["Pat Nguyen", "Gym"]]
    for i, f in enumerate(facts):
        insert_fact(bank, f, NOW - timedelta(days=len(facts) - i))
    pats = bank.conn.execute(
        f"SELECT e.canonical_name, m.decision, m.score >= 0.9 FROM {ER}.mentions AS m"
        f" JOIN {ER}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
        " WHERE m.bank_id = %s AND m.mention = 'Pat Nguyen' ORDER BY m.event_date", (bank.id,)).fetchall()
    assert pats == [("Patty Nguyen", "resolved", False), ("Patrick Nguyen", "resolved", True)]
    assert lookup(bank, "Pat Nguyen", ["Lab"]) == ("Patty Nguyen", "resolved")
    assert "memory" not in {r["decision"] for r in explain(bank, "Pat Nguyen", ["Lab"])}
    plan = bank.conn.execute(f"SELECT {ER}.reresolve(%s)", (bank.id,)).fetchone()[0]
    assert plan["moves"] == []
    assert [(k["mention"], k["name"]) for k in plan["kept"] if "memory" in k["why"]] == [("Pat Nguyen", "Patty Nguyen")]


def one_by_one_and_as_a_statement(bank, facts) -> Bank:
    """The facts fact by fact into another bank (returned), and as one statement into ``bank``."""
    other = Bank(bank.conn, bank.id[:90] + "-one").create()
    for i, f in enumerate(facts):
        insert_fact(other, f, NOW + timedelta(minutes=i))
    bank.conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date)"
                      " SELECT %s, m, %s + (i - 1) * interval '1 minute'"
                      " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t (m, i) ORDER BY i",
                      (bank.id, NOW, json.dumps(facts)))
    return other


def test_a_statement_remembers_what_fact_by_fact_would(bank):
    other = one_by_one_and_as_a_statement(bank, [["Margaret Lowe", "Acme"], ["Peggy Lowe", "Acme"],
                                                 ["Peggy Lowe", "Kyoto"]])
    assert [d[1:] for d in decisions(bank)] == [d[1:] for d in decisions(other)]
    assert decisions(bank)[-2][1:] == ("Margaret Lowe", "memory")


def test_an_ambiguous_placement_teaches_a_statement_no_memory_either(bank):
    # "Sammy Lee"'s email is the first Sam Lee's, whose birth date rules it
    # out: placed by name and context, decision ambiguous, which the bank does
    # not remember. A statement of the same facts did remember it, and sent
    # the next "Sammy Lee" there by memory.
    def said(text, **attributes):
        return {"text": text, "attributes": attributes}
    facts = [[said("Sam Lee", email="sam@example.org", birth_date="1990-01-01"), "Acme"],
             [said("Sam Lee", birth_date="1985-05-05"), "Globex"],
             [said("Sammy Lee", email="sam@example.org", birth_date="1985-05-05"), "Globex"],
             ["Sammy Lee", "Initech"]]
    other = one_by_one_and_as_a_statement(bank, facts)
    assert [d[2] for d in decisions(other) if d[0] == "Sammy Lee"] == ["ambiguous", "resolved"]
    assert [d[1:] for d in decisions(bank)] == [d[1:] for d in decisions(other)]


# -- the profile -----------------------------------------------------------------------

def test_the_profile_and_the_name_data_settings_are_validated(bank):
    for bad in [{"profile": "fancy"}, {"bare_names": 1}, {"name_variants_add": [["bob"]]},
                {"org_suffixes_add": "inc"}, {"org_suffixes_add": [""]}, {"name_variants_add": [["a", 7]]}]:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
            bank.configure(bad)
        assert next(iter(bad)) in str(err.value)
    assert bank.configure({"profile": "reference"})["profile"] == "reference"
