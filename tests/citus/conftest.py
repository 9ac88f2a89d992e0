"""A real Citus cluster for the distributed tests: `make test-citus`.

One coordinator and two workers on localhost for the whole session (the
project's embedded clusters with Citus preloaded: unprivileged OS user, data
under /tmp, free ports). Each test that needs a database gets a fresh one,
made a Citus database on every node; ``installed`` is one distributed
installation (``install(conn, distributed=True)``) per test module, whose
tests keep to banks of their own. Tests that stop or add nodes get a cluster
of their own so that the shared one stays whole.

Not collected by plain `make test` (pyproject's testpaths); Citus must be
installed (`make test-citus` builds it when missing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from citus_helpers import TIMINGS, banks_on, install_distributed, new_database

from entity_resolver.citus_cluster import CitusCluster, citus_installed


def pytest_terminal_summary(terminalreporter) -> None:
    # Measured, not asserted: how long the cluster took to come up.
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"citus timing: {name}: {seconds:.2f} s")


def start_cluster(workers: int = 2) -> CitusCluster:
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
    cluster = start_cluster(2)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def private_cluster() -> Iterator[CitusCluster]:
    """A cluster of this test's own, for tests that stop or add nodes."""
    cluster = start_cluster(2)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def citus_dsn(citus: CitusCluster) -> Iterator[str]:
    """A fresh Citus database (coordinator DSN) with the workers registered."""
    yield from new_database(citus)


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


@pytest.fixture(scope="module")
def installed_dsn(citus: CitusCluster) -> Iterator[str]:
    """One distributed installation per test module; tests keep to banks of their own."""
    for dsn in new_database(citus):
        install_distributed(dsn)
        yield dsn


@pytest.fixture
def distributed(installed_dsn: str) -> Iterator[psycopg.Connection]:
    """A session on the module's distributed installation (the coordinator)."""
    with psycopg.connect(installed_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def two_banks(citus, distributed) -> list[str]:
    """One new bank on each worker of the module's installation."""
    return [banks_on(distributed, w.port, 1)[0] for w in citus.workers]


@pytest.fixture
def timing() -> Callable[[str, float], None]:
    """Record a measured duration (seconds) for the end-of-session summary."""
    return lambda name, seconds: TIMINGS.setdefault(name, seconds)
