"""Faults: a client that dies mid-transaction or mid-statement, a flusher
killed mid-flush, a flush at commit killed, a cancelled statement, a backend
crash. Nothing committed is lost, nothing uncommitted appears, no invariant
breaks (docs/reliability.md).

A backend terminated mid-statement and an immediate shutdown under load are
in test_write_concurrency.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from bench.soak import FAMILIES, check_invariants
from shared import SCHEMA as ER, dsn_of

# One name from each of six unrelated families: never resolve to each other.
NAMES = [f[0] for f in FAMILIES[:6]]

# A client in its own process, so that it can die the way clients die
# (SIGKILL: the kernel closes the socket, nothing is sent to the server).
CHILD = r"""
import json, os, sys, time, psycopg
spec = json.loads(sys.argv[1])
conn = psycopg.connect(spec["dsn"], autocommit=spec.get("autocommit", True))
conn.execute("SET lock_timeout = '30s'")
for statement in spec.get("setup", []):
    conn.execute(statement)
print(conn.info.backend_pid, flush=True)
for statement, params in spec["statements"]:
    conn.execute(statement, params)
print("done", flush=True)
time.sleep(3600)
"""


class Child:
    """A client process running statements; kill() is a crash, not a close."""

    def __init__(self, conn, statements, setup=(), autocommit=True):
        spec = {"dsn": dsn_of(conn), "statements": statements, "setup": list(setup), "autocommit": autocommit}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(spec)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = int(self.proc.stdout.readline())          # its backend's pid

    def wait_for(self, line: str, timeout: float = 20) -> None:
        got = self.proc.stdout.readline().strip()
        assert got == line, (got, self.proc.stderr.read() if self.proc.poll() is not None else "")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def facts_stmt(bank: str, facts: list[list[str]], content: str = "fact"):
    return (f"INSERT INTO {ER}.facts (bank_id, content, mentions) SELECT %s, %s, m"
            " FROM jsonb_array_elements(%s::jsonb) AS m", [bank, content, json.dumps(facts)])


@pytest.fixture
def connect(connect):
    """Sessions that give up waiting for a lock after 30 s: a broken test fails, it does not hang."""
    def _connect(autocommit: bool = True):
        c = connect(autocommit=autocommit)
        c.execute("SET lock_timeout = '30s'")
        if not autocommit:
            c.commit()
        return c
    return _connect


def wait_until(predicate, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def backend_gone(conn, pid: int) -> bool:
    return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] == 0


def waiting_on_lock(conn, pid: int) -> bool:
    return conn.execute("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                        (pid,)).fetchone() == (True,)


def count(conn, query: str, *params) -> int:
    return conn.execute(query, params).fetchone()[0]


def invariants(conn, **kw) -> list[str]:
    return check_invariants(conn, one_mention_per_entity_per_fact=True, **kw)


# -- the checker itself ----------------------------------------------------------

def test_the_invariant_checker_finds_broken_counts_pairs_and_duplicates(conn):
    conn.execute(*facts_stmt("team", [NAMES[:3], NAMES[1:4]]))
    assert invariants(conn) == []
    conn.execute(f"UPDATE {ER}.entities SET mention_count = mention_count + 2 WHERE canonical_name = %s",
                 (NAMES[0],))
    conn.execute(f"UPDATE {ER}.entity_cooccurrences SET cooccurrence_count = 7"
                 f" WHERE ctid = (SELECT min(ctid) FROM {ER}.entity_cooccurrences)")
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', '[\"x\"]')")
    conn.execute("SET session_replication_role = replica")    # skip the trigger: a fact without links
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', '[\"y\"]')")
    conn.execute("RESET session_replication_role")
    problems = "\n".join(invariants(conn))
    assert "mention_count 3 but 1 links" in problems
    assert "counted 7, " in problems
    assert "has mentions but no links" in problems
    assert "mentions counted" in problems


# -- a client that dies ----------------------------------------------------------

def test_client_killed_mid_transaction_commits_nothing_and_blocks_no_one(conn, connect):
    conn.execute(*facts_stmt("team", [NAMES[:2]]))
    before = conn.execute(f"SELECT canonical_name, mention_count FROM {ER}.entities ORDER BY 1").fetchall()
    # The child creates new names and queues statistics, and never commits.
    child = Child(conn, [facts_stmt("team", [NAMES[:4], NAMES[2:5]], "uncommitted")], autocommit=False)
    child.wait_for("done")
    # Another writer needs the same new names: it waits for the child's
    # uncommitted entities (the unique index), then goes on once it is gone.
    other = connect()
    done = threading.Event()
    failure: list[BaseException] = []

    def write():
        try:
            other.execute(*facts_stmt("team", [NAMES[2:5]], "survivor"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failure.append(exc)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    wait_until(lambda: waiting_on_lock(conn, other.info.backend_pid), what="the writer to wait for the child")
    child.kill()
    assert done.wait(20), "the writer is still blocked after the client died"
    writer.join()
    assert failure == []
    wait_until(lambda: backend_gone(conn, child.pid), what="the dead client's backend to go")
    assert count(conn, f"SELECT count(*) FROM {ER}.facts WHERE content = 'uncommitted'") == 0
    after = dict(conn.execute(f"SELECT canonical_name, mention_count FROM {ER}.entities").fetchall())
    assert {n: after[n] for n, _ in before} == {NAMES[0]: 1, NAMES[1]: 1}
    assert after[NAMES[2]] == 1 and NAMES[5] not in after          # only the survivor's mentions count
    assert invariants(conn) == []


@pytest.mark.parametrize("check_interval", ["0", "100ms"])
def test_client_killed_mid_statement_leaves_all_of_it_or_none(conn, connect, check_interval):
    """A statement whose client died either completes and commits whole (the
    server had not noticed) or is rolled back whole (client_connection_check_interval
    noticed it) - never half: no fact without links, no links without counts."""
    blocker = connect(autocommit=False)
    blocker.execute(*facts_stmt("team", [[NAMES[0], NAMES[5]]], "blocker"))   # holds the new names
    child = Child(conn, [facts_stmt("team", [NAMES[:3], NAMES[3:5], [NAMES[5], NAMES[1]]], "victim")],
                  setup=[f"SET client_connection_check_interval = '{check_interval}'"])
    wait_until(lambda: waiting_on_lock(conn, child.pid), what="the child's statement to wait")
    child.kill()
    if check_interval != "0":
        # The server notices the closed socket while the statement still waits.
        wait_until(lambda: backend_gone(conn, child.pid), what="the dead client's backend to go")
    blocker.commit()
    wait_until(lambda: backend_gone(conn, child.pid), what="the dead client's backend to go")
    victims = count(conn, f"SELECT count(*) FROM {ER}.facts WHERE content = 'victim'")
    assert victims in (0, 3)
    if check_interval != "0":
        assert victims == 0
    assert invariants(conn) == []


# -- flushers that die -----------------------------------------------------------

def queue_statistics(connect, n_facts: int = 40) -> None:
    writer = connect()
    writer.execute("SET entity_resolver.flush_at_commit = off")
    for i in range(n_facts):
        writer.execute(*facts_stmt("team", [[NAMES[i % 6], NAMES[(i + 1) % 6], NAMES[(i + 3) % 6]]]))


def lock_one_entity(connect):
    """A session holding one entity row as a flush would: any flush that must
    update it waits (linking does not: its foreign-key check only shares the key)."""
    blocker = connect(autocommit=False)
    blocker.execute(f"SELECT 1 FROM {ER}.entities WHERE canonical_name = %s FOR NO KEY UPDATE", (NAMES[0],))
    return blocker


@pytest.mark.parametrize("how", ["terminate backend", "kill client"])
def test_flusher_killed_mid_flush_loses_no_statistic(conn, connect, how):
    queue_statistics(connect)
    queued = count(conn, f"SELECT count(*) FROM {ER}.stats_queue")
    assert queued > 0
    blocker = lock_one_entity(connect)
    # The flusher claims and deletes every queued row, then waits on the lock:
    # it is mid-flush, its work uncommitted.
    setup = ["SET client_connection_check_interval = '100ms'"] if how == "kill client" else []
    child = Child(conn, [(f"SELECT * FROM {ER}.flush_stats()", [])], setup=setup)
    wait_until(lambda: waiting_on_lock(conn, child.pid), what="the flusher to wait mid-flush")
    # Meanwhile another flusher skips the claimed rows instead of queueing behind them.
    other = connect()
    other.execute("SET lock_timeout = '2s'")
    assert other.execute(f"SELECT * FROM {ER}.flush_stats()").fetchone() == (0, 0)
    if how == "terminate backend":
        conn.execute("SELECT pg_terminate_backend(%s)", (child.pid,))
    else:
        child.kill()
    wait_until(lambda: backend_gone(conn, child.pid), what="the flusher's backend to go")
    child.kill()
    blocker.rollback()
    assert count(conn, f"SELECT count(*) FROM {ER}.stats_queue") == queued    # all back, none applied
    conn.execute(f"SELECT * FROM {ER}.flush_stats()")
    assert invariants(conn) == []
    assert count(conn, f"SELECT sum(mention_count) FROM {ER}.entities") == 40 * 3


def test_flush_at_commit_killed_takes_its_whole_transaction_with_it(conn, connect):
    conn.execute(*facts_stmt("team", [NAMES[:3]]))
    before = conn.execute(f"SELECT canonical_name, mention_count FROM {ER}.entities ORDER BY 1").fetchall()
    blocker = lock_one_entity(connect)
    writer = connect(autocommit=False)
    writer.execute(*facts_stmt("team", [NAMES[:3], [NAMES[0], NAMES[4]]], "doomed"))
    failure: list[BaseException] = []

    def commit():
        try:
            writer.commit()                 # the flush at commit waits on the blocker
        except BaseException as exc:  # noqa: BLE001 - expected
            failure.append(exc)

    t = threading.Thread(target=commit)
    t.start()
    pid = writer.info.backend_pid
    wait_until(lambda: waiting_on_lock(conn, pid), what="the commit's flush to wait")
    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    t.join(20)
    assert failure and isinstance(failure[0], psycopg.OperationalError)
    blocker.rollback()
    assert count(conn, f"SELECT count(*) FROM {ER}.facts WHERE content = 'doomed'") == 0
    assert conn.execute(f"SELECT canonical_name, mention_count FROM {ER}.entities ORDER BY 1").fetchall() == before
    assert count(conn, f"SELECT count(*) FROM {ER}.stats_queue") == 0
    assert invariants(conn) == []


# -- cancellation ----------------------------------------------------------------

def test_a_cancelled_resolution_writes_nothing_and_the_session_goes_on(conn, connect):
    blocker = connect(autocommit=False)
    blocker.execute(*facts_stmt("team", [[NAMES[0], NAMES[1]]], "blocker"))
    session = connect()
    session.execute("SET statement_timeout = '300ms'")
    with pytest.raises(psycopg.errors.QueryCanceled):
        session.execute(*facts_stmt("team", [NAMES[:4]], "cancelled"))
    with pytest.raises(psycopg.errors.QueryCanceled):
        session.execute(f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (json.dumps(NAMES[:3]),))
    blocker.rollback()
    session.execute("RESET statement_timeout")
    # Same session, same cached plans and modules: works as if nothing happened.
    rows = session.execute(f"SELECT canonical_name, created FROM {ER}.resolve_mentions('team', %s)",
                           (json.dumps(NAMES[:3]),)).fetchall()
    assert rows == [(n, True) for n in NAMES[:3]]
    assert count(conn, f"SELECT count(*) FROM {ER}.facts") == 0
    assert conn.execute(f"SELECT canonical_name, mention_count FROM {ER}.entities ORDER BY 1").fetchall() == \
        sorted((n, 1) for n in NAMES[:3])
    assert check_invariants(conn, facts_only=False) == []


# -- a crashed backend -------------------------------------------------------------

@pytest.mark.slow
def test_backend_crash_under_load_keeps_every_committed_fact(conn, pg_cluster):
    """SIGKILL of one backend makes the postmaster reset every session and
    recover from the WAL: all committed facts are there with their links and
    counts, nothing else."""
    info = dict(host=conn.info.host, port=conn.info.port, user=conn.info.user, dbname=conn.info.dbname)
    committed: list[str] = []
    lock = threading.Lock()
    pids: list[int] = []
    stop = threading.Event()

    def write(seed: int):
        try:
            with psycopg.connect(**info, autocommit=True) as c:
                with lock:
                    pids.append(c.info.backend_pid)
                if seed % 2:
                    c.execute("SET entity_resolver.flush_at_commit = off")
                i = seed
                while not stop.is_set():
                    i += 1
                    content = f"w{seed}-{i}"
                    c.execute(*facts_stmt("team", [[NAMES[i % 6], NAMES[(i + 2) % 6]]], content))
                    with lock:
                        committed.append(content)
        except psycopg.Error:
            return                          # the crash: this session is gone

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    wait_until(lambda: len(committed) > 60, what="some committed facts")
    os.kill(pids[0], signal.SIGKILL)       # the server's own process, as an OOM killer would
    for t in threads:
        t.join(30)
    stop.set()

    def back():
        try:
            with psycopg.connect(**info, autocommit=True) as c:
                c.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    wait_until(back, timeout=60, what="the server to recover")
    with psycopg.connect(**info, autocommit=True) as c:
        present = {r[0] for r in c.execute(f"SELECT content FROM {ER}.facts")}
        assert set(committed) <= present                     # nothing committed is lost
        assert len(present - set(committed)) <= 6            # at most the statements in flight
        c.execute(f"SELECT * FROM {ER}.flush_stats()")
        assert invariants(c) == []
