"""entity-resolver eval end to end: replay a tiny labelled stream, score it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from entity_resolver.evaluate import EvalError, format_report, run_eval


def write_stream(path, facts):
    lines = []
    for n, (date, mentions) in enumerate(facts, 1):
        lines.append(json.dumps({
            "fact_id": f"f{n}", "bank_id": "team", "event_date": date, "content": f"fact {n}",
            "mentions": [{"text": t, "gold": g} if g else {"text": t} for t, g in mentions],
        }, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# Decisions the design guarantees whatever the weights: equal names after
# lower() are one entity, and different numbers are different entities.
TINY = [
    ("2026-03-01T10:00:00Z", [("Alex Morgan", "alex"), ("Acme", "acme"), ("renewal", None)]),
    ("2026-03-01T11:00:00Z", [("alex morgan", "alex"), ("ACME", "acme")]),
    ("2026-03-02T09:00:00Z", [("Room 101", "room"), ("Room 102", "room")]),
    ("2026-03-02T10:00:00Z", [("Acme", "acme-2"), ("Alex Morgan", "alex")]),
]


@pytest.fixture
def tiny(tmp_path):
    return write_stream(tmp_path / "tiny.jsonl", TINY)


def eval_banks(conn):
    return [r[0] for r in conn.execute(
        "SELECT bank_id FROM entity_resolver.banks WHERE bank_id LIKE 'eval-%' ORDER BY 1")]


def test_eval_scores_every_gold_mention(conn, tiny):
    r = run_eval(conn, tiny)
    assert r["mentions_scored"] == 8
    assert r["facts"] == 4
    assert r["mentions"] == 9
    assert r["gold_identities"] == 4
    assert r["trace_mismatches"] == 0


def test_eval_reports_a_wrong_merge_and_a_fragmentation(conn, tiny):
    r = run_eval(conn, tiny)
    # "Acme" is one entity but carries two gold identities; "room" is split
    # over Room 101 and Room 102.
    assert r["wrong_merges"] == 1
    assert r["worst_merges"][0]["entity"] == "Acme"
    assert {g["gold"] for g in r["worst_merges"][0]["gold"]} == {"acme", "acme-2"}
    assert r["fragmented"] == 1
    assert r["worst_fragments"][0]["gold"] == "room"
    assert {e["entity"] for e in r["worst_fragments"][0]["into"]} == {"Room 101", "Room 102"}
    assert r["entities"] == 4


def test_eval_json_has_the_documented_keys(conn, tiny):
    r = run_eval(conn, tiny)
    for key in ("mentions_scored", "pairwise", "bcubed", "wrong_merges", "fragmented",
                "entities", "gold_identities", "seconds"):
        assert key in r
    for key in ("pairwise", "bcubed"):
        assert set(r[key]) == {"precision", "recall", "f1"}
    json.dumps(r)


def test_eval_is_deterministic_and_the_two_replays_agree(conn, tiny):
    def strip(r):
        return {k: v for k, v in r.items() if k not in ("seconds", "replay")}

    first = run_eval(conn, tiny)
    assert strip(run_eval(conn, tiny)) == strip(first)
    assert strip(run_eval(conn, tiny, replay="functions")) == strip(first)


def test_eval_replays_into_fresh_banks_and_cleans_up(conn, tiny):
    conn.execute("SELECT * FROM entity_resolver.resolve_mentions('team', '[\"Acme Corporation\"]')")
    run_eval(conn, tiny)
    assert eval_banks(conn) == []
    # The stream's own bank name is never written to.
    assert conn.execute("SELECT count(*) FROM entity_resolver.entities WHERE bank_id = 'team'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM entity_resolver.facts").fetchone()[0] == 0


def test_eval_keep_leaves_the_bank_with_its_statistics_applied(conn, tiny):
    r = run_eval(conn, tiny, keep=True)
    bank = r["eval_banks"]["team"]
    assert eval_banks(conn) == [bank]
    count, = conn.execute("SELECT mention_count FROM entity_resolver.entities"
                          " WHERE bank_id = %s AND canonical_name = 'Alex Morgan'", (bank,)).fetchone()
    assert count == 3
    assert conn.execute("SELECT count(*) FROM entity_resolver.stats_queue WHERE bank_id = %s",
                        (bank,)).fetchone()[0] == 0


def test_eval_applies_the_bank_config_beside_the_stream(conn, tmp_path):
    stream = write_stream(tmp_path / "lab.jsonl", [
        ("2026-03-01T10:00:00Z", [("pedagogy:scaffolding", "s")]),
        ("2026-03-01T11:00:00Z", [("pedagogy:scaffolded", "t")]),
    ])
    (tmp_path / "lab.banks.json").write_text(json.dumps({"team": {"entity_labels": {"attributes": [
        {"key": "pedagogy", "type": "value",
         "values": [{"value": "scaffolding"}, {"value": "scaffolded"}]}]}}}))
    r = run_eval(conn, stream)
    assert r["wrong_merges"] == 0
    assert r["entities"] == 2


def test_eval_of_a_directory_reports_each_family(conn, tmp_path):
    write_stream(tmp_path / "one.jsonl", TINY[:2])
    write_stream(tmp_path / "two.jsonl", TINY[2:])
    r = run_eval(conn, tmp_path)
    assert set(r["families"]) == {"one", "two"}
    assert r["mentions_scored"] == sum(f["mentions_scored"] for f in r["families"].values())
    # Both files use bank "team": their identities are still two files' identities.
    assert r["fragmented"] == sum(f["fragmented"] for f in r["families"].values()) == 1
    assert "one" in format_report(r)


def test_eval_refuses_a_bad_stream_naming_the_line(conn, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"fact_id": "f1", "bank_id": "team", "mentions": ["Acme"]}\n{"fact_id": 2,\n')
    with pytest.raises(EvalError, match="line 2"):
        run_eval(conn, path)
    assert eval_banks(conn) == []


def test_eval_leaves_the_connection_as_it_was(conn, tiny):
    conn.execute("SET entity_resolver.flush_at_commit = off")
    conn.autocommit = False
    conn.rollback()
    run_eval(conn, tiny)
    assert conn.autocommit is False
    assert conn.execute("SHOW entity_resolver.flush_at_commit").fetchone()[0] == "off"
    conn.rollback()


def test_committed_corpora_are_what_the_seeded_generator_produces():
    from bench import generate_corpora

    corpora = Path(generate_corpora.__file__).resolve().parent / "corpora"
    for name, text in generate_corpora.generate().items():
        assert (corpora / name).read_text(encoding="utf-8") == text, name


def test_the_functions_replay_is_fact_by_fact_only(conn, tiny):
    with pytest.raises(ValueError, match="batch"):
        run_eval(conn, tiny, replay="functions", batch=2)


def write_facts(path, facts):
    path.write_text("".join(json.dumps({"fact_id": f"f{n}", "bank_id": "team", "event_date": date,
                                        "content": f"fact {n}", "mentions": mentions}) + "\n"
                            for n, (date, mentions) in enumerate(facts, 1)), encoding="utf-8")
    return path


def test_eval_traces_two_entities_of_one_name_by_their_ids_at_any_batch_size(conn, tmp_path):
    # A person and a place both called "Jordan": two entities of one canonical
    # name, so the trace check (shadow call against trigger) cannot go by name.
    stream = write_facts(tmp_path / "jordan.jsonl", [
        ("2026-03-01T10:00:00Z", [{"text": "Jordan", "type": "person", "gold": "p"},
                                  {"text": "Payments API", "gold": "api"}]),
        ("2026-03-01T11:00:00Z", [{"text": "Jordan", "type": "place", "gold": "l"},
                                  {"text": "Amman", "gold": "amman"}]),
        ("2026-03-02T09:00:00Z", [{"text": "Jordan", "type": "place", "gold": "l"}, {"text": "Petra", "gold": "petra"}]),
        ("2026-03-02T10:00:00Z", [{"text": "Jordan", "type": "person", "gold": "p"},
                                  {"text": "Payments API", "gold": "api"}]),
    ])
    one, batched = run_eval(conn, stream), run_eval(conn, stream, batch=4)
    for r in (one, batched):
        assert r["trace_mismatches"] == 0
        assert (r["wrong_merges"], r["fragmented"], r["entities"]) == (0, 0, 5)
    assert one["bcubed"] == batched["bcubed"]
