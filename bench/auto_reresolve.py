"""The cost of the bank setting auto_reresolve: on the write path, and per queued fact.

    python -m bench.auto_reresolve --dsn "$DSN"    # a server and a role that may CREATE DATABASE

In a scratch database, the bank of ``bench.reresolve_speed``: 10,000 entities
built set-based, ``facts`` facts inserted through the facts trigger (3-6
entities of one community each, dates over 60 days), its numbers made the
record's. Then:

* the write path: ``batches`` INSERTs of 10 facts each (one statement, one
  transaction, committed), alternating auto_reresolve on and off (which goes
  first alternates too); with it on, each fact is also queued
  (``reresolve_queue``). Median and p95 ms per INSERT, and their ratio.
* the queue: ``reresolve_queued(bank, per_call, dry_run => false)`` until the
  queue is empty, each call timed: ms per call and per queued fact, the facts
  of the neighbourhood each call decided, and the moves it made.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

import psycopg

from bench.banks import _drop_database, _fresh_database, _session
from bench.latency import percentile
from bench.reresolve_speed import _facts, _insert_facts, _record_numbers
from bench.workloads import SEED, build_bank

DATABASE = "entity_resolver_bench_auto_reresolve"
FACTS_PER_INSERT = 10


def _configure(conn: psycopg.Connection, bank_id: str, on: bool) -> None:
    conn.execute("SELECT configure_bank(%s, %s::jsonb)", (bank_id, json.dumps({"auto_reresolve": on})))


def measure(conn: psycopg.Connection, bank, batches: int, per_call: int, seed: int, first: int) -> Dict[str, Any]:
    rng = random.Random(seed + 77)
    times: Dict[bool, List[float]] = {True: [], False: []}
    for n in range(batches):
        for on in ((True, False) if n % 2 == 0 else (False, True)):
            _configure(conn, bank.bank_id, on)
            part = _facts(bank, FACTS_PER_INSERT, rng)
            t = time.perf_counter()
            _insert_facts(conn, bank.bank_id, part, rng, FACTS_PER_INSERT, vacuum=False, first=first)
            first += FACTS_PER_INSERT
            times[on].append((time.perf_counter() - t) * 1000.0)
    _configure(conn, bank.bank_id, False)
    queued = conn.execute("SELECT count(*) FROM reresolve_queue WHERE bank_id = %s", (bank.bank_id,)).fetchone()[0]
    calls: List[float] = []
    neighbourhood: List[int] = []
    moved = 0
    while True:
        t = time.perf_counter()
        plan = conn.execute("SELECT reresolve_queued(%s, %s, dry_run => false)", (bank.bank_id, per_call)).fetchone()[0]
        if plan["queued_taken"] == 0:
            break
        calls.append((time.perf_counter() - t) * 1000.0)
        neighbourhood.append(plan["facts"])
        moved += plan["mentions_moved"]
    on, off = times[True], times[False]
    return {
        "entities": bank.size, "batches": batches, "facts_per_insert": FACTS_PER_INSERT,
        "insert_ms": {"off": {"median": round(statistics.median(off), 1), "p95": round(percentile(off, 0.95), 1)},
                      "on": {"median": round(statistics.median(on), 1), "p95": round(percentile(on, 0.95), 1)}},
        "ratio_of_medians": round(statistics.median(on) / statistics.median(off), 2),
        "queued": queued, "per_call": per_call, "calls": len(calls),
        "call_ms": {"median": round(statistics.median(calls), 1), "p95": round(percentile(calls, 0.95), 1)},
        "ms_per_queued_fact": round(sum(calls) / queued, 1),
        "neighbourhood_facts_per_call": round(statistics.mean(neighbourhood), 1),
        "mentions_moved": moved,
    }


def measure_auto_reresolve(dsn: str, size: int = 10_000, facts: int = 10_000, batches: int = 20, per_call: int = 10,
                           seed: int = SEED, keep: bool = False) -> Dict[str, Any]:
    """Build the bank and its facts in a database of their own, then time both costs."""
    target = _fresh_database(dsn, DATABASE)
    try:
        with _session(target) as conn:
            bank = build_bank(conn, size, seed)
            rng = random.Random(seed + 3)
            _insert_facts(conn, bank.bank_id, _facts(bank, facts, rng), rng, 200)
            _record_numbers(conn, bank.bank_id)
            out = measure(conn, bank, batches, per_call, seed, facts)
            out["facts"] = facts
            return out
    finally:
        if not keep:
            _drop_database(dsn, DATABASE)


def markdown(r: Dict[str, Any]) -> List[str]:
    i = r["insert_ms"]
    return [
        "## Automatic re-resolution: the cost of auto_reresolve",
        "",
        f"A bank of {r['entities']:,} entities and {r['facts']:,} facts written through the trigger "
        f"(`python -m bench.auto_reresolve`). The write path: {r['batches']} INSERTs of "
        f"{r['facts_per_insert']} facts each with the setting on and as many with it off, alternating, each "
        "committed. The queue: `reresolve_queued(bank, "
        f"{r['per_call']}, dry_run => false)` until empty.",
        "",
        "| INSERT of 10 facts | median ms | p95 ms |",
        "|---|---:|---:|",
        f"| auto_reresolve off | {i['off']['median']} | {i['off']['p95']} |",
        f"| auto_reresolve on (each fact queued) | {i['on']['median']} | {i['on']['p95']} |",
        "",
        f"On ÷ off: **{r['ratio_of_medians']:.2f}×** (medians). The queue: {r['queued']} facts in {r['calls']} "
        f"calls, {r['call_ms']['median']} ms per call in the median (p95 {r['call_ms']['p95']}), "
        f"**{r['ms_per_queued_fact']} ms per queued fact**; each call decided "
        f"{r['neighbourhood_facts_per_call']} facts of the neighbourhood on average and "
        f"{r['mentions_moved']} mentions moved in all. Writers of the bank wait while a call runs.",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.auto_reresolve")
    ap.add_argument("--dsn", required=True, help="a server and a role that may CREATE DATABASE")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--per-call", type=int, default=10)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    r = measure_auto_reresolve(args.dsn, args.size, args.facts, args.batches, args.per_call, keep=args.keep)
    print(json.dumps(r, indent=1))
    print("\n".join(markdown(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
