"""What the benchmark writes and reads: a generated bank, and retains against it.

A bank is loaded set-based (COPY, not through the resolver): seeded names
(people, organisations, projects, numbered things), a co-occurrence graph of
small communities (1-4 partners each) plus a dozen hubs ("user", "the team",
...) each next to 1.5 % of the bank, and last_seen dates over 60 days.

A retain is what an agent stores at once: about ten facts of 4-8 mentions,
58 mentions in all, mixing exact repeats, case variants, typos, bare first
names, hubs and new names.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Dict, List, Optional, Sequence, Tuple

import psycopg

from bench.names import HUBS, generate_names, new_name, typo

SCHEMA = "entity_resolver"
BATCH_MENTIONS = 58
SEED = 58
HUB_SHARE = 0.015
COMMUNITY = 40
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)


@dataclass
class Bank:
    """What the batch generator needs to know about a built bank."""

    bank_id: str
    size: int
    names: List[str]
    kinds: List[str]                  # person / org / project / numbered / hub
    seconds: float = 0.0
    pairs: int = 0

    def community(self, i: int) -> range:
        start = (i // COMMUNITY) * COMMUNITY
        return range(start, min(start + COMMUNITY, self.size))


def build_bank(conn: psycopg.Connection, size: int, seed: int = SEED, bank_id: Optional[str] = None) -> Bank:
    """Load a bank of ``size`` entities and its co-occurrence graph with COPY; return it.

    The same ``size`` and ``seed`` give the same names, ids and graph whatever ``bank_id``.
    """
    started = time.monotonic()
    rng = random.Random(seed * 7919 + size)
    bank_id = bank_id or f"bench-{size}"
    names, kinds = generate_names(size, rng)
    ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(size)]
    conn.execute("INSERT INTO banks (bank_id) VALUES (%s)", (bank_id,))
    with conn.cursor().copy(
            "COPY entities (bank_id, id, canonical_name, entity_kind, mention_count, first_seen, last_seen)"
            " FROM STDIN") as copy:
        for i in range(size):
            last = NOW - timedelta(minutes=rng.randrange(60 * 24 * 60))
            first = last - timedelta(minutes=rng.randrange(60 * 24 * 120))
            copy.write_row((bank_id, ids[i], names[i], "regular", rng.randrange(1, 40), first, last))
    # The graph: small communities (a person's project, team, company) and hubs.
    pairs: Dict[Tuple[uuid.UUID, uuid.UUID], int] = {}

    def pair(a: int, b: int) -> None:
        if a == b:
            return
        x, y = ids[a], ids[b]
        key = (x, y) if x < y else (y, x)
        pairs[key] = pairs.get(key, 0) + rng.randrange(1, 4)

    nhubs = len(HUBS)
    for i in range(nhubs, size):
        members = [j for j in range(max(nhubs, (i // COMMUNITY) * COMMUNITY),
                                    min(size, (i // COMMUNITY + 1) * COMMUNITY)) if j != i]
        for j in rng.sample(members, min(len(members), rng.choice((1, 1, 2, 2, 3, 4)))):
            pair(i, j)
    per_hub = max(1, int(size * HUB_SHARE))
    for h in range(nhubs):
        for j in rng.sample(range(nhubs, size), min(size - nhubs, per_hub)):
            pair(h, j)
    with conn.cursor().copy(
            "COPY entity_cooccurrences (bank_id, entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)"
            " FROM STDIN") as copy:
        for (a, b), n in pairs.items():
            copy.write_row((bank_id, a, b, n, NOW - timedelta(minutes=rng.randrange(60 * 24 * 60))))
    # VACUUM also empties the trigram index's pending list (gin fastupdate),
    # which a steady-state bank has flushed long ago.
    conn.execute("VACUUM ANALYZE entities")
    conn.execute("VACUUM ANALYZE entity_cooccurrences")
    return Bank(bank_id, size, names, kinds, time.monotonic() - started, len(pairs))


def make_retain(bank: Bank, rng: random.Random, mentions: int = BATCH_MENTIONS) -> List[List[str]]:
    """One retain: about ten facts of 4-8 mention texts, ``mentions`` in all."""
    facts: List[List[str]] = []
    left = mentions
    while left > 0:
        n = min(left, rng.randint(4, 8))
        if 0 < left - n < 4:
            n = left
        left -= n
        anchor = rng.randrange(len(HUBS), bank.size)
        community = [j for j in bank.community(anchor) if bank.kinds[j] != "hub"] or [anchor]
        texts: List[str] = []
        for _ in range(n):
            roll = rng.random()
            j = rng.choice(community)
            name = bank.names[j]
            if roll < 0.40:
                text = name                                  # exact repeat
            elif roll < 0.50:
                text = name.lower() if rng.random() < 0.5 else name.upper()
            elif roll < 0.65:
                text = typo(rng, name)
            elif roll < 0.72 and bank.kinds[j] == "person":
                text = name.split(" ")[0]                    # bare first name
            elif roll < 0.78:
                text = rng.choice(HUBS)
            else:
                text = new_name(rng)
            texts.append(text)
        facts.append(texts)
    return facts


def retain_json(facts: Sequence[Sequence[str]]) -> str:
    """resolve_mentions elements: each mention with the other mentions of its fact as nearby."""
    items = []
    for texts in facts:
        for k, t in enumerate(texts):
            items.append({"text": t, "nearby": list(texts[:k]) + list(texts[k + 1:])})
    return json.dumps(items, ensure_ascii=False)
