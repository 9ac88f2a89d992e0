"""A bank's call runs whole on the worker holding the bank, and asks no other node."""

from __future__ import annotations

import json
import uuid

import psycopg
from citus_helpers import (EXACT, SCHEMA, banks_on, remote_commands, resolve, stats_differences, worker_port_of,
                           workers_report_remote_commands)


def test_a_bank_call_is_sent_whole_to_the_worker_holding_the_bank(citus, distributed):
    for worker in citus.workers:
        bank = banks_on(distributed, worker.port, 1)[0]
        rows, sent = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, %s::jsonb)",
            (bank, json.dumps(["Alex Morgan", "Acme", "Acme Corp"])))
        assert [r[1] for r in rows] == ["Alex Morgan", "Acme", "Acme Corp"]
        # The call, and the begin and commit of its transaction: all to that
        # worker. The resolver's statements (probes, inserts, the queue, the
        # flush) ran there, not from here.
        assert {port for _, port in sent} == {worker.port}, sent
        calls = [command for command, _ in sent if "_delegated(" in command]
        assert len(calls) == 1 and f"{SCHEMA}_internal.resolve_mentions_delegated(" in calls[0]


def test_calls_stay_delegated_past_the_plan_cache_and_inside_transaction_blocks(citus, distributed):
    first, second = (banks_on(distributed, w.port, 1)[0] for w in citus.workers)
    # The wrapper's statement is planned again for each bank (a generic plan
    # would leave the key a parameter, which Citus does not delegate).
    for n in range(8):
        bank = (first, second)[n % 2]
        _, sent = remote_commands(distributed, "SELECT * FROM entity_resolver.resolve_mention(%s, %s)",
                                  (bank, f"Name {n}"))
        assert [p for c, p in sent if "_delegated(" in c] == [worker_port_of(distributed, bank)]
    with distributed.transaction():
        _, sent = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (first,))
        _, more = remote_commands(
            distributed, "SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\"]')", (second,))
    calls = [p for c, p in sent + more if "_delegated(" in c]
    assert calls == [worker_port_of(distributed, first), worker_port_of(distributed, second)]
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.entities WHERE bank_id IN (%s, %s) AND canonical_name = 'Alex'",
        (first, second)).fetchone()[0] == 2


def test_the_resolvers_rows_are_written_on_the_banks_worker_only(citus, distributed):
    bank = banks_on(distributed, citus.workers[1].port, 1)[0]
    distributed.execute("SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex Morgan\"]')", (bank,))
    dbname = distributed.info.dbname
    for worker in citus.workers:
        with psycopg.connect(worker.dsn(dbname)) as conn:
            shards = [r[0] for r in conn.execute(
                "SELECT shard_name FROM citus_shards WHERE nodeport = %s"
                " AND table_name IN ('entity_resolver.entities'::regclass, 'entity_resolver.mentions'::regclass)",
                (worker.port,))]
            rows = sum(conn.execute(f"SELECT count(*) FROM {s} WHERE bank_id = %s", (bank,)).fetchone()[0]
                       for s in shards)
        # One entity and its mention (provenance), on the bank's worker.
        assert rows == (2 if worker is citus.workers[1] else 0)


def test_explain_names_the_worker_of_the_bank(citus, distributed):
    bank = banks_on(distributed, citus.workers[0].port, 1)[0]
    plan = "\n".join(r[0] for r in distributed.execute(
        "EXPLAIN (VERBOSE) SELECT r FROM entity_resolver_internal.resolve_mentions_delegated(%s, '{}') AS r", (bank,)))
    assert "Task Count: 1" in plan
    assert f"Node: host=127.0.0.1 port={citus.workers[0].port}" in plan


def test_a_write_call_asks_no_other_node(citus, distributed):
    # No cross-shard transaction on the hot path: resolving, inserting facts,
    # linking, retaining, forgetting and the flush each call makes run on the
    # bank's worker alone; that worker sends nothing to any other node.
    bank = banks_on(distributed, citus.workers[0].port, 1)[0]
    ids = [r[1] for r in resolve(distributed, bank, ["Alex Morgan", "Acme"])]
    calls = [
        ("SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex Morgan\", \"Berlin\"]')", (bank,)),
        ("INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES (%s, '[\"Alex Morgan\", \"Oslo\"]'),"
         " (%s, '[\"alex morgan\", \"Acme\"]')", (bank, bank)),
        ("SELECT entity_resolver.link_unit(%s, %s, %s::uuid[])", (bank, uuid.uuid4(), ids)),
        ("SELECT * FROM entity_resolver.retain(%s, %s, '[\"Alex Morgan\", \"Paris\"]')", (bank, uuid.uuid4())),
        ("DELETE FROM entity_resolver.facts WHERE bank_id = %s", (bank,)),
        ("SELECT * FROM entity_resolver.expand_units(%s, %s::uuid[])", (bank, [uuid.uuid4()])),
    ]
    # The control: a delegated function that reads every bank does ask the
    # other worker, and the check below sees it.
    distributed.execute("CREATE FUNCTION public.count_banks(bank_id text) RETURNS bigint LANGUAGE plpgsql"
                        " AS $$ BEGIN RETURN (SELECT count(*) FROM entity_resolver.banks); END $$")
    distributed.execute("SELECT create_distributed_function('public.count_banks(text)', 'bank_id',"
                        " colocate_with => 'entity_resolver.banks')")
    calls.insert(0, ("SELECT public.count_banks(%s)", (bank,)))
    with workers_report_remote_commands(citus.workers, distributed.info.dbname):
        for n, (query, params) in enumerate(calls):
            with psycopg.connect(distributed.info.dsn, autocommit=True) as fresh:
                notices: list[str] = []
                fresh.add_notice_handler(lambda d: notices.append(
                    f"{d.message_primary} {d.message_detail or ''}"))
                fresh.execute(query, params)
            # The coordinator's own commands to the worker are reported with
            # "on server"; a worker's command to another node would be
            # relayed "from" that worker.
            relayed = [text for text in notices if text.startswith("issuing ") and " from " in text]
            if n == 0:
                assert any(f"127.0.0.1:{citus.workers[1].port}" in text for text in relayed), notices
            else:
                assert relayed == [], (query, relayed)
    distributed.execute("DROP FUNCTION public.count_banks(text)")
    assert stats_differences(distributed, bank) == EXACT


def test_where_the_probe_s_limit_binds_the_neighbourhood_past_it_is_read_on_the_bank_s_worker(citus, distributed):
    # As on one server (tests/db/test_shortcut_equivalence.py): under max_candidates 3 the probe keeps
    # three closer names seen long ago; Telatid Health, a partner of the nearby name seen today, is
    # fourth, and the one that can win. The worker reads the neighbourhood past the limit.
    bank = banks_on(distributed, citus.workers[1].port, 1)[0]
    for date, mentions in [("2025-01-05T09:00:00Z", ["Telatad Healthcare"]),
                           ("2025-04-05T09:00:00Z", ["Telatad Health Group"]),
                           ("2025-07-05T09:00:00Z", ["Telatad Healthy"]),
                           ("2026-06-01T09:00:00Z", ["Telatid Health", "Nadia Kowalska"])]:
        distributed.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions, event_date) VALUES (%s, %s, %s)",
                            (bank, json.dumps(mentions), date))
    distributed.execute(f"SELECT {SCHEMA}.configure_bank(%s, %s::jsonb)", (bank, json.dumps({"max_candidates": 3})))
    telatid = distributed.execute(f"SELECT id FROM {SCHEMA}.entities WHERE bank_id = %s AND canonical_name = %s",
                                  (bank, "Telatid Health")).fetchone()[0]
    explained = dict(distributed.execute(
        f"SELECT canonical_name, decision FROM {SCHEMA}.explain_mention(%s, %s, ARRAY['Nadia Kowalska'], %s)",
        (bank, "Telatad Health", "2026-06-01T10:00:00Z")).fetchall())
    assert len(explained) == 4 and explained["Telatid Health"] == "chosen"
    rows, sent = remote_commands(
        distributed, f"SELECT entity_id, created FROM {SCHEMA}.resolve_mention(%s, %s, ARRAY['Nadia Kowalska'], %s)",
        (bank, "Telatad Health", "2026-06-01T10:00:00Z"))
    assert rows == [(telatid, False)]
    assert {port for _, port in sent} == {citus.workers[1].port}, sent
