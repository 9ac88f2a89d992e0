"""Fixtures and constants shared by the database tests (pytest finds them here;
test modules use the fixtures by name and never import them).

(Constants and ``dsn_of`` are in shared.py, which test modules import.)

- ``roles`` / ``connect_as``: LOGIN roles made for one test and dropped after
  it; connections to the test's database as one of them.
- ``shared_conn`` / ``bank`` / ``reference_bank``: a database per test module
  and a fresh bank per test inside it (bank_builders.py builds the rows).
- ``extension_files``: this checkout's extension, built and copied into the
  server's share directory; only the tests of CREATE EXTENSION use it.
- ``two_alexes``: bank "team" with the two Alexes' story, through the client.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from pytest_postgresql.janitor import DatabaseJanitor

from entity_resolver import build
from entity_resolver.client import Client

from bank_builders import Bank
from shared import dsn_of


# -- roles --------------------------------------------------------------------------------

@pytest.fixture
def roles(conn) -> Iterator[Callable[..., str]]:
    """Make LOGIN roles with unique names, members of the given group roles;
    dropped (with their grants) afterwards. Roles are cluster-wide, hence the uuid."""
    made: list[str] = []

    def make(*member_of: str, prefix: str = "er_test") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        made.append(name)
        for group in member_of:
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(name)))
        return name

    yield make
    for name in reversed(made):
        # A test may have dropped the role itself (revoking the last binding does).
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.fixture
def connect_as(conn) -> Iterator[Callable[..., psycopg.Connection]]:
    """Open a connection to the test database as another role; closed after the test."""
    opened: list[psycopg.Connection] = []

    def _connect(role: str, autocommit: bool = True) -> psycopg.Connection:
        c = psycopg.connect(dsn_of(conn, role), autocommit=autocommit)
        opened.append(c)
        return c

    yield _connect
    for c in opened:
        c.close()


# -- banks ---------------------------------------------------------------------------------

_serial = itertools.count(1)


@pytest.fixture(scope="module")
def shared_conn(er_proc) -> Iterator[psycopg.Connection]:
    """An autocommit connection to one fresh database shared by a test module's banks."""
    dbname = f"banks_{uuid.uuid4().hex[:12]}"
    janitor = DatabaseJanitor(user=er_proc.user, host=er_proc.host, port=er_proc.port,
                              dbname=dbname, template_dbname=er_proc.template_dbname)
    with janitor:
        with psycopg.connect(host=er_proc.host, port=er_proc.port, user=er_proc.user,
                             dbname=dbname, autocommit=True) as conn:
            yield conn


@pytest.fixture
def bank(shared_conn, request) -> Bank:
    """A fresh, empty bank of its own for this test (default settings, no labels)."""
    return Bank(shared_conn, f"{next(_serial)}:{request.node.name}"[:100]).create()


@pytest.fixture
def reference_bank(shared_conn, request) -> Bank:
    """A fresh, empty bank under the reference profile: the reference design's decisions, bit for bit."""
    b = Bank(shared_conn, f"{next(_serial)}:{request.node.name}"[:100]).create()
    b.configure({"profile": "reference"})
    return b


# -- the extension -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def extension_files(pg_cluster) -> Path:
    """The server's extension directory, holding this checkout's build.

    CREATE EXTENSION reads only the server's share directory, so the tests of
    the extension (and only they) write this checkout's control file and
    scripts there, as ``make install-extension`` does; each file is replaced
    atomically and only when it differs. Fails when the directory is not
    writable (run ``make install-extension`` as its owner first)."""
    sharedir = subprocess.run([str(pg_cluster.bindir / "pg_config"), "--sharedir"], check=True,
                              capture_output=True, text=True).stdout.strip()
    directory = Path(sharedir) / "extension"
    files = build.extension_files()
    stale = [name for name, text in files.items()
             if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != text]
    for name in stale:
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        except PermissionError:
            pytest.fail(f"{directory} lacks this checkout's {', '.join(stale)} and is not writable: "
                        f"run make install-extension as its owner")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(files[name])
        os.chmod(tmp, 0o644)
        os.replace(tmp, directory / name)
    return directory


# -- stories -------------------------------------------------------------------------------

@pytest.fixture
def two_alexes(conn):
    """Bank "team" with the two Alexes of docs/accuracy.md and their neighbourhoods:
    Alex Kim with React and Sprint 14 (f1), Alex Morgan with Acme and the renewal (f2, f3)."""
    er = Client(conn)
    for n, (when, mentions) in enumerate([
        ("2026-03-02T09:00:00Z", ["Alex Kim", "React", "Sprint 14"]),
        ("2026-03-02T11:00:00Z", ["Alex Morgan", "Acme", "renewal"]),
        ("2026-03-03T10:00:00Z", ["Alex Morgan", "Acme", "renewal"]),
    ]):
        er.retain("team", mentions, event_date=when, fact_id=f"f{n + 1}", content=" ".join(mentions))
    return er
