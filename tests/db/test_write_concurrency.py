"""The write path under concurrency and failure: many writers, many flushers,
a killed backend, a crashed server. Each test runs for a few seconds."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import psycopg
import pytest
from helpers import (
    NAMES, expected_from_facts, insert_facts, make_bank, mention_counts, pair_counts, run_for, uid,
)


def spellings(name: str) -> list[str]:
    return [name, name.upper(), name.lower()]


def random_facts(rng: random.Random, literal: bool = False) -> list[list]:
    """1 to 4 facts of 2 to 4 names drawn from a small pool (heavy overlap)."""
    facts = []
    for _ in range(rng.randint(1, 4)):
        names = [rng.choice(spellings(rng.choice(NAMES))) for _ in range(rng.randint(2, 4))]
        facts.append([{"text": n, "resolve": False} for n in names] if literal else names)
    return facts


def test_concurrent_writers_create_one_entity_per_name_with_exact_counts(conn, connect):
    sessions = [connect() for _ in range(8)]

    def writer(session, seed):
        rng = random.Random(seed)

        def run(stop):
            while not stop.is_set():
                insert_facts(session, "team", random_facts(rng))
        return run

    errors = run_for(3.0, [writer(s, n) for n, s in enumerate(sessions)])
    assert errors == []                                    # no deadlock, no unique violation
    per_name = conn.execute(
        "SELECT lower(canonical_name), count(*) FROM entity_resolver.entities"
        " WHERE bank_id = 'team' GROUP BY 1").fetchall()
    assert sorted(per_name) == sorted((n.lower(), 1) for n in NAMES)
    mentions, pairs = expected_from_facts(conn, "team")
    assert sum(mentions.values()) > 500                    # the load was real
    assert mention_counts(conn, "team") == mentions
    assert pair_counts(conn, "team") == pairs
    assert conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0] == 0


def test_concurrent_flushers_apply_every_queued_row_exactly_once(conn, connect):
    ent = make_bank(conn, "team", NAMES)
    ids = sorted(ent.values())
    applied: list[Counter] = []
    lock = threading.Lock()

    def writer(seed):
        session = connect()
        session.execute("SET entity_resolver.flush_at_commit = off")
        rng = random.Random(seed)

        def run(stop):
            mine: Counter = Counter()
            while not stop.is_set():
                rows = []
                for _ in range(20):
                    a, b = rng.sample(ids, 2)
                    key = (a, None) if rng.random() < 0.5 else (min(a, b), max(a, b))
                    inc = rng.randint(1, 3)
                    rows.append((*key, inc))
                # Unsorted on purpose: the flush must sort, not the writers.
                session.execute(
                    "INSERT INTO entity_resolver.stats_queue (bank_id, entity_id, entity_id_2, increment)"
                    " SELECT 'team', r.a, r.b, r.n FROM unnest(%s::uuid[], %s::uuid[], %s::int[]) AS r (a, b, n)",
                    ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
                for a, b, n in rows:                           # committed: autocommit
                    mine[(a, b)] += n
            with lock:
                applied.append(mine)
        return run

    def flusher(stop):
        session = connect()
        while not stop.is_set():
            session.execute("SELECT entity_resolver.flush_stats('team')")

    errors = run_for(2.5, [writer(n) for n in range(4)] + [flusher for _ in range(6)])
    assert errors == []
    # A call applies at most flush_batch_rows queue rows: drain what the
    # flushers left, as an operator would, until nothing is queued.
    for _ in range(1000):
        if conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0] == 0:
            break
        conn.execute("SELECT entity_resolver.flush_stats()")
    expected = sum(applied, Counter())
    got = Counter()
    for entity_id, n in conn.execute(
            "SELECT id::text, mention_count FROM entity_resolver.entities WHERE mention_count > 0"):
        got[(entity_id, None)] = n
    for a, b, n in conn.execute(
            "SELECT entity_id_1::text, entity_id_2::text, cooccurrence_count FROM entity_resolver.entity_cooccurrences"):
        got[(a, b)] = n
    assert got == expected


def test_backend_terminated_mid_statement_leaves_nothing_half_done(conn, connect):
    ent = make_bank(conn, "team", ["Acme"])
    victim, blocker = connect(), connect(autocommit=False)
    fact_id = uid(42)
    # The blocker links the victim's future fact id and keeps its transaction
    # open: the victim resolves everything, then waits on that link.
    blocker.execute("SELECT entity_resolver.link_unit('team', %s, %s::uuid[])", (fact_id, [ent["Acme"]]))
    pid = victim.info.backend_pid

    def insert():
        victim.execute(
            "INSERT INTO entity_resolver.facts (bank_id, id, mentions) VALUES"
            " ('team', %s, '[\"Acme\", \"Zephyr\", \"Oslo\"]'), ('team', %s, '[\"Wren\", \"Oslo\"]')",
            (fact_id, uid(43)))

    failure: list[BaseException] = []
    thread = threading.Thread(target=lambda: failure.append(pytest.raises(psycopg.Error, insert).value))
    thread.start()
    deadline = time.monotonic() + 10
    while conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                       (pid,)).fetchone()[0] != "Lock":
        assert time.monotonic() < deadline, "the victim never reached the blocked link"
        time.sleep(0.02)
    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    thread.join(10)
    blocker.rollback()
    assert failure and isinstance(failure[0], psycopg.OperationalError)
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM entity_resolver.unit_entities").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM entity_resolver.stats_queue").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM entity_resolver.entity_cooccurrences").fetchone()[0] == 0
    assert conn.execute(
        "SELECT canonical_name, mention_count FROM entity_resolver.entities").fetchall() == [("Acme", 0)]


@pytest.mark.slow
def test_immediate_shutdown_during_load_keeps_counts_consistent_with_committed_facts(conn, pg_cluster):
    info = conn.info
    dsn = dict(host=info.host, port=info.port, user=info.user, dbname=info.dbname)

    def writer(seed, flush_at_commit):
        rng = random.Random(seed)

        def run(stop):
            with psycopg.connect(**dsn, autocommit=True) as session:
                session.execute("SELECT set_config('entity_resolver.flush_at_commit', %s, false)",
                                (flush_at_commit,))
                try:
                    while not stop.is_set():
                        insert_facts(session, "team", random_facts(rng, literal=True))
                except psycopg.OperationalError:
                    pass                                      # the server went away
        return run

    def flusher(stop):
        with psycopg.connect(**dsn, autocommit=True) as session:
            try:
                while not stop.is_set():
                    session.execute("SELECT entity_resolver.flush_stats()")
                    time.sleep(0.05)
            except psycopg.OperationalError:
                pass

    # Half the writers flush at commit, half leave their statistics queued
    # for a flusher: the crash hits both the applied and the queued kind.
    workers = [writer(n, "on" if n % 2 else "off") for n in range(6)] + [flusher]
    stopper = threading.Timer(1.5, pg_cluster.stop, args=("immediate",))
    stopper.start()
    try:
        errors = run_for(2.5, workers)
    finally:
        stopper.join()
        pg_cluster.start()
    assert errors == []
    with psycopg.connect(**dsn, autocommit=True) as after:
        mentions, pairs = expected_from_facts(after, "team")
        assert sum(mentions.values()) > 0
        after.execute("SET entity_resolver.flush_batch_rows = 0")  # the whole backlog in one call
        after.execute("SELECT entity_resolver.flush_stats()")
        assert mention_counts(after, "team") == mentions
        assert pair_counts(after, "team") == pairs
        linked = after.execute(
            "SELECT count(*) FROM entity_resolver.unit_entities ue"
            " LEFT JOIN entity_resolver.facts f ON f.bank_id = ue.bank_id AND f.id = ue.unit_id"
            " WHERE f.id IS NULL").fetchone()[0]
        assert linked == 0


@pytest.mark.parametrize("run", range(10))
def test_transactions_of_several_fact_inserts_never_deadlock(conn, connect, run):
    # Issue 10's pattern: eight writers whose transactions insert 1 to 4
    # facts as separate INSERT statements, over 16 names in varying case.
    # Sorting inside one statement cannot order names across the statements
    # of a transaction; the bank's creation lock does (plpython/locks.py).
    sessions = [connect(autocommit=False) for _ in range(8)]

    def writer(session, seed):
        rng = random.Random(seed)

        def go(stop):
            while not stop.is_set():
                for fact in random_facts(rng):
                    insert_facts(session, "team", [fact])
                session.commit()
        return go

    errors = run_for(1.5, [writer(s, run * 100 + n) for n, s in enumerate(sessions)])
    for s in sessions:
        s.rollback()
    assert errors == []
    mentions, pairs = expected_from_facts(conn, "team")
    assert sum(mentions.values()) > 50                     # the load was real
    assert mention_counts(conn, "team") == mentions
    assert pair_counts(conn, "team") == pairs
    assert conn.execute("SELECT entity_resolver.rebuild_stats('team') ->> 'differences'").fetchone()[0] == "0"
