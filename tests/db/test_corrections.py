"""Operator corrections (docs/corrections.md): merge, split, rename, aliases, forget,
each ledgered and undoable.

After every correction the stored numbers equal what rebuild_stats derives from
the record; undoing the most recent operation gives back every row of the
bank's identity tables exactly (a snapshot compares them); an older operation
cannot be undone while later ones on the same entities are in effect."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from corrections_helpers import (ER, assert_refused_changing_nothing, call, differences, entity_id, insert_fact,
                                 operations_count, snapshot, team)
from shared import INTERNAL


@pytest.fixture
def bank(conn):
    return team(conn)


def no_differences(conn, bank_id="team"):
    return differences(conn, bank_id) == {"differences": 0, "entities": [], "pairs": [], "orphans": []}


def mentions_of(conn, entity, bank_id="team"):
    return conn.execute(f"SELECT mention, decision FROM {ER}.mentions WHERE bank_id = %s AND entity_id = %s"
                        " ORDER BY unit_id, ordinal", (bank_id, entity)).fetchall()


def pair_count(conn, a, b, bank_id="team"):
    a, b = sorted([a, b])
    row = conn.execute(f"SELECT cooccurrence_count FROM {ER}.entity_cooccurrences"
                       " WHERE bank_id = %s AND entity_id_1 = %s AND entity_id_2 = %s", (bank_id, a, b)).fetchone()
    return row[0] if row else None


# -- merge -------------------------------------------------------------------------------

def test_merge_moves_mentions_links_and_pairs_and_counts_add_up(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    before_counts = dict(conn.execute(f"SELECT id::text, mention_count FROM {ER}.entities WHERE bank_id = 'team'"))
    priya_pairs = pair_count(conn, kim, bank["Priya"]) + pair_count(conn, morgan, bank["Priya"])

    plan = call(conn, "merge_entities", "team", [kim], morgan, reason="same person")

    assert plan["operation_id"] is not None and plan["dry_run"] is False
    assert plan["mentions_moved"] == 3
    assert conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE id = %s", (kim,)).fetchone()[0] == 0
    assert conn.execute(f"SELECT mention_count FROM {ER}.entities WHERE id = %s", (morgan,)).fetchone()[0] \
        == before_counts[kim] + before_counts[morgan]
    assert [d for _, d in mentions_of(conn, morgan)].count("operator") == 3
    assert pair_count(conn, morgan, bank["Priya"]) == priya_pairs
    assert pair_count(conn, morgan, bank["React"]) == 2
    assert no_differences(conn)


def test_a_pair_between_merged_entities_disappears(conn, bank):
    insert_fact(conn, "team", ["Alex Kim", "Alex Morgan"])
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    assert pair_count(conn, kim, morgan) == 1
    call(conn, "merge_entities", "team", [kim], morgan)
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_cooccurrences WHERE bank_id = 'team'"
                        " AND %s IN (entity_id_1, entity_id_2)", (kim,)).fetchone()[0] == 0
    # The fact naming both now links the target once.
    assert conn.execute(f"SELECT count(*) FROM {ER}.unit_entities WHERE bank_id = 'team' AND entity_id = %s",
                        (morgan,)).fetchone()[0] == 6
    assert no_differences(conn)


def test_merged_names_become_aliases_and_resolve_to_the_target(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    call(conn, "merge_entities", "team", [kim], morgan)
    assert conn.execute(f"SELECT alias, source FROM {ER}.entity_aliases WHERE bank_id = 'team' AND entity_id = %s",
                        (morgan,)).fetchall() == [("Alex Kim", "merge")]
    row = conn.execute(f"SELECT entity_id, created FROM {ER}.resolve_mention('team', 'alex kim', '{{}}')").fetchone()
    assert (str(row[0]), row[1]) == (morgan, False)
    unit = insert_fact(conn, "team", ["Alex Kim", "Tokyo Office"])
    assert conn.execute(f"SELECT entity_id::text, decision FROM {ER}.mentions WHERE bank_id = 'team'"
                        " AND unit_id = %s AND ordinal = 1", (unit,)).fetchone() == (morgan, "alias")
    assert no_differences(conn)


def test_a_merged_id_keeps_resolving_through_current_entity(conn, bank):
    kim, morgan, priya = bank["Alex Kim"], bank["Alex Morgan"], bank["Priya"]
    call(conn, "merge_entities", "team", [kim], morgan)
    assert str(call(conn, "current_entity", "team", kim)) == morgan
    # Merged again: ids forwarded to the merged entity follow (one step).
    call(conn, "merge_entities", "team", [morgan], priya)
    assert str(call(conn, "current_entity", "team", kim)) == priya
    assert str(call(conn, "current_entity", "team", morgan)) == priya
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_forwards WHERE bank_id = 'team' AND new_id <> %s",
                        (priya,)).fetchone()[0] == 0


def test_merging_several_sources_at_once(conn, bank):
    ids = [bank["Alex Kim"], bank["React"], bank["Alex Kim"]]     # a repeated id counts once
    plan = call(conn, "merge_entities", "team", ids, bank["Alex Morgan"])
    assert sorted(s["name"] for s in plan["sources"]) == ["Alex Kim", "React"]
    assert sorted(plan["aliases_added"]) == ["Alex Kim", "React"]
    assert no_differences(conn)


def test_a_dry_run_returns_the_plan_and_writes_nothing(conn, bank):
    before = snapshot(conn, "team")
    plan = call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"], dry_run=True)
    assert plan["dry_run"] is True and plan["operation_id"] is None
    assert plan["mentions_moved"] == 3 and plan["aliases_added"] == ["Alex Kim"]
    assert plan["summary"] == "merge 'Alex Kim' into 'Alex Morgan'"
    assert snapshot(conn, "team") == before
    assert operations_count(conn, "team") == 0
    real = call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"])
    assert {k: v for k, v in real.items() if k not in ("dry_run", "operation_id")} == \
        {k: v for k, v in plan.items() if k not in ("dry_run", "operation_id")}


def test_queued_statistics_are_applied_before_a_correction(conn, bank):
    conn.execute("SET entity_resolver.flush_at_commit = off")
    insert_fact(conn, "team", ["Alex Kim", "Oslo"])
    conn.execute("RESET entity_resolver.flush_at_commit")
    assert conn.execute(f"SELECT count(*) FROM {ER}.stats_queue WHERE bank_id = 'team'").fetchone()[0] > 0
    call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"])
    assert conn.execute(f"SELECT count(*) FROM {ER}.stats_queue WHERE bank_id = 'team'").fetchone()[0] == 0
    assert no_differences(conn)


# -- split, rename, aliases, forget -----------------------------------------------------

def test_split_moves_the_mentions_of_those_units_to_a_new_curated_entity(conn, bank):
    kim = bank["Alex Kim"]
    later = bank["facts"][5]                          # Alex Kim, Sprint 14, Oslo
    plan = call(conn, "split_entity", "team", kim, [later], "Alex Kimura", reason="another Alex")
    new = plan["new_entity"]["entity_id"]
    assert plan["mentions_moved"] == 1 and plan["mentions_staying"] == 2
    assert conn.execute(f"SELECT canonical_name, curated, mention_count FROM {ER}.entities WHERE id = %s",
                        (new,)).fetchone() == ("Alex Kimura", True, 1)
    assert mentions_of(conn, new) == [("Alex Kim", "operator")]
    assert pair_count(conn, new, bank["Oslo"]) == 1
    assert pair_count(conn, kim, bank["Oslo"]) is None
    assert no_differences(conn)


def test_rename_keeps_the_old_name_as_an_alias(conn, bank):
    acme = bank["Acme"]
    call(conn, "rename_entity", "team", acme, "Acme Corporation")
    assert conn.execute(f"SELECT canonical_name, curated FROM {ER}.entities WHERE id = %s", (acme,)).fetchone() \
        == ("Acme Corporation", True)
    assert conn.execute(f"SELECT alias, source FROM {ER}.entity_aliases WHERE entity_id = %s",
                        (acme,)).fetchall() == [("Acme", "rename")]
    assert str(conn.execute(f"SELECT entity_id FROM {ER}.resolve_mention('team', 'ACME')").fetchone()[0]) == acme


def test_renaming_to_an_own_alias_swaps_them(conn, bank):
    acme = bank["Acme"]
    call(conn, "add_alias", "team", acme, "ACME Inc")
    call(conn, "rename_entity", "team", acme, "Acme Inc")
    assert conn.execute(f"SELECT alias FROM {ER}.entity_aliases WHERE entity_id = %s", (acme,)).fetchall() \
        == [("Acme",)]


def test_a_change_of_case_adds_no_alias(conn, bank):
    call(conn, "rename_entity", "team", bank["Acme"], "ACME")
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE bank_id = 'team'").fetchone()[0] == 0


def test_an_alias_resolves_exactly_and_is_recorded_as_such(conn, bank):
    call(conn, "add_alias", "team", bank["Alex Morgan"], "AM")
    unit = insert_fact(conn, "team", ["AM", "Acme"])
    assert conn.execute(f"SELECT entity_id::text, decision FROM {ER}.mentions WHERE unit_id = %s AND ordinal = 1",
                        (unit,)).fetchone() == (bank["Alex Morgan"], "alias")
    call(conn, "remove_alias", "team", "am")
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE bank_id = 'team'").fetchone()[0] == 0


def _orphan_questions(conn, statement, *args):
    """How many times a statement calls _orphan_ids (the session's function statistics, before and after:
    counts not yet reported are shown with the transaction's)."""
    calls = ("SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
             " WHERE funcname = '_orphan_ids'")
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL track_functions = 'all'")
        before = conn.execute(calls).fetchone()[0]
        conn.execute(statement, args)
        return conn.execute(calls).fetchone()[0] - before


def test_the_whole_bank_checks_ask_for_its_orphans_once(conn, bank):
    # Asked once per entity, rebuild_stats of 10,000 entities took minutes.
    entities = conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'team'").fetchone()[0]
    assert entities > 2
    assert _orphan_questions(conn, f"SELECT {ER}.rebuild_stats('team')") == 1
    assert _orphan_questions(conn, f"SELECT {INTERNAL}._reresolve_unrecorded('team')") == 1


def test_forget_entity_removes_it_with_its_provenance_links_and_pairs(conn, bank):
    priya = bank["Priya"]
    plan = call(conn, "forget_entity", "team", priya, dry_run=True)
    assert (plan["mentions"], plan["units"], plan["pairs"]) == (3, 3, 5)
    call(conn, "forget_entity", "team", priya)
    for table, column in (("entities", "id"), ("mentions", "entity_id"), ("unit_entities", "entity_id"),
                          ("entity_cooccurrences", "entity_id_1"), ("entity_cooccurrences", "entity_id_2")):
        assert conn.execute(f"SELECT count(*) FROM {ER}.{table} WHERE {column} = %s", (priya,)).fetchone()[0] == 0
    assert call(conn, "current_entity", "team", priya) is None
    # The facts stay, with the other entities.
    assert conn.execute(f"SELECT count(*) FROM {ER}.facts WHERE bank_id = 'team'").fetchone()[0] == 6
    assert no_differences(conn)


# -- undo ----------------------------------------------------------------------------------

def undo(conn, operation_id, bank_id="team"):
    return call(conn, "undo_operation", bank_id, operation_id)


def test_merge_then_undo_restores_every_row(conn, bank):
    insert_fact(conn, "team", ["Alex Kim", "Alex Morgan", "Acme"])
    call(conn, "add_alias", "team", bank["Alex Kim"], "AK")
    call(conn, "merge_entities", "team", [bank["React"]], bank["Alex Kim"])   # a forward to a source
    before = snapshot(conn, "team")
    op = call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"])["operation_id"]
    assert snapshot(conn, "team") != before
    result = undo(conn, op)
    assert result["undone"] is True and result["kind"] == "merge"
    assert snapshot(conn, "team") == before
    assert no_differences(conn)


def test_split_then_undo_restores_every_row(conn, bank):
    before = snapshot(conn, "team")
    op = call(conn, "split_entity", "team", bank["Alex Kim"], [bank["facts"][3], bank["facts"][5]],
                "Alex Kimura")["operation_id"]
    undo(conn, op)
    assert snapshot(conn, "team") == before


def test_rename_then_undo_restores_every_row(conn, bank):
    call(conn, "add_alias", "team", bank["Acme"], "Acme Inc")
    before = snapshot(conn, "team")
    op = call(conn, "rename_entity", "team", bank["Acme"], "acme inc")["operation_id"]
    undo(conn, op)
    assert snapshot(conn, "team") == before


def test_alias_add_and_remove_then_undo_restore_every_row(conn, bank):
    before = snapshot(conn, "team")
    added = call(conn, "add_alias", "team", bank["Acme"], "Acme Inc")["operation_id"]
    with_alias = snapshot(conn, "team")
    removed = call(conn, "remove_alias", "team", "ACME INC")["operation_id"]
    undo(conn, removed)
    assert snapshot(conn, "team") == with_alias
    undo(conn, added)
    assert snapshot(conn, "team") == before


def test_forget_entity_then_undo_restores_every_row(conn, bank):
    call(conn, "add_alias", "team", bank["Priya"], "P.")
    call(conn, "merge_entities", "team", [bank["Oslo"]], bank["Priya"])
    before = snapshot(conn, "team")
    op = call(conn, "forget_entity", "team", bank["Priya"])["operation_id"]
    undo(conn, op)
    assert snapshot(conn, "team") == before
    assert str(call(conn, "current_entity", "team", bank["Oslo"])) == bank["Priya"]


def test_an_older_operation_waits_for_the_later_ones_on_its_entities(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    first = call(conn, "merge_entities", "team", [kim], morgan)["operation_id"]
    unrelated = call(conn, "add_alias", "team", bank["Oslo"], "OSL")["operation_id"]
    second = call(conn, "rename_entity", "team", morgan, "Alexandra Morgan")["operation_id"]
    third = call(conn, "add_alias", "team", morgan, "Sandy")["operation_id"]
    with pytest.raises(psycopg.errors.DependentObjectsStillExist) as refused:
        undo(conn, first)
    message = refused.value.diag.message_primary
    assert message.startswith("operation_id: ")
    assert f"{third} (add_alias), {second} (rename)" in message and f"{unrelated} " not in message
    undo(conn, third)
    undo(conn, second)
    undo(conn, first)
    assert no_differences(conn)
    history = conn.execute(f"SELECT operation_id, undone_at IS NOT NULL, blocked_by FROM {ER}.operation_history('team')"
                           ).fetchall()
    assert history == [(third, True, None), (second, True, None), (unrelated, False, []), (first, True, None)]


def test_an_undone_operation_cannot_be_undone_again(conn, bank):
    op = call(conn, "add_alias", "team", bank["Acme"], "Acme Inc")["operation_id"]
    undo(conn, op)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="^operation_id: operation .* already undone"):
        undo(conn, op)


def test_mentions_that_arrived_after_a_merge_stay_where_they_were_resolved(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    op = call(conn, "merge_entities", "team", [kim], morgan)["operation_id"]
    unit = insert_fact(conn, "team", ["Alex Kim", "Oslo"], "2026-03-20T09:00:00Z")
    undo(conn, op)
    assert conn.execute(f"SELECT entity_id::text FROM {ER}.mentions WHERE unit_id = %s AND ordinal = 1",
                        (unit,)).fetchone() == (morgan,)
    assert sorted(mentions_of(conn, kim)) == [("Alex Kim", "created"), ("Alex Kim", "resolved"),
                                              ("Alex Kim", "resolved")]
    assert no_differences(conn)


def test_a_fact_forgotten_after_a_merge_stays_forgotten_by_the_undo(conn, bank):
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    op = call(conn, "merge_entities", "team", [kim], morgan)["operation_id"]
    conn.execute(f"DELETE FROM {ER}.facts WHERE id = %s", (bank["facts"][5],))
    undo(conn, op)
    assert len(mentions_of(conn, kim)) == 2
    assert no_differences(conn)


def test_a_pair_an_undo_leaves_without_units_keeps_no_date_for_later_facts(conn, bank):
    # The undo gives back the pair (Alex Kim, Priya) from its image, with the
    # date of a fact deleted since; no unit holds it, so its count is 0 and
    # its date must go too: a later fact dated earlier dates the pair itself
    # (a stale date used to win the flush's greatest()).
    kim, morgan = bank["Alex Kim"], bank["Alex Morgan"]
    op = call(conn, "merge_entities", "team", [kim], morgan)["operation_id"]
    conn.execute(f"DELETE FROM {ER}.facts WHERE id = %s", (bank["facts"][3],))
    undo(conn, op)
    assert no_differences(conn)
    insert_fact(conn, "team", ["Alex Kim", "Priya"], "2026-03-01T00:00:00Z")
    assert no_differences(conn)


def test_a_split_off_entity_that_got_mentions_since_is_kept_by_the_undo(conn, bank):
    op = call(conn, "split_entity", "team", bank["Alex Kim"], [bank["facts"][5]], "Alex Kimura")
    insert_fact(conn, "team", ["Alex Kimura", "Oslo"])
    result = undo(conn, op["operation_id"])
    assert result["kept"]["entity_id"] == op["new_entity"]["entity_id"] and result["kept"]["mentions"] == 1
    assert no_differences(conn)


def test_an_undo_refuses_to_give_back_a_name_taken_since(conn, bank):
    op = call(conn, "forget_entity", "team", bank["Oslo"])["operation_id"]
    insert_fact(conn, "team", ["Oslo", "Acme"])
    before = snapshot(conn, "team")
    with pytest.raises(psycopg.errors.UniqueViolation, match="^operation_id: cannot undo operation .* 'Oslo'"):
        undo(conn, op)
    assert snapshot(conn, "team") == before


def test_history_lists_operations_most_recent_first(conn, bank):
    op = call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"], reason="one person")
    undo(conn, op["operation_id"])
    rows = conn.execute(f"SELECT kind, summary, reason, performed_by = current_user, undone_by = current_user"
                        f" FROM {ER}.operation_history('team')").fetchall()
    assert rows == [("merge", "merge 'Alex Kim' into 'Alex Morgan'", "one person", True, True)]


# -- bad input: a clear error naming the argument, nothing written -----------------------

LONG = "x" * 501


# The arguments that take ids: written as names of the crowded bank ("Acme",
# "f6" for its sixth fact, "other:Acme"), resolved when the bank exists.
ID_ARGUMENTS = {"merge_entities": (1, 2), "split_entity": (1, 2), "rename_entity": (1,), "add_alias": (1,),
                "forget_entity": (1,), "undo_operation": (1,)}


def _bad(function, *args, **kwargs):
    def resolve(value, ids):
        if isinstance(value, list):
            return [resolve(v, ids) for v in value]
        return ids.get(value, value) if isinstance(value, str) else value

    return lambda ids: (function, [resolve(a, ids) if i in ID_ARGUMENTS.get(function, ()) else a
                                   for i, a in enumerate(args)], kwargs)


BAD = [
    # merge_entities
    pytest.param(_bad("merge_entities", "team", None, "Alex Morgan"), "22004", "source_ids", id="merge null sources"),
    pytest.param(_bad("merge_entities", "team", [], "Alex Morgan"), "22023", "source_ids", id="merge no sources"),
    pytest.param(_bad("merge_entities", "team", [None], "Alex Morgan"), "22004", "source_ids", id="merge null source"),
    pytest.param(_bad("merge_entities", "team", ["Alex Kim"], None), "22004", "target_id", id="merge null target"),
    pytest.param(_bad("merge_entities", "team", ["Alex Kim", "Alex Morgan"], "Alex Morgan"), "22023", "source_ids",
                 id="merge target among sources"),
    pytest.param(_bad("merge_entities", "team", ["other:Alex Kim"], "Alex Morgan"), "22023", "source_ids",
                 id="merge source of another bank"),
    pytest.param(_bad("merge_entities", "team", ["Alex Kim"], "other:Alex Kim"), "22023", "target_id",
                 id="merge target of another bank"),
    pytest.param(_bad("merge_entities", "team", ["unknown"], "Alex Morgan"), "22023", "source_ids",
                 id="merge unknown source"),
    pytest.param(_bad("merge_entities", "team", ["merged"], "Alex Morgan"), "22023", "source_ids",
                 id="merge an id merged before"),
    pytest.param(_bad("merge_entities", "team", ["label"], "Alex Morgan"), "22023", "source_ids",
                 id="merge a label"),
    pytest.param(_bad("merge_entities", "team", ["Alex Kim"], "Alex Morgan", dry_run=None), "22004", "dry_run",
                 id="merge null dry_run"),
    pytest.param(_bad("merge_entities", None, ["Alex Kim"], "Alex Morgan"), "22004", "bank_id", id="merge null bank"),
    pytest.param(_bad("merge_entities", " ", ["Alex Kim"], "Alex Morgan"), "22023", "bank_id", id="merge blank bank"),
    pytest.param(_bad("merge_entities", "other", ["Alex Kim"], "Alex Morgan"), "22023", "target_id",
                 id="merge ids of a bank into another"),
    # split_entity
    pytest.param(_bad("split_entity", "team", None, ["f6"], "Alex Kimura"), "22004", "entity_id", id="split null entity"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", None, "Alex Kimura"), "22004", "unit_ids",
                 id="split null units"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", [], "Alex Kimura"), "22023", "unit_ids", id="split no units"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6", None], "Alex Kimura"), "22004", "unit_ids",
                 id="split null unit"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f1"], "Alex Kimura"), "22023", "unit_ids",
                 id="split a unit without the entity"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f2", "f4", "f6"], "Alex Kimura"), "22023", "unit_ids",
                 id="split every unit"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6"], None), "22004", "new_name", id="split null name"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6"], " "), "22023", "new_name", id="split blank name"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6"], LONG), "22001", "new_name", id="split long name"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6"], "ACME"), "23505", "new_name",
                 id="split to a taken name"),
    pytest.param(_bad("split_entity", "team", "Alex Kim", ["f6"], "alex k."), "23505", "new_name",
                 id="split to a taken alias"),
    pytest.param(_bad("split_entity", "team", "other:Alex Kim", ["f6"], "Alex Kimura"), "22023", "entity_id",
                 id="split an entity of another bank"),
    # rename_entity
    pytest.param(_bad("rename_entity", "team", None, "Acme Inc"), "22004", "entity_id", id="rename null entity"),
    pytest.param(_bad("rename_entity", "team", "Acme", None), "22004", "new_name", id="rename null name"),
    pytest.param(_bad("rename_entity", "team", "Acme", ""), "22023", "new_name", id="rename empty name"),
    pytest.param(_bad("rename_entity", "team", "Acme", LONG), "22001", "new_name", id="rename long name"),
    pytest.param(_bad("rename_entity", "team", "Acme", "priya"), "23505", "new_name", id="rename to a taken name"),
    pytest.param(_bad("rename_entity", "team", "Acme", "Alex K."), "23505", "new_name",
                 id="rename to another's alias"),
    pytest.param(_bad("rename_entity", "team", "Acme", "Acme"), "22023", "new_name", id="rename to the same name"),
    pytest.param(_bad("rename_entity", "team", "label", "person:someone"), "22023", "entity_id", id="rename a label"),
    pytest.param(_bad("rename_entity", "team", "other:Acme", "Acme Inc"), "22023", "entity_id",
                 id="rename an entity of another bank"),
    # add_alias, remove_alias
    pytest.param(_bad("add_alias", "team", None, "AC"), "22004", "entity_id", id="alias null entity"),
    pytest.param(_bad("add_alias", "team", "Acme", None), "22004", "alias", id="alias null"),
    pytest.param(_bad("add_alias", "team", "Acme", "\t"), "22023", "alias", id="alias blank"),
    pytest.param(_bad("add_alias", "team", "Acme", LONG), "22001", "alias", id="alias long"),
    pytest.param(_bad("add_alias", "team", "Acme", "acme"), "23505", "alias", id="alias is its own name"),
    pytest.param(_bad("add_alias", "team", "Acme", "Oslo"), "23505", "alias", id="alias is another name"),
    pytest.param(_bad("add_alias", "team", "Acme", "ALEX K."), "23505", "alias", id="alias taken"),
    pytest.param(_bad("add_alias", "team", "other:Acme", "AC"), "22023", "entity_id",
                 id="alias an entity of another bank"),
    pytest.param(_bad("remove_alias", "team", None), "22004", "alias", id="unalias null"),
    pytest.param(_bad("remove_alias", "team", "Acme"), "22023", "alias", id="unalias a name"),
    pytest.param(_bad("remove_alias", "other", "Alex K."), "22023", "alias", id="unalias another bank's alias"),
    # forget_entity
    pytest.param(_bad("forget_entity", "team", None), "22004", "entity_id", id="forget null"),
    pytest.param(_bad("forget_entity", "team", "other:Acme"), "22023", "entity_id",
                 id="forget an entity of another bank"),
    pytest.param(_bad("forget_entity", "team", "Acme", dry_run=None), "22004", "dry_run", id="forget null dry_run"),
    # undo_operation, operation_history
    pytest.param(_bad("undo_operation", "team", None), "22004", "operation_id", id="undo null"),
    pytest.param(_bad("undo_operation", "team", 10**12), "22023", "operation_id", id="undo unknown"),
    pytest.param(_bad("undo_operation", "other", "op"), "22023", "operation_id", id="undo another bank's"),
    pytest.param(_bad("operation_history", "team", 0), "22023", "max_results", id="history max 0"),
    pytest.param(_bad("operation_history", None), "22004", "bank_id", id="history null bank"),
]


@pytest.fixture
def crowded(conn, bank):
    """The team bank with an alias, an entity merged away, a label; and bank 'other'."""
    team_ids = {k: v for k, v in bank.items() if k != "facts"}
    team_ids.update({f"f{n}": fact for n, fact in enumerate(bank["facts"], 1)})
    merged = entity_id(conn, "team", "Sprint 14")
    op = call(conn, "merge_entities", "team", [merged], bank["React"])["operation_id"]
    call(conn, "add_alias", "team", bank["Alex Kim"], "Alex K.")
    call(conn, "set_entity_labels", "team", '{"attributes": [{"key": "person", "type": "value", '
                                            '"values": [{"value": "sam"}]}]}')
    insert_fact(conn, "team", ["person:sam", "Acme"])
    team_ids.update({"merged": merged, "op": op, "label": entity_id(conn, "team", "person:sam"),
                     "unknown": str(uuid.uuid4())})
    other = team(conn, "other")
    team_ids.update({f"other:{k}": v for k, v in other.items() if k != "facts"})
    return team_ids


@pytest.mark.parametrize("build, sqlstate, argument", BAD)
def test_bad_input_is_refused_naming_the_argument_and_nothing_is_written(conn, crowded, build, sqlstate, argument):
    function, args, kwargs = build(crowded)
    assert_refused_changing_nothing(conn, function, args, kwargs, sqlstate, argument)


def test_corrections_refuse_a_transaction_whose_snapshot_predates_the_lock(conn, bank):
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with pytest.raises(psycopg.errors.InvalidTransactionState, match="READ COMMITTED"):
            call(conn, "merge_entities", "team", [bank["Alex Kim"]], bank["Alex Morgan"])


# -- erase: forget_entity(..., erase => true) -------------------------------------------

def ledger_text(conn, bank_id="team"):
    return conn.execute(f"SELECT coalesce(string_agg(o::text, ' '), '') FROM {ER}.operations AS o"
                        " WHERE bank_id = %s", (bank_id,)).fetchone()[0]


def test_erase_scrubs_every_name_from_the_ledger_refuses_undo_and_reports_the_facts(conn, bank):
    priya = bank["Priya"]
    call(conn, "add_alias", "team", priya, "P. Sharma")
    renamed = call(conn, "rename_entity", "team", priya, "Priya Sharma", reason="Priya's full name")["operation_id"]
    merged = call(conn, "merge_entities", "team", [bank["Oslo"]], priya)["operation_id"]   # 'Oslo' becomes an alias
    unrelated = call(conn, "add_alias", "team", bank["Acme"], "Acme Inc")["operation_id"]
    named = insert_fact(conn, "team", ["Acme"])
    conn.execute(f"UPDATE {ER}.facts SET content = 'acme met PRIYA today' WHERE id = %s", (named,))
    preview = call(conn, "forget_entity", "team", priya, dry_run=True, erase=True)
    assert preview["dry_run"] is True and "priya" in ledger_text(conn).lower()

    result = call(conn, "forget_entity", "team", priya, erase=True, reason="erasure request")

    assert sorted(result["names_erased"]) == ["Oslo", "P. Sharma", "Priya", "Priya Sharma"]
    erased = [o["operation_id"] for o in result["operations_erased"]]
    assert renamed in erased and merged in erased and unrelated not in erased
    assert erased == [o["operation_id"] for o in preview["operations_erased"]]
    # No name is left anywhere in the bank's ledger, in any case.
    text = ledger_text(conn).lower()
    for name in ("priya", "p. sharma", "oslo"):
        assert name not in text
    assert "acme inc" in text                      # an operation that did not name her is kept as it was
    # The facts that name her or mentioned her: the application's to act on.
    naming = {f["id"]: f for f in result["facts_naming"]}
    assert naming[named]["in_content"] is True and naming[named]["mentioned"] is False
    mentioned = [f for f in naming.values() if f["mentioned"]]
    assert {f["fact_id"] for f in mentioned} == {"f3", "f4", "f5", "f6"}   # Priya's three, Oslo's one
    assert all(f["in_mentions"] for f in mentioned)
    assert {f["id"] for f in preview["facts_naming"]} == set(naming)
    # Neither the erasing operation nor the ones it rewrote can be undone; nothing changes.
    before = snapshot(conn, "team")
    for op in (result["operation_id"], merged, renamed):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=f"operation {op} .*erased by operation"):
            undo(conn, op)
    assert snapshot(conn, "team") == before
    # An operation it did not touch is undone as before.
    undo(conn, unrelated)
    assert no_differences(conn)


def test_forget_without_erase_keeps_the_ledger_and_its_undo(conn, bank):
    op = call(conn, "forget_entity", "team", bank["Priya"], erase=False)["operation_id"]
    assert "erase" not in call(conn, "forget_entity", "team", bank["Oslo"], dry_run=True)
    assert "Priya" in ledger_text(conn)
    undo(conn, op)


def test_erase_null_is_refused_naming_the_argument(conn, bank):
    before = snapshot(conn, "team")
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="^erase: "):
        call(conn, "forget_entity", "team", bank["Priya"], erase=None)
    assert snapshot(conn, "team") == before and operations_count(conn, "team") == 0


# -- split: the source's aliases the moved mentions are written as ---------------------

def test_a_split_reports_the_aliases_its_mentions_share_and_can_remove_them_undoably(conn, bank):
    # 'Chris' named one entity, then it turned out to be two people: the operator
    # renamed it (the bare name stays its alias) and splits the other's facts.
    insert_fact(conn, "team", ["Chris", "Acme"])
    chris = entity_id(conn, "team", "Chris")
    call(conn, "rename_entity", "team", chris, "Chris Adams")          # alias: Chris
    moved = insert_fact(conn, "team", ["chris", "React"])
    assert conn.execute(f"SELECT entity_id::text, decision FROM {ER}.mentions WHERE unit_id = %s AND ordinal = 1",
                        (moved,)).fetchone() == (chris, "alias")
    kept_plan = call(conn, "split_entity", "team", chris, [moved], "Chris Baker", dry_run=True)
    assert kept_plan["aliases_shared"] == ["Chris"] and kept_plan["aliases_removed"] == []
    assert kept_plan["name_shared"] is False
    before = snapshot(conn, "team")

    plan = call(conn, "split_entity", "team", chris, [moved], "Chris Baker", keep_aliases=False)

    assert plan["aliases_shared"] == ["Chris"] and plan["aliases_removed"] == ["Chris"]
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE entity_id = %s", (chris,)).fetchone()[0] == 0
    # A later bare 'Chris' is no longer sent to Chris Adams by the alias.
    later = insert_fact(conn, "team", ["Chris", "Oslo"])
    assert conn.execute(f"SELECT decision FROM {ER}.mentions WHERE unit_id = %s AND ordinal = 1",
                        (later,)).fetchone()[0] != "alias"
    conn.execute(f"DELETE FROM {ER}.facts WHERE id = %s", (later,))
    assert no_differences(conn)
    undo(conn, plan["operation_id"])
    assert snapshot(conn, "team") == before


def test_a_split_keeps_the_shared_aliases_by_default(conn, bank):
    call(conn, "add_alias", "team", bank["Alex Kim"], "AK")
    moved = insert_fact(conn, "team", ["AK", "Oslo"])
    plan = call(conn, "split_entity", "team", bank["Alex Kim"], [moved], "Alex Kimura")
    assert plan["aliases_shared"] == ["AK"] and plan["aliases_removed"] == []
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE alias = 'AK'").fetchone()[0] == 1
    unmoved = call(conn, "split_entity", "team", bank["Alex Kim"], [bank["facts"][1]], "Alex Kimo", dry_run=True)
    assert unmoved["aliases_shared"] == [] and unmoved["name_shared"] is True
