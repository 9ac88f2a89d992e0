"""With the bank setting reresolve_replay (off by default; sql/058_reresolve.sql), reresolve of a whole bank
replays it: every fact decided again from nothing in event order, its clusters placed on the bank's
entities, then every fact decided again against the bank they made. The same facts arrived in another
order end in the same partition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.order import _golds, _partition, agreement, shuffle_lines
from corrections_helpers import ER, call, differences, insert_fact, snapshot
from entity_resolver import evaluate
from test_curation import grant

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"


def replayed_partition(conn, stream, replay):
    """The stream replayed fact by fact into a new bank, re-resolved (applied) with reresolve_replay
    set to ``replay``: where each of its mentions now is."""
    res = evaluate.run_eval(conn, stream, ER, keep=True)
    banks = res["eval_banks"]
    try:
        for bank in banks.values():
            call(conn, "configure_bank", bank, json.dumps({"reresolve_replay": replay}))
            plan = call(conn, "reresolve", bank, dry_run=False)
            assert plan["replayed"] is replay
        return _partition(conn, banks)
    finally:
        evaluate._cleanup(conn, ER, list(banks.values()))


def test_two_arrival_orders_end_in_one_partition(conn, tmp_path):
    """bare_names: a bare first name decided before or after the full names it may stand for. Arrival
    order alone, the in-order replay and a shuffle agree 88.6 %; each fact decided again against the
    bank as it stands brings them to 97 %, a replay to one partition."""
    family = CORPORA / "bare_names.jsonl"
    lines = family.read_text(encoding="utf-8").splitlines()
    shuffled = tmp_path / "bare_names.jsonl"
    shuffled.write_text("\n".join(shuffle_lines(lines, 1)) + "\n", encoding="utf-8")
    keys = sorted(_golds(family))
    replayed = [replayed_partition(conn, s, True) for s in (family, shuffled)]
    assert agreement(*replayed, keys) == 1.0
    apart = [replayed_partition(conn, s, False) for s in (family, shuffled)]
    assert agreement(*apart, keys) < 0.99


def replay_on(conn, bank):
    call(conn, "configure_bank", bank, json.dumps({"reresolve_replay": True}))


@pytest.fixture
def two_orders(conn):
    """One bank's facts in two arrival orders: Sam Lee and Sam Ortiz, and bare "Sam"s beside their
    partners. In 'late', Sam Lee arrives after both bare names: the one beside his Kestrel went to Sam
    Ortiz, the only Sam known then."""
    facts = [("f1", "2026-01-01", ["Sam Lee", "Kestrel"]), ("f2", "2026-01-02", ["Sam Ortiz", "Halyard"]),
             ("f3", "2026-01-03", ["Sam", "Kestrel"]), ("f4", "2026-01-04", ["Sam", "Halyard"]),
             ("f5", "2026-01-05", ["Sam Lee", "Kestrel", "Orrery"])]
    for bank, order in (("early", facts), ("late", [facts[1], facts[2], facts[3], facts[0], facts[4]])):
        replay_on(conn, bank)
        for fact_id, day, mentions in order:
            insert_fact(conn, bank, mentions, f"{day}T09:00:00Z", fact_id=fact_id)


def groups(conn, bank):
    """The bank's partition: the sets of (fact_id, ordinal) on one entity."""
    rows = conn.execute(f"SELECT f.fact_id, m.ordinal, m.entity_id FROM {ER}.mentions AS m"
                        f" JOIN {ER}.facts AS f ON f.bank_id = m.bank_id AND f.id = m.unit_id"
                        " WHERE m.bank_id = %s", (bank,)).fetchall()
    out = {}
    for fact_id, ordinal, entity in rows:
        out.setdefault(entity, set()).add((fact_id, ordinal))
    return sorted(sorted(g) for g in out.values())


def test_a_replay_reports_its_order_and_moves_as_a_correction(conn, two_orders):
    plan = call(conn, "reresolve", "late")
    assert plan["replayed"] is True and plan["order"].startswith("every fact replayed from nothing by event_date")
    assert {m["why"].split(":")[0] for m in plan["moves"]} <= {
        "replayed with the bank's facts in event order", "decided again against the bank as it stands"}
    assert [(m["mention"], m["from"]["name"], m["to"]["name"]) for m in plan["moves"]] == [
        ("Sam", "Sam Ortiz", "Sam Lee")]
    assert groups(conn, "late") != groups(conn, "early")
    applied = call(conn, "reresolve", "late", dry_run=False)
    assert applied["moves"] == plan["moves"] and applied["operation_id"] is not None
    assert groups(conn, "late") == groups(conn, "early")
    call(conn, "reresolve", "early", dry_run=False)
    assert groups(conn, "late") == groups(conn, "early")


def test_by_default_or_scoped_a_plan_decides_each_fact_against_the_bank_as_it_stands(conn, two_orders):
    insert_fact(conn, "plain", ["Sam Lee", "Kestrel"], "2026-01-01T09:00:00Z", fact_id="f1")
    assert call(conn, "reresolve", "plain")["replayed"] is False
    ortiz = conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = 'late' AND canonical_name = 'Sam Ortiz'"
                       ).fetchone()[0]
    assert call(conn, "reresolve", "late", entity_ids=[str(ortiz)])["replayed"] is False
    assert call(conn, "reresolve", "late", since="2026-01-01T00:00:00Z")["replayed"] is False
    call(conn, "configure_bank", "late", json.dumps({"reresolve_replay": False}))
    plan = call(conn, "reresolve", "late")
    assert plan["replayed"] is False and plan["order"].startswith("facts by event_date")
    assert all(m["why"].startswith("decided again against the bank as it stands") for m in plan["moves"])


def test_a_replay_makes_the_entity_the_arrival_merged_away_and_undo_removes_it(conn, two_orders):
    """In 'merged', both bare "Sam"s arrive first and every Sam goes to one entity "Sam": Sam Lee and
    Sam Ortiz merged. Replayed in event order they are two people: the larger share keeps "Sam", the
    other gets an entity of its own (the replay's name, an id drawn from its first mention), listed in
    entities_created, and "Sam" takes the replay's name, Sam Lee; undo removes the one and renames the
    other back."""
    facts = [("f1", "2026-01-01", ["Sam Lee", "Kestrel"]), ("f2", "2026-01-02", ["Sam Ortiz", "Halyard"]),
             ("f3", "2026-01-03", ["Sam", "Kestrel"]), ("f4", "2026-01-04", ["Sam", "Halyard"]),
             ("f5", "2026-01-05", ["Sam Lee", "Kestrel", "Orrery"])]
    replay_on(conn, "merged")
    for fact_id, day, mentions in [facts[2], facts[3], facts[0], facts[1], facts[4]]:
        insert_fact(conn, "merged", mentions, f"{day}T09:00:00Z", fact_id=fact_id)
    assert len({g[0][0] for g in groups(conn, "merged") if ("f1", 1) in g or ("f2", 1) in g}) == 1
    before = snapshot(conn, "merged")
    dry = call(conn, "reresolve", "merged")
    assert [e["canonical_name"] for e in dry["entities_created"]] == ["Sam Ortiz"]
    assert call(conn, "reresolve", "merged")["entities_created"] == dry["entities_created"]
    # The entity "Sam" keeps Sam Lee's mentions and takes the replay's name for them.
    assert [(r["from"], r["to"]) for r in dry["entities_renamed"]] == [("Sam", "Sam Lee")]
    applied = call(conn, "reresolve", "merged", dry_run=False)
    assert applied["moves"] == dry["moves"] and applied["entities_created"] == dry["entities_created"]
    assert applied["entities_renamed"] == dry["entities_renamed"]
    assert groups(conn, "merged") == groups(conn, "early")
    assert {n for (n,) in conn.execute(f"SELECT canonical_name FROM {ER}.entities WHERE bank_id = 'merged'"
                                       " AND canonical_name LIKE 'Sam%%'")} == {"Sam Lee", "Sam Ortiz"}
    assert (differences(conn, "merged")["differences"], differences(conn, "merged")["orphans"]) == (0, [])
    assert call(conn, "reresolve", "merged")["moves"] == []
    call(conn, "undo_operation", "merged", applied["operation_id"])
    assert snapshot(conn, "merged") == before


def test_a_bank_bound_curator_replays_as_the_installer_does(conn, two_orders, roles, connect_as):
    """The replay forgets and resolves the bank's facts again in a subtransaction: a role bound to the
    bank (its rows only, orphan entities only to delete) makes the same plan."""
    bob = roles()
    conn.execute(f"SELECT {ER}.grant_bank_access('late', %s)", (bob,))
    grant(conn, "late", bob)
    as_bob = connect_as(bob).execute(f"SELECT {ER}.reresolve('late')").fetchone()[0]
    as_installer = call(conn, "reresolve", "late")
    assert as_bob["replayed"] is True and as_bob["moves"] == as_installer["moves"] != []
