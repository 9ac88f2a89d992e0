"""docs/scaling.md is a runbook: its marked blocks run, in order, on a cluster of their own.

A block ```sql {every node}``` runs in the application's database of every node
(coordinator and workers) through psql; ```sql {coordinator}``` on the
coordinator, with the nodes' addresses as psql variables (:'worker1_host',
:worker1_port, ...); ```sql {new worker}``` on a worker started for it (the
third); ```sh {shell}``` through bash, with $COORDINATOR the coordinator's
connection string and this checkout's entity-resolver on the PATH. Every block
must succeed; then the state they promise is checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from citus_helpers import SCHEMA, TIMINGS, worker_port_of

from entity_resolver.citus_cluster import CITUS_SETTINGS
from entity_resolver.install import DEFAULT_SHARD_COUNT, is_distributed

DOC = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
BLOCK = re.compile(r"^ *```(sql|sh) \{([a-z ]+)\}\n(.*?)^ *```", re.S | re.M)
DATABASE = "app"


def blocks() -> list[tuple[str, str, str]]:
    """(language, where, text) of every runnable block of the runbook, in order."""
    found = [(m.group(1), m.group(2), re.sub(r"(?m)^  ", "", m.group(3))) for m in BLOCK.finditer(
        DOC.read_text(encoding="utf-8"))]
    assert {where for _, where, _ in found} == {"every node", "coordinator", "new worker", "shell"}
    return found


def test_the_documented_postgresql_conf_is_what_the_test_nodes_run_with():
    text = DOC.read_text(encoding="utf-8")
    for name in ("shared_preload_libraries", "max_prepared_transactions", "wal_level"):
        assert f"{name} = {CITUS_SETTINGS[name]}" in text, name


def psql(bindir: Path, dsn: str, text: str, variables: dict[str, str]) -> str:
    args = [str(bindir / "psql"), "-X", "-v", "ON_ERROR_STOP=1", dsn]
    for name, value in variables.items():
        args += ["-v", f"{name}={value}"]
    done = subprocess.run(args, input=text, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (text, done.stdout, done.stderr)
    return done.stdout + done.stderr


def test_the_runbook_builds_a_distributed_installation_that_works_grows_and_isolates(private_cluster):
    cluster = private_cluster
    for node in cluster.nodes:
        node.ensure_database(DATABASE)
    cluster.databases.append(DATABASE)
    coordinator = cluster.dsn(DATABASE)
    variables = {"coordinator_host": "127.0.0.1", "coordinator_port": str(cluster.coordinator.port)}
    for n, worker in enumerate(cluster.workers, 1):
        variables.update({f"worker{n}_host": "127.0.0.1", f"worker{n}_port": str(worker.port)})
    env = dict(os.environ, COORDINATOR=coordinator,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    outputs: list[str] = []
    started = time.monotonic()
    for language, where, text in blocks():
        if language == "sh":
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, (text, done.stdout, done.stderr)
            outputs.append(done.stdout + done.stderr)
        elif where == "every node":
            for node in cluster.nodes:
                outputs.append(psql(cluster.bindir, node.dsn(DATABASE), text, variables))
        elif where == "new worker":
            worker = cluster.start_worker()
            worker.ensure_database(DATABASE)
            variables.update({f"worker{len(cluster.workers)}_host": "127.0.0.1",
                              f"worker{len(cluster.workers)}_port": str(worker.port)})
            outputs.append(psql(cluster.bindir, worker.dsn(DATABASE), text, variables))
        else:
            outputs.append(psql(cluster.bindir, coordinator, text, variables))
    TIMINGS.setdefault("docs/scaling.md, every block", time.monotonic() - started)

    with psycopg.connect(coordinator, autocommit=True) as conn:
        assert is_distributed(conn)
        assert conn.execute("SELECT DISTINCT shard_count FROM citus_tables WHERE table_name::text = %s",
                            (f"{SCHEMA}.entities",)).fetchone()[0] >= DEFAULT_SHARD_COUNT
        assert conn.execute(f"SELECT canonical_name FROM {SCHEMA}.lookup_mention('team', 'Alex', '{{Acme}}')"
                            ).fetchone()[0] == "Alex Morgan"
        # The third worker took shards; the bank got a shard of its own.
        third = cluster.workers[2]
        assert conn.execute("SELECT count(*) FROM citus_shards WHERE nodeport = %s", (third.port,)).fetchone()[0] > 0
        assert conn.execute("SELECT state FROM citus_rebalance_status()").fetchone()[0] == "finished"
        shard = conn.execute("SELECT shardminvalue = shardmaxvalue FROM pg_dist_shard WHERE shardid ="
                             " get_shard_id_for_distribution_column('entity_resolver.banks', 'team')").fetchone()[0]
        assert shard is True
        # The delegation proof the runbook shows: the call went whole to a
        # worker (the bank's, then: it has moved since).
        shown = next(out for out in outputs if "resolve_mention_delegated" in out)
        server = shown.split("resolve_mention_delegated", 1)[1].split("on server ", 1)[1].split()[0]
        assert server in {f"postgres@127.0.0.1:{w.port}" for w in cluster.workers[:2]}
        assert worker_port_of(conn, "team") in {w.port for w in cluster.workers}
        assert conn.execute(f"SELECT mention_count FROM {SCHEMA}.entities WHERE bank_id = 'team'"
                            " AND canonical_name = 'Alex Morgan'").fetchone()[0] == 2
    # The role bound to the bank reads it, and nothing else, on every node.
    with psycopg.connect(coordinator, autocommit=True) as conn:
        conn.execute(f"SELECT * FROM {SCHEMA}.resolve_mentions('other-bank', '[\"Alex Morgan\"]')")
    for node in cluster.nodes:
        with psycopg.connect(node.dsn(DATABASE), user="team_app") as conn:
            assert {r[0] for r in conn.execute(f"SELECT DISTINCT bank_id FROM {SCHEMA}.entities")} == {"team"}
