"""Correcting identity from the command line and the Python client (docs/corrections.md).

Entities are named by id, canonical name or alias, facts by fact_id; --dry-run
previews; --json prints the plan; errors are one line with their SQLSTATE."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

from corrections_helpers import ER, differences, entity_id, snapshot
from entity_resolver import roles
from entity_resolver.cli import app
from entity_resolver.client import Client, Operation
from shared import dsn_of

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}


@pytest.fixture
def cli(conn):
    def run(*args: str, dsn: str | None = None):
        return CliRunner().invoke(app, [*args, "--dsn", dsn or dsn_of(conn)], env=CLEAN_ENV, catch_exceptions=False)
    return run


@pytest.fixture
def story(conn):
    er = Client(conn)
    for n, mentions in enumerate([["Alex Morgan", "Acme", "renewal"], ["Alex Kim", "React", "Sprint 14"],
                                  ["Alex Kim", "Priya", "React"], ["Alex Morgan", "Acme", "Priya"]], 1):
        er.retain("team", mentions, event_date=f"2026-03-0{n}T09:00:00Z", fact_id=f"f{n}")
    return er


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_merge_by_name_previews_applies_and_is_undone(conn, cli, story):
    before = snapshot(conn, "team")
    preview = cli("merge", "team", "alex kim", "--into", "Alex Morgan", "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert "merge 'Alex Kim' into 'Alex Morgan' (dry run: nothing written)" in preview.stdout
    assert "mentions moved: 2" in preview.stdout
    assert snapshot(conn, "team") == before
    plan = json.loads(cli("merge", "team", "Alex Kim", "--into", "Alex Morgan", "--reason", "one", "--json").stdout)
    assert plan["operation_id"] is not None and plan["aliases_added"] == ["Alex Kim"]
    history = cli("history", "team")
    assert "merge 'Alex Kim' into 'Alex Morgan'" in history.stdout and "can be undone" in history.stdout
    undone = cli("undo", "team", str(plan["operation_id"]))
    assert undone.exit_code == 0 and "undone: operation" in undone.stdout
    assert snapshot(conn, "team") == before
    rows = json.loads(cli("history", "team", "--json").stdout)
    assert [(r["kind"], r["reason"], r["undone_by"]) for r in rows] == [("merge", "one", conn.info.user)]


def test_split_rename_alias_unalias_and_forget(conn, cli, story):
    split = json.loads(cli("split", "team", "Alex Kim", "--fact", "f3", "--name", "Alex Kimura", "--json").stdout)
    assert split["mentions_moved"] == 1 and split["new_entity"]["name"] == "Alex Kimura"
    assert cli("rename", "team", "Acme", "Acme Corporation").exit_code == 0
    assert cli("alias", "team", "acme", "ACME Corp").exit_code == 0          # named by its old name, an alias now
    assert sorted(r[0] for r in conn.execute(f"SELECT alias FROM {ER}.entity_aliases WHERE entity_id = %s",
                                             (entity_id(conn, "team", "Acme Corporation"),))) == ["ACME Corp", "Acme"]
    assert cli("unalias", "team", "acme corp").exit_code == 0
    preview = json.loads(cli("forget", "team", "Priya", "--dry-run", "--json").stdout)
    assert (preview["mentions"], preview["dry_run"]) == (2, True)
    assert "forget 'Priya'" in cli("forget", "team", "Priya").stdout
    kinds = [r["kind"] for r in json.loads(cli("history", "team", "--json").stdout)]
    assert kinds == ["forget_entity", "remove_alias", "add_alias", "rename", "split"]
    assert differences(conn, "team")["differences"] == 0


def test_errors_are_one_line_naming_the_argument(conn, cli, story):
    unknown = cli("merge", "team", "Nobody", "--into", "Alex Morgan")
    assert unknown.exit_code == 1
    assert error_line(unknown) == "error: sources: bank 'team' has no entity named 'Nobody'"
    taken = cli("rename", "team", "Acme", "priya")
    assert taken.exit_code == 1
    assert error_line(taken).startswith("error: 23505: new_name: 'priya' is already the name of entity ")
    refused = cli("undo", "team", "42")
    assert error_line(refused) == "error: 22023: operation_id: bank 'team' has no operation 42"
    assert cli("history", "nobody").exit_code == 1


def test_a_role_that_may_not_correct_gets_a_systemic_error(conn, cli, story):
    name = f"er_cli_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE entity_resolver_user").format(sql.Identifier(name)))
    try:
        result = cli("alias", "team", "Acme", "ACME Corp", dsn=dsn_of(conn, name))
        assert result.exit_code == 3
        assert error_line(result).startswith(f"error: 42501: bank_id: role {name} may not correct bank 'team'")
        roles.grant_curation(conn, "team", name)
        assert cli("alias", "team", "Acme", "ACME Corp", dsn=dsn_of(conn, name)).exit_code == 0
        assert roles.curator_role(conn) == "entity_resolver_curator"
        assert roles.revoke_curation(conn, "team", name) is True
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_the_client_corrects_by_id_name_or_alias_and_reads_the_history(conn, story):
    kim, morgan = entity_id(conn, "team", "Alex Kim"), entity_id(conn, "team", "Alex Morgan")
    plan = story.merge("team", [uuid.UUID(kim)], "alex morgan", dry_run=True)
    assert plan["dry_run"] is True
    op = story.merge("team", [kim], morgan, reason="one")["operation_id"]
    assert str(story.current_entity("team", kim)) == morgan
    assert story.entity_id("team", "ALEX KIM") == uuid.UUID(morgan)             # an alias now
    story.add_alias("team", "Alex Kim", "AK")
    [latest, merged] = story.history("team")
    assert isinstance(latest, Operation) and (latest.kind, merged.operation_id) == ("add_alias", op)
    assert merged.blocked_by == [latest.operation_id]
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        story.undo("team", op)
    story.undo("team", latest.operation_id)
    story.undo("team", op)
    assert [o.undone_at is not None for o in story.history("team")] == [True, True]
    split = story.split("team", "Alex Kim", ["f3"], "Alex Kimura")
    assert split["units"] == 1
    with pytest.raises(TypeError, match="^facts: a list"):
        story.split("team", "Alex Kim", "f3", "Alex Kimura")
    with pytest.raises(ValueError, match="^entity: bank 'team' has no entity named 'Nobody'"):
        story.forget_entity("team", "Nobody")
    assert story.rename("team", "Acme", "Acme Inc")["alias_added"] == "Acme"
    assert story.remove_alias("team", "ACME")["alias"] == "Acme"
    assert story.forget_entity("team", "Priya", dry_run=True)["mentions"] == 2


def test_retain_keeps_the_callers_fact_id(conn, story):
    assert conn.execute(f"SELECT fact_id FROM {ER}.facts WHERE bank_id = 'team' ORDER BY event_date").fetchall() \
        == [("f1",), ("f2",), ("f3",), ("f4",)]


def test_help_lists_the_correction_commands():
    result = CliRunner().invoke(app, ["--help"], env=CLEAN_ENV)
    for command in ("merge", "split", "rename", "alias", "unalias", "forget", "undo", "history", "export"):
        assert f" {command} " in result.stdout, command


def test_forget_erase_reports_the_rewritten_ledger_and_the_facts_and_undo_refuses_it(conn, cli, story):
    cli("alias", "team", "Priya", "P.")
    preview = cli("forget", "team", "Priya", "--erase", "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert "names erased: P., Priya" in preview.stdout and "to rewrite without the names" in preview.stdout
    done = cli("forget", "team", "Priya", "--erase", "--json")
    assert done.exit_code == 0, done.output
    plan = json.loads(done.stdout)
    assert [o["kind"] for o in plan["operations_erased"]] == ["add_alias"]
    assert sorted(f["fact_id"] for f in plan["facts_naming"]) == ["f3", "f4"]
    refused = cli("undo", "team", str(plan["operation_id"]))
    assert refused.exit_code == 1 and f"erased by operation {plan['operation_id']}" in error_line(refused)
    assert "priya" not in conn.execute(f"SELECT string_agg(o::text, ' ') FROM {ER}.operations AS o").fetchone()[0] \
        .lower()


def test_split_drop_aliases_removes_the_alias_the_moved_mentions_are_written_as(conn, cli, story):
    cli("alias", "team", "Alex Kim", "Kim")
    story.retain("team", ["Kim", "Oslo"], event_date="2026-03-05T09:00:00Z", fact_id="f5")
    result = cli("split", "team", "Alex Kim", "--fact", "f5", "--name", "Kim Other", "--drop-aliases")
    assert result.exit_code == 0, result.output
    assert "aliases the moved mentions are written as: Kim" in result.stdout
    assert "aliases removed: Kim" in result.stdout
    assert conn.execute(f"SELECT count(*) FROM {ER}.entity_aliases WHERE bank_id = 'team'").fetchone()[0] == 0
