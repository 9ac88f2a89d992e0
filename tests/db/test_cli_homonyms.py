"""Homonyms on the command line (issue 31, item 5): the CLI names them apart, and a name several entities bear
is refused where one entity is meant (22023, naming the argument and listing the ids), never one picked."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from corrections_helpers import ER, insert_fact, snapshot
from entity_resolver.cli import app
from entity_resolver.client import AmbiguousName, Client
from shared import dsn_of

BANK = "namesakes"
CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "250"}


@pytest.fixture
def cli(conn):
    def run(*args: str):
        return CliRunner().invoke(app, [*args, "--dsn", dsn_of(conn)], env=CLEAN_ENV, catch_exceptions=False)
    return run


@pytest.fixture
def marias(conn):
    """Two people called Maria Schmidt, told apart by birth date: the colleague (Berlin office), the customer."""
    for day, born, place in ((1, "1961-05-03", "Berlin office"), (2, "1984-11-20", "order 4411"),
                             (3, "1961-05-03", "Berlin office")):
        insert_fact(conn, BANK, [{"text": "Maria Schmidt", "type": "person", "attributes": {"birth_date": born}},
                                 place], f"2026-03-0{day}T09:00:00Z")
    rows = conn.execute(f"SELECT a.value, e.id FROM {ER}.entities e JOIN {ER}.entity_attributes a"
                        " ON a.bank_id = e.bank_id AND a.entity_id = e.id"
                        " WHERE e.bank_id = %s AND e.canonical_name = 'Maria Schmidt'", (BANK,)).fetchall()
    found = {born: str(i) for born, i in rows}
    assert len(found) == 2, "the resolver made no homonym"
    return found


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_entities_lists_each_homonym_with_its_birth_date_and_id_prefix(cli, marias):
    out = cli("entities", BANK)
    assert out.exit_code == 0, out.output
    for born, entity in marias.items():
        assert f"Maria Schmidt (birth_date {born}, {entity[:8]})" in out.stdout
    assert "Berlin office" in out.stdout and "Berlin office (" not in out.stdout   # not a homonym: its name


def test_resolve_and_neighbours_name_the_homonym_they_mean(cli, marias):
    out = cli("resolve", BANK, "Maria Schmidt", "--attribute", "birth_date=1984-11-20")
    assert out.exit_code == 0, out.output
    assert f"Maria Schmidt (birth_date 1984-11-20, {marias['1984-11-20'][:8]})" in out.stdout
    around = cli("neighbors", BANK, "Berlin office")
    assert around.exit_code == 0, around.output
    assert f"Maria Schmidt (birth_date 1961-05-03, {marias['1961-05-03'][:8]})" in around.stdout
    assert "1984-11-20" not in around.stdout


def test_a_name_two_homonyms_bear_is_refused_where_one_entity_is_meant(conn, cli, marias):
    before = snapshot(conn, BANK)
    ids = sorted(marias.values())
    for args, argument, given in ((("neighbors", BANK, "Maria Schmidt"), "name", "Maria Schmidt"),
                                  (("facts", BANK, "maria schmidt"), "entity", "maria schmidt"),
                                  (("merge", BANK, "Maria Schmidt", "--into", "Berlin office"), "sources",
                                   "Maria Schmidt"),
                                  (("rename", BANK, "Maria Schmidt", "Maria Schmidt-Weber"), "entity",
                                   "Maria Schmidt")):
        out = cli(*args)
        assert out.exit_code != 0, args
        line = error_line(out)
        assert line.startswith(f"error: 22023: {argument}: bank {BANK!r} has 2 entities named {given!r} (homonyms)")
        assert all(i in line for i in ids), line
    as_json = cli("neighbors", BANK, "Maria Schmidt", "--json")
    assert json.loads(as_json.stdout)["sqlstate"] == "22023"
    assert snapshot(conn, BANK) == before
    with pytest.raises(AmbiguousName) as raised:
        Client(conn).entity_id(BANK, "MARIA SCHMIDT")
    assert sorted(map(str, raised.value.ids)) == ids


def test_homonyms_named_by_id_merge_and_undo_from_the_cli(conn, cli, marias):
    before = snapshot(conn, BANK)
    merged = cli("merge", BANK, marias["1984-11-20"], "--into", marias["1961-05-03"], "--json")
    assert merged.exit_code == 0, merged.output
    plan = json.loads(merged.stdout)
    assert plan["aliases_added"] == []
    assert cli("undo", BANK, str(plan["operation_id"])).exit_code == 0
    assert snapshot(conn, BANK) == before


def test_explain_names_each_candidate_and_the_one_chosen(cli, marias):
    out = cli("explain", BANK, "Maria Schmidt", "--attribute", "birth_date=1984-11-20")
    assert out.exit_code == 0, out.output
    labels = {born: f"Maria Schmidt (birth_date {born}, {entity[:8]})" for born, entity in marias.items()}
    assert all(label in out.stdout for label in labels.values()), out.stdout
    assert f"resolves to {labels['1984-11-20']!r}" in out.stdout


def test_reresolve_names_the_homonyms_a_mention_moves_between(conn, cli):
    # An undated "Maria Schmidt" next to order 4411 came first and went to the
    # one Maria Schmidt then known, who turned out to be the colleague born
    # 1961; once the customer born 1984 holds order 4411, decided again it is
    # hers. The move names both apart.
    bank = "namesakes-moved"
    first = insert_fact(conn, bank, [{"text": "Maria Schmidt", "type": "person"}, "order 4411"],
                        "2026-02-28T09:00:00Z")
    for day, born, place in ((1, "1961-05-03", "Berlin office"), (2, "1984-11-20", "order 4411"),
                             (3, "1961-05-03", "Berlin office")):
        insert_fact(conn, bank, [{"text": "Maria Schmidt", "type": "person", "attributes": {"birth_date": born}},
                                 place], f"2026-03-0{day}T09:00:00Z")
    ids = dict(conn.execute(f"SELECT a.value, e.id::text FROM {ER}.entities e JOIN {ER}.entity_attributes a"
                            " ON a.bank_id = e.bank_id AND a.entity_id = e.id WHERE e.bank_id = %s", (bank,)))
    out = cli("reresolve", bank)
    assert out.exit_code == 0, out.output
    plan = json.loads(cli("reresolve", bank, "--json").stdout)
    [move] = plan["moves"]
    assert move["unit_id"] == first and move["from"]["entity_id"] == ids["1961-05-03"]
    assert move["to"]["entity_id"] == ids["1984-11-20"]
    assert f"Maria Schmidt (birth_date 1961-05-03, {ids['1961-05-03'][:8]})" in out.stdout
    assert f"Maria Schmidt (birth_date 1984-11-20, {ids['1984-11-20'][:8]})" in out.stdout


def test_review_and_history_name_homonyms_apart(conn, cli, marias):
    # An undated Maria Schmidt with nothing around her: ambiguous, a close call
    # naming the namesakes; merged away from the CLI, history says which.
    insert_fact(conn, BANK, [{"text": "Maria Schmidt", "type": "person"}], "2026-03-04T09:00:00Z")
    out = CliRunner().invoke(app, ["review", BANK, "--dsn", dsn_of(conn)], env=dict(CLEAN_ENV, COLUMNS="1500"),
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "close_call" in out.stdout
    for born, entity in marias.items():
        assert f"Maria Schmidt (birth_date {born}, {entity[:8]})" in out.stdout
    old, young = marias["1961-05-03"], marias["1984-11-20"]
    merged = cli("merge", BANK, young, "--into", old)
    assert merged.exit_code == 0, merged.output
    history = cli("history", BANK)
    assert history.exit_code == 0, history.output
    assert (f"merge 'Maria Schmidt' (birth_date 1984-11-20, {young[:8]})"
            f" into 'Maria Schmidt' (birth_date 1961-05-03, {old[:8]})") in history.stdout
