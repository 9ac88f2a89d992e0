"""Workers going away and coming: a worker stopped mid-load, a third worker and a rebalance.

Each test has a cluster of its own: they stop, start or add workers.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import psycopg
import pytest
from citus_helpers import (EXACT, SCHEMA, banks_on, install_distributed, remote_commands, stats_differences,
                           worker_port_of)
from test_corpora import bank_state

from entity_resolver.importer import iter_facts

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"


def corpus_facts(name: str, count: int) -> List[Dict[str, Any]]:
    """The first facts of a committed corpus, as an application sends them (no gold labels)."""
    facts = []
    for rec in iter_facts(CORPORA / f"{name}.jsonl"):
        facts.append({"content": rec.content, "mentions": rec.mentions, "event_date": rec.event_date})
        if len(facts) == count:
            break
    return facts


def insert_fact(conn: psycopg.Connection, bank: str, fact: Dict[str, Any]) -> None:
    """One fact, one statement (autocommit): the per-call path of an application."""
    conn.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, content, mentions, event_date)"
                 " VALUES (%s, %s, %s, coalesce(%s::timestamptz, now()))",
                 (bank, fact.get("content"), json.dumps(fact["mentions"]), fact.get("event_date")))


class Writer(threading.Thread):
    """Inserts a stream of facts into one bank, one per statement, until told to stop; keeps score."""

    def __init__(self, dsn: str, bank: str, facts: List[Dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.dsn, self.bank, self.facts = dsn, bank, facts
        self.stop = threading.Event()
        self.committed: List[str] = []     # contents of facts whose INSERT returned
        self.failed: List[str] = []        # contents of facts whose INSERT raised
        self.errors: List[psycopg.Error] = []
        self.committed_at: List[float] = []

    def run(self) -> None:
        conn = psycopg.connect(self.dsn, autocommit=True)
        n = 0
        while not self.stop.is_set() and n < len(self.facts):
            fact = self.facts[n]
            try:
                insert_fact(conn, self.bank, fact)
                self.committed.append(fact["content"])
                self.committed_at.append(time.monotonic())
                n += 1
            except psycopg.Error as exc:
                self.failed.append(fact["content"])
                self.errors.append(exc)
                n += 1
                if conn.closed:
                    conn = psycopg.connect(self.dsn, autocommit=True)
                time.sleep(0.05)
        conn.close()


def test_a_worker_stopped_mid_load_fails_only_its_banks_and_loses_nothing(private_cluster, timing):
    cluster = private_cluster
    dsn = cluster.create_database("er_stop")
    install_distributed(dsn)
    up, down = cluster.workers
    with psycopg.connect(dsn, autocommit=True) as conn:
        live = banks_on(conn, up.port, 2)
        gone = banks_on(conn, down.port, 2)
    facts = [dict(f, content=f"{n}: {f.get('content') or ''}") for n, f in enumerate(corpus_facts("recurring", 400))]
    writers = {bank: Writer(dsn, bank, facts) for bank in live + gone}
    for w in writers.values():
        w.start()
    time.sleep(2.0)
    stopped_at = time.monotonic()
    down.stop("immediate")  # as a crash
    try:
        time.sleep(2.5)
        # The banks of the running worker keep working while the other is down.
        for bank in live:
            assert any(t > stopped_at + 0.5 for t in writers[bank].committed_at), (
                bank, len(writers[bank].committed), [t - stopped_at for t in writers[bank].committed_at[-3:]],
                [str(e)[:300] for e in writers[bank].errors[-2:]])
        # Those of the stopped worker fail, and the error names the node.
        for bank in gone:
            assert writers[bank].errors, bank
            error = writers[bank].errors[-1]
            assert error.sqlstate.startswith("08"), (error.sqlstate, str(error))
            assert f"127.0.0.1:{down.port}" in str(error)
        with psycopg.connect(dsn, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.ConnectionFailure) as error:
                conn.execute(f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, '[\"Alex\"]')", (gone[0],))
            assert f"127.0.0.1:{down.port}" in error.value.diag.message_primary
    finally:
        for w in writers.values():
            w.stop.set()
        for w in writers.values():
            w.join(timeout=30)
        started = time.monotonic()
        down.start()
        timing("restart a stopped worker", time.monotonic() - started)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for bank, w in writers.items():
            assert w.committed, bank
            present = {r[0] for r in conn.execute(f"SELECT content FROM {SCHEMA}.facts WHERE bank_id = %s", (bank,))}
            # Nothing that committed is lost; nothing appears that was not sent
            # (an INSERT cut off by the crash may or may not have committed).
            assert set(w.committed) <= present, bank
            assert present <= set(w.committed) | set(w.failed), bank
            # Statistics are exact: every call applied its own before returning.
            assert stats_differences(conn, bank) == EXACT, bank
        # The stopped worker's banks work again.
        for bank in gone:
            insert_fact(conn, bank, {"content": "after", "mentions": ["Alex Morgan"], "event_date": None})
            assert stats_differences(conn, bank) == EXACT


def test_a_third_worker_takes_shards_and_moved_banks_resolve_as_before(private_cluster, timing):
    cluster = private_cluster
    dsn = cluster.create_database("er_grow")
    install_distributed(dsn)
    facts = corpus_facts("typos", 30)
    first, second = facts[:15], facts[15:]
    conn = psycopg.connect(dsn, autocommit=True)
    banks = [f"grow-{n}" for n in range(1, 13)]
    # The reference: a bank that gets the whole stream before anything moves.
    for fact in facts:
        insert_fact(conn, "grow-reference", fact)
    for bank in banks:
        for fact in first:
            insert_fact(conn, bank, fact)
    before = {bank: worker_port_of(conn, bank) for bank in banks}
    probe = first[0]["mentions"][0] if isinstance(first[0]["mentions"][0], str) else first[0]["mentions"][0]["text"]
    looked = {bank: conn.execute(f"SELECT entity_id FROM {SCHEMA}.lookup_mention(%s, %s)", (bank, probe)).fetchone()[0]
              for bank in banks}
    started = time.monotonic()
    third = cluster.add_worker()
    timing("add a third worker", time.monotonic() - started)
    started = time.monotonic()
    conn.execute("SELECT citus_rebalance_start()")
    conn.execute("SELECT citus_rebalance_wait()")
    timing("rebalance onto the third worker (citus_rebalance_start)", time.monotonic() - started)
    assert conn.execute("SELECT state FROM citus_rebalance_status()").fetchone()[0] == "finished"
    moved = [bank for bank in banks if worker_port_of(conn, bank) == third.port]
    assert moved, "the rebalancer moved no bank to the new worker"
    assert all(before[bank] != third.port for bank in banks)
    for bank in banks:
        assert conn.execute(f"SELECT entity_id FROM {SCHEMA}.lookup_mention(%s, %s)",
                            (bank, probe)).fetchone()[0] == looked[bank]
        # The rest of the stream, after the move: the bank ends as if nothing had moved.
        for fact in second:
            insert_fact(conn, bank, fact)
    reference = bank_state(conn, "grow-reference")
    for bank in banks:
        state = bank_state(conn, bank)
        for part in ("entities", "pairs"):
            assert state[part] == reference[part], (bank, part)
        assert [m[1:6] for m in state["mentions"]] != [] and \
            sorted(m[2:6] for m in state["mentions"]) == sorted(m[2:6] for m in reference["mentions"])
        assert stats_differences(conn, bank) == EXACT
    # A moved bank's calls now go to the new worker.
    _, sent = remote_commands(conn, f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, '[\"Acme\"]')", (moved[0],))
    assert [port for command, port in sent if "_delegated(" in command] == [third.port]
    conn.close()
