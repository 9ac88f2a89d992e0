"""The trigram probe is bank-scoped: other banks' names cost a bank's probe nothing and change nothing.

The trigram index leads with bank_id (migration 0010, btree_gin), so the index
itself intersects a bank's entries with the trigram matches: the heap is
visited for the bank's own rows only, however many other banks share its
names. Speed is measured in bench.banks; here the plan and the answers.
A bank the planner's statistics do not know yet is probed and looked up by
name through the same indexes (migration 0014, per-key look-ups).
"""

from __future__ import annotations

import json

import probe
import psycopg
import pytest

from bench import workloads
from bench.latency import probe_statement
from helpers import plan_nodes, statement_plan

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


@pytest.fixture
def unknown_bank(conn):
    """Bank "new": a copy of bank "known" (names and graph) made after the last ANALYZE; known's names.

    A bank created after the last ANALYZE (a new database, an import, an eval
    replay): the planner believes it holds a row or two, and the btrees led by
    bank_id (the primary key, the unique names, the pair keys) offer all its
    rows cheaply.
    """
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    conn.execute("ALTER TABLE entities SET (autovacuum_enabled = false)")
    conn.execute("ALTER TABLE entity_cooccurrences SET (autovacuum_enabled = false)")
    known = workloads.build_bank(conn, SMALL * 3, seed=5, bank_id="known")  # analysed
    conn.execute("INSERT INTO banks (bank_id) VALUES ('new')")
    conn.execute("INSERT INTO entities (bank_id, id, canonical_name, entity_type, entity_kind, mention_count,"
                 " first_seen, last_seen)"
                 " SELECT 'new', gen_random_uuid(), canonical_name, entity_type, entity_kind, mention_count,"
                 " first_seen, last_seen FROM entities WHERE bank_id = 'known'")
    conn.execute("""
        INSERT INTO entity_cooccurrences (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)
        SELECT 'new', least(n1.id, n2.id), greatest(n1.id, n2.id), c.cooccurrence_count, c.last_cooccurred
          FROM entity_cooccurrences AS c
          JOIN entities AS k1 ON k1.bank_id = c.bank_id AND k1.id = c.entity_id_1
          JOIN entities AS k2 ON k2.bank_id = c.bank_id AND k2.id = c.entity_id_2
          JOIN entities AS n1 ON n1.bank_id = 'new' AND n1.canonical_name = k1.canonical_name
                             AND n1.entity_type IS NOT DISTINCT FROM k1.entity_type
          JOIN entities AS n2 ON n2.bank_id = 'new' AND n2.canonical_name = k2.canonical_name
                             AND n2.entity_type IS NOT DISTINCT FROM k2.entity_type
         WHERE c.bank_id = 'known'""")
    conn.execute("SET plan_cache_mode = force_custom_plan")
    return sorted({n.lower() for n in known.names[:20]})


def test_a_bank_the_statistics_do_not_know_is_probed_through_the_trigram_index(conn, unknown_bank):
    # Tested row by row with %, that is every row of the bank for every key;
    # the probe's bank condition is one only the trigram index answers
    # (migration 0014).
    conn.execute("SET pg_trgm.similarity_threshold = 0.3")
    cur = psycopg.ClientCursor(conn)
    cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + probe_statement(conn),
                {"p1": "new", "p2": unknown_bank, "p3": 200})
    plan = cur.fetchone()[0][0]["Plan"]
    reads = [node for node in plan_nodes(plan)
             if node.get("Relation Name") == "entities" or "Index Name" in node]
    assert reads and all(node.get("Index Name") == "entities_name_trgm_idx" or node["Node Type"] == "Bitmap Heap Scan"
                         for node in reads), json.dumps(plan)[:3000]
    for scan in _index_scans(plan):
        assert "bank_id" in scan["Index Cond"], scan["Index Cond"]


def _entity_reads(plan: dict) -> list:
    return [node for node in plan_nodes(plan) if node.get("Relation Name") == "entities"
            or str(node.get("Index Name", "")).startswith("entities_")]


@pytest.mark.parametrize("statement", ["SQL_EXACT", "SQL_EXACT_MEMORY", "SQL_CONTEXT", "SQL_CONTEXT_PENDING"])
def test_names_of_a_bank_the_statistics_do_not_know_are_looked_up_one_index_descent_each(
        conn, unknown_bank, statement):
    # With `folded(name) = ANY(keys)` the planner took the unique index's bank
    # prefix and filtered every row of the bank; one key at a time, each name
    # is an index condition.
    query = getattr(probe, statement)
    if statement.startswith("SQL_EXACT"):
        types, args = ["text", "text[]", "text[]", "text[]", "float8"], ["new", unknown_bank, [], unknown_bank, 0.8]
        if statement == "SQL_EXACT":
            types, args = types[:3], args[:3]
    else:
        ids = [r[0] for r in conn.execute("SELECT id FROM entities WHERE bank_id = 'new' ORDER BY id LIMIT 20")]
        types, args = (["text", "uuid[]", "text[]", "uuid[]", "uuid[]", "uuid[]"],
                       ["new", ids, unknown_bank, ids[:3], ids[3:6], []])
    plan = statement_plan(conn, query, types, args, analyze=True)
    by_name = [n for n in _entity_reads(plan) if n.get("Index Name") == "entities_bank_folded_name_key"
               and "(id =" not in n.get("Filter", "")]   # not the remembered entity: see the next test
    assert by_name, json.dumps(plan)[:3000]
    for node in by_name:
        assert "folded(canonical_name) =" in node["Index Cond"], node["Index Cond"]
        assert node.get("Rows Removed by Filter", 0) == 0
    for node in plan_nodes(plan):
        if node.get("Index Name") == "mentions_memory_idx":
            assert "folded(mention) =" in node["Index Cond"], node["Index Cond"]


# The resolver runs its statements with generic plans once the tables have
# statistics (entity_resolver.generic_plans = auto, finding 10): a generic
# plan estimates the bank at one over the number of banks and reads the
# remembered entity by its key. A custom plan (generic_plans = off, tables
# analysed below 1000 rows, Citus) believes the unknown bank a row or two and
# finds its bank prefix in another btree as cheap: still open (issue 16 note;
# docs/benchmarks.md findings 14 and 17).
@pytest.mark.parametrize("plan_cache_mode", [
    "force_generic_plan",
    pytest.param("force_custom_plan", marks=pytest.mark.xfail(
        strict=True, reason="open: believing the bank a row or two, a custom plan finds reading it through a "
                            "bank prefix as cheap as descending the primary key (issue 16 note)")),
])
def test_the_remembered_entity_of_a_bank_the_statistics_do_not_know_is_read_by_its_id(
        conn, unknown_bank, plan_cache_mode):
    conn.execute("INSERT INTO facts (bank_id, content, mentions) VALUES ('new', 'x', %s)",
                 (json.dumps(unknown_bank[:5]),))
    conn.execute("ALTER TABLE mentions SET (autovacuum_enabled = false)")
    conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    plan = statement_plan(conn, probe.SQL_EXACT_MEMORY, ["text", "text[]", "text[]", "text[]", "float8"],
                          ["new", unknown_bank, [], unknown_bank, 0.0], analyze=True)
    by_id = [n for n in _entity_reads(plan) if "(id =" in n.get("Filter", "") + n.get("Index Cond", "")
             and n.get("Actual Loops", 0) > 0]
    assert by_id, json.dumps(plan)[:3000]
    for node in by_id:
        assert node.get("Index Name") == "entities_pkey" and "id =" in node["Index Cond"], json.dumps(node)


def test_the_context_with_pending_statistics_reads_pairs_through_their_indexes(conn):
    # The pairs a call touches, when this transaction has queued statistics:
    # one OR of five conditions was a sequential scan of every bank's pairs.
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    small = workloads.build_bank(conn, SMALL, seed=5, bank_id="small")
    workloads.build_bank(conn, OTHERS, seed=5, bank_id="other")
    ids = [r[0] for r in conn.execute("SELECT id FROM entities WHERE bank_id = 'small' ORDER BY id LIMIT 20")]
    names = sorted({n.lower() for n in small.names[:20]})
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")
        plan = statement_plan(conn, probe.SQL_CONTEXT_PENDING, ["text", "uuid[]", "text[]", "uuid[]", "uuid[]", "uuid[]"],
                              ["small", ids, names, ids[:3], ids[3:6], []], analyze=True)
        pairs = [n for n in plan_nodes(plan) if n.get("Relation Name") == "entity_cooccurrences"
                 or str(n.get("Index Name", "")).startswith("entity_cooccurrences")]
        assert pairs and all("Index Name" in n or n["Node Type"] == "Bitmap Heap Scan" for n in pairs), \
            (mode, json.dumps(plan)[:3000])
        assert all("entity_id" in n.get("Index Cond", "entity_id") for n in pairs), (mode, json.dumps(plan)[:3000])
