"""Where a batch's time goes inside the server: per SQL statement, and a cProfile ranking."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

import psycopg
from psycopg import sql

from bench.workloads import NOW, SCHEMA, Bank, retain_json

PROFILE_FUNCTION = """
CREATE FUNCTION pg_temp.er_bench_profile(bank text, batches text[], event_date text, use_cprofile boolean)
RETURNS text
LANGUAGE plpython3u
SET search_path = {schema}, {internal}, pg_catalog, pg_temp
SET "pg_trgm.similarity_threshold" = '0.3'
AS $$
import json, time
M = None
for k, v in GD.items():
    if isinstance(k, str) and k.startswith("entity_resolver:"):
        M = v
if M is None:
    plpy.error("call resolve_mentions once in this session first")
R, W, D, P = M["resolve"], M["words"], M["db"], M["mentions"]
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
            names.update({{id(p): n for n, p in D._PLANS.items()}})
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
                R.resolve_mentions_sql(timed, bank, b, event_date)
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

    Runs the installed ``resolve_mentions`` entry point on the batches (each in a rolled-back
    subtransaction, from cold word caches) with a timing proxy for plpy: time
    per SQL statement, the rest is Python; then once more under cProfile.
    """
    payloads = [retain_json(f) for f in retains]
    conn.execute("SELECT count(*) FROM resolve_mentions(%s, %s::jsonb, %s)",
                 (bank.bank_id, payloads[0], NOW))  # loads the modules into GD
    conn.execute(PROFILE_FUNCTION.format(schema=sql.Identifier(SCHEMA).as_string(conn),
                                         internal=sql.Identifier(SCHEMA + "_internal").as_string(conn)))
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
