"""entity_facts: which facts mention an entity (provenance), newest first.

SQL, the client's ``entity_facts`` and ``entity-resolver facts``.
"""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver.cli import app
from entity_resolver.client import Client
from shared import SCHEMA as ER, dsn_of

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}


@pytest.fixture
def story(conn):
    """The two Alexes: three facts of Alex Morgan (one naming him twice), one of Alex Kim."""
    er = Client(conn)
    facts = [
        ("2026-03-02T09:00:00Z", ["Alex Kim", "React", "Sprint 14"], "Alex Kim moved React into Sprint 14."),
        ("2026-03-02T11:00:00Z", ["Alex Morgan", "Acme", "renewal"], "Alex Morgan from Acme asked about the renewal."),
        ("2026-03-04T10:00:00Z", ["Acme", "Alex Morgan", "Morgan"], "Acme's Alex Morgan (Morgan) called."),
        ("2026-03-03T10:00:00Z", ["Alex Morgan", "Acme", "renewal"], "Alex Morgan signed the renewal."),
    ]
    for n, (when, mentions, content) in enumerate(facts):
        er.retain("team", mentions, event_date=when, fact_id=f"f{n + 1}", content=content)
    return er


def entity_facts(conn, bank, entity_id, max_results=50):
    return conn.execute(f"SELECT fact_id, content, event_date, mention_text FROM {ER}.entity_facts(%s, %s, %s)",
                        (bank, entity_id, max_results)).fetchall()


def test_facts_of_an_entity_newest_first_as_the_tables_have_them(conn, story):
    morgan = story.entity_id("team", "Alex Morgan")
    rows = entity_facts(conn, "team", morgan)
    # Against the tables: every unit with a mention of the entity, once, with
    # its content, date and its first mention's text.
    expected = conn.execute(
        f"SELECT DISTINCT ON (m.unit_id) m.unit_id, f.content, m.event_date, m.mention"
        f"  FROM {ER}.mentions m LEFT JOIN {ER}.facts f ON f.bank_id = m.bank_id AND f.id = m.unit_id"
        f" WHERE m.bank_id = 'team' AND m.entity_id = %s ORDER BY m.unit_id, m.ordinal", (morgan,)).fetchall()
    assert sorted(rows) == sorted(expected)
    assert len(rows) == 3
    assert [r[1] for r in rows] == ["Acme's Alex Morgan (Morgan) called.", "Alex Morgan signed the renewal.",
                                    "Alex Morgan from Acme asked about the renewal."]
    assert [r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True)
    assert {r[3] for r in rows} == {"Alex Morgan"}
    # max_results bounds it, newest kept.
    assert entity_facts(conn, "team", morgan, 1) == rows[:1]
    kim = story.entity_id("team", "Alex Kim")
    assert [r[1] for r in entity_facts(conn, "team", kim)] == ["Alex Kim moved React into Sprint 14."]


def test_a_unit_outside_the_facts_table_has_no_content(conn, story):
    unit = uuid.uuid4()
    conn.execute(f"SELECT * FROM {ER}.retain('team', %s, '[\"Alex Kim\", \"React\"]', '2026-04-01')", (unit,))
    kim = story.entity_id("team", "Alex Kim")
    rows = entity_facts(conn, "team", kim)
    assert rows[0][0] == unit and rows[0][1] is None and rows[0][3] == "Alex Kim"
    assert len(rows) == 2


def test_an_id_merged_away_stands_for_the_entity_it_became(conn, story):
    kim = story.entity_id("team", "Alex Kim")
    morgan = story.entity_id("team", "Alex Morgan")
    story.merge("team", [kim], morgan)
    merged = entity_facts(conn, "team", morgan)
    assert len(merged) == 4
    assert entity_facts(conn, "team", kim) == merged
    assert "Alex Kim" in {r[3] for r in merged}


@pytest.mark.parametrize(("args", "sqlstate", "argument"), [
    ((None, "random", 5), "22004", "bank_id"),
    (("  ", "random", 5), "22023", "bank_id"),
    (("team", None, 5), "22004", "entity_id"),
    (("team", "random", 5), "22023", "entity_id"),
    (("team", "Alex Morgan", 0), "22023", "max_results"),
    (("team", "Alex Morgan", None), "22023", "max_results"),
    (("team", "Alex Morgan", 100001), "22023", "max_results"),
])
def test_bad_arguments_are_refused_naming_the_argument(conn, story, args, sqlstate, argument):
    bank, entity, limit = args
    if entity == "random":
        entity = uuid.uuid4()
    elif entity is not None:
        entity = story.entity_id("team", entity)
    with pytest.raises(psycopg.Error) as err:
        entity_facts(conn, bank, entity, limit)
    assert err.value.sqlstate == sqlstate
    assert err.value.diag.message_primary.startswith(argument + ":"), err.value.diag.message_primary


def test_another_banks_entity_is_not_found(conn, story):
    Client(conn).retain("other", ["Bea Lindqvist"], content="Bea.")
    bea = story.entity_id("other", "Bea Lindqvist")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_id"):
        entity_facts(conn, "team", bea)


def test_the_client_takes_a_name_an_alias_or_an_id(conn, story):
    morgan = story.entity_id("team", "Alex Morgan")
    story.add_alias("team", "Alex Morgan", "AM")
    by_id = story.entity_facts("team", morgan)
    assert story.entity_facts("team", "alex morgan") == by_id
    assert story.entity_facts("team", "AM") == by_id
    assert [f.content for f in story.entity_facts("team", "Alex Morgan", max_results=2)] == \
        [f.content for f in by_id[:2]]
    assert by_id[0].mention_text == "Alex Morgan" and by_id[0].fact_id is not None
    with pytest.raises(ValueError, match="entity: bank 'team' has no entity named 'Nobody'"):
        story.entity_facts("team", "Nobody")


def test_the_facts_command(conn, story):
    runner = CliRunner()
    dsn = dsn_of(conn)
    result = runner.invoke(app, ["facts", "team", "Alex Morgan", "--limit", "2", "--dsn", dsn], env=CLEAN_ENV)
    assert result.exit_code == 0, result.output
    assert "Acme's Alex Morgan (Morgan) called." in result.stdout
    assert "Alex Morgan signed the renewal." in result.stdout
    assert "asked about the renewal" not in result.stdout
    result = runner.invoke(app, ["facts", "team", "Alex Morgan", "--json", "--dsn", dsn], env=CLEAN_ENV)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [d["content"] for d in data][0] == "Acme's Alex Morgan (Morgan) called."
    assert set(data[0]) == {"fact_id", "content", "event_date", "mention_text"}
    result = runner.invoke(app, ["facts", "team", "Alex Morgn", "--dsn", dsn], env=CLEAN_ENV)
    assert result.exit_code == 1
    assert "has no entity named 'Alex Morgn'" in result.stderr
    result = runner.invoke(app, ["facts", "nobank", "Alex", "--dsn", dsn], env=CLEAN_ENV)
    assert result.exit_code == 1
    assert "bank 'nobank' does not exist" in result.stderr
