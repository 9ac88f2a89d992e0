"""Distributed speed: what a call costs when Citus delegates it, and facts/s with banks on two workers.

    python -m bench --citus                # or: make bench BENCH_ARGS=--citus

``run_citus_bench`` starts, on this machine and in the same run, a plain
PostgreSQL server (single node) and a Citus cluster (a coordinator and two
workers, ``entity_resolver.citus_cluster``), installs entity_resolver on both
(``install --distributed`` on the coordinator) and loads the same banks
through the write path: the committed corpora (bench/corpora), one INSERT
INTO facts per fact. Then:

1. per-call latency, alternating call by call between the two setups (so both
   see the same machine): a call that does almost nothing (current_entity of
   an unknown id: the cost of delegation itself), a read (lookup_mention) and
   a write (resolve_mentions of three mentions, committed);
2. throughput: ``writers`` sessions, each inserting facts one per statement
   (autocommit) into a bank of its own for ``seconds``; on Citus the banks
   are spread over both workers. Statistics are checked exact afterwards.

All the servers share this machine's cores: with two cores, the cluster
cannot be faster than one server, and the figures show the price of the
extra hop and of Citus's planning, not the capacity of a real cluster (one
machine per node; docs/scaling.md says what such a run needs).
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import psycopg

from bench.latency import percentile
from entity_resolver.citus_cluster import CitusCluster
from entity_resolver.embedded import EmbeddedCluster
from entity_resolver.importer import iter_facts
from entity_resolver.install import install

SCHEMA = "entity_resolver"
CORPORA = Path(__file__).resolve().parent / "corpora"
FIGURES_START = "<!-- citus-figures:start (generated: python -m bench --citus) -->"
FIGURES_END = "<!-- citus-figures:end -->"
INSERT = (f"INSERT INTO {SCHEMA}.facts (bank_id, content, mentions, event_date)"
          " VALUES (%s, %s, %s::jsonb, %s::timestamptz)")


def corpus_facts() -> List[Dict[str, Any]]:
    """Every fact of the committed corpora, as an application sends them (no gold labels), in file order."""
    facts = []
    for path in sorted(CORPORA.glob("*.jsonl")):
        for rec in iter_facts(path):
            if rec.mentions:
                facts.append({"content": rec.content, "mentions": json.dumps(rec.mentions, ensure_ascii=False),
                              "event_date": rec.event_date, "n": len(rec.mentions)})
    return facts


def _placement(conn: psycopg.Connection, bank: str) -> int:
    return conn.execute(
        "SELECT nodeport FROM pg_dist_shard_placement"
        " WHERE shardid = get_shard_id_for_distribution_column('entity_resolver.banks', %s::text)",
        (bank,)).fetchone()[0]


def _banks_by_worker(conn: psycopg.Connection, ports: List[int], per_worker: int, prefix: str) -> List[str]:
    """Bank ids, ``per_worker`` on each worker, alternating workers."""
    found: Dict[int, List[str]] = {p: [] for p in ports}
    n = 0
    while any(len(v) < per_worker for v in found.values()):
        n += 1
        bank = f"{prefix}-{n}"
        port = _placement(conn, bank)
        if len(found[port]) < per_worker:
            found[port].append(bank)
    return [found[p][i] for i in range(per_worker) for p in ports]


def _load(dsn: str, bank: str, facts: List[Dict[str, Any]]) -> float:
    """Insert facts one per statement; return the seconds it took."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        for f in facts:
            conn.execute(INSERT, (bank, f["content"], f["mentions"], f["event_date"]), prepare=True)
    return time.perf_counter() - started


def _summary(ms: List[float]) -> Dict[str, float]:
    return {"median_ms": round(statistics.median(ms), 3), "p95_ms": round(percentile(ms, 0.95), 3),
            "calls": len(ms)}


def measure_calls(single: str, citus: str, bank: str, calls: int) -> Dict[str, Any]:
    """Per-call latency on both setups, alternating call by call."""
    probes = {
        "current_entity (delegation alone)": (f"SELECT {SCHEMA}.current_entity(%s, %s)", lambda i: (bank, uuid.uuid4())),
        "lookup_mention (read)": (f"SELECT * FROM {SCHEMA}.lookup_mention(%s, %s, %s::text[])",
                                  lambda i: (bank, "Alex Morgan", ["Acme"])),
        "resolve_mentions of 3 (write, committed)": (
            f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, %s::jsonb)",
            lambda i: (bank, json.dumps([f"Bench Person {i % 50}", "Acme", f"Project {i % 7}"]))),
    }
    out: Dict[str, Any] = {}
    with psycopg.connect(single, autocommit=True) as s, psycopg.connect(citus, autocommit=True) as c:
        for name, (query, args) in probes.items():
            times: Dict[str, List[float]] = {"single": [], "citus": []}
            for i in range(calls + 5):
                for label, conn in (("single", s), ("citus", c)):
                    t = time.perf_counter()
                    conn.execute(query, args(i)).fetchall()
                    if i >= 5:  # the first calls load the modules and plans
                        times[label].append((time.perf_counter() - t) * 1000)
            a, b = _summary(times["single"]), _summary(times["citus"])
            out[name] = {"single": a, "citus": b,
                         "overhead_ms": round(b["median_ms"] - a["median_ms"], 3)}
    return out


def measure_worker_side(single: str, worker: str, bank: str, calls: int) -> Dict[str, Any]:
    """The write call's cost on the bank's worker alone (its delegated function called there) against one server."""
    args = lambda i: json.dumps([f"Worker Person {i % 50}", "Acme", f"Project {i % 7}"])  # noqa: E731
    times: Dict[str, List[float]] = {"single": [], "worker": []}
    with psycopg.connect(single, autocommit=True) as s, psycopg.connect(worker, autocommit=True) as w:
        for i in range(calls + 5):
            for label, conn, query, params in (
                    ("single", s, f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, %s::jsonb)", (bank, args(i))),
                    ("worker", w, f"SELECT {SCHEMA}_internal.resolve_mentions_delegated(%s,"
                                  " jsonb_build_object('mentions', %s::jsonb))", (bank, args(i)))):
                t = time.perf_counter()
                conn.execute(query, params).fetchall()
                if i >= 5:
                    times[label].append((time.perf_counter() - t) * 1000)
    a, b = _summary(times["single"]), _summary(times["worker"])
    return {"single": a, "worker": b, "ratio": round(b["median_ms"] / a["median_ms"], 2)}


def measure_throughput(dsn: str, banks: List[str], facts: List[Dict[str, Any]], seconds: float) -> Dict[str, Any]:
    """One writer per bank, one fact per statement, for ``seconds``; facts and mentions per second."""
    counts = {bank: [0, 0, 0] for bank in banks}  # facts, mentions, errors
    start_line = threading.Barrier(len(banks) + 1)
    stop_at = [0.0]

    def work(w: int, bank: str) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            start_line.wait()
            k = w * 97
            while time.monotonic() < stop_at[0]:
                f = facts[k % len(facts)]
                k += 1
                try:
                    conn.execute(INSERT, (bank, f["content"], f["mentions"], f["event_date"]), prepare=True)
                    counts[bank][0] += 1
                    counts[bank][1] += f["n"]
                except psycopg.Error:
                    counts[bank][2] += 1

    threads = [threading.Thread(target=work, args=(w, bank), daemon=True) for w, bank in enumerate(banks)]
    for t in threads:
        t.start()
    stop_at[0] = time.monotonic() + seconds
    started = time.monotonic()
    start_line.wait()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    done = sum(v[0] for v in counts.values())
    mentions = sum(v[1] for v in counts.values())
    return {"writers": len(banks), "seconds": round(elapsed, 2), "facts": done,
            "facts_per_s": round(done / elapsed, 1), "mentions_per_s": round(mentions / elapsed, 1),
            "errors": sum(v[2] for v in counts.values()), "per_bank": {b: v[0] for b, v in counts.items()}}


def _exact(dsn: str, banks: List[str]) -> bool:
    """Every bank's mention counts and pair counts equal what its record says (nothing left queued)."""
    with psycopg.connect(dsn) as conn:
        for bank in banks:
            wrong = conn.execute(
                f"SELECT count(*) FROM {SCHEMA}.entities e LEFT JOIN (SELECT entity_id, count(*) n"
                f" FROM {SCHEMA}.mentions WHERE bank_id = %(b)s GROUP BY 1) d ON d.entity_id = e.id"
                " WHERE e.bank_id = %(b)s AND e.mention_count <> coalesce(d.n, 0)", {"b": bank}).fetchone()[0]
            queued = conn.execute(f"SELECT count(*) FROM {SCHEMA}.stats_queue WHERE bank_id = %s",
                                  (bank,)).fetchone()[0]
            if wrong or queued:
                return False
    return True


def run_citus_bench(calls: int = 200, seconds: float = 10.0, per_worker: int = 2,
                    out: Optional[Path] = Path("docs/scaling.md"),
                    progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """The whole distributed benchmark (see the module docstring); figures written into ``out``."""
    say = progress or (lambda msg: None)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-bench-single-", dir="/tmp"))
    root.chmod(0o755)
    single_cluster = EmbeddedCluster(datadir=root / "pgdata", fsync=False)
    citus_cluster = CitusCluster(workers=2)
    try:
        say("starting a single PostgreSQL server and a Citus coordinator with two workers")
        single_cluster.start()
        citus_cluster.start()
        single_cluster.ensure_database("bench")
        single = single_cluster.dsn("bench")
        citus = citus_cluster.create_database("bench")
        with psycopg.connect(single, autocommit=True) as conn:
            install(conn)
        with psycopg.connect(citus, autocommit=True) as conn:
            install(conn, distributed=True)
            ports = [w.port for w in citus_cluster.workers]
            # The first bank is for the per-call latency, the others for the writers.
            banks = ["bench-calls"] + _banks_by_worker(conn, ports, per_worker, "bench-writer")
        facts = corpus_facts()
        say(f"loading the corpora ({len(facts)} facts, one statement each) into one bank of each setup")
        load = {"single_s": round(_load(single, banks[0], facts), 2), "citus_s": round(_load(citus, banks[0], facts), 2),
                "facts": len(facts)}
        say(f"per-call latency, {calls} calls of each kind, alternating setups")
        per_call = measure_calls(single, citus, banks[0], calls)
        with psycopg.connect(citus) as conn:
            home = citus_cluster.worker_by_port(_placement(conn, banks[0]))
        worker_side = measure_worker_side(single, home.dsn("bench"), banks[0], calls)
        result: Dict[str, Any] = {"load": load, "per_call": per_call, "worker_side": worker_side, "throughput": {}}
        writers = banks[1:]
        for label, dsn in (("single", single), ("citus", citus)):
            say(f"throughput: {len(writers)} writers, {seconds:g} s, {label}")
            result["throughput"][label] = measure_throughput(dsn, writers, facts, seconds)
            result["throughput"][label]["statistics_exact"] = _exact(dsn, writers)
        with psycopg.connect(citus) as conn:
            result["throughput"]["citus"]["banks_per_worker"] = {
                str(p): sum(1 for b in writers if _placement(conn, b) == p) for p in ports}
        result["machine"] = {"cpus": _cpus(), "nodes": "coordinator + 2 workers and the single server on one machine"}
        result["seconds"] = round(time.monotonic() - started, 1)
        if out is not None:
            write_figures(out, result)
        return result
    finally:
        citus_cluster.destroy()
        single_cluster.destroy()
        shutil.rmtree(root, ignore_errors=True)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def markdown(result: Dict[str, Any]) -> str:
    """The figures as Markdown (docs/scaling.md, between the markers)."""
    load = result["load"]
    lines = [f"Measured on this repository's machine ({result['machine']['cpus']} cores; "
             f"{result['machine']['nodes']}; `python -m bench --citus`, {result['seconds']:.0f} s).", "",
             "| call | single node, median (p95) | Citus, median (p95) | delegation overhead (median) |",
             "|---|---:|---:|---:|"]
    for name, r in result["per_call"].items():
        lines.append(f"| {name} | {r['single']['median_ms']:.2f} ms ({r['single']['p95_ms']:.2f}) | "
                     f"{r['citus']['median_ms']:.2f} ms ({r['citus']['p95_ms']:.2f}) | {r['overhead_ms']:+.2f} ms |")
    t1, t2 = result["throughput"]["single"], result["throughput"]["citus"]
    spread = " + ".join(str(n) for n in t2.get("banks_per_worker", {}).values()) + " banks on the two workers"
    lines += ["",
              "| writers (one bank each, one fact per statement) | facts/s | mentions/s | statistics exact |",
              "|---|---:|---:|---|",
              f"| single node, {t1['writers']} writers | {t1['facts_per_s']:.0f} | {t1['mentions_per_s']:.0f} | "
              f"{'yes' if t1['statistics_exact'] else 'NO'} |",
              f"| Citus, {t2['writers']} writers ({spread}) | {t2['facts_per_s']:.0f} | {t2['mentions_per_s']:.0f} | "
              f"{'yes' if t2['statistics_exact'] else 'NO'} |",
              "",
              f"Loading the committed corpora ({load['facts']} facts, one INSERT each, one session): "
              f"{load['single_s']:.1f} s on the single server, {load['citus_s']:.1f} s through the coordinator."]
    ws = result.get("worker_side")
    if ws:
        lines += ["",
                  f"On the bank's worker alone (its delegated function called there, as the coordinator does), "
                  f"the write call takes {ws['worker']['median_ms']:.2f} ms against {ws['single']['median_ms']:.2f} ms "
                  f"on the single server: {ws['ratio']:.2f}× the work per call (Citus plans each of the resolver's "
                  f"statements on the worker, and the call applies its statistics before it returns)."]
    return "\n".join(lines)


def write_figures(path: Path, result: Dict[str, Any]) -> None:
    """Replace the generated figures in ``path`` (between the markers)."""
    text = path.read_text(encoding="utf-8")
    block = f"{FIGURES_START}\n\n{markdown(result)}\n\n{FIGURES_END}"
    if FIGURES_START in text and FIGURES_END in text:
        text = text.split(FIGURES_START, 1)[0] + block + text.split(FIGURES_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
