"""Speed: resolver batches against their bare candidate probe, and the trigger path's throughput.

    python -m bench --sizes 10000 --batches 10     # python -m bench --help: the options

    from bench.run import run_bench                # from a repository checkout
    result = run_bench("host=127.0.0.1 port=5432 user=postgres dbname=postgres")

``run_bench`` creates a scratch database (``entity_resolver_bench``) next to the
one the DSN names, installs entity_resolver in it, and for each bank size:

1. builds a bank set-based (COPY, not through the resolver): seeded names
   (people, organisations, projects, numbered things), a co-occurrence graph
   of small communities (1-4 partners each) plus a dozen hubs ("user", "the
   team", ...) each next to 1.5 % of the bank, and last_seen dates over 60
   days (``bench.workloads``, names and typos from ``bench.names``);
2. generates batches of 58 mentions (a typical retain: about ten facts of 4-8
   mentions, each mention with the other mentions of its fact as nearby)
   mixing exact repeats, case variants, typos, bare first names, hubs and new
   names;
3. times (``bench.latency``), alternating batch by batch, ``resolve_mentions`` on the batch (in a
   transaction rolled back, so every batch sees the same bank) and the bare
   candidate probe: the resolver's own SQL_CANDIDATES statement (read from
   the installed module) with the same distinct keys, the same pg_trgm
   threshold and the same LIMIT, as a prepared statement, without scoring;
4. runs 1 and then 4 concurrent writers (``bench.writers``) inserting retains (one INSERT INTO
   facts of about ten facts, 58 mentions, per transaction) into the bank for
   a fixed time, each writer count twice: statistics flushed at commit (the
   default), then with ``entity_resolver.flush_at_commit = off`` and one more
   session calling ``flush_stats()`` every second (the backlog left when the
   writers stop is counted and applied by a final, timed flush); after each
   run the applied statistics are checked against what was inserted
   (mention_count against the mentions, cooccurrence_count against a recount
   of the pairs in unit_entities);
5. replays the held-out families (``bench.heldout``: name pools and seeds the
   corpora do not use) under the reference profile, each enhanced lever alone
   and the whole enhanced profile: the wrong merges each adds over the
   reference (the target: none), and B-cubed F1;
6. times one fact of 100, 400 and 1,000 mentions, INSERT and COMMIT, per
   pair (``bench.pairs``); imports the committed corpora and a seeded 5,000-fact stream into fresh
   databases at the default batch, fact by fact, and with the 0.1.0 release
   (``bench.imports``): a batch is a speed knob, never a different answer;
   and replays the corpora one INSERT (one transaction) per fact, as eval
   does, against the version before issue 16's per-fact work, with the
   statements each fact runs (``bench.per_fact``), in new databases and again
   in databases that already hold the corpora (generic plans, finding 10,
   pay off only once the tables have statistics);
7. reads the benchmark backend's memory (/proc when the server is local, and
   pg_backend_memory_contexts; ``bench.machine``);
7. also times ``reresolve`` (a dry run) on a bank of 10,000 entities and 10,000
   facts inserted through the trigger, in a scratch database
   (``bench.reresolve_speed``: facts/s and where the time goes per fact), and
   replays the corpora in order and in three shuffles, each followed by
   ``reresolve`` (``bench.order``: accuracy and agreement before and after);
7. times the same 58-mention batches with and without mention attributes at
   10,000 entities (``bench.attributes_speed``), and the write path with the
   bank setting auto_reresolve on and off, then ``reresolve_queued`` per queued
   fact (``bench.auto_reresolve``); and each size's batches with the
   neighbourhood probe and the full probe side by side, on a bank of that size
   dated at a constant rate (``bench.neighbourhood_speed``: the curve of issue 34);
8. profiles the PL/Python side at one size (``bench.profiling``): time per
   SQL statement of the resolver, the rest (Python), and a cProfile ranking,
   through a temporary PL/Python function that calls the installed resolver
   with a timing proxy.

The figures are written with a description of the machine to
docs/benchmarks.md (``out``, by ``bench.report``) and returned as a dict.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench import heldout
from bench.banks import measure_neighbours, measure_roles
from bench.imports import measure_bank_import, measure_imports
from bench.latency import measure_latency, probe_plan
from bench.limits import measure_max_calls
from bench.machine import backend_memory, machine
from bench.pairs import measure_fact_pairs
from bench.per_fact import measure_per_fact
from bench.order import measure_order
from bench.profiling import profile
from bench.report import markdown, targets, write_doc
from bench.attributes_speed import measure_attributes
from bench.neighbourhood_speed import measure_neighbourhood
from bench.auto_reresolve import measure_auto_reresolve
from bench.reresolve_speed import measure_reresolve
from bench.workloads import BATCH_MENTIONS, SCHEMA, SEED, build_bank, make_retain
from bench.writers import FLUSH_EVERY, measure_writers_exact
from entity_resolver import evaluate
from entity_resolver.install import install

BENCH_DB = "entity_resolver_bench"
# 1,000,000 does not fit the ~10 minute budget on a 2-core machine (building
# the bank alone takes about 4 minutes); ask for it with sizes=.
DEFAULT_SIZES = (10_000, 100_000)


def _fastupdate(conn: psycopg.Connection) -> bool:
    """Whether the trigram index keeps a GIN pending list (PostgreSQL's default; migration 0005 turns it off)."""
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
              compare_flush: bool = True, corpora: Optional[Path] = Path("bench/corpora"),
              evaluation_out: Optional[Path] = Path("docs/evaluation.md"), seed: int = SEED, keep: bool = False,
              imports: bool = True, neighbours: Optional[int] = 1_000_000, roles: bool = True,
              heldout_seeds: Sequence[int] = heldout.HELDOUT_SEEDS,
              reresolve_facts: Optional[int] = 10_000, order: bool = True, attributes: bool = True,
              auto_reresolve: bool = True, import_facts: int = 2000, neighbourhood: bool = True,
              progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """Run the benchmark on a scratch database of the server ``dsn`` points at; see the module docstring.

    ``dsn`` needs a role that may CREATE DATABASE. ``out=None`` writes no file.
    ``neighbours``: how many entities of other banks sit beside a bank of
    1,000 in the side-by-side figure (``bench.banks``; None skips it);
    ``roles``: time each size's batches as a bank-bound role too;
    ``heldout_seeds``: the seeds of the held-out families each lever is
    replayed on alone against the reference (``bench.heldout``; empty skips it);
    ``reresolve_facts``: facts of the 10,000-entity bank whose ``reresolve``
    dry run is timed (None skips it); ``order``: the corpora in order and
    shuffled, before and after ``reresolve`` (needs ``corpora``); ``attributes``:
    the batches with and without mention attributes (``bench.attributes_speed``);
    ``auto_reresolve``: the cost of the bank setting (``bench.auto_reresolve``);
    ``import_facts``: facts imported at the default batch into each size's bank, last (0 skips it);
    ``neighbourhood``: each size's batches with the neighbourhood probe and the full probe, side by
    side, on a bank dated at a constant rate (``bench.neighbourhood_speed``).
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
                say(f"accuracy: replaying the corpora in {corpora}, both profiles")
                both = {p: evaluate.run_eval(conn, corpora, SCHEMA, profile=p) for p in ("reference", "enhanced")}
                keys = ("mentions_scored", "pairwise", "bcubed", "wrong_merges", "fragmented", "entities",
                        "gold_identities", "seconds")
                result["evaluation"] = {k: both["enhanced"][k] for k in keys}
                result["evaluation_reference"] = {k: both["reference"][k] for k in keys}
                if evaluation_out is not None:
                    evaluate.update_doc(evaluation_out, both)
            if heldout_seeds:
                say("held-out families: each lever alone, the reference and the enhanced profile")
                result["heldout"] = heldout.measure(conn, heldout_seeds, SCHEMA, progress=say)
            if order and corpora is not None and Path(corpora).is_dir():
                say("order: the corpora in order and in 3 shuffles, before and after reresolve")
                result["order"] = measure_order(conn, corpora, progress=say)
            say("limits: the cost of a maximum-size call")
            result["limits"] = measure_max_calls(conn)
            say("one fact of 100, 400 and 1,000 mentions: time per pair")
            result["fact_pairs"] = measure_fact_pairs(dsn)
            if imports:
                say("imports: corpora and a 5,000-fact stream, default batch, batch 1 and 0.1.0")
                result["imports"] = measure_imports(dsn)
                say("fact by fact: the corpora, one INSERT per transaction, against the baseline")
                result["per_fact"] = measure_per_fact(dsn)
                # Generic plans (finding 10) pay off once the tables have statistics: both cases.
                say("fact by fact: the same, in databases that already hold the corpora")
                result["per_fact_with_data"] = measure_per_fact(dsn, prefill_times=1)
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
                if roles:
                    say(f"{size:,} entities: a bank-bound role against the installer")
                    entry["roles"] = measure_roles(bdsn, bank, batches=min(batches, 20), seed=seed)
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
                if import_facts:
                    say(f"{size:,} entities: importing {import_facts:,} facts at the default batch")
                    entry["bulk_import"] = measure_bank_import(bdsn, bank, import_facts, seed + size)
                result["sizes"][str(size)] = entry
        if reresolve_facts:
            result["reresolve"] = measure_reresolve(dsn, 10_000, reresolve_facts, seed=seed, progress=say)
        if attributes:
            say("attributes: the same batches with and without mention attributes, 10,000 entities")
            result["attributes"] = measure_attributes(dsn, 10_000, batches=min(batches, 30), seed=seed)
        if auto_reresolve:
            say("auto_reresolve: the write path with the setting on and off, then reresolve_queued, 10,000 entities")
            result["auto_reresolve"] = measure_auto_reresolve(dsn, 10_000, min(5_000, reresolve_facts or 5_000),
                                                              batches=min(batches, 20), seed=seed)
        if neighbourhood:
            result["neighbourhood"] = measure_neighbourhood(dsn, sizes, batches=min(batches, 30), seed=seed,
                                                            progress=say)
        if neighbours:
            result["neighbours"] = measure_neighbours(dsn, others=neighbours, batches=min(batches, 20), seed=seed,
                                                      progress=say)
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
