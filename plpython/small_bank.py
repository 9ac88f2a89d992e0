"""The probe of a small bank in a crowded table: its names read whole and compared here.

The trigram index holds every bank's names, so a key's probe decodes posting
lists as long as the whole table's, however small its own bank (a bank of 1,000
entities beside 1,000,000 others: 7-9 times its probe alone, docs/benchmarks.md
findings 13 and 19). Such a bank is cheaper to read whole, once per call, and
to compare with the keys here: trigrams.similarity is pg_trgm's float4 bit for
bit, from the trigram sets PostgreSQL makes (show_trgm). The rows a key gets
are those of probe.SQL_PROBE: every name at or above the probe threshold (only
the identical ones, similarity 1.0, for a narrow key), by similarity and then
the statement's order (lower(canonical_name), type, id), cut at the same
limit. So which way a call probes changes its cost, never its answer
(tests/db/test_shortcut_equivalence.py holds both ways to explain_mention).

A session keeps what does not change: a name's trigram set depends only on the
name, and a bank's map from trigram to names changes only by the names added
or gone since the last read, so a call reads the bank's names and asks
PostgreSQL only for the trigrams of names it has not seen.

entity_resolver.small_bank_probe chooses: auto (the default) reads the bank when
the cost model below says it is cheaper; on reads any bank of at most BANK_MAX
regular entities; off always uses the index.
"""

from collections import Counter
from typing import Any, Collection, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import db
import trigrams
from mentions import datetime_of
from scoring import Candidate

# The most regular entities a bank may have to be read whole.
BANK_MAX = 5000
# The cost model, from this machine's medians (docs/benchmarks.md finding 19):
# beside other banks the index costs about INDEX_NS_PER_TABLE_ROW ns per key
# and row of the table; reading a bank whole and comparing costs about
# READ_NS_PER_NAME ns per name (a first read, which also makes the names' trigrams).
INDEX_NS_PER_TABLE_ROW = 3.7
READ_NS_PER_NAME = 24000.0
# Below this many names, the index is as cheap: not worth a read that may be wasted.
WORTH_MIN = 100
# What a session keeps: the trigram sets of this many names at most, and the
# maps of the banks it read last up to as many names in all (about 2.6 KB a
# name: some 30 MB at most, in a session that reads small banks at all).
NAMES_KEPT = 10000

# Banks this session found larger than a read was worth: bank_id -> the size
# exceeded. Being wrong here costs time, never an answer.
_LARGER: Dict[str, int] = {}
# Banks this session counted and found small enough to read.
_COUNTED: Set[str] = set()
_TRIGRAMS: Dict[str, FrozenSet[str]] = {}
_MAPS: Dict[str, "NameMap"] = {}

# The bank's regular names, at most $2, as one row of columns (arrays), each
# name with its rank in the probe's tie order. Arrays, not a row per name:
# PL/Python makes a dict of each row, which cost more than reading the names
# (1,001 names beside 1,000,000: 4.3-5.7 ms a read as rows, 3.1-4.1 as
# arrays, 1.5-1.8 for the statement alone; docs/benchmarks.md).
SQL_SMALL_BANK = """
SELECT count(*) AS n, array_agg(r.key) AS key, array_agg(r.canonical_name) AS canonical_name,
       array_agg(r.last_seen) AS last_seen, array_agg(r.entity_type) AS entity_type, array_agg(r.id) AS id,
       array_agg(r.homonym) AS homonym, array_agg(r.rank) AS rank
  FROM (SELECT b.key, b.canonical_name, b.last_seen, b.entity_type, b.id::text AS id, b.homonym,
               row_number() OVER (ORDER BY b.key ASC, coalesce(b.entity_type, '') ASC, b.id ASC) AS rank
          FROM (SELECT e.id, e.canonical_name, e.entity_type, lower(e.canonical_name) AS key,
                       extract(EPOCH FROM e.last_seen)::float8 AS last_seen, e.homonym IS NOT NULL AS homonym
                  FROM entities AS e
                 WHERE e.bank_id = $1 AND e.entity_kind <> 'label'
                 ORDER BY lower(e.canonical_name) ASC, coalesce(e.entity_type, '') ASC, e.id ASC
                 LIMIT $2) AS b) AS r
"""

# How many regular entities the bank holds, counted up to $2 (in the primary
# key's order: its index answers, where SQL_SMALL_BANK's order sorts the bank).
SQL_SMALL_BANK_SIZE = """
SELECT count(*) AS n
  FROM (SELECT 1 FROM entities AS e
         WHERE e.bank_id = $1 AND e.entity_kind <> 'label'
         ORDER BY e.id
         LIMIT $2) AS b
"""

# The trigrams of texts this session has not seen yet (show_trgm's elements joined).
SQL_TRIGRAMS = """
SELECT t.text, array_to_string(@trgm@.show_trgm(t.text), chr(%d)) AS tri
  FROM unnest($1::text[]) AS t (text)
""" % ord(trigrams.SEPARATOR)


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


class NameMap:
    """A bank's names, each with its trigram set, and the names holding each trigram."""

    def __init__(self) -> None:
        self.sets: Dict[str, FrozenSet[str]] = {}
        self.sizes: Dict[str, int] = {}               # name -> len(its trigram set)
        self.postings: Dict[str, Set[str]] = {}
        # The names of each trigram set: similarity 1.0 is an equal set, so the
        # identical names of a key are one look-up (a narrow key's probe).
        self.same: Dict[FrozenSet[str], Set[str]] = {}

    def update(self, current: Dict[str, FrozenSet[str]], only: Optional[FrozenSet[str]] = None) -> None:
        """Become the map of exactly ``current`` (name -> trigram set).

        ``only``: the trigrams of every key the map will be asked about; the
        names holding any other are not listed (matches walks only a key's
        trigrams and counts their names: the same answer). Only for a map
        made once, whose names never go.
        """
        self.keep(current, current, only)

    def keep(self, names: Collection[str], new_sets: Mapping[str, FrozenSet[str]],
             only: Optional[FrozenSet[str]] = None) -> None:
        """Become the map of exactly ``names``; ``new_sets`` holds the trigram set of each name not in it yet
        (a name's set depends only on the name, so the others are not asked for again)."""
        for name in [n for n in self.sets if n not in names]:
            del self.sizes[name]
            s = self.sets.pop(name)
            self.same[s].discard(name)
            if not self.same[s]:
                del self.same[s]
            for t in s:
                self.postings[t].discard(name)
                if not self.postings[t]:
                    del self.postings[t]
        for name in names:
            if name not in self.sets:
                s = new_sets[name]
                self.sets[name] = s
                self.sizes[name] = len(s)
                self.same.setdefault(s, set()).add(name)
                for t in (s if only is None else s & only):
                    self.postings.setdefault(t, set()).add(name)

    def matches(self, key: FrozenSet[str], threshold: float) -> List[Tuple[float, str]]:
        """(similarity, name) of every name at or above ``threshold`` (at 0: every name sharing a trigram).

        A name reaching the threshold holds one of the key's rarest
        trigrams.prefix_length of them: only those are walked, counting how
        many of them each name holds. With the few trigrams not walked, that
        is how many it shares with the key, which says whether it reaches
        the threshold (trigrams.least_common): in a window of 10,000 names,
        most names a key's walked trigrams reach share one or two, and only
        the names that reach it have their similarity computed.
        """
        if not key:
            return []
        if threshold >= 1.0:
            # Only an equal set reaches 1.0: c / (|a| + |b| - c) = 1 means c = |a| = |b|, and no
            # name is long enough for float4 to round a smaller quotient up to 1.
            return [(1.0, name) for name in self.same.get(key, ())]
        by_rarity = sorted(key, key=lambda t: (len(self.postings.get(t, ())), t))
        walked = trigrams.prefix_length(len(key), threshold)
        held: Counter = Counter()
        for t in by_rarity[:walked]:
            held.update(self.postings.get(t, ()))
        rest = frozenset(by_rarity[walked:])
        n_rest, n_key = len(rest), len(key)
        least = trigrams.least_common(n_key, threshold)
        sets, sizes = self.sets, self.sizes
        if least is None:
            hopeful = list(held)
        else:
            # Of each size, how many walked trigrams a name must hold to reach the threshold with every
            # one not walked: most names hold one or two, and are left here, in one pass.
            walked_least = [need - n_rest for need in least]
            n_least = len(walked_least)
            hopeful = [name for name, n in held.items()
                       if sizes[name] < n_least and n >= walked_least[sizes[name]]]
        out = []
        for name in hopeful:
            other = sets[name]
            size = sizes[name]
            common = held[name] + len(rest & other)
            if common >= (1 if least is None else least[size]):
                out.append((trigrams.of_counts(common, n_key, size), name))
        return out


class Rows:
    """Names as read, one list per column, in the probe's tie order: row n is (key[n], id[n], ...)."""

    COLUMNS = ("key", "canonical_name", "last_seen", "entity_type", "id", "homonym")
    __slots__ = COLUMNS

    def __init__(self, **columns: List[Any]) -> None:
        for c in self.COLUMNS:
            setattr(self, c, columns[c])

    @classmethod
    def of_arrays(cls, row: dict) -> "Rows":
        """The columns of SQL_SMALL_BANK's one row, put in rank order."""
        if not row["n"]:
            return cls(**{c: [] for c in cls.COLUMNS})
        rank = row["rank"]
        if any(rank[n] != n + 1 for n in range(len(rank))):
            # array_agg takes the ranked rows in the order they come; should that ever not be rank order,
            # put them in it.
            order = sorted(range(len(rank)), key=rank.__getitem__)
            return cls(**{c: [row[c][n] for n in order] for c in cls.COLUMNS})
        return cls(**{c: row[c] for c in cls.COLUMNS})

    def row(self, n: int) -> Tuple[str, str, Optional[float], Optional[str], bool, str]:
        """Row n's (id, key, last_seen, entity_type, homonym, canonical_name)."""
        return self.id[n], self.key[n], self.last_seen[n], self.entity_type[n], self.homonym[n], \
            self.canonical_name[n]

    def __len__(self) -> int:
        return len(self.key)


class DictRows:
    """Names as read a dict per row (the neighbourhood's statement), in the probe's tie order; as Rows.

    Left as dicts: a call reads thousands and uses the few that match.
    """

    __slots__ = ("rows", "key")

    def __init__(self, rows: Sequence[dict]) -> None:
        self.rows = rows
        self.key = [r["key"] for r in rows]

    def row(self, n: int) -> Tuple[str, str, Optional[float], Optional[str], bool, str]:
        """Row n's (id, key, last_seen, entity_type, homonym, canonical_name)."""
        r = self.rows[n]
        return r["id"], r["key"], r["last_seen"], r["entity_type"], r["homonym"], r["canonical_name"]

    def __len__(self) -> int:
        return len(self.key)


class SmallBank:
    """A bank's regular names as read (in the probe's tie order), its map, and the keys' trigram sets."""

    def __init__(self, keys: Dict[str, FrozenSet[str]], rows: Union[Rows, DictRows], name_map: NameMap):
        self.keys = keys
        self.rows = rows
        self.map = name_map
        self.rows_of: Dict[str, List[int]] = {}
        for n, key in enumerate(rows.key):
            self.rows_of.setdefault(key, []).append(n)

    def matches(self, key: str, threshold: float) -> List[Tuple[float, int]]:
        """(similarity, row) of every row at or above ``threshold``, best first, ties in row order."""
        out = [(sim, n) for sim, name in self.map.matches(self.keys.get(key) or frozenset(), threshold)
               for n in self.rows_of.get(name, ())]
        out.sort(key=lambda hit: (-hit[0], hit[1]))
        return out

    def candidates(self, keys: Sequence[str], limit: Optional[int], threshold: float, identical_only: bool = False,
                   near: bool = False) -> Tuple[Dict[str, List[Candidate]], Dict[str, str]]:
        """probe.candidates' answer (or the identical rows only), from the names read; None: no limit.
        ``near``: the candidates are of a neighbourhood (Candidate.near)."""
        by_key: Dict[str, List[Candidate]] = {}
        names: Dict[str, str] = {}
        for key in keys:
            by_key[key] = []
            for sim, n in self.matches(key, 1.0 if identical_only else threshold)[:limit]:
                id_, name_key, last_seen, entity_type, homonym, name = self.rows.row(n)
                by_key[key].append(Candidate(id_, name_key, sim, datetime_of(last_seen), entity_type=entity_type,
                                             homonym=homonym, near=near))
                names[id_] = name
        return by_key, names


def trigram_sets(plpy, texts: Iterable[str]) -> Dict[str, FrozenSet[str]]:
    """Each text's trigram set: from this session's memory, PostgreSQL asked only for the others."""
    wanted = set(texts)
    missing = sorted(t for t in wanted if t not in _TRIGRAMS)
    if missing:
        if len(_TRIGRAMS) + len(missing) > NAMES_KEPT:
            # Forget them all; this call's names are then all to be asked for.
            _TRIGRAMS.clear()
            missing = sorted(wanted)
        rows = db.run(plpy, "small_bank_trigrams", SQL_TRIGRAMS, ["text[]"], [missing])
        for r in rows:
            _TRIGRAMS[r["text"]] = trigrams.parse(r["tri"])
    return {t: _TRIGRAMS[t] for t in wanted}


def _map_of(bank_id: str) -> NameMap:
    """The bank's map, kept last in line; the maps read longest ago go while they hold too many names."""
    name_map = _MAPS.pop(bank_id, None) or NameMap()
    while _MAPS and sum(len(m.sets) for m in _MAPS.values()) + len(name_map.sets) > NAMES_KEPT:
        _MAPS.pop(next(iter(_MAPS)))
    _MAPS[bank_id] = name_map
    return name_map


def read(plpy, bank, keys: Sequence[str], mode: str, table_rows: float) -> Optional[SmallBank]:
    """The bank read whole for these keys, when that is worth it and it is small enough; None: use the index.

    Only where the probe's operators are LEAKPROOF (this installation's
    operator class). Not on Citus, where each shard's index holds only that
    shard's banks.
    """
    most = worth_reading(mode, len(keys), table_rows)
    if most == 0 or most <= _LARGER.get(bank.id, 0) or not db.leakproof_probe(plpy):
        return None
    # Counted first, once a session: reading the names in order sorts the whole
    # bank, however large (90 ms at 100,000 entities, paid by every session
    # whose calls grow). A bank found small and grown since costs one such read.
    if bank.id not in _COUNTED:
        if db.run(plpy, "small_bank_size", SQL_SMALL_BANK_SIZE, ["text", "int"], [bank.id, most + 1])[0]["n"] > most:
            _LARGER[bank.id] = most
            return None
        _COUNTED.add(bank.id)
    rows = Rows.of_arrays(db.run(plpy, "small_bank", SQL_SMALL_BANK, ["text", "int"], [bank.id, most + 1])[0])
    if len(rows) > most:
        _LARGER[bank.id] = most
        return None
    name_map = _map_of(bank.id)
    present = set(rows.key)
    sets = trigram_sets(plpy, [k for k in present if k not in name_map.sets] + list(keys))
    name_map.keep(present, sets)
    return SmallBank({k: sets[k] for k in keys}, rows, name_map)
