"""The time of ``reresolve`` (dry run) on a bank of 10,000 entities, and where it goes.

    python -m bench.reresolve_speed --dsn "$DSN"    # a server and a role that may CREATE DATABASE

``reresolve`` decides stored *facts* again (sql/058_reresolve.sql); a bank
built set-based by ``bench.workloads.build_bank`` (entities and a graph, no
facts) gives it nothing to do. So, in a scratch database: the bank is built
as ``make bench`` builds it (COPY: 10,000 entities, communities and hubs), then
``facts`` facts are inserted through the facts trigger (the write path: the
provenance reresolve reads is the trigger's), ``chunk`` facts per INSERT
statement, event dates spread over 60 days. Each fact names 3-6 entities of one
community: mostly the canonical name, some case variants, typos and bare
first names (``bench.names.typo``), so the facts land on the bank's entities
(typos may create a few more). The bank's numbers are then made the record's,
by ``rebuild_stats`` (``_record_numbers``): the COPY graph has
pairs no fact links and counts no fact made, which a bank written through the
product never holds, and on which reresolve's left-out recounts every
entity from the record (sql/058_reresolve.sql, ``_reresolve_unrecorded``).
Then ``reresolve(bank)`` (a dry run, the default) is timed once, and facts/s
reported; and, on the same bank in the same run, the dry run as it was made
before: every fact's entities recounted from the record instead of only what
a decision reads changed (last_seen where the fact's date was it, the pairs
only it made), every fact's names probed instead of once per plan
(``SQL_FORMER``, in a transaction rolled back). The two plans must be equal.

Where the time goes: on a sample of the bank's facts, in a transaction rolled
back, the time per fact of the decision alone (``_reresolve_fact``: the
resolver's pipeline on the stored fact) and of the decision with the fact
left out first (``_reresolve_decide``: delete its provenance and links,
change what a decision reads or recount its entities, remove orphans, decide, roll the
subtransaction back). The rest of the dry run's time per fact is the plan's
own loop (reading the fact's mentions, comparing, building the moves, making
them).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from datetime import timedelta
from typing import Any, Dict, List, Optional, Tuple

import psycopg
from psycopg import sql

from bench.banks import _drop_database, _fresh_database, _session
from bench.names import typo
from bench.workloads import NOW, SEED, build_bank

DB = "entity_resolver_bench_reresolve"
SQL_INSERT = ("INSERT INTO facts (bank_id, id, content, mentions, event_date, fact_id)"
              " SELECT %s, i, c, m, d, f"
              " FROM unnest(%s::uuid[], %s::text[], %s::jsonb[], %s::timestamptz[], %s::text[]) AS t (i, c, m, d, f)")


def _facts(bank, n: int, rng: random.Random) -> List[List[str]]:
    out = []
    for _ in range(n):
        anchor = rng.randrange(12, bank.size)
        community = [j for j in bank.community(anchor) if bank.kinds[j] != "hub"] or [anchor]
        texts: List[str] = []
        for j in rng.sample(community, min(len(community), rng.randint(3, 6))):
            name, roll = bank.names[j], rng.random()
            if roll < 0.70:
                text = name
            elif roll < 0.80:
                text = name.lower()
            elif roll < 0.92:
                text = typo(rng, name)
            elif bank.kinds[j] == "person":
                text = name.split(" ")[0]
            else:
                text = name
            if text.lower() not in {t.lower() for t in texts}:
                texts.append(text)
        out.append(texts)
    return out


def _insert_facts(conn: psycopg.Connection, bank_id: str, facts: List[List[str]], rng: random.Random,
                  chunk: int, vacuum: bool = True, first: int = 0) -> float:
    started = time.monotonic()
    for k in range(0, len(facts), chunk):
        part = facts[k:k + chunk]
        ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in part]
        dates = [NOW - timedelta(minutes=rng.randrange(60 * 24 * 60)) for _ in part]
        conn.execute(SQL_INSERT, (bank_id, ids, [", ".join(t) for t in part],
                                  [json.dumps(t, ensure_ascii=False) for t in part], dates,
                                  [f"f{first + k + n}" for n in range(len(part))]))
    if vacuum:
        conn.execute("VACUUM ANALYZE")
    return time.monotonic() - started


# The plan as it was made before (the "before" of the comparison): every
# fact's entities recounted from the record (not its own pairs subtracted),
# every fact's names probed (no memo of the plan's probes). The plan's
# _reresolve_fact takes the result type of the one without a plan, read from
# the catalog: its columns are written once, in sql/058_reresolve.sql.
SQL_FORMER = [
    "CREATE OR REPLACE FUNCTION entity_resolver_internal._reresolve_unrecorded(bank_id text)"
    " RETURNS uuid[] LANGUAGE sql STABLE AS $$ SELECT NULL::uuid[] $$",
    "CREATE OR REPLACE FUNCTION entity_resolver_internal._reresolve_unrecorded(bank_id text, entity_ids uuid[])"
    " RETURNS uuid[] LANGUAGE sql STABLE AS $$ SELECT NULL::uuid[] $$",
    "DO $do$ BEGIN EXECUTE format("
    "'CREATE OR REPLACE FUNCTION entity_resolver_internal._reresolve_fact("
    "bank_id text, unit_id uuid, plan_id text, keep boolean) RETURNS %s LANGUAGE sql VOLATILE AS %L',"
    " pg_get_function_result('entity_resolver_internal._reresolve_fact(text, uuid)'::regprocedure),"
    " 'SELECT * FROM entity_resolver_internal._reresolve_fact(bank_id, unit_id)'); END $do$",
]


# The bank's numbers made the record's by rebuild_stats itself (4.5 s on
# this bank; until _entity_stats asked for the bank's orphans once instead of
# once per entity, it took minutes, and this bench restated its derivation
# set-based).
def _record_numbers(conn: psycopg.Connection, bank_id: str) -> Dict[str, Any]:
    conn.execute("SELECT rebuild_stats(%s, dry_run => false)", (bank_id,))
    conn.execute("VACUUM ANALYZE")
    report = conn.execute("SELECT entity_resolver_internal._reresolve_unrecorded(%s)", (bank_id,)).fetchone()[0]
    return {"unrecorded": None if report is None else len(report)}


def _dry_run(conn: psycopg.Connection, bank_id: str, former: bool) -> Tuple[Dict[str, Any], float]:
    # Each dry run on a vacuumed bank: the one before leaves the rows its
    # rolled-back left-outs wrote (measured: 63 s after a VACUUM, 76 s after
    # two dry runs).
    conn.execute("VACUUM ANALYZE")
    with conn.transaction(force_rollback=True):
        if former:
            for stmt in SQL_FORMER:
                conn.execute(stmt)
        started = time.monotonic()
        plan = conn.execute("SELECT reresolve(%s)", (bank_id,)).fetchone()[0]
        return plan, time.monotonic() - started


def _per_fact_ms(conn: psycopg.Connection, fn: str, bank_id: str, units: List[uuid.UUID],
                 extra: str = "") -> float:
    with conn.transaction(force_rollback=True):
        started = time.perf_counter()
        for u in units:
            conn.execute(sql.SQL("SELECT count(*) FROM entity_resolver_internal.{}(%s, %s{})").format(
                sql.Identifier(fn), sql.SQL(extra)), (bank_id, u), prepare=True).fetchall()
        return (time.perf_counter() - started) * 1000.0 / max(1, len(units))


STEPS = {
    "delete provenance": ["DELETE FROM mentions WHERE bank_id = %(b)s AND unit_id = %(u)s"],
    "delete links": ["DELETE FROM unit_entities WHERE bank_id = %(b)s AND unit_id = %(u)s"],
    # (rolled back: the recount below runs on the fact left out as far as the deletes)
    "last_seen read again + the pairs only the fact made deleted (after)": [
        "UPDATE entities AS e SET last_seen = r.last_seen"
        " FROM (SELECT t.id, (SELECT max(m.event_date) FROM mentions AS m"
        " WHERE m.bank_id = %(b)s AND m.entity_id = t.id) AS last_seen FROM unnest(%(t)s::uuid[]) AS t (id)) AS r"
        " WHERE e.bank_id = %(b)s AND e.id = r.id AND e.last_seen IS DISTINCT FROM r.last_seen",
        "DELETE FROM entity_cooccurrences AS c"
        " WHERE c.bank_id = %(b)s AND c.entity_id_1 = ANY(%(l)s::uuid[]) AND c.entity_id_2 = ANY(%(l)s::uuid[])"
        " AND c.cooccurrence_count <= 1"],
    "_recount (prune; before)": ["SELECT entity_resolver_internal._recount(%(b)s, %(t)s::uuid[], true)"],
    "_remove_orphans": ["SELECT entity_resolver_internal._remove_orphans(%(b)s, %(t)s::uuid[], '[]')"],
    "decide (_reresolve_fact)": ["SELECT count(*) FROM entity_resolver_internal._reresolve_fact(%(b)s, %(u)s)"],
}


def _steps_ms(conn: psycopg.Connection, bank_id: str, units: List[uuid.UUID]) -> Dict[str, float]:
    """_reresolve_decide's statements one by one, per fact (each fact rolled back): ms per fact."""
    total = {k: 0.0 for k in STEPS}
    for u in units:
        with conn.transaction(force_rollback=True):
            touched = [r[0] for r in conn.execute(
                "SELECT entity_id FROM mentions WHERE bank_id = %s AND unit_id = %s"
                " UNION SELECT entity_id FROM unit_entities WHERE bank_id = %s AND unit_id = %s",
                (bank_id, u, bank_id, u))]
            linked = [r[0] for r in conn.execute(
                "SELECT entity_id FROM unit_entities WHERE bank_id = %s AND unit_id = %s", (bank_id, u))]
            for name, statements in STEPS.items():
                # Each step on the fact left out as far as the steps before it.
                with conn.transaction(force_rollback="after" in name):
                    started = time.perf_counter()
                    for stmt in statements:
                        conn.execute(stmt, {"b": bank_id, "u": u, "t": touched, "l": linked}, prepare=True)
                    total[name] += time.perf_counter() - started
    return {k: round(1000.0 * v / max(1, len(units)), 2) for k, v in total.items()}


def measure_reresolve(dsn: str, size: int = 10_000, facts: int = 10_000, chunk: int = 100, sample: int = 200,
                      seed: int = SEED, keep: bool = False, progress=None) -> Dict[str, Any]:
    """Build the bank and its facts in a scratch database, time ``reresolve`` (dry run); see the docstring."""
    say = progress or (lambda msg: None)
    out: Dict[str, Any] = {"entities_built": size, "facts": facts}
    try:
        target = _fresh_database(dsn, DB)
        with _session(target) as conn:
            say(f"reresolve: a bank of {size:,} entities")
            bank = build_bank(conn, size, seed)
            rng = random.Random(seed + 32)
            say(f"reresolve: {facts:,} facts through the facts trigger")
            out["insert_seconds"] = round(_insert_facts(conn, bank.bank_id, _facts(bank, facts, rng), rng, chunk), 1)
            out["entities"], out["mentions"] = conn.execute(
                "SELECT (SELECT count(*) FROM entities WHERE bank_id = %s),"
                " (SELECT count(*) FROM mentions WHERE bank_id = %s)", (bank.bank_id, bank.bank_id)).fetchone()
            say("reresolve: the bank's numbers made the record's")
            out.update(_record_numbers(conn, bank.bank_id))
            out["entities"] = conn.execute("SELECT count(*) FROM entities WHERE bank_id = %s",
                                           (bank.bank_id,)).fetchone()[0]
            say(f"reresolve: dry run on {out['entities']:,} entities, {facts:,} facts")
            plan, seconds = _dry_run(conn, bank.bank_id, False)
            out.update({"seconds": round(seconds, 1), "facts_per_second": round(plan["facts"] / seconds, 1),
                        "ms_per_fact": round(1000 * seconds / max(1, plan["facts"]), 2),
                        "mentions_decided": plan["mentions_decided"], "mentions_moved": plan["mentions_moved"],
                        "kept": len(plan["kept"]), "plan_facts": plan["facts"],
                        "plan_whole_entities": plan.get("whole_entities")})
            say("reresolve: the same dry run as it was made before")
            before, before_seconds = _dry_run(conn, bank.bank_id, True)
            out["before"] = {"seconds": round(before_seconds, 1),
                             "ms_per_fact": round(1000 * before_seconds / max(1, before["facts"]), 2),
                             "mentions_moved": before["mentions_moved"]}
            out["speedup"] = round(before_seconds / seconds, 2)
            out["plans_equal"] = before == plan
            say("reresolve: the same dry run deciding whole entities again too (reresolve_entities)")
            conn.execute("SELECT configure_bank(%s, '{\"reresolve_entities\": true}')", (bank.bank_id,))
            whole, whole_seconds = _dry_run(conn, bank.bank_id, False)
            conn.execute("SELECT configure_bank(%s, '{\"reresolve_entities\": false}')", (bank.bank_id,))
            out["whole_entities"] = {
                "seconds": round(whole_seconds, 1), "mentions_moved": whole["mentions_moved"],
                "entities_moved": len({m["from"]["entity_id"] for m in whole["moves"] if "left out, as" in m["why"]}),
                "ratio": round(whole_seconds / seconds, 2)}
            say("reresolve: the same dry run replaying the bank in event order first (reresolve_replay)")
            conn.execute("SELECT configure_bank(%s, '{\"reresolve_replay\": true}')", (bank.bank_id,))
            replayed, replay_seconds = _dry_run(conn, bank.bank_id, False)
            conn.execute("SELECT configure_bank(%s, '{\"reresolve_replay\": false}')", (bank.bank_id,))
            out["replay"] = {
                "seconds": round(replay_seconds, 1), "mentions_moved": replayed["mentions_moved"],
                "entities_created": len(replayed.get("entities_created") or []),
                "ratio": round(replay_seconds / seconds, 2)}
            say(f"reresolve: {out['seconds']} s, before {out['before']['seconds']} s, plans equal: "
                f"{out['plans_equal']}")
            say("reresolve: where the time goes (a sample of facts)")
            units = [r[0] for r in conn.execute("SELECT id FROM facts WHERE bank_id = %s ORDER BY id LIMIT %s",
                                                (bank.bank_id, sample))]
            _per_fact_ms(conn, "_reresolve_fact", bank.bank_id, units[:10])     # warm the plans
            out["sample"] = len(units)
            out["decide_ms_per_fact"] = round(_per_fact_ms(conn, "_reresolve_fact", bank.bank_id, units), 2)
            out["left_out_and_decide_ms_per_fact"] = round(
                _per_fact_ms(conn, "_reresolve_decide", bank.bank_id, units, ", '{}'::uuid[], NULL"), 2)
            out["recounted_and_decide_ms_per_fact"] = round(
                _per_fact_ms(conn, "_reresolve_decide", bank.bank_id, units), 2)
            out["steps_ms_per_fact"] = _steps_ms(conn, bank.bank_id, units)
    finally:
        if not keep:
            _drop_database(dsn, DB)
    out["target"] = {"target": "< 60 s", "value": out.get("seconds"),
                     "met": out.get("seconds") is not None and out["seconds"] < 60}
    return out


def markdown(r: Dict[str, Any]) -> str:
    return "\n".join([
        "## Re-resolution: `reresolve` dry run",
        "",
        f"A bank built as above ({r['entities_built']:,} entities, COPY), then {r['facts']:,} facts of 3-6 mentions "
        f"({r['mentions']:,} mentions) inserted through the facts trigger in {r['insert_seconds']} s; the bank then "
        f"holds {r['entities']:,} entities. `reresolve(bank)` (dry run: every fact decided again, the moves made "
        "in a subtransaction rolled back; the bank's `reresolve_entities` as installed, `auto`: whole entities "
        f"decided again: {'yes' if r.get('plan_whole_entities') else 'no, more than 1,000 to decide'}):",
        "",
        "| entities | facts | mentions decided | mentions moved | seconds | facts/s | ms/fact |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {r['entities']:,} | {r['plan_facts']:,} | {r['mentions_decided']:,} | {r['mentions_moved']:,} "
        f"| **{r['seconds']}** | {r['facts_per_second']} | {r['ms_per_fact']} |",
        "",
        f"The bank's numbers were made the record's first ({r['unrecorded']} entities unrecorded). The same "
        f"dry run as it was made before (every fact's entities recounted from the record, every name probed "
        f"per fact): "
        f"{r['before']['seconds']} s ({r['before']['ms_per_fact']} ms/fact), {r['speedup']}x the time; the "
        f"plans equal: {r['plans_equal']}.",
        "",
        *([f"With the bank setting `reresolve_entities` true (whole entities decided again after the facts), the same "
           f"dry run: {r['whole_entities']['seconds']} s ({r['whole_entities']['ratio']}x), "
           f"{r['whole_entities']['mentions_moved']:,} mentions moved, {r['whole_entities']['entities_moved']:,} "
           f"of them with a whole entity.", ""] if r.get("whole_entities") else []),
        *([f"With the bank setting `reresolve_replay` true (the bank replayed in event order first, then every fact "
           f"decided again), the same dry run: {r['replay']['seconds']} s ({r['replay']['ratio']}x), "
           f"{r['replay']['mentions_moved']:,} mentions moved, {r['replay']['entities_created']:,} entities made.",
           ""] if r.get("replay") else []),
        f"Per fact, on {r['sample']} of them (rolled back): the resolver's decision alone (`_reresolve_fact`) "
        f"{r['decide_ms_per_fact']} ms; with the fact left out first (`_reresolve_decide`: its provenance and "
        f"links deleted, the numbers a decision reads changed, in a subtransaction) "
        f"{r['left_out_and_decide_ms_per_fact']} ms "
        f"(its entities recounted instead: {r['recounted_and_decide_ms_per_fact']} ms); "
        f"the rest of the {r['ms_per_fact']} ms is the plan's loop. The left-out step by step (each statement "
        "of `_reresolve_leave_out` alone, ms per fact):",
        "",
        "| step | ms/fact |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in r.get("steps_ms_per_fact", {}).items()],
    ])


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.reresolve_speed")
    ap.add_argument("--dsn", required=True, help="a server and a role that may CREATE DATABASE")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    r = measure_reresolve(args.dsn, args.size, args.facts, keep=args.keep,
                          progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(r, indent=1))
    print(markdown(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
