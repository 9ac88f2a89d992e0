"""The write path on a distributed installation: facts, links, retain, forgetting, flushing, reading."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from citus_helpers import EXACT, SCHEMA, banks_on, rebuild_differences, resolve, stats_differences

from entity_resolver.importer import import_file

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"


def entities(conn, bank: str) -> list[tuple]:
    return conn.execute(
        f"SELECT canonical_name, mention_count FROM {SCHEMA}.entities WHERE bank_id = %s ORDER BY 1",
        (bank,)).fetchall()


def test_a_name_resolves_to_one_entity_whatever_its_case_and_fuzzy_candidates_come_from_the_shard(
        distributed, two_banks):
    for bank in two_banks:
        first = resolve(distributed, bank, ["Katherine Johansson"])[0]
        again = resolve(distributed, bank, ["katherine johansson"])[0]
        assert first[3] is True and again[3] is False and again[1] == first[1]
        rows = distributed.execute(
            f"SELECT canonical_name, decision FROM {SCHEMA}.explain_mention(%s, 'Katherine Johanson')",
            (bank,)).fetchall()
        assert rows[0] == ("Katherine Johansson", "chosen")
        looked = distributed.execute(
            f"SELECT canonical_name, decision FROM {SCHEMA}.lookup_mention(%s, 'Katherine Johanson')",
            (bank,)).fetchone()
        assert looked == ("Katherine Johansson", "resolved")
        # Statistics are applied when the call returns (no commit trigger on a shard).
        assert entities(distributed, bank) == [("Katherine Johansson", 2)]
        assert stats_differences(distributed, bank) == EXACT


def test_an_insert_of_facts_of_banks_on_both_workers_resolves_links_and_counts_them(distributed, two_banks):
    # The statement trigger with its transition table runs on each shard the
    # INSERT writes, on that shard's node, for the facts of that shard, in
    # statement order: "Alex Morgan" of the third fact is the first one's.
    a, b = two_banks
    facts = [(a, ["Alex Morgan", "Acme"]), (b, ["Alex Morgan", "Borealis"]), (a, ["alex morgan", "Oslo"])]
    distributed.execute(
        f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) SELECT * FROM unnest(%s::text[], %s::jsonb[])",
        ([f[0] for f in facts], [json.dumps(f[1]) for f in facts]))
    assert entities(distributed, a) == [("Acme", 1), ("Alex Morgan", 2), ("Oslo", 1)]
    assert entities(distributed, b) == [("Alex Morgan", 1), ("Borealis", 1)]
    pairs = distributed.execute(
        f"SELECT bank_id, count(*), sum(cooccurrence_count) FROM {SCHEMA}.entity_cooccurrences"
        " WHERE bank_id = ANY(%s) GROUP BY 1 ORDER BY bank_id = %s DESC", (two_banks, a)).fetchall()
    assert pairs == [(a, 2, 2), (b, 1, 1)]
    for bank in two_banks:
        assert stats_differences(distributed, bank) == EXACT


def test_a_fact_cannot_be_relinked_by_update(distributed, two_banks):
    distributed.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Alex\"]')",
                        (two_banks[0],))
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="cannot be updated"):
        distributed.execute(f"UPDATE {SCHEMA}.facts SET mentions = '[]' WHERE bank_id = %s", (two_banks[0],))
    distributed.execute(f"UPDATE {SCHEMA}.facts SET content = 'fixed' WHERE bank_id = %s", (two_banks[0],))


def test_link_unit_retain_and_expand_units(distributed, two_banks):
    bank = two_banks[1]
    ids = [r[1] for r in resolve(distributed, bank, ["Alex Morgan", "Acme", "Berlin"])]
    unit, other = uuid.uuid4(), uuid.uuid4()
    assert distributed.execute(f"SELECT {SCHEMA}.link_unit(%s, %s, %s)", (bank, unit, ids)).fetchone()[0] == 3
    retained = distributed.execute(
        f"SELECT mention, canonical_name, created, decision FROM {SCHEMA}.retain(%s, %s, %s::jsonb) ORDER BY ord",
        (bank, other, json.dumps(["alex morgan", "Zurich"]))).fetchall()
    assert retained == [("alex morgan", "Alex Morgan", False, "resolved"), ("Zurich", "Zurich", True, "created")]
    assert distributed.execute(
        f"SELECT unit_id, shared_entities FROM {SCHEMA}.expand_units(%s, %s::uuid[])", (bank, [unit])
    ).fetchall() == [(other, 1)]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="is not an entity of bank"):
        distributed.execute(f"SELECT {SCHEMA}.link_unit(%s, %s, %s::uuid[])", (bank, unit, [uuid.uuid4()]))
    assert stats_differences(distributed, bank) == EXACT


def test_forgetting_facts_and_units_removes_their_statistics_and_orphans(distributed, two_banks):
    a, b = two_banks
    for bank in two_banks:
        distributed.execute(
            f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Alex Morgan\", \"Acme\"]'),"
            " (%s, '[\"Alex Morgan\", \"Oslo\"]')", (bank, bank))
    unit = uuid.uuid4()
    distributed.execute(f"SELECT * FROM {SCHEMA}.retain(%s, %s, '[\"Alex Morgan\", \"Paris\"]')", (a, unit))
    assert distributed.execute(f"SELECT {SCHEMA}.forget_unit(%s, %s)", (a, unit)).fetchone()[0] == \
        {"mentions": 2, "links": 2}
    assert entities(distributed, a) == [("Acme", 1), ("Alex Morgan", 2), ("Oslo", 1)]
    distributed.execute(f"DELETE FROM {SCHEMA}.facts WHERE bank_id = %s AND mentions @> '[\"Oslo\"]'", (a,))
    assert entities(distributed, a) == [("Acme", 1), ("Alex Morgan", 1)]
    for bank in two_banks:
        assert stats_differences(distributed, bank) == EXACT


def test_truncate_forgets_every_fact_shard_by_shard(citus_dsn, citus):
    # Its own installation: TRUNCATE takes every bank with it.
    from citus_helpers import install_distributed

    install_distributed(citus_dsn)
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        banks = [banks_on(conn, w.port, 1)[0] for w in citus.workers]
        for bank in banks:
            conn.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Alex Morgan\", \"Acme\"]')",
                         (bank,))
            resolve(conn, bank, ["Kept Name"])  # not a fact: kept
        conn.execute(f"TRUNCATE {SCHEMA}.facts")
        for bank in banks:
            assert entities(conn, bank) == [("Kept Name", 1)]
            assert stats_differences(conn, bank) == EXACT


def test_the_importer_loads_facts_of_banks_on_both_workers_in_one_batch(distributed, two_banks, tmp_path):
    # A batch of the importer is one INSERT over banks of both workers (one
    # transaction on both: a bulk load, not the per-call path).
    lines = [json.loads(line) for line in (CORPORA / "recurring.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()][:60]
    stream = tmp_path / "two_banks.jsonl"
    stream.write_text("".join(json.dumps({**fact, "bank_id": two_banks[n % 2]}) + "\n"
                              for n, fact in enumerate(lines)), encoding="utf-8")
    summary = import_file(distributed, stream, batch_size=25)
    assert summary.facts == 60 and summary.bad == [] and sorted(summary.banks) == sorted(two_banks)
    for bank in two_banks:
        assert distributed.execute(f"SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = %s",
                                   (bank,)).fetchone()[0] == 30
        assert stats_differences(distributed, bank) == EXACT
    again = import_file(distributed, stream, batch_size=25)
    assert again.facts == 0 and again.skipped_existing == 60


def test_calls_in_a_transaction_block_commit_or_roll_back_together(distributed, two_banks):
    a, b = two_banks
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        with distributed.transaction():
            resolve(distributed, a, ["Rolled Back"])
            resolve(distributed, b, ["Rolled Back"])
            distributed.execute(f"SELECT {SCHEMA}.link_unit(%s, %s, %s::uuid[])", (a, uuid.uuid4(), [uuid.uuid4()]))
    assert entities(distributed, a) == [] and entities(distributed, b) == []
    with distributed.transaction():
        resolve(distributed, a, ["Alex Morgan", "Acme"])
        with pytest.raises(psycopg.errors.InvalidDatetimeFormat):
            with distributed.transaction():  # a savepoint
                resolve(distributed, a, ["Savepoint Name"])
                resolve(distributed, a, [{"text": "x", "event_date": "not a date"}])
        resolve(distributed, a, ["alex morgan", "Berlin"])
    assert entities(distributed, a) == [("Acme", 1), ("Alex Morgan", 2), ("Berlin", 1)]
    assert stats_differences(distributed, a) == EXACT


def test_flush_stats_of_every_bank_is_one_call_per_bank(distributed, two_banks):
    # Calls apply their own statistics; rows queued by other means (here by
    # hand) wait for flush_stats, which visits each bank on its node.
    ids = {bank: resolve(distributed, bank, ["Alex Morgan"])[0][1] for bank in two_banks}
    for bank, entity in ids.items():
        distributed.execute(f"INSERT INTO {SCHEMA}.stats_queue (bank_id, entity_id, increment) VALUES (%s, %s, 2)",
                            (bank, entity))
    assert distributed.execute(f"SELECT * FROM {SCHEMA}.flush_stats()").fetchone() == (2, 0)
    assert [entities(distributed, bank) for bank in two_banks] == [[("Alex Morgan", 3)]] * 2
    assert distributed.execute(f"SELECT * FROM {SCHEMA}.flush_stats(%s)", (two_banks[0],)).fetchone() == (0, 0)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="bank_id: must not be empty"):
        distributed.execute(f"SELECT * FROM {SCHEMA}.flush_stats(' ')")


def test_bank_settings_labels_and_ids_that_forward(distributed, two_banks):
    bank = two_banks[0]
    settings = distributed.execute(f"SELECT {SCHEMA}.configure_bank(%s, '{{\"threshold\": 0.7}}')",
                                   (bank,)).fetchone()[0]
    assert settings["threshold"] == 0.7
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="threshold"):
        distributed.execute(f"SELECT {SCHEMA}.configure_bank(%s, '{{\"threshold\": 7}}')", (bank,))
    distributed.execute(f"SELECT {SCHEMA}.set_entity_labels(%s, %s::jsonb)",
                        (bank, json.dumps({"attributes": [{"key": "topic", "type": "text"}]})))
    schema = distributed.execute(f"SELECT {SCHEMA}.entity_labels_json_schema(%s)", (bank,)).fetchone()[0]
    assert schema["properties"] == {"topic": {"type": "string"}}
    entity = resolve(distributed, bank, ["Alex Morgan"])[0][1]
    assert distributed.execute(f"SELECT {SCHEMA}.current_entity(%s, %s)", (bank, entity)).fetchone()[0] == entity
    assert distributed.execute(f"SELECT {SCHEMA}.current_entity(%s, %s)", (bank, uuid.uuid4())).fetchone()[0] is None


def test_errors_from_the_worker_keep_their_sqlstate_and_message(distributed, two_banks):
    bank = two_banks[1]
    with pytest.raises(psycopg.errors.InvalidParameterValue) as error:
        distributed.execute(f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, '{{}}')", (bank,))
    assert error.value.diag.message_primary.startswith("mentions: must be a JSON array")
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="^mentions: must not be null"):
        distributed.execute(f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, NULL)", (bank,))
    with pytest.raises(psycopg.errors.StringDataRightTruncation, match="^bank_id: is 101 characters long"):
        distributed.execute(f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, '[]')", ("x" * 101,))


def test_the_views_read_every_shard(distributed, two_banks):
    for bank in two_banks:
        distributed.execute(f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) VALUES (%s, '[\"Alex Morgan\", \"Acme\"]')",
                            (bank,))
    rows = distributed.execute(
        f"SELECT bank_id, name, mention_count, degree FROM {SCHEMA}.entity_overview WHERE bank_id = ANY(%s)"
        " ORDER BY bank_id, name", (two_banks,)).fetchall()
    assert rows == sorted((bank, name, 1, 1) for bank in two_banks for name in ("Acme", "Alex Morgan"))
    assert distributed.execute(
        f"SELECT count(*) FROM {SCHEMA}.entity_neighbors WHERE bank_id = ANY(%s)", (two_banks,)).fetchone()[0] == 4


def test_rebuild_stats_runs_on_the_banks_node(distributed, two_banks):
    bank = two_banks[0]
    resolve(distributed, bank, ["Alex Morgan"])
    assert rebuild_differences(distributed, bank) == 0
    assert distributed.execute(f"SELECT ({SCHEMA}.rebuild_stats(%s, false) ->> 'differences')::int",
                               (bank,)).fetchone()[0] == 0


def test_generic_plans_on_is_ignored_distributed(distributed, two_banks):
    # Citus cannot plan a statement generically when its parameters pick the
    # shard: a distributed installation leaves plan_cache_mode alone even when
    # told to switch, on the coordinator and (SET LOCAL propagated) the workers.
    distributed.execute("SET citus.propagate_set_commands = 'local'")
    a, b = two_banks
    with distributed.transaction():
        distributed.execute("SET LOCAL entity_resolver.generic_plans = on")
        for _ in range(2):
            distributed.execute(
                f"INSERT INTO {SCHEMA}.facts (bank_id, mentions) SELECT * FROM unnest(%s::text[], %s::jsonb[])",
                ([a, b, a], [json.dumps(["Alex Morgan", "Acme"]), json.dumps(["Alex Morgan"]),
                             json.dumps(["alex morgan", "Oslo"])]))
            resolve(distributed, a, ["Alex Morgan", "Oslo"])
            distributed.execute(f"SELECT * FROM {SCHEMA}.lookup_mention(%s, 'Alex Morgan')", (b,))
        assert distributed.execute("SELECT current_setting('plan_cache_mode')").fetchone()[0] == "auto"
    assert entities(distributed, a) == [("Acme", 2), ("Alex Morgan", 6), ("Oslo", 4)]
    assert entities(distributed, b) == [("Alex Morgan", 2)]
    for bank in two_banks:
        assert stats_differences(distributed, bank) == EXACT
