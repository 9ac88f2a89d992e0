"""The entity-resolver command: tables for people, --json for scripts, one-line errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

from entity_resolver.cli import app
from entity_resolver.importer import fact_uuid
from shared import dsn_of

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}
BIN = Path(sys.executable).parent / "entity-resolver"


@pytest.fixture
def cli(conn):
    """Run the command against the test database; return the click Result."""
    runner = CliRunner()
    dsn = dsn_of(conn)

    def run(*args: str, input: str | None = None, with_dsn: bool = True):
        argv = list(args) + (["--dsn", dsn] if with_dsn else [])
        return runner.invoke(app, argv, input=input, env=CLEAN_ENV, catch_exceptions=False)

    return run


@pytest.fixture
def story(two_alexes):
    """A bank with the two Alexes and their neighbourhoods (tests/db/conftest.py)."""
    return two_alexes


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- basics -----------------------------------------------------------------------

def test_help_lists_the_commands():
    result = CliRunner().invoke(app, ["--help"], env=CLEAN_ENV)
    assert result.exit_code == 0
    for command in ("install", "demo", "import", "explain", "entities", "neighbors", "db"):
        assert command in result.stdout


def test_the_console_script_is_installed_and_reports_its_version():
    result = subprocess.run([str(BIN), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("entity-resolver ")


def test_install_applies_the_migrations_then_reports_up_to_date(empty_db):
    runner = CliRunner()
    dsn = dsn_of(empty_db())
    first = runner.invoke(app, ["install", "--dsn", dsn], env=CLEAN_ENV)
    assert first.exit_code == 0, first.output
    assert "migrations 1, 2" in first.stdout
    again = runner.invoke(app, ["install", "--dsn", dsn, "--json"], env=CLEAN_ENV)
    report = json.loads(again.stdout)
    assert report["applied_migrations"] == [] and report["version"] == report["previous_version"] > 0


def test_install_into_another_schema(empty_db):
    conn = empty_db()
    result = CliRunner().invoke(app, ["install", "--dsn", dsn_of(conn), "--schema", "er_alt", "--json"],
                                env=CLEAN_ENV)
    assert json.loads(result.stdout)["schema"] == "er_alt"
    assert conn.execute("SELECT to_regclass('er_alt.entities') IS NOT NULL").fetchone()[0]


def test_a_command_takes_its_database_and_schema_from_the_environment(empty_db):
    conn = empty_db()
    runner = CliRunner()
    installed = runner.invoke(app, ["install", "--dsn", dsn_of(conn), "--schema", "er_env"], env=CLEAN_ENV)
    assert installed.exit_code == 0, installed.output
    env = {**CLEAN_ENV, "ENTITY_RESOLVER_DSN": dsn_of(conn), "ENTITY_RESOLVER_SCHEMA": "er_env"}
    resolved = runner.invoke(app, ["resolve", "team", "Alex Kim", "--json"], env=env)
    assert resolved.exit_code == 0, resolved.output
    assert json.loads(resolved.stdout)["canonical_name"] == "Alex Kim"
    assert conn.execute("SELECT canonical_name FROM er_env.entities WHERE bank_id = 'team'").fetchall() == [
        ("Alex Kim",)]


def test_install_prints_the_locale_warning_of_a_c_locale_database(c_locale_db):
    result = CliRunner().invoke(app, ["install", "--dsn", dsn_of(c_locale_db())], env=CLEAN_ENV)
    assert result.exit_code == 0
    assert "warning: database LC_CTYPE is C" in result.stderr


def test_a_database_without_entity_resolver_says_to_install_it(empty_db):
    result = CliRunner().invoke(app, ["entities", "team", "--dsn", dsn_of(empty_db())], env=CLEAN_ENV)
    assert result.exit_code == 3      # systemic: the installation, not the input
    line = one_error_line(result)
    assert "not installed" in line and "entity-resolver install" in line and "a systemic error" in line


# -- resolution and explanation ------------------------------------------------------

def test_resolve_prints_the_entity_and_json_for_scripts(cli):
    table = cli("resolve", "team", "Alex Morgan", "--near", "Acme", "--at", "2026-03-02")
    assert table.exit_code == 0 and "Alex Morgan" in table.stdout and "new" in table.stdout
    data = json.loads(cli("resolve", "team", "alex morgan", "--json").stdout)
    assert (data["canonical_name"], data["created"], data["score"]) == ("Alex Morgan", False, 1.0)


def test_explain_shows_the_signals_and_the_verdict(cli, story):
    result = cli("explain", "team", "Alex", "--near", "Acme", "--near", "renewal", "--at", "2026-03-04T09:00:00Z")
    assert result.exit_code == 0
    out = result.stdout
    assert "Alex Morgan" in out and "Alex Kim" in out and "chosen" in out
    assert "resolves to 'Alex Morgan'" in out


def test_explain_json_lists_every_candidate(cli, story):
    data = json.loads(cli("explain", "team", "Alex", "--near", "React", "--at", "2026-03-03", "--json").stdout)
    assert data["resolves_to"]["canonical_name"] == "Alex Kim"
    decisions = {c["canonical_name"]: c["decision"] for c in data["candidates"]}
    # A bare first name two entities fit: the context chose Alex Kim (bare_names).
    assert decisions == {"Alex Kim": "chosen", "Alex Morgan": "ambiguous"}
    assert {c["lever"] for c in data["candidates"]} == {"bare_names"}
    assert set(data["candidates"][0]) >= {"trigram_similarity", "name_similarity", "cooccurrence", "recency", "score",
                                          "matched_form", "lever", "considered"}


def test_resolve_and_explain_take_attributes(cli):
    first = json.loads(cli("resolve", "crm", "Maria Schmidt", "-a", "birth_date=1961-05-03",
                           "--attribute", "email=maria@example.org", "--json").stdout)
    # Another birth date: another Maria Schmidt (a homonym).
    other = json.loads(cli("resolve", "crm", "Maria Schmidt", "-a", "birth_date=1990-11-20", "--json").stdout)
    assert other["entity_id"] != first["entity_id"] and other["created"]
    # The email, whatever the spelling of the name: the first one.
    again = json.loads(cli("resolve", "crm", "M. Schmidt", "-a", "email=MARIA@example.org", "--json").stdout)
    assert again["entity_id"] == first["entity_id"]
    data = json.loads(cli("explain", "crm", "Maria Schmidt", "-a", "birth_date=1990-11-20", "--json").stdout)
    assert data["attributes"] == {"birth_date": "1990-11-20"}
    assert data["resolves_to"]["candidate_id"] == other["entity_id"]
    assert {c["decision"] for c in data["candidates"]} >= {"attribute_conflict"}
    bad = cli("explain", "crm", "Maria Schmidt", "-a", "birth_date")
    assert bad.exit_code != 0 and "--attribute: expected NAME=VALUE" in one_error_line(bad)
    wrong = cli("resolve", "crm", "Maria Schmidt", "-a", "birth_date=someday")
    assert wrong.exit_code != 0 and "attributes.birth_date" in one_error_line(wrong)


def test_explain_writes_nothing(conn, cli):
    cli("explain", "team", "Acme")
    assert conn.execute("SELECT count(*) FROM entity_resolver.entities").fetchone()[0] == 0


# -- inspection --------------------------------------------------------------------

def test_entities_lists_the_most_mentioned_first(cli, story):
    data = json.loads(cli("entities", "team", "--top", "3", "--json").stdout)
    assert [e["canonical_name"] for e in data] == ["Acme", "Alex Morgan", "renewal"]
    assert data[0]["mention_count"] == 2 and data[0]["degree"] == 2
    table = cli("entities", "team").stdout
    assert "Alex Kim" in table and "mentions" in table


def test_neighbors_lists_the_neighbourhood(cli, story):
    data = json.loads(cli("neighbors", "team", "alex morgan", "--json").stdout)
    assert data["entity"]["canonical_name"] == "Alex Morgan"
    assert {(n["neighbor_name"], n["cooccurrence_count"]) for n in data["neighbors"]} == {("Acme", 2), ("renewal", 2)}


def test_neighbors_of_an_unknown_name_suggests_close_names(cli, story):
    result = cli("neighbors", "team", "Alex")
    assert result.exit_code == 1
    assert one_error_line(result) == "error: bank 'team' has no entity named 'Alex'; did you mean: Alex Kim, Alex Morgan?"


def test_expand_finds_facts_sharing_entities_by_their_fact_ids(cli, story):
    data = json.loads(cli("expand", "team", "f2", "--json").stdout)
    assert data == [{"unit_id": str(fact_uuid("f3")), "fact_id": "f3", "shared_entities": 3,
                     "content": "Alex Morgan Acme renewal"}]


def test_banks_and_flush(cli, story):
    banks = json.loads(cli("banks", "--json").stdout)
    assert [(b["bank_id"], b["entities"], b["facts"]) for b in banks] == [("team", 6, 3)]
    flushed = json.loads(cli("flush", "team", "--json").stdout)
    assert flushed == {"entities_updated": 0, "pairs_updated": 0}


def test_configure_changes_one_setting_and_keeps_the_others(cli):
    cli("configure", "team", "threshold=0.7")
    data = json.loads(cli("configure", "team", "name_weight=0.4", "--json").stdout)
    assert (data["threshold"], data["name_weight"], data["max_candidates"]) == (0.7, 0.4, 200)
    shown = cli("configure", "team").stdout
    assert "threshold" in shown and "set for this bank" in shown


def test_labels_set_show_and_json_schema(cli, tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"attributes": [
        {"key": "person", "type": "value", "values": [{"value": "sarah-chen"}, {"value": "alex-kim"}]}]}))
    assert cli("labels", "set", "team", str(path)).exit_code == 0
    assert "sarah-chen" in cli("labels", "show", "team").stdout
    schema = json.loads(cli("labels", "schema", "team").stdout)
    assert "sarah-chen" in json.dumps(schema)


# -- errors ---------------------------------------------------------------------------

def test_a_database_error_is_one_line_with_its_sqlstate(cli):
    result = cli("explain", "team", "   ")
    assert result.exit_code == 1
    assert one_error_line(result) == "error: 22023: mention: must not be empty or blank"


def test_with_json_an_error_is_also_json_on_stdout(cli):
    result = cli("configure", "team", "threshold=2", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["sqlstate"] == "22023" and "threshold" in data["error"]


def test_an_unreachable_database_is_one_line():
    result = CliRunner().invoke(app, ["entities", "team", "--dsn", "host=127.0.0.1 port=1 connect_timeout=3"],
                                env=CLEAN_ENV)
    assert result.exit_code == 3
    assert one_error_line(result).startswith("error: cannot connect to PostgreSQL")


def test_the_installed_command_prints_no_traceback(conn):
    result = subprocess.run([str(BIN), "explain", "", "Alex", "--dsn", dsn_of(conn)],
                            capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if not k.startswith("ENTITY_RESOLVER_")})
    assert result.returncode == 1
    assert result.stderr.strip() == "error: 22023: bank_id: must not be empty or blank"


# -- import ---------------------------------------------------------------------------

def facts_file(tmp_path: Path, n: int, extra: list[str] = ()) -> Path:
    lines = [json.dumps({"fact_id": f"f{i}", "bank_id": "team", "event_date": "2026-03-01T10:00:00Z",
                         "mentions": [{"text": "Alex Morgan", "gold": "p-1"}, "Acme"]}) for i in range(n)]
    path = tmp_path / "facts.jsonl"
    path.write_text("\n".join(lines + list(extra)) + "\n")
    return path


def test_import_prints_a_summary_and_a_rerun_skips_everything(cli, tmp_path):
    path = facts_file(tmp_path, 25)
    first = cli("import", str(path), "--batch", "10")
    assert first.exit_code == 0, first.output
    assert "facts imported" in first.stdout and "25" in first.stdout
    again = json.loads(cli("import", str(path), "--json").stdout)
    assert (again["facts"], again["skipped_existing"], again["entities_created"]) == (0, 25, 0)


def test_import_json_summary(cli, tmp_path):
    data = json.loads(cli("import", str(facts_file(tmp_path, 3)), "--bank", "b2", "--json").stdout)
    assert {k: data[k] for k in ("facts", "mentions", "entities_created", "banks")} == {
        "facts": 3, "mentions": 6, "entities_created": 2, "banks": ["b2"]}
    assert data["seconds"] >= 0


def test_import_rejects_a_file_with_a_bad_line_and_names_the_line(conn, cli, tmp_path):
    result = cli("import", str(facts_file(tmp_path, 3, ["{broken"])))
    assert result.exit_code == 1
    assert "line 4: not valid JSON" in result.stderr
    assert "nothing was imported" in result.stderr and "Traceback" not in result.output
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0


def test_import_skip_bad_imports_the_rest(cli, tmp_path):
    result = cli("import", str(facts_file(tmp_path, 3, ["{broken"])), "--skip-bad", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["facts"], data["skipped_bad"]) == (3, 1)
    assert data["bad_lines"] == [{"line": 4, "error": "not valid JSON: Expecting property name enclosed "
                                                       "in double quotes at column 2", "sqlstate": "22P02"}]
    skipped = cli("import", str(facts_file(tmp_path, 3, ["{broken"])), "--skip-bad", "--bank", "b2")
    assert "skipped line 4: not valid JSON" in skipped.stderr


def test_import_reads_stdin(cli, tmp_path):
    text = facts_file(tmp_path, 2).read_text()
    data = json.loads(cli("import", "-", "--json", input=text).stdout)
    assert data["facts"] == 2


def nul_file(tmp_path: Path) -> Path:
    """700 facts; line 601's content holds a \\u0000 escape, as a JSON encoder writes a NUL."""
    lines = [json.dumps({"fact_id": f"f{i}", "bank_id": "team", "content": f"fact {i}",
                         "mentions": ["Alex Morgan", "Acme"]}) for i in range(1, 701)]
    lines[600] = lines[600].replace('"fact 601"', '"fact\\u0000601"')
    path = tmp_path / "nul.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_refuses_a_nul_on_line_601_before_writing_anything(conn, cli, tmp_path):
    path = nul_file(tmp_path)
    assert "\\u0000" in path.read_text().splitlines()[600]
    result = cli("import", str(path))
    assert result.exit_code == 1, result.output
    assert ("line 601: content: contains a NUL character (\\u0000), which PostgreSQL cannot store"
            in result.stderr)
    assert "nothing was imported" in result.stderr and "Traceback" not in result.output
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0


def test_import_json_error_carries_the_sqlstate_and_the_bad_lines(conn, cli, tmp_path):
    result = cli("import", str(nul_file(tmp_path)), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (data["sqlstate"], data["kind"], data["exit_code"], data["facts_imported"]) == ("22P05", "data", 1, 0)
    assert data["bad_lines"] == [{"line": 601, "sqlstate": "22P05", "error":
                                  "content: contains a NUL character (\\u0000), which PostgreSQL cannot store"}]


def test_import_skip_bad_skips_the_nul_line_and_says_why(conn, cli, tmp_path):
    result = cli("import", str(nul_file(tmp_path)), "--skip-bad")
    assert result.exit_code == 0, result.output
    assert "skipped line 601: content: contains a NUL character" in result.stderr
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 699


def test_import_prints_the_first_twenty_reasons_and_how_many_more(cli, tmp_path):
    bad = [json.dumps({"fact_id": f"b{i}", "bank_id": "team", "mentions": [" "]}) for i in range(25)]
    path = facts_file(tmp_path, 3, bad)
    refused = cli("import", str(path))
    assert refused.exit_code == 1
    assert refused.stderr.count(": mentions[0]: must not be empty or blank") == 20
    assert "... and 5 more bad lines" in refused.stderr
    skipped = cli("import", str(path), "--skip-bad")
    assert skipped.exit_code == 0
    assert len(re.findall(r"^skipped line \d+: ", skipped.stderr, re.M)) == 20 and "... and 5 more skipped lines" in skipped.stderr
    assert "bad lines (skipped)" in skipped.stdout and "25" in skipped.stdout


def test_import_summary_shows_the_warnings(cli, tmp_path):
    path = facts_file(tmp_path, 2, ['{"fact_id": "quiet", "bank_id": "team", "content": "Thanks!"}'])
    result = cli("import", str(path))
    assert result.exit_code == 0, result.output
    assert "warning: line 3: mentions: none; the fact is stored linked to no entity" in result.stderr
    assert "1 (1 facts without mentions)" in result.stdout
    data = json.loads(cli("import", str(path), "--bank", "b2", "--json").stdout)
    assert data["facts_without_mentions"] == 1 and data["warnings"][0]["line"] == 3


@pytest.fixture
def bank_role(conn):
    """A login role bound to bank "other" only; its DSN."""
    name = f"er_cli_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    conn.execute("SELECT entity_resolver.grant_bank_access('other', %s)", (name,))
    i = conn.info
    yield f"host={i.host} port={i.port} user={name} dbname={i.dbname}"
    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_import_with_a_role_without_access_is_systemic_and_never_skipped(conn, bank_role, tmp_path):
    path = facts_file(tmp_path, 200)
    runner = CliRunner()
    result = runner.invoke(app, ["import", str(path), "--skip-bad", "--dsn", bank_role], env=CLEAN_ENV)
    assert result.exit_code == 3, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith('error: 42501: new row violates row-level security policy for table "facts"')
    assert "a systemic error, not a problem of the input (--skip-bad does not skip it)" in line
    assert "fix the line" not in line and "skipped" not in result.output
    data = json.loads(runner.invoke(app, ["import", str(path), "--skip-bad", "--json", "--dsn", bank_role],
                                    env=CLEAN_ENV).stdout)
    assert (data["sqlstate"], data["kind"], data["exit_code"]) == ("42501", "systemic", 3)
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0


def test_a_data_error_from_the_database_exits_1_and_a_systemic_one_3(cli, conn, bank_role):
    assert cli("explain", "team", " ").exit_code == 1
    denied = CliRunner().invoke(app, ["resolve", "team", "Acme", "--json", "--dsn", bank_role], env=CLEAN_ENV)
    assert denied.exit_code == 3
    assert json.loads(denied.stdout)["kind"] == "systemic" and json.loads(denied.stdout)["sqlstate"] == "42501"


# -- read commands on a bank that does not exist ---------------------------------------

@pytest.mark.parametrize("command", [
    ["entities", "tema"], ["neighbors", "tema", "Acme"], ["explain", "tema", "Acme"],
    ["expand", "tema", "f1"], ["labels", "show", "tema"], ["labels", "schema", "tema"],
    ["facts", "tema", "Acme"], ["graph", "tema"],
])
def test_reading_a_bank_that_does_not_exist_is_an_error_not_an_empty_answer(cli, story, command):
    result = cli(*command)
    assert result.exit_code == 1, result.output
    assert one_error_line(result) == ("error: bank 'tema' does not exist (or this role may not see it); "
                                      "did you mean: team?")


def test_an_existing_bank_without_entities_is_an_empty_answer(cli, conn):
    conn.execute("SELECT entity_resolver.configure_bank('empty', '{}')")
    result = cli("entities", "empty", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_entities_kind_must_be_one_of_the_kinds(cli, story):
    result = cli("entities", "team", "--kind", "bogus")
    assert result.exit_code == 2
    assert "'bogus' is not one of 'regular', 'label'" in result.output
    assert json.loads(cli("entities", "team", "--kind", "label", "--json").stdout) == []


# -- the demo ---------------------------------------------------------------------------

def test_demo_resolves_the_two_alexes(cli):
    result = cli("demo", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    by_fact = {f["fact_id"]: {r["mention"]: r["canonical_name"] for r in f["resolutions"]} for f in data["facts"]}
    assert by_fact["f08"]["Alex"] == "Alex Morgan"
    assert by_fact["f09"]["Alex"] == "Alex Kim"
    assert by_fact["f10"]["Sarah"] == "Sarah Chen"


def test_demo_prints_tables_and_the_reasons(cli):
    result = cli("demo")
    assert result.exit_code == 0, result.output
    assert "explain_mention('Alex'" in result.stdout
    assert "checked decisions are as the story expects" in result.stdout


def test_demo_does_not_overwrite_an_existing_bank_without_reset(cli):
    assert cli("demo", "--json").exit_code == 0
    refused = cli("demo")
    assert refused.exit_code == 1 and "--reset" in one_error_line(refused)
    assert cli("demo", "--reset", "--json").exit_code == 0


# -- evaluation ---------------------------------------------------------------------

def test_eval_scores_a_labelled_stream(cli, tmp_path):
    path = facts_file(tmp_path, 4)
    report = cli("eval", str(path))
    assert report.exit_code == 0, report.output
    data = json.loads(cli("eval", str(path), "--json").stdout)
    assert data["mentions"] == 8


# -- the embedded cluster -----------------------------------------------------------------

@pytest.mark.slow
def test_db_start_status_stop_on_a_data_directory_of_its_own():
    root = Path(tempfile.mkdtemp(prefix="entity_resolver-clitest-", dir="/tmp"))
    os.chmod(root, 0o755)
    datadir = str(root / "pgdata")
    runner = CliRunner()
    env = dict(CLEAN_ENV, ENTITY_RESOLVER_DATADIR=None)
    try:
        started = runner.invoke(app, ["db", "start", "--data-dir", datadir, "--json"], env=env)
        assert started.exit_code == 0, started.output
        status = json.loads(started.stdout)
        assert status["running"] is True and status["datadir"] == datadir
        with psycopg.connect(status["dsn"]) as conn:
            assert conn.execute("SELECT to_regclass('entity_resolver.entities') IS NOT NULL").fetchone()[0]
        # A command without --dsn uses it and says where it is and how to stop it.
        used = runner.invoke(app, ["resolve", "team", "Acme", "--data-dir", datadir], env=env)
        assert used.exit_code == 0, used.output
        assert datadir in used.stderr and f"entity-resolver db stop --data-dir {datadir}" in used.stderr
        stopped = runner.invoke(app, ["db", "stop", "--data-dir", datadir], env=env)
        assert stopped.exit_code == 0 and "stopped" in stopped.stdout
        assert json.loads(runner.invoke(app, ["db", "status", "--data-dir", datadir, "--json"],
                                        env=env).stdout)["running"] is False
    finally:
        runner.invoke(app, ["db", "destroy", "--data-dir", datadir, "--yes"], env=env)
        shutil.rmtree(root, ignore_errors=True)


def test_homonyms_are_named_apart_and_a_shared_name_is_refused_where_one_entity_is_meant(cli, conn):
    for date in ("1961-05-03", "1990-11-20"):
        cli("resolve", "crm", "Maria Schmidt", "-a", f"birth_date={date}")
    ids = sorted(str(r[0]) for r in conn.execute(
        "SELECT id FROM entity_resolver.entities WHERE bank_id = 'crm' AND canonical_name = 'Maria Schmidt'"))
    assert len(ids) == 2
    listed = cli("entities", "crm").stdout
    for date in ("1961-05-03", "1990-11-20"):
        assert f"Maria Schmidt (birth_date {date}, " in listed
    explained = cli("explain", "crm", "Maria Schmidt", "-a", "birth_date=1961-05-03").stdout
    assert "resolves to 'Maria Schmidt (birth_date 1961-05-03, " in explained
    refused = cli("neighbors", "crm", "maria schmidt")
    line = one_error_line(refused)
    assert refused.exit_code != 0 and "2 entities named 'maria schmidt' (homonyms)" in line
    assert all(i in line for i in ids)
