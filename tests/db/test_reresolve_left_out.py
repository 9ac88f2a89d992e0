"""reresolve's plan (sql/058_reresolve.sql) made faster, deciding the same: where a fact's
entities and their pairs hold the record's numbers, the left-out changes only what a
decision reads (last_seen where the fact's date was it, the pairs only it made) instead of
recounting its entities and their pairs from the record; and a name's
trigram probe is read once per plan (plpython/reresolve.py, PlanProber). The plan must be
the one made before, move for move: each test compares it with the plan made with every
entity recounted and every name probed (FORMER, in a transaction rolled back)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.reresolve_speed import SQL_FORMER as FORMER   # the plan as it was made before
from entity_resolver import evaluate

from corrections_helpers import ER, call, differences, snapshot
from helpers import nested_plans, plan_nodes
from shared import INTERNAL

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"
# The larger families take a minute or more each: slow.
LARGE = {"febrl1_sample", "febrl3_sample", "recurring", "typed_homographs", "org_suffixes", "nicknames_initials"}
FAMILIES = [pytest.param(p.stem, marks=[pytest.mark.slow] if p.stem in LARGE else [])
            for p in sorted(CORPORA.glob("*.jsonl"))]


def recounted_plan(conn, bank, **args):
    """reresolve's plan as it was made before (FORMER), in a transaction rolled back."""
    with conn.transaction(force_rollback=True):
        for stmt in FORMER:
            conn.execute(stmt)
        return call(conn, "reresolve", bank, **args)


def unrecorded(conn, bank):
    return conn.execute(f"SELECT {INTERNAL}._reresolve_unrecorded(%s)", (bank,)).fetchone()[0]


def unrecorded_among(conn, bank, ids):
    """The scoped cover (a scoped plan's: reresolve_queued, entity_ids, since)."""
    return conn.execute(f"SELECT {INTERNAL}._reresolve_unrecorded(%s, %s::uuid[])", (bank, ids)).fetchone()[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_on_a_corpus_bank_subtracting_plans_what_recounting_plans(conn, family):
    banks_file = CORPORA / f"{family}.banks.json"
    res = evaluate.run_eval(conn, CORPORA / f"{family}.jsonl", ER, keep=True,
                            banks_file=banks_file if banks_file.exists() else None)
    try:
        for bank in res["eval_banks"].values():
            # A bank written through the facts trigger holds the record's numbers.
            assert unrecorded(conn, bank) == []
            before = snapshot(conn, bank)
            plan = call(conn, "reresolve", bank)
            assert plan == recounted_plan(conn, bank)
            assert snapshot(conn, bank) == before
            # Applied, the same moves (in a transaction rolled back, as the
            # recounted plan), and the numbers the record's.
            with conn.transaction(force_rollback=True):
                applied = call(conn, "reresolve", bank, dry_run=False)
                assert applied["moves"] == plan["moves"] and applied["kept"] == plan["kept"]
                assert applied["entities_removed"] == plan["entities_removed"]
                report = differences(conn, bank)
                assert (report["differences"], report["orphans"]) == (0, []), report
    finally:
        evaluate._cleanup(conn, ER, list(res["eval_banks"].values()))


def four_facts(conn, bank):
    """A bare Alex, Alex Kim, React, Sprint 14 and Priya over four days: {name: entity id}."""
    for days, mentions in [(0, ["Alex", "React"]), (1, ["Alex Kim", "React"]), (2, ["Alex Kim", "Sprint 14"]),
                           (3, ["Alex", "Priya"])]:
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date)"
                     " VALUES (%s, %s, '2026-01-01'::timestamptz + %s * interval '1 day')",
                     (bank, json.dumps(mentions), days))
    return dict(conn.execute(f"SELECT canonical_name, id FROM {ER}.entities WHERE bank_id = %s", (bank,)).fetchall())


def test_an_entity_whose_pair_is_not_the_records_is_recounted(conn):
    """A pair written by hand (an import of a graph) is not the record's: its entities' facts are
    left out by the recount, which drops that pair, as before."""
    ids = four_facts(conn, "graph")
    a, b = sorted([ids["Alex"], ids["Sprint 14"]])
    conn.execute(f"INSERT INTO {ER}.entity_cooccurrences (bank_id, entity_id_1, entity_id_2, cooccurrence_count)"
                 " VALUES ('graph', %s, %s, 5)", (a, b))
    assert sorted(unrecorded(conn, "graph")) == sorted([a, b])
    assert call(conn, "reresolve", "graph") == recounted_plan(conn, "graph")
    # Scoped, the cover of some entities: the bank's, within them.
    every = sorted(str(i) for i in ids.values())
    assert unrecorded_among(conn, "graph", every) == sorted([a, b])
    assert unrecorded_among(conn, "graph", [str(ids["Alex"]), str(ids["React"])]) == [ids["Alex"]]
    assert unrecorded_among(conn, "graph", [str(ids["React"])]) == []
    assert (call(conn, "reresolve", "graph", since="2026-01-02")
            == recounted_plan(conn, "graph", since="2026-01-02"))


def test_an_entity_whose_numbers_are_not_the_records_is_recounted(conn):
    """An entity's mention count or last seen written by hand (an import) is not the record's:
    the facts of that entity are left out by the recount, which puts them right, as before."""
    ids = four_facts(conn, "numbers")
    assert unrecorded(conn, "numbers") == []
    conn.execute(f"UPDATE {ER}.entities SET last_seen = '2030-01-01' WHERE bank_id = 'numbers' AND id = %s",
                 (ids["React"],))
    conn.execute(f"UPDATE {ER}.entities SET mention_count = 9 WHERE bank_id = 'numbers' AND id = %s",
                 (ids["Priya"],))
    assert unrecorded(conn, "numbers") == sorted([ids["React"], ids["Priya"]])
    assert unrecorded_among(conn, "numbers", [str(ids["React"]), str(ids["Alex"])]) == [ids["React"]]
    assert call(conn, "reresolve", "numbers") == recounted_plan(conn, "numbers")


def test_with_statistics_queued_every_entity_is_recounted(conn):
    with conn.transaction(force_rollback=True):
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('queued', %s)",
                     (json.dumps(["Alex Kim", "React"]),))
        assert conn.execute(f"SELECT count(*) FROM {ER}.stats_queue WHERE bank_id = 'queued'").fetchone()[0] > 0
        assert unrecorded(conn, "queued") is None
        assert unrecorded_among(conn, "queued", []) is None


EXAMPLES = int(os.environ.get("ER_PROPERTY_EXAMPLES", "100"))
POOL = ["Alex", "Alex Kim", "Alex Morgan", "Acme", "Acme Inc", "React", "Priya", "Sprint 14", "alex kim"]
FACTS = st.lists(st.tuples(st.integers(0, 90), st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True)),
                 min_size=2, max_size=10)


@settings(max_examples=max(10, EXAMPLES // 5), deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(facts=FACTS)
def test_on_any_bank_subtracting_plans_what_recounting_plans(conn, facts):
    bank = f"any-{uuid.uuid4().hex[:8]}"
    for days, mentions in facts:
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date)"
                     " VALUES (%s, %s, '2026-01-01'::timestamptz + %s * interval '1 day')",
                     (bank, json.dumps(mentions), days))
    assert unrecorded(conn, bank) == []
    assert call(conn, "reresolve", bank) == recounted_plan(conn, bank)
    # Some pairs made wrong by hand (an imported graph): the scoped cover is the bank's, within any set.
    ids = [r[0] for r in conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = %s ORDER BY id", (bank,))]
    for x, y in zip(ids[::3], ids[1::3]):
        conn.execute(f"INSERT INTO {ER}.entity_cooccurrences AS c (bank_id, entity_id_1, entity_id_2,"
                     " cooccurrence_count) VALUES (%s, %s, %s, 7) ON CONFLICT (bank_id, entity_id_1, entity_id_2)"
                     " DO UPDATE SET cooccurrence_count = c.cooccurrence_count + 7", (bank, min(x, y), max(x, y)))
    # And some entities' numbers (a count, a last seen).
    for n, x in enumerate(ids[2::3]):
        column = "mention_count = mention_count + 1" if n % 2 else "last_seen = last_seen + interval '1 day'"
        conn.execute(f"UPDATE {ER}.entities SET {column} WHERE bank_id = %s AND id = %s", (bank, x))
    whole = set(unrecorded(conn, bank))
    assert set(ids[2::3]) <= whole
    for some in (ids, ids[::2], ids[1::2], ids[:1]):
        assert unrecorded_among(conn, bank, some) == sorted(whole & set(some))
    first = conn.execute(f"SELECT min(event_date) + interval '1 day' FROM {ER}.facts WHERE bank_id = %s",
                         (bank,)).fetchone()[0]
    assert call(conn, "reresolve", bank, since=first) == recounted_plan(conn, bank, since=first)


def test_in_a_bank_the_statistics_do_not_know_orphans_are_found_once_per_statement(conn):
    # The statistics know a bank of 600 entities; a bank made since is estimated at a row or so, and a
    # DELETE of its orphans was planned as a read of the bank by its prefix with _orphan_ids(...) in
    # the filter: one call per entity of the bank, for every fact reresolve left out (1,001 facts in a
    # new bank: 130 s). Counted by pg_stat_xact_user_functions: a handful per fact, not one per entity.
    conn.execute(f"INSERT INTO {ER}.banks (bank_id) VALUES ('known')")
    conn.execute(f"INSERT INTO {ER}.entities (bank_id, id, canonical_name)"
                 " SELECT 'known', md5('e' || g)::uuid, 'known ' || g FROM generate_series(1, 600) AS g")
    conn.execute(f"ANALYZE {ER}.entities")
    n = 120
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, fact_id, mentions, event_date)"
                 " SELECT 'fresh', 'f' || g, jsonb_build_array(initcap(left(md5(g::text), 8)), 'Topic ' || g %% 7),"
                 " '2026-01-01'::timestamptz + g * interval '1 hour' FROM generate_series(1, %s) AS g", (n,))
    conn.execute("SET track_functions = 'all'")

    def counted() -> int:
        return conn.execute("SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
                            " WHERE funcname = '_orphan_ids'").fetchone()[0]

    def orphan_calls(*statements: str) -> int:
        before = counted()
        with conn.transaction(force_rollback=True):
            for statement in statements:
                conn.execute(statement)
            return counted() - before

    assert 0 < orphan_calls(f"SELECT {ER}.reresolve('fresh')") <= 3 * n
    assert 0 < orphan_calls(f"SELECT {ER}.rebuild_stats('fresh', dry_run => false)") <= 3
    forgotten = orphan_calls(f"DELETE FROM {ER}.facts WHERE bank_id = 'fresh' AND fact_id <= 'f5'",
                             f"SELECT * FROM {ER}.flush_stats('fresh')")
    assert 0 < forgotten <= 3


def test_in_a_bank_the_statistics_do_not_know_no_statement_reads_the_bank_in_a_loop(conn):
    # The statistics know only a bank gone since (a replay, analysed, dropped): with custom plans a new
    # bank is estimated at a row or so, and the left-out's recount of pairs joined its units to the
    # bank's links read whole once per unit (the recurring family's 307 facts: 64-70 s to re-resolve,
    # 1.7 s on generic plans). reresolve runs on generic plans (the bank estimated from the number of
    # banks): no node then reads more than a few rows per link of the bank.
    gone = evaluate.run_eval(conn, CORPORA / "hubs.jsonl", ER, keep=True)
    conn.execute(f"ANALYZE {ER}.facts, {ER}.entities, {ER}.unit_entities, {ER}.mentions, {ER}.entity_cooccurrences")
    evaluate._cleanup(conn, ER, list(gone["eval_banks"].values()))
    res = evaluate.run_eval(conn, CORPORA / "recurring.jsonl", ER, keep=True)
    [bank] = res["eval_banks"].values()
    links = conn.execute(f"SELECT count(*) FROM {ER}.unit_entities WHERE bank_id = %s", (bank,)).fetchone()[0]
    plans = nested_plans(conn, analyze=True)
    assert call(conn, "reresolve", bank)["whole_entities"] is True
    worst = max(((node.get("Actual Rows", 0) * node.get("Actual Loops", 1), q[:200])
                 for q, p in plans() for node in plan_nodes(p)), key=lambda x: x[0])
    assert worst[0] <= 10 * links, worst
