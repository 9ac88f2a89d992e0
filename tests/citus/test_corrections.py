"""Operator corrections on a distributed installation (docs/corrections.md, docs/scaling.md).

Each correction, its dry run and its undo is one call delegated to the worker
holding the bank, where it runs whole: it asks no other node. After each, the
statistics equal the record (counted here and by rebuild_stats); undoing the
most recent operation gives back every row of the bank's identity tables.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from citus_helpers import (EXACT, SCHEMA, banks_on, rebuild_differences, remote_commands, snapshot,
                           stats_differences, worker_port_of, workers_report_remote_commands)

# Two Alexes told apart by their neighbours, and facts enough for every table.
TEAM_FACTS = [
    ("2026-03-01T09:00:00Z", ["Alex Morgan", "Acme", "renewal"]),
    ("2026-03-02T09:00:00Z", ["Alex Kim", "React", "Sprint 14"]),
    ("2026-03-03T09:00:00Z", ["Alex Morgan", "Acme", "Priya"]),
    ("2026-03-04T09:00:00Z", ["Alex Kim", "React", "Priya"]),
    ("2026-03-05T09:00:00Z", ["Acme", "renewal", "Priya"]),
    ("2026-03-06T09:00:00Z", ["Alex Kim", "Sprint 14", "Oslo"]),
]


def team(conn: psycopg.Connection, bank: str) -> dict:
    """The facts inserted one statement each; returns {"facts": [unit ids], name: entity id, ...}."""
    facts = [conn.execute(
        f"INSERT INTO {SCHEMA}.facts (bank_id, mentions, event_date) VALUES (%s, %s, %s) RETURNING id",
        (bank, json.dumps(mentions), date)).fetchone()[0] for date, mentions in TEAM_FACTS]
    names = dict(conn.execute(f"SELECT canonical_name, id FROM {SCHEMA}.entities WHERE bank_id = %s", (bank,)))
    return {"facts": facts, **names}


def on_its_worker(conn: psycopg.Connection, bank: str, query: str, params: tuple) -> list[tuple]:
    """Run a bank's call; check it was sent whole to the bank's worker, and return its rows."""
    rows, sent = remote_commands(conn, query, params)
    assert {port for _, port in sent} == {worker_port_of(conn, bank)}, sent
    assert len([command for command, _ in sent if "_delegated(" in command]) == 1, sent
    return rows


def correct(conn: psycopg.Connection, bank: str, query: str, params: tuple):
    """A correction's call, checked as on_its_worker; returns its value (the plan, or what an undo did)."""
    return on_its_worker(conn, bank, query, params)[0][0]


def exact(conn: psycopg.Connection, bank: str) -> bool:
    """The kept statistics equal the record: counted here, and by rebuild_stats on the bank's worker."""
    return stats_differences(conn, bank) == EXACT and rebuild_differences(conn, bank) == 0


def operations(conn: psycopg.Connection, bank: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {SCHEMA}.operations WHERE bank_id = %s", (bank,)).fetchone()[0]


def test_merge_dry_run_merge_and_undo_on_each_worker(distributed, two_banks):
    for bank in two_banks:
        ids = team(distributed, bank)
        kim, morgan = ids["Alex Kim"], ids["Alex Morgan"]
        before = snapshot(distributed, bank)
        merge = f"SELECT {SCHEMA}.merge_entities(%s, %s, %s, %s, 'same person')"
        plan = correct(distributed, bank, merge, (bank, [kim], morgan, True))
        assert (plan["dry_run"], plan["operation_id"], plan["mentions_moved"]) == (True, None, 3)
        assert snapshot(distributed, bank) == before and operations(distributed, bank) == 0

        done = correct(distributed, bank, merge, (bank, [kim], morgan, False))
        assert done["operation_id"] is not None and done["mentions_moved"] == 3
        assert distributed.execute(f"SELECT mention_count FROM {SCHEMA}.entities WHERE bank_id = %s AND id = %s",
                                   (bank, morgan)).fetchone()[0] == 5
        assert distributed.execute(f"SELECT {SCHEMA}.current_entity(%s, %s)", (bank, kim)).fetchone()[0] == morgan
        assert distributed.execute(f"SELECT entity_id, decision FROM {SCHEMA}.lookup_mention(%s, 'alex kim')",
                                   (bank,)).fetchone() == (morgan, "alias")
        assert exact(distributed, bank)

        undone = correct(distributed, bank, f"SELECT {SCHEMA}.undo_operation(%s, %s)",
                               (bank, done["operation_id"]))
        assert undone["undone"] is True and undone["entities_restored"] == 1
        assert snapshot(distributed, bank) == before and exact(distributed, bank)


def test_an_undo_gives_back_every_row_of_the_bank(distributed, two_banks):
    # Each correction, then its undo: the bank is as it was, row for row.
    for bank in two_banks:
        ids = team(distributed, bank)
        corrections = [
            ("merge_entities(%s, %s, %s)", (bank, [ids["Alex Kim"]], ids["Alex Morgan"])),
            ("split_entity(%s, %s, %s, 'Acme Labs')", (bank, ids["Acme"], [ids["facts"][2]])),
            ("rename_entity(%s, %s, 'Oslo Office')", (bank, ids["Oslo"])),
            ("add_alias(%s, %s, 'AM')", (bank, ids["Alex Morgan"])),
            ("forget_entity(%s, %s)", (bank, ids["Priya"])),
        ]
        for call, params in corrections:
            before = snapshot(distributed, bank)
            done = correct(distributed, bank, f"SELECT {SCHEMA}.{call}", params)
            assert done["dry_run"] is False and snapshot(distributed, bank) != before, call
            assert exact(distributed, bank), call
            correct(distributed, bank, f"SELECT {SCHEMA}.undo_operation(%s, %s)",
                          (bank, done["operation_id"]))
            assert snapshot(distributed, bank) == before, call
            assert exact(distributed, bank), call


def test_split_and_forget_dry_runs_write_nothing_and_the_corrections_do_what_they_plan(distributed, two_banks):
    for bank in two_banks:
        ids = team(distributed, bank)
        before = snapshot(distributed, bank)
        split = f"SELECT {SCHEMA}.split_entity(%s, %s, %s, 'Acme Labs', %s)"
        forget = f"SELECT {SCHEMA}.forget_entity(%s, %s, %s)"
        planned = correct(distributed, bank, split, (bank, ids["Acme"], [ids["facts"][2]], True))
        assert (planned["mentions_moved"], planned["mentions_staying"], planned["operation_id"]) == (1, 2, None)
        planned_forget = correct(distributed, bank, forget, (bank, ids["Priya"], True))
        assert (planned_forget["mentions"], planned_forget["pairs"]) == (3, 5)
        assert snapshot(distributed, bank) == before and operations(distributed, bank) == 0

        done = correct(distributed, bank, split, (bank, ids["Acme"], [ids["facts"][2]], False))
        assert distributed.execute(
            f"SELECT mention_count, curated FROM {SCHEMA}.entities WHERE bank_id = %s AND id = %s",
            (bank, done["new_entity"]["entity_id"])).fetchone() == (1, True)
        assert exact(distributed, bank)
        correct(distributed, bank, forget, (bank, ids["Priya"], False))
        assert distributed.execute(f"SELECT count(*) FROM {SCHEMA}.mentions WHERE bank_id = %s AND mention = 'Priya'",
                                   (bank,)).fetchone()[0] == 0
        assert exact(distributed, bank)


def test_aliases_resolve_and_their_removal_is_undone(distributed, two_banks):
    for bank in two_banks:
        ids = team(distributed, bank)
        morgan = ids["Alex Morgan"]
        added = correct(distributed, bank, f"SELECT {SCHEMA}.add_alias(%s, %s, 'AM')", (bank, morgan))
        looked = f"SELECT entity_id, decision FROM {SCHEMA}.lookup_mention(%s, 'am')"
        assert distributed.execute(looked, (bank,)).fetchone() == (morgan, "alias")
        with pytest.raises(psycopg.errors.UniqueViolation, match="is already an alias of entity"):
            distributed.execute(f"SELECT {SCHEMA}.add_alias(%s, %s, 'am')", (bank, ids["Acme"]))
        removed = correct(distributed, bank, f"SELECT {SCHEMA}.remove_alias(%s, 'am')", (bank,))
        assert removed["alias"] == "AM" and distributed.execute(looked, (bank,)).fetchone()[1] == "new"
        correct(distributed, bank, f"SELECT {SCHEMA}.undo_operation(%s, %s)", (bank, removed["operation_id"]))
        assert distributed.execute(looked, (bank,)).fetchone() == (morgan, "alias")
        correct(distributed, bank, f"SELECT {SCHEMA}.undo_operation(%s, %s)", (bank, added["operation_id"]))
        assert distributed.execute(looked, (bank,)).fetchone()[1] == "new"
        assert exact(distributed, bank)


def test_operation_history_and_the_order_of_undos(distributed, two_banks):
    for bank in two_banks:
        ids = team(distributed, bank)
        merged = distributed.execute(f"SELECT {SCHEMA}.merge_entities(%s, %s, %s)",
                                     (bank, [ids["Alex Kim"]], ids["Alex Morgan"])).fetchone()[0]["operation_id"]
        renamed = distributed.execute(f"SELECT {SCHEMA}.rename_entity(%s, %s, 'Alex M.', 'typo')",
                                      (bank, ids["Alex Morgan"])).fetchone()[0]["operation_id"]
        history = "SELECT operation_id, kind, reason, blocked_by FROM entity_resolver.operation_history(%s)"
        assert on_its_worker(distributed, bank, history, (bank,))[0] == (renamed, "rename", "typo", [])
        assert distributed.execute(history, (bank,)).fetchall() == [
            (renamed, "rename", "typo", []), (merged, "merge", None, [renamed])]
        with pytest.raises(psycopg.errors.DependentObjectsStillExist, match=f"later operations build on it: {renamed}"):
            distributed.execute(f"SELECT {SCHEMA}.undo_operation(%s, %s)", (bank, merged))
        for operation_id in (renamed, merged):
            distributed.execute(f"SELECT {SCHEMA}.undo_operation(%s, %s)", (bank, operation_id))
        assert [r[3] for r in distributed.execute(history, (bank,))] == [None, None]
        assert distributed.execute(f"SELECT ({SCHEMA}.rebuild_stats(%s, false) ->> 'differences')::int",
                                   (bank,)).fetchone()[0] == 0
        assert exact(distributed, bank)


def test_a_correction_asks_no_other_node(citus, distributed):
    bank = banks_on(distributed, citus.workers[0].port, 1)[0]
    ids = team(distributed, bank)
    merge = distributed.execute(f"SELECT {SCHEMA}.merge_entities(%s, %s, %s, true)",
                                (bank, [ids["Alex Kim"]], ids["Alex Morgan"])).fetchone()[0]
    assert merge["dry_run"]
    calls = [
        (f"SELECT {SCHEMA}.merge_entities(%s, %s, %s)", (bank, [ids["Alex Kim"]], ids["Alex Morgan"])),
        (f"SELECT {SCHEMA}.undo_operation(%s, (SELECT max(id) FROM {SCHEMA}.operations WHERE bank_id = %s))",
         (bank, bank)),
        (f"SELECT {SCHEMA}.split_entity(%s, %s, %s, 'Acme Labs')", (bank, ids["Acme"], [ids["facts"][2]])),
        (f"SELECT {SCHEMA}.forget_entity(%s, %s)", (bank, ids["Priya"])),
        (f"SELECT {SCHEMA}.undo_operation(%s, (SELECT max(id) FROM {SCHEMA}.operations WHERE bank_id = %s))",
         (bank, bank)),
        (f"SELECT * FROM {SCHEMA}.operation_history(%s)", (bank,)),
        (f"SELECT {SCHEMA}.rebuild_stats(%s, false)", (bank,)),
    ]
    # The control: a delegated function that reads every bank asks the other
    # worker, and the check below sees it.
    distributed.execute("CREATE FUNCTION public.count_operations(bank_id text) RETURNS bigint LANGUAGE plpgsql"
                        " AS $$ BEGIN RETURN (SELECT count(*) FROM entity_resolver.operations); END $$")
    distributed.execute("SELECT create_distributed_function('public.count_operations(text)', 'bank_id',"
                        " colocate_with => 'entity_resolver.banks')")
    calls.insert(0, ("SELECT public.count_operations(%s)", (bank,)))
    try:
        with workers_report_remote_commands(citus.workers, distributed.info.dbname):
            for n, (query, params) in enumerate(calls):
                with psycopg.connect(distributed.info.dsn, autocommit=True) as fresh:
                    notices: list[str] = []
                    fresh.add_notice_handler(lambda d: notices.append(
                        f"{d.message_primary} {d.message_detail or ''}"))
                    fresh.execute(query, params)
                # A worker's command to another node is relayed "from" it.
                relayed = [text for text in notices if text.startswith("issuing ") and " from " in text]
                if n == 0:
                    assert any(f"127.0.0.1:{citus.workers[1].port}" in text for text in relayed), notices
                else:
                    assert relayed == [], (query, relayed)
    finally:
        distributed.execute("DROP FUNCTION public.count_operations(text)")
    assert exact(distributed, bank)


@pytest.fixture
def bound_role(distributed) -> Iterator[str]:
    """A login role (not yet bound to any bank); dropped afterwards."""
    role = f"er_curator_{uuid.uuid4().hex[:8]}"
    distributed.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        yield role
    finally:
        distributed.execute(f'DROP OWNED BY "{role}"')
        distributed.execute(f'DROP ROLE "{role}"')


def test_a_curator_corrects_its_bank_on_the_banks_worker(citus, distributed, two_banks, bound_role):
    # grant_curation and revoke_curation change role memberships: they run on
    # the coordinator, which propagates them to every node.
    dbname = distributed.info.dbname
    role = bound_role
    bank, other = two_banks
    ids = team(distributed, bank)
    distributed.execute(f"SELECT {SCHEMA}.grant_bank_access(%s, %s)", (bank, role))
    merge = f"SELECT {SCHEMA}.merge_entities(%s, %s, %s)"
    args = (bank, [ids["Alex Kim"]], ids["Alex Morgan"])

    def member_everywhere() -> set[bool]:
        found = set()
        for node in citus.nodes:
            with psycopg.connect(node.dsn(dbname)) as conn:
                found.add(conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')",
                                       (role, f"{SCHEMA}_curator")).fetchone()[0])
        return found

    with psycopg.connect(distributed.info.dsn, user=role, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"may not correct bank '{bank}'"):
            conn.execute(merge, args)
        distributed.execute(f"SELECT {SCHEMA}.grant_curation(%s, %s)", (bank, role))
        assert member_everywhere() == {True}
        done = conn.execute(merge, args).fetchone()[0]
        assert done["operation_id"] is not None
        assert conn.execute(f"SELECT kind, performed_by FROM {SCHEMA}.operation_history(%s)",
                            (bank,)).fetchone() == ("merge", role)
        assert conn.execute(f"SELECT {SCHEMA}.undo_operation(%s, %s)",
                            (bank, done["operation_id"])).fetchone()[0]["undone"]
        # Curation of one bank is not curation of another.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT {SCHEMA}.rename_entity(%s, %s, 'x')", (other, uuid.uuid4()))
        assert distributed.execute(f"SELECT {SCHEMA}.revoke_curation(%s, %s)", (bank, role)).fetchone()[0] is True
        assert member_everywhere() == {False}
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=f"may not correct bank '{bank}'"):
            conn.execute(merge, args)
    assert exact(distributed, bank)


def test_drop_bank_empties_every_table_of_the_bank_on_its_worker_and_leaves_the_other(distributed, two_banks):
    dropped, kept = two_banks
    for bank in two_banks:
        team(distributed, bank)
    kept_before = snapshot(distributed, kept)
    tables = [r[0] for r in distributed.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
        " WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'p') AND a.attname = 'bank_id'",
        (SCHEMA,))]
    plan = distributed.execute(f"SELECT {SCHEMA}.drop_bank(%s)", (dropped,)).fetchone()[0]
    assert plan["dry_run"] is True
    assert distributed.execute(f"SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = %s", (dropped,)).fetchone()[0]
    distributed.execute(f"SELECT {SCHEMA}.drop_bank(%s, dry_run => false)", (dropped,))
    for table in tables:
        left = distributed.execute(f"SELECT count(*) FROM {SCHEMA}.{table} WHERE bank_id = %s", (dropped,)).fetchone()[0]
        assert left == 0, table
    assert snapshot(distributed, kept) == kept_before


def test_the_review_queue_finds_an_over_merge_on_the_banks_worker_and_a_dismissal_hides_it(distributed, two_banks):
    # Oslo's one fact shares no partner with renewal's two: merged, they are two groups.
    for bank in two_banks:
        ids = team(distributed, bank)
        distributed.execute(f"SELECT {SCHEMA}.merge_entities(%s, %s, %s, false, 'test')",
                            (bank, [ids["Oslo"]], ids["renewal"]))
        queue = f"SELECT item, kind, entity_ids FROM {SCHEMA}.review_queue(%s)"
        rows = on_its_worker(distributed, bank, queue, (bank,))
        over = [r for r in rows if r[1] == "likely_over_merge" and ids["renewal"] in r[2]]
        assert over, rows
        correct(distributed, bank, f"SELECT {SCHEMA}.dismiss_review(%s, %s)", (bank, over[0][0]))
        assert over[0][0] not in {r[0] for r in distributed.execute(queue, (bank,))}
