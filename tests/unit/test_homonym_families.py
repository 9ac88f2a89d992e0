"""The homonym families (issue 31: two people, one name) are what bench/generate_corpora.py claims."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from bench import generate_corpora

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "bench" / "corpora"
HOMONYMS = ("homonym_dates", "homonym_emails", "homonym_context")
FILES = generate_corpora.generate()


def facts(family, files=FILES):
    return [json.loads(line) for line in files[generate_corpora.corpus_file(family)].splitlines()]


def people(family):
    """Person mentions (gold "p:<name>-<n>"), in stream order."""
    return [m for fact in facts(family) for m in fact["mentions"] if m["gold"].startswith("p:")]


def name_of(gold):
    return gold.rsplit("-", 1)[0]        # "p:maria-schmidt-2" -> "p:maria-schmidt"


def shared_share(family):
    """The share of the people whose name another person of the bank also has."""
    by_name = defaultdict(set)
    for m in people(family):
        by_name[name_of(m["gold"])].add(m["gold"])
    everyone = [g for golds in by_name.values() for g in golds]
    return sum(1 for golds in by_name.values() if len(golds) > 1 for _ in golds) / len(everyone)


def test_the_generator_is_deterministic_and_the_committed_files_are_its_output():
    again = generate_corpora.generate()
    other = generate_corpora.generate(generate_corpora.SEED + 1)
    for family in HOMONYMS:
        name = generate_corpora.corpus_file(family)
        assert again[name] == FILES[name]
        assert other[name] != FILES[name], "the seed must matter"
        assert (CORPORA / name).read_text(encoding="utf-8") == FILES[name]


def test_each_family_is_one_bank_of_a_few_hundred_facts_every_mention_with_gold():
    for family in HOMONYMS:
        stream = facts(family)
        assert 100 <= len(stream) <= 300, family
        assert {f["bank_id"] for f in stream} == {family}
        assert [f["event_date"] for f in stream] == sorted(f["event_date"] for f in stream)
        assert all(m.get("gold") for f in stream for m in f["mentions"])


def test_homonym_dates_half_the_people_share_a_name_and_most_mentions_carry_a_birth_date():
    assert 0.45 <= shared_share("homonym_dates") <= 0.6
    mentions = people("homonym_dates")
    dated = [m for m in mentions if "attributes" in m]
    assert 0.75 <= len(dated) / len(mentions) <= 0.9
    assert all(set(m["attributes"]) == {"birth_date"} for m in dated)
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["attributes"]["birth_date"]) for m in dated)
    # One birth date per person, and namesakes never born the same day.
    dates = defaultdict(set)
    for m in dated:
        dates[m["gold"]].add(m["attributes"]["birth_date"])
    assert all(len(d) == 1 for d in dates.values())
    assert len({d for ds in dates.values() for d in ds}) == len(dates)


def test_homonym_emails_two_mentions_in_five_carry_the_one_email_of_a_person_whatever_the_spelling():
    assert shared_share("homonym_emails") >= 0.3
    mentions = people("homonym_emails")
    mailed = [m for m in mentions if "attributes" in m]
    assert 0.35 <= len(mailed) / len(mentions) <= 0.45
    assert all(set(m["attributes"]) == {"email"} for m in mailed)
    owner = defaultdict(set)
    spellings = defaultdict(set)
    for m in mailed:
        owner[m["attributes"]["email"].lower()].add(m["gold"])
        spellings[m["attributes"]["email"].lower()].add(m["text"])
    assert all(len(golds) == 1 for golds in owner.values()), "an email names one person"
    assert len({g for golds in owner.values() for g in golds}) == len(owner), "one email per person"
    # The email joins different spellings ("T. Faulkner", "Tea Faulkner", "Thea Faulkner").
    assert sum(1 for texts in spellings.values() if len(texts) > 1) >= len(spellings) // 2
    assert any(m["attributes"]["email"] != m["attributes"]["email"].lower() for m in mailed)


def test_homonym_context_namesakes_have_no_attributes_and_contexts_of_their_own():
    assert shared_share("homonym_context") >= 0.5
    assert not any("attributes" in m for f in facts("homonym_context") for m in f["mentions"])
    context = defaultdict(set)        # person -> the non-person golds beside them
    for fact in facts("homonym_context"):
        person = fact["mentions"][0]["gold"]
        context[person] |= {m["gold"] for m in fact["mentions"][1:] if not m["gold"].startswith("p:")}
    namesakes = defaultdict(list)
    for gold in context:
        namesakes[name_of(gold)].append(gold)
    for golds in namesakes.values():
        for gold in golds:
            others = set().union(*(context[g] for g in golds if g != gold))
            assert context[gold] - others, f"{gold}: nothing in its context tells it from its namesakes"


def test_the_homonym_families_use_names_no_other_corpus_uses():
    ours = {m["text"].lower() for family in HOMONYMS for m in people(family)}
    theirs = {(m if isinstance(m, str) else m["text"]).lower()
              for path in CORPORA.glob("*.jsonl") if path.stem not in HOMONYMS
              for line in path.read_text(encoding="utf-8").splitlines()
              for m in json.loads(line)["mentions"]}
    assert not ours & theirs
