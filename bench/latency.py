"""A resolver batch against its bare candidate probe, timed alternately.

The probe is the resolver's own SQL_CANDIDATES statement (read from the
installed module) with the same distinct keys, the same pg_trgm threshold and
the same LIMIT, as a prepared statement, without scoring.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

import psycopg
from psycopg import sql

from bench.workloads import BATCH_MENTIONS, NOW, SCHEMA, Bank, retain_json


def percentile(values: Sequence[float], q: float) -> float:
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


def _installed_constant(conn: psycopg.Connection, module: str, name: str) -> str:
    """A module-level string constant of an installed resolver module."""
    for node in ast.parse(_installed_source(conn, module)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError(f"{name} not found in the installed {module} module")


def probe_statement(conn: psycopg.Connection) -> str:
    """The resolver's installed SQL_CANDIDATES (probe.py), wrapped in count(*), with psycopg placeholders."""
    text = _installed_constant(conn, "probe", "SQL_CANDIDATES")
    # The catalog tokens, read by the resolver's own statement (db.py) under the resolver's search_path.
    previous = conn.execute("SELECT current_setting('search_path')").fetchone()
    conn.execute("SELECT set_config('search_path', %s, false)", (f"{SCHEMA}, {SCHEMA}_internal, pg_catalog",))
    try:
        cur = conn.execute(_installed_constant(conn, "db", "SQL_CATALOG_TOKENS"))
        row = dict(zip([c.name for c in cur.description], cur.fetchone()))
    finally:
        conn.execute("SELECT set_config('search_path', %s, false)", previous)
    text = (text.replace("@trgm@", row["trgm"]).replace("@sim@", row["trgm_ops"] or row["trgm"])
            .replace("@collate@", row["name_collation"]).replace("@bank_collate@", row.get("bank_collation") or ""))
    text = text.replace("folded(", f"{SCHEMA}_internal.folded(").replace("%", "%%")
    text = re.sub(r"\$(\d+)", lambda m: f"%(p{m.group(1)})s", text)
    return f"SELECT count(*) FROM ({text}) AS probe"


def threshold_probe(conn: psycopg.Connection, cfg: Dict[str, Any]) -> str:
    """The probe statement, with this session's pg_trgm threshold set as the resolver sets it for ``cfg``."""
    threshold = max(cfg["candidate_similarity"], cfg["merge_min_similarity"])
    conn.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, false)", (repr(float(threshold)),))
    return probe_statement(conn)


def effective_settings(conn: psycopg.Connection, bank_id: str) -> Dict[str, Any]:
    row = conn.execute("SELECT configure_bank(%s, settings)::text FROM banks WHERE bank_id = %s",
                       (bank_id, bank_id)).fetchone()
    return json.loads(row[0])


@dataclass
class Latency:
    batch_ms: List[float] = field(default_factory=list)
    probe_ms: List[float] = field(default_factory=list)
    candidates: List[int] = field(default_factory=list)
    # the same batch with the bank's profile set to "reference" (no levers)
    reference_ms: List[float] = field(default_factory=list)

    def summary(self) -> Dict[str, Any]:
        b, p = self.batch_ms, self.probe_ms
        ratios = [x / y for x, y in zip(b, p) if y > 0]
        return {
            "batches": len(b),
            "batch_ms": {"median": round(statistics.median(b), 2), "p95": round(percentile(b, 0.95), 2)},
            "probe_ms": {"median": round(statistics.median(p), 2), "p95": round(percentile(p, 0.95), 2)},
            "ratio_of_medians": round(statistics.median(b) / statistics.median(p), 2),
            "median_ratio": round(statistics.median(ratios), 2),
            "mentions_per_second": round(BATCH_MENTIONS * len(b) / (sum(b) / 1000.0), 1),
            "candidate_rows_per_batch": round(statistics.mean(self.candidates), 1),
            **self._profiles(),
        }

    def _profiles(self) -> Dict[str, Any]:
        if not self.reference_ms:
            return {}
        r = self.reference_ms
        ratios = [x / y for x, y in zip(self.batch_ms, r) if y > 0]
        return {"reference_batch_ms": {"median": round(statistics.median(r), 2),
                                       "p95": round(percentile(r, 0.95), 2)},
                "enhanced_over_reference": round(statistics.median(self.batch_ms) / statistics.median(r), 2),
                "enhanced_over_reference_median_ratio": round(statistics.median(ratios), 2)}


def measure_latency(conn: psycopg.Connection, bank: Bank, retains: Sequence[List[List[str]]],
                    warmup: int = 3, profiles: bool = True) -> Latency:
    """Resolver batch and bare probe, alternating which goes first, each batch rolled back.

    ``profiles``: also the batch under the reference profile (the bank's
    profile set in the same rolled-back transaction, untimed), in rotating
    order with the other two, so the two profiles are compared side by side.
    """
    cfg = effective_settings(conn, bank.bank_id)
    probe = threshold_probe(conn, cfg)
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

            def run_reference() -> float:
                conn.execute("SELECT configure_bank(%s, '{\"profile\": \"reference\"}')", (bank.bank_id,))
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

            timed: Dict[str, Any] = {}
            order = ["batch", "probe", "reference"] if profiles else ["batch", "probe"]
            for what in order[n % len(order):] + order[:n % len(order)]:
                if what == "batch":
                    timed["batch"] = run_batch()
                elif what == "probe":
                    timed["probe"] = run_probe()
                else:
                    timed["reference"] = run_reference()
            if n >= warmup:
                out.batch_ms.append(timed["batch"])
                out.probe_ms.append(timed["probe"][0])
                out.candidates.append(timed["probe"][1])
                if profiles:
                    out.reference_ms.append(timed["reference"])
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
