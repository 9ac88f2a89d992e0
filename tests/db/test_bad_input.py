"""Bad input (docs/design.md §8): a clear error naming the argument, and nothing written.

Every rejected call must raise an SQLSTATE of class 22 with a message that
starts with the argument's name, carry none of PL/Python's internals
("plpy", "Traceback"), and leave every table as it was. Text that merely looks
hostile is not bad input: it is stored exactly as given.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from bank_builders import SCHEMA, Bank, row_counts

LONG = "x" * 501


def mentions(value, bank_id="bank"):
    """resolve_mentions with ``value`` as its jsonb argument (None: SQL NULL)."""
    return f"SELECT * FROM {SCHEMA}.resolve_mentions(%s, %s::jsonb, now())", (
        bank_id, None if value is None else json.dumps(value))


def raw_mentions(text):
    """resolve_mentions with jsonb text that Python's json module cannot read as is."""
    return f"SELECT * FROM {SCHEMA}.resolve_mentions('bank', %s::jsonb, now())", (text,)


def mention(text, bank_id="bank", event_date="2024-06-03", resolve=True):
    return (f"SELECT * FROM {SCHEMA}.resolve_mention(%s, %s, '{{}}', %s::timestamptz, %s)",
            (bank_id, text, event_date, resolve))


def explain(text, bank_id="bank", event_date="2024-06-03"):
    return (f"SELECT * FROM {SCHEMA}.explain_mention(%s, %s, '{{}}', %s::timestamptz)",
            (bank_id, text, event_date))


def configure(settings, bank_id="bank"):
    return f"SELECT {SCHEMA}.configure_bank(%s, %s::jsonb)", (
        bank_id, None if settings is None else json.dumps(settings))


def labels(config, bank_id="bank"):
    return f"SELECT {SCHEMA}.set_entity_labels(%s, %s::jsonb)", (
        bank_id, None if config is None else json.dumps(config))


def group(**attr):
    return {"attributes": [{"key": "person", "type": "value", "values": [{"value": "sarah"}], **attr}]}


BAD_CALLS = [
    # resolve_mention
    pytest.param(mention(""), "22023", "mention", id="empty mention"),
    pytest.param(mention(" \t\n"), "22023", "mention", id="blank mention"),
    pytest.param(mention(None), "22004", "mention", id="null mention"),
    pytest.param(mention(LONG), "22001", "mention", id="mention over 500 characters"),
    pytest.param(mention("Alex", bank_id=""), "22023", "bank_id", id="empty bank id"),
    pytest.param(mention("Alex", bank_id="  "), "22023", "bank_id", id="blank bank id"),
    pytest.param(mention("Alex", bank_id=None), "22004", "bank_id", id="null bank id"),
    pytest.param(mention("Alex", bank_id="b" * 101), "22001", "bank_id", id="bank id over 100"),
    pytest.param(mention("Alex", resolve=None), "22004", "resolve", id="null resolve"),
    pytest.param(mention("Alex", event_date="infinity"), "22007", "event_date", id="infinite date"),
    pytest.param(mention("Alex", event_date="12000-01-01"), "22007", "event_date",
                 id="date past year 9999"),
    # resolve_mentions
    pytest.param(mentions(None), "22004", "mentions", id="null mentions"),
    pytest.param(mentions({"text": "Alex"}), "22023", "mentions", id="mentions an object"),
    pytest.param(mentions("Alex"), "22023", "mentions", id="mentions a string"),
    pytest.param(mentions(["Alex", 5]), "22023", "mentions[1]", id="element a number"),
    pytest.param(mentions(["Alex", None]), "22023", "mentions[1]", id="element null"),
    pytest.param(mentions([["Alex"]]), "22023", "mentions[0]", id="element an array"),
    pytest.param(mentions([{"text": "Alex", "near": []}]), "22023", "mentions[0]",
                 id="unknown key"),
    pytest.param(mentions([{"nearby": ["Acme"]}]), "22023", "mentions[0]", id="text missing"),
    pytest.param(mentions([{"text": 7}]), "22023", "mentions[0].text", id="text a number"),
    pytest.param(mentions([{"text": None}]), "22004", "mentions[0].text", id="text null"),
    pytest.param(mentions(["Alex", " "]), "22023", "mentions[1]", id="blank string element"),
    pytest.param(mentions([{"text": LONG}]), "22001", "mentions[0].text", id="text too long"),
    pytest.param(mentions([{"text": "Alex", "nearby": "Acme"}]), "22023", "mentions[0].nearby",
                 id="nearby a string"),
    pytest.param(mentions([{"text": "Alex", "nearby": ["Acme", 3]}]), "22023",
                 "mentions[0].nearby", id="nearby not all strings"),
    pytest.param(mentions([{"text": "Alex", "resolve": "no"}]), "22023", "mentions[0].resolve",
                 id="resolve a string"),
    pytest.param(mentions([{"text": "Alex", "resolve": 0}]), "22023", "mentions[0].resolve",
                 id="resolve a number"),
    pytest.param(mentions([{"text": "Alex", "event_date": 20240603}]), "22023",
                 "mentions[0].event_date", id="event_date a number"),
    pytest.param(mentions(["Acme", {"text": "Alex", "event_date": "yesterday-ish"}]), "22007",
                 "mentions[1].event_date", id="event_date not a date"),
    pytest.param(mentions([{"text": "Alex", "event_date": ""}]), "22007",
                 "mentions[0].event_date", id="event_date empty"),
    pytest.param(mentions([{"text": "Alex", "event_date": "-infinity"}]), "22007",
                 "mentions[0].event_date", id="event_date infinite"),
    pytest.param(raw_mentions("[" * 5000 + "]" * 5000), "22023", "mentions", id="nested too deeply"),
    pytest.param(raw_mentions('[{"text": "a", "resolve": 1e5000}]'), "22023", "mentions[0].resolve",
                 id="number past any float"),
    # explain_mention
    pytest.param(explain(""), "22023", "mention", id="explain empty mention"),
    pytest.param(explain("Alex", bank_id=""), "22023", "bank_id", id="explain empty bank id"),
    pytest.param(explain(LONG), "22001", "mention", id="explain mention too long"),
    pytest.param(explain("Alex", event_date="infinity"), "22007", "event_date",
                 id="explain infinite date"),
    # configure_bank
    pytest.param(configure({"treshold": 0.7}), "22023", 'settings: unknown key "treshold"', id="unknown setting"),
    pytest.param(configure({"threshold": 1.5}), "22023", 'settings: "threshold"', id="threshold over 1"),
    pytest.param(configure({"max_candidates": 0}), "22023", 'settings: "max_candidates"',
                 id="max_candidates 0"),
    pytest.param(configure({"recency_window_days": 0}), "22023",
                 'settings: "recency_window_days"',
                 id="zero recency window"),
    pytest.param(configure({"name_weight": "0.5"}), "22023", 'settings: "name_weight"',
                 id="weight a string"),
    pytest.param(configure([]), "22023", "settings", id="settings an array"),
    pytest.param((f"SELECT {SCHEMA}.configure_bank('bank', %s::jsonb)", ('{"threshold": 1e400}',)),
                 "22023", 'settings: "threshold"', id="setting past any float"),
    pytest.param(configure(None), "22004", "settings", id="settings null"),
    pytest.param(configure({}, bank_id=""), "22023", "bank_id", id="configure empty bank id"),
    # set_entity_labels
    pytest.param(labels(group(type="enum")), "22023", "labels", id="unknown label type"),
    pytest.param(labels({"attributes": [{"key": "person", "type": "value"}]}), "22023", "labels",
                 id="value group without values"),
    pytest.param(labels(group(key="per son")), "22023", "labels", id="key with a space"),
    pytest.param(labels(group(key="a:b")), "22023", "labels", id="key with a colon"),
    pytest.param(labels({"attributes": [group()["attributes"][0]] * 2}), "22023", "labels",
                 id="duplicate key"),
    pytest.param(labels({"attributs": []}), "22023", "labels", id="unknown property"),
    pytest.param(labels(None), "22004", "labels", id="labels null"),
    # entity_labels_json_schema
    pytest.param((f"SELECT {SCHEMA}.entity_labels_json_schema('')", ()), "22023", "bank_id",
                 id="schema of empty bank id"),
]


@pytest.mark.parametrize("call, sqlstate, argument", BAD_CALLS)
def test_bad_input_is_a_clear_error_that_writes_nothing(shared_conn, call, sqlstate, argument):
    query, params = call
    before = row_counts(shared_conn)

    with pytest.raises(psycopg.Error) as caught:
        shared_conn.execute(query, params)

    error = caught.value
    assert error.sqlstate == sqlstate
    assert error.diag.message_primary.startswith(argument)
    report = "\n".join(filter(None, [str(error), error.diag.message_detail, error.diag.context]))
    assert not any(word in report for word in ("plpy", "Traceback", "spiexceptions"))
    assert row_counts(shared_conn) == before


def test_a_bad_element_after_good_ones_writes_none_of_the_batch(bank):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        bank.conn.execute(*mentions(["Alex", "Acme", {"text": "renewal", "nearby": [None]}],
                                    bank_id=bank.id))

    assert bank.row_counts() == {**{t: 0 for t in bank.row_counts()}, "banks": 1}


def test_an_out_of_range_setting_leaves_the_previous_settings(bank):
    bank.configure({"threshold": 0.7})

    with pytest.raises(psycopg.errors.InvalidParameterValue):
        bank.conn.execute(*configure({"threshold": 0.8, "max_candidates": -1}, bank_id=bank.id))

    assert bank.settings() == {"threshold": 0.7}


# -- hostile-looking text is stored literally ----------------------------------------

HOSTILE = [
    "O'Brien",
    "'; DROP TABLE entity_resolver.entities; --",
    'Robert"); DROP TABLE entities;--',
    "$1 %s %(name)s {{ schema }}",
    "tab\there\nnew line\rcarriage",
    "bell\x07 and escape\x1b[31m",
    "🦄 Unicorn Labs 👩‍💻",
    "שלום עולם",
    "مرحبا بالعالم",
    "\u202eevil\u202c",
    "back\\slash \\x41",
    "🔥",  # no letters or digits: no trigrams, found again by its key
    "!!!",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_looking_text_is_stored_literally(bank, text):
    result = bank.resolve(text, [text, "'; DROP TABLE banks; --"])

    assert (result["canonical_name"], result["created"]) == (text, True)
    assert bank.names() == [text]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_looking_text_is_found_again(bank, text):
    first = bank.resolve(text)

    again = bank.resolve(text)

    assert (again["entity_id"], again["created"]) == (first["entity_id"], False)


def test_a_hostile_looking_bank_id_is_stored_literally(shared_conn):
    hostile = Bank(shared_conn, "'; DROP SCHEMA entity_resolver CASCADE; --")

    result = hostile.resolve("Alex")

    assert result["created"] is True
    assert hostile.names() == ["Alex"]
