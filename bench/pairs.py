"""One fact of many mentions: the write path and the flush at commit, linear in the fact's pairs.

    python -m bench.pairs                       # private cluster, facts of 100, 400 and 1,000 mentions
    python -m bench.pairs --dsn "host=... user=postgres dbname=postgres" --sizes 100,400,1000
    python -m bench --pairs                     # the same, through the benchmark's command line

A fact of N distinct new names is N(N-1)/2 pairs: the facts trigger links them
and queues one increment per pair, and the flush at commit applies them. Each
size is one ``INSERT INTO facts`` of one fact, then ``COMMIT``, in a bank of its
own of a new database (installed from this checkout), each in a new session
whose modules are loaded first (untimed). Timed: the INSERT and the COMMIT,
and their sum per pair. The target: time per pair at the largest size at most
twice that at the smallest (a fixed cost per fact weighs more at 100).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any, Dict, List, Optional, Sequence

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.limits import _names

SIZES = (100, 400, 1000)
SCHEMA = "entity_resolver"
DB = "entity_resolver_bench_pairs"


def _dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def measure_fact_pairs(dsn: str, sizes: Sequence[int] = SIZES, seed: int = 29) -> Dict[str, Any]:
    """Time one fact of each size (INSERT, then COMMIT) in a new database of the server ``dsn`` names."""
    from entity_resolver.install import install

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
    target = _dsn(dsn, DB)
    rows: List[Dict[str, Any]] = []
    try:
        with psycopg.connect(target, autocommit=True) as conn:
            install(conn, SCHEMA)
        s = sql.Identifier(SCHEMA)
        for n in sizes:
            names = _names(random.Random(seed + n), n)
            bank = f"pairs-{n}"
            with psycopg.connect(target) as conn:
                # The session's modules and plans, loaded before the clock starts.
                conn.execute(sql.SQL("SELECT count(*) FROM {}.resolve_mentions('warm', '[\"x\"]')").format(s))
                conn.rollback()
                started = time.perf_counter()
                conn.execute(sql.SQL("INSERT INTO {}.facts (bank_id, mentions) VALUES (%s, %s::jsonb)").format(s),
                             (bank, json.dumps(names)))
                inserted = time.perf_counter()
                conn.commit()
                committed = time.perf_counter()
                found = conn.execute(sql.SQL("SELECT count(*), coalesce(sum(cooccurrence_count), 0)::bigint"
                                             " FROM {}.entity_cooccurrences WHERE bank_id = %s").format(s),
                                     (bank,)).fetchone()
            pairs = n * (n - 1) // 2
            total = committed - started
            rows.append({"mentions": n, "pairs": pairs, "insert_s": round(inserted - started, 2),
                         "commit_s": round(committed - inserted, 2), "seconds": round(total, 2),
                         "us_per_pair": round(1e6 * total / pairs, 1),
                         "pairs_exact": tuple(found) == (pairs, pairs)})
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
    out: Dict[str, Any] = {"sizes": rows}
    if len(rows) >= 2:
        out["largest_over_smallest_per_pair"] = round(rows[-1]["us_per_pair"] / rows[0]["us_per_pair"], 2)
    return out


def markdown(result: Dict[str, Any]) -> str:
    """The per-pair section of docs/benchmarks.md."""
    lines = [
        "## One fact of many mentions: time per pair",
        "",
        "One `INSERT INTO facts` of one fact of N distinct new names, then `COMMIT` (the flush at commit "
        "applies its N(N-1)/2 pair increments), each size in a bank of its own of a new database, in a new "
        "session whose modules were loaded first. The write path and the flush are set-based in the pairs: "
        "the time per pair does not grow with N (the smallest fact also carries the fixed cost of a call).",
        "",
        "| mentions | pairs | INSERT s | COMMIT s | total s | µs per pair | pairs exact |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in result["sizes"]:
        lines.append(f"| {r['mentions']:,} | {r['pairs']:,} | {r['insert_s']:.2f} | {r['commit_s']:.2f} "
                     f"| {r['seconds']:.2f} | {r['us_per_pair']:.1f} | {'yes' if r['pairs_exact'] else '**no**'} |")
    if "largest_over_smallest_per_pair" in result:
        lines += ["", f"Time per pair at {result['sizes'][-1]['mentions']:,} mentions ÷ at "
                  f"{result['sizes'][0]['mentions']:,}: {result['largest_over_smallest_per_pair']:.2f}."]
    lines.append("")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pairs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a DSN of a role that may CREATE DATABASE; default: a private cluster")
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES), help="mentions per fact, comma-separated")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    if args.dsn:
        result = measure_fact_pairs(args.dsn, sizes)
    else:
        from bench.per_fact import _server
        with _server(None) as dsn:
            result = measure_fact_pairs(dsn, sizes)
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
