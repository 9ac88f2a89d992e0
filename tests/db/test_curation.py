"""Who may correct identity (docs/corrections.md, docs/security.md).

Corrections are the curator's: a role granted curation of a bank
(grant_curation, administrators only) on top of using it. The usage role may
read the ledger but not correct; a curator of bank A cannot correct bank B.
Roles are cluster-wide: each test makes its own (uuid names) and drops them."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from corrections_helpers import ER, entity_id, insert_fact, operations_count, snapshot


@pytest.fixture
def banks(conn):
    """Banks A and B, each with two people who are one (Sam Lee and S. Lee)."""
    for bank in ("A", "B"):
        insert_fact(conn, bank, ["Sam Lee", "Acme"])
        insert_fact(conn, bank, ["S. Lee", "Oslo"])
    return conn


def merge(c, bank):
    source, target = entity_id(c, bank, "S. Lee"), entity_id(c, bank, "Sam Lee")
    return c.execute(f"SELECT {ER}.merge_entities(%s, %s, %s)", (bank, [source], target)).fetchone()[0]


def grant(conn, bank, role):
    conn.execute(f"SELECT {ER}.grant_curation(%s, %s)", (bank, role))


def test_the_usage_role_may_read_the_ledger_but_not_correct(banks, roles, connect_as):
    app = connect_as(roles("entity_resolver_user"))
    before = snapshot(banks, "A")
    statements = [
        (f"SELECT {ER}.merge_entities('A', %s, %s)", [[entity_id(banks, "A", "S. Lee")], entity_id(banks, "A", "Sam Lee")]),
        (f"SELECT {ER}.merge_entities('A', %s, %s, dry_run => true)",
         [[entity_id(banks, "A", "S. Lee")], entity_id(banks, "A", "Sam Lee")]),
        (f"SELECT {ER}.split_entity('A', %s, %s, 'Other')", [entity_id(banks, "A", "Acme"), [uuid.uuid4()]]),
        (f"SELECT {ER}.rename_entity('A', %s, 'Acme Inc')", [entity_id(banks, "A", "Acme")]),
        (f"SELECT {ER}.add_alias('A', %s, 'ACME Corp')", [entity_id(banks, "A", "Acme")]),
        (f"SELECT {ER}.remove_alias('A', 'anything')", []),
        (f"SELECT {ER}.forget_entity('A', %s)", [entity_id(banks, "A", "Acme")]),
        (f"SELECT {ER}.undo_operation('A', 1)", []),
    ]
    for statement, params in statements:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
            app.execute(statement, params)
        assert refused.value.diag.message_primary.startswith("bank_id: role ")
        assert "may not correct bank 'A'" in refused.value.diag.message_primary
    assert snapshot(banks, "A") == before
    assert operations_count(banks, "A") == 0
    merge(banks, "A")
    assert [r[0] for r in app.execute(f"SELECT kind FROM {ER}.operation_history('A')")] == ["merge"]


def test_a_curator_of_bank_a_corrects_a_and_not_b(banks, roles, connect_as):
    alice = roles("entity_resolver_user")
    grant(banks, "A", alice)
    a = connect_as(alice)
    plan = merge(a, "A")
    assert a.execute(f"SELECT performed_by FROM {ER}.operations WHERE id = %s",
                     (plan["operation_id"],)).fetchone() == (alice,)
    before = snapshot(banks, "B")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="^bank_id: role .* may not correct bank 'B'"):
        merge(a, "B")
    assert snapshot(banks, "B") == before
    # Undo is a correction too, of the same bank.
    a.execute(f"SELECT {ER}.undo_operation('A', %s)", (plan["operation_id"],))
    assert entity_id(banks, "A", "S. Lee")


def test_a_bank_user_curating_one_of_its_banks(banks, roles, connect_as):
    bob = roles()
    for bank in ("A", "B"):
        banks.execute(f"SELECT {ER}.grant_bank_access(%s, %s)", (bank, bob))
    grant(banks, "A", bob)
    b = connect_as(bob)
    merge(b, "A")
    b.execute(f"SELECT {ER}.add_alias('A', %s, 'Sammy')", (entity_id(banks, "A", "Sam Lee"),))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        merge(b, "B")
    # It reads its own bindings, and only those.
    assert b.execute(f"SELECT bank_id, may_curate FROM {ER}.bank_roles ORDER BY 1").fetchall() == \
        [("A", True), ("B", False)]


def test_grant_curation_needs_a_role_that_uses_the_bank(banks, roles):
    stranger = roles()
    with pytest.raises(psycopg.errors.InvalidParameterValue,
                       match="^role_name: .* is neither a member of .* nor bound to bank 'A' itself"):
        grant(banks, "A", stranger)
    with pytest.raises(psycopg.errors.UndefinedObject, match="^role_name: role .* does not exist"):
        grant(banks, "A", "no_such_role_" + uuid.uuid4().hex[:6])
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="^bank_id: "):
        grant(banks, None, stranger)


def test_revoking_curation_ends_it_and_the_last_one_drops_the_role(banks, roles, connect_as):
    alice = roles("entity_resolver_user")
    grant(banks, "A", alice)
    grant(banks, "B", alice)
    assert banks.execute(f"SELECT {ER}.revoke_curation('A', %s)", (alice,)).fetchone()[0] is True
    assert banks.execute(f"SELECT {ER}.revoke_curation('A', %s)", (alice,)).fetchone()[0] is False
    a = connect_as(alice)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        merge(a, "A")
    merge(a, "B")
    banks.execute(f"SELECT {ER}.revoke_curation('B', %s)", (alice,))
    assert banks.execute("SELECT pg_has_role(%s, 'entity_resolver_curator', 'MEMBER')", (alice,)).fetchone()[0] \
        is False
    # A member of the usage role was bound for curation only: nothing is left.
    assert banks.execute(f"SELECT count(*) FROM {ER}.bank_roles WHERE role_name = %s", (alice,)).fetchone()[0] == 0


def test_revoking_bank_access_ends_curation_of_the_bank(banks, roles, connect_as):
    bob = roles()
    banks.execute(f"SELECT {ER}.grant_bank_access('A', %s)", (bob,))
    grant(banks, "A", bob)
    banks.execute(f"SELECT {ER}.revoke_bank_access('A', %s)", (bob,))
    assert banks.execute("SELECT pg_has_role(%s, 'entity_resolver_curator', 'MEMBER')", (bob,)).fetchone()[0] \
        is False


def test_a_curator_writes_names_only_through_the_functions_in_banks_row_security_hides(banks, roles, connect_as):
    # A bank user curating A holds the curator's table privileges; row-level
    # security still confines every write to the banks it is bound to.
    bob = roles()
    banks.execute(f"SELECT {ER}.grant_bank_access('A', %s)", (bob,))
    grant(banks, "A", bob)
    b = connect_as(bob)
    before = snapshot(banks, "B")
    b.execute(f"UPDATE {ER}.entities SET canonical_name = 'x' || canonical_name WHERE bank_id = 'B'")
    b.execute(f"DELETE FROM {ER}.entity_cooccurrences WHERE bank_id = 'B'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        b.execute(f"INSERT INTO {ER}.entity_aliases (bank_id, alias, entity_id, source) VALUES ('B', 'x', %s,"
                  " 'operator')", (entity_id(banks, "B", "Acme"),))
    assert snapshot(banks, "B") == before


def test_superusers_and_the_owner_correct_without_a_grant(banks):
    merge(banks, "A")
    assert operations_count(banks, "A") == 1


def test_the_administrators_functions_are_refused_to_curators(banks, roles, connect_as):
    alice = roles("entity_resolver_user")
    grant(banks, "A", alice)
    a = connect_as(alice)
    for statement in (f"SELECT {ER}.grant_curation('B', current_user)",
                      f"SELECT {ER}.revoke_curation('A', current_user)"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            a.execute(statement)
