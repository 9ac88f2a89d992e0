"""Issue 34's product decision, in-process: a candidate outside the mention's neighbourhood never
changes its decision (decide.neighbourhood_suffices, docs/design.md 3.11).

The neighbourhood (decide.in_neighbourhood): the same name (identical trigram sets, or one
organisation's name, legal forms aside), a partner of the context, an entity seen within the
recency window. Any other candidate scores name_weight times its name signal at most; under the
default weights that cannot reach the threshold, and no lever of the enhanced profile lets it
decide. So a resolver may read the neighbourhood's candidates only, as long as it finds all of them.
"""

import random
from datetime import timedelta

from hypothesis import given, settings as hsettings, strategies as st

import probe
import scoring
import words
from decide import (HUB_PARTNERS, evaluate, fit_words, hubs_unread_suffice, in_neighbourhood,
                    neighbourhood_suffices, new_entity_flags)
from screen import screen
from scoring import Candidate
from test_levers import DATA, ENHANCED, NOW, REFERENCE

FIRST = ["alex", "alx", "sarah", "sara", "ana", "anna", "bob", "robert", "rob", "kim", "r."]
LAST = ["kim", "chen", "chan", "silva", "costa", "smith", "smyth"]
ORGS = ["acme", "acme inc", "acme corporation", "acme bank", "initech", "initech llc", "innotech"]
CONTEXT = ["oslo", "the team", "project x", "acme", "berlin"]


def _trigrams(name):
    """pg_trgm's trigram set of a lowered name, for ASCII words (enough to order and floor candidates)."""
    out = set()
    for word in "".join(ch if ch.isalnum() else " " for ch in name).split():
        padded = "  " + word + " "
        out.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def trigram_similarity(a, b):
    ta, tb = _trigrams(a), _trigrams(b)
    if not ta or not tb:
        return 0.0
    common = len(ta & tb)
    return common / (len(ta) + len(tb) - common)


def _decision(evaluations, best, key):
    """What the resolver does with a mention: the entity chosen, or a new one and how it is flagged."""
    if best is not None:
        return ("resolved", best.candidate.id)
    return ("new", *new_entity_flags(evaluations, key))


def _far(cand, mention, nearby, event_date, cfg, mention_type):
    """Whether a candidate, screened and scored alone, is scored and outside the neighbourhood."""
    (screened, skipped), = screen(mention, [cand], cfg, False, mention_type, DATA)
    if skipped is not None:
        return False
    return not in_neighbourhood(scoring.score(mention, screened, scoring.distinct_nearby(nearby, mention),
                                              event_date, cfg))


def _unread(cand, mention, nearby, event_date, cfg, mention_type):
    """Whether a resolver reading the neighbourhood leaves a candidate unread: scored, not the same name,
    not seen within the window, a partner of no nearby name but hubs, and holding none of a one-word
    mention's fit words."""
    (screened, skipped), = screen(mention, [cand], cfg, False, mention_type, DATA)
    if skipped is not None:
        return False
    context = scoring.distinct_nearby(nearby, mention)
    ev = scoring.score(mention, screened, context, event_date, cfg)
    return not (scoring.is_identical(ev.candidate) or ev.recency > 0
                or any(n in context and d <= HUB_PARTNERS for n, d in ev.candidate.partners.items())
                or fit_words(mention, cfg, DATA) & set(words.split_words(ev.candidate.key)))


# Words one letter or one nickname apart, which the screen lets through.
SIMILAR = {"alex": ["alx", "alexa"], "alx": ["alex"], "sarah": ["sara"], "sara": ["sarah"], "ana": ["anna"],
           "anna": ["ana"], "bob": ["robert", "bobby"], "robert": ["bob", "r.", "rob"], "kim": ["kym"],
           "chen": ["chan", "cheng"], "chan": ["chen"], "silva": ["silvia"], "costa": ["acosta"],
           "smith": ["smyth", "smithe"], "smyth": ["smith"], "acme": ["acmee"], "initech": ["innotech"]}


def _near_spelling(rng, mention):
    """The mention with one word spelt or named another way, or (one word) a full name holding it."""
    ws = mention.split()
    if len(ws) == 1 and rng.random() < 0.5:
        return f"{ws[0]} {rng.choice(LAST)}"
    i = rng.randrange(len(ws))
    ws[i] = rng.choice(SIMILAR.get(ws[i], [ws[i]]))
    return " ".join(ws)


@st.composite
def cases(draw):
    """A mention, its fact's other names, and candidates as a probe would return them (probe order)."""
    rng = random.Random(draw(st.integers(0, 2 ** 32 - 1)))
    org = rng.random() < 0.25
    if org:
        mention = rng.choice(ORGS)
    elif rng.random() < 0.35:
        mention = rng.choice(FIRST)
    else:
        mention = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    nearby = rng.sample(CONTEXT, rng.randint(0, 3))
    names_seen = set()
    cands = []
    for n in range(rng.randint(1, 9)):
        if rng.random() < 0.5:
            name = _near_spelling(rng, mention)
        elif rng.random() < 0.3:
            name = rng.choice(ORGS)
        elif rng.random() < 0.3:
            name = rng.choice(FIRST)
        else:
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        sim = trigram_similarity(mention, name)
        if sim < 0.3:
            continue
        etype = rng.choice([None, None, None, "person", "place", "organization"])
        homonym = (name, etype) in names_seen
        names_seen.add((name, etype))
        # About half the candidates far: seen a week ago or more (or never dated), next to none
        # of the context, or to hubs of it only.
        days = rng.choice([0.2, 1, 3, 6.9, 7, 30, 200, 400]) if rng.random() < 0.85 else None
        pool = CONTEXT if rng.random() < 0.5 else ["paris", "hub", "rome"]
        degrees = [1, 2, 4, 16, 40] if rng.random() < 0.6 else [HUB_PARTNERS, HUB_PARTNERS + 1, 1500, 15000]
        partners = {p: rng.choice(degrees) for p in rng.sample(pool, rng.randint(0, 3))}
        cands.append(Candidate(f"e{n}", name, sim, None if days is None else NOW - timedelta(days=days),
                               partners=partners, entity_type=etype, homonym=homonym))
    cands.sort(key=probe.order_key)
    ids = [c.id for c in cands]
    judged = {frozenset(rng.sample(ids, 2)) for _ in range(rng.randint(0, 2))} if len(ids) >= 2 else set()
    mention_type = rng.choice([None, None, "person", "organization"])
    return mention, nearby, cands, judged, mention_type


def _decide(mention, nearby, cands, judged, mention_type, cfg, stop):
    evaluations, best = evaluate(mention, cands, nearby, NOW, cfg, stop, mention_type, DATA,
                                 lambda n: 500 >= n, None, lambda a, b: frozenset((a, b)) in judged)
    return _decision(evaluations, best, mention)


@hsettings(max_examples=600, deadline=None)
@given(cases(), st.booleans())
def test_a_candidate_outside_the_neighbourhood_never_changes_a_decision(case, stop):
    mention, nearby, cands, judged, mention_type = case
    for cfg in (ENHANCED, REFERENCE):
        assert neighbourhood_suffices(cfg)
        near = [c for c in cands if not _far(c, mention, nearby, NOW, cfg, mention_type)]
        full = _decide(mention, nearby, cands, judged, mention_type, cfg, stop)
        only = _decide(mention, nearby, near, judged, mention_type, cfg, stop)
        assert only == full, (cfg["profile"], [c.key for c in cands], [c.key for c in near])


def test_name_alone_reaching_the_threshold_lets_a_far_candidate_decide():
    # The one condition: with name_weight 0.7, "sara chen" seen long ago, next to nothing of the
    # context, scores 0.7 x 0.95 for "sarah chen" and is chosen. Under it, the neighbourhood no
    # longer suffices.
    cfg = dict(ENHANCED, name_weight=0.7, cooccurrence_weight=0.2, recency_weight=0.1)
    assert not neighbourhood_suffices(cfg)
    far = Candidate("e1", "sara chen", trigram_similarity("sarah chen", "sara chen"), NOW - timedelta(days=300))
    assert _far(far, "sarah chen", ["oslo"], NOW, cfg, None)
    _, best = evaluate("sarah chen", [far], ["oslo"], NOW, cfg, names=DATA)
    assert best is not None and best.candidate.id == "e1"
    # Under the default weights the same candidate is not chosen.
    _, best = evaluate("sarah chen", [far], ["oslo"], NOW, ENHANCED, names=DATA)
    assert best is None


def test_an_organisation_with_a_legal_form_is_of_the_neighbourhood_wherever_it_is():
    # "acme" and "Acme Inc" are one organisation's name (org_suffixes): scored 1.0 at a trigram
    # similarity of 0.56, seen 300 days ago, next to nothing. A resolver reading the
    # neighbourhood must look such names up as it looks up identical ones.
    old = NOW - timedelta(days=300)
    cand = Candidate("e1", "acme inc", trigram_similarity("acme", "acme inc"), old)
    (screened, skipped), = screen("acme", [cand], ENHANCED, False, None, DATA)
    assert skipped is None and screened.how == "org_suffix" and scoring.is_identical(screened)
    assert not _far(cand, "acme", [], NOW, ENHANCED, None)
    _, best = evaluate("acme", [cand], [], NOW, ENHANCED, names=DATA)
    assert best is not None and best.score == 1.0



@hsettings(max_examples=600, deadline=None)
@given(cases(), st.booleans())
def test_a_hub_s_partner_no_one_word_name_fits_never_changes_a_decision(case, stop):
    # What a neighbourhood resolver leaves unread: under the defaults a candidate next to hubs only
    # is far from the threshold and from any lever's context; a one-word name's fits, which it
    # could change, hold the mention's fit words, and are read as names holding them.
    mention, nearby, cands, judged, mention_type = case
    assert hubs_unread_suffice(ENHANCED)
    read = [c for c in cands if not _unread(c, mention, nearby, NOW, ENHANCED, mention_type)]
    assert _decide(mention, nearby, read, judged, mention_type, ENHANCED, stop) == \
        _decide(mention, nearby, cands, judged, mention_type, ENHANCED, stop), ([c.key for c in cands], [c.key for c in read])


def test_a_bare_name_still_fits_a_hub_s_partner():
    # "harry xu" was seen once, long ago, with "email" only, which 1,500 entities are seen with. He
    # is of a bare "harry"'s neighbourhood all the same (a fit: with another Harry of the
    # neighbourhood, the name is ambiguous, not the recent one's), so a resolver that leaves hubs'
    # partners unread must read him as a name holding "harry"; for "harri xu" it need not.
    old = NOW - timedelta(days=300)
    cand = Candidate("e1", "harry xu", trigram_similarity("harry", "harry xu"), old, partners={"email": 1500})
    assert not _far(cand, "harry", ["email"], NOW, ENHANCED, None)
    assert not _unread(cand, "harry", ["email"], NOW, ENHANCED, None)
    assert _unread(cand, "harri xu", ["email"], NOW, ENHANCED, None)
    near = Candidate("e1", "harry xu", cand.trigram_similarity, old, partners={"email": HUB_PARTNERS})
    assert not _unread(near, "harri xu", ["email"], NOW, ENHANCED, None)
    # Weights that let a hub's co-occurrence carry a name over the threshold: its partners are read.
    heavy = dict(ENHANCED, name_weight=0.58, cooccurrence_weight=0.9, recency_weight=0.1)
    assert neighbourhood_suffices(heavy) and not hubs_unread_suffice(heavy)
