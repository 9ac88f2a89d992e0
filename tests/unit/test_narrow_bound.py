"""The bound bench/narrow_bound.py classes keys by (issue 16, item 1) holds for the resolver's scoring."""

from datetime import datetime, timedelta, timezone

from hypothesis import given, strategies as st

from bench.narrow_bound import classify, partner_bound
from scoring import PRECISION, Candidate, score
from settings import DEFAULTS

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)
words = st.text(alphabet="abcdefghijk ", min_size=1, max_size=14)
weight = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(mention=words, name=words, trigram=st.floats(min_value=0.0, max_value=0.999),
       days=st.floats(min_value=-30, max_value=30, allow_nan=False),
       form=st.one_of(st.none(), words), how=st.sampled_from([None, "initial", "variant"]),
       context=st.frozensets(words, max_size=4), strangers=st.dictionaries(words, st.integers(1, 50), max_size=3),
       name_w=weight, cooc_w=weight, recency_w=weight)
def test_no_candidate_outside_identical_names_and_partners_scores_above_the_bound(
        mention, name, trigram, days, form, how, context, strangers, name_w, cooc_w, recency_w):
    # A candidate whose trigram set is not the mention's and whose partners are
    # none of the nearby names: whatever its name, form, dates or the weights.
    cfg = dict(DEFAULTS, name_weight=name_w, cooccurrence_weight=cooc_w, recency_weight=recency_w)
    partners = {p: d for p, d in strangers.items() if p not in context}
    cand = Candidate("e", name, trigram, NOW + timedelta(days=days), partners=partners, form=form, how=how)
    assert round(score(mention, cand, context, NOW, cfg).score, PRECISION) <= partner_bound(cfg)


def test_a_partner_can_score_above_the_bound():
    # The bound is not vacuous: co-occurrence lifts a partner over it.
    cand = Candidate("e", "alex kim", 0.6, NOW, partners={"acme": 1})
    assert score("alex kimm", cand, frozenset({"acme"}), NOW, DEFAULTS).score > partner_bound(DEFAULTS)


def test_the_default_bound_is_name_plus_recency_weight():
    assert partner_bound(DEFAULTS) == 0.7


def test_a_key_is_classed_by_all_its_mentions():
    bound = 0.7
    assert classify([(False, 1.0), (False, 1.0)], bound) == "identical"
    assert classify([(False, 1.0), (False, 0.75)], bound) == "partner_settles"
    assert classify([(False, 0.75), (False, 0.7)], bound) == "resolved_at_or_below_bound"
    assert classify([(False, 0.9), (True, 0.4)], bound) == "new"
    assert classify([(True, None)], bound) == "new"
    # 0.7000000000000001 rounds to the bound: not above it.
    assert classify([(False, 0.5 + 0.2 + 1e-16)], bound) == "resolved_at_or_below_bound"
