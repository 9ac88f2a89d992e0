"""Labelled corpus families: nicknames, company suffixes, bare names, typed homographs (seeded, reproducible).

    python -m bench.families            # write the families below
    python -m bench.families --check    # fail if the files differ from a fresh run

Same stream format and conventions as ``bench/generate_corpora.py`` (whose
``Stream`` this reuses): one fact per line, every mention with ``gold``, facts
in date order. Each family is one bank. What a correct resolver does:

* ``nicknames_initials``  "Robert Smith" / "Rob Smith" / "Bob Smith" / "R. Smith",
                          "John A. Smith" / "J. A. Smith", Bill/William,
                          Kate/Katherine ... one person each; beside them people
                          who share the surname and an initial ("Rachel Smith"
                          is also "R. Smith"), or share a nickname ("Pat" is
                          Patricia and Patrick Nguyen, "Chris" Christopher and
                          Christina Hale). Employer, city and project mentions
                          tell them apart; an initial or a shared nickname
                          without them is a guess.
* ``org_suffixes``        "Acme" / "Acme Inc" / "ACME Corp" / "Acme Corporation"
                          are one organisation, "Acme Bank" and "Acme Foods Ltd"
                          others; the same for GmbH, AG, LLC, Ltd/Limited, BV,
                          Pty Ltd, Oy, SAS, KK, LLP, SpA, AB, AS, SA, and
                          near-homonyms ("Innotech" beside "Initech", "Tessera"
                          beside "Tessaro").
* ``bare_names``          Several people per first name (three Alexes, two
                          Sarahs ...) introduced in the same weeks, then
                          mentioned by the bare first name: next to their own
                          employer/project/city, next to a hub only, or alone.
                          Some are first heard of by the bare name. People
                          whose first name is unique in the bank are the control:
                          their bare name should join them.
* ``typed_homographs``    A person and a place (or an organisation) of one
                          name: "Jordan" the colleague and "Jordan" the country,
                          "Lincoln" the person and the city, "Chelsea" person,
                          district and football club, "Amazon" company and
                          river. Mentions carry ``"type"`` (person / place /
                          organization, a few capitalised, a quarter untyped).

Standard library only; the output depends on nothing but SEED.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from bench.generate_corpora import TOPICS, Mention, Stream, at, person_gold, slug, thing_gold

SEED = 20260314
BENCH = Path(__file__).resolve().parent
CORPORA = BENCH / "corpora"

# Fictional employers (never the organisations under test in org_suffixes).
EMPLOYERS = [
    "Bluefin Analytics", "Copperleaf Media", "Driftwood Studios", "Emberline Energy", "Foxglove Health",
    "Granite Peak Capital", "Harborview Logistics", "Ironbark Software", "Juniper Robotics",
    "Kestrel Aviation", "Lanternfish Games", "Meridian Textiles", "Northgate Pharma", "Orchard Lane Foods",
    "Pinecrest Insurance", "Quarry Hill Mining", "Redwood Legal", "Saltmarsh Brewing", "Thistle Data",
    "Upland Telecom", "Vermilion Design", "Willowbrook Schools", "Yarrow Biotech", "Zephyr Wind",
    "Alder Creek Farms", "Birchwood Hotels", "Cobalt Security", "Dunmore Shipping", "Elmstead Retail",
    "Fernhill Labs", "Gullwing Motors", "Hawthorn Partners",
]
CITIES = [
    "Denver", "Leeds", "Austin", "Rotterdam", "Melbourne", "Toronto", "Lyon", "Osaka", "Porto",
    "Gdansk", "Nairobi", "Valparaiso", "Tampere", "Bergen", "Cork", "Bologna", "Brno", "Pune",
]
HUBS = ["the team", "Slack", "standup", "the weekly sync"]


def org_gold(name: str) -> str:
    return "o:" + slug(name)


def city_gold(name: str) -> str:
    return "c:" + slug(name)


class Profile:
    """A person with an employer, a city and a project: the context that tells namesakes apart."""

    def __init__(self, name: str, variants: Sequence[str], employer: str, city: str, project: str):
        self.name = name
        self.variants = list(variants)
        self.gold = person_gold(name)
        self.context: List[Tuple[str, str]] = [
            (employer, org_gold(employer)), (city, city_gold(city)), (project, thing_gold(project))]

    def pick_context(self, rng: random.Random, at_most: int = 2) -> List[Tuple[str, str]]:
        return rng.sample(self.context, rng.randint(1, at_most))


def _profiles(rng: random.Random, groups: Sequence[Sequence[Tuple[str, Sequence[str]]]]
              ) -> List[List[Profile]]:
    """Give every person a distinct employer and project; cities may repeat (neighbours)."""
    employers, projects = EMPLOYERS[:], TOPICS[:]
    rng.shuffle(employers)
    rng.shuffle(projects)
    out = []
    for group in groups:
        # Within a group two people never share a city, so one context always separates them.
        cities = rng.sample(CITIES, len(group))
        out.append([Profile(name, variants, employers.pop(), cities[i], projects.pop())
                    for i, (name, variants) in enumerate(group)])
    return out


# -- nicknames_initials -----------------------------------------------------------

# (formal name, the other ways the stream writes it). Groups share a surname or a
# nickname; the variants are the package's nickname relations (data/nicknames.tsv)
# plus initials, which no table lists.
NICKNAME_GROUPS: List[List[Tuple[str, List[str]]]] = [
    [("Robert Smith", ["Rob Smith", "Bob Smith", "Bobby Smith", "R. Smith", "Robert J. Smith"]),
     ("Rachel Smith", ["R. Smith", "Rachel Smith"]),
     ("John A. Smith", ["J. A. Smith", "John Smith", "J.A. Smith", "Johnny Smith"])],
    [("William Turner", ["Bill Turner", "Will Turner", "Billy Turner", "W. Turner"]),
     ("Wendy Turner", ["W. Turner", "Wendy Turner"]),
     ("William Chen", ["Will Chen", "Bill Chen"])],
    [("Katherine Doyle", ["Kate Doyle", "Kathy Doyle", "Katy Doyle", "K. Doyle"]),
     ("Kevin Doyle", ["K. Doyle", "Kevin Doyle"]),
     ("Kate Morris", ["Kate Morris", "K. Morris"])],
    [("Elizabeth Hart", ["Liz Hart", "Beth Hart", "Betty Hart", "E. Hart", "Eliza Hart"]),
     ("Edward Hart", ["Ed Hart", "Eddie Hart", "E. Hart"])],
    [("Margaret Lowe", ["Maggie Lowe", "Peggy Lowe", "Meg Lowe", "M. Lowe"]),
     ("Michael Lowe", ["Mike Lowe", "Mick Lowe", "M. Lowe"])],
    [("Richard Vance", ["Rick Vance", "Rich Vance", "Dick Vance", "R. Vance"]),
     ("Richard Osei", ["Rich Osei", "Richie Osei", "R. Osei"])],
    [("Jonathan Price", ["Jon Price", "Jonny Price", "Jonathan Price"]),
     ("John Price", ["Johnny Price", "Jack Price", "J. Price"])],
    [("Alexander Volkov", ["Alex Volkov", "Alec Volkov", "A. Volkov"]),
     ("Alexandra Volkov", ["Alex Volkov", "Sandra Volkov", "A. Volkov"])],
    [("Patricia Nguyen", ["Pat Nguyen", "Trish Nguyen", "Patty Nguyen", "P. Nguyen"]),
     ("Patrick Nguyen", ["Pat Nguyen", "Paddy Nguyen", "P. Nguyen"])],
    [("Christopher Hale", ["Chris Hale", "Kit Hale", "C. Hale"]),
     ("Christina Hale", ["Chris Hale", "Tina Hale", "C. Hale"])],
    [("Theodore Lang", ["Theo Lang", "Ted Lang", "Teddy Lang"]),
     ("Edward Lang", ["Ed Lang", "Eddie Lang", "Ted Lang"])],
    [("Susan Reyes", ["Sue Reyes", "Susie Reyes", "S. Reyes"]),
     ("Samuel Reyes", ["Sam Reyes", "Sammy Reyes", "S. Reyes"])],
    [("Anthony Marsh", ["Tony Marsh", "A. Marsh", "Tony Marsh"])],
]


def nicknames_initials(rng: random.Random) -> Stream:
    """Formal names, nicknames and initials, among people who share a surname or a nickname."""
    s = Stream("nicknames_initials", rng)
    for g, group in enumerate(_profiles(rng, NICKNAME_GROUPS)):
        base = g * 4.0      # groups overlap: a group's window is about ten days
        # Everyone is introduced by the formal name first, twice, with context.
        for k in range(2):
            for p, person in enumerate(group):
                s.add(at(base + k * 0.5 + p * 0.1, 9 + p), [(person.name, person.gold)] + person.pick_context(rng))
        # Then the variants, people interleaved; one in five without any context.
        later = [(person, v) for person in group for v in person.variants]
        rng.shuffle(later)
        for n, (person, text) in enumerate(later):
            day = base + 1.5 + n * 0.6
            context = [] if rng.random() < 0.2 else person.pick_context(rng)
            s.add(at(day, 10 + n % 8), [(text, person.gold)] + context)
        # And the formal name once more at the end.
        for p, person in enumerate(group):
            s.add(at(base + 2 + len(later) * 0.6, 15 + p), [(person.name, person.gold)] + person.pick_context(rng, 1))
    return s


# -- org_suffixes ---------------------------------------------------------------

# (organisation, the ways the stream writes it); organisations of one group share
# their first word and sometimes a city, never their contacts.
ORG_GROUPS: List[List[Tuple[str, List[str]]]] = [
    [("Acme Inc", ["Acme", "ACME Corp", "Acme Corporation", "Acme, Inc.", "acme inc.", "Acme Inc"]),
     ("Acme Bank", ["Acme Bank plc", "ACME BANK", "Acme Bank"]),
     ("Acme Foods Ltd", ["Acme Foods", "Acme Foods Limited"])],
    [("Globex GmbH", ["Globex", "GLOBEX GmbH", "Globex G.m.b.H.", "Globex GmbH"]),
     ("Globex Logistics GmbH", ["Globex Logistics", "Globex Logistics GmbH"])],
    [("Initech LLC", ["Initech", "Initech, L.L.C.", "INITECH LLC", "Initech LLC"]),
     ("Innotech LLC", ["Innotech", "Innotech LLC"]),
     ("Initech Labs", ["Initech Labs", "Initech Labs LLC"])],
    [("Soylent Corp", ["Soylent Corporation", "Soylent Co.", "Soylent", "SOYLENT CORP"]),
     ("Soylent Foods Inc", ["Soylent Foods", "Soylent Foods, Inc."])],
    [("Vandelay Industries", ["Vandelay Industries Inc.", "Vandelay Industries, Inc", "VANDELAY INDUSTRIES"]),
     ("Vandelay Imports", ["Vandelay Imports LLC", "Vandelay Imports"])],
    [("Nordwind AG", ["Nordwind", "Nordwind Aktiengesellschaft", "NORDWIND AG"]),
     ("Nordwind Bank AG", ["Nordwind Bank", "Nordwind Bank AG"]),
     ("Nordwand AG", ["Nordwand", "Nordwand AG"])],
    [("Maple Leaf Holdings Ltd", ["Maple Leaf Holdings Limited", "Maple Leaf Holdings", "Maple Leaf Holdings Ltd."]),
     ("Maple Leaf Foods Ltd", ["Maple Leaf Foods", "Maple Leaf Foods Limited"])],
    [("Oranje B.V.", ["Oranje BV", "Oranje", "ORANJE B.V."]),
     ("Oranje Bank N.V.", ["Oranje Bank", "Oranje Bank NV"])],
    [("Kookaburra Pty Ltd", ["Kookaburra Pty. Ltd.", "Kookaburra", "Kookaburra Pty Limited"]),
     ("Kookaburra Brewing Pty Ltd", ["Kookaburra Brewing", "Kookaburra Brewing Pty Ltd"])],
    [("Lumen Oy", ["Lumen", "LUMEN OY", "Lumen Oy"]),
     ("Lumen Health Oy", ["Lumen Health", "Lumen Health Oy"]),
     ("Lumina Oy", ["Lumina", "Lumina Oy"])],
    [("Fromagerie Duval SAS", ["Fromagerie Duval", "Fromagerie Duval S.A.S.", "FROMAGERIE DUVAL SAS"]),
     ("Duval SARL", ["Duval", "Duval S.A.R.L.", "Duval SARL"])],
    [("Hikari KK", ["Hikari K.K.", "Hikari Kabushiki Kaisha", "Hikari"]),
     ("Hikari Denki KK", ["Hikari Denki", "Hikari Denki K.K."])],
    [("Brightwater LLP", ["Brightwater", "Brightwater L.L.P.", "Brightwater LLP"]),
     ("Brightwater Capital LP", ["Brightwater Capital", "Brightwater Capital L.P."])],
    [("Tessaro S.p.A.", ["Tessaro SpA", "Tessaro", "TESSARO S.P.A."]),
     ("Tessera SpA", ["Tessera", "Tessera S.p.A."])],
    [("Svea AB", ["Svea", "Svea Aktiebolag", "SVEA AB"]),
     ("Svea Bank AB", ["Svea Bank", "Svea Bank AB"])],
    [("Fjord AS", ["Fjord", "FJORD AS", "Fjord A/S"]),
     ("Fjord Shipping ASA", ["Fjord Shipping", "Fjord Shipping ASA"])],
    [("Condor S.A.", ["Condor SA", "Condor", "CONDOR S.A."]),
     ("Condor Airlines S.A.", ["Condor Airlines", "Condor Airlines SA"])],
]

CONTACT_FIRST = ["Ana", "Ben", "Carmen", "Dev", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas",
                 "Kira", "Luis", "Mina", "Nils", "Oona", "Pavel", "Rosa", "Tariq", "Ulla", "Vikram"]
CONTACT_LAST = ["Abara", "Berg", "Costa", "Dunn", "Eriksen", "Falk", "Gomes", "Holt", "Ishii", "Jovanovic",
                "Kern", "Lund", "Mayer", "Nakata", "Orr", "Pike", "Rahman", "Sousa", "Tran", "Vidal"]


def org_suffixes(rng: random.Random) -> Stream:
    """Legal-form suffixes of one organisation, beside other organisations that share a word."""
    s = Stream("org_suffixes", rng)
    contacts = sorted({f"{f} {last}" for f in CONTACT_FIRST for last in CONTACT_LAST})
    rng.shuffle(contacts)
    topics = TOPICS[:]
    rng.shuffle(topics)
    for g, group in enumerate(ORG_GROUPS):
        base = g * 3.0
        cities = rng.sample(CITIES, len(group))
        orgs = []
        for i, (name, variants) in enumerate(group):
            # A contact person, a deal and a city: what an agent's notes put beside a company.
            contact, topic = contacts.pop(), topics.pop()
            context = [(contact, person_gold(contact)), (topic, thing_gold(topic)), (cities[i], city_gold(cities[i]))]
            orgs.append((org_gold(name), name, variants, context))
        for k in range(2):
            for i, (gold, name, _, context) in enumerate(orgs):
                s.add(at(base + k * 0.4 + i * 0.1, 9 + i), [(name, gold)] + rng.sample(context, rng.randint(1, 2)))
        later = [(gold, v, context) for gold, _, variants, context in orgs for v in variants]
        rng.shuffle(later)
        for n, (gold, text, context) in enumerate(later):
            mentions: List[Mention] = [(text, gold)]
            if rng.random() >= 0.2:
                mentions += rng.sample(context, rng.randint(1, 2))
            s.add(at(base + 1 + n * 0.4, 10 + n % 8), mentions)
    return s


# -- bare_names -------------------------------------------------------------------

BARE_GROUPS: List[List[str]] = [
    ["Alex Kim", "Alex Morgan", "Alex Rivera"],
    ["Sarah Chen", "Sarah Connor"],
    ["Sam Patel", "Sam Okafor"],
    ["Maria Silva", "Maria Novak", "Maria Haddad"],
    ["David Lindqvist", "David Moreau"],
    ["Tom Brennan", "Tom Quinn"],
    ["Priya Nair"],
    ["Nadia Petrov"],
    ["Leo Tanaka"],
]
# People first heard of by the bare name, before the full name appears.
BARE_FIRST = {"Alex Rivera", "Maria Haddad", "Nadia Petrov"}


def bare_names(rng: random.Random) -> Stream:
    """Several people per first name, later named by the first name alone, with or without context."""
    s = Stream("bare_names", rng)
    groups = _profiles(rng, [[(name, [name.split()[0]]) for name in group] for group in BARE_GROUPS])
    for g, group in enumerate(groups):
        base = g * 5.0      # a first name's people are all active in the same fortnight
        for p, person in enumerate(group):
            first = person.variants[0]
            day = base + p * 0.3
            if person.name in BARE_FIRST:
                s.add(at(day, 9), [(first, person.gold)] + person.pick_context(rng))
                day += 0.5
            for k in range(2):
                s.add(at(day + k * 0.5, 10 + p), [(person.name, person.gold)] + person.pick_context(rng))
        later = []
        for person in group:
            # 4 bare mentions each: next to their own context, next to a hub only, or alone.
            kinds = ["own", "own", rng.choice(["own", "hub"]), rng.choice(["hub", "alone"])]
            if len(group) == 1:
                kinds[-1] = "alone"
            later += [(person, kind) for kind in kinds]
            later.append((person, "full"))
        rng.shuffle(later)
        for n, (person, kind) in enumerate(later):
            first = person.variants[0]
            if kind == "full":
                mentions: List[Mention] = [(person.name, person.gold)] + person.pick_context(rng, 1)
            elif kind == "own":
                mentions = [(first, person.gold)] + person.pick_context(rng)
            elif kind == "hub":
                hub = rng.choice(HUBS)
                mentions = [(first, person.gold), (hub, thing_gold(hub))]
            else:
                mentions = [(first, person.gold)]
            s.add(at(base + 1.5 + n * 0.5, 9 + n % 9), mentions)
    return s


# -- typed_homographs -------------------------------------------------------------

# One surface name, several things of different types. Each: (gold, type, full
# name or None, the bare name, its context).
HOMOGRAPHS: List[List[Tuple[str, str, Optional[str], str, List[str]]]] = [
    [("p:jordan-ellis", "person", "Jordan Ellis", "Jordan", ["Payments API", "Ironbark Software"]),
     ("l:jordan", "place", None, "Jordan", ["Amman", "Petra", "visa application"])],
    [("p:lincoln-hayes", "person", "Lincoln Hayes", "Lincoln", ["Fraud model", "Kestrel Aviation"]),
     ("l:lincoln-ne", "place", None, "Lincoln", ["Nebraska", "Omaha", "regional office"])],
    [("p:paris-okoro", "person", "Paris Okoro", "Paris", ["Design review", "Vermilion Design"]),
     ("l:paris", "place", None, "Paris", ["France", "Eurostar", "Louvre"])],
    [("p:georgia-banks", "person", "Georgia Banks", "Georgia", ["Hiring plan", "Pinecrest Insurance"]),
     ("l:georgia", "place", None, "Georgia", ["Tbilisi", "Caucasus", "Black Sea"])],
    [("p:chelsea-park", "person", "Chelsea Park", "Chelsea", ["Brand refresh", "Copperleaf Media"]),
     ("l:chelsea", "place", None, "Chelsea", ["King's Road", "Kensington", "flat viewing"]),
     ("o:chelsea-fc", "organization", "Chelsea FC", "Chelsea", ["Stamford Bridge", "Premier League"])],
    [("p:florence-adeyemi", "person", "Florence Adeyemi", "Florence", ["Grant proposal", "Yarrow Biotech"]),
     ("l:florence", "place", None, "Florence", ["Tuscany", "Uffizi", "Italy"])],
    [("p:austin-reed", "person", "Austin Reed", "Austin", ["Kubernetes upgrade", "Thistle Data"]),
     ("l:austin", "place", None, "Austin", ["Texas", "SXSW", "Dallas"])],
    [("p:victoria-lam", "person", "Victoria Lam", "Victoria", ["Tax engine", "Granite Peak Capital"]),
     ("l:victoria-au", "place", None, "Victoria", ["Melbourne", "Geelong", "Australia"])],
    [("o:amazon", "organization", None, "Amazon", ["AWS", "Prime", "cloud bill"]),
     ("l:amazon", "place", "Amazon rainforest", "Amazon", ["Manaus", "Brazil", "river cruise"])],
    [("p:mercedes-ortiz", "person", "Mercedes Ortiz", "Mercedes", ["Support backlog", "Elmstead Retail"]),
     ("o:mercedes-benz", "organization", "Mercedes-Benz", "Mercedes", ["Stuttgart", "car lease", "EQS"])],
    [("p:sydney-cole", "person", "Sydney Cole", "Sydney", ["Release train", "Lanternfish Games"]),
     ("l:sydney", "place", None, "Sydney", ["Opera House", "Bondi", "Australia"])],
    [("o:phoenix-labs", "organization", "Phoenix Labs", "Phoenix", ["seed round", "Fernhill Labs"]),
     ("l:phoenix", "place", None, "Phoenix", ["Arizona", "Scottsdale", "heat wave"])],
]


def _typed(rng: random.Random, text: str, gold: str, kind: str) -> Dict[str, object]:
    """A mention with its type: a quarter untyped (the caller did not know), a few capitalised."""
    m: Dict[str, object] = {"text": text, "gold": gold}
    roll = rng.random()
    if roll < 0.25:
        return m
    m["type"] = kind.capitalize() if roll < 0.35 else kind
    return m


def _context_gold(text: str) -> str:
    return "x:" + slug(text)


def typed_homographs(rng: random.Random) -> Stream:
    """A person and a place (or an organisation) that share a name, told apart by type and context."""
    s = Stream("typed_homographs", rng)
    for g, group in enumerate(HOMOGRAPHS):
        base = g * 3.0
        facts: List[Tuple[float, List[Mention]]] = []
        for i, (gold, kind, full, bare, context) in enumerate(group):
            ctx = [{"text": t, "gold": _context_gold(t)} for t in context]
            intro = full if full is not None else bare
            for k in range(2):
                facts.append((base + i * 0.2 + k * 0.5,
                              [_typed(rng, intro, gold, kind)] + rng.sample(ctx, rng.randint(1, 2))))
            for k in range(4):
                mentions: List[Mention] = [_typed(rng, bare, gold, kind)]
                if k < 3:
                    mentions += rng.sample(ctx, rng.randint(1, 2))
                facts.append((base + 1.2 + rng.random() * 2.5, mentions))
        for day, mentions in sorted(facts, key=lambda f: f[0]):
            s.add(at(day, 9), mentions)
    return s


FAMILIES: Dict[str, Tuple[Callable[[random.Random], Stream], Path]] = {
    "nicknames_initials": (nicknames_initials, CORPORA),
    "org_suffixes": (org_suffixes, CORPORA),
    "bare_names": (bare_names, CORPORA),
    # The importer refuses a mention's "type" until issue 14's typed mentions land.
    "typed_homographs": (typed_homographs, CORPORA),
}


def generate(seed: int = SEED) -> Dict[Path, str]:
    """Return path -> contents for every family file."""
    files: Dict[Path, str] = {}
    for i, (name, (fn, folder)) in enumerate(FAMILIES.items()):
        rng = random.Random(seed * 1000 + i)
        files[folder / f"{name}.jsonl"] = "\n".join(fn(rng).lines()) + "\n"
    return files


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="fail if the files differ from a fresh run")
    args = parser.parse_args(argv)
    files = generate(args.seed)
    if args.check:
        stale = [str(p.relative_to(BENCH)) for p, text in files.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print("stale corpora: " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(BENCH.parent)} ({text.count(chr(10))} facts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
