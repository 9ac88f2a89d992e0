"""A private, throwaway PostgreSQL cluster for the demo, the CLI and the tests.

PostgreSQL refuses to run as root.  When we are root, the server runs as an
unprivileged OS user (created on first use) and its data directory lives
outside the checkout (``/tmp`` by default), because ``/root`` is mode 700 and
a clone may sit anywhere.  When we are an ordinary user, the server simply
runs as that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SERVER_USER = "entity_resolver"
DEFAULT_DATADIR = Path(os.environ.get("ENTITY_RESOLVER_DATADIR", f"/tmp/entity_resolver-{os.getuid()}/pgdata"))
PG_BINDIR_CANDIDATES = [
    os.environ.get("ENTITY_RESOLVER_PG_BINDIR", ""),
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/14/bin",
]


class EmbeddedError(RuntimeError):
    """The private cluster could not be created, started or stopped."""


def find_bindir() -> Path:
    """Return the directory holding initdb/pg_ctl, or raise a clear error."""
    for cand in PG_BINDIR_CANDIDATES:
        if cand and (Path(cand) / "pg_ctl").exists():
            return Path(cand)
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    raise EmbeddedError(
        "PostgreSQL server binaries not found: install postgresql-15 (Debian) "
        "or set ENTITY_RESOLVER_PG_BINDIR"
    )


def free_port() -> int:
    """Ask the kernel for a free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_server_user() -> str:
    """Return the OS user the server runs as, creating it when we are root."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", SERVER_USER],
            check=True, capture_output=True,
        )
    return SERVER_USER


@dataclass
class EmbeddedCluster:
    """A PostgreSQL cluster in ``datadir`` listening on 127.0.0.1 only, trust auth."""

    datadir: Path = DEFAULT_DATADIR
    port: int | None = None
    superuser: str = "postgres"
    fsync: bool = True
    # Further postgresql.conf lines written at init, e.g.
    # {"shared_preload_libraries": "'citus'"} for a Citus node; values are
    # written as given (quote strings), and override the defaults below.
    extra_settings: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.datadir = Path(self.datadir)
        self.bindir = find_bindir()
        if self.port is None:
            self.port = self._configured_port()

    # -- helpers -----------------------------------------------------------
    def _run(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", _ensure_server_user(), "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True)

    def _configured_port(self) -> int | None:
        conf = self.datadir / "postgresql.auto.conf"
        try:
            for line in conf.read_text().splitlines():
                if line.startswith("port"):
                    return int(line.split("=", 1)[1].strip().strip("'"))
        except (OSError, ValueError):
            pass
        return None

    @property
    def logfile(self) -> Path:
        return self.datadir.parent / "server.log"

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.superuser} dbname=postgres"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={self.superuser} dbname={dbname}"

    # -- lifecycle ---------------------------------------------------------
    def initialized(self) -> bool:
        return (self.datadir / "PG_VERSION").exists()

    def init(self) -> None:
        """Create the cluster (UTF-8, C.UTF-8 locale, trust auth on loopback)."""
        parent = self.datadir.parent
        parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            user = _ensure_server_user()
            pw = pwd.getpwnam(user)
            os.chown(parent, pw.pw_uid, pw.pw_gid)
            os.chmod(parent, 0o755)
        if self.port is None:
            self.port = free_port()
        res = self._run([
            "initdb", "-D", str(self.datadir), "-U", self.superuser, "--auth=trust",
            "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions",
        ], check=False)
        if res.returncode != 0:
            raise EmbeddedError(f"initdb failed: {res.stderr.strip() or res.stdout.strip()}")
        settings = {
            "port": str(self.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": "''",
            "max_connections": "120",
            "shared_buffers": "'256MB'",
            "fsync": "on" if self.fsync else "off",
            "full_page_writes": "on" if self.fsync else "off",
            "track_functions": "'pl'",
            "max_locks_per_transaction": "256",
            **self.extra_settings,
        }
        with open(self.datadir / "postgresql.auto.conf", "a") as fh:
            for k, v in settings.items():
                fh.write(f"{k} = {v}\n")

    def running(self) -> bool:
        if not self.initialized():
            return False
        return self._run(["pg_ctl", "status", "-D", str(self.datadir)], check=False).returncode == 0

    def start(self) -> "EmbeddedCluster":
        """Initialise if needed and start; reuse a running server."""
        if not self.initialized():
            self.init()
        if self.running():
            return self
        res = self._run([
            "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.datadir), "-l", str(self.logfile),
        ], check=False)
        if res.returncode != 0:
            tail = ""
            try:
                tail = self.logfile.read_text()[-2000:]
            except OSError:
                pass
            raise EmbeddedError(f"pg_ctl start failed: {res.stderr.strip()}\n{tail}")
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            res = subprocess.run(
                [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if res.returncode == 0:
                return
            time.sleep(0.1)
        raise EmbeddedError("server did not become ready in time")

    def stop(self, mode: str = "fast") -> None:
        if self.running():
            self._run(["pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", str(self.datadir)], check=False)

    def destroy(self) -> None:
        """Stop the server and delete its data directory."""
        self.stop("immediate")
        shutil.rmtree(self.datadir.parent if self.datadir.parent.name.startswith("entity_resolver") else self.datadir,
                      ignore_errors=True)

    def status(self) -> dict:
        return {
            "datadir": str(self.datadir),
            "port": self.port,
            "running": self.running(),
            "dsn": self.dsn() if self.port else None,
            "log": str(self.logfile),
            "server_user": SERVER_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name,
        }

    # -- helpers for the command-line tool (added; the lifecycle above is unchanged)
    def ensure_database(self, dbname: str) -> bool:
        """Create ``dbname`` (UTF-8, the cluster's C.UTF-8 locale) if absent; True if created."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
            if exists:
                return False
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            except psycopg.errors.DuplicateDatabase:
                return False  # another command created it at the same moment
            return True

    def stop_hint(self) -> str:
        """The command that stops this cluster."""
        if self.datadir == DEFAULT_DATADIR:
            return "entity-resolver db stop"
        return f"entity-resolver db stop --data-dir {self.datadir}"
