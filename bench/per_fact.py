"""Per-fact overhead: a fact-by-fact replay, against a baseline, in one run.

    python -m bench.per_fact                          # private cluster, baseline = BASELINE
    python -m bench.per_fact --baseline HEAD~3 --rounds 3
    python -m bench.per_fact --dsn "host=... user=postgres dbname=postgres"

Replays the committed corpora (bench/corpora) as ``entity-resolver eval`` does:
one ``INSERT INTO facts`` per fact, each its own transaction (autocommit),
statistics flushed at commit (the default). Each corpus goes into a fresh bank
(configured from its ``.banks.json``). Two databases of the same server take
part: one installed from this checkout, one from ``baseline`` (a git ref:
its sources are exported with ``git archive`` and its own installer runs in a
subprocess, ``PYTHONPATH``, as bench/imports.py does). The replays alternate
corpus by corpus between the two (ABBA over ``rounds``), so both meet the same
machine state. Both databases are new: their tables grow from empty during
the replay and autovacuum analyses them at its own pace, so a change to how
statements are planned can measure differently here than on a database that
already has statistics (docs/benchmarks.md, finding 10). ``--prefill N``
measures that other case: before the timed rounds each database receives the
corpora N times (into banks of their own, untimed) and is analysed, and the
timed rounds run in new sessions.

Counted, not timed: the statements each fact runs on the server, every
level (pg_stat_statements with ``track = all``: the INSERT, the trigger's
statements, the resolver's (PL/Python SPI), the write path's PL/pgSQL, the
flush at commit), in a separate pass over one corpus, so that the
counting does not slow the timed replays. It needs pg_stat_statements in
shared_preload_libraries: the private cluster is started with it; on a
server without it (``--dsn``, ``make bench``'s cluster) the counting pass runs
in a private cluster of its own, its databases prepared as the timed ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "bench" / "corpora"
# The lead's HEAD before issue 16's per-fact work.
BASELINE = "f872891"
SCHEMA = "entity_resolver"
# The corpus whose facts are counted statement by statement.
COUNTED = "typos"


def _dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def load_corpora(path: Path = CORPORA) -> Dict[str, Tuple[Dict[str, Any], List[Tuple[str, str, str]]]]:
    """{corpus: (bank config, [(content, mentions json, event_date)])}, gold labels and attributes removed
    (the baseline refuses a mention's attributes, and both sides replay one stream)."""
    out = {}
    for f in sorted(path.glob("*.jsonl")):
        facts = []
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            mentions = [{k: v for k, v in m.items() if k not in ("gold", "attributes")} if isinstance(m, dict)
                        else m for m in rec["mentions"]]
            facts.append((rec.get("content") or "", json.dumps(mentions, ensure_ascii=False), rec.get("event_date")))
        cfg_path = f.with_name(f.stem + ".banks.json")
        config = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.exists() else {}
        bank_cfg = next(iter(config.values()), {}) if config else {}
        out[f.stem] = (bank_cfg, facts)
    return out


def _install(admin_dsn: str, dbname: str, src: Optional[Path]) -> str:
    """Create ``dbname`` and install entity_resolver from ``src`` (None: this checkout); return its DSN."""
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    target = _dsn(admin_dsn, dbname)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src if src is not None else REPO / "src")
    subprocess.run([sys.executable, "-c", "import psycopg; from entity_resolver.install import install; "
                    f"install(psycopg.connect({target!r}, autocommit=True))"],
                   env=env, check=True, capture_output=True)
    return target


def _configure(conn: psycopg.Connection, bank: str, cfg: Dict[str, Any]) -> None:
    s = sql.Identifier(SCHEMA)
    if cfg.get("settings"):
        conn.execute(sql.SQL("SELECT {}.configure_bank(%s, %s::jsonb)").format(s), (bank, json.dumps(cfg["settings"])))
    if cfg.get("entity_labels"):
        conn.execute(sql.SQL("SELECT {}.set_entity_labels(%s, %s::jsonb)").format(s),
                     (bank, json.dumps(cfg["entity_labels"])))


def replay(conn: psycopg.Connection, bank: str, cfg: Dict[str, Any], facts: List[Tuple[str, str, str]]) -> float:
    """Insert the facts one statement (one transaction) each; return the seconds it took."""
    _configure(conn, bank, cfg)
    statement = sql.SQL("INSERT INTO {}.facts (bank_id, content, mentions, event_date)"
                        " VALUES (%s, %s, %s::jsonb, coalesce(%s::timestamptz, now()))").format(sql.Identifier(SCHEMA))
    # Prepared on the client too, so both sides pay the same for the INSERT.
    started = time.perf_counter()
    for content, mentions, date in facts:
        conn.execute(statement, (bank, content, mentions, date), prepare=True)
    return time.perf_counter() - started


def _connect(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET TimeZone = 'UTC'")
    return conn


def has_statements_extension(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements'").fetchone()[0]


def count_statements(dsn: str, bank: str, cfg: Dict[str, Any], facts: List[Tuple[str, str, str]]) -> Dict[str, Any]:
    """Statements per fact at every level (pg_stat_statements, track = all), replaying ``facts``."""
    with _connect(dsn) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SET pg_stat_statements.track = 'all'")
        conn.execute("SET pg_stat_statements.track_utility = on")
        _configure(conn, bank, cfg)
        conn.execute("SELECT pg_stat_statements_reset()")
        replay(conn, bank, {}, facts)
        rows = conn.execute(
            "SELECT s.query, s.calls, s.total_exec_time + s.total_plan_time, s.plans, s.total_plan_time"
            " FROM pg_stat_statements AS s"
            " WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND s.query NOT LIKE '%%pg_stat_statements%%' ORDER BY s.calls DESC").fetchall()
    total = sum(r[1] for r in rows)
    return {"facts": len(facts), "statements": total, "per_fact": round(total / len(facts), 2),
            # Time (planning and execution) includes the statements a
            # statement runs (nested levels); plans: how often it was planned.
            "top": [{"calls_per_fact": round(c / len(facts), 2), "ms_per_fact": round(ms / len(facts), 3),
                     "plans_per_fact": round(pl / len(facts), 2), "plan_ms_per_fact": round(pms / len(facts), 3),
                     "query": " ".join(q.split())[:140]} for q, c, ms, pl, pms in rows[:40]]}


@contextmanager
def _server(dsn: Optional[str], fsync: bool = True) -> Iterator[str]:
    if dsn is not None:
        yield dsn
        return
    from entity_resolver.embedded import EmbeddedCluster
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-perfact-", dir="/tmp"))
    root.chmod(0o755)
    cluster = EmbeddedCluster(datadir=root / "pgdata", fsync=fsync, extra_settings={
        "shared_preload_libraries": "'pg_stat_statements'", "pg_stat_statements.track": "'none'",
        "pg_stat_statements.track_planning": "on"})
    cluster.start()
    try:
        yield cluster.dsn()
    finally:
        cluster.destroy()
        import shutil
        shutil.rmtree(root, ignore_errors=True)


def prefill(dsn: str, data: Dict[str, Any], times: int) -> None:
    """Give a database data and statistics first: the corpora ``times`` over, fact by fact, then ANALYZE."""
    with _connect(dsn) as conn:
        for n in range(times):
            for name, (cfg, facts) in data.items():
                replay(conn, f"prefill-{n}-{name}", cfg, facts)
        conn.execute(sql.SQL("VACUUM ANALYZE"))


def measure_per_fact(dsn: Optional[str] = None, baseline: Optional[str] = BASELINE, rounds: int = 2,
                     corpora: Path = CORPORA, fsync: bool = True, prefill_times: int = 0) -> Dict[str, Any]:
    """Replay the corpora fact by fact, this checkout and ``baseline`` alternating; count statements per fact."""
    data = load_corpora(corpora)
    n_facts = sum(len(f) for _, f in data.values())
    result: Dict[str, Any] = {"baseline": baseline, "rounds": rounds, "corpora": len(data), "facts": n_facts,
                              "prefill": prefill_times}
    with _server(dsn, fsync) as admin, tempfile.TemporaryDirectory() as tmp:
        sides = {"current": None}
        if baseline:
            archive = subprocess.run(["git", "-C", str(REPO), "archive", baseline], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            sides["baseline"] = Path(tmp) / "src"
        try:
            targets = _prepare(admin, sides, data, prefill_times)
            seconds = {side: [] for side in sides}
            conns = {side: _connect(t) for side, t in targets.items()}
            try:
                order = list(sides)
                for r in range(rounds):
                    for name, (cfg, facts) in data.items():
                        for side in (order if r % 2 == 0 else order[::-1]):
                            seconds[side].append(replay(conns[side], f"pf-{r}-{name}", cfg, facts))
            finally:
                for c in conns.values():
                    c.close()
            result["sides"] = {}
            for side in sides:
                per_round = [sum(seconds[side][i:i + len(data)]) for i in range(0, len(seconds[side]), len(data))]
                result["sides"][side] = {"seconds_per_round": [round(x, 2) for x in per_round],
                                         "facts_per_second": round(n_facts / statistics.median(per_round), 1)}
            if baseline:
                result["current_over_baseline"] = round(
                    result["sides"]["current"]["facts_per_second"]
                    / result["sides"]["baseline"]["facts_per_second"], 2)
            with _connect(targets["current"]) as conn:
                counting = has_statements_extension(conn)
            if counting:
                result["statements"] = _count(targets, data)
                result["counted_in"] = "the same server"
        finally:
            _drop(admin, sides)
        if "statements" not in result:
            # A server without pg_stat_statements preloaded (make bench's):
            # count in a private cluster that has it, the databases prepared
            # as for the timed rounds.
            with _server(None, fsync) as own:
                try:
                    result["statements"] = _count(_prepare(own, sides, data, prefill_times), data)
                    result["counted_in"] = "a private cluster with pg_stat_statements"
                finally:
                    _drop(own, sides)
    return result


def _prepare(admin: str, sides: Dict[str, Optional[Path]], data: Dict[str, Any], prefill_times: int) -> Dict[str, str]:
    """A new database per side, installed from its sources and (``prefill_times``) given data; their DSNs."""
    targets = {side: _install(admin, f"er_per_fact_{side}", src) for side, src in sides.items()}
    if prefill_times:
        for t in targets.values():
            prefill(t, data, prefill_times)
    return targets


def _count(targets: Dict[str, str], data: Dict[str, Any]) -> Dict[str, Any]:
    cfg, facts = data[COUNTED]
    return {side: count_statements(t, f"pf-count-{COUNTED}", cfg, facts) for side, t in targets.items()}


def _drop(admin: str, sides: Dict[str, Any]) -> None:
    with psycopg.connect(admin, autocommit=True) as a:
        for side in sides:
            a.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(f"er_per_fact_{side}")))


def markdown(result: Dict[str, Any]) -> str:
    """The per-fact section of docs/benchmarks.md."""
    where = ("databases of one server" if not result.get("prefill") else
             f"databases of one server that already hold the corpora (replayed {result['prefill']}x, then "
             "VACUUM ANALYZE)")
    lines = [
        "## Fact by fact: one INSERT, one transaction per fact" + (", in a database with data"
                                                                   if result.get("prefill") else ""),
        "",
        f"The committed corpora ({result['facts']:,} facts in {result['corpora']} banks, without the "
        "mentions' attributes, which the baseline does not read) replayed as "
        "`entity-resolver eval` does: one `INSERT INTO facts` per fact, autocommit, statistics flushed at "
        f"commit; this version and {result['baseline']} (before issue 16's per-fact work) in two {where}, "
        f"alternating corpus by corpus, {result['rounds']} rounds (median). Statements per fact: "
        "every level counted by pg_stat_statements (`track = all`: the INSERT, the trigger, the resolver, the "
        f"write path, the flush at commit), replaying the {COUNTED} corpus"
        + (f" in {result['counted_in']}." if result.get("counted_in") else "."),
        "",
        "| version | facts/s | statements per fact |",
        "|---|---:|---:|",
    ]
    st = result.get("statements", {})
    labels = {"current": "this version", "baseline": str(result["baseline"])}
    for side, fig in result["sides"].items():
        lines.append(f"| {labels[side]} | {fig['facts_per_second']:,.1f} | {st.get(side, {}).get('per_fact', '-')} |")
    if result.get("current_over_baseline") is not None:
        lines += ["", f"This version replays {result['current_over_baseline']:.2f}x as many facts per second."]
    lines.append("")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.per_fact", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a superuser DSN; default: a private throwaway cluster")
    parser.add_argument("--baseline", default=BASELINE, help="git ref to compare with ('' for none)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-fsync", action="store_true", help="private cluster only: fsync off")
    parser.add_argument("--prefill", type=int, default=0, metavar="N",
                        help="first replay the corpora N times into each database (untimed) and ANALYZE it")
    args = parser.parse_args(argv)
    print(json.dumps(measure_per_fact(args.dsn, args.baseline or None, args.rounds,
                                      fsync=not args.no_fsync, prefill_times=args.prefill), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
