"""What the flush at commit costs concurrent writers (entity_resolver write path).

Usage: python bench/flush_at_commit.py DSN [seconds] [--fuzzy]
The DSN's database must have entity_resolver installed; banks bench_* are used.
For each scenario, 8 sessions insert facts (autocommit, one statement each) for
`seconds`; reports facts/s and statement latency (insert + commit).
"""
import json
import random
import statistics
import string
import sys
import threading
import time

import psycopg

DSN = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2][0].isdigit() else 5.0
WRITERS = 8
# Literal mentions (resolve: false) keep resolution cheap, so that what the
# write path itself costs (linking, queueing, flushing) is what is measured.
LITERAL = "--fuzzy" not in sys.argv
rng0 = random.Random(7)
HOT = ["Alex Morgan", "Acme", "Renewal", "Kubernetes", "Oslo", "Priya", "Zephyr", "Quarterly Review",
       "Budget", "Helsinki", "Marigold", "Tokyo Office", "Sprint 14", "Docker", "Wren", "Ivanova"]
WIDE = ["".join(rng0.choice(string.ascii_lowercase) for _ in range(9)).capitalize() for _ in range(3000)]


def scenario(bank, pool, flush_on, facts_per_stmt):
    with psycopg.connect(DSN, autocommit=True) as c:
        c.execute("DELETE FROM entity_resolver.banks WHERE bank_id = %s", (bank,))
        c.execute("DELETE FROM entity_resolver.facts WHERE bank_id = %s", (bank,))
        c.execute("DELETE FROM entity_resolver.stats_queue WHERE bank_id = %s", (bank,))
        # warm up: create the names so that all scenarios resolve existing entities
        c.execute("INSERT INTO entity_resolver.facts (bank_id, mentions)"
                  " SELECT %s, jsonb_build_array(jsonb_build_object('text', n, 'resolve', false))"
                  " FROM unnest(%s::text[]) AS n", (bank, pool))
    stop = threading.Event()
    lat, facts = [], [0]
    lock = threading.Lock()

    def writer(seed):
        rng = random.Random(seed)
        mine = []
        n = 0
        with psycopg.connect(DSN, autocommit=True) as s:
            s.execute("SET entity_resolver.flush_at_commit = %s" % ("on" if flush_on else "off"))
            while not stop.is_set():
                batch = [[{"text": n, "resolve": False} if LITERAL else n for n in rng.sample(pool, 4)]
                         for _ in range(facts_per_stmt)]
                t = time.perf_counter()
                s.execute(
                    "INSERT INTO entity_resolver.facts (bank_id, mentions)"
                    " SELECT %s, m FROM jsonb_array_elements(%s::jsonb) AS m", (bank, json.dumps(batch)))
                mine.append(time.perf_counter() - t)
                n += facts_per_stmt
        with lock:
            lat.extend(mine)
            facts[0] += n

    flush_times = []

    def flusher():
        with psycopg.connect(DSN, autocommit=True) as s:
            while not stop.wait(1.0):
                t = time.perf_counter()
                s.execute("SELECT entity_resolver.flush_stats(%s)", (bank,))
                flush_times.append(time.perf_counter() - t)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    if not flush_on:
        threads.append(threading.Thread(target=flusher))
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    with psycopg.connect(DSN, autocommit=True) as c:
        t = time.perf_counter()
        c.execute("SELECT entity_resolver.flush_stats(%s)", (bank,))
        final = time.perf_counter() - t
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
    print("%-5s pool=%-5d facts/stmt=%-3d flush_at_commit=%-3s  %7.0f facts/s  p50 %6.1f ms  p95 %6.1f ms"
          "  p99 %6.1f ms%s" % (
              bank[-4:], len(pool), facts_per_stmt, "on" if flush_on else "off", facts[0] / SECONDS,
              q(0.5), q(0.95), q(0.99),
              "" if flush_on else "  (flush_stats every 1 s: mean %.0f ms, final %.0f ms)" % (
                  1000 * statistics.mean(flush_times or [0]), 1000 * final)))


for facts_per_stmt in (1, 20):
    for name, pool in (("hot", HOT), ("wide", WIDE)):
        for flush_on in (True, False):
            scenario("bench_" + name, pool, flush_on, facts_per_stmt)
