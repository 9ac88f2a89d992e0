"""The write path on the distributed layout: what runs on a bank's shards today, and what does not yet."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from citus_layout import banks_on


def resolve(conn, bank: str, names: list[str]) -> list[tuple]:
    return conn.execute(
        "SELECT mention, entity_id, canonical_name, created FROM entity_resolver.resolve_mentions(%s, %s::jsonb)"
        " ORDER BY ord", (bank, json.dumps(names))).fetchall()


@pytest.fixture
def two_banks(citus, distributed) -> list[str]:
    """One bank on each worker."""
    return [banks_on(distributed, w.port, 1)[0] for w in citus.workers]


def test_a_name_resolves_to_one_entity_whatever_its_case(distributed, two_banks):
    # The unique index on (bank_id, lower(canonical_name)) and the
    # resolver's INSERT ... ON CONFLICT on it work on the shards.
    for bank in two_banks:
        first = resolve(distributed, bank, ["Alex Morgan"])[0]
        again = resolve(distributed, bank, ["alex morgan"])[0]
        assert first[3] is True and again[3] is False
        assert again[1] == first[1] and again[2] == "Alex Morgan"
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.entities WHERE bank_id = ANY(%s)", (two_banks,)).fetchone()[0] == 2


def test_fuzzy_candidates_come_from_the_trigram_index_on_the_shard(distributed, two_banks):
    bank = two_banks[0]
    resolve(distributed, bank, ["Katherine Johansson"])
    rows = distributed.execute(
        "SELECT canonical_name, decision FROM entity_resolver.explain_mention(%s, 'Katherine Johanson')",
        (bank,)).fetchall()
    assert rows and rows[0][0] == "Katherine Johansson"


def test_foreign_keys_between_colocated_tables_are_enforced(distributed, two_banks):
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        distributed.execute(
            "INSERT INTO entity_resolver.unit_entities (bank_id, unit_id, entity_id) VALUES (%s, %s, %s)",
            (two_banks[0], uuid.uuid4(), uuid.uuid4()))


def test_link_unit_links_and_queues_the_pairs(distributed, two_banks):
    bank = two_banks[1]
    ids = [r[1] for r in resolve(distributed, bank, ["Alex Morgan", "Acme", "Berlin"])]
    unit = uuid.uuid4()
    assert distributed.execute("SELECT entity_resolver.link_unit(%s, %s, %s)", (bank, unit, ids)).fetchone()[0] == 3
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.stats_queue WHERE bank_id = %s AND entity_id_2 IS NOT NULL",
        (bank,)).fetchone()[0] == 3
    expanded = distributed.execute(
        "SELECT entity_resolver.link_unit(%s, %s, %s)", (bank, uuid.uuid4(), ids[:1])).fetchone()
    assert expanded[0] == 1
    assert distributed.execute(
        "SELECT unit_id, shared_entities FROM entity_resolver.expand_units(%s, %s)", (bank, [unit])
    ).fetchall()[0][1] == 1


def test_inserting_facts_resolves_and_links_them_on_their_shards(distributed, two_banks):
    # The statement trigger with a transition table runs on each shard the
    # INSERT writes to (citus.enable_unsafe_triggers), once per shard.
    a, b = two_banks
    facts = [(a, ["Alex Morgan", "Acme"]), (b, ["Alex Morgan", "Borealis"]), (a, ["alex morgan", "Oslo"])]
    with distributed.cursor() as cur:
        cur.execute(
            "INSERT INTO entity_resolver.facts (bank_id, mentions) SELECT * FROM unnest(%s::text[], %s::jsonb[])",
            ([f[0] for f in facts], [json.dumps(f[1]) for f in facts]))
    links = dict(distributed.execute(
        "SELECT f.bank_id, count(*) FROM entity_resolver.facts AS f JOIN entity_resolver.unit_entities AS ue"
        " ON ue.bank_id = f.bank_id AND ue.unit_id = f.id WHERE f.bank_id = ANY(%s) GROUP BY f.bank_id",
        (two_banks,)).fetchall())
    assert links == {a: 4, b: 2}
    names = distributed.execute(
        "SELECT bank_id, array_agg(canonical_name ORDER BY canonical_name) FROM entity_resolver.entities"
        " WHERE bank_id = ANY(%s) GROUP BY bank_id ORDER BY bank_id = %s DESC", (two_banks, a)).fetchall()
    assert names == [(a, ["Acme", "Alex Morgan", "Oslo"]), (b, ["Alex Morgan", "Borealis"])]


def test_a_fact_cannot_be_relinked_by_update(distributed, two_banks):
    distributed.execute("INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES (%s, '[\"Alex\"]')",
                        (two_banks[0],))
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="cannot be updated"):
        distributed.execute("UPDATE entity_resolver.facts SET mentions = '[]' WHERE bank_id = %s", (two_banks[0],))


def test_the_views_read_across_shards(distributed, two_banks):
    for bank in two_banks:
        resolve(distributed, bank, ["Alex Morgan", "Acme"])
    rows = distributed.execute(
        "SELECT bank_id, count(*) FROM entity_resolver.entity_overview WHERE bank_id = ANY(%s) GROUP BY bank_id",
        (two_banks,)).fetchall()
    assert sorted(rows) == sorted((bank, 2) for bank in two_banks)


@pytest.mark.xfail(strict=True, raises=psycopg.errors.FeatureNotSupported,
                   reason="_flush_queue locks entities joined to arrays of (bank, id) FOR NO KEY UPDATE: "
                          "not routable to one shard (0A000 could not run distributed query with FOR "
                          "UPDATE/SHARE commands); every statement needs bank_id = <the bank>")
def test_flush_stats_applies_one_banks_queue(distributed, two_banks):
    bank = two_banks[0]
    resolve(distributed, bank, ["Alex Morgan", "Alex Morgan"])
    assert distributed.execute("SELECT * FROM entity_resolver.flush_stats(%s)", (bank,)).fetchone() == (1, 0)
    assert distributed.execute(
        "SELECT mention_count FROM entity_resolver.entities WHERE bank_id = %s", (bank,)).fetchone()[0] == 2


@pytest.mark.xfail(strict=True, raises=psycopg.errors.FeatureNotSupported,
                   reason="the commit flush fires on the shard, where _flush_queue(NULL, TRUE) claims by "
                          "pg_current_xact_id() across banks and locks FOR NO KEY UPDATE: 0A000 could not "
                          "run distributed query with FOR UPDATE/SHARE commands")
def test_flush_at_commit_applies_a_delegated_calls_statistics(own_distributed):
    conn = own_distributed
    conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET entity_resolver.flush_at_commit = on')
    # Database settings apply to new sessions (and to their connections to the workers).
    with psycopg.connect(conn.info.dsn, autocommit=True) as fresh:
        resolve(fresh, "team", ["Alex Morgan"])
        assert fresh.execute("SELECT mention_count FROM entity_resolver.entities").fetchone()[0] == 1


@pytest.mark.xfail(strict=True, raises=psycopg.errors.InternalError,
                   reason="the DELETE trigger's DELETE ... USING old_facts on the shard: Citus cannot plan "
                          "the transition table (XX000 unrecognized RTE kind: 7)")
def test_deleting_facts_removes_their_links(distributed, two_banks):
    bank = two_banks[0]
    distributed.execute("INSERT INTO entity_resolver.facts (bank_id, mentions) VALUES (%s, '[\"Alex\", \"Acme\"]')",
                        (bank,))
    distributed.execute("DELETE FROM entity_resolver.facts WHERE bank_id = %s", (bank,))
    assert distributed.execute(
        "SELECT count(*) FROM entity_resolver.unit_entities WHERE bank_id = %s", (bank,)).fetchone()[0] == 0


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="the layout drops the bound_banks policies (Citus refuses their subqueries): "
                          "a bank user sees every bank until isolation uses a predicate Citus accepts")
def test_a_bank_user_reads_only_its_bound_bank_on_every_node(citus, distributed, two_banks):
    mine, other = two_banks
    for bank in two_banks:
        resolve(distributed, bank, ["Alex Morgan"])
    role = f"er_citus_{uuid.uuid4().hex[:8]}"
    distributed.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        distributed.execute(f'GRANT entity_resolver_bank_user TO "{role}"')
        distributed.execute("SELECT entity_resolver.grant_bank_access(%s, %s)", (mine, role))
        for node in citus.nodes:
            with psycopg.connect(node.dsn(distributed.info.dbname), user=role) as conn:
                seen = {r[0] for r in conn.execute(
                    "SELECT DISTINCT bank_id FROM entity_resolver.entities WHERE bank_id = ANY(%s)", (two_banks,))}
                assert seen == {mine}, (node.port, seen)
    finally:
        distributed.execute(f'DROP OWNED BY "{role}"')
        distributed.execute(f'DROP ROLE "{role}"')
