"""Hostile input, generated (docs/design.md §8, docs/reliability.md).

Hypothesis feeds the public interfaces arbitrary Unicode (combining marks,
RTL, emoji, zero-width joiners, control characters, names around the
500-character limit), arbitrary JSON shapes and numbers. Every call either
succeeds or is refused with a documented SQLSTATE and a message that starts
with the argument's name - never XX000 or a Python traceback - and a refused
call changes nothing, not even the session's settings.

ER_PROPERTY_EXAMPLES (default 100) sets the examples per property."""

from __future__ import annotations

import json
import os
import re

import psycopg
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from entity_resolver.install import install
from shared import SCHEMA as ER
from settings import DEFAULTS as SETTING_DEFAULTS

EXAMPLES = int(os.environ.get("ER_PROPERTY_EXAMPLES", "100"))
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=False, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large, HealthCheck.large_base_example],
)

# The SQLSTATEs a bad argument may raise (docs/reliability.md):
DOCUMENTED = {
    "22001",  # string_data_right_truncation: a name over 500 characters
    "22004",  # null_value_not_allowed
    "22007",  # invalid_datetime_format: an event date that is no timestamp, or out of range
    "22023",  # invalid_parameter_value: everything else, naming argument and problem
}
ARGUMENT = re.compile(
    r"^(bank_id|mention|nearby|event_date|resolve|settings|labels|unit_id|entity_ids|seed_unit_ids"
    r"|max_results|mentions(\[\d+\](\.(text|nearby|event_date|resolve))?)?)"
    r"( \(inserted row \d+\))?: \S"
)

# -- strategies --------------------------------------------------------------

# Characters that break naive code: combining marks, joiners, bidi controls,
# RTL letters, emoji with modifiers, letters whose case mapping changes
# length, C0/C1 controls, quotes and SQL/format metacharacters.
SPICY = st.sampled_from([
    "\u0301", "\u0308", "\u200d", "\u200b", "\u200e", "\u202e", "\u2066", "\ufeff", "\u05d0",
    "\u0627", "\u0644", "\U0001F469", "\U0001F3FD", "\U0001F1EB", "\u2764", "\ufe0f", "\u0130", "\u0131",
    "\u00df", "\ufb03", "\u03a3", "\u03c2", "\u01c5", "\u1e9e", "\x01", "\x1b", "\x1f", "\x7f", "\x85",
    "\t", "\n", "\r", " ", "\u3000", "'", '"', "\\", "%", "_", ";", "$", "{", "}", ":", "0", "7",
    "a", "Z", "\u4e2d", "\uac00", "\U00010348", "\U0010fffd",
])
# Any code point PostgreSQL can store: no surrogates (the driver refuses
# them, tested below) and no NUL (text cannot hold it, tested below).
ANY_CHAR = st.characters(codec="utf-8", exclude_characters="\x00")
CHARS = st.one_of(ANY_CHAR, SPICY)
SHORT_TEXT = st.text(CHARS, max_size=30)
# Around the 500-character limit, built by repetition (fast to generate).
LONG_TEXT = st.builds(lambda chunk, n: (chunk * 600)[:n], st.text(CHARS, min_size=1, max_size=3),
                      st.integers(495, 505))
TEXT = st.one_of(SHORT_TEXT, SHORT_TEXT, SHORT_TEXT, LONG_TEXT,
                 st.sampled_from(["Alex", "alex morgan", "ALEX MORGAN", "Acme", "  ", "", "Room 101"]))
BANK = st.one_of(st.sampled_from(["team", "team", "other", "Ünïcødé bank"]), st.text(CHARS, max_size=110))
NUMBER = st.one_of(
    st.integers(-10**30, 10**30), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -0.0, 1, 0.5, 0.6, 200, 1e-320, 1.7976931348623157e308, 10**400]),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(SHORT_TEXT, st.sampled_from(
                                ["text", "nearby", "event_date", "resolve", "threshold", "key", "type",
                                 "values", "value", "fields", "attributes", "description"])),
                                inner, max_size=4)),
    max_leaves=12,
)
DATE_TEXT = st.one_of(st.sampled_from([
    "2024-05-01", "2024-05-01T10:00:00+02", "yesterday", "infinity", "-infinity", "epoch",
    "294277-01-01", "4714-11-24 BC", "0001-01-01", "9999-12-31 23:59:59", "2024-02-30", "now",
    "allballs", "", "J2451187", "1e10",
]), SHORT_TEXT)
ELEMENT = st.one_of(
    TEXT,
    st.fixed_dictionaries({"text": TEXT}, optional={
        "nearby": st.one_of(st.lists(TEXT, max_size=3), JSON),
        "event_date": st.one_of(DATE_TEXT, JSON),
        "resolve": st.one_of(st.booleans(), st.none(), JSON),
    }),
    JSON,
)
MENTIONS = st.one_of(st.lists(ELEMENT, max_size=6), JSON)
# Every setting a bank has, as the resolver defines them (plpython/settings.py).
SETTINGS_KEYS = list(SETTING_DEFAULTS)
SETTINGS = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(SETTINGS_KEYS), SHORT_TEXT), st.one_of(NUMBER, JSON), max_size=4),
    JSON,
)
LABEL_VALUE = st.fixed_dictionaries({"value": TEXT}, optional={"description": st.one_of(TEXT, JSON)})
ATTRIBUTE = st.one_of(
    st.fixed_dictionaries(
        {"key": st.one_of(st.sampled_from(["person", "topic", "Person", "a:b", "x y"]), SHORT_TEXT),
         "type": st.one_of(st.sampled_from(["value", "multi-values", "text", "multi-text", "map"]), JSON)},
        optional={"values": st.one_of(st.lists(LABEL_VALUE, max_size=3), JSON),
                  "fields": st.one_of(st.lists(st.fixed_dictionaries({"key": SHORT_TEXT}), max_size=3), JSON),
                  "description": st.one_of(TEXT, JSON)}),
    JSON,
)
LABELS = st.one_of(st.fixed_dictionaries({"attributes": st.one_of(st.lists(ATTRIBUTE, max_size=3), JSON)}), JSON)


# -- helpers -----------------------------------------------------------------

def state(conn) -> tuple:
    """Everything a call could change: every table, and the session's settings."""
    return conn.execute(
        f"""SELECT (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {ER}.banks t),
                   (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {ER}.entities t),
                   (SELECT count(*) FROM {ER}.unit_entities), (SELECT count(*) FROM {ER}.facts),
                   (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {ER}.entity_cooccurrences t),
                   (SELECT count(*) FROM {ER}.stats_queue),
                   current_setting('search_path'),
                   -- Unset, '' and 0.3 are all the default: a function's SET clause
                   -- leaves an empty placeholder behind until pg_trgm is loaded.
                   coalesce(nullif(current_setting('pg_trgm.similarity_threshold', true), ''), '0.3'),
                   current_setting('entity_resolver.flush_at_commit', true)"""
    ).fetchone()


def assert_clean_refusal(exc: BaseException) -> None:
    """A documented SQLSTATE, a message naming the argument, no Python in it."""
    assert isinstance(exc, psycopg.Error), repr(exc)
    message = exc.diag.message_primary or ""
    assert exc.sqlstate in DOCUMENTED, (exc.sqlstate, message)
    assert ARGUMENT.match(message), message
    for leak in ("Traceback", "plpy.", "spiexceptions", "Error:", 'File "'):
        assert leak not in message, message
    assert "Traceback" not in (exc.diag.context or ""), exc.diag.context


def call(conn, statement: str, params: tuple):
    """Run one call; on refusal check it is clean and that nothing changed."""
    before = state(conn)
    try:
        rows = conn.execute(statement, params).fetchall()
    except psycopg.Error as exc:
        assert_clean_refusal(exc)
        assert state(conn) == before
        event(f"refused {exc.sqlstate}")
        return None
    event("accepted")
    return rows


@pytest.fixture
def healthy(conn):
    """After the examples, the session still resolves normally (no poisoned caches)."""
    yield conn
    rows = conn.execute(f"SELECT * FROM {ER}.resolve_mentions('after', '[\"Alex Morgan\", \"alex morgan\"]')"
                        ).fetchall()
    assert rows[0][3] == rows[1][3]


# -- properties --------------------------------------------------------------

@PROPERTY
@given(bank=BANK, mention=TEXT, nearby=st.lists(TEXT, max_size=3), resolve=st.booleans())
def test_resolve_mention_succeeds_or_refuses_cleanly(healthy, bank, mention, nearby, resolve):
    rows = call(healthy, f"SELECT entity_id, canonical_name, created FROM {ER}.resolve_mention("
                         "%s, %s, %s, resolve => %s)", (bank, mention, nearby, resolve))
    if rows is None:
        return
    (entity_id, name, created), = rows
    stored = healthy.execute(f"SELECT canonical_name FROM {ER}.entities WHERE bank_id = %s AND id = %s",
                             (bank, entity_id)).fetchone()
    assert stored == (name,)
    if created and not resolve:
        assert name == mention                              # stored literally, spelled as given


@PROPERTY
@given(bank=BANK, mentions=MENTIONS)
def test_resolve_mentions_succeeds_or_refuses_cleanly(healthy, bank, mentions):
    rows = call(healthy, f"SELECT ord, mention, entity_id FROM {ER}.resolve_mentions(%s, %s)",
                (bank, Jsonb(mentions)))
    if rows is None:
        return
    assert [r[0] for r in rows] == list(range(1, len(mentions) + 1))
    texts = [m if isinstance(m, str) else m["text"] for m in mentions]
    assert [r[1] for r in rows] == texts
    ids = {r[2] for r in rows}
    assert healthy.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = %s AND id = ANY(%s)",
                           (bank, list(ids))).fetchone()[0] == len(ids)


@PROPERTY
@given(bank=BANK, mention=TEXT, nearby=st.lists(TEXT, max_size=3), date=st.one_of(st.none(), DATE_TEXT))
def test_explain_mention_writes_nothing_whatever_it_is_given(healthy, bank, mention, nearby, date):
    try:
        when = healthy.execute("SELECT %s::timestamptz", (date,)).fetchone()[0]
    except psycopg.Error:
        when = None     # PostgreSQL's own date parsing refused it: not the resolver's input
    before = state(healthy)
    try:
        healthy.execute(f"SELECT * FROM {ER}.explain_mention(%s, %s, %s, coalesce(%s, now()))",
                        (bank, mention, nearby, when)).fetchall()
    except psycopg.Error as exc:
        assert_clean_refusal(exc)
    assert state(healthy) == before


@PROPERTY
@given(bank=BANK, overrides=SETTINGS)
def test_configure_bank_stores_valid_settings_or_refuses_cleanly(healthy, bank, overrides):
    rows = call(healthy, f"SELECT {ER}.configure_bank(%s, %s)", (bank, Jsonb(overrides)))
    if rows is None:
        return
    effective = rows[0][0]
    assert set(effective) == set(SETTINGS_KEYS)
    stored = healthy.execute(f"SELECT settings FROM {ER}.banks WHERE bank_id = %s", (bank,)).fetchone()[0]
    assert set(stored) == set(overrides)
    for key, value in stored.items():
        if key == "attribute_kinds":
            # laid over the default kinds, not in their place
            assert effective[key] == {**effective[key], **value}
        else:
            assert effective[key] == value


@PROPERTY
@given(bank=BANK, config=LABELS)
def test_set_entity_labels_stores_valid_config_or_refuses_cleanly(healthy, bank, config):
    rows = call(healthy, f"SELECT {ER}.set_entity_labels(%s, %s)", (bank, Jsonb(config)))
    if rows is None:
        return
    stored = healthy.execute(f"SELECT entity_labels FROM {ER}.banks WHERE bank_id = %s", (bank,)).fetchone()[0]
    assert stored == rows[0][0]
    schema = healthy.execute(f"SELECT {ER}.entity_labels_json_schema(%s)", (bank,)).fetchone()[0]
    assert isinstance(schema, dict)


@PROPERTY
@given(bank=BANK, facts=st.lists(MENTIONS, min_size=1, max_size=3), date=st.sampled_from(
    ["2024-05-01", "2030-01-01T00:00:00Z", "1999-12-31"]))
def test_fact_inserts_link_every_mention_or_write_nothing(healthy, bank, facts, date):
    rows = call(healthy, f"INSERT INTO {ER}.facts (bank_id, content, mentions, event_date)"
                         " SELECT %s, 'generated', m, %s FROM jsonb_array_elements(%s) AS m RETURNING id",
                (bank, date, Jsonb(facts)))
    if rows is None:
        return
    for (fact_id,), mentions in zip(rows, facts):
        linked = healthy.execute(f"SELECT count(*) FROM {ER}.unit_entities WHERE bank_id = %s AND unit_id = %s",
                                 (bank, fact_id)).fetchone()[0]
        assert 1 <= linked <= len(mentions) or (linked == 0 and mentions == [])


@PROPERTY
@given(bank=st.one_of(st.none(), BANK), max_results=st.integers(-5, 200_000))
def test_every_function_refuses_a_bad_bank_id_or_count_cleanly(healthy, bank, max_results):
    for statement, params in [
        (f"SELECT * FROM {ER}.flush_stats(%s)", (bank,)),
        (f"SELECT * FROM {ER}.expand_units(%s, ARRAY[gen_random_uuid()], %s)", (bank, max_results)),
        (f"SELECT {ER}.link_unit(%s, gen_random_uuid(), '{{}}')", (bank,)),
        (f"SELECT {ER}.entity_labels_json_schema(%s)", (bank,)),
    ]:
        call(healthy, statement, params)


# Well-formed but hostile: always accepted, stored as written.
VALID_NAME = st.one_of(st.text(CHARS, min_size=1, max_size=40), st.builds(
    lambda chunk, n: (chunk * 500)[:n], st.text(CHARS, min_size=1, max_size=3), st.integers(400, 500),
)).filter(lambda t: t.strip() != "")
VALID_BANK = st.text(CHARS, min_size=1, max_size=100).filter(lambda t: t.strip() != "")


@PROPERTY
@given(bank=VALID_BANK, names=st.lists(VALID_NAME, min_size=1, max_size=6))
@example(bank="literal case twins", names=["Ä", "·", "ä"])    # CI found it: one entity, spelled as first written
def test_any_well_formed_name_is_accepted_and_stored_literally(healthy, bank, names):
    rows = healthy.execute(
        f"SELECT r.mention, r.canonical_name, r.created, lower(r.mention), lower(r.canonical_name)"
        f" FROM {ER}.resolve_mentions(%s, %s) AS r ORDER BY r.ord",
        (bank, Jsonb([{"text": n, "resolve": False} for n in names]))).fetchall()
    assert [r[0] for r in rows] == names
    first_written = {}
    for mention, canonical, created, key, canonical_key in rows:
        first_written.setdefault(key, mention)
        assert key == canonical_key                      # literal: exact case-insensitive match or new
        if created:                                      # new in this call: spelled as the batch first wrote it
            assert canonical == first_written[key]


@PROPERTY
@given(bank=VALID_BANK, facts=st.lists(st.lists(VALID_NAME, min_size=1, max_size=4), min_size=1, max_size=3))
def test_any_well_formed_fact_is_accepted_and_linked(healthy, bank, facts):
    ids = healthy.execute(f"INSERT INTO {ER}.facts (bank_id, mentions)"
                          " SELECT %s, m FROM jsonb_array_elements(%s) AS m RETURNING id",
                          (bank, Jsonb(facts))).fetchall()
    for (fact_id,), mentions in zip(ids, facts):
        linked = healthy.execute(f"SELECT count(*) FROM {ER}.unit_entities WHERE bank_id = %s AND unit_id = %s",
                                 (bank, fact_id)).fetchone()[0]
        assert 1 <= linked <= len(mentions)


# -- what the generators cannot reach ------------------------------------------

def test_lone_surrogates_are_refused_by_the_driver_before_anything_is_sent(conn):
    before = state(conn)
    with pytest.raises(UnicodeEncodeError):
        conn.execute(f"SELECT * FROM {ER}.resolve_mention('team', %s)", ("Alex \ud800",))
    # Inside JSON the surrogate travels as an escape; PostgreSQL's JSON parser refuses it.
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):
        conn.execute(f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (Jsonb(["Alex \ud800"]),))
    assert state(conn) == before


def test_nul_characters_are_refused_before_the_resolver_runs(conn):
    before = state(conn)
    with pytest.raises(psycopg.DataError, match="NUL"):
        conn.execute(f"SELECT * FROM {ER}.resolve_mention('team', %s)", ("Alex\x00Morgan",))
    with pytest.raises(psycopg.errors.UntranslatableCharacter):
        conn.execute(f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (Jsonb(["Alex\x00Morgan"]),))
    assert state(conn) == before


def test_the_longest_names_fit_the_unique_index_in_the_widest_encoding(conn):
    """500 four-byte characters in a bank id of 100 four-byte characters: the
    key (about 2,400 bytes) stays under the btree limit (about 2,700)."""
    bank = "\U0001F3E6" * 100
    name = "\U0001F469" * 499 + "\U0001F3FD"
    row = conn.execute(f"SELECT canonical_name, created FROM {ER}.resolve_mention(%s, %s)", (bank, name)).fetchone()
    assert row == (name, True)
    assert conn.execute(f"SELECT canonical_name FROM {ER}.resolve_mention(%s, %s, resolve => false)",
                        (bank, name)).fetchone() == (name,)


@pytest.mark.parametrize("statement, params, argument", [
    (f"SELECT * FROM {ER}.resolve_mention('team', %s)", ("x" * 501,), "mention"),
    (f"SELECT * FROM {ER}.resolve_mention('team', %s)", ("e" + "\u0301" * 500,), "mention"),
    (f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (Jsonb(["ok", "\U0001F469" * 501]),), "mentions[1]"),
    (f"SELECT * FROM {ER}.resolve_mentions('team', %s)", (Jsonb([{"text": "y" * 10_000}]),), "mentions[0].text"),
    (f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s)", (Jsonb(["z" * 501]),), "mentions[0]"),
])
def test_names_longer_than_500_characters_are_refused_naming_the_argument(conn, statement, params, argument):
    before = state(conn)
    with pytest.raises(psycopg.errors.StringDataRightTruncation) as failure:
        conn.execute(statement, params)
    assert failure.value.diag.message_primary.startswith(argument)
    assert "500" in failure.value.diag.message_primary
    assert state(conn) == before


@pytest.mark.parametrize("statement, raw, argument", [
    (f"SELECT * FROM {ER}.resolve_mentions('team', %s::jsonb)", "[" * 5000 + "]" * 5000, "mentions"),
    (f"SELECT {ER}.configure_bank('team', %s::jsonb)", '{"threshold": ' + "[" * 5000 + "]" * 5000 + "}",
     "settings"),
    (f"SELECT {ER}.set_entity_labels('team', %s::jsonb)", '{"attributes": ' + "[" * 5000 + "]" * 5000 + "}",
     "labels"),
    (f"INSERT INTO {ER}.facts (bank_id, mentions) VALUES ('team', %s::jsonb)", "[" * 5000 + "]" * 5000,
     "mentions"),
    (f"SELECT {ER}.configure_bank('team', %s::jsonb)", '{"threshold": 1e5000}', "settings"),
    (f"SELECT {ER}.configure_bank('team', %s::jsonb)", '{"max_candidates": 1' + "0" * 6000 + "}", "settings"),
    (f"SELECT * FROM {ER}.resolve_mentions('team', %s::jsonb)", '[{"text": "a", "resolve": 1e5000}]',
     "mentions[0].resolve"),
    (f"SELECT {ER}.set_entity_labels('team', %s::jsonb)",
     '{"attributes": [{"key": "k", "type": "value", "values": [{"value": 1e9999}]}]}', "labels"),
])
def test_json_too_deep_or_numbers_too_long_for_python_are_refused_cleanly(conn, statement, raw, argument):
    """jsonb holds 5,000 nested arrays and 10^9999; Python's json module does
    not (recursion limit, 4,300-digit integers). Bad input, not a crash."""
    before = state(conn)
    with pytest.raises(psycopg.Error) as failure:
        conn.execute(statement, (raw,))
    assert_clean_refusal(failure.value)
    assert failure.value.diag.message_primary.startswith(argument)
    assert state(conn) == before


def test_properties_hold_in_a_c_locale_database_too(c_locale_db):
    """The same refusals (and no crash) where lower() folds ASCII only."""
    conn = c_locale_db()
    with pytest.warns(UserWarning):
        install(conn)

    @PROPERTY
    @given(bank=BANK, mentions=MENTIONS)
    def check(bank, mentions):
        rows = call(conn, f"SELECT ord FROM {ER}.resolve_mentions(%s, %s)", (bank, Jsonb(mentions)))
        if rows is not None:
            assert len(rows) == len(mentions)

    check()
    rows = conn.execute(f"SELECT created FROM {ER}.resolve_mentions('c', %s)",
                        (json.dumps(["ZOË", "zoë", "Zoë"]),)).fetchall()
    assert rows  # resolved (how non-ASCII folds differs: docs/reliability.md)
