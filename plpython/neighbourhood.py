"""Candidates from a call's neighbourhood, not from every name of the bank (issue 34, docs/design.md 3.11).

Under the enhanced profile, and where the name signal alone cannot reach the
threshold (decide.neighbourhood_suffices), a candidate outside a mention's
neighbourhood never changes its decision. The neighbourhood is read from
three small sources instead of the bank's whole trigram index:

- **the same name**: every name holding the key (or a probed form of it) as a
  whole extent of its words (the trigram index's strict word similarity at 1,
  answered from its shortest posting lists): the identical trigram sets, and
  "acme" in "Acme Inc", "ACME Corp" (legal forms aside, one organisation's
  name); for a one-word mention, the names holding one of its fit words
  ("harry", "harold"), similar enough to the key, that can matter: its
  identical trigram sets, one organisation's name, a nearby hub's partners,
  and those the other sources find (every Rania of a bank of 1,000,000 is
  5,000 names, of which a hub is next to about 1.5 %: the others are read
  and left, _kept); exact names, aliases and forms come from the exact
  look-up, as always;
- **partners**: every entity co-occurring with an entity a nearby name of the
  call names (by name or alias, its legal forms aside too), the pairs this
  transaction queued included, unless that entity is a hub (seen with more
  than decide.HUB_PARTNERS others): a hub's partners change no decision
  (decide.hubs_unread_suffice) but as entities a one-word name fits, and
  those hold one of its fit_words, which the same-name source keeps;
- **recent entities**: every entity last seen within the recency window of an
  event date of the call (through entities_bank_last_seen_idx), and every entity
  this transaction queued a date for. Only those similar to a key can be
  candidates: a window holding more names than finding those would cost
  (window_whole_max: a burst of facts on one day, a bank whose whole
  history is a few weeks) is read through the trigram index instead, its
  names at the probe's similarity to a key;

The entities the call's exact look-up found (and the holders of its
identifiers) join them: an entity the call resolves early is recent, and a
partner, for its later facts. The rows read are compared with each key here
(small_bank.SmallBank: pg_trgm's similarity bit for bit), in the probe's order,
uncut: the full evaluation scores a mention's whole neighbourhood beside the
probe's limit (candidates.py). A call's union serves every mention: a
candidate that is of no mention's own neighbourhood changes nothing.

A nearby entity counts as a hub here only where its partners in the bank
exceed decide.HUB_PARTNERS and this transaction queued none of its pairs a
decrement: the degree the decision sees (the bank's, this call's and this
transaction's pairs) is then above it too, so a hub skipped here is a hub
there. Every other nearby entity's partners are read.

entity_resolver.neighbourhood_probe chooses: off never; auto (the default)
reads the neighbourhood when the entities table holds at least
AUTO_MIN_ROWS rows (the probe's cost follows the table's posting lists, the
neighbourhood's the bank's activity); on always, where it applies. The costs
are in docs/benchmarks.md (issue 34).
"""

from typing import Dict, Iterable, List, NamedTuple, Sequence, Set, Tuple

import context as context_mod
import db
import decide
import probe
import small_bank
import words

# auto: the neighbourhood is read where the entities table holds this many rows
# (the planner's estimate); below, the probe's posting lists are short.
AUTO_MIN_ROWS = 50000
# Seconds added to each side of a recency window: the window is read wider than
# scoring.recency_score counts it, never narrower.
WINDOW_SLACK = 1.0
# A window's names similar to a key, through the trigram index, cost about this
# many ns per key and row of the table (3 ms a key at 100,000 rows: the
# index's posting lists, then each row's similarity); read whole, a name costs
# small_bank.READ_NS_PER_NAME (its trigrams made, its similarities computed
# here). So a window is read whole up to window_whole_max names. (EXPLAIN
# ANALYZE of one fact's statement at 100,000: a window of 62 names read by
# name for 4 keys, 62 ms with the timing's overhead, against about 1.5 ms
# whole; docs/benchmarks.md.)
WINDOW_BY_NAME_NS_PER_TABLE_ROW = 30.0

# The neighbourhood's rows, in the probe's tie order (rank): names holding a
# word ($8: a key, or a fit word of one) as an extent, at similarity $3 or
# more to its key ($2), ``kept`` where the key is not one word ($10), the
# name is identical, or it is a partner of a nearby hub ($9) (else _kept
# decides); partners of the nearby entities $4 (the bank's pairs and this
# transaction's queued ones); entities last seen inside a window ($5, $6:
# epochs) or queued a date by this transaction; the entities $7. The two
# sources that read entities (names, window: nearly every row) give their
# columns as read (UNION keeps one of a row two sources read alike; a row
# read kept and not comes twice, kept first); only the ids of the others
# are read by key. (Every row read again by key cost 0.007 ms, 200 ms for
# the 27,000 rows of a call at 1,000,000 entities.) A holder's similarity
# is computed once, under the fence (OFFSET 0), and filtered above it. A
# window read by name compares last_seen with the windows' outer bounds
# before the similarity: of the names a key's trigrams reach across the
# bank, most are outside the window (the branch on three retains' 159 keys
# at 100,000 entities: 766 ms before, 689 after). The
# nearby hubs' partners are one set, read once: asked row by row, a generic
# plan probed the queue's index for each of a 500-fact INSERT's 33,600
# holders at 100,000 entities (up to 0.05 ms each once that index had
# churned: 1.6 s).
SQL_ROWS = """
WITH ids AS (
    SELECT c.entity_id_2 AS id FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 = ANY($4::uuid[]) AND c.cooccurrence_count > 0
    UNION
    SELECT c.entity_id_1 AS id FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 = ANY($4::uuid[]) AND c.cooccurrence_count > 0
    UNION
    SELECT q.entity_id AS id FROM stats_queue AS q
     WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned()
       AND (q.entity_id_2 IS NULL OR q.entity_id_2 = ANY($4::uuid[]))
    UNION
    SELECT q.entity_id_2 AS id FROM stats_queue AS q
     WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.entity_id = ANY($4::uuid[])
       AND q.entity_id_2 IS NOT NULL
    UNION
    SELECT unnest($7::uuid[]) AS id
),

hubs AS (
    SELECT unnest($9::uuid[]) AS id
),

hub_partners AS (
    SELECT c.entity_id_2 AS id FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 IN (SELECT hubs.id FROM hubs) AND c.cooccurrence_count > 0
    UNION
    SELECT c.entity_id_1 AS id FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 IN (SELECT hubs.id FROM hubs) AND c.cooccurrence_count > 0
    UNION
    SELECT q.entity_id_2 AS id FROM stats_queue AS q
     WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.entity_id IN (SELECT hubs.id FROM hubs)
       AND q.entity_id_2 IS NOT NULL
    UNION
    SELECT q.entity_id AS id FROM stats_queue AS q
     WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned() AND q.entity_id_2 IN (SELECT hubs.id FROM hubs)
),

wide AS (
    SELECT count(*) AS n
      FROM (SELECT 1
              FROM unnest($5::float8[], $6::float8[]) AS w (lo, hi)
             CROSS JOIN LATERAL (  -- noqa: ST05
                   SELECT 1 FROM entities AS x
                    WHERE x.bank_id = $1 AND x.last_seen > to_timestamp(w.lo) AND x.last_seen < to_timestamp(w.hi)
                    LIMIT $11 + 1) AS y  -- noqa: AM09
             LIMIT $11 + 1) AS z  -- noqa: AM09
),

found AS (
    SELECT e.id, e.canonical_name, e.entity_type, e.last_seen, e.homonym,
           NOT e.narrowed OR e.sim >= 1 OR e.id IN (SELECT hub_partners.id FROM hub_partners) AS kept
      FROM unnest($2::text[], $8::text[], $10::boolean[]) AS k (key, word, narrowed)
     CROSS JOIN LATERAL (  -- noqa: ST05
           SELECT x.id, x.canonical_name, x.entity_type, x.last_seen, x.homonym, k.narrowed,
                  @trgm@.similarity(lower(x.canonical_name), k.key) AS sim
             FROM entities AS x
            WHERE x.bank_id @bank_collate@ = $1 AND x.entity_kind <> 'label'
              AND folded(x.canonical_name) OPERATOR (@sim@.%>>) k.word
           OFFSET 0) AS e  -- noqa: AM09
     WHERE e.sim >= $3
    UNION
    SELECT e.id, e.canonical_name, e.entity_type, e.last_seen, e.homonym, TRUE AS kept
      FROM unnest($5::float8[], $6::float8[]) AS w (lo, hi)
     CROSS JOIN LATERAL (  -- noqa: ST05
           SELECT x.id, x.canonical_name, x.entity_type, x.last_seen, x.homonym FROM entities AS x
            WHERE x.bank_id = $1 AND x.last_seen > to_timestamp(w.lo) AND x.last_seen < to_timestamp(w.hi)
              AND x.entity_kind <> 'label'
           OFFSET 0) AS e  -- noqa: AM09
     WHERE (SELECT wide.n FROM wide) <= $11
    UNION
    SELECT e.id, e.canonical_name, e.entity_type, e.last_seen, e.homonym, TRUE AS kept
      FROM (SELECT DISTINCT unnest($2::text[]) AS key) AS k
     CROSS JOIN LATERAL (  -- noqa: ST05
           SELECT x.id, x.canonical_name, x.entity_type, x.last_seen, x.homonym FROM entities AS x
            WHERE x.bank_id @bank_collate@ = $1 AND x.entity_kind <> 'label'
              AND folded(x.canonical_name) OPERATOR (@sim@.%) k.key
              AND x.last_seen > (SELECT to_timestamp(min(w.lo)) FROM unnest($5::float8[]) AS w (lo))
              AND x.last_seen < (SELECT to_timestamp(max(w.hi)) FROM unnest($6::float8[]) AS w (hi))
              AND EXISTS (SELECT 1 FROM unnest($5::float8[], $6::float8[]) AS w (lo, hi)
                           WHERE x.last_seen > to_timestamp(w.lo) AND x.last_seen < to_timestamp(w.hi))
              AND @trgm@.similarity(lower(x.canonical_name), k.key) >= $3
           OFFSET 0) AS e  -- noqa: AM09
     WHERE (SELECT wide.n FROM wide) > $11
    UNION
    SELECT e.id, e.canonical_name, e.entity_type, e.last_seen, e.homonym, TRUE AS kept
      FROM ids
     CROSS JOIN LATERAL (  -- noqa: ST05
           SELECT x.id, x.canonical_name, x.entity_type, x.last_seen, x.homonym FROM entities AS x
            WHERE x.bank_id = $1 AND x.id = ids.id AND x.entity_kind <> 'label'
           OFFSET 0) AS e  -- noqa: AM09
)

SELECT b.key, b.canonical_name, b.last_seen, b.entity_type, b.id::text AS id, b.homonym, b.kept,
       row_number() OVER (ORDER BY b.key ASC, coalesce(b.entity_type, '') ASC, b.id ASC, b.kept DESC) AS rank
  FROM (SELECT found.id, found.canonical_name, found.entity_type, found.kept, lower(found.canonical_name) AS key,
               extract(EPOCH FROM found.last_seen)::float8 AS last_seen, found.homonym IS NOT NULL AS homonym
          FROM found) AS b
"""


class Around(NamedTuple):
    """What a call's neighbourhood is made of: each key's nearby names, and the event dates (epochs)."""

    near: Dict[str, Set[str]]          # key -> the nearby names of its mentions
    epochs: Set[float]
    ids: Set[str]                      # entities the call found otherwise (exact look-up, identifiers)
    facts: int = 1                     # how many facts the call decides


def counts(cfg) -> bool:
    """Whether a mention's neighbourhood holds every candidate that can change its decision (the enhanced
    profile, under weights by which the name alone, or a hub, cannot reach the threshold): then its
    candidates are the probe's and the neighbourhood's (candidates.py), and reading the neighbourhood
    alone decides the same."""
    return cfg.get("profile") == "enhanced" and decide.neighbourhood_suffices(cfg) and decide.hubs_unread_suffice(cfg)


def applies(cfg, mode: str, table_rows: float) -> bool:
    """Whether a call reads its neighbourhood instead of probing the bank in full."""
    if mode == "off" or not counts(cfg):
        return False
    return mode == "on" or table_rows >= AUTO_MIN_ROWS


def window_whole_max(n_keys: int, table_rows: float) -> int:
    """The most names a call's recency windows may hold to be read whole; past it, only their names similar
    to one of the ``n_keys`` keys are read, through the trigram index."""
    return int(max(n_keys, 0) * max(table_rows, 0.0) * WINDOW_BY_NAME_NS_PER_TABLE_ROW
               / small_bank.READ_NS_PER_NAME)


def windows(epochs: Iterable[float], days: float) -> Tuple[List[float], List[float]]:
    """The recency windows around the dates, overlapping ones joined: (starts, ends), in epochs."""
    half = days * 86400.0 + WINDOW_SLACK
    out: List[List[float]] = []
    for e in sorted(epochs):
        if out and e - half <= out[-1][1]:
            out[-1][1] = e + half
        else:
            out.append([e - half, e + half])
    return [w[0] for w in out], [w[1] for w in out]


def read(plpy, bank_id: str, keys: Sequence[str], around: Around, floor: float, cfg, data,
         fit_words: Dict[str, Set[str]]) -> small_bank.SmallBank:
    """Read the neighbourhood of ``keys`` (the keys and probed forms a call would probe in full), for
    candidates at trigram similarity ``floor`` or more; ``fit_words``: key -> the fit words of the one-word
    mentions it is probed for (decide.fit_words)."""
    held = [(k, k) for k in keys] + [(k, w) for k in keys for w in sorted(fit_words.get(k, ())) if w != k]
    one_word = {k for k in keys if len(words.split_words(k)) == 1}
    every = sorted({f for k in keys for f in context_mod.near_forms(around.near.get(k, ()), cfg, data)})
    reached = probe.near_partners(plpy, bank_id, every, decide.HUB_PARTNERS) if every else []
    near = {r["id"] for r in reached if r["partners"] <= decide.HUB_PARTNERS or r["unsettled"]}
    hubs = {r["id"] for r in reached} - near
    starts, ends = windows(around.epochs, cfg["recency_window_days"])
    read = db.run(plpy, "neighbourhood_rows", SQL_ROWS,
                  ["text", "text[]", "float8", "uuid[]", "float8[]", "float8[]", "uuid[]", "text[]", "uuid[]",
                   "boolean[]", "int"],
                  [bank_id, [k for k, _ in held], floor, sorted(near), starts, ends, sorted(around.ids),
                   [w for _, w in held], sorted(hubs), [k in one_word for k, _ in held],
                   window_whole_max(len(set(keys)), db.call_setting("table_rows"))])
    rows = _kept(sorted(read, key=lambda r: r["rank"]), one_word, data)
    sets = small_bank.trigram_sets(plpy, {r["key"] for r in rows} | set(keys))
    key_sets = {k: sets[k] for k in keys}
    name_map = small_bank.NameMap()
    # Listed under the keys' trigrams only: a call's 27,000 rows at 1,000,000 entities, each under all of
    # its trigrams, cost 300 ms here.
    name_map.update({r["key"]: sets[r["key"]] for r in rows}, only=frozenset().union(*key_sets.values()))
    return small_bank.SmallBank(key_sets, small_bank.DictRows(rows), name_map)


def _kept(rows: List[dict], one_word: Set[str], data) -> List[dict]:
    """The rows of the neighbourhood, once each (in rank order): a row only a one-word key's holders gave
    (kept false: not identical, not a nearby hub's partner) is kept when its name is one organisation's
    with that key, legal forms aside ("acme": "Acme Inc"); the others can change no decision."""
    out: List[dict] = []
    ones = {tuple(words.split_words(k)) for k in one_word}
    seen: Set[str] = set()
    for r in rows:
        if r["id"] in seen:
            continue
        if r["kept"] or data.strip_suffixes(tuple(words.split_words(r["key"]))) in ones:
            seen.add(r["id"])
            out.append(r)
    return out
