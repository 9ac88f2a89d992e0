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

from bench.order import SCHEMA, _golds, _partition
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


def measure_family(conn: psycopg.Connection, path: Path, top: int = TOP) -> Dict[str, Any]:
    path = Path(path)
    cfg = path.with_name(path.stem + ".banks.json")
    res = evaluate.run_eval(conn, path, SCHEMA, banks_file=cfg if cfg.is_file() else None, keep=True)
    banks = res["eval_banks"]
    try:
        golds = _golds(path)
        merged, duplicates = problems(golds, _partition(conn, banks))
        split_hits = merge_hits = useful = rows = 0
        for stream_bank, bank in banks.items():
            found = _rows(conn, bank, top)
            rows += len(found)
            split = {ids[0] for kind, ids in found if kind in SPLITS and ids}
            merge = {tuple(sorted(ids[:2])) for kind, ids in found if kind in MERGES and len(ids) >= 2}
            split_hits += len(merged.get(stream_bank, set()) & split)
            mine = {(a, b) for s, a, b in duplicates if s == stream_bank}
            merge_hits += len(mine & merge)
            useful += sum(1 for kind, ids in found
                          if (kind in SPLITS and ids and ids[0] in merged.get(stream_bank, set()))
                          or (kind in MERGES and len(ids) >= 2 and tuple(sorted(ids[:2])) in mine))
    finally:
        evaluate._cleanup(conn, SCHEMA, list(banks.values()))
    total = sum(len(v) for v in merged.values()) + len(duplicates)
    return {"wrong_merges": sum(len(v) for v in merged.values()), "duplicates": len(duplicates),
            "repaired_splits": split_hits, "repaired_merges": merge_hits,
            "share": round((split_hits + merge_hits) / total, 3) if total else None,
            "rows": rows, "rows_that_repair": useful}


def measure_review(dsn_or_conn: Any, corpora: Path = Path("bench/corpora"), top: int = TOP,
                   families: Optional[Sequence[str]] = None, progress=None) -> Dict[str, Any]:
    say = progress or (lambda msg: None)
    own = isinstance(dsn_or_conn, str)
    conn = psycopg.connect(dsn_or_conn, autocommit=True) if own else dsn_or_conn
    try:
        out: Dict[str, Any] = {"top": top, "families": {}}
        for path in sorted(Path(corpora).glob("*.jsonl")):
            if families and path.stem not in families:
                continue
            say(f"review: {path.stem}")
            out["families"][path.stem] = measure_family(conn, path, top)
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
    finally:
        if own:
            conn.close()


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
