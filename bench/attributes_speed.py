"""Resolution with mention attributes against the same batch without (issue 31's speed target).

    python -m bench.attributes_speed --dsn "$DSN"    # a server and a role that may CREATE DATABASE

A bank of 10,000 entities (bench.workloads.build_bank) whose provenance
gives a third of its people a birth date and a fifth an email (one mention
row each, as a fact would have written). The 58-mention batches of the
latency figure are timed twice, in alternating order, each rolled back:
as they are, and with attributes on their person mentions (the held birth
date or email of a known person, now and then a birth date the bank does
not hold, a fresh date on a new name). With attributes the resolver reads
the identifying values' holders (one statement per call, GIN over
mentions.attributes) and the distinguishing values of the candidates (one
per fact that needs any), and screens every candidate of a dated name.
The target: within 1.2x of the same batch without.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from typing import Any, Dict, List, Optional, Sequence

import psycopg

from bench.banks import _drop_database, _fresh_database, _session
from bench.latency import percentile
from bench.workloads import NOW, SEED, Bank, build_bank, make_retain

BIRTH_DATE_SHARE = 1 / 3
EMAIL_SHARE = 1 / 5
DATABASE = "entity_resolver_bench_attributes"


def _birth_date(rng: random.Random) -> str:
    return f"{rng.randint(1950, 2001)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def seed_attributes(conn: psycopg.Connection, bank: Bank, seed: int = SEED) -> Dict[str, Dict[str, str]]:
    """Give a share of the bank's people a birth date and an email in provenance; return name -> attributes."""
    rng = random.Random(seed + 31)
    ids = dict(conn.execute("SELECT canonical_name, id FROM entities WHERE bank_id = %s", (bank.bank_id,)).fetchall())
    held: Dict[str, Dict[str, str]] = {}
    with conn.cursor().copy("COPY mentions (bank_id, unit_id, ordinal, mention, entity_id, decision, event_date,"
                            " attributes) FROM STDIN") as copy:
        for name, kind in zip(bank.names, bank.kinds):
            if kind != "person" or name not in ids:
                continue
            attrs: Dict[str, str] = {}
            if rng.random() < BIRTH_DATE_SHARE:
                attrs["birth_date"] = _birth_date(rng)
            if rng.random() < EMAIL_SHARE:
                attrs["email"] = name.lower().replace(" ", ".") + "@example.org"
            if attrs:
                held[name] = attrs
                copy.write_row((bank.bank_id, uuid.UUID(int=rng.getrandbits(128), version=4), 1, name, ids[name],
                                "created", NOW, json.dumps(attrs)))
    conn.execute("VACUUM ANALYZE mentions")
    return held


def payload(facts: Sequence[Sequence[str]], held: Dict[str, Dict[str, str]], rng: Optional[random.Random]) -> str:
    """resolve_mentions elements; with ``rng``, person mentions carry attributes (None: none do)."""
    items = []
    for texts in facts:
        for k, t in enumerate(texts):
            item: Dict[str, Any] = {"text": t, "nearby": list(texts[:k]) + list(texts[k + 1:])}
            if rng is not None and " " in t:
                known = held.get(t)
                if known and rng.random() < 0.8:
                    item["attributes"] = dict(known)
                elif rng.random() < 0.3:
                    item["attributes"] = {"birth_date": _birth_date(rng)}
            items.append(item)
    return json.dumps(items, ensure_ascii=False)


def measure(conn: psycopg.Connection, bank: Bank, held: Dict[str, Dict[str, str]], batches: int = 30,
            warmup: int = 3, seed: int = SEED) -> Dict[str, Any]:
    """Median and p95 ms of each batch with and without attributes, alternating which goes first."""
    rng = random.Random(seed + 131)
    plain: List[float] = []
    attributed: List[float] = []
    carried = 0

    def timed(body: str) -> float:
        t = time.perf_counter()
        conn.execute("SELECT count(*) FROM resolve_mentions(%s, %s::jsonb, %s)", (bank.bank_id, body, NOW),
                     prepare=True).fetchall()
        d = time.perf_counter() - t
        conn.rollback()
        return d * 1000.0

    conn.autocommit = False
    try:
        for n in range(batches + warmup):
            facts = make_retain(bank, rng)
            bodies = {"plain": payload(facts, held, None), "attributes": payload(facts, held, random.Random(n))}
            got = {}
            for what in (["plain", "attributes"] if n % 2 == 0 else ["attributes", "plain"]):
                got[what] = timed(bodies[what])
            if n >= warmup:
                plain.append(got["plain"])
                attributed.append(got["attributes"])
                carried += sum(1 for it in json.loads(bodies["attributes"]) if "attributes" in it)
    finally:
        conn.rollback()
        conn.autocommit = True
    ratios = [a / p for a, p in zip(attributed, plain)]
    return {
        "entities": bank.size, "batches": batches, "people_with_attributes": len(held),
        "mentions_with_attributes_per_batch": round(carried / batches, 1),
        "plain_ms": {"median": round(statistics.median(plain), 1), "p95": round(percentile(plain, 0.95), 1)},
        "attributes_ms": {"median": round(statistics.median(attributed), 1),
                          "p95": round(percentile(attributed, 0.95), 1)},
        "ratio_of_medians": round(statistics.median(attributed) / statistics.median(plain), 2),
        "median_ratio": round(statistics.median(ratios), 2),
    }


def measure_attributes(dsn: str, size: int = 10_000, batches: int = 30, seed: int = SEED,
                       keep: bool = False) -> Dict[str, Any]:
    """Build the bank in a database of its own, seed attributes, time both kinds of batch."""
    target = _fresh_database(dsn, DATABASE)
    try:
        with _session(target) as conn:
            bank = build_bank(conn, size, seed)
            held = seed_attributes(conn, bank, seed)
            return measure(conn, bank, held, batches, seed=seed)
    finally:
        if not keep:
            _drop_database(dsn, DATABASE)


def markdown(r: Dict[str, Any]) -> List[str]:
    return [
        "## Resolution with attributes",
        "",
        f"The same 58-mention batches at {r['entities']:,} entities ({r['people_with_attributes']:,} people holding "
        f"a birth date or an email in provenance), with and without attributes on their person mentions "
        f"({r['mentions_with_attributes_per_batch']} per batch), alternating which goes first, each rolled back "
        f"(`python -m bench.attributes_speed`):",
        "",
        "| batch | median ms | p95 ms |",
        "|---|---:|---:|",
        f"| without attributes | {r['plain_ms']['median']} | {r['plain_ms']['p95']} |",
        f"| with attributes | {r['attributes_ms']['median']} | {r['attributes_ms']['p95']} |",
        "",
        f"With ÷ without: **{r['ratio_of_medians']:.2f}×** (medians), {r['median_ratio']:.2f}× (median of per-batch "
        "ratios); the target is 1.2×.",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.attributes_speed")
    ap.add_argument("--dsn", required=True, help="a server and a role that may CREATE DATABASE")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    r = measure_attributes(args.dsn, args.size, args.batches, keep=args.keep)
    print(json.dumps(r, indent=1))
    print("\n".join(markdown(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
