"""Issue 34 groundwork: the neighbourhood's candidate sources against today's full trigram probe.

Not part of ``make bench``: a measurement, run by hand::

    python -m bench.neighbourhood --dsn DSN --sizes 10000 100000 1000000

For each size, a bank is built set-based in a scratch database (``er_nbhd_bench``,
created and dropped here) exactly as the benchmark builds it
(``bench.workloads.build_bank``), with the same 58-mention retains
(``make_retain``, seeded as ``bench.run`` seeds them). Of each retain, the keys
that go to the full probe today are timed: the distinct lowered mention texts
that are not an identical name of the bank (simplified from
plpython/candidates.py ``_narrow_keys``: the probed forms of the enhanced
profile, aliases and the identical-name screen are left out; the bench banks
have no aliases). Per retain, side by side, rotating which goes first, each a
prepared statement on one session (autocommit, read only):

* ``full``: the resolver's installed SQL_CANDIDATES (``bench.latency.probe_statement``,
  rows instead of count(*)), pg_trgm threshold 0.3, LIMIT 200;
* ``partners``: the entities co-occurring (entity_cooccurrences, either side) with
  the entities named exactly by the fact's other mentions, trigram similarity
  >= 0.3 to the key computed on that set;
* ``partners_pruned``: the same, without the nearby entities of highest degree
  whose weights 1/sqrt(degree)/n (the resolver's damped share) add up to less
  than 0.3 (the hubs): a candidate partner of those only has a co-occurrence
  signal under 0.3, so cannot reach 0.6 unless seen within 6.65 days;
* ``recent_btree_7d`` / ``recent_btree_3.5d``: the entities with last_seen within
  7 (3.5) days of the event date, through a btree on (bank_id, last_seen)
  created here, similarity >= 0.3 computed on the rows of the window;
* ``recent_gin_3.5d``: the same window through a GIN index on (bank_id, day of
  last_seen, lower(name) gin_trgm_ops) (contrib btree_gin, created here), the
  trigram operator at 0.3 inside the index;
* ``recent_gin_3.5d_sim0.5``: the same at a stricter trigram bound (0.5), on its own session.

After the sources (outside their rotation), the full probe of the retain's one-word
keys and of its other keys, each alone (``full_by_words``): what the one-word
keys cost the full probe. Until 2026-12-05 a bare name was decided by how many
entities hold its word, reachable or not; since, by those of its neighbourhood
only (plpython/decide.py, _in_neighbourhood), so a neighbourhood source could
replace their probe too (not built yet).

The bench resolves every retain at one event date (``bench.workloads.NOW``);
last_seen is spread uniformly over the 60 days before it, so a 7-day window
holds about 11.7 % of the bank and 3.5 days about 5.8 %.

Coverage: of the full probe's candidates (top 200 per key), those that could
reach the threshold under the default weights. The bound: score =
0.5 * difflib ratio (key, candidate key) + 0.3 * cooc + 0.2 * recency >= 0.6
(to 6 decimals), where cooc is the resolver's damped share computed on exact
names (sum of 1/sqrt(degree) of the nearby entities the candidate co-occurs
with, over the number of distinct other texts of the fact) and recency is
max(0, 1 - days / 7); a candidate of trigram similarity 1.0 (identical trigram
sets) scores 1.0 as the resolver scores it. The word screen is not applied, so
this over-counts (an upper bound). Then how many of them each union of sources
finds, how many keys have more than 200 rows at similarity >= 0.3 (the limit
cuts their list) and how many candidates the sources find that could reach the
threshold but are not in the full probe's top 200 (there the neighbourhood
would decide differently from today's full evaluation).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from datetime import timedelta
from difflib import SequenceMatcher
from math import sqrt
from typing import Any, Dict, List, Sequence, Set, Tuple

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.latency import percentile, probe_statement
from bench.workloads import NOW, SCHEMA, SEED, Bank, build_bank, make_retain
from entity_resolver.install import install

DB = "er_nbhd_bench"
LIMIT = 200
SIM = 0.3
WINDOW_DAYS = 7.0
THRESHOLD = 0.6
WEIGHTS = (0.5, 0.3, 0.2)   # name, co-occurrence, recency: the defaults
PRUNE = 0.3                  # partners_pruned: the nearby hubs' weights left out add up to less than this


def _dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _trgm_schema(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT n.nspname FROM pg_extension AS x JOIN pg_namespace AS n ON n.oid = x.extnamespace"
                        " WHERE x.extname = 'pg_trgm'").fetchone()[0]


def statements(conn: psycopg.Connection) -> Dict[str, str]:
    """Each source's statement, with psycopg placeholders; every one returns (i, id, sim, last_seen epoch)."""
    t = sql.Identifier(_trgm_schema(conn)).as_string(conn)
    full = probe_statement(conn)
    full = full[len("SELECT count(*) FROM ("):-len(") AS probe")]
    full = f"SELECT i, id, sim, last_seen FROM ({full}) AS probe"
    near = """near AS (
    SELECT DISTINCT n.f, e.id
      FROM unnest(%(nn)s::text[], %(nf)s::int[]) AS n (name, f)
     CROSS JOIN LATERAL (
           SELECT x.id FROM entities AS x
            WHERE x.bank_id = %(p1)s AND F(x.canonical_name) = n.name OFFSET 0) AS e)"""
    pruned = near.replace("near AS (", "near0 AS (") + """,
near AS (
    SELECT z.f, z.id FROM (
        SELECT near0.f, near0.id,
               sum(1.0 / sqrt(greatest(d.deg, 1)) / fc.cnt)
                   OVER (PARTITION BY near0.f ORDER BY d.deg DESC, near0.id ROWS UNBOUNDED PRECEDING) AS cum
          FROM near0
          JOIN unnest(%(fc)s::int[]) WITH ORDINALITY AS fc (cnt, f) ON fc.f = near0.f
         CROSS JOIN LATERAL (
               SELECT (SELECT count(*) FROM entity_cooccurrences AS x
                        WHERE x.bank_id = %(p1)s AND x.entity_id_1 = near0.id AND x.cooccurrence_count > 0)
                    + (SELECT count(*) FROM entity_cooccurrences AS x
                        WHERE x.bank_id = %(p1)s AND x.entity_id_2 = near0.id AND x.cooccurrence_count > 0)
                      AS deg) AS d) AS z
     WHERE z.cum >= """ + repr(PRUNE) + ")"
    partners = """
part AS MATERIALIZED (
    SELECT DISTINCT near.f, p.pid, e.key, e.last_seen
      FROM near
     CROSS JOIN LATERAL (
           SELECT c.entity_id_2 AS pid FROM entity_cooccurrences AS c
            WHERE c.bank_id = %(p1)s AND c.entity_id_1 = near.id AND c.cooccurrence_count > 0
           UNION ALL
           SELECT c.entity_id_1 AS pid FROM entity_cooccurrences AS c
            WHERE c.bank_id = %(p1)s AND c.entity_id_2 = near.id AND c.cooccurrence_count > 0) AS p
     CROSS JOIN LATERAL (
           SELECT lower(x.canonical_name) AS key, x.last_seen FROM entities AS x
            WHERE x.bank_id = %(p1)s AND x.id = p.pid AND x.entity_kind <> 'label' OFFSET 0) AS e)
SELECT q.i::int AS i, part.pid::text AS id, T.similarity(part.key, q.m)::float8 AS sim,
       extract(EPOCH FROM part.last_seen)::float8 AS last_seen
  FROM unnest(%(keys)s::text[], %(kf)s::int[]) WITH ORDINALITY AS q (m, f, i)
  JOIN part ON part.f = q.f
 WHERE T.similarity(part.key, q.m) >= 0.3
""".replace("T.", t + ".")
    btree = """
WITH w AS MATERIALIZED (
    SELECT e.id, lower(e.canonical_name) AS key, e.last_seen
      FROM entities AS e
     WHERE e.bank_id = %(p1)s AND e.last_seen BETWEEN %(lo)s AND %(hi)s AND e.entity_kind <> 'label')
SELECT q.i::int AS i, w.id::text AS id, T.similarity(w.key, q.m)::float8 AS sim,
       extract(EPOCH FROM w.last_seen)::float8 AS last_seen
  FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS q (m, i)
  JOIN w ON T.similarity(w.key, q.m) >= 0.3
""".replace("T.", t + ".")
    gin = """
SELECT q.i::int AS i, c.id::text AS id, c.sim, c.last_seen
  FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS q (m, i)
 CROSS JOIN LATERAL (
       SELECT e.id, T.similarity(lower(e.canonical_name), q.m)::float8 AS sim,
              extract(EPOCH FROM e.last_seen)::float8 AS last_seen
         FROM entities AS e
        WHERE e.bank_id = %(p1)s AND e.entity_kind <> 'label'
          AND (e.last_seen AT TIME ZONE 'UTC')::date BETWEEN %(dlo)s AND %(dhi)s
          AND e.last_seen BETWEEN %(lo)s AND %(hi)s
          AND F(e.canonical_name) OPERATOR (T.%%) q.m) AS c
""".replace("T.", t + ".")
    f = SCHEMA + "_internal.folded"
    partners, gin = partners.replace("F(", f + "("), gin.replace("F(", f + "(")
    near, pruned = near.replace("F(", f + "("), pruned.replace("F(", f + "(")
    return {"full": full,
            "partners": "WITH " + near + "," + partners,
            "partners_pruned": "WITH " + pruned + "," + partners,
            "recent_btree_7d": btree, "recent_btree_3.5d": btree,
            "recent_gin_3.5d": gin, "recent_gin_3.5d_sim0.5": gin}


WINDOWS = {"recent_btree_7d": 7.0, "recent_btree_3.5d": 3.5, "recent_gin_3.5d": 3.5, "recent_gin_3.5d_sim0.5": 3.5}


def create_indexes(conn: psycopg.Connection) -> Dict[str, Any]:
    t = sql.Identifier(_trgm_schema(conn)).as_string(conn)
    started = time.monotonic()
    conn.execute("CREATE INDEX nbhd_last_seen_idx ON entities (bank_id, last_seen)")
    btree_s = time.monotonic() - started
    started = time.monotonic()
    conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    conn.execute("SET maintenance_work_mem = '256MB'")
    conn.execute(f"CREATE INDEX nbhd_recent_gin_idx ON entities USING gin (bank_id,"
                 f" ((last_seen AT TIME ZONE 'UTC')::date),"
                 f" {SCHEMA}_internal.folded(canonical_name) {t}.gin_trgm_ops)"
                 " WITH (fastupdate = FALSE) WHERE entity_kind <> 'label'")
    conn.execute("RESET maintenance_work_mem")
    gin_s = time.monotonic() - started
    conn.execute("VACUUM ANALYZE entities")
    sizes = dict(conn.execute(
        "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class AS c WHERE c.relname IN"
        " ('nbhd_last_seen_idx', 'nbhd_recent_gin_idx', 'entities_name_trgm_idx')").fetchall())
    return {"btree_seconds": round(btree_s, 1), "gin_seconds": round(gin_s, 1),
            "index_mb": {k: round(v / 2**20, 1) for k, v in sizes.items()}}


class Batch:
    """One retain's full-probe keys, their facts and the facts' nearby names, as the statements take them."""

    def __init__(self, facts: List[List[str]], bank_names: Set[str]) -> None:
        self.keys: List[str] = []
        self.key_fact: List[int] = []
        self.near: List[Tuple[str, int]] = []
        self.cnt: Dict[Tuple[int, str], int] = {}
        fact_cnt: List[int] = []
        seen: Set[Tuple[str, int]] = set()
        for f, texts in enumerate(facts, start=1):
            lowered = {x.lower() for x in texts}
            mine = sorted(k for k in lowered if k not in bank_names)
            for k in mine:
                self.keys.append(k)
                self.key_fact.append(f)
                # distinct_nearby: the fact's other texts, distinct (the mention's own spellings left out)
                self.cnt[(f, k)] = max(1, len({x for x in texts if x.lower() != k}))
            fact_cnt.append(min([self.cnt[(f, k)] for k in mine] or [1]))
            for x in lowered:
                if x in bank_names and (x, f) not in seen:
                    seen.add((x, f))
                    self.near.append((x, f))
        self.fact_cnt = fact_cnt

    def params(self, bank_id: str) -> Dict[str, Any]:
        return {"p1": bank_id, "p2": self.keys, "p3": LIMIT, "keys": self.keys, "kf": self.key_fact,
                "nn": [n for n, _ in self.near], "nf": [f for _, f in self.near], "fc": self.fact_cnt}


def _window(params: Dict[str, Any], days: float) -> Dict[str, Any]:
    lo, hi = NOW - timedelta(days=days), NOW + timedelta(days=days)
    return {**params, "lo": lo, "hi": hi, "dlo": lo.date(), "dhi": hi.date()}


def _context(conn: psycopg.Connection, bank_id: str, batch: Batch) -> Dict[int, Dict[str, float]]:
    """Per fact, candidate id -> the damped co-occurrence weight sum 1/sqrt(degree) of its nearby partners."""
    rows = conn.execute("""
        WITH near AS (SELECT DISTINCT n.f, e.id FROM unnest(%s::text[], %s::int[]) AS n (name, f)
                        CROSS JOIN LATERAL (SELECT x.id FROM entities AS x WHERE x.bank_id = %s
                                 AND entity_resolver_internal.folded(x.canonical_name) = n.name OFFSET 0) AS e),
             pairs AS (SELECT c.entity_id_1 AS a, c.entity_id_2 AS b FROM entity_cooccurrences AS c
                        WHERE c.bank_id = %s AND c.cooccurrence_count > 0
                          AND (c.entity_id_1 IN (SELECT id FROM near) OR c.entity_id_2 IN (SELECT id FROM near)))
        SELECT near.f, near.id::text, p.other::text,
               count(*) OVER (PARTITION BY near.f, near.id) AS deg
          FROM near JOIN (SELECT a AS me, b AS other FROM pairs UNION ALL SELECT b, a FROM pairs) AS p
            ON p.me = near.id""",
                        ([n for n, _ in batch.near], [f for _, f in batch.near], bank_id, bank_id)).fetchall()
    out: Dict[int, Dict[str, float]] = {}
    for f, _near_id, other, deg in rows:
        d = out.setdefault(f, {})
        d[other] = d.get(other, 0.0) + 1.0 / sqrt(max(deg, 1))
    return out


def _could_reach(key: str, cand_key: str, sim: float, cooc_sum: float, cnt: int, last_seen: float) -> bool:
    if round(sim, 6) >= 1.0:
        return True
    name = SequenceMatcher(None, key, cand_key).ratio()
    days = abs(NOW.timestamp() - last_seen) / 86400.0 if last_seen is not None else WINDOW_DAYS
    recency = max(0.0, 1.0 - days / WINDOW_DAYS)
    wn, wc, wr = WEIGHTS
    return round(wn * name + wc * (cooc_sum / cnt) + wr * recency, 6) >= THRESHOLD


# --constant-activity: the bank's last_seen dates spread over 60 days per
# 10,000 entities (build_bank's rate at 10,000 kept at every size: about
# 1,170 entities seen per week), as a memory that grows at a constant rate
# would be, instead of over 60 days at every size.
SQL_CONSTANT_ACTIVITY = (
    "UPDATE entities SET last_seen = %(now)s - make_interval(secs => %(span)s * 86400.0"
    " * ((hashtext(id::text)::bigint & 2147483647)::float8 / 2147483647)) WHERE bank_id = %(b)s")


def measure_size(dsn: str, size: int, batches: int, seed: int = SEED, warmup: int = 2,
                 say=print, constant_activity: bool = False) -> Dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8'"
                              " LC_CTYPE 'C.UTF-8'").format(sql.Identifier(DB)))
    bdsn = _dsn(dsn, DB)
    entry: Dict[str, Any] = {"entities": size}
    try:
        with psycopg.connect(bdsn, autocommit=True) as conn, psycopg.connect(bdsn, autocommit=True) as strict:
            install(conn, SCHEMA)
            for c in (conn, strict):
                c.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
            say(f"{size:,}: building the bank")
            bank: Bank = build_bank(conn, size, seed)
            if constant_activity:
                entry["last_seen_span_days"] = 60.0 * size / 10_000
                conn.execute(SQL_CONSTANT_ACTIVITY, {"now": NOW, "span": entry["last_seen_span_days"],
                                                     "b": bank.bank_id})
                conn.execute("VACUUM ANALYZE entities")
            entry["build_seconds"] = round(bank.seconds, 1)
            entry["pairs"] = bank.pairs
            entry["indexes"] = create_indexes(conn)
            say(f"{size:,}: built in {bank.seconds:.0f} s, indexes {entry['indexes']}")
            conn.execute("SET pg_trgm.similarity_threshold = 0.3")
            strict.execute("SET pg_trgm.similarity_threshold = 0.5")
            stmts = statements(conn)
            bank_names = {n.lower() for n in bank.names}
            rng = random.Random(seed + size)           # the retains bench.run times at this size
            retains = [make_retain(bank, rng) for _ in range(batches + warmup)]
            ms: Dict[str, List[float]] = {k: [] for k in stmts}
            rows: Dict[str, List[int]] = {k: [] for k in stmts}
            cov = {"keys": 0, "full_rows": 0, "reachable": 0, "reachable_identical_trgm": 0,
                   "keys_over_limit": 0, "rows_beyond_limit": 0, "found": {}, "reachable_beyond_limit": {},
                   "missed": {}, "beyond": {}}
            unions = {"partners+recent_btree_7d": ("partners", "recent_btree_7d"),
                      "partners+recent_3.5d": ("partners", "recent_btree_3.5d"),
                      "partners_pruned+recent_7d": ("partners_pruned", "recent_btree_7d"),
                      "partners_pruned+recent_3.5d": ("partners_pruned", "recent_btree_3.5d"),
                      "partners+recent_gin_3.5d_sim0.5": ("partners", "recent_gin_3.5d_sim0.5")}
            plans: Dict[str, List[str]] = {}
            by_words: Dict[str, List[Tuple[float, int]]] = {}
            order = list(stmts)
            for n, facts in enumerate(retains):
                batch = Batch(facts, bank_names)
                if not batch.keys:
                    continue
                base = batch.params(bank.bank_id)
                got: Dict[str, List[tuple]] = {}
                timed: Dict[str, float] = {}
                for name in order[n % len(order):] + order[:n % len(order)]:
                    params = _window(base, WINDOWS[name]) if name in WINDOWS else base
                    c = strict if name.endswith("sim0.5") else conn
                    t0 = time.perf_counter()
                    got[name] = c.execute(stmts[name], params, prepare=True).fetchall()
                    timed[name] = (time.perf_counter() - t0) * 1000.0
                # The full probe of the one-word keys apart from the others'
                # (what a neighbourhood source for bare names would replace).
                for label, ks in (("one_word", [k for k in batch.keys if len(k.split()) == 1]),
                                  ("more_words", [k for k in batch.keys if len(k.split()) > 1])):
                    t0 = time.perf_counter()
                    if ks:
                        conn.execute(stmts["full"], {**base, "p2": ks}, prepare=True).fetchall()
                    if n >= warmup:
                        by_words.setdefault(label, []).append(((time.perf_counter() - t0) * 1000.0, len(ks)))
                if n == warmup:
                    for name in stmts:
                        params = _window(base, WINDOWS[name]) if name in WINDOWS else base
                        plan = psycopg.ClientCursor(conn).execute(
                            "EXPLAIN (FORMAT JSON) " + stmts[name], params).fetchone()[0][0]["Plan"]
                        plans[name] = sorted(set(_index_nodes(plan)))
                if n < warmup:
                    continue
                for name in stmts:
                    ms[name].append(timed[name])
                    rows[name].append(len(got[name]))
                # -- coverage (untimed) --
                over = conn.execute(
                    "SELECT q.i::int, (SELECT count(*) FROM entities AS e WHERE e.bank_id = %s"
                    " AND e.entity_kind <> 'label' AND " + SCHEMA + "_internal.folded(e.canonical_name) OPERATOR ("
                    + _trgm_op(conn)
                    + ") q.m) FROM unnest(%s::text[]) WITH ORDINALITY AS q (m, i)",
                    (bank.bank_id, batch.keys)).fetchall()
                cut = {i for i, k in over if k > LIMIT}
                cov["keys"] += len(batch.keys)
                cov["keys_over_limit"] += len(cut)
                cov["rows_beyond_limit"] += sum(k - LIMIT for _, k in over if k > LIMIT)
                ctx = _context(conn, bank.bank_id, batch)
                keyname = dict(conn.execute("SELECT id::text, lower(canonical_name) FROM entities"
                                            " WHERE bank_id = %s AND id = ANY(%s::uuid[])",
                                            (bank.bank_id, list({r[1] for v in got.values() for r in v}))
                                            ).fetchall())

                def reach(rs: Sequence[tuple]) -> Set[Tuple[int, str]]:
                    out = set()
                    for i, cid, sim, ls in rs:
                        f, key = batch.key_fact[i - 1], batch.keys[i - 1]
                        if _could_reach(key, keyname[cid], sim, ctx.get(f, {}).get(cid, 0.0),
                                        batch.cnt[(f, key)], ls):
                            out.add((i, cid))
                    return out

                full = reach(got["full"])
                cov["full_rows"] += len(got["full"])
                cov["reachable"] += len(full)
                cov["reachable_identical_trgm"] += sum(1 for i, cid, sim, _ in got["full"]
                                                       if (i, cid) in full and round(sim, 6) >= 1.0)
                found = {name: {(r[0], r[1]) for r in got[name]} for name in stmts if name != "full"}
                for name, found_set in found.items():
                    cov["found"][name] = cov["found"].get(name, 0) + len(full & found_set)
                for u, parts in unions.items():
                    either = set().union(*(found[p] for p in parts))
                    cov["found"][u] = cov["found"].get(u, 0) + len(full & either)
                    for i, cid in sorted(full - either):
                        r = next(g for g in got["full"] if (g[0], g[1]) == (i, cid))
                        f, key = batch.key_fact[i - 1], batch.keys[i - 1]
                        cov["missed"].setdefault(u, []).append({
                            "key": key, "candidate": keyname[cid], "sim": round(r[2], 3),
                            "ratio": round(SequenceMatcher(None, key, keyname[cid]).ratio(), 3),
                            "cooc": round(ctx.get(f, {}).get(cid, 0.0) / batch.cnt[(f, key)], 3),
                            "days": round(abs(NOW.timestamp() - r[3]) / 86400.0, 2)})
                    # reachable candidates the sources find beyond the full probe's top 200 (cut keys only)
                    beyond = reach([r for p in parts for r in got[p]
                                    if r[0] in cut and (r[0], r[1]) not in {(g[0], g[1]) for g in got["full"]}])
                    cov["reachable_beyond_limit"][u] = cov["reachable_beyond_limit"].get(u, 0) + len(beyond)
                    for i, cid in sorted(beyond):
                        key = batch.keys[i - 1]
                        sim = next(r[2] for p in parts for r in got[p] if (r[0], r[1]) == (i, cid))
                        floor = min(g[2] for g in got["full"] if g[0] == i)
                        cov["beyond"].setdefault(u, []).append({
                            "key": key, "candidate": keyname[cid], "sim": round(sim, 3),
                            "full_probe_200th_sim": round(floor, 3),
                            "ratio": round(SequenceMatcher(None, key, keyname[cid]).ratio(), 3)})
                # A one-word key's fits under bare_names (decide._in_neighbourhood): the entities
                # holding its word that are partners of a nearby name or seen within the 7-day
                # window; how many of them the full probe's top 200 leaves out.
                in_full = {(g[0], g[1]) for g in got["full"]}
                for i, cid in {(r[0], r[1]) for p in ("partners", "recent_btree_7d") for r in got[p]}:
                    key = batch.keys[i - 1]
                    if len(key.split()) == 1 and key in keyname[cid].split():
                        cov["bare_fits"] = cov.get("bare_fits", 0) + 1
                        if (i, cid) not in in_full:
                            cov["bare_fits_beyond_limit"] = cov.get("bare_fits_beyond_limit", 0) + 1
                if (n - warmup) % 5 == 4:
                    say(f"{size:,}: batch {n - warmup + 1}/{batches}: full {statistics.median(ms['full']):.1f} ms")
            entry["plans"] = plans
            entry["batches"] = len(ms["full"])
            entry["keys_per_batch"] = round(cov["keys"] / max(1, entry["batches"]), 1)
            entry["ms"] = {k: {"median": round(statistics.median(v), 2), "p95": round(percentile(v, 0.95), 2)}
                           for k, v in ms.items()}
            entry["ratio_to_full"] = {k: round(statistics.median([x / y for x, y in zip(v, ms["full"])]), 3)
                                      for k, v in ms.items() if k != "full"}
            for u, parts in unions.items():
                entry["ratio_to_full"][u] = round(statistics.median(
                    [sum(ms[p][j] for p in parts) / ms["full"][j] for j in range(len(ms["full"]))]), 3)
            entry["rows_per_batch"] = {k: round(statistics.mean(v), 1) for k, v in rows.items()}
            entry["full_by_words"] = {label: {"median_ms": round(statistics.median(t for t, _ in v), 2),
                                              "keys_per_batch": round(statistics.mean(k for _, k in v), 1)}
                                      for label, v in by_words.items()}
            entry["coverage"] = cov
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
    return entry


def _trgm_op(conn: psycopg.Connection) -> str:
    return sql.Identifier(_trgm_schema(conn)).as_string(conn) + ".%%"


def _index_nodes(plan: Dict[str, Any]) -> List[str]:
    out = [f"{plan['Node Type']} on {plan.get('Index Name') or plan['Relation Name']}"] \
        if "Index Name" in plan or "Relation Name" in plan else []
    for child in plan.get("Plans", []):
        out.extend(_index_nodes(child))
    return out


def markdown(result: Dict[str, Any]) -> str:
    lines = []
    sizes = list(result["sizes"].values())
    names = list(sizes[0]["ms"])
    head = "| source | " + " | ".join(f"{s['entities']:,}: median / p95 ms | ratio to full | rows"
                                     for s in sizes) + " |"
    lines += [head, "|" + "---|" * (1 + 3 * len(sizes))]
    for name in names:
        cells = []
        for s in sizes:
            m = s["ms"][name]
            cells += [f"{m['median']:.1f} / {m['p95']:.1f}",
                      "1" if name == "full" else f"{s['ratio_to_full'][name]:.2f}",
                      f"{s['rows_per_batch'][name]:.0f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for u in sizes[0]["coverage"]["reachable_beyond_limit"]:
        lines.append(f"| {u} (sum of both) | " + " | ".join(
            f"- | {s['ratio_to_full'][u]:.2f} | -" for s in sizes) + " |")
    lines += ["", "| coverage | " + " | ".join(f"{s['entities']:,}" for s in sizes) + " |",
              "|---|" + "---|" * len(sizes)]
    c0 = sizes[0]["coverage"]
    rows = [("full-probe keys (all batches)", lambda c: c["keys"]),
            ("full-probe rows (top 200)", lambda c: c["full_rows"]),
            ("of them could reach 0.6 (bound)", lambda c: c["reachable"]),
            ("  of which identical trigram sets (sim 1.0)", lambda c: c["reachable_identical_trgm"]),
            ("keys with > 200 rows at sim >= 0.3", lambda c: c["keys_over_limit"]),
            ("rows cut by the limit", lambda c: c["rows_beyond_limit"]),
            ("one-word keys' fits in the neighbourhood (partners, 7 days)", lambda c: c.get("bare_fits", 0)),
            ("  of which beyond the full probe's top 200", lambda c: c.get("bare_fits_beyond_limit", 0))]
    for name in c0["found"]:
        rows.append((f"reachable found by {name}", lambda c, n=name: c["found"][n]))
    for name in c0["reachable_beyond_limit"]:
        rows.append((f"reachable beyond top 200 found by {name}", lambda c, n=name: c["reachable_beyond_limit"][n]))
    for label, get in rows:
        lines.append(f"| {label} | " + " | ".join(f"{get(s['coverage']):,}" for s in sizes) + " |")
    if all("full_by_words" in s for s in sizes):
        lines += ["", "| full probe of (median ms per batch, keys per batch) | "
                  + " | ".join(f"{s['entities']:,}" for s in sizes) + " |", "|---|" + "---|" * len(sizes)]
        for label in sizes[0]["full_by_words"]:
            lines.append(f"| {label.replace('_', ' ')} keys | " + " | ".join(
                f"{s['full_by_words'][label]['median_ms']:.1f} ({s['full_by_words'][label]['keys_per_batch']})"
                for s in sizes) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--constant-activity", action="store_true",
                    help="spread last_seen over 60 days per 10,000 entities (a memory growing at a constant rate)")
    args = ap.parse_args(list(argv) or None)
    started = time.monotonic()
    result: Dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_before": os.getloadavg(), "sizes": {}}
    for size in args.sizes:
        result["sizes"][str(size)] = measure_size(args.dsn, size, args.batches,
                                                  say=lambda m: print(m, flush=True),
                                                  constant_activity=args.constant_activity)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=1, default=str)
    result["load_after"] = os.getloadavg()
    result["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
    print(json.dumps(result, indent=1, default=str))
    print(markdown(result))


if __name__ == "__main__":
    main()
