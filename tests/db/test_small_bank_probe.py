"""entity_resolver.small_bank_probe: which way a call probes a small bank, and a bad value.

That both ways give the same answers is held by tests/db/test_shortcut_equivalence.py
(every test there runs both ways against explain_mention); here, that the
setting chooses the way it says, and that auto reads a bank whole only where the
trigram index is crowded with other banks' names.
"""

from __future__ import annotations

import psycopg
import pytest

from bank_builders import Bank, row_counts, statements_of_last_call
from bench import workloads


# The resolver's modules live in GD; these read what a session's calls did.
PLANS_SQL = """
CREATE OR REPLACE FUNCTION pg_temp.prepared_plans() RETURNS text[] LANGUAGE plpython3u AS $$
modules = [v for k, v in GD.items() if isinstance(k, str) and k.startswith("entity_resolver:")
           and isinstance(v, dict) and "db" in v]
return sorted(modules[0]["db"]._PLANS) if modules else []
$$;
"""


def prepared(conn) -> set[str]:
    """The statements this session's resolver calls prepared (by name)."""
    conn.execute(PLANS_SQL)
    return set(conn.execute("SELECT pg_temp.prepared_plans()").fetchone()[0])


def names(n: int) -> list[str]:
    return [f"Person {chr(65 + i % 26)}{chr(65 + i // 26 % 26)}{chr(65 + i // 676)}" for i in range(n)]


def batch(n: int) -> list[dict]:
    # Known names, misspelt (so that every key is probed in full), and new ones.
    return [{"text": name.replace("Person", "Persn")} for name in names(n)]


@pytest.fixture
def small(conn):
    bank = Bank(conn, "small").create()
    for name in names(40):
        bank.entity(name)
    return bank


@pytest.mark.parametrize("way, reads", [("on", True), ("off", False)])
def test_on_reads_the_bank_whole_and_off_probes_the_index(conn, connect, small, way, reads):
    session = connect()
    session.execute("SELECT set_config('entity_resolver.small_bank_probe', %s, false)", (way,))
    session.execute("SELECT count(*) FROM entity_resolver.resolve_mentions('small', %s::jsonb)",
                    (psycopg.types.json.Jsonb(batch(20)),))
    plans = prepared(session)
    assert ("small_bank" in plans) is reads
    assert ("probe" in plans) is not reads


def test_auto_reads_a_small_bank_only_beside_many_other_names(conn, connect, small):
    alone = connect()
    alone.execute("SELECT count(*) FROM entity_resolver.resolve_mentions('small', %s::jsonb)",
                  (psycopg.types.json.Jsonb(batch(40)),))
    assert "small_bank" not in prepared(alone)

    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    workloads.build_bank(conn, 30000, seed=5, bank_id="crowd")
    conn.execute("ANALYZE entity_resolver.entities")
    crowded = connect()
    crowded.execute("SELECT count(*) FROM entity_resolver.resolve_mentions('small', %s::jsonb)",
                    (psycopg.types.json.Jsonb(batch(40)),))
    assert "small_bank" in prepared(crowded)
    # The crowd's own bank is too large to read whole: the index, as before.
    crowd = connect()
    crowd.execute("SELECT count(*) FROM entity_resolver.resolve_mentions('crowd', %s::jsonb)",
                  (psycopg.types.json.Jsonb(batch(40)),))
    assert "probe" in prepared(crowd)


def test_a_read_runs_one_statement_more_only_for_names_the_session_has_not_seen(conn, connect, small):
    # The read replaces the probe statement; the trigrams of names the session
    # has not seen yet (the bank's and the keys') take one more. Each call is
    # rolled back, so every call meets the same bank; the third brings 5 new keys.
    def counts(way: str) -> list[int]:
        session = connect()
        session.execute("SELECT set_config('entity_resolver.small_bank_probe', %s, false)", (way,))
        out = []
        for size in (20, 20, 25):
            with session.transaction(force_rollback=True):
                session.execute("SELECT count(*) FROM entity_resolver.resolve_mentions('small', %s::jsonb)",
                                (psycopg.types.json.Jsonb(batch(size)),))
                out.append(statements_of_last_call(session))
        return out

    index = counts("off")
    # A session's first call also reads what the session keeps, either way.
    assert index[1] == index[2] < index[0]
    # The first read of a bank in a session counts it first: a large bank is never read in order.
    assert counts("on") == [index[0] + 2, index[1], index[2] + 1]


KEEP_SQL = """
CREATE OR REPLACE FUNCTION pg_temp.keep_names(n integer) RETURNS void LANGUAGE plpython3u AS $$
for k, v in GD.items():
    if isinstance(k, str) and k.startswith("entity_resolver:") and isinstance(v, dict) and "small_bank" in v:
        v["small_bank"].NAMES_KEPT = n
$$;
"""


def test_a_session_past_its_memory_cap_reads_as_one_within_it(conn, connect, small):
    # When the trigram sets a session keeps would pass NAMES_KEPT, it forgets
    # them all: the names it still needs are then asked for again, not lost.
    def resolved(keep: int) -> list:
        session = connect()
        session.execute("SET entity_resolver.small_bank_probe = on")
        session.execute("SELECT count(*) FROM entity_resolver.lookup_mention('small', 'Persn AAA')")
        session.execute(KEEP_SQL)
        session.execute("SELECT pg_temp.keep_names(%s)", (keep,))
        out = []
        for size in (20, 25):
            with session.transaction(force_rollback=True):
                out.append(session.execute(
                    "SELECT mention, canonical_name, created, score"
                    " FROM entity_resolver.resolve_mentions('small', %s::jsonb)",
                    (psycopg.types.json.Jsonb(batch(size)),)).fetchall())
        assert "small_bank" in prepared(session)
        return out

    assert resolved(50) == resolved(10000)


def test_a_bad_value_is_an_error_naming_the_setting_and_changes_nothing(conn, small):
    before = row_counts(conn)
    conn.execute("SET entity_resolver.small_bank_probe = 'sometimes'")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="entity_resolver.small_bank_probe"):
        small.resolve("Persn AAA")
    conn.execute("RESET entity_resolver.small_bank_probe")
    assert row_counts(conn) == before
