"""Case folding is the database's (docs/design.md §3.1): Turkish İ in a UTF-8 and in a C-locale database.

Python's str.lower() turns "İ" into "i" + U+0307 (two characters); PostgreSQL's
lower() under a UTF-8 locale gives "i", and under the C locale leaves "İ" as
it is, so in a C-locale database the installer gives entities.canonical_name
the C.UTF-8 collation and the resolver lowers mention texts with it. Resolution
must fold with lower() on both sides so that its keys are the unique index's
keys: never a second row for a name the index would call the same, never a
lookup that misses the row the index has.
"""

from __future__ import annotations

import warnings

import pytest

from bank_builders import Bank
from entity_resolver.install import LocaleWarning, install


@pytest.fixture
def c_bank(c_locale_db):
    """A bank in a fresh database whose LC_CTYPE and LC_COLLATE are C."""
    conn = c_locale_db()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LocaleWarning)
        install(conn)
    return Bank(conn, "c locale").create()


# -- UTF-8 database: lower('İstanbul') = 'istanbul' -------------------------------------


@pytest.mark.parametrize("existing, mention", [
    ("İstanbul", "istanbul"), ("istanbul", "İSTANBUL"), ("İSTANBUL", "İstanbul"),
])
def test_istanbul_is_found_by_its_key_with_no_history_in_utf8(bank, existing, mention):
    ident = bank.entity(existing, last_seen=None)

    result = bank.resolve(mention, event_date=None)

    assert (result["entity_id"], result["created"], result["score"]) == (ident, False, 1.0)
    assert bank.names() == [existing]


def test_a_literal_istanbul_reuses_the_existing_row_in_utf8(bank):
    ident = bank.entity("İstanbul")

    result = bank.resolve("istanbul", literal=True)

    assert (result["entity_id"], result["created"]) == (ident, False)
    assert bank.names() == ["İstanbul"]


def test_istanbul_spellings_in_one_batch_are_one_entity_in_utf8(bank):
    rows = bank.resolve_batch(["İstanbul", "istanbul", "İSTANBUL"])

    assert len({r["entity_id"] for r in rows}) == 1
    assert len(bank.names()) == 1


# -- C-locale database: names fold with the C.UTF-8 collation ---------------------------


def test_a_c_locale_installation_folds_names_with_a_unicode_collation(c_bank):
    collation = c_bank.conn.execute(
        "SELECT c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation"
        " WHERE a.attrelid = 'entity_resolver.entities'::regclass AND a.attname = 'canonical_name'"
    ).fetchone()[0]
    assert collation.lower() in ("c.utf8", "c.utf-8")


@pytest.mark.parametrize("existing, mention", [
    ("İstanbul", "istanbul"), ("istanbul", "İSTANBUL"), ("İSTANBUL", "İstanbul"),
])
def test_istanbul_is_found_by_its_key_with_no_history_in_a_c_locale_database(c_bank, existing, mention):
    # lower() of the database's own C ctype would leave "İ" alone; the name
    # column's C.UTF-8 collation folds it on both sides, as in a UTF-8 database.
    ident = c_bank.entity(existing, last_seen=None)

    result = c_bank.resolve(mention, event_date=None)

    assert (result["entity_id"], result["created"], result["score"]) == (ident, False, 1.0)
    assert c_bank.names() == [existing]


def test_a_literal_istanbul_reuses_the_existing_row_in_a_c_locale_database(c_bank):
    ident = c_bank.entity("İstanbul", last_seen=None)

    result = c_bank.resolve("istanbul", literal=True)

    assert (result["entity_id"], result["created"]) == (ident, False)
    assert c_bank.names() == ["İstanbul"]


def test_the_unique_index_refuses_a_second_istanbul_in_a_c_locale_database(c_bank):
    import psycopg

    c_bank.entity("İstanbul")

    with pytest.raises(psycopg.errors.UniqueViolation):
        c_bank.entity("istanbul")


def test_ascii_case_folds_with_no_history_in_a_c_locale_database(c_bank):
    ident = c_bank.entity("Ankara", last_seen=None)

    result = c_bank.resolve("ANKARA", event_date=None)

    assert (result["entity_id"], result["created"]) == (ident, False)
    assert c_bank.names() == ["Ankara"]


def test_istanbul_spellings_in_one_batch_are_one_entity_in_a_c_locale_database(c_bank):
    rows = c_bank.resolve_batch(["İstanbul", "istanbul", "İSTANBUL"])

    assert len({r["entity_id"] for r in rows}) == 1
    assert len(c_bank.names()) == 1
