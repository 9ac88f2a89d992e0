"""The harness itself: a coordinator and workers that are a working Citus cluster."""

from __future__ import annotations

import os
import pwd

import psycopg

from entity_resolver.embedded import SERVER_USER


def test_every_node_preloads_citus_and_has_the_extension(citus, citus_dsn):
    dbname = psycopg.conninfo.conninfo_to_dict(citus_dsn)["dbname"]
    for node in citus.nodes:
        with psycopg.connect(node.dsn(dbname)) as conn:
            assert conn.execute("SHOW shared_preload_libraries").fetchone()[0] == "citus"
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()


def test_workers_are_registered_primaries_with_synced_metadata(citus, coordinator):
    rows = coordinator.execute(
        "SELECT nodeport, noderole, isactive, hasmetadata, metadatasynced, shouldhaveshards"
        " FROM pg_dist_node ORDER BY nodeport"
    ).fetchall()
    by_port = {r[0]: r[1:] for r in rows}
    for worker in citus.workers:
        assert by_port[worker.port] == ("primary", True, True, True, True)
    # The coordinator is known to the workers (reference tables live there
    # too) but holds no shards of distributed tables.
    assert by_port[citus.coordinator.port][-1] is False
    assert coordinator.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()[0] == 2


def test_nodes_run_as_the_unprivileged_server_user_with_data_under_tmp(citus):
    expected = SERVER_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    for node in citus.nodes:
        assert str(node.datadir).startswith("/tmp/")
        assert pwd.getpwuid(node.datadir.stat().st_uid).pw_name == expected
        with psycopg.connect(node.dsn()) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"


def test_a_distributed_table_spreads_its_shards_over_both_workers(citus, coordinator):
    coordinator.execute("CREATE TABLE t (k text PRIMARY KEY, v int)")
    coordinator.execute("SELECT create_distributed_table('t', 'k', shard_count => 4)")
    coordinator.execute("INSERT INTO t SELECT 'k' || i, i FROM generate_series(1, 100) AS i")
    ports = {r[0] for r in coordinator.execute(
        "SELECT DISTINCT nodeport FROM pg_dist_shard_placement AS p"
        " JOIN pg_dist_shard AS s USING (shardid) WHERE s.logicalrelid = 't'::regclass")}
    assert ports == {w.port for w in citus.workers}
    assert coordinator.execute("SELECT sum(v) FROM t").fetchone()[0] == 5050
