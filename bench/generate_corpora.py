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

Three families of homonyms (issue 31, two people with one name), from name,
employer, city and project pools no other family uses. A person's gold is their
name's slug and their number among its holders ("p:thea-faulkner-2"); each has
an employer, a city and a project, a namesake often the other's city or
employer, and a colleague of another name who appears beside them:

* ``homonym_dates``   Half the people share their exact full name with one or
                      two others; about 85 % of person mentions carry
                      ``"attributes": {"birth_date": "YYYY-MM-DD"}`` (never the
                      same date for two people), the rest only context.
* ``homonym_emails``  A third share a name; about 40 % of person mentions carry
                      ``"attributes": {"email": ...}`` (one address per person,
                      sometimes capitalised), and a person is written "Thea
                      Faulkner", "T. Faulkner" or misspelt ("Tea Faulkner"),
                      the variants more often with the email than the full name.
* ``homonym_context`` Two thirds share a name, no attributes: only the context
                      (employer, city, project, colleague) tells them apart.

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


# -- homonyms (issue 31) -----------------------------------------------------------
# Two people, one name. Name pools of their own (no other family uses them),
# context pools too, so that a homonym family measures attributes and context,
# not collisions with the other families' names.

HOMONYM_GIVEN = [
    "Annika", "Bram", "Cosima", "Dario", "Eilidh", "Florian", "Gudrun", "Hamish", "Imke", "Jarek",
    "Kirsi", "Lavinia", "Matthias", "Noor", "Orla", "Piet", "Renske", "Stellan", "Thea", "Ulrich",
    "Vesna", "Wiebke", "Yolanda", "Zdenek", "Aurelio", "Benedikta", "Cyprian", "Dagny", "Evander",
    "Fenella", "Gideon", "Helka", "Ignatius", "Jolanda", "Konrad", "Liesel",
]
HOMONYM_SURNAMES = [
    "Albrecht", "Bergmann", "Carvalho", "Dembele", "Eklund", "Faulkner", "Gallo", "Hartmann", "Ibsen",
    "Janssen", "Kuznetsov", "Lehtonen", "Mahlangu", "Nyberg", "Okonkwo", "Pereira", "Rinaldi", "Strand",
    "Thorsen", "Ueda", "Valdivia", "Weiland", "Zielinski", "Achebe", "Brandvold", "Castellano",
]
HOMONYM_EMPLOYERS = [
    "Ashlar Works", "Brindle Optics", "Calloway Freight", "Dovetail Joinery", "Eskerfield Water",
    "Fallowmere Bank", "Gannet Survey", "Heathcote Press", "Inchcape Rail", "Jetsam Salvage",
    "Kittiwake Travel", "Loambury Seeds", "Mistral Acoustics", "Nightjar Security", "Osprey Ferries",
    "Puffin Robotics", "Quillfeather Legal", "Rookery Clinics", "Sandpiper Hotels", "Tern Analytics",
    "Umbral Glassworks", "Vireo Energy", "Whimbrel Shipping", "Yellowhammer Foods", "Zander Fisheries",
    "Avocet Insurance", "Bittern Studios", "Curlew Pharma", "Dunlin Textiles", "Eider Outdoor",
    "Fieldfare Schools", "Goldcrest Capital", "Hobby Motors", "Ibis Telecom", "Jackdaw Games",
    "Kestrelton Mining",
]
HOMONYM_CITIES = [
    "Ghent", "Aarhus", "Graz", "Trieste", "Utrecht", "Tartu", "Bilbao", "Poznan", "Kaunas", "Halifax",
    "Dunedin", "Cusco", "Salta", "Mysore", "Kumasi", "Hobart", "Tromso", "Linz",
]
HOMONYM_PROJECTS = [
    "tide gauge study", "orchard survey", "ferry timetable", "choir tour", "bridge inspection",
    "solar retrofit", "library digitisation", "clinic rota", "harbour dredging", "seed bank",
    "glacier census", "rail signalling", "museum loan", "river cleanup", "wind survey",
    "bakery expansion", "theatre revival", "vineyard audit", "water meter rollout", "school garden",
    "textile archive", "canal survey", "beacon repair", "coastal mapping", "quarry closure",
    "mentoring scheme", "bicycle scheme", "market hall refit", "ferry tender", "heat pump trial",
    "flood barrier", "allotment waitlist", "night bus pilot", "tram extension", "dune restoration",
    "salt marsh survey",
]
class Namesake:
    """One person of a homonym family: a name maybe shared, a birth date, an email, a context."""

    def __init__(self, name: str, n: int, birth_date: str, employer: str, city: str, project: str):
        self.name = name
        self.given, self.surname = name.split(" ", 1)
        # The n-th person of this name (1 for a unique name): names are not identities here.
        self.gold = f"{person_gold(name)}-{n}"
        self.birth_date = birth_date
        self.employer = employer
        self.email = f"{self.given.lower()}.{self.surname.lower()}@{slug(employer).replace('-', '')}.example"
        self.context: List[Tuple[str, str]] = [
            (employer, "o:" + slug(employer)), (city, "c:" + slug(city)), (project, thing_gold(project))]
        self.colleague: Optional["Namesake"] = None
        self.start = 0.0

    def pick_context(self, rng: random.Random) -> List[Tuple[str, str]]:
        return rng.sample(self.context, rng.randint(1, 2))


def _birth_date(rng: random.Random, taken: set) -> str:
    while True:
        day = f"{rng.randint(1950, 2001)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if day not in taken:
            taken.add(day)
            return day


def namesakes(rng: random.Random, shared: Sequence[int], unique: int, spread: float) -> List[Namesake]:
    """People of one homonym bank: one name per entry of ``shared`` held by that many people, then
    ``unique`` people with a name of their own; distinct employers and projects, cities from a short
    list. A homonym often lives in the other's city (0.4) or works at the same employer (0.2): the
    contexts overlap in part. Each person's activity starts somewhere in the first ``spread`` days,
    a name's people within a few days of each other."""
    names = [f"{g} {s}" for g in HOMONYM_GIVEN for s in HOMONYM_SURNAMES]
    rng.shuffle(names)
    employers, projects = HOMONYM_EMPLOYERS[:], HOMONYM_PROJECTS[:]
    rng.shuffle(employers)
    rng.shuffle(projects)
    dates: set = set()
    people: List[Namesake] = []
    for size in list(shared) + [1] * unique:
        name = names.pop()
        start = float(rng.randrange(int(spread)))
        cities = rng.sample(HOMONYM_CITIES, size)
        first: Optional[Namesake] = None
        for n in range(1, size + 1):
            employer, city = employers.pop(), cities[n - 1]
            if first is not None:
                roll = rng.random()
                if roll < 0.4:
                    city = first.context[1][0]
                elif roll < 0.6:
                    employer = first.employer
            person = Namesake(name, n, _birth_date(rng, dates), employer, city, projects.pop())
            if first is not None and employer == first.employer:
                # Same name, same employer: the mail system tells them apart.
                person.email = f"{person.given[0].lower()}{person.surname.lower()}{n}@{first.email.split('@')[1]}"
            person.start = start + rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
            first = first or person
            people.append(person)
    rng.shuffle(people)
    for person in people:
        # A colleague of another name: a nearby name that is also a person.
        person.colleague = rng.choice([q for q in people if q.name != person.name])
    return people


def _person(rng: random.Random, person: Namesake, text: str, attributes: Dict[str, str]) -> Dict[str, object]:
    m: Dict[str, object] = {"text": text, "gold": person.gold}
    if attributes:
        m["attributes"] = attributes
    return m


def _homonym_facts(rng: random.Random, s: Stream, people: Sequence[Namesake], per_person: int,
                   mention: Callable[[Namesake, int], Dict[str, object]]) -> None:
    """``per_person`` facts each: the person (``mention(person, k)``), one or two of their
    context (none in one fact of ten), their colleague in three of ten."""
    for person in people:
        day = person.start
        for k in range(per_person):
            mentions: List[Mention] = [mention(person, k)]
            if rng.random() >= 0.1:
                mentions += person.pick_context(rng)
            if person.colleague is not None and rng.random() < 0.3:
                mentions.append(mention(person.colleague, -1))
            s.add(at(day, 9 + rng.randrange(9)), mentions)
            day += rng.choice([0.5, 1.0, 1.5, 2.0])


def homonym_dates(rng: random.Random) -> Stream:
    """People sharing exact full names, told apart by birth dates (most mentions carry one)."""
    s = Stream("homonym_dates", rng)
    people = namesakes(rng, [2] * 8 + [3], 17, spread=30.0)

    def mention(person: Namesake, k: int) -> Dict[str, object]:
        dated = rng.random() < 0.85
        return _person(rng, person, person.name, {"birth_date": person.birth_date} if dated else {})

    _homonym_facts(rng, s, people, 5, mention)
    return s


def homonym_emails(rng: random.Random) -> Stream:
    """Identifying emails on two mentions in five; one person written several ways with one email."""
    s = Stream("homonym_emails", rng)
    people = namesakes(rng, [2] * 4, 16, spread=30.0)
    spellings: Dict[str, List[str]] = {}
    for person in people:
        misspelt = typo(rng, person.given) + " " + person.surname
        spellings[person.gold] = [person.name, f"{person.given[0]}. {person.surname}",
                                  misspelt if misspelt != person.name else person.name]

    def mention(person: Namesake, k: int) -> Dict[str, object]:
        # The first mention is the full name; later ones mix the full name, the
        # initial and a misspelt given name. A variant carries the email more
        # often than the full name (an address book entry, a signature).
        if k <= 0:
            text = person.name
        else:
            text = rng.choice(spellings[person.gold] + [person.name])
        odds = 0.3 if text == person.name else 0.6
        if rng.random() >= odds:
            return _person(rng, person, text, {})
        # Now and then as a mail client shows it: the same address, capitalised.
        local, domain = person.email.split("@")
        email = person.email if rng.random() >= 0.15 else ".".join(w.capitalize() for w in local.split(".")) + "@" + domain
        return _person(rng, person, text, {"email": email})

    _homonym_facts(rng, s, people, 6, mention)
    return s


def homonym_context(rng: random.Random) -> Stream:
    """People sharing exact full names and no attributes: only their contexts tell them apart."""
    s = Stream("homonym_context", rng)
    people = namesakes(rng, [2] * 7 + [3] * 2, 10, spread=30.0)
    _homonym_facts(rng, s, people, 6, lambda person, k: _person(rng, person, person.name, {}))
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
    "homonym_dates": homonym_dates,
    "homonym_emails": homonym_emails,
    "homonym_context": homonym_context,
}

# Bank configuration a stream needs before replay (eval reads STREAM.banks.json).
BANK_CONFIG = {"labels": {"labels": {"entity_labels": LABELS_CONFIG}}}


def corpus_file(name: str) -> str:
    """The file of a family, relative to the corpora folder."""
    return f"{name}.jsonl"


def generate(seed: int = SEED) -> Dict[str, str]:
    """Return file name (relative to the corpora folder) -> contents for every corpus file."""
    files: Dict[str, str] = {}
    for i, (name, fn) in enumerate(FAMILIES.items()):
        rng = random.Random(seed * 1000 + i)
        files[corpus_file(name)] = "\n".join(fn(rng).lines()) + "\n"
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
    for name, text in files.items():
        (args.out / name).parent.mkdir(parents=True, exist_ok=True)
        (args.out / name).write_text(text, encoding="utf-8")
    total = sum(len(t.encode()) for t in files.values())
    print(f"wrote {len(files)} files to {args.out} ({total / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
