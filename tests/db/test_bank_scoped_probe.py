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
