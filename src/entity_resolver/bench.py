"""Speed: resolver batches against their bare candidate probe, and the trigger path's throughput.

    from entity_resolver.bench import run_bench
    result = run_bench("host=127.0.0.1 port=5432 user=postgres dbname=postgres")

``run_bench`` creates a scratch database (``entity_resolver_bench``) next to the
one the DSN names, installs entity_resolver in it, and for each bank size:

1. builds a bank set-based (COPY, not through the resolver): seeded names
   (people, organisations, projects, numbered things), a co-occurrence graph
   of small communities (1-4 partners each) plus a dozen hubs ("user", "the
   team", ...) each next to 1.5 % of the bank, and last_seen dates over 60 days;
2. generates batches of 58 mentions (a typical retain: about ten facts of 4-8
   mentions, each mention with the other mentions of its fact as nearby)
   mixing exact repeats, case variants, typos, bare first names, hubs and new
   names;
3. times, alternating batch by batch, ``resolve_mentions`` on the batch (in a
   transaction rolled back, so every batch sees the same bank) and the bare
   candidate probe: the resolver's own SQL_CANDIDATES statement (read from
   the installed module) with the same distinct keys, the same pg_trgm
   threshold and the same LIMIT, as a prepared statement, without scoring;
4. runs 1 and then 4 concurrent writers inserting retains (one INSERT INTO
   facts of about ten facts, 58 mentions, per transaction) into the bank for
   a fixed time, each writer count twice: statistics flushed at commit (the
   default), then with ``entity_resolver.flush_at_commit = off`` and one more
   session calling ``flush_stats()`` every second (the backlog left when the
   writers stop is counted and applied by a final, timed flush); after each
   run the applied statistics are checked against what was inserted
   (mention_count against the mentions, cooccurrence_count against a recount
   of the pairs in unit_entities);
5. reads the benchmark backend's memory (/proc when the server is local, and
   pg_backend_memory_contexts);
6. profiles the PL/Python side at one size: time per SQL statement of the
   resolver, the rest (Python), and a cProfile ranking, through a temporary
   PL/Python function that calls the installed resolver with a timing proxy.

The figures are written with a description of the machine to
docs/benchmarks.md (``out``) and returned as a dict.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import random
import re
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from entity_resolver import evaluate
from entity_resolver.install import install

SCHEMA = "entity_resolver"
BENCH_DB = "entity_resolver_bench"
# 1,000,000 does not fit the ~10 minute budget on a 2-core machine (building
# the bank alone takes about 4 minutes); ask for it with sizes=.
DEFAULT_SIZES = (10_000, 100_000)
BATCH_MENTIONS = 58
SEED = 58
HUB_SHARE = 0.015
COMMUNITY = 40
FLUSH_EVERY = 1.0  # seconds between flush_stats() calls when writers do not flush at commit
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)

# -- name pools -----------------------------------------------------------------

FIRST = """Aaliyah Aaron Abigail Adam Adrian Aisha Alan Alex Alice Amara Amelia Ana Andre Andrew
Angela Anna Anthony Arjun Aria Asha Ben Bianca Boris Brian Bruno Caleb Camila Carlos Carmen
Caroline Charles Chen Chloe Chris Claire Clara Daniel Daria David Diana Diego Dmitri Elena Eli
Elias Elif Emily Emma Eric Erik Ethan Eva Fatima Felix Fiona Gabriel Grace Hana Hannah Harry
Hassan Helen Henry Ian Ibrahim Ines Irene Isaac Ivan Jack Jacob James Jana Jasmine Javier Jin
John Jonas Jordan Jorge Jose Julia Kai Karen Kenji Kevin Kim Lars Laura Layla Leah Leo Liam
Lina Lucas Lucia Luis Luka Maya Marco Maria Mark Marta Mateo Max Mei Mia Michael Mila Mohammed
Nadia Naomi Nina Noah Nora Oliver Olivia Omar Oscar Pablo Paul Peter Priya Rafael Rahul Rania
Rosa Ruby Ryan Sam Samir Sara Sarah Sean Sofia Sophie Stefan Tara Theo Thomas Tom Valeria Victor
Wei Yara Yusuf Zara Zoe""".split()
SYLLABLES = """ka lo mi ra ven dor tel sen mar qui bel tor an es ul ri son berg ford ley wick ton
ham stad ski ova ez ini ard ell bro cha dun fie gar hol jur kel lun mon nor pat ros sto tam urb val
wes yor zim bak cor dal fen gil hux ish jor kru lam mer nad oke pim rud sal tiv uzo vor wyn xan yel
zor""".split()
ORG_SUFFIX = """Labs Inc Group Systems Partners Health Foods Capital Logistics Studio Analytics
Robotics Energy Media Ventures""".split()
ADJ = """Blue Red Green Silver Golden Quiet Rapid Bright Northern Southern Eastern Western Hidden
Open Iron Crystal Amber Coral Solar Lunar Swift Bold Clear Deep Early Final Grand Little Major
Minor Modern Prime Royal Smart Steady Urban Vivid Wild Young Zero""".split()
NOUN = """Harbor River Falcon Maple Orbit Summit Canyon Meadow Beacon Bridge Compass Delta Ember
Forest Garden Glacier Horizon Island Jungle Lantern Mosaic Nebula Oasis Pebble Prairie Quartz
Rocket Sierra Tundra Valley Willow Aurora Comet Dune Fjord Grove Lagoon Mesa Reef""".split()
KIND = """migration launch rollout review audit redesign pilot program initiative roadmap
campaign refactor upgrade workshop study""".split()
NUMBERED = """Ticket Sprint Room Invoice Order Build Release Incident Flight Case""".split()
HUBS = ["user", "the team", "Slack", "standup", "customer", "engineering", "product", "email",
        "meeting", "roadmap", "support", "sales"]


def _surname(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables)).capitalize()


@dataclass
class Bank:
    """What the batch generator needs to know about a built bank."""

    bank_id: str
    size: int
    names: List[str]
    kinds: List[str]                  # person / org / project / numbered / hub
    seconds: float = 0.0
    pairs: int = 0

    def community(self, i: int) -> range:
        start = (i // COMMUNITY) * COMMUNITY
        return range(start, min(start + COMMUNITY, self.size))


def generate_names(size: int, rng: random.Random) -> Tuple[List[str], List[str]]:
    """``size`` distinct names (distinct after lowercasing) and their kinds; hubs first."""
    names: List[str] = list(HUBS)
    kinds: List[str] = ["hub"] * len(HUBS)
    seen = {n.lower() for n in names}
    while len(names) < size:
        roll = rng.random()
        if roll < 0.60:
            name = f"{rng.choice(FIRST)} {_surname(rng, rng.choice((2, 3)))}"
            kind = "person"
        elif roll < 0.75:
            name = f"{_surname(rng, 2)} {rng.choice(ORG_SUFFIX)}"
            kind = "org"
        elif roll < 0.87:
            name = f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(KIND)}"
            kind = "project"
        else:
            name = f"{rng.choice(NUMBERED)} {rng.randrange(1, 10 * size)}"
            kind = "numbered"
        key = name.lower()
        if key in seen:
            continue
        seen.add(key)
        names.append(name)
        kinds.append(kind)
    return names[:size], kinds[:size]


def build_bank(conn: psycopg.Connection, size: int, seed: int = SEED) -> Bank:
    """Load a bank of ``size`` entities and its co-occurrence graph with COPY; return it."""
    started = time.monotonic()
    rng = random.Random(seed * 7919 + size)
    bank_id = f"bench-{size}"
    names, kinds = generate_names(size, rng)
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(size)]
    conn.execute("INSERT INTO banks (bank_id) VALUES (%s)", (bank_id,))
    with conn.cursor().copy(
            "COPY entities (bank_id, id, canonical_name, entity_kind, mention_count, first_seen, last_seen)"
            " FROM STDIN") as copy:
        for i in range(size):
            last = NOW - timedelta(minutes=rng.randrange(60 * 24 * 60))
            first = last - timedelta(minutes=rng.randrange(60 * 24 * 120))
            copy.write_row((bank_id, ids[i], names[i], "regular", rng.randrange(1, 40), first, last))
    # The graph: small communities (a person's project, team, company) and hubs.
    pairs: Dict[Tuple[uuid.UUID, uuid.UUID], int] = {}

    def pair(a: int, b: int) -> None:
        if a == b:
            return
        x, y = ids[a], ids[b]
        key = (x, y) if x < y else (y, x)
        pairs[key] = pairs.get(key, 0) + rng.randrange(1, 4)

    nhubs = len(HUBS)
    for i in range(nhubs, size):
        members = [j for j in range(max(nhubs, (i // COMMUNITY) * COMMUNITY),
                                    min(size, (i // COMMUNITY + 1) * COMMUNITY)) if j != i]
        for j in rng.sample(members, min(len(members), rng.choice((1, 1, 2, 2, 3, 4)))):
            pair(i, j)
    per_hub = max(1, int(size * HUB_SHARE))
    for h in range(nhubs):
        for j in rng.sample(range(nhubs, size), min(size - nhubs, per_hub)):
            pair(h, j)
    with conn.cursor().copy(
            "COPY entity_cooccurrences (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)"
            " FROM STDIN") as copy:
        for (a, b), n in pairs.items():
            copy.write_row((bank_id, a, b, n, NOW - timedelta(minutes=rng.randrange(60 * 24 * 60))))
    # VACUUM also empties the trigram index's pending list (gin fastupdate),
    # which a steady-state bank has flushed long ago.
    conn.execute("VACUUM ANALYZE entities")
    conn.execute("VACUUM ANALYZE entity_cooccurrences")
    return Bank(bank_id, size, names, kinds, time.monotonic() - started, len(pairs))


# -- batches --------------------------------------------------------------------

_NEAR_KEYS = {"a": "s", "e": "r", "i": "o", "o": "i", "n": "m", "r": "t", "s": "a", "t": "r",
              "l": "k", "c": "v", "d": "f", "h": "j", "m": "n", "u": "y"}


def typo(rng: random.Random, name: str) -> str:
    """One slip (swap, drop, double, substitute) in the longest word of ``name``."""
    words = name.split(" ")
    w = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[w]
    if len(word) < 4:
        return name
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        word = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    elif kind == 1:
        word = word[:i] + word[i + 1:]
    elif kind == 2:
        word = word[:i] + word[i] + word[i:]
    else:
        word = word[:i] + _NEAR_KEYS.get(word[i].lower(), "e") + word[i + 1:]
    words[w] = word
    return " ".join(words)


def _new_name(rng: random.Random) -> str:
    # Four syllables: never in the bank, whose generated surnames have 2 or 3.
    if rng.random() < 0.7:
        return f"{rng.choice(FIRST)} {_surname(rng, 4)}"
    return f"{_surname(rng, 4)} {rng.choice(ORG_SUFFIX)}"


def make_retain(bank: Bank, rng: random.Random, mentions: int = BATCH_MENTIONS) -> List[List[str]]:
    """One retain: about ten facts of 4-8 mention texts, ``mentions`` in all."""
    facts: List[List[str]] = []
    left = mentions
    while left > 0:
        n = min(left, rng.randint(4, 8))
        if 0 < left - n < 4:
            n = left
        left -= n
        anchor = rng.randrange(len(HUBS), bank.size)
        community = [j for j in bank.community(anchor) if bank.kinds[j] != "hub"] or [anchor]
        texts: List[str] = []
        for _ in range(n):
            roll = rng.random()
            j = rng.choice(community)
            name = bank.names[j]
            if roll < 0.40:
                text = name                                  # exact repeat
            elif roll < 0.50:
                text = name.lower() if rng.random() < 0.5 else name.upper()
            elif roll < 0.65:
                text = typo(rng, name)
            elif roll < 0.72 and bank.kinds[j] == "person":
                text = name.split(" ")[0]                    # bare first name
            elif roll < 0.78:
                text = rng.choice(HUBS)
            else:
                text = _new_name(rng)
            texts.append(text)
        facts.append(texts)
    return facts


def retain_json(facts: Sequence[Sequence[str]]) -> str:
    """resolve_mentions elements: each mention with the other mentions of its fact as nearby."""
    items = []
    for texts in facts:
        for k, t in enumerate(texts):
            items.append({"text": t, "nearby": list(texts[:k]) + list(texts[k + 1:])})
    return json.dumps(items, ensure_ascii=False)


# -- measuring ------------------------------------------------------------------

def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _installed_source(conn: psycopg.Connection, module: str) -> str:
    return conn.execute(
        sql.SQL("SELECT source FROM {}.plpython_modules WHERE name = %s").format(sql.Identifier(SCHEMA)),
        (module,)).fetchone()[0]


def probe_statement(conn: psycopg.Connection) -> str:
    """The resolver's installed SQL_CANDIDATES, wrapped in count(*), with psycopg placeholders."""
    tree = ast.parse(_installed_source(conn, "resolver"))
    text = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SQL_CANDIDATES" for t in node.targets):
            text = ast.literal_eval(node.value)
    if text is None:
        raise RuntimeError("SQL_CANDIDATES not found in the installed resolver module")
    trgm = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
                        ).fetchone()[0]
    text = text.replace("@trgm@", trgm).replace("%", "%%")
    text = re.sub(r"\$(\d+)", lambda m: f"%(p{m.group(1)})s", text)
    return f"SELECT count(*) FROM ({text}) AS probe"


def effective_settings(conn: psycopg.Connection, bank_id: str) -> Dict[str, Any]:
    row = conn.execute("SELECT configure_bank(%s, settings)::text FROM banks WHERE bank_id = %s",
                       (bank_id, bank_id)).fetchone()
    return json.loads(row[0])


@dataclass
class Latency:
    batch_ms: List[float] = field(default_factory=list)
    probe_ms: List[float] = field(default_factory=list)
    candidates: List[int] = field(default_factory=list)

    def summary(self) -> Dict[str, Any]:
        b, p = self.batch_ms, self.probe_ms
        ratios = [x / y for x, y in zip(b, p) if y > 0]
        return {
            "batches": len(b),
            "batch_ms": {"median": round(statistics.median(b), 2), "p95": round(_percentile(b, 0.95), 2)},
            "probe_ms": {"median": round(statistics.median(p), 2), "p95": round(_percentile(p, 0.95), 2)},
            "ratio_of_medians": round(statistics.median(b) / statistics.median(p), 2),
            "median_ratio": round(statistics.median(ratios), 2),
            "mentions_per_second": round(BATCH_MENTIONS * len(b) / (sum(b) / 1000.0), 1),
            "candidate_rows_per_batch": round(statistics.mean(self.candidates), 1),
        }


def measure_latency(conn: psycopg.Connection, bank: Bank, retains: Sequence[List[List[str]]],
                    warmup: int = 3) -> Latency:
    """Resolver batch and bare probe, alternating which goes first, each batch rolled back."""
    cfg = effective_settings(conn, bank.bank_id)
    threshold = max(cfg["candidate_similarity"], cfg["merge_min_similarity"])
    probe = probe_statement(conn)
    conn.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, false)", (repr(float(threshold)),))
    out = Latency()
    conn.autocommit = False
    try:
        for n, facts in enumerate(retains):
            texts = [t for f in facts for t in f]
            keys = conn.execute("SELECT ARRAY(SELECT DISTINCT lower(t) FROM unnest(%s::text[]) AS t)",
                                (texts,)).fetchone()[0]
            conn.rollback()
            params = {"p1": bank.bank_id, "p2": sorted(keys), "p3": cfg["max_candidates"]}
            payload = retain_json(facts)

            def run_batch() -> float:
                t = time.perf_counter()
                conn.execute("SELECT count(*) FROM resolve_mentions(%s, %s::jsonb, %s)",
                             (bank.bank_id, payload, NOW), prepare=True).fetchall()
                d = time.perf_counter() - t
                conn.rollback()
                return d * 1000.0

            def run_probe() -> Tuple[float, int]:
                t = time.perf_counter()
                rows = conn.execute(probe, params, prepare=True).fetchone()[0]
                d = time.perf_counter() - t
                conn.rollback()
                return d * 1000.0, rows

            if n % 2 == 0:
                b = run_batch()
                p, rows = run_probe()
            else:
                p, rows = run_probe()
                b = run_batch()
            if n >= warmup:
                out.batch_ms.append(b)
                out.probe_ms.append(p)
                out.candidates.append(rows)
    finally:
        conn.rollback()
        conn.autocommit = True
    return out


def _scan_nodes(plan: Dict[str, Any]) -> List[str]:
    nodes = []
    if "Relation Name" in plan or "Index Name" in plan:
        nodes.append(f"{plan['Node Type']} on {plan.get('Index Name') or plan.get('Relation Name')}")
    for child in plan.get("Plans", []):
        nodes.extend(_scan_nodes(child))
    return nodes


def probe_plan(dsn: str, bank: Bank, facts: List[List[str]], timeout_s: int = 20) -> Dict[str, Any]:
    """The plan a fresh session picks for the probe (a custom plan, as for a session's first
    calls), and one timed execution: a seq scan here means every new session pays it."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
        c.execute("SET pg_trgm.similarity_threshold = 0.3")
        c.execute(f"SET statement_timeout = '{int(timeout_s)}s'")
        texts = [t for f in facts for t in f]
        keys = c.execute("SELECT ARRAY(SELECT DISTINCT lower(t) FROM unnest(%s::text[]) AS t)",
                         (texts,)).fetchone()[0]
        params = {"p1": bank.bank_id, "p2": sorted(keys), "p3": 200}
        cur = psycopg.ClientCursor(c)
        cur.execute("EXPLAIN (FORMAT JSON) " + probe_statement(c), params)
        plan = cur.fetchone()[0][0]["Plan"]
        out: Dict[str, Any] = {"scans": sorted(set(_scan_nodes(plan)))}
        t = time.perf_counter()
        try:
            cur.execute(probe_statement(c), params)
            out["ms"] = round((time.perf_counter() - t) * 1000, 1)
        except psycopg.errors.QueryCanceled:
            out["ms"] = None
            out["timed_out_after_s"] = timeout_s
        gin = c.execute("SELECT pg_relation_size('entities_name_trgm_idx')").fetchone()[0]
        out["trigram_index_mb"] = round(gin / 2**20, 1)
        return out


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


def measure_writers(dsn: str, bank: Bank, writers: int, seconds: float, seed: int,
                    flush_at_commit: bool = True, flush_every: float = FLUSH_EVERY) -> Dict[str, Any]:
    """``writers`` sessions inserting retains (one INSERT INTO facts per transaction) for ``seconds``.

    With ``flush_at_commit`` off, the writers leave their statistics in
    stats_queue and one more session calls ``flush_stats()`` every
    ``flush_every`` seconds (on a fixed tick; a flush that overruns its tick
    is followed by the next one at once, as a scheduler would queue it);
    after the writers stop, the rows still queued are counted (the backlog)
    and applied by one final, timed ``flush_stats()``.
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
            rng = random.Random(seed * 1000 + w)
            retains = [make_retain(bank, rng) for _ in range(64)]
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET entity_resolver.flush_at_commit = %s" % ("on" if flush_at_commit else "off"))
                c.execute("SET statement_timeout = '60s'")
                start_line.wait()
                k = 0
                while time.monotonic() < stop_at[0]:
                    facts = retains[k % len(retains)]
                    k += 1
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
                      "p95": round(_percentile(lat, 0.95), 1) if lat else None},
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


# -- profiling ------------------------------------------------------------------

PROFILE_FUNCTION = """
CREATE FUNCTION pg_temp.er_bench_profile(bank text, batches text[], event_date text, use_cprofile boolean)
RETURNS text
LANGUAGE plpython3u
SET search_path = {schema}, pg_catalog, pg_temp
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$
import json, time
M = None
for k, v in GD.items():
    if isinstance(k, str) and k.startswith("entity_resolver:"):
        M = v
if M is None:
    plpy.error("call resolve_mentions once in this session first")
R, W = M["resolver"], M["words"]
names = {{}}
spent = {{}}


class Timed:
    # plpy, with execute() timed per prepared statement of the resolver.
    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def execute(self, plan, *args):
        name = names.get(id(plan))
        if name is None:
            names.clear()
            names.update({{id(p): n for n, p in R._PLANS.items()}})
            name = names.get(id(plan), "other")
        t = time.perf_counter()
        try:
            return self._real.execute(plan, *args)
        finally:
            e = spent.setdefault(name, [0, 0.0])
            e[0] += 1
            e[1] += time.perf_counter() - t


class Undo(Exception):
    pass


prof = None
if use_cprofile:
    import cProfile, pstats
    prof = cProfile.Profile()
timed = Timed(plpy)
seconds = 0.0
for b in batches:
    # Each batch from cold word caches, in a rolled-back subtransaction.
    for cached in (W.words_match, W._words, W.extract_numbers):
        cached.cache_clear()
    t = time.perf_counter()
    try:
        with plpy.subtransaction():
            if prof:
                prof.enable()
            try:
                R.resolve_items(timed, bank, R.parse_mentions(b), event_date)
            finally:
                if prof:
                    prof.disable()
            raise Undo()
    except Undo:
        pass
    seconds += time.perf_counter() - t
out = {{"batches": len(batches), "seconds": seconds, "sql": spent}}
if prof:
    st = pstats.Stats(prof).stats
    rows = []
    for (fname, line, func), (cc, nc, tt, ct, callers) in st.items():
        where = fname.rsplit("/", 1)[-1]
        rows.append([("%s:%d(%s)" % (where, line, func)) if line else func, nc, tt, ct])
    rows.sort(key=lambda r: -r[2])
    out["functions"] = rows[:25]
return json.dumps(out)
$$;
"""


def _run_profile(conn: psycopg.Connection, bank: Bank, payloads: List[str],
                 cprofile: bool = False) -> Dict[str, Any]:
    return json.loads(conn.execute("SELECT pg_temp.er_bench_profile(%s, %s, %s, %s)",
                                   (bank.bank_id, payloads, NOW.isoformat(), cprofile)).fetchone()[0])


def profile(conn: psycopg.Connection, bank: Bank, retains: Sequence[List[List[str]]]) -> Dict[str, Any]:
    """Where a batch's time goes inside the server.

    Runs the installed ``resolve_items`` on the batches (each in a rolled-back
    subtransaction, from cold word caches) with a timing proxy for plpy: time
    per SQL statement, the rest is Python; then once more under cProfile.
    """
    payloads = [retain_json(f) for f in retains]
    conn.execute("SELECT count(*) FROM resolve_mentions(%s, %s::jsonb, %s)",
                 (bank.bank_id, payloads[0], NOW))  # loads the modules into GD
    conn.execute(PROFILE_FUNCTION.format(schema=sql.Identifier(SCHEMA).as_string(conn)))
    n = len(payloads)
    _run_profile(conn, bank, payloads[:2])  # warm plans and buffers
    run = _run_profile(conn, bank, payloads)
    ranked = _run_profile(conn, bank, payloads, cprofile=True)
    per_batch = {name: {"calls": round(c / n, 2), "ms": round(1000 * s / n, 2)}
                 for name, (c, s) in sorted(run["sql"].items(), key=lambda kv: -kv[1][1])}
    sql_ms = sum(v["ms"] for v in per_batch.values())
    total_ms = 1000 * run["seconds"] / n
    return {
        "size": bank.size,
        "batches": n,
        "resolve_items_ms": round(total_ms, 2),
        "sql_ms": round(sql_ms, 2),
        "python_ms": round(total_ms - sql_ms, 2),
        "statements": per_batch,
        "functions": [{"function": f, "calls_per_batch": round(nc / n, 1), "self_ms": round(1000 * tt / n, 3),
                       "cumulative_ms": round(1000 * ct / n, 3)} for f, nc, tt, ct in ranked.get("functions", [])],
    }


# -- machine --------------------------------------------------------------------

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


# -- the run --------------------------------------------------------------------

def _fastupdate(conn: psycopg.Connection) -> bool:
    """Whether the trigram index keeps a GIN pending list (the default)."""
    opts = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'entities_name_trgm_idx'::regclass"
                        ).fetchone()[0] or []
    for opt in opts:
        # Stored as written: "fastupdate=off", "fastupdate=false" (migration 0005), ...
        key, _, value = opt.partition("=")
        if key.strip().lower() == "fastupdate":
            return value.strip().lower() not in ("off", "of", "false", "f", "fa", "fal", "fals", "no", "n", "0")
    return True


def _bench_dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _reset(conn: psycopg.Connection) -> None:
    """Empty every table of the bench database's schema (between sizes: the trigram
    index covers all banks, so a small bank must not sit next to a big one)."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'bank_id'"
        " WHERE n.nspname = %s AND c.relkind = 'r'", (SCHEMA,))]
    conn.execute(sql.SQL("TRUNCATE {} CASCADE").format(
        sql.SQL(", ").join(sql.Identifier(SCHEMA, t) for t in tables)))
    conn.execute("VACUUM ANALYZE")


def run_bench(dsn: str, sizes: Sequence[int] = DEFAULT_SIZES, out: Optional[Path] = Path("docs/benchmarks.md"),
              *, batches: int = 30, writer_seconds: float = 12.0, writers: Sequence[int] = (1, 4),
              profile_size: Optional[int] = 100_000, profile_batches: int = 10,
              compare_fastupdate: bool = True, compare_flush: bool = True, corpora: Optional[Path] = Path("bench/corpora"),
              evaluation_out: Optional[Path] = Path("docs/evaluation.md"), seed: int = SEED, keep: bool = False,
              progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """Run the benchmark on a scratch database of the server ``dsn`` points at; see the module docstring.

    ``dsn`` needs a role that may CREATE DATABASE. ``out=None`` writes no file.
    """
    say = progress or (lambda msg: None)
    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8'"
                              " LC_CTYPE 'C.UTF-8'").format(sql.Identifier(BENCH_DB)))
    bdsn = _bench_dsn(dsn, BENCH_DB)
    result: Dict[str, Any] = {"sizes": {}, "batch_mentions": BATCH_MENTIONS, "seed": seed}
    try:
        with psycopg.connect(bdsn, autocommit=True) as conn:
            install(conn, SCHEMA)
            conn.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
            result["machine"] = machine(conn)
            if corpora is not None and Path(corpora).is_dir():
                say(f"accuracy: replaying the corpora in {corpora}")
                accuracy = evaluate.run_eval(conn, corpora, SCHEMA)
                result["evaluation"] = {k: accuracy[k] for k in (
                    "mentions_scored", "pairwise", "bcubed", "wrong_merges", "fragmented", "entities",
                    "gold_identities", "seconds")}
                if evaluation_out is not None:
                    evaluate.update_doc(evaluation_out, accuracy)
            for size in sizes:
                say(f"{size:,} entities: building the bank")
                _reset(conn)
                bank = build_bank(conn, size, seed)
                say(f"{size:,} entities: built in {bank.seconds:.1f} s ({bank.pairs:,} pairs); timing batches")
                rng = random.Random(seed + size)
                retains = [make_retain(bank, rng) for _ in range(batches + 3)]
                entry: Dict[str, Any] = {"entities": size, "pairs": bank.pairs,
                                         "build_seconds": round(bank.seconds, 1)}
                with psycopg.connect(bdsn, autocommit=True) as timing:
                    timing.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
                    entry.update(measure_latency(timing, bank, retains).summary())
                    entry["memory"] = backend_memory(timing)
                entry["probe_plan"] = probe_plan(bdsn, bank, retains[0])
                if profile_size == size:
                    say(f"{size:,} entities: profiling")
                    with psycopg.connect(bdsn, autocommit=True) as prof:
                        prof.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
                        result["profile"] = profile(prof, bank, retains[3:3 + profile_batches])
                entry["fastupdate_installed"] = _fastupdate(conn)
                entry["trigger"] = {}
                if compare_flush:
                    entry["trigger_flush_stats"] = {}
                for w in writers:
                    # Each writer count with the flush at commit, then (fresh
                    # retains, same bank) with flush_stats every second.
                    say(f"{size:,} entities: {w} writer(s) for {writer_seconds:g} s, flush at commit")
                    entry["trigger"][str(w)] = measure_writers_exact(bdsn, conn, bank, w, writer_seconds, seed + w)
                    if compare_flush:
                        say(f"{size:,} entities: {w} writer(s) for {writer_seconds:g} s, "
                            f"flush_stats every {FLUSH_EVERY:g} s")
                        entry["trigger_flush_stats"][str(w)] = measure_writers_exact(
                            bdsn, conn, bank, w, writer_seconds, seed + 200 + w, flush_at_commit=False)
                entry["probe_plan_after_writes"] = probe_plan(bdsn, bank, retains[0])
                if compare_fastupdate and _fastupdate(conn):
                    # The same writers with the trigram index's pending list
                    # off (docs/benchmarks.md, "Trigger path").
                    conn.execute("ALTER INDEX entities_name_trgm_idx SET (fastupdate = off)")
                    conn.execute("VACUUM ANALYZE entities")
                    entry["trigger_fastupdate_off"] = {}
                    for w in writers:
                        say(f"{size:,} entities: {w} writer(s) for {writer_seconds:.0f} s, fastupdate off")
                        entry["trigger_fastupdate_off"][str(w)] = measure_writers(
                            bdsn, bank, w, writer_seconds, seed + 100 + w)
                    entry["probe_plan_after_writes_fastupdate_off"] = probe_plan(bdsn, bank, retains[0])
                    conn.execute("ALTER INDEX entities_name_trgm_idx SET (fastupdate = on)")
                result["sizes"][str(size)] = entry
    finally:
        if not keep:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(BENCH_DB)))
    result["seconds"] = round(time.monotonic() - started, 1)
    try:
        result["machine"]["load_after"] = round(os.getloadavg()[0], 2)
    except (OSError, KeyError):
        pass
    checked = [t for entry in result["sizes"].values() for key in ("trigger", "trigger_flush_stats")
               for t in entry.get(key, {}).values()]
    if checked:
        result["trigger_counts_exact"] = all(t.get("counts_exact") for t in checked)
    result["targets"] = targets(result)
    if out is not None:
        write_doc(out, markdown(result))
    return result


DOC_START = "<!-- bench:start (generated by entity-resolver bench; edit outside the markers) -->"
DOC_END = "<!-- bench:end -->"


def write_doc(path: Path, generated: str) -> None:
    """Put the generated figures between the markers of ``path``, keeping the text around them."""
    path = Path(path)
    block = f"{DOC_START}\n\n{generated}\n{DOC_END}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if DOC_START in text and DOC_END in text:
        text = text.split(DOC_START, 1)[0] + block + text.split(DOC_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def targets(result: Dict[str, Any]) -> Dict[str, Any]:
    """The issue's targets, checked against the figures (benchmarks, not tests)."""
    out: Dict[str, Any] = {}
    at = result["sizes"].get("100000")
    if at:
        out["batch ÷ probe at 100,000 entities"] = {"target": "<= 2.0", "value": at["ratio_of_medians"],
                                         "met": at["ratio_of_medians"] <= 2.0}
    for entry in result["sizes"].values():
        four = entry.get("trigger", {}).get("4")
        if four:
            value = four["mentions_per_second"]
            out[f"trigger with 4 writers at {entry['entities']:,} entities"] = {
                "target": ">= 1000 mentions/s", "value": value, "met": value >= 1000}
    return out


# -- report ---------------------------------------------------------------------

def _fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def markdown(result: Dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "## Machine",
        "",
        f"- CPU: {m.get('cpu', '?')}, {m.get('cpus')} cores; memory {m.get('memory_gb', '?')} GB",
        f"- OS: {m.get('os', '?')} (kernel {m.get('kernel')})",
        f"- PostgreSQL {m['postgres']} (shared_buffers {m['shared_buffers']}, work_mem {m['work_mem']}, "
        f"fsync {m['fsync']}, synchronous_commit {m['synchronous_commit']}); PL/Python on Python {m['plpython']}",
        f"- Client and server on the same machine; total run {result['seconds']:.0f} s; load average "
        f"{m.get('load_before', '?')} before, {m.get('load_after', '?')} after (other work on the machine "
        "inflates absolute times; batch and probe are timed alternately, so their ratio is robust to it)",
        "",
        "## Resolver batch against its bare candidate probe",
        "",
        f"One batch = {result['batch_mentions']} mentions (a typical retain: about ten facts of 4-8 mentions, "
        "each with the other mentions of its fact as nearby): 40 % exact repeats, 10 % case variants, "
        "15 % typos, bare first names, hubs, about 25 % new names. The probe is the resolver's own "
        "candidate statement (`SQL_CANDIDATES`) with the same keys, threshold and limit, without scoring; "
        "the two are timed alternately on the same connection, each batch rolled back.",
        "",
        "| entities | batch median ms | batch p95 ms | mentions/s | probe median ms | probe p95 ms | "
        "batch ÷ probe (medians) | median of per-batch ratios | candidate rows/batch | backend peak RSS MB | "
        "backend private MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in result["sizes"].values():
        mem = entry.get("memory", {})
        lines.append(
            f"| {_fmt_int(entry['entities'])} | {entry['batch_ms']['median']:.1f} | {entry['batch_ms']['p95']:.1f} "
            f"| {_fmt_int(entry['mentions_per_second'])} | {entry['probe_ms']['median']:.1f} "
            f"| {entry['probe_ms']['p95']:.1f} | **{entry['ratio_of_medians']:.2f}×** | {entry['median_ratio']:.2f}× "
            f"| {_fmt_int(entry['candidate_rows_per_batch'])} | {mem.get('peak_rss_mb', '–')} "
            f"| {mem.get('private_mb', '–')} |")
    lines += ["", "Plan of the probe in a fresh session (custom plan), on the freshly built and vacuumed bank "
              "and again after the writer runs below:", ""]
    for entry in result["sizes"].values():
        before, after = entry.get("probe_plan", {}), entry.get("probe_plan_after_writes", {})
        lines.append(f"- {_fmt_int(entry['entities'])}: {', '.join(before.get('scans', [])) or '?'} "
                     f"({before.get('ms', 'timeout')} ms); after writes: {', '.join(after.get('scans', [])) or '?'} "
                     f"({after.get('ms') if after.get('ms') is not None else 'timed out'} ms)")
    lines += [
        "",
        "## Trigger path: facts per second",
        "",
        "Each writer is a session inserting retains: one `INSERT INTO facts` of about ten facts "
        f"({result['batch_mentions']} mentions) per transaction, all writers in the same bank. Each writer "
        "count runs twice, one run after the other on the same bank (fresh retains each time): "
        "*flush at commit* (the default, `entity_resolver.flush_at_commit = on`: each transaction applies "
        "its own statistics at commit) and *flush_stats every 1 s* (writers with `flush_at_commit = off`, "
        "plus one more session calling `SELECT * FROM entity_resolver.flush_stats()` every second, as "
        "pg_cron would; after the writers stop, the rows still queued are counted and applied by one final, "
        "timed `flush_stats()`). Facts/s and mentions/s count the writers' time only. *Periodic flushes*: "
        "how many ran during the run, median and maximum ms. *Backlog*: `stats_queue` rows of the bank "
        "when the writers stopped (and the last periodic flush had finished). *Exact*: after the run (after "
        "the final flush), `mention_count` grew by exactly the mentions inserted, `cooccurrence_count` by "
        "exactly the pairs recounted from `unit_entities`, and nothing is left queued.",
        "",
        "| entities | trigram index | statistics | writers | facts/s | mentions/s | retain median ms "
        "| retain p95 ms | errors | periodic flushes (median / max ms) | backlog rows at end | final flush ms "
        "| exact |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for entry in result["sizes"].values():
        installed = "as installed (fastupdate = %s)" % ("on" if entry.get("fastupdate_installed", True) else "off")
        runs = []
        for w in entry.get("trigger", {}):
            runs.append((installed, entry["trigger"][w]))
            if w in entry.get("trigger_flush_stats", {}):
                runs.append((installed, entry["trigger_flush_stats"][w]))
        runs += [("fastupdate = off", t) for t in entry.get("trigger_fastupdate_off", {}).values()]
        for label, t in runs:
            if t.get("flush_at_commit", True):
                flushes, final = "–", "–"
            else:
                fm = t.get("flush_ms", {})
                flushes = (f"{t.get('flushes', 0)} ({fm.get('median')} / {fm.get('max')})" if t.get("flushes")
                           else "0")
                final = f"{t.get('final_flush_ms')}"
            backlog = _fmt_int(t["backlog_rows"]) if "backlog_rows" in t else "–"
            exact = {True: "yes", False: "**no**"}.get(t.get("counts_exact"), "–")
            lines.append(f"| {_fmt_int(entry['entities'])} | {label} | {t.get('statistics', 'flush at commit')} "
                         f"| {t['writers']} | {_fmt_int(t['facts_per_second'])} "
                         f"| {_fmt_int(t['mentions_per_second'])} | {t['retain_ms']['median']} "
                         f"| {t['retain_ms']['p95']} | {t['errors']} | {flushes} | {backlog} | {final} | {exact} |")
    if "trigger_counts_exact" in result:
        lines += ["", "Counts exact after every run, in both configurations: "
                  + ("**yes**" if result["trigger_counts_exact"] else "**no** (see the rows marked no)") + "."]
    if any(entry.get("probe_plan_after_writes_fastupdate_off") for entry in result["sizes"].values()):
        lines += ["", "Plan of the probe in a fresh session after the writers (fastupdate = off):", ""]
    for entry in result["sizes"].values():
        after = entry.get("probe_plan_after_writes_fastupdate_off")
        if after:
            lines.append(f"- {_fmt_int(entry['entities'])}: {', '.join(after.get('scans', [])) or '?'} "
                         f"({after.get('ms') if after.get('ms') is not None else 'timed out'} ms)")
    acc = result.get("evaluation")
    if acc:
        lines += ["", "## Accuracy (same run)", "",
                  f"On the project's corpora ({acc['mentions_scored']} gold mentions, replayed in "
                  f"{acc['seconds']:.1f} s): pairwise F1 {100 * acc['pairwise']['f1']:.1f} %, B-cubed F1 "
                  f"{100 * acc['bcubed']['f1']:.1f} %, {acc['wrong_merges']} wrong merges, {acc['fragmented']} "
                  "fragmented identities; per family in [evaluation.md](evaluation.md)."]
    lines += ["", "## Targets", ""]
    for name, t in result.get("targets", {}).items():
        mark = "met" if t["met"] else "**not met**"
        lines.append(f"- {name}: {t['value']} (target {t['target']}): {mark}")
    prof = result.get("profile")
    if prof:
        lines += [
            "",
            f"## Where the time goes ({_fmt_int(prof['size'])} entities, mean of {prof['batches']} batches)",
            "",
            f"Inside the server, `resolve_items` takes {prof['resolve_items_ms']:.1f} ms per batch: "
            f"{prof['sql_ms']:.1f} ms in its SQL statements and {prof['python_ms']:.1f} ms in Python.",
            "",
            "| statement | calls/batch | ms/batch |",
            "|---|---:|---:|",
        ]
        for name, s in prof["statements"].items():
            lines.append(f"| {name} | {s['calls']} | {s['ms']:.2f} |")
        lines += ["", "Python functions by self time (cProfile, which inflates Python time):", "",
                  "| function | calls/batch | self ms | cumulative ms |", "|---|---:|---:|---:|"]
        for f in prof["functions"][:15]:
            lines.append(f"| `{f['function']}` | {f['calls_per_batch']} | {f['self_ms']:.2f} "
                         f"| {f['cumulative_ms']:.2f} |")
    lines += [
        "",
        "## Banks",
        "",
        "Built set-based with COPY from a seeded generator: 60 % people (first name + generated surname), "
        "15 % organisations, 12 % projects, 13 % numbered things; a co-occurrence graph of communities of "
        f"{COMMUNITY} (1-4 partners each) plus {len(HUBS)} hubs each next to {HUB_SHARE:.1%} of the bank; "
        "last_seen spread over 60 days.",
        "",
        "| entities | pairs | build s |",
        "|---:|---:|---:|",
    ]
    for entry in result["sizes"].values():
        lines.append(f"| {_fmt_int(entry['entities'])} | {_fmt_int(entry['pairs'])} | {entry['build_seconds']} |")
    lines.append("")
    return "\n".join(lines)
