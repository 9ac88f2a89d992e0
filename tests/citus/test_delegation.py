"""A bank's call runs whole on the worker holding the bank."""

from __future__ import annotations

import json

import psycopg
import pytest
from citus_layout import banks_on, remote_commands, worker_port_of

from entity_resolver.install import install


def test_a_bank_call_is_sent_whole_to_the_worker_holding_the_bank(citus, distributed):
    for worker in citus.workers:
        bank = banks_on(distributed, worker.port, 1)[0]
        rows, sent = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, %s::jsonb)",
            (bank, json.dumps(["Alex Morgan", "Acme", "Acme Corp"])))
        assert [r[1] for r in rows] == ["Alex Morgan", "Acme", "Acme Corp"]
        # One command: the call itself, to that worker. The resolver's
        # statements (probes, inserts, the queue) ran there, not from here.
        assert len(sent) == 1, sent
        command, port = sent[0]
        assert port == worker.port
        assert "entity_resolver.resolve_mentions(" in command


def test_the_resolvers_rows_are_written_on_the_banks_worker_only(citus, distributed):
    bank = banks_on(distributed, citus.workers[1].port, 1)[0]
    distributed.execute("SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex Morgan\"]')", (bank,))
    dbname = distributed.info.dbname
    for worker in citus.workers:
        with psycopg.connect(worker.dsn(dbname)) as conn:
            shards = [r[0] for r in conn.execute(
                "SELECT shard_name FROM citus_shards WHERE nodeport = %s"
                " AND table_name IN ('entity_resolver.entities'::regclass, 'entity_resolver.stats_queue'::regclass)",
                (worker.port,))]
            rows = sum(conn.execute(f"SELECT count(*) FROM {s} WHERE bank_id = %s", (bank,)).fetchone()[0]
                       for s in shards)
        # One entity and its queued mention, on the bank's worker.
        assert rows == (2 if worker is citus.workers[1] else 0)


def test_explain_names_the_worker_of_the_bank(citus, distributed):
    bank = banks_on(distributed, citus.workers[0].port, 1)[0]
    plan = "\n".join(r[0] for r in distributed.execute(
        "EXPLAIN (VERBOSE) SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (bank,)))
    assert "Task Count: 1" in plan
    assert f"Node: host=127.0.0.1 port={citus.workers[0].port}" in plan


def test_explain_analyze_runs_a_force_delegated_call_on_its_worker(citus, distributed):
    # Without force_delegation, EXPLAIN ANALYZE sends the call as a query on a
    # shard and the resolver's statements fail there as nested distributed
    # queries (XX000 cannot execute a distributed query from a query on a shard).
    bank = banks_on(distributed, citus.workers[1].port, 1)[0]
    plan = "\n".join(r[0] for r in distributed.execute(
        "EXPLAIN (ANALYZE, VERBOSE) SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (bank,)))
    assert f"Node: host=127.0.0.1 port={citus.workers[1].port}" in plan
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.entities WHERE bank_id = %s", (bank,)).fetchone()[0] == 1


def test_calls_inside_a_transaction_block_are_delegated(citus, distributed):
    first, second = (banks_on(distributed, w.port, 1)[0] for w in citus.workers)
    with distributed.transaction():
        _, sent_first = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (first,))
        _, sent_second = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (second,))
    calls = [(c, p) for c, p in sent_first + sent_second if "resolve_mentions(" in c]
    assert [p for _, p in calls] == [worker_port_of(distributed, first), worker_port_of(distributed, second)]
    # Both banks' rows committed, one transaction over two workers.
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.entities WHERE bank_id IN (%s, %s)", (first, second)).fetchone()[0] == 2


@pytest.fixture
def crashable(private_cluster):
    """The layout in a cluster of its own (for a test that may crash the coordinator)."""
    from citus_layout import distribute

    dsn = private_cluster.create_database("er_own")
    with psycopg.connect(dsn, autocommit=True) as conn:
        install(conn)
        distribute(conn)
    return dsn


@pytest.mark.xfail(strict=True, raises=psycopg.OperationalError,
                   reason="Citus 13.2.2 dereferences a NULL distribution argument while planning a delegated "
                          "call: the coordinator's server process segfaults and every session is reset "
                          "(function_call_delegation.c has no constisnull check; citusdata/citus#7242 "
                          "reports a crash on this path). A non-distributed wrapper must reject NULL first.")
def test_a_null_bank_id_is_a_clear_error_and_the_coordinator_survives(crashable):
    with psycopg.connect(crashable, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.NullValueNotAllowed, match="bank_id"):
            conn.execute("SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (None,))
