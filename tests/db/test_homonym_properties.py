"""Homonyms and attributes through corrections, generated (issue 31, items 3 and 5).

Random streams of facts whose mentions carry attributes (birth_date, email),
interleaved with merges, splits (keeping the name or not), forgets and undos.
After every step rebuild_stats finds nothing to change (maintained equals
rebuilt); a correction undone at once restores an exact snapshot of the
bank's identity tables (entities with homonym, mentions with attributes) and
of entity_attributes; a refused correction changes nothing.

Facts keep arriving between corrections, so mentions are resolved among
homonyms a split made, and every stream starts from a bank that holds a
homonym and an over-merged namesake (PRELUDE). A name form ("M. Schmidt")
joins the names, so splits and merges also meet entities of different names.
(This property replaced an earlier one of test_homonym_corrections.py, facts
first and corrections after, which it covers.)

ER_PROPERTY_EXAMPLES (default 100) scales the examples (a fifth of it here)."""

from __future__ import annotations

import os
import uuid

import psycopg
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from corrections_helpers import ER, call, differences, insert_fact, snapshot

EXAMPLES = int(os.environ.get("ER_PROPERTY_EXAMPLES", "100"))
# The SQLSTATEs a correction is refused with (docs/reliability.md, docs/corrections.md).
REFUSED = {"22023", "23505", "2BP01", "55000", "22004"}

NAMES = ["Maria Schmidt", "Maria Schmidt", "M. Schmidt", "Tom Baker"]
BORN = [None, "1961-05-03", "1984-11-20"]
EMAIL = [None, "maria@example.org", "tom@example.org"]
CONTEXT = ["Berlin office", "order 4411", "Acme", "renewal"]


def person(name, born, email):
    attributes = {k: v for k, v in (("birth_date", born), ("email", email)) if v}
    return {"text": name, "type": "person", **({"attributes": attributes} if attributes else {})}


FACT = st.tuples(st.just("fact"), st.builds(person, st.sampled_from(NAMES), st.sampled_from(BORN),
                                             st.sampled_from(EMAIL)),
                 st.lists(st.sampled_from(CONTEXT), max_size=2, unique=True))
PICK = st.integers(0, 20)
STEP = st.one_of(
    FACT, FACT, FACT,
    st.tuples(st.just("merge"), PICK, PICK, st.booleans()),
    st.tuples(st.just("split"), PICK, st.booleans(), st.booleans()),
    st.tuples(st.just("forget"), PICK, st.booleans()),
)
STREAM = st.lists(STEP, min_size=4, max_size=12)
# Every stream starts from a bank with a homonym (two birth dates) and an over-merged namesake (undated mentions).
PRELUDE = [
    ("fact", person("Maria Schmidt", "1961-05-03", None), ["Berlin office"]),
    ("fact", person("Maria Schmidt", None, None), ["order 4411"]),
    ("fact", person("Maria Schmidt", None, "maria@example.org"), ["order 4411", "Acme"]),
    ("fact", person("Maria Schmidt", "1984-11-20", None), ["renewal"]),
    ("fact", person("Tom Baker", None, "tom@example.org"), ["Acme"]),
]


def state(conn, bank):
    """The snapshot an undo must give back: identity tables, and the attributes entities hold."""
    out = snapshot(conn, bank)
    out["entity_attributes"] = [r[0] for r in conn.execute(
        f"SELECT a::text FROM {ER}.entity_attributes a WHERE a.bank_id = %s"
        " ORDER BY entity_id, attribute, value", (bank,))]
    return out


def people(conn, bank):
    return [(str(i), name) for i, name in conn.execute(
        f"SELECT id, canonical_name FROM {ER}.entities WHERE bank_id = %s AND entity_type = 'person' ORDER BY id",
        (bank,))]


def units_of(conn, bank, entity):
    return [str(r[0]) for r in conn.execute(
        f"SELECT DISTINCT unit_id FROM {ER}.mentions WHERE bank_id = %s AND entity_id = %s ORDER BY 1",
        (bank, entity))]


def correction(conn, bank, step, ents):
    """The call a step makes: (function, args, kwargs), or None when the bank offers nothing to correct."""
    kind = step[0]
    if kind == "merge":
        if len(ents) < 2 or ents[step[1] % len(ents)] == ents[step[2] % len(ents)]:
            return None
        return "merge_entities", (bank, [ents[step[1] % len(ents)][0]], ents[step[2] % len(ents)][0]), {}
    if kind == "split":
        entity, name = ents[step[1] % len(ents)]
        units = units_of(conn, bank, entity)
        if len(units) < 2:
            return None
        return ("split_entity", (bank, entity, units[:len(units) // 2], name if step[2] else f"{name} II"), {})
    return "forget_entity", (bank, ents[step[1] % len(ents)][0]), {}


@settings(max_examples=max(10, EXAMPLES // 5), deadline=None, derandomize=False, print_blob=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stream=STREAM)
def test_rebuild_equals_maintained_and_undo_restores_through_homonym_corrections(conn, stream):
    bank = f"homonyms-{uuid.uuid4().hex[:8]}"
    for day, step in enumerate(PRELUDE + stream, 1):
        if step[0] == "fact":
            insert_fact(conn, bank, [step[1], *step[2]], f"2026-03-{day:02d}T09:00:00Z")
        else:
            ents = people(conn, bank)
            planned = correction(conn, bank, step, ents) if ents else None
            if planned is None:
                continue
            function, args, kwargs = planned
            before = state(conn, bank)
            try:
                done = call(conn, function, *args, **kwargs)
            except psycopg.Error as exc:
                assert exc.sqlstate in REFUSED, (function, exc.sqlstate, str(exc))
                event(f"{function} refused ({exc.sqlstate})")
                assert state(conn, bank) == before, f"refused {function} changed the bank"
                continue
            assert differences(conn, bank)["differences"] == 0, (function, args)
            event(f"{function} applied" + (" keeping the name" if function == "split_entity" and step[2] else ""))
            if step[-1]:   # undo it at once: exactly as before
                call(conn, "undo_operation", bank, done["operation_id"])
                assert state(conn, bank) == before, (function, args)
        assert differences(conn, bank)["differences"] == 0, step
    event("homonyms in the end" if conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = %s"
                                                " AND homonym IS NOT NULL", (bank,)).fetchone()[0] else "no homonym")
    # Homonyms hold one invariant whatever happened: the first of a name has none, the others their own id.
    assert conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = %s"
                        " AND homonym IS NOT NULL AND homonym <> id", (bank,)).fetchone()[0] == 0
