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
from shared import dsn_of

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}
BIN = Path(sys.executable).parent / "entity-resolver"


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env={**CLEAN_ENV, **(env or {})}, catch_exceptions=False)


# -- two imports of one file at once ------------------------------------------------

def many_facts(path: Path, n: int, start: int = 0) -> Path:
    # Names enough to create entities in most batches: each run's count is
    # then about the batches it won, not a rounding of the last one.
    # Literal mentions (resolve: false) too: they create under a decision of their own.
    lines = [json.dumps({"fact_id": f"f{i}", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
                         "mentions": [f"Person{i % 400:03d} Q{i % 400:03d}x", f"Org{i % 97:02d}",
                                      {"text": f"ID-{i % 60}", "resolve": False}]})
             for i in range(start, start + n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_imports_at_once_of_files_sharing_facts_count_only_what_each_wrote(conn, tmp_path):
    # Two files that share their middle 400 facts: each run has facts only it
    # can write (so both write some, however the two interleave) and facts the
    # other may write first.
    paths = [many_facts(tmp_path / "first.jsonl", 800), many_facts(tmp_path / "second.jsonl", 800, start=400)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTITY_RESOLVER_")}
    procs = [subprocess.Popen([str(BIN), "import", str(path), "--batch", "20", "--json", "--dsn", dsn_of(conn)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for path in paths]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    a, b = (json.loads(out) for out, _ in outs)
    facts, entities = conn.execute(
        "SELECT (SELECT count(*) FROM entity_resolver.facts WHERE bank_id = 'team'),"
        " (SELECT count(*) FROM entity_resolver.entities WHERE bank_id = 'team')").fetchone()
    assert facts == 1200
    # Each fact was written by one run, and each run says which: the two add up.
    assert a["facts"] + b["facts"] == 1200
    assert a["skipped_existing"] + b["skipped_existing"] == 400
    assert a["mentions"] + b["mentions"] == 3 * 1200
    assert a["entities_created"] + b["entities_created"] == entities
    # Each wrote at least the facts only it had.
    assert a["facts"] >= 400 and b["facts"] >= 400, (a, b)


# -- exit statuses --------------------------------------------------------------------

def test_undo_of_an_operation_later_ones_build_on_is_a_data_error_naming_them(conn):
    er = Client(conn)
    for n, mentions in enumerate([["Alex Morgan", "Acme"], ["Alex Kim", "React"]], 1):
        er.retain("team", mentions, event_date=f"2026-03-0{n}T09:00:00Z", fact_id=f"f{n}")
    merged = er.merge("team", ["Alex Kim"], "Alex Morgan")["operation_id"]
    alias = er.add_alias("team", "Alex Morgan", "AM")["operation_id"]
    result = run("undo", "team", str(merged), "--dsn", dsn_of(conn))
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: 2BP01: operation_id: operation ")
    assert f"later operations build on it: {alias} (add_alias)" in line and "systemic" not in line
    data = json.loads(run("undo", "team", str(merged), "--json", "--dsn", dsn_of(conn)).stdout)
    assert (data["sqlstate"], data["kind"], data["exit_code"]) == ("2BP01", "data", 1)


@pytest.mark.parametrize("dsn", ["not a dsn", "hots=localhost", "postgresql://[::1"])
@pytest.mark.parametrize("command", [["entities", "team"], ["install"], ["import", "-"]])
def test_a_malformed_dsn_is_a_usage_error(dsn, command):
    result = run(*command, "--dsn", dsn)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--dsn': not a PostgreSQL connection string" in result.stderr
    assert "Traceback" not in result.output
    data = json.loads(run(*command, "--dsn", dsn, "--json").stdout)
    assert data["kind"] == "usage" and data["exit_code"] == 2 and data["sqlstate"] is None
    assert data["error"].startswith("Invalid value for '--dsn': not a PostgreSQL connection string: ")


@pytest.mark.parametrize("argv, error", [
    (["entities", "--json", "--bogus"], "No such option: --bogus"),
    (["entities", "--json"], "Missing argument 'bank'."),
    (["nosuch", "--json"], "No such command 'nosuch'."),
    (["db", "status", "--json", "--bogus"], "No such option: --bogus"),
    (["entities", "team", "--kind", "bogus", "--json"], "Invalid value for '--kind'"),
])
def test_with_json_a_usage_error_is_also_json_on_stdout(argv, error):
    result = run(*argv)
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert set(data) == {"error", "sqlstate", "kind", "exit_code"}
    assert data["error"].startswith(error) and (data["kind"], data["exit_code"]) == ("usage", 2)
    assert error in result.stderr          # click's usage message as before
    # Without --json, stdout stays empty.
    assert run(*[a for a in argv if a != "--json"]).stdout == ""


# -- progress -----------------------------------------------------------------------------

def test_an_import_into_a_log_prints_a_progress_line_at_each_interval(conn, tmp_path):
    path = many_facts(tmp_path / "facts.jsonl", 60)
    result = run("import", str(path), "--batch", "1", "--dsn", dsn_of(conn),
                 env={"ENTITY_RESOLVER_PROGRESS_SECONDS": "0.05"})
    assert result.exit_code == 0, result.output
    lines = re.findall(r"^importing: (\d+) of 60 facts done, (\d+\.\d) facts/s$", result.stderr, re.M)
    assert len(lines) >= 2, result.stderr
    done = [int(d) for d, _ in lines]
    assert done == sorted(done) and done[-1] > 0
    assert "facts imported" in result.stdout


def test_the_progress_interval_must_be_a_positive_number(conn, tmp_path):
    path = many_facts(tmp_path / "facts.jsonl", 3)
    result = run("import", str(path), "--dsn", dsn_of(conn), env={"ENTITY_RESOLVER_PROGRESS_SECONDS": "0"})
    assert result.exit_code == 2 and "ENTITY_RESOLVER_PROGRESS_SECONDS: must be a positive number" in result.stderr


# -- explain at 80 columns and less ------------------------------------------------------

@pytest.fixture
def alexes(two_alexes):
    """The two Alexes of docs/accuracy.md (tests/db/conftest.py)."""
    return two_alexes


@pytest.mark.parametrize("columns", [80, 40])
def test_explain_keeps_every_candidate_name_whole_and_fits_the_terminal(conn, alexes, columns):
    alexes.retain("team", ["Alexander Hamilton", "Treasury"], event_date="2026-03-03T12:00:00Z", fact_id="f4")
    result = run("explain", "team", "Alex", "--near", "Acme", "--at", "2026-03-04T09:00:00Z", "--dsn", dsn_of(conn),
                 env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    candidates = [c.canonical_name for c in alexes.explain("team", "Alex", ["Acme"], "2026-03-04T09:00:00Z")]
    assert {"Alex Morgan", "Alex Kim", "Alexander Hamilton"} <= set(candidates)
    for name in candidates:
        # Each name whole on one line, at the start of its row: the column was not wrapped.
        assert any(line.startswith(name + " ") for line in lines), (name, result.stdout)
    assert max(len(line.rstrip()) for line in lines) <= columns, result.stdout
    assert "score" in lines[1] and "decision" in lines[1]
    if columns == 40:
        words = " ".join(result.stdout.split())     # the note may wrap, as sentences do
        assert "not shown at 40 columns: words, trigram, recency, name, cooc, lever (--json has every signal)" in words


def test_explain_says_why_a_candidate_under_the_threshold_won(conn, alexes):
    # docs/accuracy.md's case: "Alex" near Acme five days after Alex Morgan's last fact and six
    # after Alex Kim's (both in its neighbourhood: seen within the recency window), Alex Morgan
    # chosen at 0.536 by the bare-name lever.
    at = "2026-03-08T10:00:00Z"
    result = run("explain", "team", "Alex", "--near", "Acme", "--at", at, "--dsn", dsn_of(conn),
                 env={"COLUMNS": "80"})
    [row] = [c for c in alexes.explain("team", "Alex", ["Acme"], at) if c.decision == "chosen"]
    assert (row.canonical_name, row.lever, round(row.score, 3)) == ("Alex Morgan", "bare_names", 0.536)
    why = [line for line in result.stdout.splitlines() if "chosen by context: bare-name lever" in line]
    assert len(why) == 1 and why[0] == "-> chosen by context: bare-name lever; score 0.536, under the threshold 0.600", result.stdout
    # A candidate chosen over the threshold needs no such line.
    plain = run("explain", "team", "Alex Morgan", "--dsn", dsn_of(conn))
    assert "resolves to 'Alex Morgan'" in plain.stdout and "chosen by" not in plain.stdout


def test_explain_shows_at_most_limit_rows_and_how_many_more(conn):
    er = Client(conn)
    surnames = ["Abbott", "Baker", "Carter", "Dalton", "Ellis", "Foster", "Garcia", "Hughes", "Irwin", "Jensen",
                "Keller", "Lawson", "Murphy", "Nolan", "Owens"]
    for n, surname in enumerate(surnames):
        er.retain("team", [f"Alex {surname}", f"Topic {n}"], fact_id=f"f{n}")
    total = len(er.explain("team", "Alex Owens"))
    assert total > 12
    default = run("explain", "team", "Alex Owens", "--dsn", dsn_of(conn))
    assert default.exit_code == 0
    shown = [s for s in surnames if any(line.startswith(f"Alex {s} ") for line in default.stdout.splitlines())]
    assert len(shown) == 10 and "Owens" in shown            # the chosen one always among them
    assert f"{total - 10} more (--limit {total} shows them)" in default.stdout
    three = run("explain", "team", "Alex Owens", "--limit", "3", "--dsn", dsn_of(conn))
    assert f"{total - 3} more" in three.stdout
    assert sum(line.startswith("Alex ") for line in three.stdout.splitlines()) == 3
    assert len(json.loads(run("explain", "team", "Alex Owens", "--limit", "3", "--json",
                              "--dsn", dsn_of(conn)).stdout)["candidates"]) == total


# -- db status: the DSN first --------------------------------------------------------------

def test_db_status_prints_the_dsn_on_line_one_ready_to_export(tmp_path):
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="entity_resolver-clitest-", dir="/tmp"))
    os.chmod(root, 0o755)
    datadir = str(root / "pgdata")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTITY_RESOLVER_")}
    env["PATH"] = f"{BIN.parent}{os.pathsep}{env.get('PATH', '')}"
    try:
        started = run("db", "start", "--data-dir", datadir, env={"COLUMNS": "40"})
        assert started.exit_code == 0, started.output
        dsn = json.loads(run("db", "status", "--data-dir", datadir, "--json").stdout)["dsn"]
        assert started.stdout.splitlines()[0] == dsn          # whole, however narrow the terminal
        status = run("db", "status", "--data-dir", datadir, env={"COLUMNS": "40"})
        assert status.stdout.splitlines()[0] == dsn and "embedded PostgreSQL: running" in status.stdout
        # As docs/operations.md shows it: exported, then used by a command and by an application.
        script = (f'export DSN="$(entity-resolver db status --data-dir {datadir} | head -n 1)"\n'
                  'entity-resolver resolve team Acme --json --dsn "$DSN"')
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["canonical_name"] == "Acme"
        with psycopg.connect(dsn) as c:
            assert c.execute("SELECT count(*) FROM entity_resolver.entities").fetchone()[0] == 1
        stopped = run("db", "stop", "--data-dir", datadir)
        assert stopped.exit_code == 0
        # Stopped, there is no DSN to print: line one says so.
        assert run("db", "status", "--data-dir", datadir).stdout.startswith("embedded PostgreSQL: stopped")
    finally:
        run("db", "destroy", "--data-dir", datadir, "--yes")
        shutil.rmtree(root, ignore_errors=True)
