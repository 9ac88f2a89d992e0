"""Limits refused up front, a read-only look-up, and what psql shows (issue 10)."""

from __future__ import annotations

import json

import psycopg
import pytest

ER = "entity_resolver"


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
    trgm = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
                        ).fetchone()[0]
    assert trgm not in ("entity_resolver", "entity_resolver_internal")
    assert not names & {"similarity", "show_trgm", "word_similarity"}


def test_both_schemas_say_what_they_are(conn):
    for schema in ("entity_resolver", "entity_resolver_internal"):
        comment = conn.execute("SELECT obj_description(%s::regnamespace, 'pg_namespace')", (schema,)).fetchone()[0]
        assert comment and "entity_resolver" in comment
