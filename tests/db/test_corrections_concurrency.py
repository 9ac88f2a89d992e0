"""Corrections next to writers, and any mix of them (docs/corrections.md).

An operator merging and undoing while four sessions insert facts into the same
bank: nobody gets an error (the operator waits for the writers in flight, the
writers wait for the operator), and afterwards every number equals the record.
A property test drives random mixes of inserts, deletes, merges, splits, re-resolutions and
undos and checks after each step that rebuild_stats finds nothing to fix.

ER_PROPERTY_EXAMPLES (default 100) sets the examples of the property."""

from __future__ import annotations

import json
import os
import random
import threading
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from corrections_helpers import ER, call, differences

# Names that never resolve to one another (tests/db/helpers.py NAMES), so the
# writers create a known set of entities and then keep mentioning them.
NAMES = ["Alex Morgan", "Acme", "Renewal", "Kubernetes", "Oslo", "Priya", "Zephyr", "Quarterly Review",
         "Budget", "Helsinki", "Marigold", "Tokyo Office"]
WRITERS = 4


def clean(report):
    return (report["differences"], report["orphans"]) == (0, [])


def beside_writers(conn, connect, bank, pool, step, seconds) -> list[int]:
    """Run ``step(session)`` over and over in an operator's session while
    WRITERS sessions insert facts of three names from ``pool``, for about
    ``seconds``; nobody may get an error, and afterwards every number equals
    the record and every stored mention counts once, wherever it was moved.
    Returns the facts each writer wrote."""
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) SELECT %s, to_jsonb(ARRAY[n]) FROM unnest(%s::text[]) n",
                 (bank, pool))
    stop = threading.Event()
    errors: list[BaseException] = []
    written = [0] * WRITERS

    def writer(n: int) -> None:
        rnd = random.Random(n)
        c = connect()
        try:
            while not stop.is_set():
                c.execute(f"INSERT INTO {ER}.facts (bank_id, content, mentions) VALUES (%s, 'w', %s)",
                          (bank, json.dumps(rnd.sample(pool, 3))))
                written[n] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            stop.set()

    def operator() -> None:
        c = connect()
        try:
            while not stop.is_set():
                step(c)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    threads.append(threading.Thread(target=operator))
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    assert errors == []
    assert min(written) > 0, written
    assert clean(differences(conn, bank))
    total = conn.execute(f"SELECT sum(mention_count) FROM {ER}.entities WHERE bank_id = %s", (bank,)).fetchone()[0]
    facts = conn.execute(f"SELECT sum(jsonb_array_length(mentions)) FROM {ER}.facts WHERE bank_id = %s",
                         (bank,)).fetchone()[0]
    assert total == facts
    return written


@pytest.mark.slow
def test_merges_and_undos_next_to_four_writers_raise_nothing_and_leave_exact_numbers(conn, connect):
    bank = "busy"
    operations = {"merge": 0, "undo": 0}
    rnd = random.Random(99)

    def merge_or_undo(c) -> None:
        ids = [r[0] for r in c.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = %s ORDER BY id", (bank,))]
        if len(ids) < 4:
            # Merges kept so far leave few entities: undo the latest.
            latest = c.execute(f"SELECT max(id) FROM {ER}.operations WHERE bank_id = %s"
                               " AND undone_at IS NULL", (bank,)).fetchone()[0]
            call(c, "undo_operation", bank, latest)
            operations["undo"] += 1
            return
        source, target = rnd.sample(ids, 2)
        op = call(c, "merge_entities", bank, [source], target)["operation_id"]
        operations["merge"] += 1
        if rnd.random() < 0.7:
            call(c, "undo_operation", bank, op)
            operations["undo"] += 1

    beside_writers(conn, connect, bank, NAMES, merge_or_undo, 8)
    assert operations["merge"] > 2 and operations["undo"] > 0, operations


@pytest.mark.slow
def test_reresolve_next_to_four_writers_raises_nothing_and_leaves_exact_numbers(conn, connect):
    bank = "busy-reresolve"
    done = {"dry_run": 0, "applied": 0, "undo": 0}

    def reresolve_and_undo(c) -> None:
        # The facts of the last second: the bank grows, the step stays short.
        since = c.execute("SELECT now() - interval '1 second'").fetchone()[0]
        call(c, "reresolve", bank, None, since)
        done["dry_run"] += 1
        op = call(c, "reresolve", bank, None, since, dry_run=False)["operation_id"]
        done["applied"] += 1
        if op is not None:
            call(c, "undo_operation", bank, op)
            done["undo"] += 1

    beside_writers(conn, connect, bank, NAMES[:6] + ["Alex"], reresolve_and_undo, 6)
    assert done["applied"] > 2, done


@pytest.mark.slow
def test_a_replay_next_to_four_writers_raises_nothing_and_leaves_exact_numbers(conn, connect):
    """The replay forgets and resolves every fact of the bank again (rolled back) under the bank's
    lock, while writers wait for it: none of them errs or deadlocks, and the numbers stay the record's."""
    bank = "busy-replay"
    call(conn, "configure_bank", bank, json.dumps({"reresolve_replay": True}))
    done = {"applied": 0, "undo": 0}

    def replay_and_undo(c) -> None:
        plan = call(c, "reresolve", bank, dry_run=False)
        assert plan["replayed"] is True
        done["applied"] += 1
        if plan["operation_id"] is not None:
            call(c, "undo_operation", bank, plan["operation_id"])
            done["undo"] += 1

    beside_writers(conn, connect, bank, NAMES[:6] + ["Alex"], replay_and_undo, 6)
    assert done["applied"] > 1, done


# -- any mix of writes and corrections -------------------------------------------------

EXAMPLES = int(os.environ.get("ER_PROPERTY_EXAMPLES", "100"))
PROPERTY = settings(max_examples=max(10, EXAMPLES // 4), deadline=None, derandomize=False, print_blob=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

STEP = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.sampled_from(NAMES[:6] + ["Alex", "alex morgan", "Acme Inc"]),
                                          min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("merge"), st.integers(0, 10**6)),
    st.tuples(st.just("split"), st.integers(0, 10**6)),
    st.tuples(st.just("undo"), st.integers(0, 10**6)),
    st.tuples(st.just("reresolve"), st.integers(0, 10**6)),
    # A bare "Alex" months before the others: what later facts say of it is
    # what a re-resolution moves.
    st.tuples(st.just("early"), st.sampled_from(NAMES[:6])),
)

# An undo may be refused, as documented: later operations build on it
# (2BP01), or a name it would give back was taken since (23505).
REFUSED = (psycopg.errors.DependentObjectsStillExist, psycopg.errors.UniqueViolation)


def _pick(rows, n):
    return rows[n % len(rows)] if rows else None


def _apply(conn, bank, step, n_split):
    kind, arg = step
    if kind == "insert":
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) VALUES (%s, %s,"
                     " '2026-03-01'::timestamptz + %s * interval '1 hour')",
                     (bank, json.dumps(arg), len(arg)))
        return
    if kind == "early":
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) VALUES (%s, %s, '2026-01-01')",
                     (bank, json.dumps(["Alex", arg])))
        return
    if kind == "delete":
        fact = _pick(conn.execute(f"SELECT id FROM {ER}.facts WHERE bank_id = %s ORDER BY id", (bank,)).fetchall(), arg)
        if fact:
            conn.execute(f"DELETE FROM {ER}.facts WHERE bank_id = %s AND id = %s", (bank, fact[0]))
            event("deleted")
        return
    entities = conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = %s ORDER BY id", (bank,)).fetchall()
    if kind == "merge" and len(entities) >= 2:
        source = entities[arg % len(entities)][0]
        target = entities[(arg // len(entities) + 1 + arg) % len(entities)][0]
        if source != target:
            call(conn, "merge_entities", bank, [source], target)
            event("merged")
    elif kind == "split":
        splittable = conn.execute(
            f"SELECT entity_id, array_agg(DISTINCT unit_id ORDER BY unit_id) FROM {ER}.unit_entities"
            " WHERE bank_id = %s GROUP BY entity_id HAVING count(*) >= 2 ORDER BY entity_id", (bank,)).fetchall()
        chosen = _pick(splittable, arg)
        if chosen:
            entity, units = chosen
            call(conn, "split_entity", bank, entity, units[: 1 + arg % (len(units) - 1)], f"Split {n_split}")
            event("split")
    elif kind == "reresolve":
        # All of the bank, or the mentions of one entity (arg picks which).
        scope = None if arg % 2 or not entities else [entities[arg % len(entities)][0]]
        moved = call(conn, "reresolve", bank, scope, dry_run=False)["moves"]
        event("reresolved" if moved else "reresolve moved nothing")
    elif kind == "undo":
        op = _pick(conn.execute(f"SELECT id FROM {ER}.operations WHERE bank_id = %s AND undone_at IS NULL"
                                " ORDER BY id", (bank,)).fetchall(), arg)
        if op:
            try:
                with conn.transaction():
                    call(conn, "undo_operation", bank, op[0])
                event("undone")
            except REFUSED as refusal:
                event(f"undo refused ({refusal.sqlstate})")


SEED = [["Alex Morgan", "Acme", "Oslo"], ["Alex", "Acme", "Renewal"], ["Priya", "Oslo"], ["Acme Inc", "Priya"]]


@PROPERTY
@given(steps=st.lists(STEP, min_size=3, max_size=18), replay=st.booleans())
def test_after_any_mix_of_writes_and_corrections_the_numbers_equal_the_record(conn, steps, replay):
    bank = f"mix-{uuid.uuid4().hex[:8]}"
    # A whole-bank reresolve replays the bank first, or not (the bank setting reresolve_replay).
    call(conn, "configure_bank", bank, json.dumps({"reresolve_replay": replay}))
    for mentions in SEED:
        _apply(conn, bank, ("insert", mentions), 0)
    for n, step in enumerate(steps):
        _apply(conn, bank, step, n)
        report = differences(conn, bank)
        assert clean(report), (step, report)
