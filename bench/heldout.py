"""Held-out labelled families: the levers' wrong merges on names they were not tuned on (issue 31 item 6).

    python -m bench.heldout                      # per lever, on the held-out seeds: wrong merges, B-cubed F1
    python -m bench.heldout --write DIR --seed 7101   # the streams of one seed, to read or to eval

The committed corpora (bench/corpora) are what the levers were built on. These
families are generated from name pools none of those corpora use (a unit test
checks that no word of them occurs there) and from seeds of their own, and
they hold, on purpose, the three kinds of wrong merge seen on held-out
labelled streams:

* ``hub_namesakes``          two people whose surnames are one or two letters
                             apart and who share a given name ("Tom Baker" /
                             "Tom Parker"), both seen next to the same generic
                             hub ("the front desk"); beside them true
                             misspellings of a surname next to the person's
                             own client, which should join;
* ``given_name_neighbours``  two people of one surname whose given names are
                             near spellings of each other ("Joan Kerr" / "Jean
                             Kerr"), sharing a household or team context;
                             beside them misspelt surnames that should join;
* ``shared_first_names``     two people of one first name (or of one
                             nickname: "Fred" for Frederick and Alfred) at the
                             same employer, each with a project of their own;
                             later the bare first name or the nickname next to
                             the employer only (a guess), or next to the
                             project (one person); one of them sometimes first
                             heard of by the bare name.

Every mention carries gold. ``measure`` replays every family of every seed
under the reference profile, under each enhanced lever alone (the enhanced
profile with every other lever off) and under the whole enhanced profile, and
counts wrong merges and B-cubed F1 against the reference's. ``make bench``
reports it (bench/run.py); tests/db/test_heldout_levers.py holds every lever
to no more wrong merges than the reference.

Standard library only for the streams; the output depends on nothing but the seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from bench.generate_corpora import Mention, Stream, at, person_gold, slug, thing_gold

# The seeds of the held-out streams: never those of bench/corpora (20260301,
# 20260314) nor of the benchmark's banks.
HELDOUT_SEEDS = (7101, 7202, 7303)

# -- name pools none of bench/corpora uses (tests/unit/test_heldout.py) --------------

# Given names for people whose surnames are near spellings of each other.
GIVEN = ["Wade", "Ansel", "Heath", "Cyril", "Edgar", "Rufus", "Otis", "Opal", "Hazel", "Mabel", "Edwin",
         "Gordon", "Howard", "Lloyd", "Murray", "Roland", "Clement", "Ottoline", "Vernon", "Gwen", "Louis",
         "Agnes", "Winston", "Dorian", "Blair", "Quentin", "Linus", "Esther", "Wendell", "Percy"]
# Surnames one or two letters apart: different families, not typos.
NEAR_SURNAMES = [("Baker", "Parker"), ("Morton", "Norton"), ("Dalton", "Walton"), ("Hopper", "Hooper"),
                 ("Lawson", "Dawson"), ("Mills", "Wills"), ("Burke", "Burks"), ("Carver", "Garver"),
                 ("Keller", "Kellen"), ("Webber", "Weber"), ("Harmon", "Herman"), ("Fowler", "Towler"),
                 ("Dunlop", "Dunlap"), ("Sutton", "Sutter"), ("Ramsey", "Ramsay"), ("Whitley", "Whitney"),
                 ("Bolton", "Boulton"), ("Tolliver", "Toliver"), ("Lyman", "Layman"), ("Pruett", "Prewitt")]
# Given names that are near spellings of each other but two names (neither a
# nickname of the other in data/nicknames.tsv): two people of one surname.
NEAR_GIVEN = [("Joan", "Jean"), ("Chester", "Hester"), ("Rudy", "Trudy"), ("Bessie", "Jessie"),
              ("Abel", "Mabel"), ("Connie", "Ronnie"), ("Marie", "Margie"), ("Kara", "Karla"),
              ("Cindy", "Mindy"), ("Wally", "Sally"), ("Ellie", "Nellie"), ("Flora", "Floyd"),
              ("Myra", "Mira"), ("Roy", "Ray"), ("Lester", "Chester"), ("Rita", "Nita"),
              ("Lonnie", "Connie"), ("Terry", "Kerry"), ("Dolly", "Polly"), ("Marcia", "Martha"),
              ("Wilma", "Selma"), ("Roxanne", "Joanne")]
FAMILY_SURNAMES = ["Kerr", "Pryce", "Oduya", "Lindgren", "Szabo", "Ostrowski", "Quayle", "Ferrante", "Hollis",
                   "Brannigan", "Nakashima", "Delacroix", "Okonjo", "Rasmussen", "Thorne", "Ibarra", "Quintero",
                   "Wojcik", "Vanterpool", "Fairweather", "Gallagher", "Hargreaves"]
# First names several people of one employer share, and their surnames.
SHARED_FIRST = ["Wade", "Otis", "Hazel", "Edgar", "Mabel", "Rufus", "Ansel", "Quentin", "Agnes", "Percy",
                "Blair", "Esther"]
# Nicknames two formal names share (data/nicknames.tsv relates each to both).
SHARED_NICKNAMES = [("Fred", "Frederick", "Alfred"), ("Gus", "Augustus", "Gustavus"),
                    ("Bert", "Herbert", "Gilbert"), ("Ronnie", "Ronald", "Veronica"),
                    ("Wally", "Wallace", "Walter"), ("Hal", "Harold", "Howard"),
                    ("Ned", "Edmund", "Edwin"), ("Brad", "Bradford", "Bradley")]
OTHER_SURNAMES = ["Ashdown", "Szczepanski", "Crowther", "Dimitrov", "Eastwick", "Fennimore", "Galloway",
                  "Haverford", "Ingleby", "Jessop", "Kilbride", "Larkspur", "Montague", "Northcott",
                  "Oyelowo", "Pemberton", "Quist", "Rutherford", "Stanhope", "Tremaine", "Underhill",
                  "Vasquez", "Winthrop", "Yeardley"]
# Generic hubs: next to most people of a stream.
HELD_HUBS = ["the front desk", "all-hands", "the canteen", "the helpdesk", "town hall", "the newsletter"]
# A person's own context: a client and a project, and the places a household shares.
CLIENTS = ["Pellworth Dairy", "Quillon Freight", "Rookmoor Estates", "Saffronway Hotels", "Tanglewood Print",
           "Umberfield Mills", "Vantrell Optics", "Wexcombe Marine", "Yelverton Seeds", "Ashgrove Tiles",
           "Brackenhurst Glass", "Cindervale Power", "Dovecote Bakery", "Elmridge Clinics", "Farrowdale Wool",
           "Gorsebrook Timber", "Hollinsworth Audio", "Ivybridge Kilns", "Juniperhill Cider", "Kingsmere Rail",
           "Lindenhall Paper", "Marshgate Ferries", "Nettlecombe Farms", "Oakenshaw Steel"]
PROJECTS = ["lighthouse rebuild", "ledger cleanup", "warehouse move", "pricing overhaul", "kiosk pilot",
            "payroll switch", "archive scan", "fleet renewal", "vendor review", "roof survey", "brochure reprint",
            "tender bid", "quay repair", "intake form", "spring catalogue", "boiler swap", "signage refresh",
            "tax filing", "loyalty card", "shuttle timetable", "greenhouse trial", "backup drill",
            "menu tasting", "fire audit"]
HOUSEHOLDS = ["Harrowgate Lane", "Mossbank Road", "Quarrystone Close", "Wrenfield Court", "Pebblemill Way",
              "Thornbury Mews", "Ashcombe Row", "Fallowfield Green", "Briarwood Place", "Larchmont Street",
              "Kestrelmoor Drive", "Dunholme Terrace"]


def _misspell(rng: random.Random, word: str) -> str:
    """One slip inside a surname (a swap, a dropped or doubled letter): a typo no name list knows."""
    i = rng.randrange(1, len(word) - 2)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


class _Person:
    def __init__(self, name: str, context: Sequence[str]):
        self.name = name
        self.gold = person_gold(name)
        self.context: List[Mention] = [(c, thing_gold(c)) for c in context]


def _hub(name: str) -> Mention:
    return (name, thing_gold(name))


def hub_namesakes(rng: random.Random) -> Stream:
    """Near-spelled surnames of one given name, both next to one generic hub; true surname typos beside them."""
    s = Stream("hub_namesakes", rng)
    hub = rng.choice(HELD_HUBS)
    clients, projects, given = CLIENTS[:], PROJECTS[:], GIVEN[:]
    for pool in (clients, projects, given):
        rng.shuffle(pool)
    pairs = rng.sample(NEAR_SURNAMES, 6)
    for g, surnames in enumerate(pairs):
        if rng.random() < 0.5:
            surnames = surnames[::-1]
        first = given.pop()
        a, b = (_Person(f"{first} {sn}", [clients.pop(), projects.pop()]) for sn in surnames)
        base = g * 6.0
        # A is known first: with its own context, then with the hub.
        s.add(at(base, 9), [(a.name, a.gold)] + a.context)
        s.add(at(base + 0.5, 10), [(a.name, a.gold), _hub(hub)] + rng.sample(a.context, 1))
        s.add(at(base + 1.0, 11), [(a.name, a.gold), _hub(hub)])
        # B arrives later, next to the hub alone, then with its own context; some within
        # the recency window, some weeks after.
        later = base + rng.choice((2.0, 3.5, 12.0))
        s.add(at(later, 9), [(b.name, b.gold), _hub(hub)])
        s.add(at(later + 0.3, 14), [(b.name, b.gold)] + b.context)
        s.add(at(later + 0.8, 15), [(b.name, b.gold), _hub(hub)] + rng.sample(b.context, 1))
        # A true misspelling of A's surname, weeks later, next to A's own client: one person.
        first_name, surname = a.name.split(" ")
        s.add(at(base + 30 + rng.random() * 5, 10),
              [(f"{first_name} {_misspell(rng, surname)}", a.gold)] + rng.sample(a.context, 1))
        # A and B again, each with the hub and sometimes their own context.
        for person in (a, b):
            extra = rng.sample(person.context, 1) if rng.random() < 0.5 else []
            s.add(at(base + 40 + rng.random() * 4, 12), [(person.name, person.gold), _hub(hub)] + extra)
    return s


def given_name_neighbours(rng: random.Random) -> Stream:
    """Two given names one or two letters apart within one surname: two people sharing a household."""
    s = Stream("given_name_neighbours", rng)
    clients, projects, surnames, homes = CLIENTS[:], PROJECTS[:], FAMILY_SURNAMES[:], HOUSEHOLDS[:]
    for pool in (clients, projects, surnames, homes):
        rng.shuffle(pool)
    for g, names in enumerate(rng.sample(NEAR_GIVEN, 7)):
        if rng.random() < 0.5:
            names = names[::-1]
        surname, street = surnames.pop(), homes.pop()
        home = (street, thing_gold(street))
        a, b = (_Person(f"{given} {surname}", [clients.pop(), projects.pop()]) for given in names)
        base = g * 5.0
        s.add(at(base, 9), [(a.name, a.gold), home] + rng.sample(a.context, 1))
        s.add(at(base + 0.4, 10), [(a.name, a.gold)] + a.context)
        later = base + rng.choice((1.5, 4.0, 15.0))
        # The other member of the household, next to the home they share.
        s.add(at(later, 9), [(b.name, b.gold), home])
        s.add(at(later + 0.5, 11), [(b.name, b.gold)] + rng.sample(b.context, 1))
        s.add(at(later + 1.0, 12), [(b.name, b.gold), home] + rng.sample(b.context, 1))
        # A misspelt surname weeks later next to A's own client: the same person.
        s.add(at(base + 35 + rng.random() * 4, 10),
              [(f"{a.name.split(' ')[0]} {_misspell(rng, surname)}", a.gold)] + rng.sample(a.context, 1))
        s.add(at(base + 40 + rng.random() * 4, 10), [(a.name, a.gold), home])
    return s


def shared_first_names(rng: random.Random) -> Stream:
    """Two people of one first name (or one nickname) at one employer; the bare name next to the employer."""
    s = Stream("shared_first_names", rng)
    clients, projects, surnames = CLIENTS[:], PROJECTS[:], OTHER_SURNAMES[:]
    for pool in (clients, projects, surnames):
        rng.shuffle(pool)
    groups: List[Tuple[str, List[str]]] = []
    for first in rng.sample(SHARED_FIRST, 4):
        groups.append((first, [f"{first} {surnames.pop()}", f"{first} {surnames.pop()}"]))
    for nick, one, other in rng.sample(SHARED_NICKNAMES, 3):
        groups.append((nick, [f"{one} {surnames.pop()}", f"{other} {surnames.pop()}"]))
    for g, (bare, full) in enumerate(groups):
        employer = clients.pop()
        people = [_Person(name, [projects.pop()]) for name in full]
        shared = (employer, thing_gold(employer))
        base = g * 5.0
        heard_bare_first = rng.random() < 0.4
        for p, person in enumerate(people):
            day = base + p * 1.5
            if p == 1 and heard_bare_first:
                # The second one first heard of by the bare name, next to the employer.
                s.add(at(day - 0.5, 9), [(bare, person.gold), shared])
            s.add(at(day, 10), [(person.name, person.gold), shared] + person.context)
            s.add(at(day + 0.3, 11), [(person.name, person.gold)] + person.context)
        later = [(person, kind) for person in people for kind in ("shared", "own", rng.choice(("shared", "own")))]
        rng.shuffle(later)
        for n, (person, kind) in enumerate(later):
            context = [shared] if kind == "shared" else person.context
            s.add(at(base + 3.2 + n * 0.3, 9 + n % 8), [(bare, person.gold)] + context)
    return s


FAMILIES: Dict[str, Callable[[random.Random], Stream]] = {
    "hub_namesakes": hub_namesakes,
    "given_name_neighbours": given_name_neighbours,
    "shared_first_names": shared_first_names,
}


def generate(seed: int) -> Dict[str, str]:
    """Family name -> its stream (JSON lines) for one seed."""
    out = {}
    for i, (name, fn) in enumerate(FAMILIES.items()):
        rng = random.Random(seed * 1000 + i)
        out[name] = "\n".join(fn(rng).lines()) + "\n"
    return out


def write(seed: int, folder: Path) -> List[Path]:
    """Write the families of one seed to ``folder`` (one file each, file stem = family)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in generate(seed).items():
        path = folder / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


# -- measuring the levers -----------------------------------------------------------

REFERENCE = "reference"
ENHANCED = "enhanced"


def lever_settings() -> Dict[str, Dict[str, Any]]:
    """The configurations compared: the reference, each lever alone over it, and the whole enhanced profile.

    "Each lever alone" is the enhanced profile with every other lever off:
    the reference's decisions plus that one lever's.
    """
    levers = _levers()
    configs: Dict[str, Dict[str, Any]] = {REFERENCE: {"profile": "reference"}}
    for name in levers:
        configs[name] = {"profile": "enhanced", **{other: other == name for other in levers}}
    configs[ENHANCED] = {"profile": "enhanced"}
    return configs


def _levers() -> Tuple[str, ...]:
    """The lever names, from the resolver's own settings module (plpython/settings.py)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "plpython" / "settings.py"
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location("_heldout_settings", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return tuple(module.LEVERS)


def _figures(result: Dict[str, Any]) -> Dict[str, Any]:
    return {"bcubed_f1": result["bcubed"]["f1"], "wrong_merges": result["wrong_merges"],
            "fragmented": result["fragmented"], "mentions_scored": result["mentions_scored"],
            "merges": [m["entity"] + ": " + ", ".join(g["gold"] for g in m["gold"]) for m in result["worst_merges"]]}


def measure(conn_or_dsn: Any, seeds: Sequence[int] = HELDOUT_SEEDS, schema: str = "entity_resolver",
            configs: Optional[Dict[str, Dict[str, Any]]] = None,
            progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """Replay every held-out family of every seed under each configuration (``lever_settings``).

    Returns {"seeds": [...], "configs": {config: {seed: {family: figures}}}},
    figures being B-cubed F1, wrong merges, fragmented identities and the
    merged entities. ``added_wrong_merges`` (per configuration, per seed and
    family: its wrong merges minus the reference's) is what the guard checks.
    """
    from entity_resolver.evaluate import run_eval

    say = progress or (lambda msg: None)
    configs = configs or lever_settings()
    out: Dict[str, Any] = {"seeds": list(seeds), "configs": {}}
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        folders = {}
        for seed in seeds:
            folders[seed] = Path(tmp) / str(seed)
            write(seed, folders[seed])
        for name, settings in configs.items():
            say(f"held-out families: {name}")
            per_seed = {}
            for seed, folder in folders.items():
                result = run_eval(conn_or_dsn, folder, schema, settings=settings)
                per_seed[str(seed)] = {family: _figures(r) for family, r in result["families"].items()}
            out["configs"][name] = per_seed
    out["added_wrong_merges"] = added_wrong_merges(out)
    return out


def added_wrong_merges(measured: Dict[str, Any]) -> Dict[str, int]:
    """Per configuration: the wrong merges it makes beyond the reference's, summed over streams where it makes more."""
    ref = measured["configs"][REFERENCE]
    added = {}
    for name, per_seed in measured["configs"].items():
        added[name] = sum(max(0, fams[f]["wrong_merges"] - ref[seed][f]["wrong_merges"])
                          for seed, fams in per_seed.items() for f in fams)
    return added


def summary(measured: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Per configuration over every stream: wrong merges, the added ones, mean B-cubed F1 and its gain."""
    ref = measured["configs"][REFERENCE]
    out = {}
    for name, per_seed in measured["configs"].items():
        streams = [(seed, f) for seed, fams in per_seed.items() for f in fams]
        f1 = sum(per_seed[s][f]["bcubed_f1"] for s, f in streams) / len(streams)
        ref_f1 = sum(ref[s][f]["bcubed_f1"] for s, f in streams) / len(streams)
        out[name] = {"wrong_merges": sum(per_seed[s][f]["wrong_merges"] for s, f in streams),
                     "added_wrong_merges": measured["added_wrong_merges"][name],
                     "bcubed_f1": round(f1, 4), "bcubed_f1_gain": round(f1 - ref_f1, 4),
                     "streams_losing_f1": sum(1 for s, f in streams
                                              if per_seed[s][f]["bcubed_f1"] < ref[s][f]["bcubed_f1"])}
    return out


def markdown(measured: Dict[str, Any]) -> str:
    """The per-lever table of ``measure`` (docs/benchmarks.md, docs/accuracy.md)."""
    seeds = ", ".join(str(s) for s in measured["seeds"])
    families = sorted(next(iter(measured["configs"][REFERENCE].values())))
    lines = [f"Held-out families ({', '.join(families)}; seeds {seeds}; `bench/heldout.py`), each "
             "configuration replayed fact by fact: wrong merges over all streams, those beyond the reference's "
             "on the same stream, mean B-cubed F1 and its gain over the reference, streams whose B-cubed F1 is "
             "under the reference's.", "",
             "| configuration | wrong merges | added over the reference | B³ F1 (mean) | Δ B³ F1 "
             "| streams losing F1 |", "|---|---:|---:|---:|---:|---:|"]
    for name, row in summary(measured).items():
        label = name if name in (REFERENCE, ENHANCED) else f"`{name}` alone"
        lines.append(f"| {label} | {row['wrong_merges']} | {row['added_wrong_merges']} "
                     f"| {100 * row['bcubed_f1']:.1f} | {100 * row['bcubed_f1_gain']:+.1f} "
                     f"| {row['streams_losing_f1']} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", help="a database with entity_resolver installed (needed unless --write)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(HELDOUT_SEEDS))
    parser.add_argument("--write", type=Path, help="write the streams of --seed to this folder and stop")
    parser.add_argument("--seed", type=int, default=HELDOUT_SEEDS[0])
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args(argv)
    if args.write is not None:
        for path in write(args.seed, args.write):
            print(f"wrote {path}")
        return 0
    if args.dsn is None:
        parser.error("--dsn: needed to replay the streams")
    measured = measure(args.dsn, args.seeds, progress=lambda msg: print(msg, file=sys.stderr))
    print(json.dumps(measured, indent=1) if args.json else markdown(measured))
    return 1 if any(measured["added_wrong_merges"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
