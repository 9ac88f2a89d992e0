"""The trigram probe is bank-scoped: other banks' names cost a bank's probe nothing and change nothing.

The trigram index leads with bank_id (migration 0010, btree_gin), so the index
itself intersects a bank's entries with the trigram matches: the heap is
visited for the bank's own rows only, however many other banks share its
names. Speed is measured in bench.banks; here the plan and the answers.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from bench import workloads
from bench.latency import probe_statement
from helpers import plan_nodes

SMALL = 300
OTHERS = 4000


@pytest.fixture
def banks(conn):
    """A small bank and, beside it, a larger one whose names come from the same generator."""
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    small = workloads.build_bank(conn, SMALL, seed=5, bank_id="small")
    # The same generator and seed: every name of the small bank is in the other one too.
    workloads.build_bank(conn, OTHERS, seed=5, bank_id="other")
    return small


def _keys(bank):
    return sorted({n.lower() for n in bank.names[:40]} | {"the team", "maria kalo", "ticket 7"})


def _index_scans(plan):
    return [node for node in plan_nodes(plan) if node.get("Index Name") == "entities_name_trgm_idx"]


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_the_probe_reads_only_its_banks_entries_of_the_trigram_index(conn, banks, plan_cache_mode):
    # PL/Python's prepared probe turns generic after five calls: both plans.
    conn.execute("SET pg_trgm.similarity_threshold = 0.3")
    conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    statement = probe_statement(conn)
    cur = psycopg.ClientCursor(conn)
    cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement,
                {"p1": banks.bank_id, "p2": _keys(banks), "p3": 200})
    plan = cur.fetchone()[0][0]["Plan"]
    scans = _index_scans(plan)
    assert scans, json.dumps(plan)[:2000]
    for scan in scans:
        assert "bank_id" in scan["Index Cond"], scan["Index Cond"]
        # Every key's name is in both banks; the index hands over the small
        # bank's matches only (at most all its rows per key), never the other's.
        assert scan["Actual Rows"] <= SMALL
    other_rows = conn.execute("SELECT count(*) FROM entities WHERE bank_id = 'other'").fetchone()[0]
    assert other_rows == OTHERS


def test_a_banks_candidates_do_not_depend_on_other_banks(conn):
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    small = workloads.build_bank(conn, SMALL, seed=5, bank_id="small")
    mentions = [small.names[20], small.names[31].lower(), "the teem", small.names[40].split(" ")[0]]

    def candidates():
        return [conn.execute("SELECT candidate_id, trigram_similarity, score, decision"
                             " FROM explain_mention('small', %s, '{}', %s)", (m, workloads.NOW)).fetchall()
                for m in mentions]

    alone = candidates()
    assert all(alone)
    workloads.build_bank(conn, OTHERS, seed=5, bank_id="other")
    assert candidates() == alone


def test_a_bank_the_statistics_do_not_know_is_probed_through_the_trigram_index(conn):
    # A bank created after the last ANALYZE (a new database, an import, an eval
    # replay): the planner believes it holds a row or two, and the btrees led
    # by bank_id (the primary key, the unique names) offer its rows cheaply.
    # Tested row by row with %, that is every row of the bank for every key;
    # the probe's bank condition is one only the trigram index answers
    # (migration 0014).
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    conn.execute("ALTER TABLE entities SET (autovacuum_enabled = false)")
    known = workloads.build_bank(conn, SMALL * 3, seed=5, bank_id="known")  # analysed
    conn.execute("INSERT INTO banks (bank_id) VALUES ('new')")
    conn.execute("INSERT INTO entities (bank_id, id, canonical_name, entity_type, entity_kind, mention_count, first_seen, last_seen)"
                 " SELECT 'new', gen_random_uuid(), canonical_name, entity_type, entity_kind, mention_count, first_seen,"
                 " last_seen"
                 " FROM entities WHERE bank_id = 'known'")
    conn.execute("SET pg_trgm.similarity_threshold = 0.3")
    conn.execute("SET plan_cache_mode = force_custom_plan")
    cur = psycopg.ClientCursor(conn)
    cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + probe_statement(conn),
                {"p1": "new", "p2": sorted({n.lower() for n in known.names[:20]}), "p3": 200})
    plan = cur.fetchone()[0][0]["Plan"]
    reads = [node for node in plan_nodes(plan)
             if node.get("Relation Name") == "entities" or "Index Name" in node]
    assert reads and all(node.get("Index Name") == "entities_name_trgm_idx" or node["Node Type"] == "Bitmap Heap Scan"
                         for node in reads), json.dumps(plan)[:3000]
    for scan in _index_scans(plan):
        assert "bank_id" in scan["Index Cond"], scan["Index Cond"]
