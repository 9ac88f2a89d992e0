"""Soak: many writers on overlapping names, flushers and readers at once;
afterwards every invariant must hold (docs/reliability.md).

    python -m bench.soak                      # private cluster, 16 writers, 60 s
    python -m bench.soak --seconds 10 --writers 4
    python -m bench.soak --dsn "host=... user=postgres dbname=postgres"

With --dsn, a scratch database (entity_resolver_soak) is created next to the
one named, and dropped afterwards unless --keep. The writers run with least
privilege: half as a member of the usage role (bank "soak-shared"), half as a
role bound to bank "soak-tenant" by grant_bank_access, so row-level security
is under load too. Half of each also leave their statistics to the flushers
(entity_resolver.flush_at_commit = off), so flush_stats runs concurrently with
the flush at commit.

Writers insert facts (1-4 per statement, 2-4 mentions each) whose mentions
come from a small pool of name families with case variants, accents, emoji
and typos, so every writer races every other on the same names. Mentions of
one fact come from distinct families (families never resolve to each other),
so each mention of a fact is its own entity and every count can be checked
exactly: mention_count = links, cooccurrence_count = facts sharing the pair.

Prints throughput, latency and error counts as JSON: the writers' latency
(p50, p99; the target is p99 under 1 s), and what each flush_stats() applied
(entities + pairs) with the queue's length sampled every 0.2 s; the flushers
are bounded by entity_resolver.flush_batch_rows (its default). Exits 1 if any
call failed or any invariant is broken (latency is reported, not enforced).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from entity_resolver.embedded import EmbeddedCluster
from entity_resolver.install import install

# Name families: variants of one name (they may resolve to one entity or, when
# two sessions create two spellings at once, to two), pairwise unrelated to
# every other family (pg_trgm similarity well under the 0.3 floor, no shared
# words), so no mention ever resolves into another family.
FAMILIES = [
    ["Alex Morgan", "alex morgan", "ALEX MORGAN", "Alex Morgann"],
    ["Acme", "ACME", "acme"],
    ["Renewal", "renewal", "RENEWAL"],
    ["Kubernetes", "kubernetes", "Kubernetez"],
    ["Oslo", "OSLO", "oslo"],
    ["Priya Raman", "priya raman", "PRIYA RAMAN"],
    ["Zephyr", "zephyr", "ZEPHYR"],
    ["Quarterly Review", "quarterly review", "Quarterly Reviews"],
    ["Zoë Brandt", "ZOË BRANDT", "zoë brandt"],
    ["São Paulo", "são paulo", "SÃO PAULO"],
    ["Wren 🎵", "Wren", "WREN"],
    ["Sprint 14", "sprint 14", "SPRINT 14"],
    ["Helsinki", "helsinki", "HELSINKI"],
    ["Marigold", "marigold", "MARIGOLD"],
    ["Ivanova", "ivanova", "IVANOVA"],
    ["Docker", "docker", "DOCKER"],
    ["東京オフィス", "東京オフィス"],
    ["שלום עליכם", "שלום עליכם"],
    ["Budget FY25", "budget fy25", "BUDGET FY25"],
    ["Tigran", "tigran", "TIGRAN"],
]
BANKS = {"soak-shared": "usage", "soak-tenant": "tenant"}


# -- invariants ----------------------------------------------------------------

def check_invariants(conn: psycopg.Connection, schema: str = "entity_resolver", *,
                     facts_only: bool = True, one_mention_per_entity_per_fact: bool = False,
                     queue_drained: bool = True, amcheck: bool = True) -> list[str]:
    """Return every broken invariant as a sentence (an empty list: all hold).

    Run it as a superuser (it reads every bank). ``facts_only``: every write
    went through the facts table, so mentions and links can be traced to
    facts. ``one_mention_per_entity_per_fact``: no fact names an entity twice,
    so mention_count must equal the entity's links exactly. ``queue_drained``:
    a final flush_stats ran, so every statistic is applied.
    """
    s = sql.Identifier(schema)
    problems: list[str] = []

    def rows(query: str, *params) -> list:
        return conn.execute(sql.SQL(query).format(s=s), params).fetchall()

    for bank, name, n in rows(
            "SELECT bank_id, lower(canonical_name), count(*) FROM {s}.entities"
            " GROUP BY 1, 2 HAVING count(*) > 1"):
        problems.append(f"bank {bank!r}: {n} entities named {name!r} (case-folded)")
    if queue_drained:
        (queued,) = rows("SELECT count(*) FROM {s}.stats_queue")[0]
        if queued:
            problems.append(f"{queued} statistics still queued after the final flush")
    # Pairs: every unit linked to both entities counts once.
    for bank, e1, e2, expected, stored in rows(
            """WITH expected AS (
                   SELECT a.bank_id, a.entity_id AS e1, b.entity_id AS e2, count(*) AS n
                     FROM {s}.unit_entities a
                     JOIN {s}.unit_entities b
                       ON a.bank_id = b.bank_id AND a.unit_id = b.unit_id AND a.entity_id < b.entity_id
                    GROUP BY 1, 2, 3)
               SELECT coalesce(x.bank_id, c.bank_id), coalesce(x.e1, c.entity_id_1),
                      coalesce(x.e2, c.entity_id_2), coalesce(x.n, 0), coalesce(c.cooccurrence_count, 0)
                 FROM expected x
                 FULL JOIN {s}.entity_cooccurrences c
                   ON c.bank_id = x.bank_id AND c.entity_id_1 = x.e1 AND c.entity_id_2 = x.e2
                WHERE coalesce(x.n, 0) <> coalesce(c.cooccurrence_count, 0)
                LIMIT 20"""):
        problems.append(f"bank {bank!r}: pair {e1}/{e2} counted {stored}, {expected} units share it")
    # Mentions.
    if one_mention_per_entity_per_fact:
        for bank, name, count, links in rows(
                """SELECT e.bank_id, e.canonical_name, e.mention_count,
                          (SELECT count(*) FROM {s}.unit_entities ue
                            WHERE ue.bank_id = e.bank_id AND ue.entity_id = e.id)
                     FROM {s}.entities e
                    WHERE e.mention_count <> (SELECT count(*) FROM {s}.unit_entities ue
                                               WHERE ue.bank_id = e.bank_id AND ue.entity_id = e.id)
                    LIMIT 20"""):
            problems.append(f"bank {bank!r}: {name!r} has mention_count {count} but {links} links")
    else:
        for bank, name, count, links in rows(
                """SELECT e.bank_id, e.canonical_name, e.mention_count, l.n
                     FROM {s}.entities e
                     JOIN (SELECT bank_id, entity_id, count(*) AS n FROM {s}.unit_entities GROUP BY 1, 2) l
                       ON l.bank_id = e.bank_id AND l.entity_id = e.id
                    WHERE e.mention_count < l.n LIMIT 20"""):
            problems.append(f"bank {bank!r}: {name!r} has mention_count {count} under its {links} links")
    if facts_only:
        for bank, counted, written in rows(
                """SELECT b.bank_id,
                          (SELECT coalesce(sum(mention_count), 0) FROM {s}.entities e WHERE e.bank_id = b.bank_id),
                          (SELECT coalesce(sum(jsonb_array_length(f.mentions)), 0)
                             FROM {s}.facts f WHERE f.bank_id = b.bank_id)
                     FROM {s}.banks b"""):
            if queue_drained and counted != written:
                problems.append(f"bank {bank!r}: {counted} mentions counted, {written} written in facts")
        for bank, fact in rows(
                """SELECT f.bank_id, f.id FROM {s}.facts f
                    WHERE jsonb_array_length(f.mentions) > 0
                      AND NOT EXISTS (SELECT 1 FROM {s}.unit_entities ue
                                       WHERE ue.bank_id = f.bank_id AND ue.unit_id = f.id)
                    LIMIT 20"""):
            problems.append(f"bank {bank!r}: fact {fact} has mentions but no links (half done)")
        for bank, unit in rows(
                """SELECT ue.bank_id, ue.unit_id FROM {s}.unit_entities ue
                    WHERE NOT EXISTS (SELECT 1 FROM {s}.facts f WHERE f.bank_id = ue.bank_id AND f.id = ue.unit_id)
                    LIMIT 20"""):
            problems.append(f"bank {bank!r}: link of unit {unit}, which is no committed fact")
    # The CHECK constraints, re-evaluated over every row, and orphans.
    checks = {
        "pair not ordered": "SELECT count(*) FROM {s}.entity_cooccurrences WHERE NOT entity_id_1 < entity_id_2",
        "negative count": "SELECT (SELECT count(*) FROM {s}.entities WHERE mention_count < 0)"
                          " + (SELECT count(*) FROM {s}.entity_cooccurrences WHERE cooccurrence_count < 0)",
        "bad name": "SELECT count(*) FROM {s}.entities WHERE char_length(canonical_name) NOT BETWEEN 1 AND 500"
                    " OR entity_kind NOT IN ('regular', 'label')",
        "bad bank id": "SELECT count(*) FROM {s}.banks WHERE char_length(bank_id) NOT BETWEEN 1 AND 100",
        "link to no entity": "SELECT count(*) FROM {s}.unit_entities ue WHERE NOT EXISTS"
                             " (SELECT 1 FROM {s}.entities e WHERE e.bank_id = ue.bank_id AND e.id = ue.entity_id)",
        "pair of no entity": "SELECT count(*) FROM {s}.entity_cooccurrences c WHERE NOT EXISTS"
                             " (SELECT 1 FROM {s}.entities e WHERE e.bank_id = c.bank_id AND e.id = c.entity_id_1)"
                             " OR NOT EXISTS (SELECT 1 FROM {s}.entities e"
                             " WHERE e.bank_id = c.bank_id AND e.id = c.entity_id_2)",
        "entity of no bank": "SELECT count(*) FROM {s}.entities e WHERE NOT EXISTS"
                             " (SELECT 1 FROM {s}.banks b WHERE b.bank_id = e.bank_id)",
        "constraint not valid": "SELECT count(*) FROM pg_constraint WHERE connamespace = (SELECT oid FROM"
                                " pg_namespace WHERE nspname = %s) AND NOT convalidated",
    }
    for what, query in checks.items():
        params = (schema,) if "%s" in query else ()
        (n,) = rows(query, *params)[0]
        if n:
            problems.append(f"{n} rows: {what}")
    # Index structure (after a crash especially): amcheck, when available.
    if amcheck and conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'amcheck'").fetchone():
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        for (index,) in conn.execute(
                """SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                     JOIN pg_am a ON a.oid = c.relam
                    WHERE a.amname = 'btree' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s)""",
                (schema,)).fetchall():
            try:
                conn.execute("SELECT bt_index_check(%s::regclass, true)", (index,))
            except psycopg.Error as exc:
                problems.append(f"index {index}: {exc.diag.message_primary}")
    return problems


# -- the load ------------------------------------------------------------------

class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        self.errors: Counter = Counter()
        self.latency: dict[str, list[float]] = {}
        self.samples: list[str] = []
        self.flush_sizes: list[int] = []     # entities + pairs updated per flush_stats()
        self.backlog: list[int] = []         # queue rows, sampled

    def ok(self, what: str, seconds: float, n: int = 1, **extra: int) -> None:
        with self.lock:
            self.counts[what] += n
            for k, v in extra.items():
                self.counts[k] += v
            self.latency.setdefault(what, []).append(seconds)

    def failed(self, what: str, exc: BaseException) -> None:
        with self.lock:
            key = f"{what}: {getattr(exc, 'sqlstate', None) or type(exc).__name__}"
            self.errors[key] += 1
            if len(self.samples) < 10:
                self.samples.append(f"{key}: {exc}")


def random_fact(rng: random.Random) -> list[str]:
    families = rng.sample(FAMILIES, rng.randint(2, 4))
    return [rng.choice(f) for f in families]


def writer(dsn: str, bank: str, flush_at_commit: bool, seed: int, stop: threading.Event, stats: Stats,
           schema: str) -> None:
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as c:
        if not flush_at_commit:
            c.execute("SET entity_resolver.flush_at_commit = off")
        statement = sql.SQL(
            "INSERT INTO {}.facts (bank_id, content, mentions, event_date)"
            " SELECT %s, 'soak', m, now() - (random() * interval '10 days')"
            " FROM jsonb_array_elements(%s::jsonb) AS m").format(sql.Identifier(schema))
        while not stop.is_set():
            facts = [random_fact(rng) for _ in range(rng.randint(1, 4))]
            started = time.perf_counter()
            try:
                c.execute(statement, (bank, json.dumps(facts)))
            except psycopg.Error as exc:
                stats.failed("write", exc)
                continue
            elapsed = time.perf_counter() - started
            stats.ok("write", elapsed, facts=len(facts), mentions=sum(len(f) for f in facts))
            stats.ok(f"write {bank}, flush at commit {'on' if flush_at_commit else 'off'}", elapsed,
                     **{f"facts {bank}": len(facts)})


def flusher(dsn: str, stop: threading.Event, stats: Stats, schema: str, every: float = 0.05,
            batch_rows: int | None = None) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        if batch_rows is not None:
            c.execute(sql.SQL("SET entity_resolver.flush_batch_rows = {}").format(sql.Literal(str(batch_rows))))
        statement = sql.SQL("SELECT * FROM {}.flush_stats()").format(sql.Identifier(schema))
        while not stop.is_set():
            started = time.perf_counter()
            try:
                entities, pairs = c.execute(statement).fetchone()
            except psycopg.Error as exc:
                stats.failed("flush", exc)
                continue
            stats.ok("flush", time.perf_counter() - started, entities_applied=entities, pairs_applied=pairs)
            with stats.lock:
                stats.flush_sizes.append(entities + pairs)
            stop.wait(every)


def backlog_monitor(conn_dsn: str, stop: threading.Event, stats: Stats, schema: str) -> None:
    """Sample the queue's length (rows not applied yet) every 0.2 s, as a superuser."""
    with psycopg.connect(conn_dsn, autocommit=True) as c:
        statement = sql.SQL("SELECT count(*) FROM {}.stats_queue").format(sql.Identifier(schema))
        while not stop.is_set():
            (n,) = c.execute(statement).fetchone()
            with stats.lock:
                stats.backlog.append(n)
            stop.wait(0.2)


def reader(dsn: str, bank: str, seed: int, stop: threading.Event, stats: Stats, schema: str) -> None:
    rng = random.Random(seed)
    s = sql.Identifier(schema)
    with psycopg.connect(dsn, autocommit=True) as c:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                kind = rng.randrange(3)
                if kind == 0:
                    fact = random_fact(rng)
                    c.execute(sql.SQL("SELECT * FROM {}.explain_mention(%s, %s, %s)").format(s),
                              (bank, fact[0], fact[1:])).fetchall()
                elif kind == 1:
                    seeds = [r[0] for r in c.execute(
                        sql.SQL("SELECT id FROM {}.facts WHERE bank_id = %s ORDER BY created_at DESC LIMIT 3"
                                ).format(s), (bank,))]
                    c.execute(sql.SQL("SELECT * FROM {}.expand_units(%s, %s)").format(s), (bank, seeds)).fetchall()
                else:
                    c.execute(sql.SQL("SELECT * FROM {}.entity_overview WHERE bank_id = %s"
                                      " ORDER BY mention_count DESC LIMIT 20").format(s), (bank,)).fetchall()
            except psycopg.Error as exc:
                stats.failed("read", exc)
                continue
            stats.ok("read", time.perf_counter() - started)


def spread(values: list[int]) -> dict:
    """p50, p99 and max of counts."""
    if not values:
        return {}
    ordered = sorted(values)
    return {"p50": ordered[len(ordered) // 2], "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": ordered[-1]}


def percentiles(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 1)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99), "max_ms": round(ordered[-1] * 1000, 1),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 1)}


@contextmanager
def scratch_database(dsn: str | None, fsync: bool, keep: bool):
    """Yield (admin connection, conninfo builder) for a scratch database."""
    cluster = None
    root = None
    if dsn is None:
        root = Path(tempfile.mkdtemp(prefix="entity_resolver-soak-", dir="/tmp"))
        root.chmod(0o755)
        cluster = EmbeddedCluster(datadir=root / "pgdata", fsync=fsync)
        cluster.start()
        dsn = cluster.dsn()
    dbname = "entity_resolver_soak"
    base = psycopg.conninfo.conninfo_to_dict(dsn)
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))

        def conninfo(user: str | None = None) -> str:
            params = dict(base, dbname=dbname)
            if user:
                params["user"] = user
            return psycopg.conninfo.make_conninfo(**params)

        with psycopg.connect(conninfo(), autocommit=True) as conn:
            yield conn, conninfo
    finally:
        if cluster is not None:
            cluster.destroy()
            import shutil
            shutil.rmtree(root, ignore_errors=True)
        elif not keep:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


def run(seconds: float = 60, writers: int = 16, flushers: int = 2, readers: int = 2, dsn: str | None = None,
        fsync: bool = True, keep: bool = False, schema: str = "entity_resolver", flush_every: float = 0.05,
        flush_batch_rows: int | None = None) -> dict:
    stats = Stats()
    with scratch_database(dsn, fsync, keep) as (conn, conninfo):
        install(conn, schema)
        s = sql.Identifier(schema)
        usage = conn.execute(sql.SQL("SELECT {}.usage_role()").format(s)).fetchone()[0]
        suffix = uuid.uuid4().hex[:8]
        app, tenant = f"soak_app_{suffix}", f"soak_tenant_{suffix}"
        for role in (app, tenant):
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(usage), sql.Identifier(app)))
        conn.execute(sql.SQL("SELECT {}.grant_bank_access('soak-tenant', %s)").format(s), (tenant,))
        role_of = {"usage": app, "tenant": tenant}
        try:
            stop = threading.Event()
            threads = []
            bank_names = list(BANKS)
            for n in range(writers):
                bank = bank_names[n % len(bank_names)]
                flush_at_commit = (n // len(bank_names)) % 2 == 0
                threads.append(threading.Thread(target=writer, args=(
                    conninfo(role_of[BANKS[bank]]), bank, flush_at_commit, 1000 + n, stop, stats, schema)))
            for n in range(flushers):
                # Flushers run as the usage role: all banks (the tenant's role
                # would flush its own bank only).
                threads.append(threading.Thread(target=flusher, args=(conninfo(app), stop, stats, schema,
                                                                     flush_every, flush_batch_rows)))
            threads.append(threading.Thread(target=backlog_monitor, args=(conninfo(), stop, stats, schema)))
            for n in range(readers):
                bank = bank_names[n % len(bank_names)]
                threads.append(threading.Thread(target=reader, args=(
                    conninfo(role_of[BANKS[bank]]), bank, 2000 + n, stop, stats, schema)))
            started = time.perf_counter()
            for t in threads:
                t.start()
            time.sleep(seconds)
            stop.set()
            for t in threads:
                t.join(120)
            elapsed = time.perf_counter() - started
            # The flushers' bound (the default), then a final flush that
            # drains the queue in one call (no bound).
            batch_rows = flush_batch_rows if flush_batch_rows is not None else conn.execute(
                sql.SQL("SELECT {}._flush_batch_rows()").format(sql.Identifier(schema + "_internal"))).fetchone()[0]
            conn.execute("SET entity_resolver.flush_batch_rows = 0")
            final = conn.execute(sql.SQL("SELECT * FROM {}.flush_stats()").format(s)).fetchone()
            problems = check_invariants(conn, schema, one_mention_per_entity_per_fact=True)
            per_bank = {b: dict(zip(("entities", "facts"), conn.execute(
                sql.SQL("SELECT (SELECT count(*) FROM {0}.entities WHERE bank_id = %s),"
                        " (SELECT count(*) FROM {0}.facts WHERE bank_id = %s)").format(s), (b, b)).fetchone()))
                for b in BANKS}
        finally:
            for role in (app, tenant):
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        server = conn.execute("SHOW server_version").fetchone()[0]
        fsync_setting = conn.execute("SHOW fsync").fetchone()[0]
    c = stats.counts
    return {
        "seconds": round(elapsed, 1),
        "writers": writers, "flushers": flushers, "readers": readers,
        "server": server, "fsync": fsync_setting,
        "write_statements": c["write"], "facts": c["facts"], "mentions": c["mentions"],
        "facts_per_second": round(c["facts"] / elapsed, 1),
        "mentions_per_second": round(c["mentions"] / elapsed, 1),
        "write_latency": percentiles(stats.latency.get("write", [])),
        "write_latency_by_kind": {k: dict(percentiles(v), statements=len(v))
                                  for k, v in sorted(stats.latency.items()) if k.startswith("write ")},
        "write_p99_under_1s": bool(stats.latency.get("write"))
                              and percentiles(stats.latency["write"])["p99_ms"] < 1000,
        "flush_every_seconds": flush_every,
        "flushes": c["flush"], "flushed_entities": c["entities_applied"], "flushed_pairs": c["pairs_applied"],
        "flush_latency": percentiles(stats.latency.get("flush", [])),
        # What each flush_stats() applied (entities + pairs updated, after
        # aggregation), and the queue's length sampled every 0.2 s.
        "flush_sizes": spread(stats.flush_sizes),
        "backlog_rows": spread(stats.backlog),
        "flush_batch_rows": batch_rows,
        "final_flush": {"entities": final[0], "pairs": final[1]},
        "reads": c["read"], "reads_per_second": round(c["read"] / elapsed, 1),
        "read_latency": percentiles(stats.latency.get("read", [])),
        "banks": per_bank,
        "errors": dict(stats.errors), "error_samples": stats.samples,
        "invariant_violations": problems,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--flushers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--dsn", help="a superuser DSN; default: a private throwaway cluster")
    parser.add_argument("--no-fsync", action="store_true", help="private cluster only: fsync off")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (with --dsn)")
    parser.add_argument("--schema", default="entity_resolver")
    parser.add_argument("--flush-every", type=float, default=0.05, help="seconds between a flusher's calls")
    parser.add_argument("--flush-batch-rows", type=int,
                        help="the flushers' entity_resolver.flush_batch_rows (default: the setting's default)")
    args = parser.parse_args(argv)
    result = run(args.seconds, args.writers, args.flushers, args.readers, args.dsn, not args.no_fsync,
                 args.keep, args.schema, args.flush_every, args.flush_batch_rows)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    ok = not result["errors"] and not result["invariant_violations"]
    print(f"\nsoak: {result['facts']} facts ({result['facts_per_second']}/s) by {args.writers} writers in "
          f"{result['seconds']} s, {result['flushes']} flushes, {result['reads']} reads; "
          f"writes p50 {result['write_latency'].get('p50_ms')} ms, p99 {result['write_latency'].get('p99_ms')} ms "
          f"(target < 1000 ms: {'met' if result['write_p99_under_1s'] else 'NOT MET'}); "
          f"{sum(result['errors'].values())} errors, {len(result['invariant_violations'])} invariant violations"
          f" -> {'OK' if ok else 'FAILED'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
