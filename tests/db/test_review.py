"""The review queue (docs/corrections.md): review_queue ranks likely duplicates and
likely over-merges, each with the dry run that fixes it; dismiss_review hides an
item until its evidence grows."""

from __future__ import annotations

import json

import psycopg
from psycopg.rows import dict_row
import pytest

from corrections_helpers import ER, call, entity_id, insert_fact, snapshot
from shared import INTERNAL, trgm_schema
from test_curation import grant


def queue(conn, bank_id="chen", max_results=50):
    return [dict(zip(("item", "kind", "score", "entity_ids", "names", "evidence", "fix"), r)) for r in conn.execute(
        f"SELECT item, kind, score, entity_ids, names, evidence, fix FROM {ER}.review_queue(%s, %s)",
        (bank_id, max_results))]


def duplicates(conn, bank_id="chen"):
    return [r for r in queue(conn, bank_id) if r["kind"] == "likely_duplicate"]


@pytest.fixture
def chen(conn):
    """Sarah Chen and Sara Chen: one person written two ways, two entities (a split
    made the second), each with facts about Acme and Priya."""
    units = [insert_fact(conn, "chen", ["Sarah Chen", "Acme", "Priya"], fact_id="f1"),
             insert_fact(conn, "chen", ["Sarah Chen", "Acme", "Oslo"], fact_id="f2"),
             insert_fact(conn, "chen", ["Sarah Chen", "Acme", "Priya"], fact_id="f3")]
    sarah = entity_id(conn, "chen", "Sarah Chen")
    call(conn, "split_entity", "chen", sarah, [units[2]], "Sara Chen")
    return {"units": units, "sarah": sarah, "sara": entity_id(conn, "chen", "Sara Chen")}


def test_a_close_name_with_shared_partners_is_a_likely_duplicate(conn, chen):
    [item] = duplicates(conn)
    assert sorted(item["names"]) == ["Sara Chen", "Sarah Chen"]
    assert sorted(map(str, item["entity_ids"])) == sorted([chen["sarah"], chen["sara"]])
    assert item["evidence"]["shared_partners"] == 2 and item["score"] > 0
    # The fix is a valid dry run: the merge of the one with fewer mentions.
    before = conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'chen'").fetchone()[0]
    plan = conn.execute(item["fix"].rstrip(";")).fetchone()[0]
    assert plan["dry_run"] is True and plan["kind"] == "merge"
    assert conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'chen'").fetchone()[0] == before


def test_a_pair_judged_distinct_is_not_an_item(conn, chen):
    call(conn, "mark_distinct", "chen", chen["sarah"], chen["sara"])
    assert duplicates(conn) == []


def test_a_pair_of_two_types_is_not_an_item(conn):
    insert_fact(conn, "types", [{"text": "Jordan", "type": "person"}, "Acme"])
    insert_fact(conn, "types", [{"text": "Jordan", "type": "place"}, "Acme"])
    assert duplicates(conn, "types") == []


def test_a_dismissed_item_stays_out_until_new_shared_evidence(conn, chen):
    [item] = duplicates(conn)
    done = call(conn, "dismiss_review", "chen", item["item"], reason="checked")
    assert done["item"] == item["item"] and done["evidence"] == 2
    assert duplicates(conn) == []
    # A fact sharing a partner already shared adds nothing new.
    insert_fact(conn, "chen", ["Sarah Chen", "Priya"])
    assert duplicates(conn) == []
    # A new partner in common brings it back.
    insert_fact(conn, "chen", ["Sarah Chen", "Berlin"])
    insert_fact(conn, "chen", ["Sara Chen", "Berlin"])
    [back] = duplicates(conn)
    assert back["item"] == item["item"] and back["evidence"]["shared_partners"] == 3


def test_dismissing_an_unknown_item_is_refused(conn, chen):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="^item: 'likely_duplicate:x:y' is not an item"):
        call(conn, "dismiss_review", "chen", "likely_duplicate:x:y")
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="^item: must not be null"):
        call(conn, "dismiss_review", "chen", None)


def test_an_over_merge_shows_the_smaller_group(conn):
    a = [insert_fact(conn, "om", ["Alex Kim", "React", "Sprint 14"], fact_id="k1"),
         insert_fact(conn, "om", ["Alex Kim", "React", "Oslo"], fact_id="k2")]
    b = [insert_fact(conn, "om", ["Alex Morgan", "Acme", "renewal"], fact_id="m1")]
    kim, morgan = entity_id(conn, "om", "Alex Kim"), entity_id(conn, "om", "Alex Morgan")
    call(conn, "merge_entities", "om", [morgan], kim)
    [item] = [r for r in queue(conn, "om") if r["kind"] == "likely_over_merge"]
    assert [str(x) for x in item["entity_ids"]] == [kim]
    assert item["evidence"]["fact_ids"] == ["m1"] and item["evidence"]["unit_ids"] == b
    assert item["evidence"]["groups"] == 2 and item["evidence"]["facts"] == 3
    plan = conn.execute(item["fix"].rstrip(";")).fetchone()[0]
    assert plan["dry_run"] is True and plan["kind"] == "split"
    assert b[0] in item["fix"] and not any(u in item["fix"] for u in a)  # the larger group stays


def test_names_that_fit_only_with_context_are_a_likely_duplicate_without_partners(conn):
    """Bill Turner arrived with nothing William Turner is seen with: the nickname needed context, so the
    resolver made a new entity. The queue lists the pair, says how the names fit, and gives the merge."""
    insert_fact(conn, "nick", ["William Turner", "Acme", "renewal"], "2026-03-01T09:00:00Z")
    insert_fact(conn, "nick", ["William Turner", "Acme"], "2026-03-02T09:00:00Z")
    insert_fact(conn, "nick", ["Bill Turner", "Oslo"], "2026-03-05T09:00:00Z")
    [item] = duplicates(conn, "nick")
    assert sorted(item["names"]) == ["Bill Turner", "William Turner"]
    ev = item["evidence"]
    assert ev["names_fit"] == "variant" and ev["shared_partners"] == 0 and "one a nickname of the other" in ev["why"]
    # The two names fit each other and no other name of the bank: name evidence 1, no partner to damp.
    assert ev["names_fit_only_each_other"] is True and item["score"] == 1
    plan = conn.execute(item["fix"].rstrip(";")).fetchone()[0]
    assert plan["dry_run"] is True and plan["target"]["entity_id"] == entity_id(conn, "nick", "William Turner")
    # Dismissed, it stays out until a partner in common arrives.
    call(conn, "dismiss_review", "nick", item["item"])
    assert duplicates(conn, "nick") == []
    insert_fact(conn, "nick", ["Bill Turner", "Acme"], "2026-03-06T09:00:00Z")
    assert [r["item"] for r in duplicates(conn, "nick")] == [item["item"]]


def test_a_near_spelling_without_partners_in_common_is_no_likely_duplicate(conn, near_miss):
    # Jon / John Smithson: a spelling, not a nickname or an initial; nothing shared (the close call lists it).
    assert duplicates(conn, "near") == []


def test_an_untyped_entity_does_not_conflict_with_a_typed_one(conn):
    # The review's one rule for types (duplicates, close calls): a person and a place conflict, an untyped
    # "Florence" and the place "Florence" do not.
    rows = conn.execute(f"SELECT {INTERNAL}._types_compatible(a, b) FROM (VALUES ('person', 'place'),"
                        " (NULL, 'place'), ('place', NULL), (NULL, NULL), ('place', 'place')) AS t (a, b)").fetchall()
    assert [r[0] for r in rows] == [False, True, True, True, True]


def test_two_entities_a_distinguishing_attribute_tells_apart_are_no_likely_duplicate(conn):
    """Two Maria Schmidts born years apart, both seen with Acme: one name, a partner in common, and
    still two people (one entity, one birth date)."""
    for n, born in enumerate(["1961-05-03", "1985-01-01"], 1):
        insert_fact(conn, "born", [maria({"birth_date": born}), "Acme"], fact_id=f"f{n}")
    ids = {str(r[0]) for r in conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = 'born'"
                                           " AND canonical_name = 'Maria Schmidt'")}
    assert len(ids) == 2
    assert duplicates(conn, "born") == []


def test_two_entities_holding_one_email_are_a_likely_duplicate_whatever_their_names(conn):
    """"Bobby" arrived with Robert Smith's address and a split made him an entity of his own: the names
    are not close, the address (one value, one entity) makes the pair an item."""
    for n in (1, 2):
        insert_fact(conn, "mail", [{"text": "Robert Smith", "attributes": {"email": "rob@acme.example"}}, "Acme"],
                    fact_id=f"r{n}")
    unit = insert_fact(conn, "mail", [{"text": "Bobby", "attributes": {"email": "ROB@acme.example"}}, "Oslo"],
                       fact_id="b1")
    robert = entity_id(conn, "mail", "Robert Smith")
    call(conn, "split_entity", "mail", robert, [unit], "Bobby")
    [item] = duplicates(conn, "mail")
    assert sorted(item["names"]) == ["Bobby", "Robert Smith"]
    ev = item["evidence"]
    assert ev["identifying_in_common"] == ["email"] and ev["shared_partners"] == 0
    assert ev["name_similarity"] < 0.3 and "the same email" in ev["why"] and item["score"] == 1
    plan = run(conn, item["fix"])
    assert plan["dry_run"] is True and plan["target"]["entity_id"] == robert


@pytest.mark.parametrize("attribute, values, score", [
    # One entity, one birth date: two are a conflict, ranked over every balance of partners.
    ("birth_date", ["1961-05-03", "1961-05-03", "1985-01-01"], 1.667),
    # One address, one entity: an entity of two may be two people, or one with two addresses.
    ("email", ["m@a.example", "m@a.example", "m@b.example"], 0.667),
])
def test_an_entity_holding_two_values_of_an_attribute_is_a_likely_over_merge_of_the_fewer(
        conn, attribute, values, score):
    """Every fact is with Acme, so no group of partners tells the facts apart; the values do."""
    units = [insert_fact(conn, "two", [maria({attribute: v}), "Acme"], fact_id=f"f{n}")
             for n, v in enumerate(values, 1)]
    ids = [str(r[0]) for r in conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = 'two'"
                                           " AND canonical_name = 'Maria Schmidt' ORDER BY homonym NULLS FIRST")]
    if len(ids) == 2:  # the birth date made a homonym: an operator's merge makes the over-merge
        call(conn, "merge_entities", "two", [ids[1]], ids[0])
    [item] = [r for r in queue(conn, "two") if r["kind"] == "likely_over_merge"]
    assert [str(x) for x in item["entity_ids"]] == [ids[0]] and float(item["score"]) == score
    ev = item["evidence"]
    assert ev["attribute"] == attribute and ev["unit_ids"] == [units[2]] and ev["fact_ids"] == ["f3"]
    assert ev["groups"] == 2 and ev["facts"] == 3 and f"2 values of {attribute}" in ev["why"]
    plan = run(conn, item["fix"])
    assert plan["dry_run"] is True and plan["kind"] == "split"


@pytest.mark.parametrize("bank_id, error, message", [
    (None, psycopg.errors.NullValueNotAllowed, "^bank_id: must not be null"),
    ("  ", psycopg.errors.InvalidParameterValue, "^bank_id: must not be empty or blank"),
])
def test_a_bad_bank_is_refused(conn, bank_id, error, message):
    with pytest.raises(error, match=message):
        queue(conn, bank_id)
    with pytest.raises(error, match=message):
        call(conn, "dismiss_review", bank_id, "likely_duplicate:x:y")


@pytest.mark.parametrize("max_results", [0, -1, None])
def test_a_bad_max_results_is_refused(conn, max_results):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="^max_results: must be between 1 and 100000"):
        queue(conn, "chen", max_results)


def test_the_client_and_the_cli_show_the_queue_and_dismiss(conn, chen):
    import json

    from typer.testing import CliRunner

    from entity_resolver.cli import app
    from entity_resolver.client import Client

    i = conn.info
    dsn = f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"
    with Client(dsn) as er:
        [item] = [r for r in er.review("chen") if r.kind == "likely_duplicate"]
    assert sorted(item.names) == ["Sara Chen", "Sarah Chen"] and "merge_entities" in item.fix
    env = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "300"}

    def cli(*args):
        return CliRunner().invoke(app, [*args, "--dsn", dsn], env=env, catch_exceptions=False)

    shown = cli("review", "chen", "--limit", "5")
    assert shown.exit_code == 0, shown.output
    assert "likely_duplicate" in shown.stdout and "Sara Chen" in shown.stdout
    rows = json.loads(cli("review", "chen", "--json").stdout)
    assert [r["item"] for r in rows] == [item.item]
    done = cli("dismiss", "chen", item.item, "--reason", "checked")
    assert done.exit_code == 0, done.output
    empty = cli("review", "chen")
    assert empty.exit_code == 0 and "has nothing to review" in empty.stderr
    assert cli("review", "chen", "--limit", "0").exit_code != 0


def test_a_bank_user_may_read_the_queue_and_only_a_curator_dismiss(conn, chen, roles, connect_as):  # noqa: F811
    bob = roles()
    conn.execute(f"SELECT {ER}.grant_bank_access('chen', %s)", (bob,))
    b = connect_as(bob)
    [item] = duplicates(b)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="^bank_id: role .* may not correct bank 'chen'"):
        b.execute(f"SELECT {ER}.dismiss_review('chen', %s)", (item["item"],))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        b.execute(f"INSERT INTO {ER}.review_dismissals (bank_id, item, evidence) VALUES ('chen', %s, 99)",
                  (item["item"],))
    assert duplicates(conn) == [item]
    grant(conn, "chen", bob)
    b.execute(f"SELECT {ER}.dismiss_review('chen', %s)", (item["item"],))
    assert duplicates(b) == [] and duplicates(conn) == []


# -- close calls --------------------------------------------------------------------------


def close_calls(conn, bank_id):
    return [r for r in queue(conn, bank_id) if r["kind"] == "close_call"]


@pytest.fixture
def near_miss(conn):
    """'John Smithson' four days after 'Jon Smithson', in other company: score 0.566, a new entity
    0.034 under the threshold."""
    insert_fact(conn, "near", ["Jon Smithson", "Acme"], "2026-03-01T09:00:00Z", fact_id="f1")
    unit = insert_fact(conn, "near", ["John Smithson", "Berlin"], "2026-03-05T09:00:00Z", fact_id="f2")
    return {"unit": unit, "jon": entity_id(conn, "near", "Jon Smithson"),
            "john": entity_id(conn, "near", "John Smithson")}


def test_a_near_miss_is_a_close_call_with_the_merge_that_fixes_it(conn, near_miss):
    [item] = close_calls(conn, "near")
    assert item["item"] == f"close_call:{near_miss['unit']}:1"
    assert item["names"] == ["John Smithson", "Jon Smithson"]
    ev = item["evidence"]
    assert ev["decision"] == "created" and ev["fact_id"] == "f2" and ev["threshold"] == 0.6
    assert 0.55 < ev["score"] < 0.6 and ev["closest"]["name"] == "Jon Smithson"
    assert "became the new entity 'John Smithson' with score 0.566, 0.034 under the threshold 0.6" in ev["why"]
    before = conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'near'").fetchone()[0]
    plan = conn.execute(item["fix"].rstrip(";")).fetchone()[0]
    assert plan["dry_run"] is True and plan["kind"] == "merge"
    assert plan["target"]["entity_id"] == near_miss["jon"]
    other = conn.execute(ev["or"].rstrip(";")).fetchone()[0]
    assert other["dry_run"] is True and other["kind"] == "mark_distinct"
    assert conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'near'").fetchone()[0] == before


def test_a_resolution_just_over_the_threshold_is_a_close_call_with_the_split_that_fixes_it(conn):
    insert_fact(conn, "over", ["Jon Smithson", "Acme"], "2026-03-01T09:00:00Z", fact_id="f1")
    unit = insert_fact(conn, "over", ["John Smithson", "Berlin"], "2026-03-03T09:00:00Z", fact_id="f2")
    [item] = close_calls(conn, "over")
    ev = item["evidence"]
    assert ev["decision"] == "resolved" and 0.6 <= ev["score"] < 0.65 and item["names"] == ["Jon Smithson"]
    assert "over the threshold 0.6" in ev["why"]
    plan = conn.execute(item["fix"].rstrip(";")).fetchone()[0]
    assert plan["dry_run"] is True and plan["kind"] == "split" and plan["mentions_moved"] == 1
    assert unit in item["fix"]


def test_a_decision_far_from_the_threshold_is_no_close_call(conn):
    insert_fact(conn, "far", ["Jon Smithson", "Acme"], "2026-03-01T09:00:00Z")
    insert_fact(conn, "far", ["Jon Smithson", "Acme"], "2026-03-02T09:00:00Z")   # identical: 1.0
    insert_fact(conn, "far", ["Priya Raman", "Oslo"], "2026-03-02T09:00:00Z")    # nothing close
    assert close_calls(conn, "far") == []


def test_a_close_call_judged_distinct_from_its_closest_name_is_no_item(conn, near_miss):
    call(conn, "mark_distinct", "near", near_miss["john"], near_miss["jon"])
    assert close_calls(conn, "near") == []


def test_a_dismissed_close_call_stays_out_until_new_evidence(conn, near_miss):
    [item] = close_calls(conn, "near")
    done = call(conn, "dismiss_review", "near", item["item"], reason="two people")
    assert done["kind"] == "close_call" and done["evidence"] == 2
    assert close_calls(conn, "near") == []
    # A fact about neither is no evidence; a fact about one of them is.
    insert_fact(conn, "near", ["Priya Raman", "Oslo"], "2026-03-06T09:00:00Z")
    assert close_calls(conn, "near") == []
    insert_fact(conn, "near", ["Jon Smithson", "Oslo"], "2026-03-07T09:00:00Z")
    [back] = close_calls(conn, "near")
    assert back["item"] == item["item"]


# -- ambiguous decisions ------------------------------------------------------------------


def maria(attributes=None):
    element = {"text": "Maria Schmidt", "type": "person"}
    if attributes:
        element["attributes"] = attributes
    return element


def ambiguous_calls(conn, bank_id):
    return [r for r in close_calls(conn, bank_id) if r["evidence"]["decision"] == "ambiguous"]


def run(conn, statement):
    """One call the queue gave, as given (one statement, its one value)."""
    return conn.execute(statement.rstrip(";")).fetchone()[0]


@pytest.fixture
def homonyms(conn):
    """Two Maria Schmidts, born years apart (the second a homonym the birth date made), then a bare 'Maria
    Schmidt' with no attributes and no context: nothing tells them apart, provenance says ambiguous."""
    for n, born in enumerate(["1961-05-03", "1985-01-01"], 1):
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, fact_id, mentions) VALUES ('maria', %s, %s)",
                     (f"f{n}", json.dumps([maria({"birth_date": born})])))
    unit = str(conn.execute(f"INSERT INTO {ER}.facts (bank_id, fact_id, mentions) VALUES ('maria', 'f3', %s)"
                            " RETURNING id", (json.dumps([maria()]),)).fetchone()[0])
    ids = {born: str(i) for born, i in conn.execute(
        f"SELECT attributes ->> 'birth_date', entity_id FROM {ER}.mentions"
        " WHERE bank_id = 'maria' AND attributes IS NOT NULL")}
    return {"unit": unit, **ids}


def test_an_ambiguous_homonym_is_a_close_call_with_its_evidence_and_fix_calls(conn, homonyms):
    # Provenance records ambiguous in the enhanced profile, the default.
    assert conn.execute(f"SELECT {INTERNAL}._effective_settings('maria') ->> 'profile'").fetchone()[0] == "enhanced"
    [decided] = conn.execute(f"SELECT entity_id, decision FROM {ER}.mentions WHERE bank_id = 'maria'"
                             " AND unit_id = %s", (homonyms["unit"],)).fetchall()
    assert decided[1] == "ambiguous"
    placed = str(decided[0])
    [item] = ambiguous_calls(conn, "maria")
    ev = item["evidence"]
    assert item["item"] == f"close_call:{homonyms['unit']}:1" and item["score"] == 1
    # Which entities it could have been: the Maria Schmidts it did not go to (the one it went to comes first;
    # the rule places it on a homonym, or makes one for it alone), each with its birth date.
    others = [e for e in (homonyms["1961-05-03"], homonyms["1985-01-01"]) if e != placed]
    assert str(item["entity_ids"][0]) == placed and sorted(map(str, item["entity_ids"][1:])) == sorted(others)
    assert set(item["names"]) == {"Maria Schmidt"}
    assert sorted(r["entity_id"] for r in ev["candidates"]) == sorted(others)
    assert all(r["same_name"] and r["mentions"] == 1 and list(r["attributes"]) == ["birth_date"]
               for r in ev["candidates"])
    assert ev["attributes"] is None
    other = ev["candidates"][0]["entity_id"]
    assert ev["placed"]["entity_id"] == placed and ev["fact_id"] == "f3"
    assert "'Maria Schmidt' in fact 'f3' (no attributes) was ambiguous" in ev["why"]
    assert "placed by the rule in 'Maria Schmidt'" in ev["why"]
    assert "nothing told it apart from 'Maria Schmidt' (1 mention(s), same name and type" in ev["why"]
    assert "birth_date" in ev["why"]
    before = snapshot(conn, "maria")
    # The explain_mention call shows the decision again: the homonyms, not told apart.
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(ev["explain"].rstrip(";")).fetchall()
    assert {str(r["candidate_id"]) for r in rows} >= {homonyms["1961-05-03"], homonyms["1985-01-01"]}
    assert "ambiguous" in {r["decision"] for r in rows} and "homonyms" in {r["lever"] for r in rows}
    assert run(conn, ev["reresolve"])["dry_run"] is True
    if ev["placed"]["holds_other_mentions"]:
        # Placed on a homonym that holds other mentions: split the fact off, then merge the split into the other.
        plan = run(conn, item["fix"])
        assert plan["kind"] == "split" and plan["dry_run"] is True and plan["mentions_moved"] == 1
        assert snapshot(conn, "maria") == before
        with conn.transaction(force_rollback=True):
            split = run(conn, item["fix"].replace("dry_run => true", "dry_run => false"))
            then = ev["then"].replace("<new_entity.entity_id of the split>", split["new_entity"]["entity_id"])
            merge = run(conn, then)
            assert merge["kind"] == "merge" and merge["dry_run"] is True and merge["target"]["entity_id"] == other
    else:
        # A homonym made for it alone: merge it into the other, or say it is a third.
        plan = run(conn, item["fix"])
        assert plan["kind"] == "merge" and plan["target"]["entity_id"] == other
        assert run(conn, ev["or"])["kind"] == "mark_distinct"
    assert snapshot(conn, "maria") == before


def test_an_identifier_held_by_a_ruled_out_entity_is_an_ambiguous_close_call(conn):
    """Maria Schmidt's email turns up with another birth date: the one holder is ruled out, so the mention
    is placed by the rule (a homonym of its own) and listed with the holder as its candidate."""
    insert_fact(conn, "mail", [maria({"email": "M.Schmidt@example.org", "birth_date": "1961-05-03"}), "Acme"])
    unit = insert_fact(conn, "mail", [maria({"email": "m.schmidt@example.org", "birth_date": "1985-01-01"}), "Oslo"],
                       fact_id="f2")
    [item] = ambiguous_calls(conn, "mail")
    ev = item["evidence"]
    assert item["item"] == f"close_call:{unit}:1"
    assert ev["placed"]["holds_other_mentions"] is False and ev["placed"]["mentions"] == 1
    assert ev["attributes"] == {"email": "m.schmidt@example.org", "birth_date": "1985-01-01"}
    [rival] = ev["candidates"]
    assert rival["identifying_in_common"] == {"email": "m.schmidt@example.org"}
    assert rival["attributes"]["birth_date"] == ["1961-05-03"]
    # The explain call carries the fact's other mention, its date and the attributes.
    assert "'{Oslo}'::text[]" in ev["explain"] and "2026-03-10" in ev["explain"] and "m.schmidt@" in ev["explain"]
    before = snapshot(conn, "mail")
    assert conn.execute(ev["explain"].rstrip(";")).fetchall()
    plan = run(conn, item["fix"])
    assert plan["kind"] == "merge" and plan["target"]["entity_id"] == rival["entity_id"] and plan["dry_run"] is True
    assert run(conn, ev["or"])["kind"] == "mark_distinct" and run(conn, rival["mark_distinct"])["dry_run"] is True
    assert run(conn, ev["reresolve"])["dry_run"] is True
    assert snapshot(conn, "mail") == before
    # Judged a third person: settled, no longer an item.
    run(conn, ev["or"].replace("dry_run => true", "dry_run => false"))
    assert ambiguous_calls(conn, "mail") == []


def test_a_dismissed_ambiguous_call_stays_out_until_new_evidence(conn, homonyms):
    [item] = ambiguous_calls(conn, "maria")
    done = call(conn, "dismiss_review", "maria", item["item"], reason="checked")
    assert done["kind"] == "close_call" and done["evidence"] == 3
    assert ambiguous_calls(conn, "maria") == []
    insert_fact(conn, "maria", ["Priya Raman", "Oslo"])          # about neither Maria: no evidence
    assert ambiguous_calls(conn, "maria") == []
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('maria', %s)",
                 (json.dumps([maria({"birth_date": "1961-05-03"})]),))  # about one of them: evidence
    assert [r["item"] for r in ambiguous_calls(conn, "maria")] == [item["item"]]


def test_an_old_ambiguous_decision_is_no_close_call(conn, homonyms):
    conn.execute(f"UPDATE {ER}.mentions"
                 f" SET decided_at = now() - make_interval(days => {INTERNAL}._close_call_days() + 1)"
                 " WHERE bank_id = 'maria' AND unit_id = %s", (homonyms["unit"],))
    assert ambiguous_calls(conn, "maria") == []


def test_items_of_equal_score_are_listed_by_their_names_whatever_their_ids(conn):
    # Four pairs alike (a doubled letter dropped from a four-letter first name, one partner
    # each): the same scores. Entity ids are new in every bank, so ordering ties by them would
    # list a replayed bank's items in another order each time (bench.review's figures moved).
    pairs = [("Olle", "Lind", "Kiruna"), ("Anna", "Borg", "Malmo"), ("Otto", "Dahl", "Umea"),
             ("Ebbe", "Holm", "Gavle")]
    for first, surname, town in pairs:
        name = f"{first} {surname}"
        units = [insert_fact(conn, "ties", [name, town], fact_id=f"{surname}{n}") for n in range(2)]
        call(conn, "split_entity", "ties", entity_id(conn, "ties", name), [units[1]],
             f"{first[0]}{first[2:]} {surname}")
    rows = duplicates(conn, "ties")
    assert len(rows) == 4 and len({r["score"] for r in rows}) == 1
    assert [sorted(r["names"]) for r in rows] == [["Ana Borg", "Anna Borg"], ["Ebbe Holm", "Ebe Holm"],
                                                  ["Ole Lind", "Olle Lind"], ["Oto Dahl", "Otto Dahl"]]


def _close_bank(conn):
    """Names close to each other in a bank "close" (facts a month apart), and the same names in "other";
    returns the schema of pg_trgm."""
    names = ["Maria Schmidt", "MARIE SCHMIDT", "Mario Schmitt", "Marianne Schmid", "Acme", "ACME Corp",
             "Acme Corporation", "İlker Yılmaz", "ilker yilmaz", "Oslo", "Osloveien", "Bergen"]
    for n, name in enumerate(names):
        insert_fact(conn, "close", [name], event_date=f"2025-{1 + n:02d}-01T09:00:00Z", fact_id=f"c{n}")
        insert_fact(conn, "other", [name, "Maria Schmidt"], fact_id=f"o{n}")
    return trgm_schema(conn)


def test_close_names_are_every_pair_of_the_bank_at_trigram_similarity_0_3(conn):
    # The review's pairs come from the bank's trigram index, one probe per entity: they must be
    # exactly the pairs a comparison of every two entities gives (case folded on both sides, the
    # bank's regular entities only, each pair once), whatever the index's operator class.
    trgm = _close_bank(conn)
    every = set(conn.execute(
        f"SELECT a.id, b.id, round({trgm}.similarity(lower(a.canonical_name), lower(b.canonical_name))::numeric, 6)"
        f"  FROM {ER}.entities AS a JOIN {ER}.entities AS b ON a.bank_id = b.bank_id AND a.id < b.id"
        "  WHERE a.bank_id = 'close' AND a.entity_kind = 'regular' AND b.entity_kind = 'regular'"
        f"   AND {trgm}.similarity(lower(a.canonical_name), lower(b.canonical_name)) >= 0.3").fetchall())
    probed = conn.execute(f"SELECT a_id, b_id, round(sim::numeric, 6) FROM {INTERNAL}._close_names('close')"
                          ).fetchall()
    assert len(every) >= 8 and len(probed) == len(set(probed))
    assert set(probed) == every


@pytest.mark.parametrize("floor", [0.3, 0.45])
def test_closest_names_are_every_entity_of_the_bank_at_the_floor(conn, floor):
    # A near miss's closest name (close calls) comes from the trigram index, at the bank's
    # merge_min_similarity: every regular entity of the bank at least that similar, none beyond.
    trgm = _close_bank(conn)
    keys = ["maria schmidt", "maria", "acme", "ilker yilmaz", "nobody here"]  # "maria": 0.43 to "maria schmidt"
    every = set(conn.execute(
        f"SELECT k, e.id, round({trgm}.similarity(lower(e.canonical_name), k)::numeric, 6)"
        f"  FROM unnest(%s::text[]) AS k JOIN {ER}.entities AS e ON e.bank_id = 'close'"
        f"  WHERE e.entity_kind = 'regular' AND {trgm}.similarity(lower(e.canonical_name), k) >= %s",
        (keys, floor)).fetchall())
    probed = conn.execute(f"SELECT name, id, round(sim::numeric, 6) FROM {INTERNAL}._closest_names('close', %s, %s)",
                          (keys, floor)).fetchall()
    assert len(every) >= 6 and len(probed) == len(set(probed))
    assert set(probed) == every
