"""The resolver reading a call's neighbourhood against the full probe, bank by bank (issue 34's curve).

    python -m bench.neighbourhood_speed --dsn "$DSN" --sizes 10000,100000,1000000

For each size, a bank built set-based (bench.workloads.build_bank), then dated
at a constant rate (bench.neighbourhood.SQL_CONSTANT_ACTIVITY: last_seen spread
over 60 days for every 10,000 entities, so a week of activity holds about as
many entities at every size, as in a memory that grows at a steady pace). Two
sessions on it, entity_resolver.neighbourhood_probe off (the full probe, and the
neighbourhood where its limit cuts: the full evaluation) and on;
the same 58-mention batches (make_retain, seeded as bench.run seeds them)
alternate which session goes first, each rolled back. Reported: each way's
median and p95, the median of the per-batch ratios, and the mentions whose
entity or decision differs between the two (it must be 0: the neighbourhood
decides as the full probe does, tests/db/test_shortcut_equivalence.py).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from bench.banks import _drop_database, _fresh_database, _session
from bench.latency import percentile
from bench.neighbourhood import SQL_CONSTANT_ACTIVITY
from bench.workloads import NOW, SEED, build_bank, make_retain, retain_json

DATABASE = "entity_resolver_bench_neighbourhood"
WAYS = ("off", "on")
# Days of last_seen per 10,000 entities (bench/neighbourhood.py's constant rate).
DAYS_PER_10000 = 60.0
# The targets: at 100,000 entities the neighbourhood within this share
# of the full probe; the largest bank's batch within this many times the smallest's.
TARGET_SHARE = 0.5
TARGET_CURVE = 1.5


def _outcomes(rows) -> List[tuple]:
    """What a batch decided, comparable across sessions: a created entity's id is fresh each time."""
    return [(None if created else entity_id, created, name) for entity_id, created, name in rows]


def measure_size(dsn: str, size: int, batches: int = 30, warmup: int = 2, seed: int = SEED) -> Dict[str, Any]:
    """One bank of ``size``, dated at a constant rate: both ways side by side."""
    target = _fresh_database(dsn, DATABASE)
    try:
        with _session(target) as conn:
            bank = build_bank(conn, size, seed)
            conn.execute(SQL_CONSTANT_ACTIVITY, {"now": NOW, "span": DAYS_PER_10000 * size / 10_000,
                                                 "b": bank.bank_id})
            conn.execute("VACUUM ANALYZE entities")
        sessions = {}
        for way in WAYS:
            sessions[way] = _session(target)
            sessions[way].execute("SELECT set_config('entity_resolver.neighbourhood_probe', %s, false)", (way,))
        try:
            ms: Dict[str, List[float]] = {w: [] for w in WAYS}
            differing = 0
            rng = random.Random(seed + size)
            for n in range(batches + warmup):
                body = retain_json(make_retain(bank, rng))
                got = {}
                for way in (WAYS if n % 2 == 0 else WAYS[::-1]):
                    conn = sessions[way]
                    with conn.transaction(force_rollback=True):
                        started = time.perf_counter()
                        rows = conn.execute(
                            "SELECT entity_id, created, canonical_name FROM resolve_mentions(%s, %s::jsonb, %s)"
                            " ORDER BY ord", (bank.bank_id, body, NOW), prepare=True).fetchall()
                        elapsed = (time.perf_counter() - started) * 1000.0
                    got[way] = _outcomes(rows)
                    if n >= warmup:
                        ms[way].append(elapsed)
                differing += sum(a != b for a, b in zip(got["off"], got["on"]))
        finally:
            for conn in sessions.values():
                conn.close()
        return {
            "entities": size, "batches": batches, "build_seconds": round(bank.seconds, 1),
            "last_seen_span_days": DAYS_PER_10000 * size / 10_000,
            **{f"{w}_ms": {"median": round(statistics.median(ms[w]), 1), "p95": round(percentile(ms[w], 0.95), 1)}
               for w in WAYS},
            "median_ratio": round(statistics.median(b / a for a, b in zip(ms["off"], ms["on"])), 2),
            "differing_mentions": differing,
        }
    finally:
        _drop_database(dsn, DATABASE)


def measure_neighbourhood(dsn: str, sizes: Sequence[int], batches: int = 30, seed: int = SEED,
                          progress=None) -> Dict[str, Any]:
    """Every size in turn (one bank at a time), and the curve from the smallest to the largest."""
    say = progress or (lambda msg: None)
    out: Dict[str, Any] = {"sizes": {}}
    for size in sorted(sizes):
        say(f"neighbourhood: {size:,} entities dated at a constant rate, neighbourhood_probe off and on")
        out["sizes"][str(size)] = measure_size(dsn, size, batches, seed=seed)
    first, last = out["sizes"][str(min(sizes))], out["sizes"][str(max(sizes))]
    if len(out["sizes"]) > 1:
        out["curve"] = {"from": first["entities"], "to": last["entities"],
                        "on": round(last["on_ms"]["median"] / first["on_ms"]["median"], 2),
                        "off": round(last["off_ms"]["median"] / first["off_ms"]["median"], 2)}
    return out


def targets(r: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The issue's targets this measurement reports on."""
    out: Dict[str, Dict[str, Any]] = {}
    at = r["sizes"].get("100000")
    if at:
        out["neighbourhood ÷ full probe, one batch, 100,000 entities"] = {
            "target": f"<= {TARGET_SHARE}", "value": at["median_ratio"], "met": at["median_ratio"] <= TARGET_SHARE}
    curve = r.get("curve")
    if curve and curve["to"] >= 1_000_000:
        out[f"neighbourhood batch at {curve['to']:,} ÷ at {curve['from']:,} entities"] = {
            "target": f"<= {TARGET_CURVE}", "value": curve["on"], "met": curve["on"] <= TARGET_CURVE}
    differing = sum(s["differing_mentions"] for s in r["sizes"].values())
    out["mentions decided differently, neighbourhood against full probe"] = {
        "target": "0", "value": differing, "met": differing == 0}
    return out


def markdown(r: Dict[str, Any]) -> List[str]:
    lines = [
        "## The neighbourhood against the full probe",
        "",
        "One bank per size, built set-based and dated at a constant rate (last_seen over "
        f"{DAYS_PER_10000:.0f} days per 10,000 entities: a week holds about as many entities at every size). "
        "The same 58-mention batches on two sessions, `entity_resolver.neighbourhood_probe` off (the full "
        "probe, and the neighbourhood where its limit cuts) and on, alternating which goes first, each rolled "
        "back (`python -m bench.neighbourhood_speed`):",
        "",
        "| entities | off: median ms | off: p95 | on: median ms | on: p95 | on ÷ off (median of per-batch) "
        "| mentions decided differently |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in r["sizes"].values():
        lines.append(f"| {s['entities']:,} | {s['off_ms']['median']} | {s['off_ms']['p95']} | {s['on_ms']['median']} "
                     f"| {s['on_ms']['p95']} | {s['median_ratio']:.2f} | {s['differing_mentions']} |")
    curve = r.get("curve")
    if curve:
        lines += ["", f"From {curve['from']:,} to {curve['to']:,} entities the batch's median grows "
                      f"{curve['on']:.2f}× with the neighbourhood and {curve['off']:.2f}× with the full probe."]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.neighbourhood_speed")
    ap.add_argument("--dsn", required=True, help="a server and a role that may CREATE DATABASE")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args(argv)
    r = measure_neighbourhood(args.dsn, [int(x) for x in args.sizes.split(",")], args.batches,
                              progress=lambda msg: print(msg, file=sys.stderr))
    print(json.dumps(r, indent=1))
    print("\n".join(markdown(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
