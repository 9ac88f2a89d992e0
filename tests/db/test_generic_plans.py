"""entity_resolver.generic_plans: the resolver's statements switch to generic plans only when it is safe.

What the plans were is read as an operator would: auto_explain (contrib)
reports every nested statement's plan to the client. A custom plan has the
bank id written into its conditions (bank_id = 'team'::text), a generic one
a parameter (bank_id = $1).
"""

from __future__ import annotations

import json
import re

import psycopg
import pytest

from helpers import insert_facts, nested_plans

LITERAL_BANK = re.compile(r"bank_id = '[^']*'::text")
PARAMETER_BANK = re.compile(r"bank_id = \$\d+")


def explained(conn: psycopg.Connection):
    """Switch auto_explain on for this session; return a reader of the plans seen since the last read."""
    plans = nested_plans(conn)

    def read() -> tuple[int, int]:
        """(plans with the bank id as a literal, plans with it as a parameter)."""
        # A SQL function's statement is planned for the function, never for one call's values, whatever
        # plan_cache_mode says: the flush looks its entities up that way on purpose (_missing_entities).
        seen = [json.dumps(plan) for query, plan in plans() if "_missing_entities.entity_ids" not in query]
        return (sum(bool(LITERAL_BANK.search(p)) for p in seen), sum(bool(PARAMETER_BANK.search(p)) for p in seen))

    return read


def plan_mode(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT current_setting('plan_cache_mode')").fetchone()[0]


def test_auto_leaves_plans_to_postgresql_while_the_tables_have_no_statistics(conn, connect):
    plans = explained(conn)
    insert_facts(conn, "team", [["Acme", "Oslo"]])
    literal, parameter = plans()
    # A new session's first executions are custom plans: the bank is a literal.
    assert literal > 0 and parameter == 0
    assert plan_mode(conn) == "auto"
    # Analysed, but a handful of rows: still not statistics to build a plan on
    # (a new session, which looks at them afresh).
    conn.execute("ANALYZE entity_resolver.entities, entity_resolver.mentions")
    other = connect()
    plans = explained(other)
    insert_facts(other, "team", [["Acme", "Bergen"]])
    literal, parameter = plans()
    assert literal > 0 and parameter == 0


def test_on_switches_the_resolvers_statements_and_restores_the_sessions_value(conn):
    plans = explained(conn)
    conn.execute("SET plan_cache_mode = force_custom_plan")
    conn.execute("SET entity_resolver.generic_plans = on")
    insert_facts(conn, "team", [["Acme", "Oslo"]])
    literal, parameter = plans()
    # Every statement that names the bank ran generically, the resolver's and
    # the flush at commit's.
    assert literal == 0 and parameter > 0
    assert plan_mode(conn) == "force_custom_plan"
    conn.execute("SELECT * FROM entity_resolver.resolve_mention('team', 'Acme')")
    assert plans()[0] == 0
    assert plan_mode(conn) == "force_custom_plan"
    # Inside a transaction the value set with SET LOCAL is the one restored.
    with conn.transaction():
        conn.execute("SET LOCAL plan_cache_mode = auto")
        conn.execute("SELECT * FROM entity_resolver.lookup_mention('team', 'Acme')")
        assert plan_mode(conn) == "auto"
    assert plan_mode(conn) == "force_custom_plan"


def test_off_and_an_operators_choice_under_auto_leave_plans_alone(conn):
    plans = explained(conn)
    conn.execute("SET entity_resolver.generic_plans = off")
    conn.execute("SET plan_cache_mode = force_custom_plan")
    for _ in range(8):    # past PostgreSQL's 5 custom plans before it may choose generic
        conn.execute("SELECT * FROM entity_resolver.resolve_mention('team', 'Acme')")
    literal, parameter = plans()
    assert literal > 0 and parameter == 0
    # auto keeps a plan_cache_mode the session chose (here force_custom_plan).
    conn.execute("SET entity_resolver.generic_plans = auto")
    conn.execute("SELECT * FROM entity_resolver.resolve_mention('team', 'Acme')")
    literal, parameter = plans()
    assert literal > 0 and parameter == 0
    assert plan_mode(conn) == "force_custom_plan"


def test_auto_switches_once_the_tables_were_analysed_at_a_meaningful_size(conn, connect):
    # 1000 facts of one distinct name each: 1000 entities, 1000 mentions.
    conn.execute("INSERT INTO entity_resolver.facts (bank_id, mentions)"
                 " SELECT 'bulk', jsonb_build_array('n' || md5(g::text)) FROM generate_series(1, 1000) AS g")
    conn.execute("ANALYZE entity_resolver.entities, entity_resolver.mentions")
    other = connect()   # a new session: nothing cached from before the ANALYZE
    plans = explained(other)
    insert_facts(other, "team", [["Acme", "Oslo"]])
    literal, parameter = plans()
    assert literal == 0 and parameter > 0
    assert plan_mode(other) == "auto"


def test_an_error_after_the_switch_leaves_the_sessions_value(conn):
    conn.execute("SET entity_resolver.generic_plans = on")
    conn.execute("SELECT entity_resolver.configure_bank('team', '{\"max_mentions_per_call\": 2}'::jsonb)")
    with conn.transaction():
        with pytest.raises(psycopg.Error), conn.transaction():
            conn.execute("SELECT * FROM entity_resolver.resolve_mentions('team', '[\"A\", \"B\", \"C\"]'::jsonb)")
        assert plan_mode(conn) == "auto"
        conn.execute("SELECT * FROM entity_resolver.resolve_mentions('team', '[\"A\", \"B\"]'::jsonb)")
        assert plan_mode(conn) == "auto"


@pytest.mark.parametrize("value", ["sometimes", "2", "generic"])
def test_an_invalid_value_is_an_error_naming_the_setting(conn, value):
    conn.execute("SELECT set_config('entity_resolver.generic_plans', %s, false)", (value,))
    with pytest.raises(psycopg.errors.InvalidParameterValue) as caught:
        insert_facts(conn, "team", [["Acme"]])
    assert "entity_resolver.generic_plans: must be auto, on or off" in str(caught.value)
    assert "Traceback" not in str(caught.value)
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0
