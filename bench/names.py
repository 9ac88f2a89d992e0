"""Seeded names and misspellings.

The benchmark's banks and retains (``bench.workloads``) and the evaluation
corpora (``bench.generate_corpora``) misspell names with the same ``typo``.
Standard library only: the corpora depend on nothing but their seed.
"""

from __future__ import annotations

import random
from typing import List, Tuple

FIRST = """Aaliyah Aaron Abigail Adam Adrian Aisha Alan Alex Alice Amara Amelia Ana Andre Andrew
Angela Anna Anthony Arjun Aria Asha Ben Bianca Boris Brian Bruno Caleb Camila Carlos Carmen
Caroline Charles Chen Chloe Chris Claire Clara Daniel Daria David Diana Diego Dmitri Elena Eli
Elias Elif Emily Emma Eric Erik Ethan Eva Fatima Felix Fiona Gabriel Grace Hana Hannah Harry
Hassan Helen Henry Ian Ibrahim Ines Irene Isaac Ivan Jack Jacob James Jana Jasmine Javier Jin
John Jonas Jordan Jorge Jose Julia Kai Karen Kenji Kevin Kim Lars Laura Layla Leah Leo Liam
Lina Lucas Lucia Luis Luka Maya Marco Maria Mark Marta Mateo Max Mei Mia Michael Mila Mohammed
Nadia Naomi Nina Noah Nora Oliver Olivia Omar Oscar Pablo Paul Peter Priya Rafael Rahul Rania
Rosa Ruby Ryan Sam Samir Sara Sarah Sean Sofia Sophie Stefan Tara Theo Thomas Tom Valeria Victor
Wei Yara Yusuf Zara Zoe""".split()
SYLLABLES = """ka lo mi ra ven dor tel sen mar qui bel tor an es ul ri son berg ford ley wick ton
ham stad ski ova ez ini ard ell bro cha dun fie gar hol jur kel lun mon nor pat ros sto tam urb val
wes yor zim bak cor dal fen gil hux ish jor kru lam mer nad oke pim rud sal tiv uzo vor wyn xan yel
zor""".split()
ORG_SUFFIX = """Labs Inc Group Systems Partners Health Foods Capital Logistics Studio Analytics
Robotics Energy Media Ventures""".split()
ADJ = """Blue Red Green Silver Golden Quiet Rapid Bright Northern Southern Eastern Western Hidden
Open Iron Crystal Amber Coral Solar Lunar Swift Bold Clear Deep Early Final Grand Little Major
Minor Modern Prime Royal Smart Steady Urban Vivid Wild Young Zero""".split()
NOUN = """Harbor River Falcon Maple Orbit Summit Canyon Meadow Beacon Bridge Compass Delta Ember
Forest Garden Glacier Horizon Island Jungle Lantern Mosaic Nebula Oasis Pebble Prairie Quartz
Rocket Sierra Tundra Valley Willow Aurora Comet Dune Fjord Grove Lagoon Mesa Reef""".split()
KIND = """migration launch rollout review audit redesign pilot program initiative roadmap
campaign refactor upgrade workshop study""".split()
NUMBERED = """Ticket Sprint Room Invoice Order Build Release Incident Flight Case""".split()
HUBS = ["user", "the team", "Slack", "standup", "customer", "engineering", "product", "email",
        "meeting", "roadmap", "support", "sales"]


def _surname(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(syllables)).capitalize()


def generate_names(size: int, rng: random.Random) -> Tuple[List[str], List[str]]:
    """``size`` distinct names (distinct after lowercasing) and their kinds; hubs first."""
    names: List[str] = list(HUBS)
    kinds: List[str] = ["hub"] * len(HUBS)
    seen = {n.lower() for n in names}
    while len(names) < size:
        roll = rng.random()
        if roll < 0.60:
            name = f"{rng.choice(FIRST)} {_surname(rng, rng.choice((2, 3)))}"
            kind = "person"
        elif roll < 0.75:
            name = f"{_surname(rng, 2)} {rng.choice(ORG_SUFFIX)}"
            kind = "org"
        elif roll < 0.87:
            name = f"{rng.choice(ADJ)} {rng.choice(NOUN)} {rng.choice(KIND)}"
            kind = "project"
        else:
            name = f"{rng.choice(NUMBERED)} {rng.randrange(1, 10 * size)}"
            kind = "numbered"
        key = name.lower()
        if key in seen:
            continue
        seen.add(key)
        names.append(name)
        kinds.append(kind)
    return names[:size], kinds[:size]


_NEAR_KEYS = {"a": "s", "e": "r", "i": "o", "o": "i", "n": "m", "r": "t", "s": "a", "t": "r",
              "l": "k", "c": "v", "d": "f", "h": "j", "m": "n", "u": "y"}


def typo(rng: random.Random, name: str) -> str:
    """One slip (swap, drop, double, substitute) in the longest word of ``name``."""
    words = name.split(" ")
    w = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[w]
    if len(word) < 4:
        return name
    i = rng.randrange(1, len(word) - 1)
    kind = rng.randrange(4)
    if kind == 0:
        word = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    elif kind == 1:
        word = word[:i] + word[i + 1:]
    elif kind == 2:
        word = word[:i] + word[i] + word[i:]
    else:
        word = word[:i] + _NEAR_KEYS.get(word[i].lower(), "e") + word[i + 1:]
    words[w] = word
    return " ".join(words)


def new_name(rng: random.Random) -> str:
    # Four syllables: never in the bank, whose generated surnames have 2 or 3.
    if rng.random() < 0.7:
        return f"{rng.choice(FIRST)} {_surname(rng, 4)}"
    return f"{_surname(rng, 4)} {rng.choice(ORG_SUFFIX)}"
