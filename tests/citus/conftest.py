"""A real Citus cluster for the distributed tests: `make test-citus`.

One coordinator and two workers on localhost for the whole session (the
project's embedded clusters with Citus preloaded: unprivileged OS user, data
under /tmp, free ports). Each test that needs a database gets a fresh one,
made a Citus database on every node. Tests that stop or add nodes get a
cluster of their own (``private_cluster``) so that the shared one stays whole.

Not collected by plain `make test` (pyproject's testpaths); Citus must be
installed (`make test-citus` builds it when missing).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from entity_resolver.citus_cluster import CitusCluster, citus_installed
from entity_resolver.install import install

from citus_layout import distribute

TIMINGS: dict[str, float] = {}


def pytest_terminal_summary(terminalreporter) -> None:
    # Measured, not asserted: how long the cluster took to come up.
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"citus timing: {name}: {seconds:.2f} s")


def _start(workers: int) -> CitusCluster:
    if not citus_installed():
        pytest.fail("Citus is not installed for this PostgreSQL: run `make test-citus` (it builds "
                    "Citus) or install Citus's packages", pytrace=False)
    started = time.monotonic()
    cluster = CitusCluster(workers=workers).start()
    TIMINGS.setdefault(f"start coordinator + {workers} workers", time.monotonic() - started)
    return cluster


@pytest.fixture(scope="session")
def citus() -> Iterator[CitusCluster]:
    """The session's coordinator and two workers; deleted afterwards."""
    cluster = _start(2)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def private_cluster() -> Iterator[CitusCluster]:
    """A cluster of this test's own, for tests that stop or add nodes."""
    cluster = _start(2)
    try:
        yield cluster
    finally:
        cluster.destroy()


def _database(cluster: CitusCluster) -> Iterator[str]:
    dbname = f"er_{uuid.uuid4().hex[:10]}"
    started = time.monotonic()
    dsn = cluster.create_database(dbname)
    TIMINGS.setdefault("create a Citus database on every node", time.monotonic() - started)
    try:
        yield dsn
    finally:
        cluster.drop_database(dbname)


@pytest.fixture
def citus_dsn(citus: CitusCluster) -> Iterator[str]:
    """A fresh Citus database (coordinator DSN) with the workers registered."""
    yield from _database(citus)


@pytest.fixture
def connect(citus_dsn: str) -> Iterator[Callable[..., psycopg.Connection]]:
    """Open autocommit connections to the test's database on the coordinator."""
    opened: list[psycopg.Connection] = []

    def _connect(dsn: str | None = None, **kwargs) -> psycopg.Connection:
        conn = psycopg.connect(dsn or citus_dsn, autocommit=True, **kwargs)
        opened.append(conn)
        return conn

    yield _connect
    for conn in opened:
        conn.close()


@pytest.fixture
def coordinator(connect) -> psycopg.Connection:
    return connect()


@pytest.fixture
def installed(coordinator: psycopg.Connection) -> psycopg.Connection:
    """entity_resolver installed by the current installer on the coordinator (nothing distributed)."""
    started = time.monotonic()
    install(coordinator)
    TIMINGS.setdefault("install entity_resolver on the coordinator", time.monotonic() - started)
    return coordinator


def _install_and_distribute(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.monotonic()
        install(conn)
        TIMINGS.setdefault("install entity_resolver on the coordinator", time.monotonic() - started)
        started = time.monotonic()
        distribute(conn)
        TIMINGS.setdefault("distribute (tables, reference tables, functions)", time.monotonic() - started)


@pytest.fixture(scope="module")
def layout_dsn(citus: CitusCluster) -> Iterator[str]:
    """One distributed installation per test module; tests keep to banks of their own."""
    for dsn in _database(citus):
        _install_and_distribute(dsn)
        yield dsn


@pytest.fixture
def distributed(layout_dsn: str) -> Iterator[psycopg.Connection]:
    """A session on the module's distributed installation (tests/citus/citus_layout.py).

    A new session, not the installing one: that one keeps cached connections
    to the workers, opened before the layout's database settings, which
    therefore do not apply to them.
    """
    with psycopg.connect(layout_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def own_distributed(citus_dsn: str) -> Iterator[psycopg.Connection]:
    """A distributed installation of this test's own (for tests that change database settings)."""
    _install_and_distribute(citus_dsn)
    with psycopg.connect(citus_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def timing() -> Callable[[str, float], None]:
    """Record a measured duration (seconds) for the end-of-session summary."""
    return lambda name, seconds: TIMINGS.setdefault(name, seconds)
