"""The committed corpora replayed on the cluster give exactly the single-node figures and bank state.

Both replays are entity_resolver.evaluate.run_eval over bench/corpora (every
fact through INSERT INTO facts, one fact per statement, each checked against
a shadow resolve_mentions in a savepoint): once on a plain PostgreSQL server,
once on the Citus coordinator, whose banks are spread over two workers. The
metrics must be equal, and so must every bank afterwards: its entities and
their statistics, the co-occurrence pairs, the provenance of every mention
and the links, compared by name (entity ids are random).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict

import psycopg
import pytest
from citus_helpers import SCHEMA, TIMINGS, worker_port_of

from entity_resolver.embedded import EmbeddedCluster
from entity_resolver.evaluate import run_eval
from entity_resolver.install import install

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"
# What differs between two replays of the same stream: their duration.
VOLATILE_KEYS = {"seconds", "stream", "eval_banks"}


@pytest.fixture(scope="module")
def single_node_dsn() -> str:
    """A plain PostgreSQL (no Citus) with entity_resolver installed, for the reference replay."""
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-single-", dir="/tmp"))
    root.chmod(0o755)
    cluster = EmbeddedCluster(datadir=root / "pgdata", fsync=False).start()
    try:
        cluster.ensure_database("single")
        with psycopg.connect(cluster.dsn("single"), autocommit=True) as conn:
            install(conn)
        yield cluster.dsn("single")
    finally:
        cluster.destroy()
        shutil.rmtree(root, ignore_errors=True)


def replay(dsn: str, label: str) -> Dict[str, Any]:
    started = time.monotonic()
    result = run_eval(dsn, CORPORA, keep=True)
    TIMINGS.setdefault(f"replay bench/corpora ({label})", time.monotonic() - started)
    return result


def strip(result: Dict[str, Any]) -> Dict[str, Any]:
    """The result without what differs between two replays (durations, bank names)."""
    out = {k: v for k, v in result.items() if k not in VOLATILE_KEYS and k != "families"}
    if "families" in result:
        out["families"] = {name: strip(r) for name, r in result["families"].items()}
    return out


def bank_state(conn: psycopg.Connection, bank: str) -> Dict[str, Any]:
    """Everything the bank holds, by name: entities, pairs, provenance, links, the queue."""
    q = {"b": bank}
    return {
        "entities": conn.execute(
            f"SELECT canonical_name, entity_kind, entity_type, curated, mention_count, first_seen, last_seen"
            f" FROM {SCHEMA}.entities WHERE bank_id = %(b)s ORDER BY lower(canonical_name), 1, 2, 3, 4, 5, 6, 7", q).fetchall(),
        "pairs": conn.execute(
            f"SELECT least(a.canonical_name, b.canonical_name), greatest(a.canonical_name, b.canonical_name),"
            f" c.cooccurrence_count, c.last_cooccurred FROM {SCHEMA}.entity_cooccurrences c"
            f" JOIN {SCHEMA}.entities a ON a.bank_id = c.bank_id AND a.id = c.entity_id_1"
            f" JOIN {SCHEMA}.entities b ON b.bank_id = c.bank_id AND b.id = c.entity_id_2"
            f" WHERE c.bank_id = %(b)s ORDER BY 1, 2, 3, 4", q).fetchall(),
        "mentions": conn.execute(
            f"SELECT m.unit_id, m.ordinal, m.mention, e.canonical_name, m.decision, m.score, m.event_date"
            f" FROM {SCHEMA}.mentions m JOIN {SCHEMA}.entities e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
            f" WHERE m.bank_id = %(b)s ORDER BY 1, 2", q).fetchall(),
        "links": conn.execute(
            f"SELECT u.unit_id, e.canonical_name, u.event_date FROM {SCHEMA}.unit_entities u"
            f" JOIN {SCHEMA}.entities e ON e.bank_id = u.bank_id AND e.id = u.entity_id"
            f" WHERE u.bank_id = %(b)s ORDER BY 1, 2, 3", q).fetchall(),
        "queued": conn.execute(f"SELECT count(*) FROM {SCHEMA}.stats_queue WHERE bank_id = %(b)s", q).fetchone()[0],
    }


@pytest.fixture(scope="module")
def reference(single_node_dsn) -> Dict[str, Any]:
    """The single-node replay of every corpus, fact by fact (banks kept)."""
    return replay(single_node_dsn, "single node")


def test_the_corpora_give_the_single_node_figures_and_bank_state_on_the_cluster(
        citus, distributed, single_node_dsn, reference):
    spread = replay(distributed.info.dsn, "Citus, 2 workers")
    assert reference["trace_mismatches"] == 0 and reference["mentions_scored"] > 5000
    assert strip(spread) == strip(reference)
    placed = set()
    with psycopg.connect(single_node_dsn) as single:
        for family, result in reference["families"].items():
            for stream_bank, bank in result["eval_banks"].items():
                other = spread["families"][family]["eval_banks"][stream_bank]
                placed.add(worker_port_of(distributed, other))
                expected = bank_state(single, bank)
                assert expected["entities"] and expected["queued"] == 0
                assert bank_state(distributed, other) == expected, family
    # The families' banks were spread over both workers.
    assert placed == {w.port for w in citus.workers}


@pytest.mark.parametrize("family", ["same_name", "typos", "hubs"])
def test_facts_inserted_fifty_per_statement_on_the_cluster_decide_as_one_by_one_on_a_single_server(
        distributed, reference, family):
    # The statement trigger runs on the bank's shard with the facts of the
    # statement in their order: each fact is checked against a shadow call
    # made with only the facts before it (trace mismatches), and the figures
    # are the single server's fact-by-fact ones.
    started = time.monotonic()
    result = run_eval(distributed.info.dsn, CORPORA / f"{family}.jsonl", batch=50)
    TIMINGS.setdefault(f"replay {family} 50 facts per statement (Citus)", time.monotonic() - started)
    assert result["trace_mismatches"] == 0
    expected = {k: v for k, v in strip(reference["families"][family]).items() if k != "batch"}
    assert {k: v for k, v in strip(result).items() if k != "batch"} == expected
