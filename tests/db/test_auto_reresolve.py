"""Automatic re-resolution (docs/corrections.md, "Re-resolution on a schedule"): a bank with
auto_reresolve on queues each unit it writes; reresolve_queued decides again the facts that
share an entity with the oldest queued units, as reresolve does: a dry run by default, applied
as one ledgered operation that undo_operation reverses, taking the units off the queue."""

from __future__ import annotations

import json
import os
import threading
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from corrections_helpers import (ER, call, differences, entity_id, insert_fact, mention_of, operations_count,
                                 snapshot)


def queued(conn, bank):
    return [r[0] for r in conn.execute(f"SELECT unit_id::text FROM {ER}.reresolve_queue WHERE bank_id = %s"
                                       " ORDER BY queued_at, unit_id", (bank,)).fetchall()]


def mention_entity(conn, bank, unit, ordinal=1):
    return mention_of(conn, bank, unit, ordinal)[0]


def story(conn, bank="auto"):
    """The bare "Alex" next to React in January, Alex Kim on React in March (tests/db/test_reresolve.py)."""
    call(conn, "configure_bank", bank, json.dumps({"auto_reresolve": True}))
    return {"f1": insert_fact(conn, bank, ["Alex", "React"], "2026-01-01T09:00:00Z", fact_id="f1"),
            "f2": insert_fact(conn, bank, ["Alex Kim", "React", "Sprint 14"], "2026-03-01T09:00:00Z", fact_id="f2"),
            "f3": insert_fact(conn, bank, ["Alex Kim", "React", "Priya"], "2026-03-02T09:00:00Z", fact_id="f3")}


def test_off_by_default_nothing_is_queued(conn):
    insert_fact(conn, "quiet", ["Alex", "React"])
    assert queued(conn, "quiet") == []
    plan = call(conn, "reresolve_queued", "quiet", dry_run=False)
    assert plan["queued_taken"] == 0 and plan["facts"] == 0 and plan["operation_id"] is None


def test_each_fact_written_is_queued_once_in_order(conn):
    units = story(conn)
    assert queued(conn, "auto") == [units["f1"], units["f2"], units["f3"]]
    call(conn, "configure_bank", "auto", json.dumps({"auto_reresolve": False}))
    insert_fact(conn, "auto", ["Priya"])
    assert len(queued(conn, "auto")) == 3


def test_the_queued_neighbourhood_is_decided_again_and_taken_off_the_queue(conn):
    units = story(conn)
    assert mention_entity(conn, "auto", units["f1"]) == "Alex"
    before = snapshot(conn, "auto")
    dry = call(conn, "reresolve_queued", "auto")
    assert dry["dry_run"] is True and dry["queued_taken"] == 3 and dry["queued_left"] == 0
    assert [m["mention"] for m in dry["moves"]] == ["Alex"]
    assert snapshot(conn, "auto") == before and len(queued(conn, "auto")) == 3

    plan = call(conn, "reresolve_queued", "auto", dry_run=False)
    assert plan["moves"] == dry["moves"] and plan["operation_id"] is not None
    assert plan["scope"]["queued_units"] == [units["f1"], units["f2"], units["f3"]]
    assert mention_entity(conn, "auto", units["f1"]) == "Alex Kim"
    assert queued(conn, "auto") == []
    assert differences(conn, "auto")["differences"] == 0
    [(kind, reason)] = conn.execute(f"SELECT kind, reason FROM {ER}.operations WHERE bank_id = 'auto'").fetchall()
    assert kind == "reresolve" and reason == "reresolve_queued: 3 queued unit(s)"
    # Undone, the bank is as it was (the queue is work, not identity: it stays empty).
    call(conn, "undo_operation", "auto", plan["operation_id"])
    assert snapshot(conn, "auto") == before and queued(conn, "auto") == []


def test_a_later_fact_reaches_an_earlier_one_through_a_shared_entity_only(conn):
    # Only the March fact is queued: its neighbourhood (facts naming React or
    # Alex Kim) holds the January "Alex", which moves; the unrelated fact is
    # not decided.
    call(conn, "configure_bank", "late", json.dumps({"auto_reresolve": False}))
    f1 = insert_fact(conn, "late", ["Alex", "React"], "2026-01-01T09:00:00Z")
    other = insert_fact(conn, "late", ["Bea", "Oslo"], "2026-01-02T09:00:00Z")
    insert_fact(conn, "late", ["Alex Kim", "React", "Sprint 14"], "2026-03-01T09:00:00Z")
    call(conn, "configure_bank", "late", json.dumps({"auto_reresolve": True}))
    f3 = insert_fact(conn, "late", ["Alex Kim", "React", "Priya"], "2026-03-02T09:00:00Z")
    assert queued(conn, "late") == [f3]
    plan = call(conn, "reresolve_queued", "late", 1, dry_run=False)
    assert plan["facts"] == 3 and plan["scope"]["neighbourhood_units"] == 3
    assert [m["unit_id"] for m in plan["moves"]] == [f1]
    assert other not in {m["unit_id"] for m in plan["moves"]}
    assert mention_entity(conn, "late", f1) == "Alex Kim"


def test_max_facts_takes_the_oldest_first(conn):
    units = story(conn)
    plan = call(conn, "reresolve_queued", "auto", 2, dry_run=False)
    assert plan["queued_taken"] == 2 and plan["queued_left"] == 1
    assert plan["scope"]["queued_units"] == [units["f1"], units["f2"]]
    assert queued(conn, "auto") == [units["f3"]]


def test_a_forgotten_fact_leaves_the_queue(conn):
    units = story(conn)
    conn.execute(f"DELETE FROM {ER}.facts WHERE bank_id = 'auto' AND fact_id = 'f2'")
    assert queued(conn, "auto") == [units["f1"], units["f3"]]


@pytest.mark.parametrize("args, error, message", [
    ((None,), psycopg.errors.NullValueNotAllowed, "^bank_id: must not be null"),
    (("nobank",), psycopg.errors.UndefinedObject, "^bank_id: bank 'nobank' does not exist"),
    (("auto", 0), psycopg.errors.InvalidParameterValue, "^max_facts: must be between 1 and 10000, got 0"),
    (("auto", None), psycopg.errors.InvalidParameterValue, "^max_facts: must be between 1 and 10000, got NULL"),
    (("auto", 5, None), psycopg.errors.NullValueNotAllowed, "^dry_run: must not be null"),
])
def test_bad_arguments_are_refused_and_change_nothing(conn, args, error, message):
    story(conn)
    before, waiting = snapshot(conn, "auto"), queued(conn, "auto")
    with pytest.raises(error, match=message):
        call(conn, "reresolve_queued", *args)
    assert snapshot(conn, "auto") == before and queued(conn, "auto") == waiting
    assert operations_count(conn, "auto") == 0


def test_writers_during_reresolve_queued_lose_nothing(conn, connect_as):
    # Writers keep inserting facts while the queue is processed: both finish
    # (the bank's lock orders them, no deadlock), every fact is recorded, and
    # the numbers equal the record.
    story(conn)
    user = conn.info.user
    errors = []

    def writer(n):
        try:
            w = connect_as(user)
            for k in range(5):
                insert_fact(w, "auto", ["Alex Kim", "React", f"Topic {n}-{k}"], "2026-03-03T09:00:00Z")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for _ in range(3):
        call(conn, "reresolve_queued", "auto", 5, dry_run=False)
    for t in threads:
        t.join()
    assert errors == []
    assert conn.execute(f"SELECT count(*) FROM {ER}.facts WHERE bank_id = 'auto'").fetchone()[0] == 13
    call(conn, "reresolve_queued", "auto", 100, dry_run=False)
    assert queued(conn, "auto") == []
    assert differences(conn, "auto")["differences"] == 0
    assert entity_id(conn, "auto", "Alex Kim")


def test_the_client_and_the_cli(conn):
    from typer.testing import CliRunner

    from entity_resolver.cli import app
    from entity_resolver.client import Client

    units = story(conn)
    i = conn.info
    dsn = f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"
    with Client(dsn) as er:
        assert er.reresolve_queued("auto", 2)["queued_taken"] == 2
    env = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "300"}

    def cli(*args):
        return CliRunner().invoke(app, [*args, "--dsn", dsn], env=env, catch_exceptions=False)

    dry = cli("reresolve", "auto", "--queued", "10")
    assert dry.exit_code == 0, dry.output
    assert "dry run" in dry.stdout and "Alex Kim" in dry.stdout and "--queued 10 --apply" in dry.stderr
    refused = cli("reresolve", "auto", "--queued", "10", "--since", "2026-01-01")
    assert refused.exit_code != 0 and "--queued" in refused.output
    applied = json.loads(cli("reresolve", "auto", "--queued", "10", "--apply", "--json").stdout)
    assert applied["dry_run"] is False and applied["queued_taken"] == 3
    assert mention_entity(conn, "auto", units["f1"]) == "Alex Kim" and queued(conn, "auto") == []


# -- any bank ---------------------------------------------------------------------------

EXAMPLES = int(os.environ.get("ER_PROPERTY_EXAMPLES", "100"))
POOL = ["Alex", "Alex Kim", "Alex Morgan", "Acme", "React", "Priya", "Sprint 14"]
FACTS = st.lists(st.tuples(st.integers(0, 90), st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True),
                           st.booleans()),
                 min_size=2, max_size=8)


@settings(max_examples=max(10, EXAMPLES // 5), deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(facts=FACTS, per_call=st.integers(1, 4))
def test_on_any_bank_the_queue_drains_with_rebuild_equal_to_maintained_and_undo_exact(conn, facts, per_call):
    # Facts arrive with the setting on or off (each fact's flag); the queue
    # holds exactly the ones written while it was on, in order. Each call's dry
    # run is its apply; after each apply the numbers equal the record; undoing
    # the last one restores the bank before it.
    bank = f"any-{uuid.uuid4().hex[:8]}"
    expected = []
    for days, mentions, on in facts:
        call(conn, "configure_bank", bank, json.dumps({"auto_reresolve": on}))
        unit = conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date)"
                            " VALUES (%s, %s, '2026-01-01'::timestamptz + %s * interval '1 day') RETURNING id",
                            (bank, json.dumps(mentions), days)).fetchone()[0]
        if on:
            expected.append(str(unit))
    assert sorted(queued(conn, bank)) == sorted(expected)
    made = []   # (operation id, the bank before the call that made it)
    while True:
        before, waiting = snapshot(conn, bank), queued(conn, bank)
        dry = call(conn, "reresolve_queued", bank, per_call)
        assert snapshot(conn, bank) == before and queued(conn, bank) == waiting
        applied = call(conn, "reresolve_queued", bank, per_call, dry_run=False)
        assert applied["moves"] == dry["moves"] and applied["queued_taken"] == dry["queued_taken"]
        assert queued(conn, bank) == waiting[applied["queued_taken"]:]
        report = differences(conn, bank)
        assert (report["differences"], report["orphans"]) == (0, []), report
        if applied["operation_id"] is not None:
            made.append((applied["operation_id"], before))
        if applied["queued_taken"] == 0:
            break
    if not made:
        event("nothing moved")
        return
    event("moved")
    # The calls after the last that moved anything changed the queue only:
    # undoing it gives the bank as it was before that call.
    op, before = made[-1]
    call(conn, "undo_operation", bank, op)
    assert snapshot(conn, bank) == before
