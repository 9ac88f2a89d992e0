"""bench/order.py's pure parts: the shuffle keeps every fact whole (its fact_id, event date and
mentions travel together), and the agreement of two partitions is B-cubed F1 of one against the other."""

import json

from bench.order import agreement, shuffle_lines

LINES = [json.dumps({"fact_id": f"f{n}", "bank_id": "b", "event_date": f"2026-01-{n + 1:02d}T10:00:00Z",
                     "mentions": [{"text": f"Name {n}", "gold": f"g{n % 3}"}]}) for n in range(20)]


def test_a_shuffle_moves_whole_facts_and_is_seeded():
    shuffled = shuffle_lines(LINES + ["", "  "], 1)
    assert sorted(shuffled) == sorted(LINES)             # the same facts, each line intact; blank lines dropped
    assert shuffled != LINES                              # another arrival order
    assert shuffled == shuffle_lines(LINES, 1)            # the same seed, the same order
    assert shuffled != shuffle_lines(LINES, 2)
    for line in shuffled:                                 # each fact's date is still its own
        fact = json.loads(line)
        assert fact["event_date"] == f"2026-01-{int(fact['fact_id'][1:]) + 1:02d}T10:00:00Z"


def test_agreement_is_bcubed_f1_of_one_partition_against_another():
    keys = [("b", "f1", 1), ("b", "f2", 1), ("b", "f3", 1), ("b", "f4", 1)]
    a = {k: (e, e) for k, e in zip(keys, ["x", "x", "y", "y"])}
    same_but_renamed = {k: (e, e) for k, e in zip(keys, ["p", "p", "q", "q"])}
    merged = {k: ("z", "z") for k in keys}
    assert agreement(a, same_but_renamed, keys) == 1.0   # entity ids differ between banks: only grouping counts
    assert agreement(a, merged, keys) == agreement(merged, a, keys) < 1.0
