"""A bank-bound role's resolver statements use the indexes the owner's use (issue 16, item 3).

Row-level security lets a condition be an index condition only when every
function in it is LEAKPROOF. lower() and pg_trgm's operators are not, so
before migration 0012 a bound role's look-ups read every row of its bank.
The resolver now compares folded() (lower() declared LEAKPROOF) and probes
with LEAKPROOF copies of pg_trgm's operators. Here: the plans of the
resolver's statements for a bound role against the owner's, the same answers,
and the LEAKPROOF functions equal to what they stand for. The speed is
measured by bench.banks.measure_roles (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import uuid

import probe
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from bench import workloads
from helpers import plan_nodes, statement_plan
from shared import INTERNAL as IN, SCHEMA as ER, trgm_schema

SIZE = 20000


@pytest.fixture
def team(conn):
    """Bank "team" of SIZE entities with its graph, some resolved mentions, analysed; a role bound to it."""
    conn.execute(f"SET search_path = {ER}, {IN}, pg_catalog")
    bank = workloads.build_bank(conn, SIZE, seed=3, bank_id="team")
    facts = [[bank.names[i], bank.names[i + 1]] for i in range(0, 60, 2)]
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, content, mentions)"
                 " SELECT 'team', 'fact', m FROM jsonb_array_elements(%s::jsonb) AS m", (json.dumps(facts),))
    # A provenance the size of the bank (what resolving would leave), so that
    # reading it whole is not the cheapest plan.
    conn.execute(f"INSERT INTO {ER}.mentions (bank_id, unit_id, ordinal, mention, entity_id, decision, score)"
                 f" SELECT bank_id, gen_random_uuid(), 1, canonical_name, id, 'resolved', 1 FROM {ER}.entities"
                 " WHERE bank_id = 'team'")
    conn.execute("ANALYZE")
    role = f"er_cost_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    conn.execute(f"SELECT {ER}.grant_bank_access('team', %s)", (role,))
    bound = psycopg.connect(host=conn.info.host, port=conn.info.port, user=role, dbname=conn.info.dbname,
                            autocommit=True)
    yield bank, bound
    bound.close()
    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _indexes(conn, query: str, types: list[str], args: list, mode: str) -> set[str]:
    """The indexes a statement's plan reads, for this session's role."""
    conn.execute("SET pg_trgm.similarity_threshold = 0.3")
    conn.execute("SET pg_trgm.strict_word_similarity_threshold = 1")
    conn.execute(f"SET plan_cache_mode = {mode}")
    plan = statement_plan(conn, query, types, args)
    # Ours only: the policy's own look-ups (bank_roles, pg_authid) are the bound role's alone.
    return {node["Index Name"] for node in plan_nodes(plan)
            if node.get("Index Name", "").startswith(("entities", "entity_aliases", "mentions"))}


# PL/Python's prepared statements start custom and may turn generic (or are
# made generic by entity_resolver.generic_plans): both plans.
@pytest.mark.parametrize("mode", ["force_custom_plan", "force_generic_plan"])
def test_a_bound_roles_look_ups_and_probe_use_the_owners_indexes(conn, team, mode):
    bank, bound = team
    keys = sorted({n.lower() for n in bank.names[:30]} | {"the team", "ticket 7"})
    ids = [r[0] for r in conn.execute("SELECT id::text FROM entity_resolver.entities WHERE bank_id = 'team'"
                                      " ORDER BY id LIMIT 5")]
    statements = {
        "probe": (probe.SQL_PROBE, ["text", "text[]", "int", "boolean[]"],
                  ["team", keys + keys[:5], 200, [False] * len(keys) + [True] * 5],
                  {"entities_name_trgm_idx", "entities_bank_trigram_key_idx"}),
        "exact_memory": (probe.SQL_EXACT_MEMORY, ["text", "text[]", "text[]", "text[]", "float8"],
                         ["team", keys, keys, keys, 0.8], {"entities_bank_folded_name_key", "mentions_memory_idx"}),
        "context": (probe.SQL_CONTEXT, ["text", "uuid[]", "text[]", "uuid[]", "uuid[]", "uuid[]"],
                    ["team", ids, keys, ids[:2], ids[2:4], []], {"entities_bank_folded_name_key"}),
        # explain_mention's candidates: its label rows through their own
        # partial index, not by reading the bank (migration 0013).
        "explain": (probe.SQL_EXPLAIN_CANDIDATES, ["text", "text", "int", "int"], ["team", keys[3], 200, 50],
                    {"entities_name_trgm_idx", "entities_label_idx"}),
    }
    for name, (query, types, args, expected) in statements.items():
        owner = _indexes(conn, query, types, args, mode)
        assert expected <= owner, (name, owner)
        assert _indexes(bound, query, types, args, mode) == owner, name


# small_bank_probe = on: the bank read whole (small_bank.py), under the
# bound role's row-level security as under the owner's.
@pytest.mark.parametrize("small_bank_probe", ["off", "on"])
def test_a_bound_role_resolves_and_explains_as_the_owner(conn, team, small_bank_probe):
    bank, bound = team
    for c in (conn, bound):
        c.execute("SELECT set_config('entity_resolver.small_bank_probe', %s, false)", (small_bank_probe,))
    mentions = [bank.names[3], bank.names[10].lower(), bank.names[70].split(" ")[0], "Somebody New",
                bank.names[120] + "x"]
    batch = json.dumps([{"text": m, "nearby": [bank.names[4]]} for m in mentions])

    def answers(c):
        c.execute(f"SET search_path = {ER}, pg_catalog")
        with c.transaction(force_rollback=True):
            rows = c.execute("SELECT to_jsonb(r) FROM resolve_mentions('team', %s::jsonb, %s) AS r ORDER BY r.ord",
                             (batch, workloads.NOW)).fetchall()
        resolved = [{k: (None if r[0]["created"] and k == "entity_id" else v) for k, v in r[0].items()}
                    for r in rows]
        explained = [c.execute("SELECT candidate_id, trigram_similarity, score, decision"
                               " FROM explain_mention('team', %s, '{}', %s)", (m, workloads.NOW)).fetchall()
                     for m in mentions]
        return resolved, explained

    owner = answers(conn)
    assert any(r["created"] for r in owner[0]) and any(not r["created"] for r in owner[0])
    assert sum(1 for rows in owner[1] if rows) >= 4
    assert answers(bound) == owner


TEXT = st.text(alphabet=st.sampled_from(list("abcdeéİıßSAN -'1") + ["Ж", "ж", "中"]), max_size=14)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(a=TEXT, b=TEXT, threshold=st.sampled_from(["0.3", "0.5", "1"]))
def test_the_leakproof_functions_are_what_they_stand_for(conn, a, b, threshold):
    trgm = trgm_schema(conn)
    conn.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, false),"
                 " set_config('pg_trgm.strict_word_similarity_threshold', %s, false)", (threshold, threshold))
    row = conn.execute(
        f"SELECT {IN}.folded(%(a)s) = lower(%(a)s),"
        f" {IN}.folded(%(a)s COLLATE \"C\") = lower(%(a)s COLLATE \"C\"),"
        f" %(a)s OPERATOR({IN}.%%) %(b)s = %(a)s OPERATOR({trgm}.%%) %(b)s,"
        f" %(a)s OPERATOR({IN}.%%>>) %(b)s = %(a)s OPERATOR({trgm}.%%>>) %(b)s,"
        # The identical probe's key (migration 0024): every pair of similarity 1 shares it,
        # and a name without trigrams has none (similar to nothing).
        f" {trgm}.similarity(%(a)s, %(b)s) < 1 OR {IN}.trigram_key(%(a)s) = {IN}.trigram_key(%(b)s),"
        f" ({IN}.trigram_key(%(a)s) IS NULL) = (cardinality({trgm}.show_trgm(%(a)s)) = 0)",
        {"a": a, "b": b}).fetchone()
    assert row == (True, True, True, True, True, True)


def _plans_seen(c, run) -> set:
    """What the statements ``run(c)`` makes read of entities and entity_aliases, nested ones included.

    auto_explain (loaded by the superuser before any SET ROLE) sends every
    plan to the client: each index of the two tables the plans read, with
    whether a name comparison is its index condition (rather than a filter
    on the rows it returns), and each sequential scan of them.
    """
    notices: list[str] = []
    c.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    with c.transaction(force_rollback=True):
        run(c)
    seen = set()
    for text in notices:
        if "plan:" not in text:
            continue
        for node in plan_nodes(json.loads(text.split("plan:", 1)[1])["Plan"]):
            index = node.get("Index Name", "")
            if index.startswith(("entities_", "entity_aliases_")):
                cond = node.get("Index Cond", "")
                seen.add((index, "folded(" in cond or "lower(" in cond))
            if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") in ("entities", "entity_aliases"):
                seen.add(("seq scan", node["Relation Name"]))
    return seen


def _explaining(conn, role=None) -> psycopg.Connection:
    c = psycopg.connect(host=conn.info.host, port=conn.info.port, user=conn.info.user, dbname=conn.info.dbname,
                        autocommit=True)
    c.execute("LOAD 'auto_explain'")
    for setting, value in (("auto_explain.log_min_duration", "0"), ("auto_explain.log_nested_statements", "on"),
                           ("auto_explain.log_format", "json"), ("client_min_messages", "log")):
        c.execute("SELECT set_config(%s, %s, false)", (setting, value))
    if role:
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    c.execute(f"SET search_path = {ER}, pg_catalog")
    return c


def test_a_bound_curators_look_ups_by_name_use_the_owners_indexes(conn, team):
    """Corrections, explain's alias look-ups and the client's look-ups by name (migration 0013)."""
    from entity_resolver.client import Client

    bank, bound = team
    role = bound.info.user
    conn.execute(f"SELECT {ER}.grant_curation('team', %s)", (role,))
    # Aliases enough that reading the bank's is not the cheapest plan.
    conn.execute(f"INSERT INTO {ER}.entity_aliases (bank_id, alias, entity_id, source)"
                 f" SELECT bank_id, 'aka ' || canonical_name, id, 'operator' FROM {ER}.entities"
                 " WHERE bank_id = 'team' AND entity_kind = 'regular' ORDER BY id LIMIT 5000")
    conn.execute("ANALYZE")
    target, source = [r[0] for r in conn.execute(
        f"SELECT id FROM {ER}.entities WHERE bank_id = 'team' AND entity_kind = 'regular' ORDER BY id DESC LIMIT 2")]
    aliases = [r[0] for r in conn.execute(f"SELECT alias FROM {ER}.entity_aliases WHERE bank_id = 'team'"
                                          " ORDER BY alias LIMIT 2")]

    def run(c):
        client = Client(c)
        c.execute("SELECT add_alias('team', %s, 'Another Name')", (target,))
        c.execute("SELECT rename_entity('team', %s, 'Renamed Entity')", (target,))
        c.execute("SELECT remove_alias('team', 'another name')")
        c.execute("SELECT count(*) FROM explain_mention('team', %s)", (aliases[0],))
        assert client.find_entity("team", "RENAMED ENTITY").entity_id == target
        client.neighbors("team", "renamed entity")
        client.add_alias("team", aliases[1].upper(), "One More Alias")
        # The undos look the names they give back up (_check_free_names).
        merged = c.execute("SELECT merge_entities('team', ARRAY[%s]::uuid[], %s) ->> 'operation_id'",
                           (source, target)).fetchone()[0]
        c.execute("SELECT undo_operation('team', %s)", (int(merged),))
        renamed = c.execute("SELECT rename_entity('team', %s, 'Renamed Again') ->> 'operation_id'",
                            (target,)).fetchone()[0]
        c.execute("SELECT undo_operation('team', %s)", (int(renamed),))

    with _explaining(conn) as owner_c, _explaining(conn, role) as bound_c:
        owner = _plans_seen(owner_c, run)
        assert {("entities_bank_folded_name_key", True), ("entity_aliases_bank_folded_alias_key", True)} <= owner
        assert _plans_seen(bound_c, run) == owner
