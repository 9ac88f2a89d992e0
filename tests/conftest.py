"""Real-PostgreSQL harness: one throwaway cluster per test session.

The cluster is the project's own embedded cluster (``entity_resolver.embedded``):
as root it runs under an unprivileged OS user with its data directory under
/tmp; as an ordinary user it runs as that user.  pytest-postgresql's janitor
builds a template database with entity_resolver installed once, and every
test gets a fresh clone of it (CREATE DATABASE ... TEMPLATE, fast).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from pytest_postgresql import factories
from pytest_postgresql.executors import NoopExecutor
from pytest_postgresql.janitor import DatabaseJanitor

from entity_resolver.build import DEFAULT_SCHEMA
from entity_resolver.embedded import EmbeddedCluster
from entity_resolver.install import install

SCHEMA = DEFAULT_SCHEMA


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[EmbeddedCluster]:
    """Start a private PostgreSQL cluster for this test session; delete it afterwards."""
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-test-", dir="/tmp"))
    os.chmod(root, 0o755)
    cluster = EmbeddedCluster(datadir=root / "pgdata", fsync=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def _install_loader(**kwargs) -> None:
    # The janitor passes its own autocommit flag; the installer needs autocommit.
    kwargs["autocommit"] = True
    with psycopg.connect(**kwargs) as conn:
        install(conn, SCHEMA)


@pytest.fixture(scope="session")
def er_proc(pg_cluster: EmbeddedCluster) -> Iterator[NoopExecutor]:
    """Connection details plus a template database with entity_resolver installed."""
    executor = NoopExecutor(
        host="127.0.0.1", port=pg_cluster.port, user=pg_cluster.superuser, options="", dbname="er"
    )
    janitor = DatabaseJanitor(
        user=executor.user, host=executor.host, port=executor.port,
        dbname=executor.template_dbname, as_template=True,
    )
    with janitor:
        janitor.load(_install_loader)
        yield executor


_fresh_db = factories.postgresql("er_proc")


@pytest.fixture
def conn(_fresh_db: psycopg.Connection) -> psycopg.Connection:
    """An autocommit connection to a fresh database with entity_resolver installed."""
    _fresh_db.autocommit = True
    return _fresh_db


@pytest.fixture
def connect(conn: psycopg.Connection) -> Iterator[Callable[..., psycopg.Connection]]:
    """Open more connections (other sessions) to the test's database."""
    opened: list[psycopg.Connection] = []
    info = conn.info

    def _connect(autocommit: bool = True, **kwargs) -> psycopg.Connection:
        c = psycopg.connect(
            host=info.host, port=info.port, user=info.user, dbname=info.dbname,
            autocommit=autocommit, **kwargs,
        )
        opened.append(c)
        return c

    yield _connect
    for c in opened:
        c.close()


@pytest.fixture
def empty_db(pg_cluster: EmbeddedCluster) -> Iterator[Callable[..., psycopg.Connection]]:
    """A fresh empty database (nothing installed); call it for a connection."""
    dbname = f"empty_{uuid.uuid4().hex[:12]}"
    opened: list[psycopg.Connection] = []
    janitor = DatabaseJanitor(
        user=pg_cluster.superuser, host="127.0.0.1", port=pg_cluster.port, dbname=dbname,
    )
    with janitor:

        def _connect(autocommit: bool = True, **kwargs) -> psycopg.Connection:
            c = psycopg.connect(pg_cluster.dsn(dbname), autocommit=autocommit, **kwargs)
            opened.append(c)
            return c

        yield _connect
        for c in opened:
            c.close()


@pytest.fixture
def new_db(pg_cluster: EmbeddedCluster) -> Iterator[Callable[[], psycopg.Connection]]:
    """Create fresh empty databases: each call makes another one and returns an autocommit connection to it.

    (``empty_db`` connects to one database however often it is called; tests
    that compare two installations need two.)
    """
    created: list[str] = []
    opened: list[psycopg.Connection] = []

    def _new() -> psycopg.Connection:
        dbname = f"new_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{dbname}"')
        created.append(dbname)
        c = psycopg.connect(pg_cluster.dsn(dbname), autocommit=True)
        opened.append(c)
        return c

    yield _new
    for c in opened:
        c.close()
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
        for dbname in created:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@pytest.fixture
def c_locale_db(pg_cluster: EmbeddedCluster) -> Iterator[Callable[..., psycopg.Connection]]:
    """A fresh database whose LC_CTYPE/LC_COLLATE are C (ASCII-only case folding)."""
    dbname = f"clocale_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
        admin.execute(
            f'CREATE DATABASE "{dbname}" TEMPLATE template0 ENCODING UTF8 '
            "LC_COLLATE 'C' LC_CTYPE 'C'"
        )
    opened: list[psycopg.Connection] = []

    def _connect(autocommit: bool = True, **kwargs) -> psycopg.Connection:
        c = psycopg.connect(pg_cluster.dsn(dbname), autocommit=autocommit, **kwargs)
        opened.append(c)
        return c

    yield _connect
    for c in opened:
        c.close()
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
