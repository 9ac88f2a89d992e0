"""What the command line reports: summaries that count what this run did, exit statuses that
name the kind of error, progress when nobody watches a terminal, explain at 80 columns and less."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver.cli import app
from entity_resolver.client import Client

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}
BIN = Path(sys.executable).parent / "entity-resolver"


def dsn_of(conn: psycopg.Connection) -> str:
    i = conn.info
    return f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}"


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env={**CLEAN_ENV, **(env or {})}, catch_exceptions=False)


# -- two imports of one file at once ------------------------------------------------

def many_facts(path: Path, n: int) -> Path:
    # Names enough to create entities in most batches: each run's count is
    # then about the batches it won, not a rounding of the last one.
    # Literal mentions (resolve: false) too: they create under a decision of their own.
    lines = [json.dumps({"fact_id": f"f{i}", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
                         "mentions": [f"Person{i % 400:03d} Q{i % 400:03d}x", f"Org{i % 97:02d}",
                                      {"text": f"ID-{i % 60}", "resolve": False}]})
             for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_imports_of_one_file_at_once_count_only_what_each_wrote(conn, tmp_path):
    path = many_facts(tmp_path / "facts.jsonl", 1200)
    argv = [str(BIN), "import", str(path), "--batch", "20", "--json", "--dsn", dsn_of(conn)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTITY_RESOLVER_")}
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    a, b = (json.loads(out) for out, _ in outs)
    facts, entities = conn.execute(
        "SELECT (SELECT count(*) FROM entity_resolver.facts WHERE bank_id = 'team'),"
        " (SELECT count(*) FROM entity_resolver.entities WHERE bank_id = 'team')").fetchone()
    assert facts == 1200
    # Each fact was written by one run, and each run says which: the two add up.
    assert a["facts"] + b["facts"] == 1200
    assert a["skipped_existing"] + b["skipped_existing"] == 1200
    assert a["mentions"] + b["mentions"] == 3 * 1200
    assert a["entities_created"] + b["entities_created"] == entities
    # Both ran at once (each wrote some): otherwise the test shows nothing.
    assert a["facts"] > 0 and b["facts"] > 0, (a, b)
