"""bench/order.py on a tiny stream: each order replayed into its own bank, re-resolved, scored
before and after, the shuffles compared; the banks are gone afterwards."""

from __future__ import annotations

import json

from bench.order import measure_family

FACTS = [
    # A bare "Alex" that arrives before Alex Kim is known becomes an entity of its own.
    ("f1", "2026-01-01T10:00:00Z", [("Alex", "p:alex-kim"), ("React", "t:react")]),
    ("f2", "2026-01-02T10:00:00Z", [("Alex Kim", "p:alex-kim"), ("React", "t:react")]),
    ("f3", "2026-01-03T10:00:00Z", [("Alex Kim", "p:alex-kim"), ("React", "t:react"), ("Sprint 14", "t:sprint-14")]),
    ("f4", "2026-01-04T10:00:00Z", [("Alex", "p:alex-kim"), ("Sprint 14", "t:sprint-14")]),
    ("f5", "2026-01-05T10:00:00Z", [("Acme", "o:acme"), ("Alex Kim", "p:alex-kim")]),
]


def test_measure_family_replays_every_order_and_scores_before_and_after(conn, tmp_path):
    stream = tmp_path / "tiny.jsonl"
    stream.write_text("".join(json.dumps({
        "fact_id": f, "bank_id": "tiny", "event_date": d, "content": " ".join(t for t, _ in ms),
        "mentions": [{"text": t, "gold": g} for t, g in ms]}) + "\n" for f, d, ms in FACTS), encoding="utf-8")
    r = measure_family(conn, stream, seeds=(1, 2, 3))
    assert list(r["orders"]) == ["in order", "shuffle 1", "shuffle 2", "shuffle 3"]
    assert r["mentions_scored"] == 11
    for o in r["orders"].values():
        assert o["trace_mismatches"] == 0
        assert o["reresolve"]["facts"] == 5
        for stage in ("before", "after"):
            assert 0 < o[stage]["bcubed_f1"] <= 1 and o[stage]["wrong_merges"] >= 0
    assert set(r["agreement"]["before"]) == {"shuffle 1 / shuffle 2", "shuffle 1 / shuffle 3", "shuffle 2 / shuffle 3"}
    assert set(r["targets"]) == {"f1_not_lower", "wrong_merges_not_higher", "agreement"}
    # The eval banks are deleted, the operations ledger with them.
    assert conn.execute("SELECT count(*) FROM entity_resolver.banks WHERE bank_id LIKE 'eval-%%'").fetchone()[0] == 0
