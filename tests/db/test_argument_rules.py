"""One rule, one place: every public function taking a bank_id refuses a bad one
the way check_bank_id does (same SQLSTATE, same message).

The functions come from the catalog, not from a list kept by hand, so a new
function that writes its own bank_id check (or none) fails here."""

from __future__ import annotations

import re

import psycopg
import pytest
from psycopg import sql

ER = "entity_resolver"
IN = "entity_resolver_internal"

BAD_BANK_IDS = {"null": None, "blank": "", "tab only": "\t", "too long": "x" * 101}


def public_functions_taking_a_bank_id(conn) -> list[tuple[str, list[str], list[str], bool]]:
    """(name, input argument names, their types, whether bank_id defaults to NULL) of each public function."""
    rows = conn.execute(
        """
        SELECT p.proname,
               ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a (t, i)
                     ORDER BY a.i),
               p.proargnames, p.proargmodes, pg_get_function_arguments(p.oid)
        FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = %s AND p.prokind = 'f' AND p.proname !~ '^_' AND 'bank_id' = ANY(p.proargnames)
        ORDER BY p.proname, p.oid
        """, (ER,)).fetchall()
    found = []
    for name, types, names, modes, arguments in rows:
        inputs = [n for n, m in zip(names, modes or ["i"] * len(names)) if m in ("i", "b", "v")]
        assert len(inputs) == len(types), name
        defaults_to_null = re.search(r"\bbank_id text DEFAULT NULL", arguments) is not None
        found.append((name, inputs, types, defaults_to_null))
    return found


def refusal(conn, statement, params) -> tuple[str | None, str]:
    try:
        conn.execute(statement, params).fetchall()
    except psycopg.Error as exc:
        return exc.sqlstate, exc.diag.message_primary
    return None, "accepted"


def test_the_catalog_names_the_functions_this_test_covers(conn):
    names = {f[0] for f in public_functions_taking_a_bank_id(conn)}
    assert {"grant_bank_access", "revoke_bank_access", "link_unit", "forget_unit", "resolve_mentions",
            "expand_units", "operation_history", "rebuild_stats", "merge_entities", "configure_bank"} <= names


@pytest.mark.parametrize("case", list(BAD_BANK_IDS))
def test_every_public_function_refuses_a_bad_bank_id_as_check_bank_id_does(conn, case):
    bad = BAD_BANK_IDS[case]
    expected = refusal(conn, f"SELECT {IN}.check_bank_id(%s)", (bad,))
    assert expected[0] is not None and expected[1].startswith("bank_id: ")
    answers = {}
    for name, inputs, types, defaults_to_null in public_functions_taking_a_bank_id(conn):
        if bad is None and defaults_to_null:
            continue  # NULL means "every bank" there (flush_stats)
        # Every other argument NULL: the bank_id is checked first, whatever follows.
        args = [sql.SQL("%s::text") if n == "bank_id" else sql.SQL("NULL::{}").format(sql.SQL(t))
                for n, t in zip(inputs, types)]
        statement = sql.SQL("SELECT * FROM {}.{}({})").format(
            sql.Identifier(ER), sql.Identifier(name), sql.SQL(", ").join(args))
        answers[f"{name}({', '.join(types)})"] = refusal(conn, statement, (bad,))
    assert len(answers) >= 10
    wrong = {signature: answer for signature, answer in answers.items() if answer != expected}
    assert wrong == {}, f"check_bank_id answers {expected}; these differ: {wrong}"
    assert conn.execute(f"SELECT count(*) FROM {ER}.banks").fetchone()[0] == 0
