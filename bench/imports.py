"""Import speed: a batch is a speed knob (issue 13), measured side by side in one run.

    python -m bench.imports                       # corpora + a 5,000-fact stream, printed as JSON

Each import goes into a database of its own, made for it and dropped after:

* the current code at the importer's default batch (500 facts per INSERT),
* the current code fact by fact (``--batch 1``),
* a baseline release (``baseline``, a git ref; default the 0.1.0 release) at
  its default batch: its sources are exported with ``git archive`` and its own
  installer and importer run in a subprocess (``PYTHONPATH``), so both versions
  meet the same server, the same stream and the same machine state.

``measure_bank_import`` times the importer at its default batch into one of
the benchmark's generated banks (issue 34's bulk-import figure): facts made as
the benchmark's retains (``make_retain``), dated at the bank's ``NOW``.

The 5,000-fact stream is seeded (``stream``): people, organisations, places
and topics of a small team's memory, with full names, bare first names,
typos and case variants, dates moving forward.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.names import ADJ, FIRST, NOUN, ORG_SUFFIX, SYLLABLES, typo
from bench.workloads import NOW, make_retain
from entity_resolver import importer

REPO = Path(__file__).resolve().parents[1]
BASELINE = "fc0dbf5"        # the 0.1.0 release
SEED = 20261130


def measure_bank_import(dsn: str, bank: Any, facts: int = 2000, seed: int = SEED) -> Dict[str, Any]:
    """``entity-resolver import`` at the default batch into ``bank`` (a ``build_bank`` bank of the database
    ``dsn`` names): ``facts`` facts of the benchmark's retains, timed from the scan to the last commit."""
    rng = random.Random(seed)
    rows: List[str] = []
    mentions = 0
    while len(rows) < facts:
        for texts in make_retain(bank, rng):
            if len(rows) < facts:
                rows.append(json.dumps({"fact_id": f"import-{len(rows)}", "bank_id": bank.bank_id,
                                        "event_date": NOW.isoformat(), "mentions": texts}, ensure_ascii=False))
                mentions += len(texts)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "facts.jsonl"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        with psycopg.connect(dsn, autocommit=True) as conn:
            started = time.perf_counter()
            summary = importer.import_file(conn, path)
            seconds = time.perf_counter() - started
    return {"facts": summary.facts, "mentions": mentions, "batch": importer.DEFAULT_BATCH,
            "seconds": round(seconds, 1), "facts_per_second": round(summary.facts / seconds, 1),
            "mentions_per_second": round(mentions / seconds, 1), "entities_created": summary.entities_created}


def stream(path: Path, facts: int = 5000, seed: int = SEED) -> Path:
    """Write a seeded stream of ``facts`` facts in the import format; return its path."""
    rng = random.Random(seed)
    people = [f"{rng.choice(FIRST)} {rng.choice(SYLLABLES).title()}{rng.choice(SYLLABLES)}" for _ in range(400)]
    orgs = [f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(ORG_SUFFIX)}" for _ in range(120)]
    places = [f"{rng.choice(NOUN)} {rng.choice(['City', 'Bay', 'Park', 'Street'])}" for _ in range(80)]
    topics = [f"{rng.choice(ADJ).lower()} {rng.choice(NOUN).lower()} review" for _ in range(150)]
    day = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with path.open("w", encoding="utf-8") as out:
        for n in range(facts):
            day += timedelta(minutes=rng.randint(5, 240))
            person = rng.choice(people)
            roll = rng.random()
            if roll < 0.15:
                person = person.split()[0]          # a bare first name
            elif roll < 0.25:
                person = typo(rng, person)
            elif roll < 0.3:
                person = person.upper()
            mentions = [person, rng.choice(orgs)]
            if rng.random() < 0.6:
                mentions.append(rng.choice(places))
            if rng.random() < 0.5:
                mentions.append(rng.choice(topics))
            out.write(json.dumps({"fact_id": f"s{n}", "bank_id": "stream", "event_date": day.isoformat(),
                                  "content": f"fact {n}", "mentions": mentions}) + "\n")
    return path


def _dsn(dsn: str, dbname: str) -> str:
    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


def _export(ref: str, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def _import(dsn: str, path: Path, batch: int, src: Optional[Path]) -> Dict[str, Any]:
    """Install into a fresh database and import ``path`` with the CLI of ``src`` (None: this checkout)."""
    dbname = f"er_import_{os.getpid()}_{int(time.monotonic() * 1000) % 100000}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    target = _dsn(dsn, dbname)
    try:
        subprocess.run([sys.executable, "-c", "import psycopg; from entity_resolver.install import install; "
                        f"install(psycopg.connect({target!r}, autocommit=True))"],
                       env=env, check=True, capture_output=True)
        done = subprocess.run([sys.executable, "-m", "entity_resolver.cli", "import", str(path), "--dsn", target,
                               "--batch", str(batch), "--json"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"import failed: {done.stdout[-500:]} {done.stderr[-500:]}")
        summary = json.loads(done.stdout)
        return {"facts": summary["facts"], "seconds": summary["seconds"],
                "facts_per_second": round(summary["facts"] / summary["seconds"], 1)}
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))


def _untyped(path: Path) -> str:
    """A corpus file without mention types and attributes: the baseline's importer refuses both keys,
    and all three imports must read the same stream (they matter to accuracy, not to speed)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fact = json.loads(line)
        for m in fact.get("mentions", []):
            if isinstance(m, dict):
                m.pop("type", None)
                m.pop("attributes", None)
        lines.append(json.dumps(fact, ensure_ascii=False) + "\n")
    return "".join(lines)


def measure_imports(dsn: str, corpora: Path = REPO / "bench" / "corpora", facts: int = 5000,
                    baseline: Optional[str] = BASELINE, default_batch: int = 500) -> Dict[str, Any]:
    """Import the committed corpora and a seeded stream: default batch, batch 1, the baseline's default."""
    result: Dict[str, Any] = {"baseline": baseline, "default_batch": default_batch, "streams": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        joined = tmpdir / "corpora.jsonl"
        joined.write_text("".join(_untyped(p) for p in sorted(corpora.glob("*.jsonl"))), encoding="utf-8")
        streams = {"corpora": joined, f"stream of {facts:,}": stream(tmpdir / "stream.jsonl", facts)}
        old_src = _export(baseline, tmpdir / "baseline") if baseline else None
        for name, path in streams.items():
            entry = {
                "default_batch": _import(dsn, path, default_batch, None),
                "batch_1": _import(dsn, path, 1, None),
            }
            if old_src is not None:
                entry["baseline_default_batch"] = _import(dsn, path, default_batch, old_src)
            entry["batch_1_over_default"] = round(entry["batch_1"]["seconds"] / entry["default_batch"]["seconds"], 2)
            if old_src is not None:
                entry["default_over_baseline"] = round(
                    entry["default_batch"]["seconds"] / entry["baseline_default_batch"]["seconds"], 2)
            result["streams"][name] = entry
    return result


def markdown(result: Dict[str, Any]) -> str:
    """The import section of docs/benchmarks.md."""
    lines = [
        "## Import: one statement per batch against fact by fact",
        "",
        f"`entity-resolver import` into a fresh database, same run: the default batch "
        f"({result['default_batch']} facts per INSERT), `--batch 1`, and the {result['baseline']} release "
        "(0.1.0, whose batches resolved a statement's facts together against the bank as it was before "
        "the statement) at its default batch. Every batch leaves the bank exactly as fact by fact "
        "(tests/db/test_batch_neutrality.py). The corpora are imported without their mention types and "
        "attributes, which 0.1.0 does not read.",
        "",
        "| stream | facts | default batch (s) | `--batch 1` (s) | 0.1.0 default batch (s) "
        "| `--batch 1` / default | default / 0.1.0 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, e in result["streams"].items():
        base = e.get("baseline_default_batch", {})
        lines.append(f"| {name} | {e['default_batch']['facts']:,} | {e['default_batch']['seconds']:.2f} | "
                     f"{e['batch_1']['seconds']:.2f} | {base.get('seconds', float('nan')):.2f} | "
                     f"{e['batch_1_over_default']:.2f}x | {e.get('default_over_baseline', float('nan')):.2f}x |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(measure_imports(sys.argv[1] if len(sys.argv) > 1 else
                                     "host=127.0.0.1 port=5432 user=postgres dbname=postgres"), indent=2))
