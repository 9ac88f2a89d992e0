"""The build's one header parser and the checks it makes: every entry point expanded, every
public function of a bank delegated on Citus. No database: the build is plain text in, text out.
"""

from __future__ import annotations

import re

import pytest

from entity_resolver import build
from entity_resolver.build.citus import check_delegated, check_handwritten_wrappers, delegate_bank_functions, \
    sql_functions_to_plpgsql
from entity_resolver.build.entry_points import check_entry_point_targets, check_expanded, entry_points, \
    expand_entry_points
from entity_resolver.build.headers import Arg, function_headers
from entity_resolver.build.sources import citus_sources, module_sources, sql_sources

CANONICAL = """
CREATE OR REPLACE FUNCTION {{ schema }}.lookup(
    bank_id text,
    name text DEFAULT lower('A, b'),
    ids uuid[] DEFAULT ARRAY[]::uuid[]
)
RETURNS TABLE (
    entity_id uuid,
    score float8
)
LANGUAGE plpython3u
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$ resolve.lookup_mention_sql $$;
"""

# The same function as someone might reflow it: what the old regexes skipped in silence.
REFLOWED = """
-- a comment before; with a semicolon
CREATE OR REPLACE FUNCTION {{ schema }}.lookup(bank_id text, -- the bank; (a comment, with a comma)
        name text DEFAULT lower('A, b'), /* a ) in a comment */ ids uuid[]
        DEFAULT ARRAY[]::uuid[])
  RETURNS TABLE (entity_id uuid, score float8) STABLE LANGUAGE plpython3u
  SECURITY INVOKER SET search_path = {{ search_path }}
  AS $body$resolve.lookup_mention_sql$body$;
"""


def only(text, source="sql/t.sql"):
    headers = function_headers(text, source)
    assert len(headers) == 1
    return headers[0]


def test_a_reflowed_header_reads_as_the_canonical_one():
    canonical, reflowed = only(CANONICAL), only(REFLOWED)
    assert reflowed.args == canonical.args == (
        Arg("bank_id", "text", None), Arg("name", "text", "lower('A, b')"),
        Arg("ids", "uuid[]", "ARRAY[]::uuid[]"))
    assert (reflowed.qual, reflowed.name, reflowed.language) == ("{{ schema }}", "lookup", "plpython3u")
    assert set(reflowed.options) == set(canonical.options) == {
        "STABLE", "SECURITY INVOKER", "SET search_path = {{ search_path }}"}
    assert re.sub(r"\s+", "", reflowed.returns) == re.sub(r"\s+", "", canonical.returns)
    assert reflowed.marker(REFLOWED) == canonical.marker(CANONICAL) == ("resolve", "lookup_mention_sql")


def test_a_reflowed_entry_point_is_expanded():
    expanded = expand_entry_points(REFLOWED, "v1", "sql/t.sql")
    headers = {h.qualified_name: h for h in function_headers(expanded)}
    assert set(headers) == {"{{ internal }}.lookup_py", "{{ schema }}.lookup"}
    assert headers["{{ schema }}.lookup"].language == "plpgsql"
    assert 'M["resolve"].lookup_mention_sql, bank_id, name, ids)' in headers["{{ internal }}.lookup_py"].body(expanded)
    assert "-- a comment before; with a semicolon" in expanded  # the text around is kept


def test_a_reflowed_public_function_of_a_bank_is_delegated():
    text = ("CREATE OR REPLACE FUNCTION {{ schema }}.count_names(bank_id text, n integer DEFAULT 1) "
            "RETURNS integer LANGUAGE sql STABLE AS $$ SELECT n FROM t WHERE t.bank_id = count_names.bank_id $$;\n")
    delegated = delegate_bank_functions(sql_functions_to_plpgsql(text))
    names = {h.qualified_name for h in function_headers(delegated)}
    assert names == {"{{ internal }}.count_names_impl", "{{ internal }}.count_names_delegated",
                     "{{ schema }}.count_names"}
    assert "count_names_impl.bank_id" in delegated


@pytest.mark.parametrize("header, why", [
    ("CREATE OR REPLACE FUNCTION {{ schema }}.broken(bank_id text)\nRETURNS integer\nLANGUAGE sql",
     "0 AS clauses"),
    ("CREATE OR REPLACE FUNCTION {{ schema }}.broken(bank_id)\nRETURNS integer\nLANGUAGE sql\nAS $$ SELECT 1 $$",
     "cannot read argument 'bank_id'"),
    ("CREATE OR REPLACE FUNCTION {{ schema }}.broken(bank_id text)\nRETURNS integer\nLANGUAGE sql\n"
     "AS $$ SELECT 1 $$ $$ SELECT 2 $$", "after the body"),
])
def test_a_header_the_parser_cannot_read_fails_the_build_naming_file_and_function(header, why):
    with pytest.raises(build.BuildError, match=rf"sql/900_broken\.sql.*broken.*{re.escape(why)}"):
        function_headers("SELECT 1;\n" + header + ";\n", "sql/900_broken.sql")


def test_every_function_of_the_sources_is_read():
    for name, text in sql_sources() + citus_sources():
        declared = re.findall(r"^CREATE OR REPLACE FUNCTION ([^(]+)\(", text, re.M)
        assert [h.qualified_name for h in function_headers(text, name)] == declared, name


def test_an_entry_point_left_unexpanded_fails_the_build():
    # As an expansion that missed it would leave it: a PL/Python function whose body is a marker.
    with pytest.raises(build.BuildError, match=r"sql/t\.sql: entry point \{\{ schema \}\}\.lookup "
                                               r"\(resolve\.lookup_mention_sql\) was not expanded"):
        check_expanded(CANONICAL, "sql/t.sql")
    elsewhere = CANONICAL.replace("{{ schema }}.lookup(", "public.lookup(")
    with pytest.raises(build.BuildError, match="public.lookup .* was not expanded"):
        expand_entry_points(elsewhere, "v1", "sql/t.sql")


def test_every_entry_point_of_the_sources_is_expanded_and_names_a_function_of_plpython():
    sources = sql_sources() + citus_sources()
    assert sum(len(entry_points(text)) for _, text in sources) >= 10
    for name, text in sources:
        check_expanded(expand_entry_points(text, "v1", name), name)
    check_entry_point_targets(sources, dict(module_sources()))


def test_an_entry_point_naming_a_missing_python_function_fails_the_build():
    with pytest.raises(build.BuildError, match=r"sql/t\.sql: entry point .*lookup names "
                                               r"resolve\.lookup_mention_sql, which plpython/resolve\.py"):
        check_entry_point_targets([("t.sql", CANONICAL)], {"resolve": "def other():\n    pass\n"})


def test_a_public_function_of_a_bank_left_on_the_coordinator_fails_the_distributed_build():
    text = dict(sql_sources())["030_resolve.sql"]
    single_node = expand_entry_points(text, "v1", "sql/030_resolve.sql")
    with pytest.raises(build.BuildError, match=r"sql/030_resolve\.sql: \{\{ schema \}\}\.resolve_mentions is a "
                                               r"public function of a bank but is not delegated"):
        check_delegated(single_node, "sql/030_resolve.sql")
    # A delegated wrapper whose _delegated function went missing.
    delegated = delegate_bank_functions(sql_functions_to_plpgsql(single_node))
    without = delegated.replace("FUNCTION {{ internal }}.resolve_mentions_delegated(", "FUNCTION x.gone(")
    with pytest.raises(build.BuildError, match=r"resolve_mentions is a .* \(no resolve_mentions_delegated\)"):
        check_delegated(without, "sql/030_resolve.sql")


def test_every_public_function_of_a_bank_in_the_sources_is_delegated():
    delegated = 0
    for name, text in sql_sources():
        out = delegate_bank_functions(sql_functions_to_plpgsql(expand_entry_points(text, "v1", name), name), name)
        check_delegated(out, name)
        delegated += out.count("_delegated(bank_id text, args jsonb)")
    assert delegated >= 10
    check_handwritten_wrappers(citus_sources())


def test_a_wrapper_promised_to_sql_citus_but_missing_fails_the_distributed_build():
    with pytest.raises(build.BuildError, match=r"sql/citus/ has no \{\{ schema \}\}\.flush_stats"):
        check_handwritten_wrappers([])


def test_a_bank_that_is_not_text_fails_the_distributed_build():
    text = ("CREATE OR REPLACE FUNCTION {{ schema }}.f(bank_id varchar)\nRETURNS integer\nLANGUAGE sql\n"
            "AS $$ SELECT 1 $$;\n")
    with pytest.raises(build.BuildError, match=r"sql/t\.sql: \{\{ schema \}\}\.f: bank_id is varchar"):
        delegate_bank_functions(text, "sql/t.sql")


def test_the_builds_templates_keep_their_comments_and_leave_other_tokens_for_the_script():
    from entity_resolver.build.rendering import build_sql, fill

    template = build_sql("entry_point.sql")
    assert "{#" not in template and "RAISE refuses" not in template
    filled = fill(template, {"name": "f", "qual": "{{ schema }}"})
    assert "FUNCTION {{ internal }}.f_py(" in filled and "FUNCTION {{ schema }}.f(" in filled
    assert "{{ returns }}" in filled  # not given: left as it was
