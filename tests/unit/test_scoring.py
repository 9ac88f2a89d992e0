"""Scoring, screening and the decision among candidates (docs/design.md §3.4-3.6)."""

import ast
import re
import sys
import types
from datetime import datetime, timedelta, timezone
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from decide import best_evaluation, decide, evaluate
from scoring import (BELOW_FLOOR, BELOW_THRESHOLD, CHOSEN, LABEL_ROW, OUTSCORED, WORD_MISMATCH,
                     Candidate, Evaluation, cooccurrence_score, name_similarity, passes_threshold,
                     recency_score)
from screen import identical_is_final, screen
from settings import DEFAULTS as ALL_DEFAULTS

# These tests pin the reference design's decisions (the "reference" profile);
# the enhanced profile's levers have their own tests (test_levers.py).
DEFAULTS = dict(ALL_DEFAULTS, profile="reference")

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=30)


def cand(name, trigram=0.5, last_seen=LONG_AGO, partners=None, is_label=False, id=None):
    """A candidate row as the probe returns it."""
    return Candidate(id or name, name, trigram, last_seen, is_label, partners or {})


def decisions(evaluations):
    return [ev.decision for ev in evaluations]


# -- signals -------------------------------------------------------------------------

def test_name_similarity_is_difflib_ratio_mention_first():
    assert name_similarity("alex", "alex kim") == SequenceMatcher(None, "alex", "alex kim").ratio()


def test_cooccurrence_without_nearby_names_is_zero():
    assert cooccurrence_score([], {"acme": 1}) == 0.0


def test_hub_partner_is_worth_almost_nothing():
    assert cooccurrence_score(["user"], {"user": 1400}) == pytest.approx(0.0267, abs=1e-4)


def test_selective_partner_is_worth_one():
    assert cooccurrence_score(["acme"], {"acme": 1}) == 1.0


def test_cooccurrence_is_divided_by_distinct_nearby_names():
    assert cooccurrence_score(["acme", "renewal", "react", "sprint 14"],
                              {"acme": 1, "renewal": 4}) == pytest.approx((1 + 0.5) / 4)


def test_repeated_nearby_name_counts_once():
    assert cooccurrence_score(["acme", "acme", "react"], {"acme": 1}) == 0.5


def test_mention_is_not_its_own_context():
    assert cooccurrence_score(["alex", "acme"], {"acme": 1}, mention="alex") == 1.0


def test_blank_nearby_names_are_ignored():
    assert cooccurrence_score(["", "  ", "acme"], {"acme": 1}) == 1.0


def test_degree_zero_counts_as_one():
    assert cooccurrence_score(["acme"], {"acme": 0}) == 1.0


def test_recency_same_moment_is_one():
    assert recency_score(NOW, NOW, 7) == 1.0


def test_recency_decays_linearly():
    assert recency_score(NOW, NOW - timedelta(days=3, hours=12), 7) == pytest.approx(0.5)


def test_recency_is_symmetric_in_time():
    assert recency_score(NOW - timedelta(days=2), NOW, 7) == recency_score(NOW, NOW - timedelta(days=2), 7)


def test_recency_at_the_window_is_zero():
    assert recency_score(NOW, NOW - timedelta(days=7), 7) == 0.0
    assert recency_score(NOW, NOW - timedelta(days=70), 7) == 0.0


def test_recency_with_a_missing_date_is_zero():
    assert recency_score(None, NOW, 7) == 0.0
    assert recency_score(NOW, None, 7) == 0.0


def test_recency_reads_naive_dates_as_utc():
    naive = datetime(2025, 3, 1, 0, 0)
    assert recency_score(naive, NOW, 7) == pytest.approx(1 - 0.5 / 7)


def test_recency_uses_the_window_setting():
    assert recency_score(NOW, NOW - timedelta(days=1), 2) == 0.5


# -- threshold -----------------------------------------------------------------------

def test_float_noise_above_threshold_passes():
    assert 0.4 + 0.2 == 0.6000000000000001
    assert passes_threshold(0.4 + 0.2, 0.6)


def test_exact_sum_at_threshold_passes():
    assert passes_threshold(0.3 + 0.3, 0.6)


def test_score_just_under_threshold_fails():
    assert not passes_threshold(0.599999, 0.6)


def test_float_noise_does_not_break_a_tie():
    first = Evaluation(cand("a"), True, 0.0, 0.0, 0.0, 0.3 + 0.3, BELOW_THRESHOLD)
    second = Evaluation(cand("b"), True, 0.0, 0.0, 0.0, 0.4 + 0.2, BELOW_THRESHOLD)
    assert best_evaluation([first, second]) is first


def test_best_evaluation_ignores_unscored():
    skipped = Evaluation(cand("a"), False, None, None, None, None, WORD_MISMATCH)
    assert best_evaluation([skipped]) is None


# -- evaluate: decisions ---------------------------------------------------------

def test_no_candidates_means_new_entity():
    assert evaluate("alex", [], [], NOW, DEFAULTS) == ([], None)


def test_identical_trigram_set_scores_one():
    evaluations, chosen = evaluate("wren 🎵", [cand("wren", trigram=1.0)], [], NOW, DEFAULTS)
    assert chosen is evaluations[0]
    assert chosen.score == 1.0 and chosen.decision == CHOSEN


def test_identical_trigram_set_still_reports_signals():
    (ev,), _ = evaluate("gpt-4", [cand("gpt 4", trigram=1.0, last_seen=NOW)], [], NOW, DEFAULTS)
    assert ev.tokens_compatible is True
    assert ev.name_similarity == name_similarity("gpt-4", "gpt 4")
    assert ev.cooccurrence == 0.0 and ev.recency == 1.0


def test_label_row_is_never_chosen():
    evaluations, chosen = evaluate("person:sarah", [cand("person:sarah", trigram=1.0, is_label=True)],
                                   [], NOW, DEFAULTS)
    assert chosen is None
    assert decisions(evaluations) == [LABEL_ROW]


def test_candidate_under_the_floor_is_skipped_despite_history():
    # "tigran"/"iran": 0.80 by sequence ratio, 0.20 by trigram.
    evaluations, chosen = evaluate("tigran", [cand("iran", trigram=0.2, last_seen=NOW,
                                                   partners={"acme": 1})],
                                   ["acme"], NOW, DEFAULTS)
    assert chosen is None
    assert decisions(evaluations) == [BELOW_FLOOR]
    assert evaluations[0].score is None


def test_float4_similarity_equal_to_the_floor_is_not_under_it():
    # pg_trgm's float4 0.35 arrives as 0.3499999940395355.
    settings = dict(DEFAULTS, merge_min_similarity=0.35)
    (ev,), _ = evaluate("acme", [cand("acme co", trigram=0.3499999940395355)], [], NOW, settings)
    assert ev.decision != BELOW_FLOOR


def test_different_first_names_are_a_word_mismatch():
    (ev,), chosen = evaluate("john smith", [cand("jane smith", trigram=0.47, last_seen=NOW)],
                             [], NOW, DEFAULTS)
    assert chosen is None
    assert (ev.decision, ev.tokens_compatible, ev.detail, ev.score) == (WORD_MISMATCH, False, "words", None)


def test_different_room_numbers_are_a_word_mismatch():
    (ev,), _ = evaluate("room 101", [cand("room 102", trigram=0.6, last_seen=NOW)], [], NOW, DEFAULTS)
    assert (ev.decision, ev.detail) == (WORD_MISMATCH, "numbers")


def test_score_is_the_weighted_sum():
    c = cand("alex kim", last_seen=NOW - timedelta(days=1), partners={"acme": 4})
    (ev,), _ = evaluate("alex", [c], ["acme", "react"], NOW, DEFAULTS)
    name = SequenceMatcher(None, "alex", "alex kim").ratio()
    assert ev.name_similarity == name
    assert ev.cooccurrence == 0.25
    assert ev.recency == pytest.approx(6 / 7)
    assert ev.score == 0.5 * name + 0.3 * 0.25 + 0.2 * ev.recency


def test_weights_come_from_settings():
    settings = dict(DEFAULTS, name_weight=1.0, cooccurrence_weight=0.0, recency_weight=0.0)
    (ev,), _ = evaluate("alex", [cand("alex kim", last_seen=NOW)], [], NOW, settings)
    assert ev.score == ev.name_similarity


def test_hub_partner_cannot_carry_a_weak_name():
    alex_kim = cand("alex kim", last_seen=NOW, partners={"user": 1400})
    (ev,), chosen = evaluate("alex", [alex_kim], ["user"], NOW, DEFAULTS)
    assert chosen is None
    assert ev.decision == BELOW_THRESHOLD and ev.score < 0.6


def test_selective_partner_carries_a_weak_name():
    alex_kim = cand("alex kim", last_seen=NOW, partners={"acme": 1})
    (ev,), chosen = evaluate("alex", [alex_kim], ["acme"], NOW, DEFAULTS)
    assert chosen is ev and ev.decision == CHOSEN


def test_graph_picks_between_two_people_of_one_first_name():
    # Next to Acme and the renewal, a bare "Alex" is Alex Morgan.
    kim = cand("alex kim", trigram=0.4, last_seen=NOW, partners={"react": 1, "sprint 14": 2})
    morgan = cand("alex morgan", trigram=0.36, last_seen=NOW, partners={"acme": 1, "renewal": 1})
    evaluations, chosen = evaluate("alex", [kim, morgan], ["acme", "renewal"], NOW, DEFAULTS)
    assert chosen.candidate is morgan
    assert decisions(evaluations) == [BELOW_THRESHOLD, CHOSEN]


def test_first_candidate_wins_a_tie():
    a = cand("acme co", id="a", trigram=1.0)
    b = cand("acme, co", id="b", trigram=1.0)
    evaluations, chosen = evaluate("acme co.", [a, b], [], NOW, DEFAULTS)
    assert chosen.candidate is a
    assert decisions(evaluations) == [CHOSEN, OUTSCORED]


def test_runner_up_under_threshold_is_below_threshold():
    strong = cand("wren", trigram=1.0)
    weak = cand("wrens", trigram=0.5)
    evaluations, _ = evaluate("wren 🎵", [weak, strong], [], NOW, DEFAULTS)
    assert decisions(evaluations) == [BELOW_THRESHOLD, CHOSEN]


def test_best_under_threshold_leaves_all_below_threshold():
    evaluations, chosen = evaluate("alex", [cand("alex kim"), cand("alex morgan")], [], NOW, DEFAULTS)
    assert chosen is None
    assert decisions(evaluations) == [BELOW_THRESHOLD, BELOW_THRESHOLD]


def test_one_evaluation_per_candidate_in_probe_order():
    cands = [cand("x", is_label=True), cand("alex", trigram=0.1), cand("alex kim"), cand("jane smith")]
    evaluations, _ = evaluate("john smith", cands, [], NOW, DEFAULTS)
    assert [ev.candidate for ev in evaluations] == cands


# -- evaluate: properties --------------------------------------------------------------

NAME = st.lists(st.one_of(st.text("abcdeo ", min_size=1, max_size=7), st.sampled_from(["1", "2", "3"])),
                min_size=1, max_size=3).map(" ".join).filter(lambda s: s.strip())
NEARBY = st.lists(st.sampled_from(["acme", "user", "react", "renewal", "alex"]), max_size=4)
CANDIDATE = st.builds(
    Candidate,
    id=st.integers(),
    key=NAME,
    trigram_similarity=st.one_of(st.sampled_from([0.0, 0.3, 0.5, 1.0]), st.floats(0.0, 1.0)),
    last_seen=st.one_of(st.none(), st.integers(-10 * 24, 10 * 24).map(lambda h: NOW + timedelta(hours=h))),
    is_label=st.booleans(),
    partners=st.dictionaries(st.sampled_from(["acme", "user", "react", "renewal"]),
                             st.integers(0, 2000), max_size=3),
)
THRESHOLD = st.sampled_from([0.0, 0.3, 0.5, 0.6, 0.8, 1.0])


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(NAME, st.lists(CANDIDATE, max_size=6), NEARBY, THRESHOLD)
def test_evaluate_chooses_only_a_scored_candidate_that_passes(mention, cands, nearby, threshold):
    settings = dict(DEFAULTS, threshold=threshold)
    evaluations, chosen = evaluate(mention, cands, nearby, NOW, settings)
    assert len(evaluations) == len(cands)
    chosen_ones = [ev for ev in evaluations if ev.decision == CHOSEN]
    assert chosen_ones == ([chosen] if chosen is not None else [])
    if chosen is not None:
        assert not chosen.candidate.is_label
        assert chosen.tokens_compatible is True
        assert round(chosen.candidate.trigram_similarity, 6) >= settings["merge_min_similarity"]
        assert passes_threshold(chosen.score, threshold)


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(NAME, st.lists(CANDIDATE, max_size=6), NEARBY, THRESHOLD)
def test_chosen_is_the_first_best_score(mention, cands, nearby, threshold):
    evaluations, chosen = evaluate(mention, cands, nearby, NOW, dict(DEFAULTS, threshold=threshold))
    scored = [ev for ev in evaluations if ev.score is not None]
    if chosen is None:
        assert all(ev.decision == BELOW_THRESHOLD for ev in scored)
        assert not scored or not passes_threshold(max(ev.score for ev in scored), threshold)
        return
    top = max(round(ev.score, 6) for ev in scored)
    assert round(chosen.score, 6) == top
    before = scored[:scored.index(chosen)]
    assert all(round(ev.score, 6) < top for ev in before)
    for ev in scored:
        if ev is not chosen:
            assert ev.decision == (OUTSCORED if passes_threshold(ev.score, threshold) else BELOW_THRESHOLD)


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(NAME, st.lists(CANDIDATE, max_size=6), NEARBY)
def test_skipped_candidates_carry_no_score(mention, cands, nearby):
    evaluations, _ = evaluate(mention, cands, nearby, NOW, DEFAULTS)
    for ev in evaluations:
        if ev.decision in (LABEL_ROW, BELOW_FLOOR, WORD_MISMATCH):
            assert ev.score is None
        else:
            assert None not in (ev.name_similarity, ev.cooccurrence, ev.recency, ev.score)


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(NAME, st.lists(CANDIDATE, max_size=6), NEARBY, st.randoms(use_true_random=False))
def test_scores_do_not_depend_on_nearby_order_or_repeats(mention, cands, nearby, rnd):
    shuffled = nearby * 2
    rnd.shuffle(shuffled)
    first, _ = evaluate(mention, cands, nearby, NOW, DEFAULTS)
    second, _ = evaluate(mention, cands, shuffled, NOW, DEFAULTS)
    assert [(e.score, e.decision) for e in first] == [(e.score, e.decision) for e in second]


# -- stop_at_identical: resolution's shortcut, explain's full evaluation ------------------

def test_stop_at_identical_stops_after_the_first_passing_identical_name():
    cands = [cand("flight 5.1", trigram=1.0), cand("flight 1.5", trigram=1.0, id="a"),
             cand("flight 1.5", trigram=1.0, id="b"), cand("flight 1.6", trigram=0.6)]
    full, best_full = evaluate("flight 1.5", cands, [], NOW, DEFAULTS)
    short, best_short = evaluate("flight 1.5", cands, [], NOW, DEFAULTS, stop_at_identical=True)
    # 5.1 fails the numbers rule and does not stop scoring; the first 1.5 does.
    assert decisions(short) == [WORD_MISMATCH, CHOSEN]
    assert decisions(full) == [WORD_MISMATCH, CHOSEN, OUTSCORED, WORD_MISMATCH]
    assert best_short.candidate is best_full.candidate and best_short.score == best_full.score == 1.0


def test_stop_at_identical_is_off_when_the_weights_can_add_up_to_more_than_one():
    heavy = dict(DEFAULTS, name_weight=0.6, cooccurrence_weight=0.5, recency_weight=0.3)
    cands = [cand("wren 🎵", trigram=1.0), cand("wrenn", trigram=0.57, last_seen=NOW, partners={"acme": 1})]
    assert not identical_is_final(heavy)
    _, best = evaluate("wren", cands, ["acme"], NOW, heavy, stop_at_identical=True)
    # 0.6 * 0.89 + 0.5 + 0.3 > 1.0: the later candidate outscores the identical one.
    assert best.candidate.key == "wrenn" and best.score > 1.0


def test_identical_is_final_follows_the_float_sum_of_the_weights():
    assert identical_is_final(DEFAULTS)
    assert identical_is_final(dict(DEFAULTS, name_weight=0.7, cooccurrence_weight=0.2, recency_weight=0.1))
    # 0.34 + 0.56 + 0.1 is 1.0000000000000002 in binary floating point: a
    # perfect later candidate would report a best score above the 1.0 of an
    # identical name.
    heavy = dict(DEFAULTS, name_weight=0.34, cooccurrence_weight=0.56, recency_weight=0.1)
    assert not identical_is_final(heavy)
    cands = [cand("wren 🎵", trigram=1.0), cand("wren", trigram=0.99, last_seen=NOW, partners={"acme": 1})]
    evaluations, best = evaluate("wren", cands, ["acme"], NOW, heavy, stop_at_identical=True)
    assert best.candidate.key == "wren 🎵"
    assert max(ev.score for ev in evaluations) == 1.0000000000000002


WEIGHT = st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]), st.floats(0.0, 1.0))
EVAL_SETTINGS = st.fixed_dictionaries({
    "name_weight": WEIGHT, "cooccurrence_weight": WEIGHT, "recency_weight": WEIGHT,
    "threshold": THRESHOLD, "merge_min_similarity": st.sampled_from([0.0, 0.3, 0.5, 1.0]),
}).map(lambda s: dict(DEFAULTS, **s))
MANY = st.lists(CANDIDATE, max_size=8).map(
    lambda cs: sorted(cs, key=lambda c: -c.trigram_similarity))  # probe order, identical names first


@pytest.mark.slow
@hsettings(max_examples=3000)
@given(NAME, MANY, NEARBY, EVAL_SETTINGS)
def test_stop_at_identical_changes_neither_the_choice_nor_the_best_score(mention, cands, nearby, settings):
    full, best_full = evaluate(mention, cands, nearby, NOW, settings)
    short, best_short = evaluate(mention, cands, nearby, NOW, settings, stop_at_identical=True)
    assert (best_short and best_short.candidate) is (best_full and best_full.candidate)
    assert (best_short and best_short.score) == (best_full and best_full.score)
    top = max((ev.score for ev in full if ev.score is not None), default=None)
    assert max((ev.score for ev in short if ev.score is not None), default=None) == top
    # The evaluations it makes are the full evaluation's, cut short.
    assert [(e.candidate, e.score, e.decision) for e in short] == \
        [(e.candidate, e.score, e.decision) for e in full[:len(short)]]
    if not identical_is_final(settings):
        assert len(short) == len(full)


@pytest.mark.slow
@hsettings(max_examples=1000)
@given(NAME, MANY, NEARBY, EVAL_SETTINGS, st.booleans())
def test_evaluate_is_screen_then_decide(mention, cands, nearby, settings, stop):
    whole, best = evaluate(mention, cands, nearby, NOW, settings, stop_at_identical=stop)
    parts, best_parts = decide(mention, screen(mention, cands, settings, stop), nearby, NOW, settings)
    assert [(e.candidate, e.score, e.decision, e.detail) for e in whole] == \
        [(e.candidate, e.score, e.decision, e.detail) for e in parts]
    assert (best and best.candidate) is (best_parts and best_parts.candidate)
