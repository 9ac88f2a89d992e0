"""Per-bank settings on a real bank (docs/design.md §7), and the caller's own settings left alone."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from bank_builders import NOW, Bank

DEFAULTS = {
    "name_weight": 0.5, "cooccurrence_weight": 0.3, "recency_weight": 0.2, "threshold": 0.6,
    "recency_window_days": 7, "merge_min_similarity": 0.3, "candidate_similarity": 0.3,
    "max_candidates": 200, "intrabatch_similarity": 0.5, "intrabatch_max_names": 250,
    "expansion_per_entity_limit": 200, "max_mentions_per_call": 10000, "max_mentions_per_fact": 1000,
    "max_nearby_per_mention": 1000, "allow_undeclared_labels": False, "auto_reresolve": False, "reresolve_entities": "auto",
    "reresolve_replay": False,
    "profile": "enhanced", "bare_names": True, "name_variants": True, "org_suffixes": True,
    "typed_mentions": True, "context_by_entity": True, "alias_memory": True, "misspellings": True,
    "name_variants_add": [], "name_variants_remove": [], "org_suffixes_add": [], "org_suffixes_remove": [],
    "attribute_kinds": {"email": "identifying", "phone": "identifying", "url": "identifying",
                        "handle": "identifying", "birth_date": "distinguishing"},
}


def test_configure_bank_stores_overrides_and_returns_the_effective_settings(bank):
    effective = bank.configure({"threshold": 0.7, "max_candidates": 50})

    assert effective == {**DEFAULTS, "threshold": 0.7, "max_candidates": 50}
    assert bank.settings() == {"threshold": 0.7, "max_candidates": 50}


def test_configure_bank_replaces_earlier_overrides(bank):
    bank.configure({"threshold": 0.7})

    bank.configure({"max_candidates": 50})

    assert bank.settings() == {"max_candidates": 50}


def test_configure_bank_creates_the_bank(shared_conn):
    new = Bank(shared_conn, "configured first")

    new.configure({})

    assert new.settings() == {}


def test_a_lower_threshold_lets_the_name_alone_merge(bank):
    bank.configure({"threshold": 0.3})
    sarah_chen = bank.entity("Sarah Chen")

    result = bank.resolve("Sarah")

    assert (result["entity_id"], result["created"]) == (sarah_chen, False)


def test_a_longer_recency_window_counts_an_older_sighting(bank):
    # Seen 10 days ago: recency 0 under the 7-day default, 1 - 10/40 = 0.75
    # here, so 0.5·0.91 + 0.2·0.75 = 0.60.
    bank.configure({"recency_window_days": 40})
    john = bank.entity("John Smith", last_seen=NOW - timedelta(days=10))

    result = bank.resolve("John A Smith")

    assert result["score"] == pytest.approx(0.5 * 20 / 22 + 0.2 * 0.75)
    assert (result["entity_id"], result["created"]) == (john, False)


def test_weights_come_from_the_bank(bank):
    bank.configure({"name_weight": 1.0, "cooccurrence_weight": 0.0, "recency_weight": 0.0})
    bank.entity("Alexe", last_seen=NOW)

    result = bank.resolve("Alexa")

    assert result["score"] == pytest.approx(0.8)


def test_a_higher_floor_keeps_a_candidate_out(bank):
    # "alex"/"alex kim" is 0.56 by trigram: under a floor of 0.6 it is never merged.
    bank.configure({"merge_min_similarity": 0.6})
    bank.known_with("Alex Kim", ["React"], last_seen=NOW)

    result = bank.resolve("Alex", ["React"])

    assert (result["created"], result["score"]) == (True, None)


# -- the caller's pg_trgm.similarity_threshold ----------------------------------------

CALLS = [
    pytest.param("SELECT * FROM entity_resolver.resolve_mention(%s, 'Alex')", id="resolve_mention"),
    pytest.param("SELECT * FROM entity_resolver.resolve_mentions(%s, '[\"Alex\", \"Acme\"]')",
                 id="resolve_mentions"),
    pytest.param("SELECT * FROM entity_resolver.explain_mention(%s, 'Alex')", id="explain_mention"),
]


@pytest.fixture
def session(shared_conn):
    """A session of its own: these tests change session settings."""
    with psycopg.connect(shared_conn.info.dsn, autocommit=True) as conn:
        yield conn


def threshold(conn):
    return conn.execute("SHOW pg_trgm.similarity_threshold").fetchone()[0]


@pytest.mark.parametrize("call", CALLS)
def test_the_callers_similarity_threshold_is_unchanged_by_a_call(bank, session, call):
    bank.configure({"candidate_similarity": 0.45})
    session.execute("SET pg_trgm.similarity_threshold = 0.42")

    session.execute(call, (bank.id,))

    assert threshold(session) == "0.42"


@pytest.mark.parametrize("call", CALLS)
def test_the_callers_set_local_threshold_is_unchanged_inside_a_transaction(bank, session, call):
    bank.configure({"candidate_similarity": 0.45})
    session.execute("SET pg_trgm.similarity_threshold = 0.42")

    with session.transaction():
        session.execute("SET LOCAL pg_trgm.similarity_threshold = 0.17")
        session.execute(call, (bank.id,))
        inside = threshold(session)

    assert (inside, threshold(session)) == ("0.17", "0.42")


def test_the_callers_threshold_is_unchanged_after_a_rejected_call(session):
    session.execute("SET pg_trgm.similarity_threshold = 0.42")

    with pytest.raises(psycopg.errors.InvalidParameterValue):
        session.execute("SELECT * FROM entity_resolver.resolve_mentions('b', '[\"ok\", \"\"]')")

    assert threshold(session) == "0.42"


def test_the_callers_threshold_is_unchanged_when_pg_trgm_was_not_yet_loaded(bank, session):
    # A fresh session: the call itself loads pg_trgm and with it the setting.
    session.execute(CALLS[0].values[0], (bank.id,))

    assert threshold(session) == "0.3"
