"""Limits refused up front, a read-only look-up, and what psql shows (issue 10)."""

from __future__ import annotations

import json

import psycopg
import pytest
from shared import SCHEMA as ER, trgm_schema


def counts(conn):
    return conn.execute(
        f"SELECT (SELECT count(*) FROM {ER}.banks), (SELECT count(*) FROM {ER}.entities),"
        f" (SELECT count(*) FROM {ER}.mentions), (SELECT count(*) FROM {ER}.stats_queue),"
        f" (SELECT coalesce(sum(mention_count), 0) FROM {ER}.entities)").fetchone()


# -- limits ------------------------------------------------------------------------

def test_a_fact_with_too_many_mentions_is_refused_before_any_work(conn):
    mentions = json.dumps([f"name {i}" for i in range(1001)])
    with pytest.raises(psycopg.errors.ProgramLimitExceeded,
                       match=r"mentions \(inserted row 1\): 1001 mentions in one fact; "
                             r"the limit is max_mentions_per_fact = 1000"):
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (mentions,))
    assert counts(conn) == (0, 0, 0, 0, 0)


def test_a_call_with_too_many_mentions_names_the_limit(conn):
    conn.execute(f"SELECT {ER}.configure_bank('team', '{{\"max_mentions_per_call\": 5}}')")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded,
                       match="mentions: 6 mentions in one call; the limit is max_mentions_per_call = 5"):
        conn.execute(f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (json.dumps(list("abcdef")),))


def test_too_many_nearby_names_names_the_element(conn):
    conn.execute(f"SELECT {ER}.configure_bank('team', '{{\"max_nearby_per_mention\": 2}}')")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded,
                       match=r"mentions\[0\]\.nearby: 3 nearby names; the limit is max_nearby_per_mention = 2"):
        conn.execute(f"SELECT * FROM {ER}.resolve_mentions('team', %s)",
                     (json.dumps([{"text": "Alex", "nearby": ["a", "b", "c"]}]),))


def test_a_raised_limit_lets_the_call_through(conn):
    conn.execute(f"SELECT {ER}.configure_bank('team', '{{\"max_mentions_per_fact\": 3}}')")
    four = json.dumps(["Acme", "Oslo", "Wren", "Tokyo"])
    with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="max_mentions_per_fact = 3"):
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (four,))
    conn.execute(f"SELECT {ER}.configure_bank('team', '{{\"max_mentions_per_fact\": 4}}')")
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (four,))
    assert conn.execute(f"SELECT count(*) FROM {ER}.mentions").fetchone()[0] == 4


def _statements(conn):
    return conn.execute(f"SELECT {ER}_internal._last_call_statements()").fetchone()[0]


def _warm(conn):
    """A first call of the session (it reads the catalog once, a statement of its own)."""
    conn.execute(f"SELECT count(*) FROM {ER}.resolve_mentions('team', '[]')")


MANY = 20_000


@pytest.mark.parametrize("entry", ["facts", "resolve_mentions", "retain"])
def test_20000_mentions_are_refused_with_54000_and_nothing_is_written(conn, entry):
    mentions = json.dumps([f"name {i}" for i in range(MANY)])
    statements = {
        "facts": (f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (mentions,)),
        "resolve_mentions": (f"SELECT count(*) FROM {ER}.resolve_mentions('team', %s)", (mentions,)),
        "retain": (f"SELECT count(*) FROM {ER}.retain('team', gen_random_uuid(), %s)", (mentions,)),
    }
    _warm(conn)
    with pytest.raises(psycopg.errors.ProgramLimitExceeded) as refused:
        conn.execute(*statements[entry])
    message = refused.value.diag.message_primary
    assert message.endswith(f"{MANY} mentions in one call; the limit is max_mentions_per_call = 10000")
    assert "54000" not in message
    # The bank's settings were read, and nothing after: no mention checked, folded or probed.
    assert _statements(conn) == 1
    assert counts(conn) == (0, 0, 0, 0, 0)


@pytest.mark.parametrize("entry", ["facts", "resolve_mentions", "retain"])
def test_the_limits_are_checked_before_any_mention_is(conn, entry):
    # A blank text is the last of 1001 elements: a call that looked at its
    # mentions first would report that, not the limit.
    mentions = json.dumps([f"name {i}" for i in range(1000)] + ["   "])
    statements = {
        "facts": f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)",
        "resolve_mentions": f"SELECT count(*) FROM {ER}.resolve_mentions('team', %s)",
        "retain": f"SELECT count(*) FROM {ER}.retain('team', gen_random_uuid(), %s)",
    }
    _warm(conn)
    with pytest.raises(psycopg.errors.ProgramLimitExceeded, match="1001 mentions in one fact; the limit is "
                                                                  "max_mentions_per_fact = 1000"):
        conn.execute(statements[entry], (mentions,))
    assert _statements(conn) == 1
    assert counts(conn) == (0, 0, 0, 0, 0)
    # Within the limit, the same blank text is what is reported.
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"mentions\[999\]"):
        conn.execute(statements[entry], (json.dumps([f"name {i}" for i in range(999)] + ["   "]),))


def test_a_call_over_its_bank_limit_is_refused_across_the_facts_of_an_insert(conn):
    conn.execute(f"SELECT {ER}.configure_bank('team', '{{\"max_mentions_per_call\": 7}}')")
    facts = [json.dumps([f"name {i}-{j}" for j in range(4)]) for i in range(2)]
    _warm(conn)
    with pytest.raises(psycopg.errors.ProgramLimitExceeded,
                       match="mentions: 8 mentions in one call; the limit is max_mentions_per_call = 7"):
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) SELECT 'team', m FROM unnest(%s::jsonb[]) AS m",
                     (facts,))
    assert _statements(conn) == 1
    assert conn.execute(f"SELECT count(*) FROM {ER}.mentions").fetchone()[0] == 0


# -- a fact of many mentions: set-based in its pairs --------------------------------

def _plans(conn, mentions):
    """The plan of every statement one INSERT of a fact runs, the flush at commit included (auto_explain)."""
    plans = []
    conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting, value in (("log_min_duration", "0"), ("log_nested_statements", "on"), ("log_level", "notice")):
        conn.execute(f"SET auto_explain.{setting} = {value}")
    conn.execute("SET client_min_messages = notice")
    with conn.transaction():
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (json.dumps(mentions),))
    conn.execute("SET auto_explain.log_min_duration = -1")
    return [p for p in plans if "Query Text" in p]


def test_a_fact_of_many_mentions_is_written_and_flushed_set_based(conn):
    n = 120
    plans = _plans(conn, [f"Person {i:03d} Q{i}" for i in range(n)])
    assert plans, "auto_explain logged nothing"
    # No statement searches an array row by row: a filter `x = ANY(array)`
    # compares every row with every element (a fact of 1,000 mentions queues
    # 500,000 pair rows, then claims and deletes them at commit).
    writes = [p for p in plans if any(t in p for t in ("stats_queue", "unit_entities", "entity_cooccurrences"))]
    assert any("DELETE FROM stats_queue" in p for p in writes)      # the flush at commit is among them
    filters = [line.strip() for p in writes for line in p.splitlines()
               if line.strip().startswith("Filter:") and "ANY" in line]
    assert filters == []
    assert conn.execute(f"SELECT count(*), sum(cooccurrence_count) FROM {ER}.entity_cooccurrences"
                        ).fetchone() == (n * (n - 1) // 2, n * (n - 1) // 2)
    assert conn.execute(f"SELECT count(*) FROM {ER}.stats_queue").fetchone()[0] == 0


# -- lookup_mention ----------------------------------------------------------------

def test_lookup_mention_decides_as_resolve_mention_and_writes_nothing(conn):
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions, event_date) VALUES"
                 " ('team', '[\"Alex Morgan\", \"Acme\", \"renewal\"]', '2026-03-01'),"
                 " ('team', '[\"Alex Kim\", \"React\", \"Sprint 14\"]', '2026-03-01')")
    before = counts(conn)
    looked = conn.execute(f"SELECT canonical_name, score, decision FROM {ER}.lookup_mention("
                          "'team', 'Alex', '{Acme,renewal}', '2026-03-02')").fetchone()
    assert counts(conn) == before
    resolved = conn.execute(f"SELECT canonical_name, score, created FROM {ER}.resolve_mention("
                            "'team', 'Alex', '{Acme,renewal}', '2026-03-02')").fetchone()
    assert (looked[0], looked[1], looked[2]) == (resolved[0], resolved[1], "resolved")
    assert resolved[2] is False
    assert counts(conn)[2] == before[2] + 1      # resolve_mention is a write: one more mention


def test_lookup_mention_of_a_new_name_says_new_and_creates_no_bank(conn):
    assert conn.execute(f"SELECT * FROM {ER}.lookup_mention('nowhere', 'Zephyr Labs')").fetchall() == \
        [(None, None, None, "new")]
    assert counts(conn) == (0, 0, 0, 0, 0)


# -- psql hygiene ----------------------------------------------------------------

def test_df_of_the_schema_lists_only_the_public_functions(conn):
    names = {r[0] for r in conn.execute(
        "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'entity_resolver'::regnamespace")}
    assert names and not {n for n in names if n.startswith("_")}
    # pg_trgm is not in our schemas.
    trgm = trgm_schema(conn)
    assert trgm not in ("entity_resolver", "entity_resolver_internal")
    assert not names & {"similarity", "show_trgm", "word_similarity"}


def test_both_schemas_say_what_they_are(conn):
    for schema in ("entity_resolver", "entity_resolver_internal"):
        comment = conn.execute("SELECT obj_description(%s::regnamespace, 'pg_namespace')", (schema,)).fetchone()[0]
        assert comment and "entity_resolver" in comment
