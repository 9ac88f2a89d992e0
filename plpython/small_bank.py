"""The probe of a small bank in a crowded table: its names read whole and compared here.

The trigram index holds every bank's names, so a key's probe decodes posting
lists as long as the whole table's, however small its own bank (a bank of 1,000
entities beside 1,000,000 others: 7-9 times its probe alone, docs/benchmarks.md
findings 13 and 19). Such a bank is cheaper to read whole, once per call, with
each name's trigrams (show_trgm), and to compare with the keys here:
trigrams.similarity is pg_trgm's float4 bit for bit. The rows a key gets are
those of probe.SQL_PROBE: every name at or above the probe threshold (only the
identical ones, similarity 1.0, for a narrow key), by similarity and then the
statement's order (lower(canonical_name), type, id), cut at the same limit. So
which way a call probes changes its cost, never its answer
(tests/db/test_shortcut_equivalence.py holds both ways to explain_mention).

entity_resolver.small_bank_probe chooses: auto (the default) reads the bank when
the cost model below says it is cheaper; on reads any bank of at most BANK_MAX
regular entities; off always uses the index.
"""

import math
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import db
import trigrams
from mentions import datetime_of
from scoring import Candidate

# The most regular entities a bank may have to be read whole.
BANK_MAX = 5000
# The cost model, from this machine's medians (docs/benchmarks.md finding 19):
# beside other banks the index costs about INDEX_NS_PER_TABLE_ROW ns per key
# and row of the table; reading a bank whole and comparing costs about
# READ_NS_PER_NAME ns per name.
INDEX_NS_PER_TABLE_ROW = 3.7
READ_NS_PER_NAME = 24000.0
# Below this many names, the index is as cheap: not worth a read that may be wasted.
WORTH_MIN = 100

# Banks this session found larger than a read was worth: bank_id -> the size
# exceeded. A bank only grows in a session's eyes here; being wrong costs time,
# never an answer.
_LARGER: Dict[str, int] = {}

# The keys' trigrams and the bank's regular names with theirs, in one
# statement: part 'key' in the keys' order (rank: the key's position), part
# 'name' in the probe's tie order (rank), at most $3 names.
SQL_SMALL_BANK = """
SELECT 'key' AS part, k.i AS rank, k.key AS name, NULL AS id, NULL AS canonical_name,
       array_to_string(@trgm@.show_trgm(k.key), chr(%d)) AS tri, NULL::float8 AS last_seen,
       NULL AS entity_type
  FROM unnest($2::text[]) WITH ORDINALITY AS k (key, i)
UNION ALL
SELECT 'name' AS part,
       row_number() OVER (ORDER BY b.name ASC, coalesce(b.entity_type, '') ASC, b.id ASC) AS rank,
       b.name, b.id::text AS id, b.canonical_name,
       array_to_string(@trgm@.show_trgm(b.name), chr(%d)) AS tri, b.last_seen, b.entity_type
  FROM (SELECT e.id, e.canonical_name, lower(e.canonical_name) AS name, e.entity_type,
               extract(EPOCH FROM e.last_seen)::float8 AS last_seen
          FROM entities AS e
         WHERE e.bank_id = $1 AND e.entity_kind <> 'label'
         ORDER BY lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
         LIMIT $3) AS b
""" % (ord(trigrams.SEPARATOR), ord(trigrams.SEPARATOR))


def worth_reading(mode: str, n_keys: int, table_rows: float) -> int:
    """The most names a bank may have for reading it whole to pay (0: use the index)."""
    if mode == "off" or n_keys <= 0:
        return 0
    if mode == "on":
        return BANK_MAX
    if table_rows <= 0:
        return 0
    most = min(BANK_MAX, int(n_keys * table_rows * INDEX_NS_PER_TABLE_ROW / READ_NS_PER_NAME))
    return most if most >= WORTH_MIN else 0


class SmallBank:
    """A bank's regular names with their trigram sets, and the keys' trigram sets."""

    def __init__(self, keys: Dict[str, FrozenSet[str]], rows: Sequence[dict]):
        self.keys = keys
        self.rows = list(rows)                     # in the probe's tie order
        self.sets = [trigrams.parse(r["tri"]) for r in self.rows]
        self.postings: Dict[str, List[int]] = {}
        for n, s in enumerate(self.sets):
            for t in s:
                self.postings.setdefault(t, []).append(n)

    def matches(self, key: str, threshold: float) -> List[Tuple[float, int]]:
        """(similarity, row) of every name at or above ``threshold`` (> 0), best first, ties in row order.

        A name reaching similarity t shares at least t * |key| of the key's
        trigrams (similarity <= common / |key|), so it holds one of any
        |key| - ceil(t * |key|) + 1 of them: only the rarest that many are
        walked. The bound is lowered by a millionth, more than the float4
        rounding of a similarity can gain.
        """
        a = self.keys.get(key) or frozenset()
        if not a:
            return []
        need = max(1, math.ceil(threshold * len(a) * (1 - 1e-6)))
        rare = sorted(a, key=lambda t: (len(self.postings.get(t, ())), t))[:len(a) - need + 1]
        seen = set()
        out = []
        for t in rare:
            for n in self.postings.get(t, ()):
                if n in seen:
                    continue
                seen.add(n)
                sim = trigrams.similarity(a, self.sets[n])
                if sim >= threshold:
                    out.append((sim, n))
        out.sort(key=lambda hit: (-hit[0], hit[1]))
        return out

    def candidates(self, keys: Sequence[str], limit: int, threshold: float,
                   identical_only: bool = False) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
        """probe.candidates' answer (or the identical rows only), from the names read."""
        by_key: Dict[str, List[Candidate]] = {}
        names: Dict[str, str] = {}
        for key in keys:
            hits = self.matches(key, 1.0 if identical_only else threshold)[:limit]
            by_key[key] = []
            for sim, n in hits:
                r = self.rows[n]
                by_key[key].append(Candidate(r["id"], r["name"], sim, datetime_of(r["last_seen"]),
                                             entity_type=r["entity_type"]))
                names[r["id"]] = r["canonical_name"]
        return by_key, names


def read(plpy, bank, keys: Sequence[str], mode: str, table_rows: float) -> Optional[SmallBank]:
    """The bank read whole for these keys, when that is worth it and it is small enough; None: use the index.

    Only where the probe's operators are LEAKPROOF (this installation's
    operator class). Not on Citus, where each shard's index holds only that
    shard's banks.
    """
    most = worth_reading(mode, len(keys), table_rows)
    if most == 0 or most <= _LARGER.get(bank.id, 0) or not db.leakproof_probe(plpy):
        return None
    rows = db.run(plpy, "small_bank", SQL_SMALL_BANK, ["text", "text[]", "int"], [bank.id, list(keys), most + 1])
    names = sorted((r for r in rows if r["part"] == "name"), key=lambda r: r["rank"])
    if len(names) > most:
        _LARGER[bank.id] = most
        return None
    return SmallBank({r["name"]: trigrams.parse(r["tri"]) for r in rows if r["part"] == "key"}, names)
