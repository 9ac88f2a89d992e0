"""The cost of a maximum-size call (issue 10): the default limits, reached.

* one ``resolve_mentions`` call of ``max_mentions_per_fact`` (1,000) new names
  without nearby, each the others' context: the quadratic case the limit bounds;
* one ``INSERT INTO facts`` of ``max_mentions_per_call`` (10,000) mentions, as
  2,500 facts of 4: linear in the facts.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any, Dict

import psycopg
from psycopg import sql

from bench.names import FIRST, SYLLABLES
from bench.workloads import SCHEMA


def _names(rng: random.Random, n: int) -> list:
    out = set()
    while len(out) < n:
        out.add(f"{rng.choice(FIRST)} {rng.choice(SYLLABLES).title()}{rng.choice(SYLLABLES)}{rng.randint(1, 99)}")
    return sorted(out)


def measure_max_calls(conn: psycopg.Connection, seed: int = 7) -> Dict[str, Any]:
    rng = random.Random(seed)
    s = sql.Identifier(SCHEMA)
    out: Dict[str, Any] = {}
    with conn.transaction(force_rollback=True):
        names = _names(rng, 1000)
        t = time.perf_counter()
        conn.execute(sql.SQL("SELECT count(*) FROM {}.resolve_mentions('limits-a', %s)").format(s),
                     (json.dumps(names),))
        out["resolve_mentions_1000_ms"] = round(1000 * (time.perf_counter() - t), 1)
    with conn.transaction(force_rollback=True):
        pool = _names(rng, 3000)
        facts = [json.dumps(rng.sample(pool, 4)) for _ in range(2500)]
        t = time.perf_counter()
        conn.execute(sql.SQL("INSERT INTO {}.facts (bank_id, mentions) SELECT 'limits-b', m"
                             " FROM unnest(%s::jsonb[]) AS m").format(s), (facts,))
        out["insert_10000_mentions_ms"] = round(1000 * (time.perf_counter() - t), 1)
    return out


def markdown(result: Dict[str, Any]) -> str:
    return "\n".join([
        "## The cost of a maximum-size call",
        "",
        "At the default limits, into an empty bank (rolled back): one `resolve_mentions` of 1,000 new names "
        f"without nearby (each the others' context) took {result['resolve_mentions_1000_ms']:,.0f} ms; one "
        f"`INSERT` of 2,500 facts of 4 mentions (10,000 mentions) took {result['insert_10000_mentions_ms']:,.0f} ms.",
        "",
    ])
