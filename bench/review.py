"""The review queue against gold: how much of what is left wrong its top rows would repair.

    python -m bench.review                         # every family of bench/corpora, replayed in order
    python -m bench.review --family hubs --json    # one family, the figures as JSON

Each corpus family is replayed in file order (``evaluate.run_eval``, the
trigger path, banks kept), and what is left wrong is read against gold
(issue 32, item 2's target):

- a **wrong merge** is an entity holding mentions of two or more gold
  identities; a row repairs it when its fix is a split of that entity (a
  ``likely_over_merge`` or a ``close_call`` naming it);
- a **duplicate** is two entities whose mentions are mostly of one gold
  identity; a row repairs it when its fix is a merge of those two
  (a ``likely_duplicate`` or a ``close_call`` naming both).

Reported per family and in total: the problems, how many the top
``max_results`` rows (default 20) of ``review_queue`` would repair, and the
share. Only the bank's own rows count: a row that names a right entity is
noise, and the precision (rows that repair something) is reported too.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import psycopg
from psycopg import sql

from bench.order import SCHEMA, _golds, _partition, each_family
from entity_resolver import evaluate

TOP = 20
TARGET = 0.8
SPLITS = ("likely_over_merge", "close_call")
MERGES = ("likely_duplicate", "close_call")


def problems(golds: Dict[Any, Tuple[str, str, int]], part: Dict[Any, Tuple[str, str]]
             ) -> Tuple[Dict[str, Set[str]], Set[Tuple[str, str, str]]]:
    """What is left wrong, per stream bank: the over-merged entities, and the duplicate pairs
    (bank, entity, entity) of entities whose mentions are mostly one gold identity."""
    held: Dict[Tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    for key, (gold, _text, _line) in golds.items():
        held[(key[0], part[key][0])][gold] += 1
    merged: Dict[str, Set[str]] = collections.defaultdict(set)
    by_gold: Dict[Tuple[str, str], List[str]] = collections.defaultdict(list)
    for (bank, entity), counts in held.items():
        if len(counts) > 1:
            merged[bank].add(entity)
        by_gold[(bank, counts.most_common(1)[0][0])].append(entity)
    duplicates = {(bank, *sorted(pair)) for (bank, _gold), entities in by_gold.items()
                  for pair in _pairs(sorted(entities))}
    return merged, duplicates


def _pairs(items: Sequence[str]) -> List[Tuple[str, str]]:
    return [(a, b) for i, a in enumerate(items) for b in items[i + 1:]]


def _rows(conn: psycopg.Connection, bank: str, top: int) -> List[Tuple[str, List[str]]]:
    return [(kind, [str(e) for e in ids]) for kind, ids in conn.execute(sql.SQL(
        "SELECT kind, entity_ids FROM {}.review_queue(%s, %s)").format(sql.Identifier(SCHEMA)), (bank, top))]


def _repairs(kind: str, ids: List[str], merged: Set[str], pairs: Set[Tuple[str, str]]) -> Set[Tuple[str, Any]]:
    """The problems one row's fix repairs: ("split", entity) or ("merge", (entity, entity))."""
    out: Set[Tuple[str, Any]] = set()
    if kind in SPLITS and ids and ids[0] in merged:
        out.add(("split", ids[0]))
    if kind in MERGES and len(ids) >= 2 and tuple(sorted(ids[:2])) in pairs:
        out.add(("merge", tuple(sorted(ids[:2]))))
    return out


def measure_family(conn: psycopg.Connection, path: Path, top: int = TOP) -> Dict[str, Any]:
    # The stream's own STREAM.banks.json is found by run_eval.
    res = evaluate.run_eval(conn, path, SCHEMA, keep=True)
    banks = res["eval_banks"]
    try:
        golds = _golds(path)
        merged, duplicates = problems(golds, _partition(conn, banks))
        fixed: Set[Tuple[str, Any]] = set()
        useful = rows = 0
        for stream_bank, bank in banks.items():
            pairs = {(a, b) for s, a, b in duplicates if s == stream_bank}
            for kind, ids in _rows(conn, bank, top):
                repairs = _repairs(kind, ids, merged.get(stream_bank, set()), pairs)
                rows += 1
                useful += bool(repairs)
                fixed |= repairs
    finally:
        evaluate._cleanup(conn, SCHEMA, list(banks.values()))
    total = sum(len(v) for v in merged.values()) + len(duplicates)
    return {"wrong_merges": sum(len(v) for v in merged.values()), "duplicates": len(duplicates),
            "repaired_splits": sum(1 for how, _ in fixed if how == "split"),
            "repaired_merges": sum(1 for how, _ in fixed if how == "merge"),
            "share": round(len(fixed) / total, 3) if total else None,
            "rows": rows, "rows_that_repair": useful}


def measure_review(dsn_or_conn: Any, corpora: Path = Path("bench/corpora"), top: int = TOP,
                   families: Optional[Sequence[str]] = None, progress=None) -> Dict[str, Any]:
    say = progress or (lambda msg: None)

    def one(conn: psycopg.Connection, path: Path) -> Dict[str, Any]:
        say(f"review: {path.stem}")
        return measure_family(conn, path, top)

    out: Dict[str, Any] = {"top": top, "families": each_family(dsn_or_conn, corpora, families, one)}
    fams = out["families"].values()
    problems_total = sum(f["wrong_merges"] + f["duplicates"] for f in fams)
    repaired = sum(f["repaired_splits"] + f["repaired_merges"] for f in fams)
    out["total"] = {"problems": problems_total, "repaired": repaired,
                    "share": round(repaired / problems_total, 3) if problems_total else None,
                    "rows": sum(f["rows"] for f in fams),
                    "rows_that_repair": sum(f["rows_that_repair"] for f in fams)}
    out["target"] = {"value": out["total"]["share"], "target": TARGET,
                     "met": out["total"]["share"] is not None and out["total"]["share"] >= TARGET}
    return out


def markdown(r: Dict[str, Any]) -> str:
    lines = [f"| family | wrong merges | duplicates | repaired by a split | repaired by a merge | share "
             f"| rows (top {r['top']} per bank) | rows that repair |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in r["families"].items():
        share = "–" if f["share"] is None else f"{100 * f['share']:.0f} %"
        lines.append(f"| {name} | {f['wrong_merges']} | {f['duplicates']} | {f['repaired_splits']} "
                     f"| {f['repaired_merges']} | {share} | {f['rows']} | {f['rows_that_repair']} |")
    t = r["total"]
    share = "–" if t["share"] is None else f"{100 * t['share']:.0f} %"
    lines.append(f"| **all** | | | | {t['repaired']} of {t['problems']} | **{share}** | {t['rows']} "
                 f"| {t['rows_that_repair']} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.review")
    ap.add_argument("--dsn", help="a database with entity_resolver installed (default: the embedded cluster)")
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--top", type=int, default=TOP)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from entity_resolver.cli import EMBEDDED_DB, _embedded

        dsn = _embedded(None, quiet=True).dsn(EMBEDDED_DB)
    r = measure_review(dsn, top=args.top, families=args.family,
                       progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps(r, indent=1) if args.json else markdown(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
