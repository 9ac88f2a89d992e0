"""The machine the figures come from, and the benchmark backend's memory."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any, Dict

import psycopg
from psycopg import sql


def machine(conn: psycopg.Connection) -> Dict[str, Any]:
    info: Dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                            "kernel": platform.release()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gb"] = round(int(line.split()[1]) / 2**20, 1)
        os_release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines()
                          if "=" in line)
        info["os"] = os_release.get("PRETTY_NAME", "").strip('"')
    except OSError:
        pass
    try:
        info["load_before"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    info["postgres"] = conn.execute("SHOW server_version").fetchone()[0]
    for setting in ("shared_buffers", "fsync", "synchronous_commit", "work_mem"):
        info[setting] = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(setting))).fetchone()[0]
    conn.execute("CREATE FUNCTION pg_temp.er_bench_pyver() RETURNS text LANGUAGE plpython3u"
                 " AS $$import sys; return sys.version.split()[0]$$")
    info["plpython"] = conn.execute("SELECT pg_temp.er_bench_pyver()").fetchone()[0]
    return info


def backend_memory(conn: psycopg.Connection) -> Dict[str, Any]:
    """The backend's memory: /proc (peak and current RSS, private) when local, and its memory contexts."""
    pid = conn.info.backend_pid
    out: Dict[str, Any] = {"pid": pid}
    try:
        total = conn.execute("SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts").fetchone()[0]
        out["memory_contexts_mb"] = round(total / 2**20, 1)
    except psycopg.Error:
        pass
    status = Path(f"/proc/{pid}/status")
    if conn.info.host in ("127.0.0.1", "localhost", "::1") or conn.info.host.startswith("/"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            for key, name in (("VmHWM", "peak_rss_mb"), ("VmRSS", "rss_mb"), ("RssAnon", "private_mb")):
                if key in fields:
                    out[name] = round(int(fields[key].split()[0]) / 1024, 1)
        except OSError:
            pass
    return out
