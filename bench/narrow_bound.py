"""What an exact narrow path could skip: the benchmark's keys by how they are decided.

    python -m bench.narrow_bound                      # 100,000 entities, private cluster
    python -m bench.narrow_bound --sizes 10000,100000 --batches 10
    python -m bench.narrow_bound --dsn "host=... user=postgres dbname=postgres"

The condition, from the weights and the threshold alone (any configuration):
a candidate scores ``name_weight * name + cooccurrence_weight * cooc +
recency_weight * recency`` unless its trigram set is the mention's (score 1.0).
Name and recency are at most 1, and co-occurrence is above 0 only for a
partner of a nearby name, so a candidate that is neither identical nor such a
partner scores at most ``name_weight + recency_weight`` (0.7 by default). A
key whose chosen candidate scores, rounded, above that bound was won by an
identical name or a partner, and nothing outside those two small sets could
beat or tie it: a narrow path reading only them would make the same choice and
record the same best score (the probe's row cap aside). Every other key needs
every candidate of the full probe: a new entity records the best score of all
of them, and a winner at or below the bound may be beaten by any similar name
seen within the recency window.

The benchmark's bank and batches (bench/workloads.py, as ``make bench``
builds them) are resolved (rolled back), each distinct key is classed from
what ``resolve_mentions`` returned for all its mentions, and each key's bare
probe (the resolver's ``SQL_CANDIDATES``, full, as bench/latency.py times it)
is timed alone, the fastest of three. The report gives each class's share of
the probe time: the most a narrow path could take off.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import psycopg
from psycopg import sql

from bench.latency import effective_settings, threshold_probe
from bench.banks import _drop_database
from bench.per_fact import _connect, _install, _server
from bench.run import _reset
from bench.workloads import NOW, SCHEMA, SEED, build_bank, make_retain, retain_json

PRECISION = 6
DATABASE = "entity_resolver_narrow_bound"
CLASSES = ("identical", "partner_settles", "resolved_at_or_below_bound", "new")


def partner_bound(cfg: Dict[str, Any]) -> float:
    """The most a candidate without identical trigram sets and without co-occurrence can score."""
    return round(cfg["name_weight"] + cfg["recency_weight"], PRECISION)


def classify(outcomes: Iterable[Tuple[bool, Optional[float]]], bound: float) -> str:
    """One key's class from (created, score) of each of its mentions.

    ``new``: some mention made an entity; ``identical``: every mention chose an
    identical name (score 1.0); ``partner_settles``: every mention chose a
    candidate scoring above ``bound`` (identical or partner); otherwise
    ``resolved_at_or_below_bound``.
    """
    outs = list(outcomes)
    if any(created for created, _ in outs):
        return "new"
    scores = [round(score, PRECISION) for _, score in outs if score is not None]
    if len(scores) < len(outs):
        return "new"
    if all(s >= 1.0 for s in scores):
        return "identical"
    if all(s > bound for s in scores):
        return "partner_settles"
    return "resolved_at_or_below_bound"


def summarise(classes: Dict[str, str], times: Dict[str, float]) -> Dict[str, Any]:
    """Keys and bare-probe time per class."""
    total = sum(times.values())
    out: Dict[str, Any] = {"keys": len(classes), "probe_ms": round(total, 1)}
    for name in CLASSES:
        keys = [k for k, c in classes.items() if c == name]
        ms = sum(times[k] for k in keys)
        out[name] = {"keys": len(keys), "probe_ms": round(ms, 1),
                     "share_of_probe": round(ms / total, 3) if total else 0.0,
                     "median_key_ms": round(statistics.median(times[k] for k in keys), 2) if keys else None}
    return out


def _time_key(conn: psycopg.Connection, probe: str, params: Dict[str, Any], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        conn.execute(probe, params, prepare=True).fetchone()
        best = min(best, (time.perf_counter() - t) * 1000.0)
    return best


def measure_size(conn: psycopg.Connection, size: int, batches: int, seed: int = SEED) -> Dict[str, Any]:
    """Build the benchmark's bank of ``size`` entities, resolve its batches, class and time every key."""
    _reset(conn)
    bank = build_bank(conn, size, seed)
    conn.execute("VACUUM ANALYZE")
    rng = random.Random(seed + size)
    # bench/run.py's batches: the first 3 warm up.
    retains = [make_retain(bank, rng) for _ in range(batches + 3)][3:]
    cfg = effective_settings(conn, bank.bank_id)
    bound = partner_bound(cfg)
    outcomes: Dict[str, List[Tuple[bool, Optional[float]]]] = {}
    for facts in retains:
        with conn.transaction(force_rollback=True):
            rows = conn.execute("SELECT lower(mention), created, score FROM resolve_mentions(%s, %s::jsonb, %s)",
                                (bank.bank_id, retain_json(facts), NOW)).fetchall()
        for key, created, score in rows:
            outcomes.setdefault(key, []).append((created, score))
    probe = threshold_probe(conn, cfg)
    times = {k: _time_key(conn, probe, {"p1": bank.bank_id, "p2": [k], "p3": cfg["max_candidates"]})
             for k in outcomes}
    classes = {k: classify(outs, bound) for k, outs in outcomes.items()}
    return {"entities": size, "batches": len(retains), "bound": bound, **summarise(classes, times)}


def measure(dsn: Optional[str], sizes: Sequence[int], batches: int) -> List[Dict[str, Any]]:
    """Each size in a scratch database of the server (a private cluster when ``dsn`` is None), dropped after."""
    with _server(dsn) as admin:
        target = _install(admin, DATABASE, None)
        try:
            with _connect(target) as conn:
                conn.execute(sql.SQL("SET search_path = {}, pg_catalog").format(sql.Identifier(SCHEMA)))
                return [measure_size(conn, size, batches) for size in sizes]
        finally:
            _drop_database(admin, DATABASE)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.narrow_bound", description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default=None, help="a superuser DSN; default: a private throwaway cluster")
    parser.add_argument("--sizes", default="100000", help="bank sizes, comma-separated")
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(json.dumps(measure(args.dsn, sizes, args.batches), indent=1))


if __name__ == "__main__":
    main()
