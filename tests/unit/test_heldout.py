"""The held-out families (bench/heldout.py) are what they claim: fresh names, seeded, labelled."""

from __future__ import annotations

import json
import re
from pathlib import Path

import names
import words
from bench import heldout
from bench.names import FIRST

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "bench" / "corpora"
DATA_DIR = ROOT / "data"


def _words(text):
    return {w.lower() for w in re.findall(r"[^\W_]+", text)}


def _corpora_words():
    out = set()
    for path in CORPORA.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            for m in json.loads(line)["mentions"]:
                out |= _words(m if isinstance(m, str) else m["text"])
    return out


def _name_data():
    lines = [ln for ln in (DATA_DIR / "nicknames.tsv").read_text(encoding="utf-8").splitlines()
             if not ln.startswith("#")]
    return names.NameData([tuple(ln.split("\t")[:2]) for ln in lines[1:]])


def test_the_held_out_name_pools_share_no_name_with_the_committed_corpora():
    people = (heldout.GIVEN + heldout.FAMILY_SURNAMES + heldout.SHARED_FIRST + heldout.OTHER_SURNAMES
              + [n for pair in heldout.NEAR_SURNAMES + heldout.NEAR_GIVEN for n in pair]
              + [n for group in heldout.SHARED_NICKNAMES for n in group])
    places = [c.split(" ")[0] for c in heldout.CLIENTS + heldout.HOUSEHOLDS]
    used = _corpora_words() | {f.lower() for f in FIRST}
    assert sorted(n for n in people + places if _words(n) & used) == []


def test_the_held_out_seeds_are_not_the_corpora_seeds():
    from bench import families, generate_corpora

    assert not set(heldout.HELDOUT_SEEDS) & {families.SEED, generate_corpora.SEED}


def test_the_near_given_names_are_two_known_names_the_reference_reads_as_one_word():
    data = _name_data()
    for a, b in heldout.NEAR_GIVEN:
        a, b = a.lower(), b.lower()
        assert words.words_match(a, b), (a, b)
        assert names.different_given_names(a, b, data), (a, b)


def test_the_shared_nicknames_name_both_people():
    data = _name_data()
    for nick, one, other in heldout.SHARED_NICKNAMES:
        assert nick.lower() in data.equivalents(one.lower()) & data.equivalents(other.lower()), nick


def test_the_streams_are_seeded_and_every_mention_carries_gold():
    first, again = heldout.generate(heldout.HELDOUT_SEEDS[0]), heldout.generate(heldout.HELDOUT_SEEDS[0])
    assert first == again
    assert first != heldout.generate(heldout.HELDOUT_SEEDS[1])
    assert set(first) == set(heldout.FAMILIES)
    for family, text in first.items():
        for line in text.splitlines():
            fact = json.loads(line)
            assert fact["bank_id"] == family
            assert all(isinstance(m, dict) and m.get("gold") for m in fact["mentions"]), fact["fact_id"]


def test_every_lever_is_measured_alone_over_the_reference():
    from settings import LEVERS

    configs = heldout.lever_settings()
    assert list(configs) == ["reference", *LEVERS, "enhanced"]
    for lever in LEVERS:
        assert configs[lever] == {"profile": "enhanced", **{other: other == lever for other in LEVERS}}
