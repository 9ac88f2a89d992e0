"""Order and re-resolution: the same labelled stream in different arrival orders, before and after ``reresolve``.

    python -m bench.order                          # every family of bench/corpora, in order + 3 shuffles
    python -m bench.order --family typos --json    # one family, the figures as JSON

    from bench.order import measure_order
    result = measure_order(dsn)                    # a dict (bench/run.py reports it)

For each corpus family (one stream of ``bench/corpora``) the stream is replayed
by ``entity_resolver.evaluate.run_eval`` (the real write path, fact by fact,
each into a fresh bank, kept) in file order and in ``len(seeds)`` seeded
shuffles. A shuffle permutes whole lines: a fact keeps its fact_id, its event
date and its mentions; only the order in which facts arrive changes (issue 32,
item 4). Each bank is then re-resolved (``reresolve(bank, dry_run => false)``)
and its partition read again from provenance (``mentions``: the entity each
mention of each fact now belongs to).

Per replay: B-cubed F1 and wrong merges against gold (``evaluate.score``),
before and after ``reresolve``; the mentions it moved and the time it took.
Per family: the agreement of the shuffled replays' partitions with one
another, before and after (B-cubed F1 of one partition against another as
gold, ``evaluate.bcubed``, over the gold mentions; each pair of shuffles).
The eval banks are deleted afterwards.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import psycopg
from psycopg import sql

from entity_resolver import evaluate
from entity_resolver.importer import iter_facts

SCHEMA = "entity_resolver"
SEEDS = (1, 2, 3)
AGREEMENT_TARGET = 0.99

Key = Tuple[str, str, int]          # (stream bank, fact_id, ordinal): one mention, whatever the order


def shuffle_lines(lines: Sequence[str], seed: int) -> List[str]:
    """The stream's facts in a seeded arrival order: whole lines, so each fact keeps its
    fact_id, event date and mentions (blank lines dropped)."""
    facts = [line for line in lines if line.strip()]
    random.Random(seed).shuffle(facts)
    return facts


def _golds(path: Path) -> Dict[Key, Tuple[str, str, int]]:
    """Every gold mention of the stream: key -> (gold, text, line in the original order)."""
    out: Dict[Key, Tuple[str, str, int]] = {}
    for rec in iter_facts(path):
        for n, (m, gold) in enumerate(zip(rec.mentions, rec.golds), start=1):
            if gold is not None:
                out[(rec.bank_id, rec.fact_id, n)] = (gold, m if isinstance(m, str) else m["text"], rec.line)
    return out


def _partition(conn: psycopg.Connection, banks: Dict[str, str]) -> Dict[Key, Tuple[str, str]]:
    """Where every mention of the eval banks is now: key -> (entity id, canonical name)."""
    out: Dict[Key, Tuple[str, str]] = {}
    for stream_bank, bank in banks.items():
        rows = conn.execute(sql.SQL(
            "SELECT f.fact_id, m.ordinal, m.entity_id::text, e.canonical_name"
            " FROM {s}.mentions AS m"
            " JOIN {s}.facts AS f ON f.bank_id = m.bank_id AND f.id = m.unit_id"
            " JOIN {s}.entities AS e ON e.bank_id = m.bank_id AND e.id = m.entity_id"
            " WHERE m.bank_id = %s").format(s=sql.Identifier(SCHEMA)), (bank,)).fetchall()
        for fact_id, ordinal, entity, name in rows:
            out[(stream_bank, fact_id, ordinal)] = (entity, name)
    return out


def _score(golds: Dict[Key, Tuple[str, str, int]], part: Dict[Key, Tuple[str, str]]) -> Dict[str, Any]:
    scored = [evaluate.Scored(k[0], line, text, gold, *part[k]) for k, (gold, text, line) in golds.items()]
    r = evaluate.score(scored, worst=3)
    return {"bcubed_f1": r["bcubed"]["f1"], "bcubed": r["bcubed"], "wrong_merges": r["wrong_merges"],
            "fragmented": r["fragmented"], "entities": r["entities"], "worst_merges": r["worst_merges"]}


def agreement(a: Dict[Key, Tuple[str, str]], b: Dict[Key, Tuple[str, str]], keys: Sequence[Key]) -> float:
    """B-cubed F1 of partition b against partition a as gold, over ``keys`` (symmetric in a and b)."""
    return evaluate.bcubed(evaluate.contingency((a[k][0], b[k][0]) for k in keys))["f1"]


def _settings(whole_entities: bool, replay: bool) -> Dict[str, bool]:
    """The bank settings a replay's banks are re-resolved with (those asked for only)."""
    return {k: True for k, on in (("reresolve_entities", whole_entities), ("reresolve_replay", replay)) if on}


def _reresolve(conn: psycopg.Connection, banks: Dict[str, str], settings: Dict[str, bool]) -> Dict[str, Any]:
    started = time.monotonic()
    moved = kept = facts = 0
    for bank in banks.values():
        if settings:
            conn.execute(sql.SQL("SELECT {s}.configure_bank(%s, %s)").format(s=sql.Identifier(SCHEMA)),
                         (bank, json.dumps(settings)))
        plan = conn.execute(sql.SQL("SELECT {s}.reresolve(%s, dry_run => false, reason => 'bench.order')").format(
            s=sql.Identifier(SCHEMA)), (bank,)).fetchone()[0]
        moved += plan["mentions_moved"]
        kept += len(plan["kept"])
        facts += plan["facts"]
    return {"seconds": round(time.monotonic() - started, 2), "facts": facts, "mentions_moved": moved,
            "kept": kept}


def _replay(conn: psycopg.Connection, stream: Path, banks_file: Optional[Path],
            golds: Dict[Key, Tuple[str, str, int]], settings: Dict[str, bool]
            ) -> Tuple[Dict[str, Any], Dict[Key, Tuple[str, str]], Dict[Key, Tuple[str, str]]]:
    """One order: replay (kept), score, reresolve, score again; the banks are deleted."""
    res = evaluate.run_eval(conn, stream, SCHEMA, banks_file=banks_file, keep=True)
    banks = res["eval_banks"]
    try:
        before = _partition(conn, banks)
        out: Dict[str, Any] = {"replay_seconds": res["seconds"], "trace_mismatches": res["trace_mismatches"],
                               "before": _score(golds, before)}
        # The replay's own scoring and provenance must agree (a check on the keys).
        if abs(out["before"]["bcubed_f1"] - res["bcubed"]["f1"]) > 1e-9:
            raise RuntimeError(f"{stream}: provenance scores {out['before']['bcubed_f1']}, eval "
                               f"{res['bcubed']['f1']}")
        out["reresolve"] = _reresolve(conn, banks, settings)
        after = _partition(conn, banks)
        out["after"] = _score(golds, after)
    finally:
        evaluate._cleanup(conn, SCHEMA, list(banks.values()))
    return out, before, after


def measure_family(conn: psycopg.Connection, path: Path, seeds: Sequence[int] = SEEDS,
                   progress=None, whole_entities: bool = False, replay: bool = False) -> Dict[str, Any]:
    say = progress or (lambda msg: None)
    path = Path(path)
    cfg = path.with_name(path.stem + ".banks.json")
    banks_file = cfg if cfg.exists() else None
    golds = _golds(path)
    keys = sorted(golds)
    lines = path.read_text(encoding="utf-8").splitlines()
    orders: Dict[str, Dict[str, Any]] = {}
    parts: Dict[str, Tuple[Dict[Key, Tuple[str, str]], Dict[Key, Tuple[str, str]]]] = {}
    with tempfile.TemporaryDirectory(prefix="order-") as tmp:
        for seed in (None, *seeds):
            name = "in order" if seed is None else f"shuffle {seed}"
            stream = path
            if seed is not None:
                stream = Path(tmp) / f"{path.stem}.shuffle{seed}.jsonl"
                stream.write_text("\n".join(shuffle_lines(lines, seed)) + "\n", encoding="utf-8")
            say(f"{path.stem}: {name}")
            orders[name], before, after = _replay(conn, stream, banks_file, golds,
                                                  _settings(whole_entities, replay))
            parts[name] = (before, after)
    shuffles = [f"shuffle {s}" for s in seeds]
    pairs = list(itertools.combinations(shuffles, 2))
    agree = {
        stage: {f"{a} / {b}": round(agreement(parts[a][i], parts[b][i], keys), 6) for a, b in pairs}
        for i, stage in enumerate(("before", "after"))
    }
    base = orders["in order"]["before"]
    afters = [o["after"] for o in orders.values()]
    agree_min = {stage: min(v.values()) if v else 1.0 for stage, v in agree.items()}
    return {
        "mentions_scored": len(keys),
        "facts": len(lines),
        "orders": orders,
        "agreement": agree,
        "agreement_min": agree_min,
        "targets": {
            # After reresolve, every order (in order and shuffled) against the in-order replay alone.
            "f1_not_lower": all(a["bcubed_f1"] >= base["bcubed_f1"] for a in afters),
            "wrong_merges_not_higher": all(a["wrong_merges"] <= base["wrong_merges"] for a in afters),
            # >= 0.99 where arrival order alone gives less (already >= 0.99 before: nothing to show).
            "agreement": (agree_min["after"] >= AGREEMENT_TARGET if agree_min["before"] < AGREEMENT_TARGET
                          else None),
        },
    }


def each_family(dsn_or_conn: Any, corpora: Path, families: Optional[Sequence[str]],
                measure: Callable[[psycopg.Connection, Path], Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """``measure(conn, stream)`` of every family of ``corpora`` (or those named), by name; a DSN
    is connected to (and closed after), a connection used as it is."""
    own = isinstance(dsn_or_conn, str)
    conn = psycopg.connect(dsn_or_conn, autocommit=True) if own else dsn_or_conn
    try:
        files = sorted(p for p in Path(corpora).glob("*.jsonl") if p.is_file())
        if families:
            files = [p for p in files if p.stem in set(families)]
        return {f.stem: measure(conn, f) for f in files}
    finally:
        if own:
            conn.close()


def measure_order(dsn_or_conn: Any, corpora: Path = Path("bench/corpora"), seeds: Sequence[int] = SEEDS,
                  families: Optional[Sequence[str]] = None, progress=None,
                  whole_entities: bool = False, replay: bool = False) -> Dict[str, Any]:
    """Every family of ``corpora`` (or those named): see the module docstring. ``whole_entities``: each
    bank re-resolved with the setting reresolve_entities on; ``replay``: with reresolve_replay on."""
    started = time.monotonic()
    result: Dict[str, Any] = {
        "seeds": list(seeds), "whole_entities": whole_entities, "replay": replay, "families": each_family(
            dsn_or_conn, corpora, families,
            lambda conn, f: measure_family(conn, f, seeds, progress, whole_entities, replay))}
    fams = result["families"].values()
    result["targets"] = {
        "f1_not_lower": all(r["targets"]["f1_not_lower"] for r in fams),
        "wrong_merges_not_higher": all(r["targets"]["wrong_merges_not_higher"] for r in fams),
        "agreement": all(r["targets"]["agreement"] is not False for r in fams),
    }
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


# -- report ---------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def markdown(result: Dict[str, Any]) -> str:
    """The per-replay table, then the agreement table."""
    lines = ["| family | order | B³ F1 before | B³ F1 after | wrong merges before | wrong merges after "
             "| mentions moved | reresolve s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for fam, r in result["families"].items():
        for name, o in r["orders"].items():
            lines.append(f"| {fam} | {name} | {_pct(o['before']['bcubed_f1'])} | {_pct(o['after']['bcubed_f1'])} "
                         f"| {o['before']['wrong_merges']} | {o['after']['wrong_merges']} "
                         f"| {o['reresolve']['mentions_moved']} | {o['reresolve']['seconds']:.1f} |")
    shuffles = [f"shuffle {s}" for s in result["seeds"]]
    pairs = [f"{a} / {b}" for a, b in itertools.combinations(shuffles, 2)]
    lines += ["", "| family | " + " | ".join(f"{p} before | {p} after" for p in pairs)
              + " | min before | min after | F1 ≥ in-order | wrong merges ≤ in-order | agreement ≥ 0.99 |",
              "|---|" + "---:|" * (2 * len(pairs) + 2) + "---|---|---|"]
    yn = {True: "yes", False: "**no**", None: "(already)"}
    for fam, r in result["families"].items():
        cells = []
        for p in pairs:
            cells += [_pct(r["agreement"]["before"][p]), _pct(r["agreement"]["after"][p])]
        t = r["targets"]
        lines.append(f"| {fam} | " + " | ".join(cells)
                     + f" | {_pct(r['agreement_min']['before'])} | {_pct(r['agreement_min']['after'])}"
                     f" | {yn[t['f1_not_lower']]} | {yn[t['wrong_merges_not_higher']]} | {yn[t['agreement']]} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.order", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", help="a database with entity_resolver installed (default: the embedded cluster)")
    ap.add_argument("--corpora", type=Path, default=Path("bench/corpora"))
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="shuffle seeds, comma-separated")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--out", type=Path, help="also write the JSON result to this file")
    ap.add_argument("--whole-entities", action="store_true",
                    help="re-resolve with the bank setting reresolve_entities on (whole entities decided again)")
    ap.add_argument("--replay", action="store_true",
                    help="re-resolve with the bank setting reresolve_replay on (the bank replayed in event order first)")
    args = ap.parse_args(argv)
    dsn = args.dsn
    if not dsn:
        from entity_resolver.cli import EMBEDDED_DB, _embedded

        dsn = _embedded(None, quiet=True).dsn(EMBEDDED_DB)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    say = None if args.json else (lambda msg: print(msg, file=sys.stderr, flush=True))
    result = measure_order(dsn, args.corpora, seeds, args.family, say, args.whole_entities, args.replay)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        print(markdown(result))
        print(f"\n{result['seconds']:.0f} s; targets: {result['targets']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
