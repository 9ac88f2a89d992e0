"""Per-bank isolation with row-level security (docs/security.md).

A role bound to bank A (grant_bank_access) can neither read nor write bank B,
through any table, view or function; inside its own banks it works as
usual."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg import sql
from shared import INTERNAL as IN, SCHEMA as ER

FACTS = {
    "A": [["Alex Morgan", "Acme", "renewal"],
          [{"text": "Alex Morgan", "attributes": {"email": "alex@acme.example"}}, "Sprint 14"]],
    "B": [[{"text": "Bea Lindqvist", "attributes": {"email": "bea@borealis.example"}}, "Borealis", "renewal"],
          ["Borealis", "Oslo"]],
}


@pytest.fixture
def banks(conn):
    """Banks A and B with facts, flushed statistics, labels and settings, plus
    statistics of B still queued (a flush that has not run yet)."""
    for bank, facts in FACTS.items():
        conn.execute(f"SELECT {ER}.configure_bank(%s, '{{\"threshold\": 0.6}}')", (bank,))
        conn.execute(f"SELECT {ER}.set_entity_labels(%s, %s)", (bank, json.dumps(
            {"attributes": [{"key": f"team{bank.lower()}", "type": "value", "values": [{"value": "core"}]}]})))
        conn.execute(f"INSERT INTO {ER}.facts (bank_id, content, mentions)"
                     " SELECT %s, 'fact', m FROM jsonb_array_elements(%s::jsonb) AS m",
                     (bank, json.dumps(facts)))
        # What operator corrections write, so every table holds rows of both banks.
        conn.execute(f"INSERT INTO {ER}.entity_aliases (bank_id, alias, entity_id, source)"
                     f" SELECT bank_id, canonical_name || ' (alias)', id, 'operator' FROM {ER}.entities"
                     " WHERE bank_id = %s LIMIT 1", (bank,))
        conn.execute(f"INSERT INTO {ER}.entity_forwards (bank_id, old_id, new_id, operation_id)"
                     f" SELECT bank_id, gen_random_uuid(), id, 1 FROM {ER}.entities WHERE bank_id = %s LIMIT 1",
                     (bank,))
        conn.execute(f"INSERT INTO {ER}.operations (bank_id, kind, entity_ids, plan, before_image)"
                     " VALUES (%s, 'add_alias', '{}', '{}', '{}')", (bank,))
        conn.execute(f"INSERT INTO {ER}.entity_judgements (bank_id, entity_a, entity_b)"
                     f" SELECT bank_id, x[1], x[2] FROM (SELECT bank_id, array_agg(id ORDER BY id) AS x FROM {ER}.entities"
                     "  WHERE bank_id = %s GROUP BY bank_id) AS e", (bank,))
        conn.execute(f"INSERT INTO {ER}.review_dismissals (bank_id, item, evidence)"
                     " VALUES (%s, 'likely_over_merge:x', 1)", (bank,))
        conn.execute(f"INSERT INTO {ER}.reresolve_queue (bank_id, unit_id) VALUES (%s, gen_random_uuid())", (bank,))
    conn.execute("SET entity_resolver.flush_at_commit = off")
    conn.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('B', '[\"Oslo\", \"Bergen\"]')")
    conn.execute("RESET entity_resolver.flush_at_commit")
    assert conn.execute(f"SELECT count(*) FROM {ER}.stats_queue WHERE bank_id = 'B'").fetchone()[0] > 0
    return conn


def bind(conn, bank: str, role: str) -> None:
    conn.execute(f"SELECT {ER}.grant_bank_access(%s, %s)", (bank, role))


def bank_tables(conn) -> list[str]:
    """Every table of the schema with a bank_id column (new ones included automatically)."""
    return [r[0] for r in conn.execute(
        """SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
            WHERE c.relnamespace = 'entity_resolver'::regnamespace AND c.relkind IN ('r', 'p', 'v')
              AND a.attname = 'bank_id' AND NOT a.attisdropped ORDER BY 1""")]


def snapshot(conn, bank: str) -> dict:
    """Everything stored for a bank, as the superuser sees it."""
    out = {}
    for table in bank_tables(conn):
        if table == "bank_roles":
            continue
        out[table] = sorted(map(str, conn.execute(
            sql.SQL("SELECT t::text FROM {}.{} AS t WHERE t.bank_id = %s").format(
                sql.Identifier(ER), sql.Identifier(table)), (bank,)).fetchall()))
    return out


def test_every_table_with_a_bank_id_has_row_level_security(conn):
    tables = [r[0] for r in conn.execute(
        """SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
            WHERE c.relnamespace = 'entity_resolver'::regnamespace AND c.relkind IN ('r', 'p')
              AND a.attname = 'bank_id' AND NOT c.relrowsecurity""")]
    assert tables == []


def test_a_bank_user_reads_only_its_bank_through_every_table_and_view(banks, roles, connect_as):
    alice = roles()
    bind(banks, "A", alice)
    a = connect_as(alice)
    for table in bank_tables(banks):
        seen = a.execute(sql.SQL("SELECT DISTINCT bank_id FROM {}.{}").format(
            sql.Identifier(ER), sql.Identifier(table))).fetchall()
        assert set(seen) <= {("A",)}, table
        if table not in ("bank_roles", "stats_queue"):
            assert seen == [("A",)], table       # and it does see its own rows
    assert a.execute(f"SELECT count(*) FROM {ER}.entities").fetchone()[0] == \
        banks.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'A'").fetchone()[0]


def test_a_bank_user_cannot_reach_another_bank_through_any_function(banks, roles, connect_as):
    alice = roles()
    bind(banks, "A", alice)
    a = connect_as(alice)
    before = snapshot(banks, "B")
    b_entity = banks.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = 'B' LIMIT 1").fetchone()[0]
    b_fact = banks.execute(f"SELECT id FROM {ER}.facts WHERE bank_id = 'B' LIMIT 1").fetchone()[0]
    refused = [
        (f"SELECT * FROM {ER}.resolve_mention('B', 'Borealis')", ()),
        (f"SELECT * FROM {ER}.resolve_mention('B', 'Borealis', resolve => false)", ()),
        (f"SELECT * FROM {ER}.resolve_mentions('B', '[\"Bea\", \"Oslo\"]')", ()),
        (f"SELECT {ER}.configure_bank('B', '{{\"threshold\": 0.9}}')", ()),
        (f"SELECT {ER}.set_entity_labels('B', '{{\"attributes\": []}}')", ()),
        (f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('B', '[\"Borealis\"]')", ()),
        # The internal functions are executable too (the public ones call them
        # as the caller): they meet the same policies.
        (f"SELECT * FROM {IN}.resolve_mentions_py('B', '[\"Bea\"]', now())", ()),
        (f"SELECT {IN}.configure_bank_py('B', '{{}}')", ()),
        (f"SELECT {IN}._link_units('B', ARRAY[gen_random_uuid()], ARRAY[%s::uuid], ARRAY[now()])", (b_entity,)),
    ]
    for statement, params in refused:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as refusal:
            a.execute(statement, params)
        if IN not in statement:
            # The public entry points report the refusal cleanly: no PL/Python
            # exception class, no traceback.
            message = refusal.value.diag.message_primary or ""
            assert "spiexceptions" not in message and "Traceback" not in str(refusal.value), message
    # Reads see nothing of B: not its candidates, labels, facts or graph.
    assert a.execute(f"SELECT * FROM {ER}.explain_mention('B', 'Borealis')").fetchall() == []
    assert banks.execute(f"SELECT count(*) FROM {ER}.explain_mention('B', 'Borealis')").fetchone()[0] > 0
    assert "teamb" not in json.dumps(a.execute(f"SELECT {ER}.entity_labels_json_schema('B')").fetchone()[0])
    assert a.execute(f"SELECT * FROM {ER}.expand_units('B', %s)", ([b_fact],)).fetchall() == []
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_id: .* is not an entity of bank 'B'"):
        a.execute(f"SELECT * FROM {ER}.entity_facts('B', %s)", (b_entity,))
    assert a.execute(f"SELECT * FROM {ER}.flush_stats('B')").fetchall() == [(0, 0)]
    assert a.execute(f"SELECT * FROM {IN}._flush_queue('B', false)").fetchall() == [(0, 0)]
    assert a.execute(f"SELECT * FROM {IN}.explain_mention_py('B', 'Borealis', '{{}}', now(), NULL, NULL)").fetchall() == []
    a.execute(f"SELECT * FROM {ER}.flush_stats()")          # all banks = all *its* banks
    # Linking to B's entities, from B or from A, finds no such entity.
    for bank in ("B", "A"):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_ids"):
            a.execute(f"SELECT {ER}.link_unit(%s, %s, %s)", (bank, uuid.uuid4(), [b_entity]))
    assert snapshot(banks, "B") == before                   # B's queue is still there, untouched


def test_a_bank_user_cannot_write_another_bank_through_any_table(banks, roles, connect_as):
    alice = roles()
    bind(banks, "A", alice)
    a = connect_as(alice)
    before = snapshot(banks, "B")
    b_entity, b_entity_2 = sorted(r[0] for r in banks.execute(
        f"SELECT id FROM {ER}.entities WHERE bank_id = 'B' LIMIT 2"))
    inserts = {
        "banks": ("INSERT INTO {}.banks (bank_id) VALUES ('B2')", ()),
        "entities": ("INSERT INTO {}.entities (bank_id, canonical_name) VALUES ('B', 'Intruder')", ()),
        "unit_entities": ("INSERT INTO {}.unit_entities (bank_id, unit_id, entity_id) VALUES ('B', %s, %s)",
                          (uuid.uuid4(), b_entity)),
        "entity_cooccurrences": ("INSERT INTO {}.entity_cooccurrences (bank_id, entity_id_1, entity_id_2,"
                                 " cooccurrence_count) VALUES ('B', %s, %s, 100)", (b_entity, b_entity_2)),
        "stats_queue": ("INSERT INTO {}.stats_queue (bank_id, entity_id, increment) VALUES ('B', %s, 100)",
                        (b_entity,)),
        "facts": ("INSERT INTO {}.facts (bank_id, mentions) VALUES ('B', '[]')", ()),
        "mentions": ("INSERT INTO {}.mentions (bank_id, unit_id, ordinal, mention, entity_id, decision)"
                     " VALUES ('B', %s, 1, 'x', %s, 'resolved')", (uuid.uuid4(), b_entity)),
        # Written by operator corrections only: no privilege at all.
        "entity_aliases": ("INSERT INTO {}.entity_aliases (bank_id, alias, entity_id, source)"
                           " VALUES ('B', 'x', %s, 'operator')", (b_entity,)),
        "entity_forwards": ("INSERT INTO {}.entity_forwards (bank_id, old_id, new_id, operation_id)"
                            " VALUES ('B', %s, %s, 1)", (uuid.uuid4(), b_entity)),
        "operations": ("INSERT INTO {}.operations (bank_id, kind, entity_ids, plan, before_image)"
                       " VALUES ('B', 'merge', '{{}}', '{{}}', '{{}}')", ()),
        "entity_judgements": ("INSERT INTO {}.entity_judgements (bank_id, entity_a, entity_b)"
                              " VALUES ('B', %s, %s)", (b_entity, b_entity_2)),
        "review_dismissals": ("INSERT INTO {}.review_dismissals (bank_id, item, evidence)"
                              " VALUES ('B', 'likely_over_merge:y', 1)", ()),
        "reresolve_queue": ("INSERT INTO {}.reresolve_queue (bank_id, unit_id) VALUES ('B', %s)", (uuid.uuid4(),)),
    }
    views = {"entity_overview", "entity_neighbors", "entity_attributes"}
    assert set(inserts) == set(bank_tables(banks)) - {"bank_roles"} - views
    for table, (statement, params) in inserts.items():
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            a.execute(statement.format(ER), params)
    changes = [
        f"UPDATE {ER}.entities SET mention_count = 0, metadata = '{{\"x\": 1}}' WHERE bank_id = 'B'",
        f"UPDATE {ER}.banks SET settings = '{{}}', entity_labels = '{{}}' WHERE bank_id = 'B'",
        f"UPDATE {ER}.entity_cooccurrences SET cooccurrence_count = 0 WHERE bank_id = 'B'",
        f"UPDATE {ER}.facts SET content = 'defaced' WHERE bank_id = 'B'",
        f"DELETE FROM {ER}.facts WHERE bank_id = 'B'",
        f"DELETE FROM {ER}.unit_entities WHERE bank_id = 'B'",
        f"DELETE FROM {ER}.stats_queue WHERE bank_id = 'B'",
        f"DELETE FROM {ER}.unit_entities",
        f"DELETE FROM {ER}.stats_queue",
        f"DELETE FROM {ER}.mentions WHERE bank_id = 'B'",
        f"DELETE FROM {ER}.entities WHERE bank_id = 'B'",
    ]
    for statement in changes:
        a.execute(statement)                                # no error: B's rows are not there to touch
    assert snapshot(banks, "B") == before
    # Nor can it move its own rows into B.
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        a.execute(f"UPDATE {ER}.facts SET bank_id = 'B' WHERE bank_id = 'A'")


def test_a_bank_user_works_as_usual_in_its_banks(banks, roles, connect_as):
    alice = roles()
    bind(banks, "A", alice)
    bind(banks, "A-new", alice)                              # bound before it exists
    a = connect_as(alice)
    row = a.execute(f"SELECT canonical_name, created FROM {ER}.resolve_mention("
                    "'A', 'alex morgan', ARRAY['Acme'])").fetchone()
    assert row == ("Alex Morgan", False)
    assert a.execute(f"SELECT decision FROM {ER}.explain_mention('A', 'Alex Morgan')").fetchone() == ("chosen",)
    a.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('A', '[\"Acme\", \"Oslo\"]'),"
              " ('A-new', '[\"Acme\", \"Oslo\"]')")
    a.execute(f"SELECT {ER}.configure_bank('A-new', '{{\"threshold\": 0.7}}')")
    a.execute(f"SELECT * FROM {ER}.flush_stats()")
    # Same names, other bank: separate entities (A's Oslo is not B's Oslo).
    oslo = banks.execute(f"SELECT bank_id, mention_count FROM {ER}.entities WHERE canonical_name = 'Oslo'"
                         " ORDER BY bank_id").fetchall()
    assert oslo == [("A", 1), ("A-new", 1), ("B", 1)]


def test_two_bank_users_writing_the_same_names_never_meet(banks, roles, connect_as):
    alice, bob = roles(), roles()
    bind(banks, "A", alice)
    bind(banks, "B", bob)
    a, b = connect_as(alice), connect_as(bob)
    for c, bank in ((a, "A"), (b, "B")):
        c.execute(f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES (%s, '[\"Shared Name\", \"Common\"]')",
                  (bank,))
    ids_a = {r[0] for r in a.execute(f"SELECT id FROM {ER}.entities")}
    ids_b = {r[0] for r in b.execute(f"SELECT id FROM {ER}.entities")}
    assert ids_a and ids_b and not (ids_a & ids_b)
    assert {r[0] for r in b.execute(f"SELECT bank_id FROM {ER}.entity_overview")} == {"B"}


def test_a_role_inheriting_a_bound_role_shares_its_banks(banks, roles, connect_as):
    team_a = roles()
    bind(banks, "A", team_a)
    carol = roles(team_a)
    c = connect_as(carol)
    assert {r[0] for r in c.execute(f"SELECT bank_id FROM {ER}.entities")} == {"A"}


def test_a_bank_user_sees_only_its_own_bindings(banks, roles, connect_as):
    alice, bob = roles(), roles()
    bind(banks, "A", alice)
    bind(banks, "B", bob)
    assert connect_as(alice).execute(f"SELECT bank_id, role_name FROM {ER}.bank_roles").fetchall() == \
        [("A", alice)]


def test_revoking_access_hides_the_bank_and_drops_the_membership(banks, roles, connect_as):
    alice = roles()
    bind(banks, "A", alice)
    a = connect_as(alice)
    assert a.execute(f"SELECT count(*) FROM {ER}.entities").fetchone()[0] > 0
    assert banks.execute(f"SELECT {ER}.revoke_bank_access('A', %s)", (alice,)).fetchone()[0] is True
    assert banks.execute(f"SELECT {ER}.revoke_bank_access('A', %s)", (alice,)).fetchone()[0] is False
    fresh = connect_as(alice)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        fresh.execute(f"SELECT count(*) FROM {ER}.entities")
    assert banks.execute("SELECT pg_has_role(%s, 'entity_resolver_bank_user', 'MEMBER')",
                         (alice,)).fetchone()[0] is False


def test_grant_bank_access_refuses_roles_row_level_security_cannot_restrict(banks, roles):
    app = roles("entity_resolver_user")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="role_name: .* every bank"):
        bind(banks, "A", app)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="superuser"):
        bind(banks, "A", "postgres")
    bypass = roles()
    banks.execute(sql.SQL("ALTER ROLE {} BYPASSRLS").format(sql.Identifier(bypass)))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="BYPASSRLS"):
        bind(banks, "A", bypass)
    with pytest.raises(psycopg.errors.UndefinedObject, match="role_name"):
        bind(banks, "A", f"nobody_{uuid.uuid4().hex[:8]}")
    # The one bank_id rule (check_bank_id): blank 22023, too long 22001, NULL 22004.
    for bad, error in [
        ("", psycopg.errors.InvalidParameterValue),
        ("   ", psycopg.errors.InvalidParameterValue),
        ("\t", psycopg.errors.InvalidParameterValue),
        ("x" * 101, psycopg.errors.StringDataRightTruncation),
        (None, psycopg.errors.NullValueNotAllowed),
    ]:
        with pytest.raises(error, match="^bank_id: "):
            bind(banks, bad, roles())
    assert banks.execute(f"SELECT count(*) FROM {ER}.bank_roles").fetchone()[0] == 0


def test_a_binding_left_by_a_dropped_role_breaks_nothing(banks, roles, connect_as):
    gone, alice = roles(), roles()
    bind(banks, "B", gone)
    bind(banks, "A", alice)
    banks.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(gone)))
    banks.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(gone)))
    assert {r[0] for r in connect_as(alice).execute(f"SELECT bank_id FROM {ER}.entities")} == {"A"}


def test_the_usage_role_pays_nothing_for_isolation(banks, roles, connect_as):
    """Its policy is constant true: it gets the superuser's plans, indexes included."""
    app = connect_as(roles("entity_resolver_user"))
    queries = [
        f"SELECT id FROM {ER}.entities WHERE bank_id = 'A' AND lower(canonical_name) = 'acme'",
        f"SELECT id FROM {ER}.entities WHERE bank_id = 'A' AND {IN}.folded(canonical_name) = 'acme'",
        f"SELECT id FROM {ER}.entities WHERE bank_id = 'A' AND entity_kind <> 'label'"
        f" AND {IN}.folded(canonical_name) OPERATOR({IN}.%) 'acme'",
    ]
    for c in (app, banks):
        c.execute("SET enable_seqscan = off")
    for query in queries:
        plans = ["\n".join(r[0] for r in c.execute("EXPLAIN " + query)) for c in (app, banks)]
        assert plans[0] == plans[1]
        assert "Index" in plans[0]
    banks.execute("RESET enable_seqscan")


def test_the_python_helpers_bind_and_unbind(banks, roles, connect_as):
    from entity_resolver import roles as er_roles

    alice, app = roles(), roles()
    assert er_roles.usage_role(banks) == "entity_resolver_user"
    assert er_roles.bank_user_role(banks) == "entity_resolver_bank_user"
    er_roles.grant_bank_access(banks, "A", alice)
    er_roles.grant_usage(banks, app)
    assert er_roles.bank_bindings(banks) == [("A", alice)]
    assert {r[0] for r in connect_as(alice).execute(f"SELECT bank_id FROM {ER}.banks")} == {"A"}
    assert {r[0] for r in connect_as(app).execute(f"SELECT bank_id FROM {ER}.banks")} == {"A", "B"}
    assert er_roles.revoke_bank_access(banks, "A", alice) is True
    er_roles.revoke_usage(banks, app)
    assert er_roles.bank_bindings(banks) == []
