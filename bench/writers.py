"""Concurrent writers inserting retains through the facts trigger, and the exactness of
the statistics they leave behind."""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from typing import Any, Dict, List

import psycopg

from bench.latency import percentile
from bench.workloads import NOW, SCHEMA, Bank, make_retain

FLUSH_EVERY = 1.0  # seconds between flush_stats() calls when writers do not flush at commit


def measure_writers(dsn: str, bank: Bank, writers: int, seconds: float, seed: int,
                    flush_at_commit: bool = True, flush_every: float = FLUSH_EVERY) -> Dict[str, Any]:
    """``writers`` sessions inserting retains (one INSERT INTO facts per transaction) for ``seconds``.

    With ``flush_at_commit`` off, the writers leave their statistics in
    stats_queue and one more session calls ``flush_stats()`` every
    ``flush_every`` seconds (on a fixed tick; a flush that overruns its tick
    is followed by the next one at once, as a scheduler would queue it);
    after the writers stop, the rows still queued are counted (the backlog)
    and applied by one final, timed ``flush_stats()`` without a bound.
    """
    counts = [[0, 0, 0] for _ in range(writers)]  # facts, mentions, errors
    latencies: List[List[float]] = [[] for _ in range(writers)]
    flusher = not flush_at_commit
    start_line = threading.Barrier(writers + 1 + int(flusher))
    stop_at = [0.0]
    stop_flusher = threading.Event()
    flush_ms: List[float] = []
    failures: List[str] = []
    flush_sql = f"SELECT * FROM {SCHEMA}.flush_stats()"
    insert = (f"INSERT INTO {SCHEMA}.facts (bank_id, content, mentions, event_date)"
              " SELECT %s, c, m, %s FROM unnest(%s::text[], %s::jsonb[]) AS t (c, m)")

    def work(w: int) -> None:
        try:
            # Every retain new, made as it is sent: a retain sent again finds
            # the names its first pass created and creates nothing (at
            # 100,000 entities 115 ms against 205 the first time), so a run
            # that cycled a few retains measured repeats where it ran long
            # or alone and first passes where it ran short or shared
            # (docs/benchmarks.md: "most of 'twice the CPU' was the workload").
            rng = random.Random(seed * 1000 + w)
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET entity_resolver.flush_at_commit = %s" % ("on" if flush_at_commit else "off"))
                c.execute("SET statement_timeout = '60s'")
                start_line.wait()
                while time.monotonic() < stop_at[0]:
                    facts = make_retain(bank, rng)
                    t = time.perf_counter()
                    try:
                        c.execute(insert, (bank.bank_id, NOW, [" / ".join(f) for f in facts],
                                           [json.dumps(f, ensure_ascii=False) for f in facts]), prepare=True)
                    except psycopg.Error as exc:  # counted and reported; the run goes on
                        counts[w][2] += 1
                        if len(failures) < 3:
                            failures.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
                        continue
                    latencies[w].append((time.perf_counter() - t) * 1000.0)
                    counts[w][0] += len(facts)
                    counts[w][1] += sum(len(f) for f in facts)
        except BaseException as exc:  # a writer that cannot start stops the measurement
            failures.append(f"writer {w}: {type(exc).__name__}: {exc}")
            start_line.abort()

    def flush_loop() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET statement_timeout = '120s'")
                start_line.wait()
                tick = time.monotonic()
                while True:
                    tick += flush_every
                    if stop_flusher.wait(max(0.0, tick - time.monotonic())):
                        return
                    t = time.perf_counter()
                    try:
                        c.execute(flush_sql).fetchall()
                    except psycopg.Error as exc:
                        if len(failures) < 3:
                            failures.append(f"flush_stats: {type(exc).__name__}: {exc}".splitlines()[0])
                        continue
                    flush_ms.append((time.perf_counter() - t) * 1000.0)
                    tick = max(tick, time.monotonic() - flush_every)
        except BaseException as exc:
            failures.append(f"flusher: {type(exc).__name__}: {exc}")
            start_line.abort()

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(writers)]
    flush_thread = threading.Thread(target=flush_loop, daemon=True) if flusher else None
    for t in threads + ([flush_thread] if flush_thread else []):
        t.start()
    stop_at[0] = time.monotonic() + 3600  # set for real once everyone is connected
    try:
        start_line.wait()
    except threading.BrokenBarrierError:
        stop_flusher.set()
        for t in threads + ([flush_thread] if flush_thread else []):
            t.join()
        raise RuntimeError("a writer could not start: " + "; ".join(failures)) from None
    began = time.monotonic()
    stop_at[0] = began + seconds
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    stop_flusher.set()
    flushing: Dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as c:
        if flush_thread is not None:
            flush_thread.join()  # lets a flush in progress finish
        flushing["backlog_rows"] = c.execute(
            f"SELECT count(*) FROM {SCHEMA}.stats_queue WHERE bank_id = %s", (bank.bank_id,)).fetchone()[0]
        if flusher:
            # The final flush drains the backlog in one call (no bound), so
            # that the run's statistics can be checked exact after it.
            c.execute("SET entity_resolver.flush_batch_rows = 0")
            t = time.perf_counter()
            c.execute(flush_sql).fetchall()
            flushing["final_flush_ms"] = round((time.perf_counter() - t) * 1000.0, 1)
            flushing["flushes"] = len(flush_ms)
            flushing["flush_ms"] = {"median": round(statistics.median(flush_ms), 1) if flush_ms else None,
                                    "max": round(max(flush_ms), 1) if flush_ms else None}
            flushing["seconds_to_applied"] = round(time.monotonic() - began, 2)
    facts = sum(c[0] for c in counts)
    mentions = sum(c[1] for c in counts)
    lat = [x for ls in latencies for x in ls]
    return {
        "writers": writers,
        "statistics": "flush at commit" if flush_at_commit else f"flush_stats every {flush_every:g} s",
        "flush_at_commit": flush_at_commit,
        **flushing,
        "seconds": round(elapsed, 2),
        "facts": facts,
        "mentions": mentions,
        "facts_per_second": round(facts / elapsed, 1),
        "mentions_per_second": round(mentions / elapsed, 1),
        "retain_ms": {"median": round(statistics.median(lat), 1) if lat else None,
                      "p95": round(percentile(lat, 0.95), 1) if lat else None},
        "errors": sum(c[2] for c in counts),
        "error_examples": failures,
    }


def _count_snapshot(conn: psycopg.Connection, bank_id: str) -> Dict[str, int]:
    """Applied statistics of a bank, and what its links say they must be.

    ``pairs_from_links`` is the sum over units of n(n-1)/2 for the n entities
    linked to each: one co-occurrence per unordered pair of a unit's entities.
    The generated bank has counts but no links, so only differences between
    two snapshots are comparable.
    """
    row = conn.execute(
        f"SELECT (SELECT coalesce(sum(mention_count), 0) FROM {SCHEMA}.entities WHERE bank_id = %(b)s),"
        f" (SELECT coalesce(sum(cooccurrence_count), 0) FROM {SCHEMA}.entity_cooccurrences WHERE bank_id = %(b)s),"
        f" (SELECT coalesce(sum(n * (n - 1) / 2), 0) FROM (SELECT count(*) AS n FROM {SCHEMA}.unit_entities"
        f"   WHERE bank_id = %(b)s GROUP BY unit_id) AS u),"
        f" (SELECT count(*) FROM {SCHEMA}.facts WHERE bank_id = %(b)s),"
        f" (SELECT count(*) FROM {SCHEMA}.stats_queue WHERE bank_id = %(b)s)",
        {"b": bank_id}).fetchone()
    return dict(zip(("mention_count", "cooccurrence_count", "pairs_from_links", "facts", "queued"),
                    (int(x) for x in row)))


def measure_writers_exact(dsn: str, conn: psycopg.Connection, bank: Bank, writers: int, seconds: float,
                          seed: int, flush_at_commit: bool = True) -> Dict[str, Any]:
    """``measure_writers``, then check that the applied statistics are exact.

    Exact means, between a snapshot before the run (queue empty) and one after
    it (after the final flush_stats when the writers did not flush at commit):
    mention_count grew by the mentions the writers inserted (each resolved
    mention counts one, new entities start at 0), facts by the facts inserted,
    cooccurrence_count by the pairs recounted from unit_entities, and nothing
    of the bank is left in stats_queue.
    """
    before = _count_snapshot(conn, bank.bank_id)
    if before["queued"]:  # a backlog of an earlier run is not this run's
        conn.execute(f"SELECT * FROM {SCHEMA}.flush_stats(%s)", (bank.bank_id,))
        before = _count_snapshot(conn, bank.bank_id)
    out = measure_writers(dsn, bank, writers, seconds, seed, flush_at_commit)
    after = _count_snapshot(conn, bank.bank_id)
    delta = {k: after[k] - before[k] for k in ("mention_count", "cooccurrence_count", "pairs_from_links", "facts")}
    out["counts"] = {"mentions_inserted": out["mentions"], "mention_count_added": delta["mention_count"],
                     "facts_inserted": out["facts"], "facts_added": delta["facts"],
                     "pairs_from_links": delta["pairs_from_links"],
                     "cooccurrence_count_added": delta["cooccurrence_count"], "queued_after": after["queued"]}
    out["counts_exact"] = (delta["mention_count"] == out["mentions"] and delta["facts"] == out["facts"]
                           and delta["cooccurrence_count"] == delta["pairs_from_links"]
                           and after["queued"] == 0)
    return out
