"""Generate the labelled evaluation corpora in bench/corpora/ (seeded, reproducible).

    python -m bench.generate_corpora            # rewrite bench/corpora/*.jsonl
    python -m bench.generate_corpora --check    # fail if the files differ from a fresh run

One JSON Lines file per family, one fact per line, in the stream format that
``entity-resolver import`` and ``entity-resolver eval`` read::

    {"fact_id": "typos-0007", "bank_id": "typos", "event_date": "2026-01-06T10:00:00Z",
     "content": "...", "mentions": [{"text": "Jonathon Richardson", "gold": "p:jonathan-richardson"}]}

Every mention carries ``gold``: the identity the generator meant. The
families, and what a correct resolver does on each:

* ``same_name``    Two or three people share a first name ("Alex Kim", "Alex
                   Morgan"), each with a neighbourhood of their own; later the
                   bare first name appears next to one neighbourhood.
* ``partial``      "Sarah Chen" first, then "Sarah" or "Chen" next to her
                   partners; "Microsoft Corporation" then "Microsoft".
* ``typos``        Transposed, dropped, doubled and substituted letters; and
                   look-alike people who are different ("John Smith"/"Jane
                   Smith", "Dana Lee"/"Dina Lee").
* ``decorations``  Case, emoji, punctuation and spacing variants of one name.
* ``nicknames``    "Robert Miller"/"Bob Miller": one person, but nicknames are
                   not resolved (docs/design.md §9), so they are expected to stay apart
                   (fragmentation here is the documented behaviour).
* ``hubs``         "user", "the team", "Slack" next to everyone; people who
                   share a first name and are seen only next to hubs must not
                   be merged on the hubs' word.
* ``numbered``     "Room 101"/"Room 102", "UA123"/"UA0123", "Q3 earnings"/"Q3
                   2024 earnings", "Python 3.10"/"Python 3.1".
* ``labels``       A bank with a controlled vocabulary (labels.banks.json):
                   labels match exactly (case aside), never fuzzily.
* ``scripts``      Cyrillic, Greek, CJK, Arabic, accents, Turkish İ/ı.
* ``recurring``    A six-month stream: people recur in episodes, share first
                   names with people active in other months, so recency and
                   the graph decide the bare first names.

Standard library only (misspellings come from ``bench.names``, shared with the
benchmark); the output depends on nothing but SEED.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from bench.names import typo

SEED = 20260301
OUT = Path(__file__).resolve().parent / "corpora"
START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)

Mention = Union[Tuple[str, str], Dict[str, object]]

# -- name pools ---------------------------------------------------------------

SURNAMES = [
    "Kim", "Morgan", "Chen", "Patel", "Okafor", "Nakamura", "Silva", "Novak", "Haddad",
    "Lindqvist", "Moreau", "Ferreira", "Kowalski", "Osei", "Varga", "Brennan", "Tanaka",
    "Quinn", "Duarte", "Reyes", "Schmidt", "Ivanova", "Hughes", "Larsen", "Mbeki", "Rossi",
    "Castillo", "Nguyen", "Abbott", "Whitfield", "Delgado", "Sorensen", "Achterberg",
    "Fitzgerald", "Kaplan", "Lindgren", "Marchetti", "Oyelaran", "Petrov", "Sandoval",
]
TOPICS = [
    "Acme renewal", "React migration", "Sprint planning", "Billing service", "Q2 roadmap",
    "Design review", "Onboarding flow", "Data warehouse", "Security audit", "Mobile app",
    "Search ranking", "Pricing page", "Support backlog", "Kubernetes upgrade", "Brand refresh",
    "Partner portal", "Churn analysis", "Hiring plan", "Offsite agenda", "Vendor contract",
    "Payments API", "Analytics dashboard", "Incident review", "Sales kickoff", "Customer advisory board",
    "Localization project", "Accessibility audit", "Ledger rewrite", "Compliance training",
    "Growth experiments", "Recommendation engine", "Feature flags", "Release train",
    "Documentation sprint", "Latency budget", "Observability stack", "Tax engine",
    "Warehouse robots", "Route optimizer", "Fraud model", "Podcast launch", "Grant proposal",
    "Lab inventory", "Museum exhibit", "Choir rehearsal", "Garden committee", "Book club",
    "Marathon training", "Kitchen remodel", "School fundraiser", "Climbing trip", "Wedding budget",
    "Newsletter redesign", "Volunteer roster", "Harvest festival", "Robotics club", "Chess league",
    "Film festival", "Tenant meeting", "Pottery class",
]


def slug(text: str) -> str:
    out = []
    for ch in text.lower():
        out.append(ch if ch.isalnum() else "-")
    return "-".join(part for part in "".join(out).split("-") if part)


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class Stream:
    """Facts of one family: collected with their dates, written in date order."""

    def __init__(self, family: str, rng: random.Random):
        self.family = family
        self.rng = rng
        self._facts: List[Tuple[datetime, int, List[Dict[str, object]], str]] = []

    def add(self, when: datetime, mentions: Sequence[Mention], content: Optional[str] = None) -> None:
        items: List[Dict[str, object]] = []
        for m in mentions:
            if isinstance(m, tuple):
                items.append({"text": m[0], "gold": m[1]})
            else:
                items.append(dict(m))
        if content is None:
            content = sentence(self.rng, [str(i["text"]) for i in items])
        self._facts.append((when, len(self._facts), items, content))

    def lines(self) -> List[str]:
        out = []
        for n, (when, _, items, content) in enumerate(sorted(self._facts, key=lambda f: (f[0], f[1])), 1):
            fact = {"fact_id": f"{self.family}-{n:04d}", "bank_id": self.family,
                    "event_date": iso(when), "content": content, "mentions": items}
            out.append(json.dumps(fact, ensure_ascii=False, separators=(",", ":")))
        return out


_TEMPLATES = [
    "{0} met about {1}.", "{0} posted an update on {1}.", "{0} flagged a blocker on {1}.",
    "{0} and {1} synced.", "Notes from {0} on {1}.", "{0} asked about {1}.",
]


def sentence(rng: random.Random, texts: Sequence[str]) -> str:
    if not texts:
        return "An empty note."
    if len(texts) == 1:
        return f"{texts[0]} came up."
    head, rest = texts[0], texts[1:]
    tail = ", ".join(rest)
    return rng.choice(_TEMPLATES).format(head, tail)


def person_gold(name: str) -> str:
    return "p:" + slug(name)


def thing_gold(name: str) -> str:
    return "t:" + slug(name)


def at(day: float, hour: int = 9) -> datetime:
    return START + timedelta(days=day, hours=hour - 9)


# -- families -------------------------------------------------------------------

def same_name(rng: random.Random) -> Stream:
    """Namesakes with separate neighbourhoods; the bare first name next to one of them."""
    s = Stream("same_name", rng)
    firsts = ["Alex", "Sam", "Jordan", "Maria", "Wei", "Priya", "Chris", "Taylor"]
    surnames = SURNAMES[:]
    rng.shuffle(surnames)
    topics = TOPICS[:]
    rng.shuffle(topics)
    for g, first in enumerate(firsts):
        people = [f"{first} {surnames.pop()}" for _ in range(3 if g % 3 == 0 else 2)]
        base = g * 6.0
        for p, person in enumerate(people):
            partners = [topics.pop(), topics.pop(), topics.pop()]
            day = base + p * 0.3
            gold = person_gold(person)
            # Introduction: the full name, twice, with its neighbourhood.
            for k in range(2):
                pick = rng.sample(partners, 2)
                s.add(at(day + k * 0.5, 10 + p), [(person, gold)] + [(t, thing_gold(t)) for t in pick])
            # Later: the bare first name next to one or two partners, within days.
            for k in range(3):
                day2 = day + 1 + k * rng.choice([0.5, 1.0, 1.5])
                pick = rng.sample(partners, rng.choice([1, 2]))
                s.add(at(day2, 11 + p), [(first, gold)] + [(t, thing_gold(t)) for t in pick])
            s.add(at(day + 4, 15), [(person, gold), (partners[0], thing_gold(partners[0]))])
    return s


def partial(rng: random.Random) -> Stream:
    """Full name first, then a first name or surname alone next to the partners."""
    s = Stream("partial", rng)
    people = ["Sarah Chen", "Marcus Webb", "Ingrid Solberg", "Tomas Herrera", "Aisha Bello",
              "Declan Murphy", "Yuki Sato", "Beatriz Lopes", "Olu Adeyemi", "Hannah Fischer",
              "Ravi Shankar", "Elena Popescu"]
    topics = TOPICS[:]
    rng.shuffle(topics)
    for i, person in enumerate(people):
        first, last = person.split()
        gold = person_gold(person)
        partners = [topics.pop(), topics.pop()]
        day = i * 2.0
        s.add(at(day, 9), [(person, gold)] + [(t, thing_gold(t)) for t in partners])
        s.add(at(day + 0.5, 10), [(person, gold), (partners[0], thing_gold(partners[0]))])
        s.add(at(day + 1, 11), [(first, gold)] + [(t, thing_gold(t)) for t in partners])
        s.add(at(day + 1.5, 12), [(first, gold), (partners[1], thing_gold(partners[1]))])
        if i % 3 == 0:
            s.add(at(day + 2, 13), [(last, gold), (partners[0], thing_gold(partners[0]))])
        s.add(at(day + 2.5, 14), [(person, gold), (partners[1], thing_gold(partners[1]))])
    orgs = [("Microsoft Corporation", "Microsoft"), ("Globex Industries", "Globex"),
            ("Initech Systems Inc", "Initech"), ("Umbrella Logistics", "Umbrella"),
            ("Acme Corp", "Acme"), ("Hooli Cloud Services", "Hooli")]
    for i, (full, short) in enumerate(orgs):
        gold = thing_gold(full)
        partner = topics.pop()
        day = 25 + i * 1.5
        s.add(at(day, 9), [(full, gold), (partner, thing_gold(partner))])
        s.add(at(day + 0.5, 10), [(short, gold), (partner, thing_gold(partner))])
        s.add(at(day + 1, 11), [(short, gold)])
        s.add(at(day + 1.2, 12), [(full, gold)])
    return s


def typos(rng: random.Random) -> Stream:
    """Misspelt repeats of one entity, and look-alike names of different people."""
    s = Stream("typos", rng)
    names = ["Jonathan Richardson", "Margaret Thornton", "Christopher Nakamura", "Anastasia Volkova",
             "Benedict Ashworth", "Gwendolyn Fairchild", "Microsoft", "Salesforce", "Kubernetes",
             "Philadelphia office", "Wolfgang Schneider", "Penelope Castellanos", "Bartholomew Quince",
             "Evangeline Moreau", "Cornelius Blackwood", "Terraform modules"]
    topics = TOPICS[:]
    rng.shuffle(topics)
    day = 0.0
    for name in names:
        gold = thing_gold(name) if " " not in name or name.endswith(("office", "modules")) else person_gold(name)
        partners = [topics.pop(), topics.pop()]
        s.add(at(day, 9), [(name, gold)] + [(t, thing_gold(t)) for t in partners])
        for k in range(4):
            text = typo(rng, name) if k % 2 == 0 else name
            pick = rng.sample(partners, rng.choice([0, 1, 2]))
            s.add(at(day + 0.5 + k * 0.5, 10 + k), [(text, gold)] + [(t, thing_gold(t)) for t in pick])
        day += 1.5
    # Look-alikes: different people whose names differ by a letter or a word.
    pairs = [("John Smith", "Jane Smith"), ("Dana Lee", "Dina Lee"), ("Mark Chen", "Mara Chen"),
             ("Carl Jensen", "Carla Jensen"), ("Erik Olsen", "Erin Olsen"),
             ("Dr John Richardson", "Dr Jane Richardson")]
    for a, b in pairs:
        pa, pb = [topics.pop(), topics.pop()], [topics.pop(), topics.pop()]
        for k in range(3):
            s.add(at(day + k * 0.5, 9), [(a, person_gold(a))] + [(t, thing_gold(t)) for t in pa])
            s.add(at(day + k * 0.5, 10), [(b, person_gold(b))] + [(t, thing_gold(t)) for t in pb])
        day += 1.5
    return s


def decorations(rng: random.Random) -> Stream:
    """One entity written with different case, emoji, punctuation and spacing."""
    s = Stream("decorations", rng)
    groups = [
        ["Wren", "Wren 🎵", "WREN", "wren 🕯️", "Wren!"],
        ["GPT-4", "GPT 4", "gpt-4", "Gpt4"],
        ["Acme, Inc.", "Acme Inc", "ACME INC.", "acme inc"],
        ["Mary O'Brien", "Mary O’Brien", "MARY O'BRIEN", "mary o'brien"],
        ["Kai Tanaka", "Kai  Tanaka", "kai tanaka", "KAI TANAKA", "Kai Tanaka 🚀"],
        ["Node.js", "NodeJS", "node.js", "Node js"],
        ["San Francisco office", "San Francisco Office", "san francisco office", "SF office"],
        ["Project Aurora", "project aurora", "Project Aurora ✨", "PROJECT AURORA", "Project “Aurora”"],
        ["Dr. Amara Nwosu", "Dr Amara Nwosu", "dr. amara nwosu", "DR. AMARA NWOSU"],
        ["e-mail campaign", "email campaign", "E-Mail Campaign", "Email Campaign"],
    ]
    topics = TOPICS[:]
    rng.shuffle(topics)
    day = 0.0
    for group in groups:
        gold = thing_gold(group[0])
        partners = [topics.pop(), topics.pop()]
        for k, text in enumerate(group):
            pick = rng.sample(partners, rng.choice([1, 2]))
            s.add(at(day + k * 0.4, 9 + k), [(text, gold)] + [(t, thing_gold(t)) for t in pick])
        # and each spelling once more, in another order
        for k, text in enumerate(reversed(group)):
            s.add(at(day + 2 + k * 0.3, 9 + k), [(text, gold), (partners[k % 2], thing_gold(partners[k % 2]))])
        day += 4.0
    return s


def nicknames(rng: random.Random) -> Stream:
    """Formal name and nickname of one person: nicknames are not resolved (docs/design.md §9)."""
    s = Stream("nicknames", rng)
    pairs = [("Robert Miller", "Bob Miller"), ("William Turner", "Bill Turner"),
             ("Elizabeth Hart", "Liz Hart"), ("Katherine Doyle", "Kate Doyle"),
             ("Michael Grant", "Mike Grant"), ("James Porter", "Jim Porter"),
             ("Richard Vance", "Rick Vance"), ("Margaret Lowe", "Peggy Lowe"),
             ("Alexander Volkov", "Sasha Volkov"), ("Jennifer Ross", "Jen Ross"),
             ("Theodore Banks", "Teddy Banks"), ("Susannah Clarke", "Sukie Clarke")]
    topics = TOPICS[:]
    rng.shuffle(topics)
    for i, (formal, nick) in enumerate(pairs):
        gold = person_gold(formal)
        partners = [topics.pop(), topics.pop()]
        day = i * 2.0
        seq = [formal, formal, nick, formal, nick, nick]
        for k, text in enumerate(seq):
            pick = rng.sample(partners, rng.choice([1, 2]))
            s.add(at(day + k * 0.3, 9 + k), [(text, gold)] + [(t, thing_gold(t)) for t in pick])
    return s


def hubs(rng: random.Random) -> Stream:
    """Hubs next to everyone; namesakes seen only next to hubs must not be merged by them."""
    s = Stream("hubs", rng)
    hub_names = ["user", "the team", "Slack", "standup"]
    people = ["Sam Lee", "Sam Patel", "Ana Costa", "Ana Silva", "Leo Marsh", "Leo Brandt",
              "Nina Ross", "Omar Farouk", "Iris Novak", "Ben Carter", "Ben Okafor", "Zara Khan"]
    topics = TOPICS[:]
    rng.shuffle(topics)
    own = {p: topics.pop() for p in people}
    day = 0.0
    for rnd in range(6):
        order = people[:]
        rng.shuffle(order)
        for person in order:
            gold = person_gold(person)
            hubs_here = rng.sample(hub_names, rng.choice([1, 2]))
            mentions: List[Mention] = [(h, thing_gold(h)) for h in hubs_here]
            first = person.split()[0]
            if rnd < 2:
                mentions.append((person, gold))
                mentions.append((own[person], thing_gold(own[person])))
            elif rnd % 2 == 0:
                # Only hubs around the bare first name: the hubs cannot say which one.
                mentions.append((first, gold))
            else:
                mentions.append((person, gold))
            rng.shuffle(mentions)
            s.add(at(day, 9 + rng.randrange(8)), mentions)
            day += 0.15
    return s


def numbered(rng: random.Random) -> Stream:
    """Numbers name specific things; a number subset is more detail, not another thing."""
    s = Stream("numbered", rng)
    groups: List[List[Tuple[str, str]]] = [
        [("Room 101", "room-101"), ("Room 102", "room-102"), ("Room 103", "room-103"), ("room 101", "room-101")],
        [("UA123", "ua123"), ("UA124", "ua124"), ("UA0123", "ua123"), ("ua123", "ua123")],
        [("Sprint 14", "sprint-14"), ("Sprint 15", "sprint-15"), ("Sprint 16", "sprint-16"), ("sprint 14", "sprint-14")],
        [("Q3 earnings", "q3-earnings"), ("Q3 2024 earnings", "q3-earnings"), ("Q4 earnings", "q4-earnings")],
        [("Python 3.10", "python-3-10"), ("Python 3.1", "python-3-1"), ("Python 3.10.0", "python-3-10")],
        [("iPhone 14", "iphone-14"), ("iPhone 15", "iphone-15"), ("iphone 14", "iphone-14")],
        [("Building 7", "building-7"), ("Building 9", "building-9"), ("building 7", "building-7")],
        [("Ticket 4521", "ticket-4521"), ("ticket #4521", "ticket-4521"), ("Ticket 4522", "ticket-4522")],
        [("v2.0 release", "v2-release"), ("v2 release", "v2-release"), ("v3 release", "v3-release")],
        [("Highway 101", "highway-101"), ("Highway 280", "highway-280"), ("highway 101", "highway-101")],
    ]
    topics = TOPICS[:]
    rng.shuffle(topics)
    day = 0.0
    for group in groups:
        partner = topics.pop()
        for rep in range(2):
            for k, (text, gold) in enumerate(group):
                mentions = [(text, "n:" + gold)]
                if rng.random() < 0.7:
                    mentions.append((partner, thing_gold(partner)))
                s.add(at(day + rep * 1.0 + k * 0.2, 9 + k), mentions)
        day += 3.0
    return s


LABELS_CONFIG = {
    "attributes": [
        {"key": "person", "type": "value", "values": [
            {"value": "sarah-chen", "description": "Eng lead"},
            {"value": "sarah-cheng", "description": "Designer"},
            {"value": "alex-kim", "description": "Frontend"},
        ]},
        {"key": "pedagogy", "type": "multi-values", "values": [
            {"value": "scaffolding"}, {"value": "scaffolded-practice"},
            {"value": "modelling"}, {"value": "modeling-clay"},
        ]},
        {"key": "topic", "type": "text"},
    ]
}


def labels(rng: random.Random) -> Stream:
    """Declared labels match exactly (case aside); neighbouring values stay apart."""
    s = Stream("labels", rng)
    texts = [
        ("person:sarah-chen", "l:person:sarah-chen"), ("Person:Sarah-Chen", "l:person:sarah-chen"),
        ("person:sarah-cheng", "l:person:sarah-cheng"), ("person:alex-kim", "l:person:alex-kim"),
        ("pedagogy:scaffolding", "l:pedagogy:scaffolding"),
        ("pedagogy:scaffolded-practice", "l:pedagogy:scaffolded-practice"),
        ("PEDAGOGY:SCAFFOLDING", "l:pedagogy:scaffolding"),
        ("pedagogy:modelling", "l:pedagogy:modelling"), ("pedagogy:modeling-clay", "l:pedagogy:modeling-clay"),
        ("topic:onboarding", "l:topic:onboarding"), ("topic:onboarding-v2", "l:topic:onboarding-v2"),
        ("Topic:Onboarding", "l:topic:onboarding"),
    ]
    regular = [("Sarah Chen", person_gold("Sarah Chen")), ("Sarah Cheng", person_gold("Sarah Cheng")),
               ("Alex Kim", person_gold("Alex Kim")), ("Scaffolding workshop", "t:scaffolding-workshop"),
               ("Onboarding", "t:onboarding")]
    day = 0.0
    for rep in range(4):
        for text, gold in texts:
            other = rng.sample(regular, rng.choice([1, 2]))
            more = rng.sample(texts, 1)
            mentions = [(text, gold)] + other + [m for m in more if m[0] != text]
            s.add(at(day, 9 + rep), mentions)
            day += 0.25
    return s


def scripts(rng: random.Random) -> Stream:
    """Non-Latin scripts, accents, and Turkish dotted and dotless I."""
    s = Stream("scripts", rng)
    groups = [
        ("p:aleksei-smirnov", ["Алексей Смирнов", "алексей смирнов", "АЛЕКСЕЙ СМИРНОВ", "Алексей Смирнов"]),
        ("p:maria-ivanova", ["Мария Иванова", "мария иванова", "Мария Иванова"]),
        ("p:nikos-papadopoulos", ["Νίκος Παπαδόπουλος", "νίκος παπαδόπουλος", "Νίκος Παπαδόπουλος"]),
        ("p:wang-wei", ["王伟", "王伟", "王伟"]),
        ("p:wang-weiming", ["王伟明", "王伟明"]),
        ("p:tanaka-taro", ["田中太郎", "田中 太郎", "田中太郎"]),
        ("p:mohammed-alali", ["محمد العلي", "محمد العلي", "محمد  العلي"]),
        ("t:istanbul", ["İstanbul", "istanbul", "İSTANBUL", "ISTANBUL", "Istanbul"]),
        ("p:isik-yilmaz", ["Işık Yılmaz", "IŞIK YILMAZ", "ışık yılmaz", "Işık Yılmaz"]),
        ("p:cagla-ozturk", ["Çağla Öztürk", "ÇAĞLA ÖZTÜRK", "Cagla Ozturk"]),
        ("p:jose-garcia", ["José García", "Jose Garcia", "JOSÉ GARCÍA", "josé garcía"]),
        ("p:zoe-lindqvist", ["Zoë Lindqvist", "Zoe Lindqvist", "ZOË LINDQVIST"]),
        ("t:sao-paulo", ["São Paulo", "Sao Paulo", "SÃO PAULO", "são paulo"]),
        ("p:bjorn-aberg", ["Björn Åberg", "Bjorn Aberg", "BJÖRN ÅBERG"]),
        ("t:izmir", ["İzmir", "izmir", "IZMIR"]),
        ("t:diyarbakir", ["Diyarbakır", "DİYARBAKIR", "diyarbakır"]),
    ]
    topics = TOPICS[:]
    rng.shuffle(topics)
    day = 0.0
    for gold, variants in groups:
        partner = topics.pop()
        for k, text in enumerate(variants):
            mentions = [(text, gold)]
            if k % 2 == 0 or rng.random() < 0.5:
                mentions.append((partner, thing_gold(partner)))
            s.add(at(day + k * 0.3, 9 + k), mentions)
        day += 2.0
    return s


def recurring(rng: random.Random) -> Stream:
    """Six months of facts: people recur in episodes, namesakes in different months."""
    s = Stream("recurring", rng)
    firsts = ["Alex", "Sam", "Maria", "Chris", "Priya", "Jordan", "Elena", "Tom", "Nadia", "Omar",
              "Lucy", "Ivan"]
    surnames = SURNAMES[:]
    rng.shuffle(surnames)
    people = []
    for i in range(24):
        people.append(f"{firsts[i % len(firsts)]} {surnames[i % len(surnames)]}")
    projects = TOPICS[:24]
    hubs_ = ["the team", "Slack"]
    home = {p: rng.sample(projects, 2) for p in people}
    weeks = 26
    episodes: Dict[str, List[Tuple[float, float]]] = {}
    for p in people:
        eps = []
        n = rng.choice([2, 2, 3])
        starts = sorted(rng.sample(range(0, weeks - 2), n))
        for st in starts:
            eps.append((st * 7.0, st * 7.0 + rng.choice([5.0, 7.0, 10.0])))
        episodes[p] = eps
    for p in people:
        gold = person_gold(p)
        first = p.split()[0]
        for a, b in episodes[p]:
            d = a
            introduced = False
            while d < b:
                mentions: List[Mention] = []
                roll = rng.random()
                text = p if (not introduced or roll < 0.55) else first
                introduced = True
                mentions.append((text, gold))
                for t in rng.sample(home[p], rng.choice([1, 1, 2])):
                    mentions.append((t, thing_gold(t)))
                if rng.random() < 0.3:
                    h = rng.choice(hubs_)
                    mentions.append((h, thing_gold(h)))
                if rng.random() < 0.25:
                    # a colleague from the same project, full name
                    mates = [q for q in people if q != p and set(home[q]) & set(home[p])]
                    if mates:
                        q = rng.choice(mates)
                        mentions.append((q, person_gold(q)))
                rng.shuffle(mentions)
                s.add(at(d, 9 + rng.randrange(9)), mentions)
                d += rng.choice([1.0, 1.0, 1.5, 2.0])
    return s


FAMILIES: Dict[str, Callable[[random.Random], Stream]] = {
    "same_name": same_name,
    "partial": partial,
    "typos": typos,
    "decorations": decorations,
    "nicknames": nicknames,
    "hubs": hubs,
    "numbered": numbered,
    "labels": labels,
    "scripts": scripts,
    "recurring": recurring,
}

# Bank configuration a stream needs before replay (eval reads STREAM.banks.json).
BANK_CONFIG = {"labels": {"labels": {"entity_labels": LABELS_CONFIG}}}


def generate(seed: int = SEED) -> Dict[str, str]:
    """Return file name -> contents for every corpus file."""
    files: Dict[str, str] = {}
    for i, (name, fn) in enumerate(FAMILIES.items()):
        rng = random.Random(seed * 1000 + i)
        files[f"{name}.jsonl"] = "\n".join(fn(rng).lines()) + "\n"
    for name, config in BANK_CONFIG.items():
        files[f"{name}.banks.json"] = json.dumps(config, ensure_ascii=False, indent=2) + "\n"
    return files


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="fail if the files differ from a fresh run")
    args = parser.parse_args(argv)
    files = generate(args.seed)
    if args.check:
        stale = [n for n, text in files.items()
                 if not (args.out / n).exists() or (args.out / n).read_text(encoding="utf-8") != text]
        if stale:
            print("stale corpora: " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
    total = sum(len(t.encode()) for t in files.values())
    print(f"wrote {len(files)} files to {args.out} ({total / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
