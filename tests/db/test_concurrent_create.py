"""Two sessions creating the same new name at once (docs/design.md §3.8).

The insert is ON CONFLICT DO NOTHING in lower(name) order; the session that
loses the race takes the winner's row. One entity, never two, never an error.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg

from bank_builders import Bank

BANK = "race"


def session(connect, autocommit=True):
    return Bank(connect(autocommit=autocommit), BANK)


def wait_until_blocked(conn, pid, timeout=10.0):
    """Wait until backend ``pid`` waits on a lock (the other session's insert)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                           (pid,)).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.01)
    raise TimeoutError(f"backend {pid} never blocked")


def test_a_session_losing_the_race_takes_the_winners_entity(conn, connect):
    Bank(conn, BANK).create()
    winner, loser = session(connect, autocommit=False), session(connect)
    won = winner.resolve("Zephyr Labs")  # uncommitted: holds the name's index entry
    with ThreadPoolExecutor(1) as pool:
        losing = pool.submit(loser.resolve, "ZEPHYR LABS")
        wait_until_blocked(conn, loser.conn.info.backend_pid)
        winner.conn.commit()
        lost = losing.result(timeout=10)

    assert (lost["entity_id"], lost["created"]) == (won["entity_id"], False)
    assert Bank(conn, BANK).names() == ["Zephyr Labs"]


def test_two_sessions_racing_into_a_new_bank_make_one_bank_and_one_entity(conn, connect):
    winner, loser = session(connect, autocommit=False), session(connect)
    won = winner.resolve("Zephyr Labs")  # creates the bank too, uncommitted
    with ThreadPoolExecutor(1) as pool:
        losing = pool.submit(loser.resolve, "zephyr labs")
        wait_until_blocked(conn, loser.conn.info.backend_pid)
        winner.conn.commit()
        lost = losing.result(timeout=10)

    assert (lost["entity_id"], lost["created"]) == (won["entity_id"], False)
    assert Bank(conn, BANK).row_counts()["banks"] == 1
    assert Bank(conn, BANK).names() == ["Zephyr Labs"]


def test_a_losing_batch_creates_its_other_names_and_takes_the_raced_one(conn, connect):
    Bank(conn, BANK).create()
    winner, loser = session(connect, autocommit=False), session(connect)
    won = winner.resolve("Zephyr Labs")
    with ThreadPoolExecutor(1) as pool:
        losing = pool.submit(loser.resolve_batch, ["Quokka Systems", "zephyr labs"])
        wait_until_blocked(conn, loser.conn.info.backend_pid)
        winner.conn.commit()
        quokka, zephyr = losing.result(timeout=10)

    assert (zephyr["entity_id"], zephyr["created"]) == (won["entity_id"], False)
    assert quokka["created"] is True
    assert Bank(conn, BANK).names() == ["Quokka Systems", "Zephyr Labs"]


def test_a_race_lost_to_a_rolled_back_session_creates_the_entity(conn, connect):
    Bank(conn, BANK).create()
    first, second = session(connect, autocommit=False), session(connect)
    first.resolve("Zephyr Labs")
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(second.resolve, "Zephyr Labs")
        wait_until_blocked(conn, second.conn.info.backend_pid)
        first.conn.rollback()
        result = pending.result(timeout=10)

    assert result["created"] is True
    assert Bank(conn, BANK).names() == ["Zephyr Labs"]


# Pairwise dissimilar (no shared word, no word a prefix of another), so no
# two are clustered or merged with each other.
WORDS = ("aurora basalt cobalt dune ember fjord granite heron indigo juniper kestrel lagoon "
         "meadow nimbus obsidian pewter quartz raven sequoia tundra umber vortex willow "
         "xenon yarrow zephyr amber birch cedar delta").split()
NEW_NAMES = [f"{a.title()} {b.title()}" for a, b in zip(WORDS[0::2], WORDS[1::2])]


def test_batches_creating_the_same_names_in_opposite_orders_do_not_deadlock(conn, connect):
    # A third session holds the middle name, so both batches stop half-way:
    # inserting in input order, each would then hold a name the other needs.
    Bank(conn, BANK).create()
    first, middle, last = sorted(NEW_NAMES)[0], sorted(NEW_NAMES)[5], sorted(NEW_NAMES)[-1]
    holder, forward, backward = session(connect, autocommit=False), session(connect), session(connect)
    holder.resolve(middle)
    with ThreadPoolExecutor(2) as pool:
        ahead = pool.submit(forward.resolve_batch, [first, middle, last])
        wait_until_blocked(conn, forward.conn.info.backend_pid)
        behind = pool.submit(backward.resolve_batch, [last, middle, first])
        wait_until_blocked(conn, backward.conn.info.backend_pid)
        holder.conn.rollback()
        rows = ahead.result(timeout=10), behind.result(timeout=10)

    assert [r["entity_id"] for r in rows[0]] == [r["entity_id"] for r in reversed(rows[1])]
    assert Bank(conn, BANK).names() == sorted([first, middle, last])


def test_sessions_racing_on_the_same_new_names_in_any_order_make_one_entity_each(conn, connect):
    # Each batch inserts its names in lower(name) order whatever the input
    # order, so no two racing batches wait on each other in a cycle.
    Bank(conn, BANK).create()
    sessions = [session(connect) for _ in range(8)]
    for s in sessions:
        s.resolve("warm up the session")  # load the modules before the race
    start = threading.Barrier(len(sessions))

    def race(s, seed):
        mentions = NEW_NAMES[:]
        random.Random(seed).shuffle(mentions)
        mentions = [m.upper() if seed % 2 else m for m in mentions]
        start.wait()
        return {r["mention"].lower(): r for r in s.resolve_batch(mentions)}

    with ThreadPoolExecutor(len(sessions)) as pool:
        results = list(pool.map(race, sessions, range(len(sessions))))

    for name in NEW_NAMES:
        rows = [r[name.lower()] for r in results]
        assert len({row["entity_id"] for row in rows}) == 1, name
        assert sum(row["created"] for row in rows) == 1, name
    assert len(Bank(conn, BANK).names()) == len(NEW_NAMES) + 1


def test_a_racing_call_raises_no_error_in_read_committed(conn, connect):
    Bank(conn, BANK).create()
    sessions = [session(connect) for _ in range(6)]
    for s in sessions:
        s.resolve("warm up the session")
    start = threading.Barrier(len(sessions))
    errors = []

    def race(s):
        start.wait()
        for name in NEW_NAMES:
            try:
                s.resolve(name)
            except psycopg.Error as exc:  # collected, then asserted empty
                errors.append(exc)

    with ThreadPoolExecutor(len(sessions)) as pool:
        list(pool.map(race, sessions))

    assert errors == []
    assert len(Bank(conn, BANK).names()) == len(NEW_NAMES) + 1
