"""A throwaway Citus cluster on this machine: a coordinator and N workers.

Each node is an :class:`~entity_resolver.embedded.EmbeddedCluster` (so, as
root, it runs as the same unprivileged OS user, with its data under /tmp,
listening on a free loopback port) with Citus preloaded. Citus keeps its
metadata (the node list, the distributed tables) per database, so a database
is made distributed with :meth:`CitusCluster.create_database`: the database on
every node, ``CREATE EXTENSION citus`` in each, and the workers registered on
the coordinator.

It lives in the package, not under tests/, so that the benchmark
(``python -m bench --citus``, from a checkout) can start one as well; a
production cluster is the user's own (Citus's packages or a managed service),
which ``install --distributed`` only connects to.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from psycopg import sql

from entity_resolver.embedded import EmbeddedCluster, EmbeddedError, find_bindir

# What every node needs beyond the embedded cluster's defaults.
CITUS_SETTINGS = {
    "shared_preload_libraries": "'citus'",
    # A transaction writing on several nodes commits with two-phase commit.
    "max_prepared_transactions": "100",
    # The rebalancer moves shards with logical replication, so writes go on
    # while a bank moves.
    "wal_level": "logical",
    # Four servers on one small machine: the embedded default (256MB) each
    # would be a gigabyte of shared memory for test data of a few megabytes.
    "shared_buffers": "'64MB'",
    # Nodes talk over loopback without TLS. With the default (sslmode=require)
    # CREATE EXTENSION citus would turn ssl on with a generated certificate,
    # via ALTER SYSTEM, in every node's data directory.
    "citus.node_conninfo": "'sslmode=disable'",
}


def server_parameters(bindir: Path) -> set[str]:
    """Names of the configuration parameters the server binaries in ``bindir`` know."""
    try:
        out = subprocess.run([str(bindir / "postgres"), "--describe-config"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {line.split("\t", 1)[0] for line in out.splitlines() if line}


def node_settings(bindir: Path) -> dict[str, str]:
    """CITUS_SETTINGS, and what this server's release needs beyond them."""
    settings = dict(CITUS_SETTINGS)
    if "output_plugin_libraries" in server_parameters(bindir):
        # Releases that list the logical decoding plugins replication may use
        # (PostgreSQL 15.20 has it): Citus splits shards (tenant isolation)
        # through a decoder of its own.
        settings["output_plugin_libraries"] = "'pgoutput, test_decoding, citus'"
    return settings


def citus_installed(bindir: Path | None = None) -> bool:
    """Whether the server binaries in ``bindir`` have the Citus extension's files."""
    bindir = bindir or find_bindir()
    pg_config = bindir / "pg_config"
    try:
        sharedir = subprocess.run([str(pg_config), "--sharedir"], check=True, capture_output=True,
                                  text=True).stdout.strip()
        libdir = subprocess.run([str(pg_config), "--pkglibdir"], check=True, capture_output=True,
                                text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return False
    return (Path(sharedir) / "extension" / "citus.control").exists() and (Path(libdir) / "citus.so").exists()


class CitusCluster:
    """A Citus coordinator and ``workers`` workers, each its own server under ``root``."""

    def __init__(self, root: Path | None = None, workers: int = 2, fsync: bool = False) -> None:
        if workers < 1:
            raise ValueError("workers: a Citus cluster needs at least one worker")
        self.bindir = find_bindir()
        if not citus_installed(self.bindir):
            raise EmbeddedError(
                f"Citus is not installed for the PostgreSQL server in {self.bindir}: install "
                "Citus (its packages, or build it from source) on every node"
            )
        self._own_root = root is None
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="entity_resolver-citus-", dir="/tmp"))
        self.root.mkdir(parents=True, exist_ok=True)
        # The server user must reach its directories under root.
        self.root.chmod(0o755)
        self.fsync = fsync
        self.settings = node_settings(self.bindir)
        self.coordinator = self._node("coordinator")
        self.workers = [self._node(f"worker{i}") for i in range(1, workers + 1)]
        self.databases: list[str] = []

    def _node(self, name: str) -> EmbeddedCluster:
        return EmbeddedCluster(datadir=self.root / name / "pgdata", fsync=self.fsync,
                               extra_settings=dict(self.settings))

    @property
    def nodes(self) -> list[EmbeddedCluster]:
        return [self.coordinator, *self.workers]

    def dsn(self, dbname: str = "postgres") -> str:
        """Connection string of the coordinator's database (where applications connect)."""
        return self.coordinator.dsn(dbname)

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> "CitusCluster":
        """Initialise (if needed) and start every node; initdb and startup run in parallel."""
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            list(pool.map(lambda node: node.start(), self.nodes))
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def destroy(self) -> None:
        """Stop every node and delete the data (the whole root when this object made it)."""
        for node in self.nodes:
            node.destroy()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- databases ---------------------------------------------------------
    def create_database(self, dbname: str) -> str:
        """Create ``dbname`` on every node and make it a Citus database; returns the coordinator DSN."""
        for node in self.nodes:
            node.ensure_database(dbname)
            with psycopg.connect(node.dsn(dbname), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with psycopg.connect(self.coordinator.dsn(dbname), autocommit=True) as conn:
            # Workers connect back to the coordinator (e.g. for reference
            # tables it holds), so it needs an address they can reach.
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (self.coordinator.port,))
            for worker in self.workers:
                self._add_node(conn, worker)
        self.databases.append(dbname)
        return self.dsn(dbname)

    def drop_database(self, dbname: str) -> None:
        """Drop ``dbname`` on every running node."""
        for node in self.nodes:
            if node.running():
                with psycopg.connect(node.dsn(), autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
        if dbname in self.databases:
            self.databases.remove(dbname)

    @staticmethod
    def _add_node(conn: psycopg.Connection, worker: EmbeddedCluster) -> None:
        conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))

    def start_worker(self) -> EmbeddedCluster:
        """Start one more node, with no database and known to no coordinator (an operator's new machine)."""
        worker = self._node(f"worker{len(self.workers) + 1}")
        worker.start()
        self.workers.append(worker)
        return worker

    def add_worker(self) -> EmbeddedCluster:
        """Start one more worker and register it in every Citus database of the cluster.

        Holds no shards until the shards are rebalanced (citus_rebalance_start).
        """
        worker = self.start_worker()
        for dbname in self.databases:
            worker.ensure_database(dbname)
            with psycopg.connect(worker.dsn(dbname), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
            with psycopg.connect(self.coordinator.dsn(dbname), autocommit=True) as conn:
                self._add_node(conn, worker)
        return worker

    def worker_by_port(self, port: int) -> EmbeddedCluster:
        for worker in self.workers:
            if worker.port == port:
                return worker
        raise KeyError(f"no worker listens on port {port}")
