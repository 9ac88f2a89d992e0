"""Banks side by side: a small bank beside many others, and a bank-bound role against the owner.

Two figures, each timed alternately against its baseline in the same run (the
ratio is what counts; other work on the machine inflates both sides alike):

* ``measure_neighbours``: a bank of ``small`` entities alone in a database,
  and the same bank (same seed: same names, ids and graph) in a second
  database that also holds ``others`` entities of ``banks`` other banks whose
  names come from the same generator (first names, syllables, suffixes: they
  share its vocabulary and its trigrams). The other banks are loaded with COPY
  and the trigram index is built once over them (as after a restore); they
  have no co-occurrence graph, which no statement of a call to the small
  bank reads.
* ``measure_roles``: one bank resolved by the installer's role (a superuser,
  which row-level security does not apply to) and by a role bound to the
  bank with ``grant_bank_access``, each on its own connection (a cached plan
  depends on the role it was made for: sharing a session would replan both).

Each batch is a retain of 58 mentions (``bench.workloads.make_retain``) through
``resolve_mentions``, rolled back, so every batch sees the same bank.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.latency import percentile, probe_plan
from bench.names import generate_names
from bench.workloads import NOW, SCHEMA, SEED, Bank, build_bank, make_retain, retain_json
from entity_resolver.install import install

ALONE_DB = "entity_resolver_bench_alone"
CROWDED_DB = "entity_resolver_bench_crowded"
BANK_ROLE = "entity_resolver_bench_bank_role"


def _dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _fresh_database(dsn: str, dbname: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8'"
                              " LC_CTYPE 'C.UTF-8'").format(sql.Identifier(dbname)))
    target = _dsn(dsn, dbname)
    with psycopg.connect(target, autocommit=True) as conn:
        install(conn, SCHEMA)
    return target


def _drop_database(dsn: str, dbname: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


def _session(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
    return conn


def build_other_banks(conn: psycopg.Connection, total: int, banks: int, seed: int = SEED) -> float:
    """Load ``total`` entities spread over ``banks`` banks (other-000, ...) with COPY; return seconds.

    The trigram index is dropped for the load and built once afterwards, which
    takes a fraction of the time of inserting a million names into it.
    """
    started = time.monotonic()
    per = max(1, total // banks)
    ids = [f"other-{k:03d}" for k in range(banks)]
    index = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'entities_name_trgm_idx'",
        (SCHEMA,)).fetchone()[0]
    conn.execute("DROP INDEX entities_name_trgm_idx")
    with conn.cursor().copy("COPY banks (bank_id) FROM STDIN") as copy:
        for bank_id in ids:
            copy.write_row((bank_id,))
    with conn.cursor().copy(
            "COPY entities (bank_id, id, canonical_name, entity_kind, mention_count, first_seen, last_seen)"
            " FROM STDIN") as copy:
        for k, bank_id in enumerate(ids):
            rng = random.Random(seed * 104_729 + k)
            names, _ = generate_names(per, rng)
            for name in names:
                copy.write_row((bank_id, uuid.UUID(int=rng.getrandbits(128), version=4), name, "regular",
                                1, NOW, NOW))
    conn.execute("SET maintenance_work_mem = '256MB'")
    conn.execute(index)
    conn.execute("RESET maintenance_work_mem")
    conn.execute("VACUUM ANALYZE entities")
    return time.monotonic() - started


def _resolve_ms(conn: psycopg.Connection, bank_id: str, payload: str) -> float:
    with conn.transaction(force_rollback=True):
        started = time.perf_counter()
        conn.execute("SELECT count(*) FROM resolve_mentions(%s, %s::jsonb, %s)",
                     (bank_id, payload, NOW), prepare=True).fetchall()
        return (time.perf_counter() - started) * 1000.0


def _side_by_side(first: psycopg.Connection, second: psycopg.Connection, bank: Bank, batches: int,
                  seed: int, warmup: int = 3) -> Dict[str, Any]:
    """The same retains through both connections, alternating which goes first."""
    rng = random.Random(seed)
    a: List[float] = []
    b: List[float] = []
    for n in range(batches + warmup):
        payload = retain_json(make_retain(bank, rng))
        if n % 2:
            x = _resolve_ms(first, bank.bank_id, payload)
            y = _resolve_ms(second, bank.bank_id, payload)
        else:
            y = _resolve_ms(second, bank.bank_id, payload)
            x = _resolve_ms(first, bank.bank_id, payload)
        if n >= warmup:
            a.append(x)
            b.append(y)
    ratios = [y / x for x, y in zip(a, b) if x > 0]
    return {
        "batches": len(a),
        "baseline_ms": {"median": round(statistics.median(a), 2), "p95": round(percentile(a, 0.95), 2)},
        "measured_ms": {"median": round(statistics.median(b), 2), "p95": round(percentile(b, 0.95), 2)},
        "ratio_of_medians": round(statistics.median(b) / statistics.median(a), 2),
        "median_ratio": round(statistics.median(ratios), 2),
    }


def measure_neighbours(dsn: str, small: int = 1000, others: int = 1_000_000, banks: int = 100, batches: int = 30,
                       seed: int = SEED, keep: bool = False, interleave: bool = True,
                       progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """A bank of ``small`` entities alone, and beside ``others`` entities of ``banks`` other banks.

    ``dsn`` names a server and a role that may CREATE DATABASE; two scratch
    databases are created next to it and dropped afterwards (unless ``keep``).
    ``interleave``: the crowded database's rows are rewritten in id order, so
    the small bank's rows lie spread among the others' (as when banks grow side
    by side) rather than in the first pages of the table.
    """
    say = progress or (lambda msg: None)
    out: Dict[str, Any] = {"small": small, "others": others, "banks": banks}
    try:
        say(f"banks side by side: a bank of {small:,} entities alone")
        alone_dsn = _fresh_database(dsn, ALONE_DB)
        with _session(alone_dsn) as conn:
            bank = build_bank(conn, small, seed, bank_id="small")
        say(f"banks side by side: the same bank beside {others:,} entities of {banks} other banks")
        crowded_dsn = _fresh_database(dsn, CROWDED_DB)
        with _session(crowded_dsn) as conn:
            build_bank(conn, small, seed, bank_id="small")
            out["build_seconds"] = round(build_other_banks(conn, others, banks, seed), 1)
            if interleave:
                # Banks that grow side by side share the heap's pages: spread
                # the small bank's rows over the whole table (ids are random).
                conn.execute("CREATE INDEX bench_entities_id_idx ON entities (id)")
                conn.execute("CLUSTER entities USING bench_entities_id_idx")
                conn.execute("DROP INDEX bench_entities_id_idx")
                conn.execute("VACUUM ANALYZE entities")
            out["interleaved"] = interleave
            out["crowded_entities"] = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        say(f"banks side by side: timing {batches} batches in each, alternately")
        with _session(alone_dsn) as alone, _session(crowded_dsn) as crowded:
            out.update(_side_by_side(alone, crowded, bank, batches, seed + 1))
        rng = random.Random(seed + 2)
        out["probe_plan_crowded"] = probe_plan(crowded_dsn, bank, make_retain(bank, rng))
    finally:
        if not keep:
            _drop_database(dsn, ALONE_DB)
            _drop_database(dsn, CROWDED_DB)
    return out


def measure_roles(dsn: str, bank: Bank, batches: int = 30, seed: int = SEED) -> Dict[str, Any]:
    """``bank`` resolved by the connecting role (the installer) and by a role bound to it alone.

    The bound role is created if missing (NOLOGIN: its session is the
    installer's connection after SET ROLE), bound with grant_bank_access, and
    unbound afterwards.
    """
    with _session(dsn) as owner:
        if not owner.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (BANK_ROLE,)).fetchone():
            owner.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(BANK_ROLE)))
        owner.execute("SELECT grant_bank_access(%s, %s)", (bank.bank_id, BANK_ROLE))
        try:
            with _session(dsn) as bound:
                bound.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(BANK_ROLE)))
                out = _side_by_side(owner, bound, bank, batches, seed + 3)
        finally:
            owner.execute("SELECT revoke_bank_access(%s, %s)", (bank.bank_id, BANK_ROLE))
    out["entities"] = bank.size
    return out


def markdown(neighbours: Optional[Dict[str, Any]], roles: Sequence[Dict[str, Any]]) -> str:
    """The section of docs/benchmarks.md for both figures."""
    lines = ["## Banks side by side", ""]
    if neighbours:
        n = neighbours
        lines += [
            f"A bank of {n['small']:,} entities, alone in a database and, in a second database, beside "
            f"{n['others']:,} entities of {n['banks']} other banks whose names come from the same generator "
            "(they share its vocabulary); the same retains resolved in both, alternately, each rolled back.",
            "",
            "| bank alone: median ms | p95 ms | beside the others: median ms | p95 ms "
            "| beside ÷ alone (medians) | median of per-batch ratios |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {n['baseline_ms']['median']:.1f} | {n['baseline_ms']['p95']:.1f} | {n['measured_ms']['median']:.1f} "
            f"| {n['measured_ms']['p95']:.1f} | **{n['ratio_of_medians']:.2f}×** | {n['median_ratio']:.2f}× |",
            "",
            f"Plan of the probe beside the others: {', '.join(n['probe_plan_crowded'].get('scans', [])) or '?'} "
            f"({n['probe_plan_crowded'].get('ms')} ms).",
            "",
        ]
    if roles:
        lines += [
            "A bank resolved by the installer (a superuser: row-level security does not apply) and by a role "
            "bound to it with `grant_bank_access`, each on its own connection, alternately, each batch rolled "
            "back.",
            "",
            "| entities | installer: median ms | p95 ms | bound role: median ms | p95 ms "
            "| bound ÷ installer (medians) | median of per-batch ratios |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in roles:
            lines.append(
                f"| {r['entities']:,} | {r['baseline_ms']['median']:.1f} | {r['baseline_ms']['p95']:.1f} "
                f"| {r['measured_ms']['median']:.1f} | {r['measured_ms']['p95']:.1f} "
                f"| **{r['ratio_of_medians']:.2f}×** | {r['median_ratio']:.2f}× |")
        lines.append("")
    return "\n".join(lines)
