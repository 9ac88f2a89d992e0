"""Resolution decides exactly as the full evaluation, over a large random stream.

explain_mention evaluates every candidate with every signal and all of its
partners; it is the reference. Any shortcut in the resolve path (skipping the
partners of candidates that cannot be scored, skipping a SequenceMatcher when
its bounds prove it cannot win, ...) must leave every decision and every best
score bit-for-bit identical to it. The stream is the benchmark's: a seeded
bank with communities and hubs, and mentions that repeat, misspell, shorten
and invent names next to their community.
"""

from __future__ import annotations

import random

import pytest

from entity_resolver import bench

SIZE = 1500
MENTIONS = 300


@pytest.fixture
def bank(conn):
    conn.execute("SET search_path = entity_resolver, public, pg_catalog")
    return bench.build_bank(conn, SIZE, seed=11)


def stream(bank):
    rng = random.Random(2026)
    out = []
    while len(out) < MENTIONS:
        for fact in bench.make_retain(bank, rng):
            for k, text in enumerate(fact):
                out.append((text, fact[:k] + fact[k + 1:]))
    return out[:MENTIONS]


def test_resolve_decides_as_explain_on_a_random_stream(conn, bank):
    decided = matched = 0
    for text, nearby in stream(bank):
        rows = conn.execute(
            "SELECT candidate_id, score, decision FROM entity_resolver.explain_mention(%s, %s, %s, %s)",
            (bank.bank_id, text, nearby, bench.NOW)).fetchall()
        chosen = [r[0] for r in rows if r[2] == "chosen"]
        scores = [r[1] for r in rows if r[1] is not None]
        with conn.transaction(force_rollback=True):
            entity_id, _, created, score = conn.execute(
                "SELECT * FROM entity_resolver.resolve_mention(%s, %s, %s, %s)",
                (bank.bank_id, text, nearby, bench.NOW)).fetchone()
        where = f"{text!r} next to {nearby!r}"
        assert score == (max(scores) if scores else None), where
        if chosen:
            matched += 1
            assert (entity_id, created) == (chosen[0], False), where
        else:
            assert created, where
        decided += 1
    assert decided == MENTIONS
    # The stream exercises both outcomes, not just one.
    assert 0.2 * MENTIONS < matched < 0.95 * MENTIONS
