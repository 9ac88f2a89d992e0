"""What the bank's creation lock costs writers (issue 10), measured side by side.

    python -m bench.creation_lock [DSN] [--size 10000] [--seconds 10]

A transaction that creates entities holds its bank's creation lock until it
commits (plpython/locks.py): two transactions that each created a name in an
earlier statement can otherwise wait for each other's uncommitted name, a
deadlock. The alternatives weighed (docs/write-path.md, "Concurrency"):

* serialising creators per bank (this lock): writers that only resolve to
  known entities never wait; creators of one bank queue, from their first new
  name to their commit;
* creating entities in a transaction of their own (dblink to the same
  database): no wait at all, but entities of rolled-back facts stay behind for
  a cleanup, the connection needs a password or trust authentication for
  non-superusers, and bank isolation must be re-established on that connection.

This runs the trigger benchmark's writers (bench.writers, one INSERT of about
ten facts per transaction) at 1 and 4 writers on one bank, with the lock and
then with the installed module patched to skip it (in this scratch database
only), alternating, and reports mentions per second and the ratio.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any, Dict

import psycopg
from psycopg import sql

from bench.run import BENCH_DB, _bench_dsn
from bench.workloads import SCHEMA, SEED, build_bank
from bench.writers import measure_writers
from entity_resolver.install import install

LOCK = "WITH lock AS (SELECT pg_advisory_xact_lock(1162018818, hashtext($1)))"
NO_LOCK = "WITH lock AS (SELECT 1162018818 AS no_lock)"


def _patch(conn: psycopg.Connection, lock: bool) -> None:
    source = conn.execute(sql.SQL("SELECT source FROM {}.plpython_modules WHERE name = 'record'").format(
        sql.Identifier(SCHEMA))).fetchone()[0]
    old, new = (NO_LOCK, LOCK) if lock else (LOCK, NO_LOCK)
    assert old.replace("1162018818", "%d") in source or new.replace("1162018818", "%d") in source
    conn.execute(sql.SQL("UPDATE {}.plpython_modules SET source = %s WHERE name = 'record'").format(
        sql.Identifier(SCHEMA)), (source.replace(old.replace("1162018818", "%d"), new.replace("1162018818", "%d")),))
    # New sessions load the changed module: the GD key is the code version,
    # so bump it by reinstalling nothing; writers open new connections.


def run(dsn: str, size: int = 10_000, seconds: float = 10.0, rounds: int = 2) -> Dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(BENCH_DB)))
    bdsn = _bench_dsn(dsn, BENCH_DB)
    out: Dict[str, Any] = {"size": size, "seconds": seconds, "runs": []}
    try:
        with psycopg.connect(bdsn, autocommit=True) as conn:
            install(conn, SCHEMA)
            conn.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
            bank = build_bank(conn, size, SEED)
            for r in range(rounds):
                for lock in (True, False):
                    _patch(conn, lock)
                    for writers in (1, 4):
                        m = measure_writers(bdsn, bank, writers, seconds, SEED + 10 * r + writers)
                        out["runs"].append({"lock": lock, "writers": writers, "round": r,
                                            "mentions_per_second": m.get("mentions_per_second"),
                                            "errors": m.get("errors")})
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
    for writers in (1, 4):
        with_lock = [x["mentions_per_second"] for x in out["runs"] if x["lock"] and x["writers"] == writers]
        without = [x["mentions_per_second"] for x in out["runs"] if not x["lock"] and x["writers"] == writers]
        out[f"{writers}_writers"] = {"with_lock": sum(with_lock) / len(with_lock),
                                     "without_lock": sum(without) / len(without),
                                     "ratio": round(sum(with_lock) / sum(without), 3)}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.creation_lock")
    parser.add_argument("dsn", nargs="?", default="host=127.0.0.1 port=5432 user=postgres dbname=postgres")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    random.seed(SEED)
    print(json.dumps(run(args.dsn, args.size, args.seconds), indent=2))
