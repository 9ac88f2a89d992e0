"""The distributed flavour of the script (install --distributed), built without a database.

What runs it on a Citus cluster is tests/citus (make test-citus); here, that the
build produces what the cluster relies on, and leaves the single-node script
alone.
"""

from __future__ import annotations

import re

import pytest

from entity_resolver import build


def test_statements_are_split_at_semicolons_outside_quotes_and_comments():
    text = """
    -- a comment; with a semicolon
    CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'a;b' $$;
    /* block; /* nested; */ still */ SELECT 'it''s; quoted', E'back\\'slash;', "odd;name" FROM t;
    DO $body$ BEGIN PERFORM 1; END $body$;
    SELECT $1, a$b;  -- a parameter and a name with $ are not dollar quotes
    -- only a comment;
    """
    statements = build.split_statements(text)
    uncommented = [re.sub(r"^(--[^\n]*\n\s*|/\*.*\*/\s*)", "", s, flags=re.S) for s in statements]
    assert [s.split()[0] for s in uncommented] == ["CREATE", "SELECT", "DO", "SELECT"]
    assert "'a;b'" in statements[0]
    assert statements[1].endswith('"odd;name" FROM t')
    assert statements[2] == "DO $body$ BEGIN PERFORM 1; END $body$"


def test_an_unterminated_dollar_quote_is_an_error():
    with pytest.raises(build.BuildError, match="unterminated dollar quote"):
        build.split_statements("SELECT $x$ never closed")


def test_the_single_node_script_has_no_distributed_part():
    script = build.script()
    assert "_delegated(" not in script and "FUNCTION entity_resolver_internal._install_distribute" not in script
    assert "IF NOT FALSE THEN" in script  # the commit trigger is created
    assert "-- sql/citus/" not in script


def test_every_public_function_of_a_bank_gets_an_implementation_a_delegated_function_and_a_wrapper():
    single = build.script()
    script = build.script(distributed=True)
    public = set(re.findall(r"CREATE OR REPLACE FUNCTION entity_resolver\.(\w+)\(\s*bank_id text", single))
    assert {"resolve_mentions", "retain", "link_unit", "flush_stats", "rebuild_stats", "expand_units"} <= public
    for name in public - set(build.COORDINATOR_FUNCTIONS):
        assert f"CREATE OR REPLACE FUNCTION entity_resolver_internal.{name}_impl(" in script, name
        delegated = re.search(
            rf"CREATE OR REPLACE FUNCTION entity_resolver_internal\.{name}_delegated\(bank_id text, args jsonb\)\n"
            r"RETURNS jsonb\nLANGUAGE plpgsql\n\w+\nSTRICT\n", script)
        assert delegated, name
        wrappers = re.findall(rf"CREATE OR REPLACE FUNCTION entity_resolver\.{name}\(", script)
        assert len(wrappers) == 1, name
    for name in build.COORDINATOR_FUNCTIONS:
        assert f"{name}_delegated" not in script
    # Inside an implementation, its arguments are qualified by its new name.
    assert "link_unit_impl.bank_id" in script and "PERFORM check_bank_id(link_unit.bank_id);" in script


def test_distributed_sql_functions_that_read_tables_become_plpgsql():
    script = build.script(distributed=True)
    for statement in build.split_statements(script):
        if "LANGUAGE sql" in statement and statement.startswith("CREATE OR REPLACE FUNCTION"):
            body = statement.split("AS $$", 1)[1]
            assert not re.search(r"\bFROM\b", body) or "_bank_role_name" in statement or \
                "_may_use_bank" in statement, statement[:200]
    assert "#variable_conflict use_column" in script


def test_a_jsonb_argument_that_is_null_is_left_out_of_the_packed_arguments():
    script = build.script(distributed=True)
    wrapper = script.split("CREATE OR REPLACE FUNCTION entity_resolver.resolve_mentions(", 1)[1].split("$$;", 1)[0]
    assert "CASE WHEN resolve_mentions.mentions IS NULL THEN '{}'::jsonb" in wrapper
    assert "resolve_mention.nearby::text" in script  # arrays travel as their text form
