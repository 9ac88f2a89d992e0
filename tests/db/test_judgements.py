"""Judgements (docs/corrections.md): mark_distinct says two entities are different,
and merge_entities refuses to make them one until unmark_distinct removes it.

A judgement is a correction like the others: checked, curated, ledgered,
undoable exactly (a snapshot of the identity tables compares), shown in the
history. It follows identity: an id merged away stands for the entity it
became, a merge moves its sources' judgements to the target, forgetting an
entity removes its judgements (and undoing the forget gives them back)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from corrections_helpers import (ER, assert_refused_changing_nothing, call, differences, entity_id, insert_fact,
                                 operations_count, snapshot, team)
from test_curation import grant


@pytest.fixture
def bank(conn):
    return team(conn)


def judgements(conn, bank_id="team", entity=None):
    return [(str(r[0]), r[1], str(r[2]), r[3], r[4]) for r in conn.execute(
        f"SELECT entity_a, name_a, entity_b, name_b, reason FROM {ER}.list_judgements(%s, %s)",
        (bank_id, entity))]


def pair(a, b):
    return tuple(sorted([a, b]))


def stored(conn, bank_id="team"):
    return [(str(r[0]), str(r[1])) for r in conn.execute(
        f"SELECT entity_a, entity_b FROM {ER}.entity_judgements WHERE bank_id = %s ORDER BY 1, 2", (bank_id,))]


def no_differences(conn, bank_id="team"):
    return differences(conn, bank_id) == {"differences": 0, "entities": [], "pairs": [], "orphans": []}


def test_mark_records_the_pair_once_whichever_way_round(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    plan = call(conn, "mark_distinct", "team", morgan, kim, reason="two people")
    assert plan["kind"] == "mark_distinct" and plan["dry_run"] is False and plan["operation_id"]
    assert plan["summary"] == "mark 'Alex Morgan' and 'Alex Kim' distinct"
    assert plan["entity_a"] == {"entity_id": morgan, "name": "Alex Morgan", "forwarded_from": None}
    assert stored(conn) == [pair(kim, morgan)]
    names = {kim: "Alex Kim", morgan: "Alex Morgan"}
    a, b = pair(kim, morgan)
    assert judgements(conn) == [(a, names[a], b, names[b], "two people")]
    assert judgements(conn, entity=kim) == judgements(conn)
    assert judgements(conn, entity=bank["Acme"]) == []
    # The other way round is the same pair: already judged.
    with pytest.raises(psycopg.errors.UniqueViolation, match="^entity_b: .* already judged distinct"):
        call(conn, "mark_distinct", "team", kim, morgan)
    unmarked = call(conn, "unmark_distinct", "team", kim, morgan)
    assert unmarked["kind"] == "unmark_distinct" and unmarked["judgement"]["reason"] == "two people"
    assert stored(conn) == []
    assert no_differences(conn)


def test_dry_runs_return_the_plan_and_write_nothing(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    before = snapshot(conn, "team")
    plan = call(conn, "mark_distinct", "team", kim, morgan, dry_run=True)
    assert plan["dry_run"] is True and plan["operation_id"] is None and plan["kind"] == "mark_distinct"
    assert snapshot(conn, "team") == before and operations_count(conn, "team") == 0
    call(conn, "mark_distinct", "team", kim, morgan)
    marked = snapshot(conn, "team")
    plan = call(conn, "unmark_distinct", "team", kim, morgan, dry_run=True)
    assert plan["dry_run"] is True and plan["operation_id"] is None
    assert snapshot(conn, "team") == marked and operations_count(conn, "team") == 1


def test_a_merge_of_the_two_is_refused_while_judged_and_allowed_after_unmark(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    call(conn, "mark_distinct", "team", kim, morgan, reason="two people")
    before = snapshot(conn, "team")
    for dry_run in (True, False):
        with pytest.raises(psycopg.errors.ExclusionViolation) as refused:
            call(conn, "merge_entities", "team", [kim], morgan, dry_run=dry_run)
        message = refused.value.diag.message_primary
        assert message.startswith("source_ids: ") and "are judged distinct" in message
        assert kim in message and morgan in message and "'Alex Kim'" in message and "'Alex Morgan'" in message
        assert "'two people'" in message
        assert "unmark_distinct" in refused.value.diag.message_hint
    assert snapshot(conn, "team") == before and operations_count(conn, "team") == 1
    call(conn, "unmark_distinct", "team", kim, morgan)
    assert call(conn, "merge_entities", "team", [kim], morgan)["operation_id"]


def test_anything_that_would_bring_them_together_is_refused(conn, bank):
    kim, morgan, acme = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"]
    call(conn, "mark_distinct", "team", kim, morgan)
    before = snapshot(conn, "team")
    # Two sources into a third entity, and both among several sources.
    for sources, target in (([kim, morgan], acme), ([acme, kim, morgan], bank["Oslo"])):
        with pytest.raises(psycopg.errors.ExclusionViolation, match="^source_ids: "):
            call(conn, "merge_entities", "team", sources, target)
    # A third entity merged into one side first: the judgement holds for the merged side.
    call(conn, "merge_entities", "team", [acme], morgan)
    with pytest.raises(psycopg.errors.ExclusionViolation):
        call(conn, "merge_entities", "team", [morgan], kim)
    assert stored(conn) == [pair(kim, morgan)]
    assert snapshot(conn, "team")["entity_judgements"] == before["entity_judgements"]


def test_a_merge_moves_the_sources_judgements_to_the_target_and_undo_gives_them_back(conn, bank):
    kim, morgan, acme, priya = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"], bank["Priya"]
    call(conn, "mark_distinct", "team", acme, kim, reason="first")
    call(conn, "mark_distinct", "team", priya, kim, reason="second")
    call(conn, "mark_distinct", "team", morgan, kim, reason="the target's own")
    before = snapshot(conn, "team")
    # Acme and Priya merged into Morgan: their judgements with Kim are Morgan's (one, its own).
    op = call(conn, "merge_entities", "team", [acme, priya], morgan)["operation_id"]
    assert stored(conn) == [pair(kim, morgan)]
    assert [r[4] for r in judgements(conn)] == ["the target's own"]
    # The sources' ids stand for the target: a judgement on them is the target's.
    with pytest.raises(psycopg.errors.UniqueViolation, match="already judged distinct"):
        call(conn, "mark_distinct", "team", acme, kim)
    call(conn, "undo_operation", "team", op)
    assert snapshot(conn, "team") == before
    assert no_differences(conn)


def test_judgements_of_a_source_are_deduplicated_on_the_target(conn, bank):
    kim, morgan, acme, oslo = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"], bank["Oslo"]
    call(conn, "mark_distinct", "team", acme, kim, reason="earliest")
    call(conn, "mark_distinct", "team", oslo, kim, reason="later")
    before = snapshot(conn, "team")
    op = call(conn, "merge_entities", "team", [acme, oslo], morgan)["operation_id"]
    assert stored(conn) == [pair(kim, morgan)]
    assert [r[4] for r in judgements(conn)] == ["earliest"]
    call(conn, "undo_operation", "team", op)
    assert snapshot(conn, "team") == before


def test_a_split_leaves_the_judgements_on_the_entity_split_from(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    call(conn, "mark_distinct", "team", kim, morgan)
    new = call(conn, "split_entity", "team", kim, [bank["facts"][5]], "Alex Kimura")["new_entity"]["entity_id"]
    assert stored(conn) == [pair(kim, morgan)]
    # The new entity is not judged: it may be merged into Morgan.
    assert call(conn, "merge_entities", "team", [new], morgan, dry_run=True)["dry_run"] is True


def test_forget_removes_the_entitys_judgements_and_undo_restores_them(conn, bank):
    kim, morgan, acme = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"]
    call(conn, "mark_distinct", "team", kim, morgan, reason="r1")
    call(conn, "mark_distinct", "team", acme, morgan)
    before = snapshot(conn, "team")
    op = call(conn, "forget_entity", "team", morgan)["operation_id"]
    assert stored(conn) == []
    call(conn, "undo_operation", "team", op)
    assert snapshot(conn, "team") == before
    assert no_differences(conn)


def test_undoing_a_forget_gives_a_judgement_back_to_the_entity_its_partner_became(conn, bank):
    kim, morgan, acme = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"]
    call(conn, "mark_distinct", "team", kim, morgan)
    forgot = call(conn, "forget_entity", "team", kim)["operation_id"]
    call(conn, "merge_entities", "team", [morgan], acme)      # the partner merged away since
    call(conn, "undo_operation", "team", forgot)
    assert stored(conn) == [pair(kim, acme)]


def test_undo_of_mark_removes_it_and_undo_of_unmark_restores_it_exactly(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    before = snapshot(conn, "team")
    marked = call(conn, "mark_distinct", "team", kim, morgan, reason="two people")["operation_id"]
    with_judgement = snapshot(conn, "team")
    assert with_judgement != before
    unmarked = call(conn, "unmark_distinct", "team", morgan, kim)["operation_id"]
    assert snapshot(conn, "team") == before
    # The mark cannot be undone while the unmark built on it is in effect.
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        call(conn, "undo_operation", "team", marked)
    result = call(conn, "undo_operation", "team", unmarked)
    assert result["kind"] == "unmark_distinct" and result["undone"] is True
    assert snapshot(conn, "team") == with_judgement          # reason, created_at, created_by as they were
    call(conn, "undo_operation", "team", marked)
    assert snapshot(conn, "team") == before
    assert no_differences(conn)


def test_an_id_merged_away_stands_for_the_entity_it_became(conn, bank):
    kim, morgan, acme = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"]
    call(conn, "merge_entities", "team", [acme], morgan)
    plan = call(conn, "mark_distinct", "team", acme, kim)
    assert plan["entity_a"] == {"entity_id": morgan, "name": "Alex Morgan", "forwarded_from": acme}
    assert stored(conn) == [pair(kim, morgan)]
    assert judgements(conn, entity=acme) == judgements(conn)
    # An id merged into the other one is the same entity.
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="^entity_b: .* are the same entity now"):
        call(conn, "mark_distinct", "team", morgan, acme)


def test_history_shows_marks_and_unmarks(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    call(conn, "mark_distinct", "team", kim, morgan, reason="two people")
    call(conn, "unmark_distinct", "team", kim, morgan)
    rows = conn.execute(f"SELECT kind, summary, reason, entity_ids FROM {ER}.operation_history('team')").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("unmark_distinct", "unmark 'Alex Kim' and 'Alex Morgan' distinct", None),
        ("mark_distinct", "mark 'Alex Kim' and 'Alex Morgan' distinct", "two people"),
    ]
    assert all(sorted(map(str, r[3])) == sorted([kim, morgan]) for r in rows)


def test_judgements_leave_the_statistics_as_rebuild_stats_derives_them(conn, bank):
    kim, morgan, acme = bank["Alex Kim"], bank["Alex Morgan"], bank["Acme"]
    call(conn, "mark_distinct", "team", kim, morgan)
    call(conn, "mark_distinct", "team", acme, kim)
    insert_fact(conn, "team", ["Alex Kim", "Acme", "Alex Morgan"])
    call(conn, "merge_entities", "team", [acme], morgan)
    op = call(conn, "unmark_distinct", "team", kim, morgan)["operation_id"]
    call(conn, "undo_operation", "team", op)
    assert no_differences(conn)


# -- bad input ---------------------------------------------------------------------------

BAD = [
    # (function, args by name or key, kwargs, sqlstate, argument)
    ("mark_distinct", (None, "Alex Kim", "Alex Morgan"), {}, "22004", "bank_id"),
    ("mark_distinct", (" ", "Alex Kim", "Alex Morgan"), {}, "22023", "bank_id"),
    ("mark_distinct", ("team", None, "Alex Morgan"), {}, "22004", "entity_a"),
    ("mark_distinct", ("team", "Alex Kim", None), {}, "22004", "entity_b"),
    ("mark_distinct", ("team", "Alex Kim", "Alex Kim"), {}, "22023", "entity_b"),
    ("mark_distinct", ("team", "unknown", "Alex Kim"), {}, "22023", "entity_a"),
    ("mark_distinct", ("team", "Alex Kim", "unknown"), {}, "22023", "entity_b"),
    ("mark_distinct", ("team", "Alex Kim", "other:Alex Morgan"), {}, "22023", "entity_b"),
    ("mark_distinct", ("nobank", "Alex Kim", "Alex Morgan"), {}, "22023", "entity_a"),
    ("mark_distinct", ("team", "Alex Kim", "Alex Morgan"), {"dry_run": None}, "22004", "dry_run"),
    ("mark_distinct", ("team", "Alex Kim", "judged"), {}, "23505", "entity_b"),
    ("unmark_distinct", (None, "Alex Kim", "Alex Morgan"), {}, "22004", "bank_id"),
    ("unmark_distinct", ("team", None, "Alex Morgan"), {}, "22004", "entity_a"),
    ("unmark_distinct", ("team", "Alex Kim", None), {}, "22004", "entity_b"),
    ("unmark_distinct", ("team", "Alex Kim", "Alex Kim"), {}, "22023", "entity_b"),
    ("unmark_distinct", ("team", "unknown", "Alex Kim"), {}, "22023", "entity_a"),
    ("unmark_distinct", ("nobank", "Alex Kim", "Alex Morgan"), {}, "22023", "entity_a"),
    ("unmark_distinct", ("team", "Alex Kim", "Alex Morgan"), {}, "22023", "entity_b"),   # not judged
    ("unmark_distinct", ("team", "Alex Kim", "judged"), {"dry_run": None}, "22004", "dry_run"),
    ("list_judgements", (None,), {}, "22004", "bank_id"),
    ("list_judgements", ("team", "unknown"), {}, "22023", "entity_id"),
]


@pytest.fixture
def judged_bank(conn, bank):
    ids = {k: v for k, v in bank.items() if k != "facts"}
    ids["unknown"] = str(uuid.uuid4())
    ids["judged"] = bank["Priya"]
    call(conn, "mark_distinct", "team", bank["Alex Kim"], bank["Priya"])
    other = team(conn, "other")
    ids.update({f"other:{k}": v for k, v in other.items() if k != "facts"})
    return ids


@pytest.mark.parametrize("function, args, kwargs, sqlstate, argument", BAD,
                         ids=[f"{b[0]}-{n}" for n, b in enumerate(BAD)])
def test_bad_input_is_refused_naming_the_argument_and_nothing_is_written(conn, judged_bank, function, args, kwargs,
                                                                         sqlstate, argument):
    args = [a if i == 0 else judged_bank.get(a, a) for i, a in enumerate(args)]
    assert_refused_changing_nothing(conn, function, args, kwargs, sqlstate, argument)


# -- who may judge -----------------------------------------------------------------------

def test_a_bank_user_without_curation_may_list_but_not_judge(conn, bank, roles, connect_as):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    call(conn, "mark_distinct", "team", kim, bank["Priya"])
    bob = roles()
    conn.execute(f"SELECT {ER}.grant_bank_access('team', %s)", (bob,))
    b = connect_as(bob)
    before = snapshot(conn, "team")
    for statement, params in (
            (f"SELECT {ER}.mark_distinct('team', %s, %s)", (kim, morgan)),
            (f"SELECT {ER}.mark_distinct('team', %s, %s, dry_run => true)", (kim, morgan)),
            (f"SELECT {ER}.unmark_distinct('team', %s, %s)", (kim, bank["Priya"])),
            (f"INSERT INTO {ER}.entity_judgements (bank_id, entity_a, entity_b) VALUES ('team', %s, %s)",
             pair(kim, morgan)),
            (f"DELETE FROM {ER}.entity_judgements WHERE bank_id = 'team' AND entity_a = %s",
             (pair(kim, bank["Priya"])[0],))):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            b.execute(statement, params)
    assert snapshot(conn, "team") == before
    assert len(b.execute(f"SELECT * FROM {ER}.list_judgements('team')").fetchall()) == 1
    # Curation granted: it may.
    grant(conn, "team", bob)
    b.execute(f"SELECT {ER}.mark_distinct('team', %s, %s)", (kim, morgan))
    assert len(judgements(conn)) == 2


def test_a_bank_user_sees_only_its_banks_judgements(conn, bank, roles, connect_as):
    other = team(conn, "other")
    call(conn, "mark_distinct", "other", other["Alex Kim"], other["Alex Morgan"])
    bob = roles()
    conn.execute(f"SELECT {ER}.grant_bank_access('team', %s)", (bob,))
    b = connect_as(bob)
    assert b.execute(f"SELECT count(*) FROM {ER}.entity_judgements").fetchone() == (0,)
    assert b.execute(f"SELECT count(*) FROM {ER}.list_judgements('other')").fetchone() == (0,)


def test_an_orphan_judged_entity_goes_with_its_judgements_when_its_facts_are_forgotten(conn, bank):
    fact = insert_fact(conn, "team", ["Zed Only", "Acme"])
    zed = entity_id(conn, "team", "Zed Only")
    call(conn, "mark_distinct", "team", zed, bank["Acme"])
    conn.execute(f"DELETE FROM {ER}.facts WHERE bank_id = 'team' AND id = %s", (fact,))
    conn.execute(f"SELECT * FROM {ER}.flush_stats('team')")
    assert stored(conn) == []
    assert no_differences(conn)


# -- the client and the command line ---------------------------------------------------

def test_the_client_marks_lists_and_unmarks_by_name(conn, bank):
    from entity_resolver.client import Client, Judgement

    er = Client(conn)
    preview = er.mark_distinct("team", "alex kim", "Alex Morgan", reason="two people", dry_run=True)
    assert preview["dry_run"] is True and stored(conn) == []
    plan = er.mark_distinct("team", "alex kim", bank["Alex Morgan"], reason="two people")
    assert plan["operation_id"] and stored(conn) == [pair(bank["Alex Kim"], bank["Alex Morgan"])]
    rows = er.judgements("team")
    assert len(rows) == 1 and isinstance(rows[0], Judgement)
    assert {rows[0].name_a, rows[0].name_b} == {"Alex Kim", "Alex Morgan"} and rows[0].reason == "two people"
    assert er.judgements("team", "Acme") == [] and er.judgements("team", "ALEX MORGAN") == rows
    with pytest.raises(ValueError, match="^b: bank 'team' has no entity named 'Nobody'"):
        er.mark_distinct("team", "Alex Kim", "Nobody")
    assert er.unmark_distinct("team", "Alex Morgan", "Alex Kim", dry_run=True)["dry_run"] is True
    assert len(er.judgements("team")) == 1
    er.unmark_distinct("team", "Alex Morgan", "Alex Kim")
    assert er.judgements("team") == []
    assert [o.kind for o in er.history("team")] == ["unmark_distinct", "mark_distinct"]


def test_the_command_line_marks_lists_and_unmarks(conn, bank):
    import json

    from typer.testing import CliRunner

    from entity_resolver.cli import app

    i = conn.info
    dsn = f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"
    env = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}

    def cli(*args):
        return CliRunner().invoke(app, [*args, "--dsn", dsn], env=env, catch_exceptions=False)

    preview = cli("distinct", "team", "Alex Kim", "Alex Morgan", "--reason", "two people", "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert "mark 'Alex Kim' and 'Alex Morgan' distinct (dry run: nothing written)" in preview.stdout
    assert stored(conn) == []
    done = cli("distinct", "team", "Alex Kim", "Alex Morgan", "--reason", "two people")
    assert done.exit_code == 0 and "undo with: entity-resolver undo team" in done.stdout
    listed = cli("judgements", "team")
    assert "Alex Kim" in listed.stdout and "Alex Morgan" in listed.stdout and "two people" in listed.stdout
    rows = json.loads(cli("judgements", "team", "alex morgan", "--json").stdout)
    assert [r["reason"] for r in rows] == ["two people"]
    refused = cli("merge", "team", "Alex Kim", "--into", "Alex Morgan")
    assert refused.exit_code != 0 and "23P01" in refused.stderr and "judged distinct" in refused.stderr
    assert cli("undistinct", "team", "Alex Morgan", "Alex Kim", "--dry-run").exit_code == 0
    assert len(stored(conn)) == 1
    assert cli("undistinct", "team", "Alex Morgan", "Alex Kim").exit_code == 0
    assert stored(conn) == []
    empty = cli("judgements", "team")
    assert empty.exit_code == 0 and "has no judgements" in empty.stderr
    assert cli("judgements", "nobank").exit_code != 0


def test_the_documented_command_lines_run_as_written(conn, bank):
    from test_docs import run_documented, sh_block

    i = conn.info
    dsn = f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"
    for line in sh_block("corrections.md", "entity-resolver distinct team"):
        run_documented(line, dsn)
    kinds = [r[0] for r in conn.execute(f"SELECT kind FROM {ER}.operation_history('team')")]
    assert kinds == ["unmark_distinct", "mark_distinct"] and stored(conn) == []


def _two_near_spellings(conn, bank_id):
    """'Dana Whitfield' and 'Dana Whitfeld', one entity each (a split), both next to the harbour project."""
    insert_fact(conn, bank_id, ["Dana Whitfield", "harbour project"])
    unit = insert_fact(conn, bank_id, ["Dana Whitfeld", "harbour project"])
    (whole,) = conn.execute(f"SELECT id::text FROM {ER}.entities WHERE bank_id = %s AND canonical_name = %s",
                            (bank_id, "Dana Whitfield")).fetchone()
    plan = call(conn, "split_entity", bank_id, whole, [unit], "Dana Whitfeld")
    return whole, str(plan["new_entity"]["entity_id"])


def _explained(conn, bank_id, mention):
    return {str(r[0]): (r[1], r[2]) for r in conn.execute(
        f"SELECT candidate_id, decision, lever FROM {ER}.explain_mention(%s, %s, ARRAY['harbour project'])",
        (bank_id, mention))}


def test_a_mention_fitting_two_judged_distinct_entities_about_equally_is_neither_and_says_so(conn):
    whole, split = _two_near_spellings(conn, "judged")
    # Before the judgement the better score wins, as always.
    assert _explained(conn, "judged", "Dana Whitfild") == {whole: ("chosen", None), split: ("outscored", None)}
    call(conn, "mark_distinct", "judged", whole, split, reason="two people")
    assert _explained(conn, "judged", "Dana Whitfild") == {whole: ("ambiguous", "judgements"),
                                                          split: ("ambiguous", "judgements")}
    # The exact name still goes to its entity: only a near tie is a question.
    assert _explained(conn, "judged", "Dana Whitfield")[whole] == ("chosen", None)
    # Unmarked, the mention is a near spelling of the better one again.
    call(conn, "unmark_distinct", "judged", whole, split)
    assert _explained(conn, "judged", "Dana Whitfild")[whole] == ("chosen", None)
    call(conn, "mark_distinct", "judged", whole, split)
    insert_fact(conn, "judged", ["Dana Whitfild", "harbour project"])
    entity, decision = conn.execute(
        f"SELECT entity_id::text, decision FROM {ER}.mentions WHERE bank_id = 'judged' AND mention = 'Dana Whitfild'"
    ).fetchone()
    assert entity not in (whole, split) and decision == "ambiguous"


def test_the_reference_profile_does_not_read_judgements(conn):
    whole, split = _two_near_spellings(conn, "judged_ref")
    call(conn, "configure_bank", "judged_ref", '{"profile": "reference"}')
    call(conn, "mark_distinct", "judged_ref", whole, split)
    assert _explained(conn, "judged_ref", "Dana Whitfild")[whole][0] == "chosen"
