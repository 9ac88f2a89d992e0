"""The command line next to running writers: commands install nothing when the installed
version is current, and `install` itself waits for writers instead of deadlocking with them."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver.cli import app

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "ENTITY_RESOLVER_DATADIR": None,
             "COLUMNS": "200"}
WRITERS = 4


class Writers:
    """Threads, each on its own connection, inserting one fact per transaction until stopped."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.stop = threading.Event()
        self.committed = [0] * WRITERS
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(w,)) for w in range(WRITERS)]

    def _run(self, w: int) -> None:
        # Names of their own: the writers do not wait for one another, only for
        # what the commands under test do.
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                n = 0
                while not self.stop.is_set():
                    names = [f"Writer{w} Topic{(n + k) % 17}" for k in range(3)]
                    conn.execute("INSERT INTO entity_resolver.facts (bank_id, content, mentions)"
                                 " VALUES ('team', %s, %s)", (f"w{w} fact {n}", json.dumps(names)))
                    self.committed[w] += 1
                    n += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def __enter__(self) -> "Writers":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(120)


def run_commands_while_writing(dsn: str, where: list[str], rounds: int) -> tuple[Writers, list]:
    """Read, explain, resolve and install repeatedly next to the writers; return (writers, failures)."""
    runner = CliRunner()
    # `neighbors` needs an entity that exists: which of the writers' names become
    # entities depends on how their facts interleave ("Writer2 Topic5" may resolve
    # to "Writer0 Topic5" or "Writer2 Topic4"), so the test stores one of its own first.
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("INSERT INTO entity_resolver.facts (bank_id, content, mentions)"
                  " VALUES ('team', 'seed', '[\"Ada Lovelace\", \"Charles Babbage\"]')")
    commands = [["entities", "team", "--json"], ["explain", "team", "Writer1 Topic3", "--json"],
                ["resolve", "team", "Standalone Name", "--json"], ["neighbors", "team", "Ada Lovelace", "--json"],
                ["banks", "--json"]]
    failures = []
    with Writers(dsn) as writers:
        while sum(writers.committed) < WRITERS * 3 and not writers.errors:
            time.sleep(0.01)   # every writer is under way
        for _ in range(rounds):
            for command in commands + [["install", "--json"]]:
                result = runner.invoke(app, command + where, env=CLEAN_ENV)
                if result.exit_code != 0:
                    failures.append((command, result.exit_code, result.output))
    return writers, failures


def test_commands_and_install_next_to_four_writers_never_fail(conn):
    i = conn.info
    dsn = f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"
    writers, failures = run_commands_while_writing(dsn, ["--dsn", dsn], rounds=4)
    assert failures == []
    assert writers.errors == []
    assert min(writers.committed) > 0
    stored = conn.execute("SELECT count(*) FROM entity_resolver.facts WHERE content LIKE 'w%'").fetchone()[0]
    assert stored == sum(writers.committed)


def proc_row_versions(dsn: str) -> list:
    """The catalog row versions of our functions: an install rewrites every one of them."""
    with psycopg.connect(dsn) as c:
        return c.execute("SELECT p.oid, p.xmin::text FROM pg_proc p"
                         " WHERE p.pronamespace IN ('entity_resolver'::regnamespace,"
                         " 'entity_resolver_internal'::regnamespace) ORDER BY 1").fetchall()


@pytest.mark.slow
def test_on_the_embedded_cluster_commands_install_only_when_the_version_differs():
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-clitest-", dir="/tmp"))
    os.chmod(root, 0o755)
    where = ["--data-dir", str(root / "pgdata")]
    runner = CliRunner()
    try:
        started = runner.invoke(app, ["db", "start", "--json"] + where, env=CLEAN_ENV)
        assert started.exit_code == 0, started.output
        dsn = json.loads(started.stdout)["dsn"]
        before = proc_row_versions(dsn)
        assert runner.invoke(app, ["entities", "team"] + where, env=CLEAN_ENV).exit_code == 1  # no such bank
        assert runner.invoke(app, ["resolve", "team", "Acme"] + where, env=CLEAN_ENV).exit_code == 0
        assert proc_row_versions(dsn) == before      # current: nothing was installed again

        writers, failures = run_commands_while_writing(dsn, where, rounds=2)
        assert failures == [] and writers.errors == []

        # An older installation (another code version) is upgraded by the next command.
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE OR REPLACE FUNCTION entity_resolver_internal._last_call_statements_py()"
                      " RETURNS integer LANGUAGE plpython3u AS $$\nkey = \"entity_resolver:old\"\nreturn 0\n$$")
        upgraded = runner.invoke(app, ["banks"] + where, env=CLEAN_ENV)
        assert upgraded.exit_code == 0 and "installed entity_resolver" in upgraded.stderr
        assert runner.invoke(app, ["banks"] + where, env=CLEAN_ENV).stderr.count("installed") == 0
    finally:
        runner.invoke(app, ["db", "destroy", "--yes"] + where, env=CLEAN_ENV)
        shutil.rmtree(root, ignore_errors=True)
