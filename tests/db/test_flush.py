"""Durable statistics: the queue, flush_stats and the flush at commit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from helpers import insert_facts, make_bank, nested_plans, plan_nodes


def queue(conn, bank_id, entity_id, entity_id_2=None, increment=1, event_date=None):
    conn.execute(
        "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, entity_id_2, increment, event_date)"
        " VALUES (%s, %s, %s, %s, %s)",
        (bank_id, entity_id, entity_id_2, increment, event_date),
    )


def queued(conn):
    return conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0]


def count_of(conn, entity_id):
    return conn.execute(
        "SELECT mention_count FROM entity_resolver.entities WHERE id = %s", (entity_id,)).fetchone()[0]


def pair_of(conn, a, b):
    a, b = sorted([a, b])
    return conn.execute(
        "SELECT cooccurrence_count, last_cooccurred::date::text FROM entity_resolver.entity_cooccurrences"
        " WHERE entity_id_1 = %s AND entity_id_2 = %s", (a, b)).fetchone()


@pytest.fixture
def manual(conn):
    """The test's session with the flush at commit switched off."""
    conn.execute("SET entity_resolver.flush_at_commit = off")
    return conn


# -- flush at commit -----------------------------------------------------------

def test_statistics_are_applied_when_the_writing_transaction_commits(conn, connect):
    ent = make_bank(conn, "team", ["Acme"])
    other = connect()
    with conn.transaction():
        queue(conn, "team", ent["Acme"], increment=3)
        assert count_of(conn, ent["Acme"]) == 0          # deferred to commit
    assert count_of(other, ent["Acme"]) == 3
    assert queued(other) == 0


def test_flush_at_commit_off_leaves_the_rows_for_flush_stats(manual):
    ent = make_bank(manual, "team", ["Acme"])
    queue(manual, "team", ent["Acme"], increment=2)
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (0, 1)
    manual.execute("SELECT entity_resolver.flush_stats()")
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (2, 0)


def test_commit_flush_applies_only_its_own_transaction_rows(conn, connect):
    ent = make_bank(conn, "team", ["Acme"])
    loader = connect()
    loader.execute("SET entity_resolver.flush_at_commit = off")
    queue(loader, "team", ent["Acme"], increment=10)
    queue(conn, "team", ent["Acme"], increment=1)
    assert count_of(conn, ent["Acme"]) == 1       # the loader's backlog is not this writer's to pay
    assert queued(conn) == 1


def test_one_flush_per_transaction_however_many_rows_it_queues(conn):
    ent = make_bank(conn, "team", ["Acme", "Oslo"])
    with conn.transaction():
        for _ in range(3):
            conn.execute(
                "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, increment)"
                " SELECT 'team', %s, 1 FROM generate_series(1, 200)", (ent["Acme"],))
        conn.execute("SET CONSTRAINTS entity_resolver.stats_queue_flush_at_commit IMMEDIATE")
        fired = conn.execute(
            "SELECT pg_stat_get_xact_function_calls('entity_resolver_internal._flush_at_commit'::regproc)").fetchone()[0]
        conn.execute("SET CONSTRAINTS entity_resolver.stats_queue_flush_at_commit DEFERRED")
    assert fired == 1
    assert count_of(conn, ent["Acme"]) == 600


def test_rows_queued_after_an_early_flush_are_flushed_at_commit(conn):
    ent = make_bank(conn, "team", ["Acme"])
    with conn.transaction():
        queue(conn, "team", ent["Acme"])
        conn.execute("SET CONSTRAINTS entity_resolver.stats_queue_flush_at_commit IMMEDIATE")
        conn.execute("SET CONSTRAINTS entity_resolver.stats_queue_flush_at_commit DEFERRED")
        queue(conn, "team", ent["Acme"])
    assert (count_of(conn, ent["Acme"]), queued(conn)) == (2, 0)


def test_rows_queued_after_a_rolled_back_savepoint_are_flushed_at_commit(conn):
    ent = make_bank(conn, "team", ["Acme"])
    with conn.transaction():
        with pytest.raises(psycopg.errors.RaiseException):
            with conn.transaction():
                queue(conn, "team", ent["Acme"], increment=5)
                conn.execute("DO $$ BEGIN RAISE EXCEPTION 'undo'; END $$")
        queue(conn, "team", ent["Acme"], increment=2)
    assert (count_of(conn, ent["Acme"]), queued(conn)) == (2, 0)


def test_repeatable_read_writer_leaves_its_statistics_queued(conn):
    ent = make_bank(conn, "team", ["Acme"])
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    with conn.transaction():
        queue(conn, "team", ent["Acme"], increment=4)
    conn.isolation_level = None
    assert (count_of(conn, ent["Acme"]), queued(conn)) == (0, 1)
    assert any("stay queued until flush_stats()" in n for n in notices)


def test_an_invalid_flush_at_commit_setting_is_an_error_naming_it(conn):
    ent = make_bank(conn, "team", ["Acme"])
    conn.execute("SET entity_resolver.flush_at_commit = 'sometimes'")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_resolver.flush_at_commit"):
        queue(conn, "team", ent["Acme"])
    assert queued(conn) == 0


# -- flush_stats -----------------------------------------------------------------

def test_flush_stats_aggregates_per_entity_and_per_pair(manual):
    ent = make_bank(manual, "team", ["Acme", "Oslo"])
    a, o = sorted(ent.values())
    for inc in (1, 2, 3):
        queue(manual, "team", ent["Acme"], increment=inc, event_date=f"2024-01-0{inc}")
    queue(manual, "team", ent["Oslo"])
    queue(manual, "team", a, o, increment=2, event_date="2024-02-01")
    queue(manual, "team", a, o, increment=1, event_date="2024-01-15")
    assert manual.execute("SELECT * FROM entity_resolver.flush_stats()").fetchone() == (2, 1)
    assert (count_of(manual, ent["Acme"]), count_of(manual, ent["Oslo"])) == (6, 1)
    assert pair_of(manual, a, o) == (3, "2024-02-01")
    assert manual.execute(
        "SELECT last_seen::date::text FROM entity_resolver.entities WHERE id = %s",
        (ent["Acme"],)).fetchone()[0] == "2024-01-03"


def test_flush_keeps_the_later_of_stored_and_queued_dates(manual):
    ent = make_bank(manual, "team", ["Acme", "Oslo"])
    a, o = sorted(ent.values())
    manual.execute("UPDATE entity_resolver.entities SET last_seen = '2024-09-09'")
    queue(manual, "team", ent["Acme"], event_date="2024-01-01")
    queue(manual, "team", a, o, event_date="2024-09-09")
    manual.execute("SELECT entity_resolver.flush_stats()")
    queue(manual, "team", a, o, event_date="2024-01-01")
    manual.execute("SELECT entity_resolver.flush_stats()")
    assert manual.execute(
        "SELECT last_seen::date::text FROM entity_resolver.entities WHERE id = %s",
        (ent["Acme"],)).fetchone()[0] == "2024-09-09"
    assert pair_of(manual, a, o) == (2, "2024-09-09")


def test_flush_stats_of_one_bank_leaves_other_banks_queued(manual):
    team = make_bank(manual, "team", ["Acme"])
    other = make_bank(manual, "other", ["Acme"])
    queue(manual, "team", team["Acme"])
    queue(manual, "other", other["Acme"])
    assert manual.execute("SELECT * FROM entity_resolver.flush_stats('team')").fetchone() == (1, 0)
    assert (count_of(manual, team["Acme"]), count_of(manual, other["Acme"]), queued(manual)) == (1, 0, 1)


def test_flush_of_an_empty_queue_updates_nothing(conn):
    assert conn.execute("SELECT * FROM entity_resolver.flush_stats()").fetchone() == (0, 0)


def test_rolled_back_flush_leaves_the_rows_queued(manual):
    ent = make_bank(manual, "team", ["Acme"])
    queue(manual, "team", ent["Acme"], increment=7)
    with pytest.raises(psycopg.errors.RaiseException):
        with manual.transaction():
            manual.execute("SELECT entity_resolver.flush_stats()")
            manual.execute("DO $$ BEGIN RAISE EXCEPTION 'crash'; END $$")
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (0, 1)
    manual.execute("SELECT entity_resolver.flush_stats()")
    assert count_of(manual, ent["Acme"]) == 7


def test_queued_pair_of_a_deleted_entity_is_dropped(manual):
    ent = make_bank(manual, "team", ["Acme", "Oslo", "Wren"])
    queue(manual, "team", *sorted([ent["Acme"], ent["Oslo"]]))
    queue(manual, "team", *sorted([ent["Acme"], ent["Wren"]]))
    manual.execute("DELETE FROM entity_resolver.entities WHERE id = %s", (ent["Wren"],))
    assert manual.execute("SELECT * FROM entity_resolver.flush_stats()").fetchone() == (0, 1)
    assert queued(manual) == 0


def test_flush_stats_rejects_an_empty_bank_id(conn):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="^bank_id:"):
        conn.execute("SELECT entity_resolver.flush_stats('')")


# -- the bound: entity_resolver.flush_batch_rows -----------------------------------

def test_flush_stats_applies_at_most_flush_batch_rows_and_leaves_the_rest_queued(manual):
    ent = make_bank(manual, "team", ["Acme", "Oslo"])
    for n in range(5):
        queue(manual, "team", ent["Acme"], increment=1)
        queue(manual, "team", ent["Oslo"], increment=10)
    manual.execute("SET entity_resolver.flush_batch_rows = 3")
    manual.execute("SELECT entity_resolver.flush_stats()")
    # Oldest first: Acme, Oslo, Acme.
    assert (count_of(manual, ent["Acme"]), count_of(manual, ent["Oslo"]), queued(manual)) == (2, 10, 7)
    # Repeated flushes drain the queue, every row applied exactly once.
    flushes = 1
    while queued(manual):
        manual.execute("SELECT entity_resolver.flush_stats()")
        flushes += 1
    assert flushes == 4
    assert (count_of(manual, ent["Acme"]), count_of(manual, ent["Oslo"])) == (5, 50)


def test_the_bound_holds_for_one_call_over_every_bank(manual):
    a = make_bank(manual, "a", ["Acme"])
    b = make_bank(manual, "b", ["Oslo"])
    for _ in range(3):
        queue(manual, "a", a["Acme"])
        queue(manual, "b", b["Oslo"])
    manual.execute("SET entity_resolver.flush_batch_rows = 4")
    manual.execute("SELECT entity_resolver.flush_stats()")
    # Bank a first (banks in order), then what is left of the budget for b.
    assert (count_of(manual, a["Acme"]), count_of(manual, b["Oslo"]), queued(manual)) == (3, 1, 2)
    manual.execute("SELECT entity_resolver.flush_stats('b')")
    assert (count_of(manual, b["Oslo"]), queued(manual)) == (3, 0)


def test_two_bounded_flushes_in_one_transaction_each_have_the_bound(manual):
    ent = make_bank(manual, "team", ["Acme"])
    for _ in range(5):
        queue(manual, "team", ent["Acme"])
    manual.execute("SET entity_resolver.flush_batch_rows = 2")
    with manual.transaction():
        manual.execute("SELECT entity_resolver.flush_stats()")
        manual.execute("SELECT entity_resolver.flush_stats()")
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (4, 1)


def test_flush_batch_rows_zero_means_no_bound_and_the_default_bounds(manual):
    ent = make_bank(manual, "team", ["Acme"])
    manual.execute(
        "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, increment)"
        " SELECT 'team', %s, 1 FROM generate_series(1, 5001)", (ent["Acme"],))
    manual.execute("SELECT entity_resolver.flush_stats()")
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (5000, 1)     # the default, 5000
    manual.execute(
        "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, increment)"
        " SELECT 'team', %s, 1 FROM generate_series(1, 6000)", (ent["Acme"],))
    manual.execute("SET entity_resolver.flush_batch_rows = 0")
    manual.execute("SELECT entity_resolver.flush_stats()")
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (11001, 0)


def test_the_commit_flush_applies_all_its_own_rows_whatever_the_bound(conn, connect):
    ent = make_bank(conn, "team", ["Acme"])
    conn.execute("SET entity_resolver.flush_batch_rows = 1")
    with conn.transaction():
        for _ in range(4):
            queue(conn, "team", ent["Acme"])
    assert (count_of(connect(), ent["Acme"]), queued(conn)) == (4, 0)


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_an_invalid_flush_batch_rows_is_an_error_naming_it(manual, value):
    ent = make_bank(manual, "team", ["Acme"])
    queue(manual, "team", ent["Acme"])
    manual.execute("SELECT set_config('entity_resolver.flush_batch_rows', %s, false)", (value,))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_resolver.flush_batch_rows"):
        manual.execute("SELECT entity_resolver.flush_stats()")


def test_the_documented_drain_loop_applies_the_backlog_in_bounded_transactions(manual):
    # docs/write-path.md's DO block, run as written (outside a transaction).
    page = (Path(__file__).resolve().parents[2] / "docs" / "write-path.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```sql\n(.*?)```", page, re.S) if "flush_batch_rows = 20000" in b)
    loop = block[block.index("DO $$"):]
    ent = make_bank(manual, "team", ["Acme"])
    manual.execute(
        "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, increment)"
        " SELECT 'team', %s, 1 FROM generate_series(1, 7)", (ent["Acme"],))
    manual.execute("SET entity_resolver.flush_batch_rows = 2")
    manual.execute(loop)
    assert (count_of(manual, ent["Acme"]), queued(manual)) == (7, 0)


def test_the_pairs_of_a_bank_the_statistics_do_not_know_find_their_entities_by_key(manual):
    # The statistics know one bank of 3,000 entities; a bank made since is estimated at an entity or so.
    # Each end of its pairs is looked up by its key all the same: read through another index of the
    # bank, filtered per pair, one fact of 1,000 names took 88-250 s at commit instead of 11.
    manual.execute("INSERT INTO entity_resolver.banks (bank_id) VALUES ('known')")
    manual.execute("INSERT INTO entity_resolver.entities (bank_id, canonical_name, last_seen)"
                   " SELECT 'known', 'known ' || g, now() FROM generate_series(1, 3000) AS g")
    manual.execute("ANALYZE entity_resolver.entities")
    ids = insert_facts(manual, "fresh", [[f"fresh {i}" for i in range(40)]])
    plans = nested_plans(manual)
    assert manual.execute("SELECT * FROM entity_resolver.flush_stats('fresh')").fetchone() == (40, 780)
    # The pairs' statement and what it asks (the flush's entity updates read the bank's entities once).
    pairs = [p for q, p in plans() if "INSERT INTO entity_cooccurrences" in q or "_missing_entities" in q]
    reads = [n for p in pairs for n in plan_nodes(p) if n.get("Relation Name") == "entities"]
    assert reads and ids
    for node in reads:
        assert re.search(r"(?<!\w)id = ", node.get("Index Cond", "")), json.dumps(node)
