"""Levers that hold on data they were not tuned on (issue 31 item 6).

The held-out families of bench/heldout.py (name pools and seeds bench/corpora
does not use, the three kinds of wrong merge the enhanced profile used to add
on held-out labelled streams) are replayed under the reference profile, under
each enhanced lever alone and under the whole enhanced profile: none of them
may make a wrong merge the reference does not make, on any stream.
"""

from __future__ import annotations

import pytest

from bench import heldout

# Nine configurations, two seeds, three families each: minutes.
pytestmark = pytest.mark.slow

SEEDS = heldout.HELDOUT_SEEDS[:2]

# No case is left (docs/accuracy.md, "Held-out families"): on seed 7101 the
# bare "Hazel"s nothing told apart at one employer used to make a new entity
# "Hazel" that gathered both Hazels (9 wrong merges against the reference's
# 8); they now take the better score, as the reference does.


@pytest.fixture(scope="module")
def measured(er_proc):
    import psycopg
    from psycopg.conninfo import make_conninfo
    from pytest_postgresql.janitor import DatabaseJanitor

    from entity_resolver.install import install

    janitor = DatabaseJanitor(user=er_proc.user, host=er_proc.host, port=er_proc.port,
                              dbname="heldout_levers", template_dbname=er_proc.template_dbname)
    dsn = make_conninfo(host=er_proc.host, port=er_proc.port, user=er_proc.user, dbname="heldout_levers")
    with janitor:
        with psycopg.connect(dsn, autocommit=True) as conn:
            install(conn)
        yield heldout.measure(dsn, SEEDS)


def test_no_lever_adds_a_wrong_merge_on_any_held_out_stream(measured):
    ref = measured["configs"]["reference"]
    worse = {(name, seed, family): (ref[seed][family]["wrong_merges"], r["wrong_merges"])
             for name, per_seed in measured["configs"].items() for seed, fams in per_seed.items()
             for family, r in fams.items() if r["wrong_merges"] > ref[seed][family]["wrong_merges"]}
    assert worse == {}


def test_the_enhanced_profile_scores_at_least_the_reference_on_every_held_out_stream(measured):
    ref, enh = measured["configs"]["reference"], measured["configs"]["enhanced"]
    worse = {(seed, family): (ref[seed][family]["bcubed_f1"], r["bcubed_f1"])
             for seed, fams in enh.items() for family, r in fams.items()
             if r["bcubed_f1"] < ref[seed][family]["bcubed_f1"]}
    assert worse == {}
    # ... and gains over all of them.
    assert sum(r["bcubed_f1"] for fams in enh.values() for r in fams.values()) > \
        sum(r["bcubed_f1"] for fams in ref.values() for r in fams.values()) + 0.1


def test_two_given_names_a_letter_apart_stay_two_people_in_the_enhanced_profile(measured):
    # The reference reads "Jean Kerr" as "Joan Kerr" misspelt; name_variants knows both names.
    for seed, fams in measured["configs"]["enhanced"].items():
        assert fams["given_name_neighbours"]["wrong_merges"] == 0, seed
        assert measured["configs"]["reference"][seed]["given_name_neighbours"]["wrong_merges"] > 0, seed
