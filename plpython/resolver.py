"""Orchestration: the only module that talks to the database (through ``plpy``).

One call resolves a whole batch with a fixed handful of statements, whatever
its size: read the bank, lowercase and parse (PostgreSQL does both), look up
exact names, probe candidates for all mentions at once, fetch the partners of
the candidates that pass the floor and word check, all at once, cluster new
names, insert them, queue statistics.
The decisions themselves are made by the pure modules (scoring, clustering,
labels, words), which the unit tests exercise in-process.
"""

import json
from datetime import datetime, timezone

import clustering
import labels
import scoring
import settings as settings_mod

InputError = settings_mod.InputError

# Names are stored in a unique btree index with the bank id: 500 characters
# are at most 2,000 bytes, which with a 100-character bank id stays under the
# index's limit of about 2,700 bytes. Longer names are refused, not truncated.
MAX_NAME_CHARS = 500
MAX_BANK_CHARS = 100
# explain_mention probes lower than resolution so that near misses under the
# floor are visible too.
EXPLAIN_PROBE = 0.15
EXPLAIN_LABEL_ROWS = 20
ELEMENT_KEYS = ("text", "nearby", "event_date", "resolve")

_PLANS = {}

# Statements executed by the current (or last) call of this session: the
# design promises a fixed handful per call whatever the batch size, and
# _last_call_statements() lets a test hold it to that.
_COUNTER = {"statements": 0}


def _execute(plpy, plan, args=None):
    """Execute a prepared plan (or query text), counting it for last_call_statements."""
    _COUNTER["statements"] += 1
    if args is None:
        return plpy.execute(plan)
    return plpy.execute(plan, args)


def _start_call():
    """Start counting the statements of a new call."""
    _COUNTER["statements"] = 0


def last_call_statements():
    """How many SQL statements the last resolve or explain call of this session ran."""
    return _COUNTER["statements"]


def _plan(plpy, name, query, types):
    """Prepare a statement once per session (the module lives in GD)."""
    plan = _PLANS.get(name)
    if plan is None:
        for token, value in _catalog_tokens(plpy).items():
            query = query.replace(token, value)
        plan = plpy.prepare(query, types)
        _PLANS[name] = plan
    return plan


# Names substituted into the statements, read from the catalog once per
# session: @trgm@ is pg_trgm's schema (its functions and operators are
# qualified, so a look-alike planted elsewhere is never picked up);
# @collate@ is the collation of entities.canonical_name, which mention texts
# are lowered with. In a database whose LC_CTYPE is C the installer gives the
# column the C.UTF-8 collation so that lower() folds 'İ' on the stored side;
# the probing side must fold with the same collation, not the database's.
SQL_CATALOG_TOKENS = """
SELECT (SELECT e.extnamespace::regnamespace::text FROM pg_catalog.pg_extension AS e
         WHERE e.extname = 'pg_trgm') AS trgm,
       (SELECT CASE WHEN a.attcollation = 100 THEN '"default"'
                    ELSE quote_ident(n.nspname) || '.' || quote_ident(c.collname) END
          FROM pg_catalog.pg_attribute AS a
          JOIN pg_catalog.pg_collation AS c ON c.oid = a.attcollation
          JOIN pg_catalog.pg_namespace AS n ON n.oid = c.collnamespace
         WHERE a.attrelid = 'entities'::regclass AND a.attname = 'canonical_name') AS name_collation
"""


def _catalog_tokens(plpy):
    tokens = _PLANS.get("@tokens@")
    if tokens is None:
        row = _execute(plpy, SQL_CATALOG_TOKENS)[0]
        tokens = {"@trgm@": row["trgm"], "@collate@": row["name_collation"]}
        _PLANS["@tokens@"] = tokens
    return tokens


# -- SQL ---------------------------------------------------------------------
# Every comparison folds case with PostgreSQL's lower() on both sides.

SQL_BANK_UPSERT = """
WITH ins AS (
    INSERT INTO banks (bank_id) VALUES ($1)
    ON CONFLICT (bank_id) DO NOTHING
    RETURNING settings, entity_labels
)
SELECT settings::text AS settings, lower(entity_labels::text COLLATE @collate@) AS labels FROM ins
UNION ALL
SELECT settings::text, lower(entity_labels::text COLLATE @collate@) FROM banks
 WHERE bank_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)
"""

SQL_BANK_READ = """
SELECT settings::text AS settings, lower(entity_labels::text COLLATE @collate@) AS labels
  FROM banks WHERE bank_id = $1
"""

# Lowercase every text, parse every date and set the probe threshold, in one
# statement. set_config(..., true) is undone when the calling function returns
# because every entry point is declared with SET pg_trgm.similarity_threshold.
SQL_PREPARE = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i)
              ORDER BY i)
           AS lowered,
       ARRAY(SELECT extract(epoch FROM d::timestamptz)::float8
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS epochs,
       ARRAY(SELECT d::timestamptz::text
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS dates,
       set_config('pg_trgm.similarity_threshold', $3, true) AS threshold
"""

SQL_EXACT = """
SELECT lower(canonical_name) AS key, id::text AS id, canonical_name, entity_kind
  FROM entities
 WHERE bank_id = $1 AND lower(canonical_name) = ANY ($2::text[])
"""

SQL_CANDIDATES = """
SELECT q.i::int AS i, c.id::text AS id, c.canonical_name, c.name, c.sim::float8 AS sim,
       c.last_seen
  FROM unnest($2::text[]) WITH ORDINALITY AS q (m, i)
 CROSS JOIN LATERAL (
       SELECT e.id, e.canonical_name, lower(e.canonical_name) AS name,
              @trgm@.similarity(lower(e.canonical_name), q.m) AS sim,
              extract(epoch FROM e.last_seen)::float8 AS last_seen
         FROM entities AS e
        WHERE e.bank_id = $1
          AND e.entity_kind <> 'label'
          AND lower(e.canonical_name) OPERATOR(@trgm@.%) q.m
        ORDER BY sim DESC, e.id
        LIMIT $3
       ) AS c
 ORDER BY q.i, c.sim DESC, c.id
"""

# explain_mention: regular rows at a lower probe (plus the label rows, which
# resolution never sees, so that explain can say why they were skipped).
SQL_EXPLAIN_CANDIDATES = """
(SELECT e.id::text AS id, e.canonical_name, lower(e.canonical_name) AS name,
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(epoch FROM e.last_seen)::float8 AS last_seen, false AS is_label
   FROM entities AS e
  WHERE e.bank_id = $1 AND e.entity_kind <> 'label'
    AND lower(e.canonical_name) OPERATOR(@trgm@.%) $2
  ORDER BY sim DESC, e.id
  LIMIT $3)
UNION ALL
(SELECT e.id::text, e.canonical_name, lower(e.canonical_name),
        @trgm@.similarity(lower(e.canonical_name), $2)::float8 AS sim,
        extract(epoch FROM e.last_seen)::float8, true
   FROM entities AS e
  WHERE e.bank_id = $1 AND e.entity_kind = 'label'
    AND lower(e.canonical_name) OPERATOR(@trgm@.%) $2
  ORDER BY sim DESC, e.id
  LIMIT $4)
"""

# Partners of the candidates among the nearby names only (the only partners
# that can count), with each partner's degree (distinct co-occurring entities).
SQL_PARTNERS = """
WITH near AS (
    SELECT e.id, lower(e.canonical_name) AS name
      FROM entities AS e
     WHERE e.bank_id = $1 AND lower(e.canonical_name) = ANY ($3::text[])
),
pairs AS (
    SELECT c.entity_id_1 AS cand, c.entity_id_2 AS partner
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_1 = ANY ($2::uuid[])
       AND c.entity_id_2 IN (SELECT id FROM near) AND c.cooccurrence_count > 0
    UNION ALL
    SELECT c.entity_id_2, c.entity_id_1
      FROM entity_cooccurrences AS c
     WHERE c.bank_id = $1 AND c.entity_id_2 = ANY ($2::uuid[])
       AND c.entity_id_1 IN (SELECT id FROM near) AND c.cooccurrence_count > 0
),
degrees AS (
    SELECT p.partner,
           (SELECT count(*) FROM entity_cooccurrences AS x
             WHERE x.bank_id = $1 AND x.entity_id_1 = p.partner AND x.cooccurrence_count > 0)
           + (SELECT count(*) FROM entity_cooccurrences AS x
             WHERE x.bank_id = $1 AND x.entity_id_2 = p.partner AND x.cooccurrence_count > 0)
           AS degree
      FROM (SELECT DISTINCT partner FROM pairs) AS p
)
SELECT pairs.cand::text AS cand, near.name, degrees.degree::bigint AS degree
  FROM pairs
  JOIN near ON near.id = pairs.partner
  JOIN degrees ON degrees.partner = pairs.partner
"""

SQL_SIMILAR_PAIRS = """
SELECT a.i::int AS a, b.i::int AS b
  FROM unnest($1::text[]) WITH ORDINALITY AS a (k, i)
  JOIN unnest($1::text[]) WITH ORDINALITY AS b (k, i) ON a.i < b.i
 WHERE @trgm@.similarity(a.k, b.k) >= $2
"""

# Rows in lower(name) order, so that concurrent batches take the unique
# index's locks in one order; a conflict means another session won the race,
# and its row is then looked up (SQL_EXACT) with lower() on both sides.
SQL_INSERT = """
WITH rows AS (
    SELECT r.name, r.kind, r.first_seen
      FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS r (name, kind, first_seen)
)
INSERT INTO entities (bank_id, canonical_name, entity_kind, first_seen, last_seen)
SELECT $1, rows.name, rows.kind, rows.first_seen, rows.first_seen
  FROM rows
 ORDER BY lower(rows.name)
ON CONFLICT (bank_id, lower(canonical_name)) DO NOTHING
RETURNING lower(canonical_name) AS key, id::text AS id, canonical_name, entity_kind
"""

SQL_QUEUE_MENTIONS = """
INSERT INTO stats_queue (bank_id, entity_id, increment, event_date)
SELECT $1, q.entity_id, q.n, q.event_date
  FROM unnest($2::uuid[], $3::bigint[], $4::timestamptz[]) AS q (entity_id, n, event_date)
"""


# -- input -------------------------------------------------------------------

def _check_bank(bank_id):
    if bank_id is None:
        raise InputError("must not be null", "bank_id", "22004")
    if not bank_id.strip():
        raise InputError("must not be empty or blank", "bank_id")
    if len(bank_id) > MAX_BANK_CHARS:
        raise InputError("is %d characters long; the limit is %d" % (len(bank_id), MAX_BANK_CHARS),
                         "bank_id", "22001")


def _check_text(text, argument):
    if text is None:
        raise InputError("must not be null", argument, "22004")
    if not isinstance(text, str):
        raise InputError("must be a string", argument)
    if not text.strip():
        raise InputError("must not be empty or blank", argument)
    if len(text) > MAX_NAME_CHARS:
        raise InputError(
            "is %d characters long; names are limited to %d characters (the unique index limit)"
            % (len(text), MAX_NAME_CHARS), argument, "22001")


def _parse_int(digits):
    """A JSON integer; one too long for a float becomes +-inf, which every check refuses."""
    # jsonb prints 1e5000 as 5,001 digits: int() refuses strings over 4,300
    # digits and float(int) overflows past 1e308, while float() of the text
    # is simply inf, so the validators can name the key that holds it.
    return int(digits) if len(digits) <= 300 else float(digits)


def _load_json(raw, argument):
    """Parse a jsonb argument's text; what jsonb holds but Python cannot is bad input."""
    # jsonb accepts 5,000 nested arrays; Python's json module stops at its
    # recursion limit.
    try:
        return json.loads(raw, parse_int=_parse_int)
    except RecursionError:
        pass
    raise InputError("is nested too deeply", argument)


def _json_type(value):
    return settings_mod._type_name(value)


def parse_mentions(raw):
    """Parse the ``mentions`` jsonb argument (text) into items; errors name the element."""
    if raw is None:
        raise InputError("must not be null", "mentions", "22004")
    value = _load_json(raw, "mentions")
    if not isinstance(value, list):
        raise InputError("must be a JSON array, got %s" % _json_type(value), "mentions")
    items = []
    for i, elem in enumerate(value):
        where = "mentions[%d]" % i
        if isinstance(elem, str):
            _check_text(elem, where)
            items.append({"text": elem, "nearby": None, "event_date": None, "resolve": True,
                          "text_argument": where, "date_argument": where + ".event_date"})
            continue
        if not isinstance(elem, dict):
            raise InputError("must be a string or an object, got %s" % _json_type(elem), where)
        for key in elem:
            if key not in ELEMENT_KEYS:
                raise InputError('unknown key "%s" (allowed: %s)' % (key, ", ".join(ELEMENT_KEYS)), where)
        if "text" not in elem:
            raise InputError('needs a "text"', where)
        _check_text(elem["text"], where + ".text")
        nearby = elem.get("nearby")
        if nearby is not None:
            if not isinstance(nearby, list) or not all(isinstance(n, str) for n in nearby):
                raise InputError("must be an array of strings", where + ".nearby")
        date = elem.get("event_date")
        if date is not None and not isinstance(date, str):
            raise InputError("must be a timestamp string, got %s" % _json_type(date), where + ".event_date")
        resolve = elem.get("resolve", True)
        if resolve is None:
            resolve = True
        if not isinstance(resolve, bool):
            raise InputError("must be true or false, got %s" % _json_type(resolve), where + ".resolve")
        items.append({"text": elem["text"], "nearby": nearby, "event_date": date, "resolve": resolve,
                      "text_argument": where + ".text", "date_argument": where + ".event_date"})
    return items


def _settings_and_labels(row):
    overrides = json.loads(row["settings"]) if row and row["settings"] else {}
    lowered = json.loads(row["labels"]) if row and row["labels"] else {}
    return settings_mod.effective_settings(overrides), labels.LabelMatcher(lowered)


# Python's datetime spans years 1 to 9999; PostgreSQL's timestamptz goes
# further and has 'infinity'. An event date outside this span is refused
# (it would also pin last_seen at infinity, so recency could never count).
MIN_EPOCH = datetime(1, 1, 2, tzinfo=timezone.utc).timestamp()
MAX_EPOCH = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp()


def _datetime(epoch):
    """A stored or given epoch as a datetime; None when missing or out of Python's range."""
    # A stored last_seen outside the range (written by hand, say 'infinity')
    # is further than any window from every accepted event date: recency 0,
    # exactly as for a missing date.
    if epoch is None or not MIN_EPOCH <= epoch <= MAX_EPOCH:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc)


def _prepare(plpy, texts, dates, probe, date_arguments):
    """Lowercase texts and parse dates in PostgreSQL; name the argument of a bad date."""
    plan = _plan(plpy, "prepare", SQL_PREPARE, ["text[]", "text[]", "text"])
    failed = None
    try:
        with plpy.subtransaction():
            row = _execute(plpy, plan, [texts, dates, repr(float(probe))])[0]
    except plpy.SPIError as exc:
        failed = exc
    if failed is not None:
        # Find the offending date to name it (only on this error path).
        for index, date in enumerate(dates):
            if date is None:
                continue
            try:
                with plpy.subtransaction():
                    _execute(plpy, plan, [[], [date], repr(float(probe))])
            except plpy.SPIError:
                raise InputError("is not a valid timestamp: %s" % json.dumps(date, ensure_ascii=False),
                                 date_arguments[index], "22007")
        raise failed
    for index, epoch in enumerate(row["epochs"]):
        if epoch is not None and not MIN_EPOCH <= epoch <= MAX_EPOCH:
            raise InputError("is out of range (%s): event dates must be finite, years 1 to 9999"
                             % row["dates"][index], date_arguments[index], "22007")
    return row["lowered"], row["epochs"], row["dates"]


# -- resolution --------------------------------------------------------------

def resolve_items(plpy, bank_id, items, default_event_date):
    """Resolve a batch of mention items; return one result dict per item, in order.

    Items: {"text", "nearby" (list or None: the other texts of the batch),
    "event_date" (timestamptz text or None: the default), "resolve"}.
    """
    _start_call()
    _check_bank(bank_id)
    if not items:
        return []
    for i, item in enumerate(items):
        _check_text(item.get("text"), item.get("text_argument") or "mentions[%d].text" % i)

    row = _execute(plpy, _plan(plpy, "bank_upsert", SQL_BANK_UPSERT, ["text"]), [bank_id])
    cfg, matcher = _settings_and_labels(row[0] if row else None)
    probe = max(cfg["candidate_similarity"], cfg["merge_min_similarity"])

    # Lowercasing: every mention text and every nearby name, in one array.
    n = len(items)
    texts = [it["text"] for it in items]
    nearby_spans = []
    for it in items:
        start = len(texts)
        if it.get("nearby") is not None:
            texts.extend(x for x in it["nearby"] if isinstance(x, str))
        nearby_spans.append((start, len(texts)))
    # An element's own event_date ("" included, which is not a date) is named
    # by its argument; a missing one takes the call's event_date argument.
    own = [it.get("event_date") is not None for it in items]
    dates = [it["event_date"] if own[i] else default_event_date for i, it in enumerate(items)]
    lowered, epochs, canon_dates = _prepare(
        plpy, texts, dates, probe,
        [(it.get("date_argument") or "mentions[%d].event_date" % i) if own[i] else "event_date"
         for i, it in enumerate(items)])
    keys = lowered[:n]

    results = [None] * n
    regular = []        # indexes of resolving, non-label mentions
    exact_needed = {}   # key -> kind for literal and label mentions
    for i, it in enumerate(items):
        if not it.get("resolve", True):
            exact_needed.setdefault(keys[i], "regular")
        elif matcher and matcher.is_label(keys[i]):
            exact_needed[keys[i]] = "label"
        else:
            regular.append(i)

    def nearby_of(i):
        if items[i].get("nearby") is None:
            # No nearby given: the other mentions of the batch.
            return [keys[j] for j in range(n) if j != i]
        start, end = nearby_spans[i]
        return lowered[start:end]

    existing = {}  # key -> (id, canonical_name, kind)
    if exact_needed:
        for r in _execute(plpy, _plan(plpy, "exact", SQL_EXACT, ["text", "text[]"]),
                          [bank_id, list(exact_needed)]):
            existing[r["key"]] = (r["id"], r["canonical_name"], r["entity_kind"])

    # Candidates for all regular mentions at once (one probe per distinct key).
    chosen = {}
    best_scores = {}
    if regular:
        distinct = sorted({keys[i] for i in regular})
        by_key = {k: [] for k in distinct}
        cand_rows = _execute(
            plpy, _plan(plpy, "candidates", SQL_CANDIDATES, ["text", "text[]", "int"]),
            [bank_id, distinct, cfg["max_candidates"]])
        names_of = {}
        for r in cand_rows:
            by_key[distinct[r["i"] - 1]].append(r)
            names_of[r["id"]] = r["canonical_name"]
        # The floor and the word check need no database: screen each key's
        # candidates first (once per distinct key, in probe order, stopping
        # after an identical name that settles the choice), then fetch the
        # partners of the survivors only, the only partners ever read.
        screened = {}       # key -> [(candidate, evaluation if skipped else None)]
        survivors = []      # the candidates to be scored, of every key
        scored_keys = set()
        for k in distinct:
            if not by_key[k]:
                continue
            screened[k] = scoring.screen(
                k, (scoring.Candidate(r["id"], r["name"], r["sim"], _datetime(r["last_seen"]))
                    for r in by_key[k]),
                cfg, stop_at_identical=True)
            passed = [c for c, skipped in screened[k] if skipped is None]
            if passed:
                survivors.extend(passed)
                scored_keys.add(k)
        near_names = set()
        for i in regular:
            if keys[i] in scored_keys:
                near_names.update(nearby_of(i))
        if survivors and near_names:
            partners = {}
            for r in _execute(
                    plpy, _plan(plpy, "partners", SQL_PARTNERS, ["text", "uuid[]", "text[]"]),
                    [bank_id, sorted({c.id for c in survivors}), sorted(near_names)]):
                partners.setdefault(r["cand"], {})[r["name"]] = r["degree"]
            for c in survivors:
                c.partners = partners.get(c.id, {})
        for i in regular:
            if keys[i] not in screened:
                continue
            evaluations, best = scoring.decide(keys[i], screened[keys[i]], nearby_of(i),
                                               _datetime(epochs[i]), cfg)
            scores = [ev.score for ev in evaluations if ev.score is not None]
            best_scores[i] = max(scores) if scores else None
            if best is not None:
                chosen[i] = best.candidate.id
                results[i] = {"entity_id": best.candidate.id,
                              "canonical_name": names_of[best.candidate.id],
                              "created": False, "score": best.score}

    # New names: literal/label keys not found, and regular mentions without a match.
    new_fixed = {k: kind for k, kind in exact_needed.items() if k not in existing}
    forms = {}
    for i in regular:
        if i in chosen or keys[i] in new_fixed:
            continue
        form = forms.setdefault(keys[i], {"key": keys[i], "spellings": {}, "first_seen": None,
                                          "_epoch": None, "_date": None})
        form["spellings"][items[i]["text"]] = form["spellings"].get(items[i]["text"], 0) + 1
        if epochs[i] is not None and (form["_epoch"] is None or epochs[i] < form["_epoch"]):
            form["_epoch"], form["_date"] = epochs[i], canon_dates[i]
            form["first_seen"] = _datetime(epochs[i])
    clusters = {}
    if forms:
        form_keys = sorted(forms)
        pairs = []
        if 2 <= len(form_keys) <= cfg["intrabatch_max_names"]:
            for r in _execute(plpy, _plan(plpy, "similar", SQL_SIMILAR_PAIRS, ["text[]", "float8"]),
                              [form_keys, cfg["intrabatch_similarity"]]):
                pairs.append((form_keys[r["a"] - 1], form_keys[r["b"] - 1]))
        clusters = clustering.cluster_forms(
            [{"key": f["key"], "spellings": f["spellings"], "first_seen": f["first_seen"]}
             for f in forms.values()], pairs, cfg["intrabatch_max_names"])

    # Rows to insert: one per fixed key and one per cluster.
    to_insert = {}  # key -> [name, kind, date_text, epoch]
    for i, it in enumerate(items):
        k = keys[i]
        if k in new_fixed:
            entry = to_insert.get(k)
            if entry is None:
                # Literal and label names are created spelled exactly as given.
                to_insert[k] = [it["text"], new_fixed[k], canon_dates[i], epochs[i]]
            elif epochs[i] is not None and (entry[3] is None or epochs[i] < entry[3]):
                entry[2], entry[3] = canon_dates[i], epochs[i]
    for cluster in clusters.values():
        if cluster.key in to_insert:
            continue
        members = [forms[m] for m in cluster.members]
        dated = [f for f in members if f["_epoch"] is not None]
        first = min(dated, key=lambda f: f["_epoch"]) if dated else None
        to_insert[cluster.key] = [cluster.name, "regular", first["_date"] if first else None,
                                  first["_epoch"] if first else None]

    created = {}
    if to_insert:
        ordered = sorted(to_insert)
        for r in _execute(
                plpy, _plan(plpy, "insert", SQL_INSERT, ["text", "text[]", "text[]", "timestamptz[]"]),
                [bank_id, [to_insert[k][0] for k in ordered], [to_insert[k][1] for k in ordered],
                 [to_insert[k][2] for k in ordered]]):
            created[r["key"]] = (r["id"], r["canonical_name"], r["entity_kind"])
        lost = [k for k in ordered if k not in created]
        if lost:
            # Another session created these names first: take its rows.
            for r in _execute(plpy, _plan(plpy, "exact", SQL_EXACT, ["text", "text[]"]), [bank_id, lost]):
                existing[r["key"]] = (r["id"], r["canonical_name"], r["entity_kind"])

    def entity_for_key(k):
        if k in created:
            return created[k], True
        return existing[k], False

    cluster_of = {}
    for cluster in clusters.values():
        for member in cluster.members:
            cluster_of[member] = cluster.key
    for i in range(n):
        if results[i] is not None:
            continue
        k = keys[i]
        target = k if k in new_fixed or k in existing else cluster_of.get(k, k)
        (ident, name, _), was_created = entity_for_key(target)
        results[i] = {"entity_id": ident, "canonical_name": name, "created": was_created,
                      "score": best_scores.get(i)}

    _queue_mentions(plpy, bank_id, results, epochs, canon_dates)
    return results


def _queue_mentions(plpy, bank_id, results, epochs, dates):
    """Queue one mention increment per entity (count, latest event date)."""
    agg = {}
    for i, res in enumerate(results):
        entry = agg.setdefault(res["entity_id"], [0, None, None])
        entry[0] += 1
        if epochs[i] is not None and (entry[1] is None or epochs[i] > entry[1]):
            entry[1], entry[2] = epochs[i], dates[i]
    ids = sorted(agg)
    _execute(plpy, _plan(plpy, "queue", SQL_QUEUE_MENTIONS, ["text", "uuid[]", "bigint[]", "timestamptz[]"]),
             [bank_id, ids, [agg[k][0] for k in ids], [agg[k][2] for k in ids]])


# -- explain -----------------------------------------------------------------

def explain(plpy, bank_id, mention, nearby, event_date):
    """Return explain_mention's rows: every candidate with its signals and decision."""
    _start_call()
    _check_bank(bank_id)
    _check_text(mention, "mention")
    rows = _execute(plpy, _plan(plpy, "bank_read", SQL_BANK_READ, ["text"]), [bank_id])
    cfg, matcher = _settings_and_labels(rows[0] if rows else None)
    probe = max(cfg["candidate_similarity"], cfg["merge_min_similarity"])
    texts = [mention] + [x for x in (nearby or []) if x is not None]
    lowered, epochs, _ = _prepare(plpy, texts, [event_date], min(EXPLAIN_PROBE, probe), ["event_date"])
    key, near = lowered[0], lowered[1:]
    out = []
    if matcher and matcher.is_label(key):
        # A label resolves by exact match only: the row it names, if any.
        for r in _execute(plpy, _plan(plpy, "exact", SQL_EXACT, ["text", "text[]"]), [bank_id, [key]]):
            out.append({"candidate_id": r["id"], "canonical_name": r["canonical_name"],
                        "trigram_similarity": 1.0, "tokens_compatible": True, "name_similarity": 1.0,
                        "cooccurrence": None, "recency": None, "score": 1.0, "decision": scoring.CHOSEN})
        return out
    cand_rows = list(_execute(
        plpy, _plan(plpy, "explain_candidates", SQL_EXPLAIN_CANDIDATES, ["text", "text", "int", "int"]),
        [bank_id, key, cfg["max_candidates"], EXPLAIN_LABEL_ROWS]))
    regular_ids = sorted({r["id"] for r in cand_rows if not r["is_label"]})
    partners = {}
    near_set = sorted(set(n for n in near if n))
    if regular_ids and near_set:
        for r in _execute(plpy, _plan(plpy, "partners", SQL_PARTNERS, ["text", "uuid[]", "text[]"]),
                          [bank_id, regular_ids, near_set]):
            partners.setdefault(r["cand"], {})[r["name"]] = r["degree"]
    # Probe order: similarity descending, then id (labels interleaved; they
    # are never scored, so they cannot change a tie).
    cand_rows.sort(key=lambda r: (-r["sim"], r["id"]))
    probed = []
    unprobed = set()
    for r in cand_rows:
        cand = scoring.Candidate(r["id"], r["name"], r["sim"], _datetime(r["last_seen"]),
                                 r["is_label"], partners.get(r["id"], {}))
        if not r["is_label"] and r["sim"] < probe:
            # Resolution's probe (pg_trgm %, compared like this) never sees it.
            unprobed.add(r["id"])
        probed.append(cand)
    evaluations, _ = scoring.evaluate(
        key, [c for c in probed if c.id not in unprobed], near, _datetime(epochs[0]), cfg)
    by_id = {ev.candidate.id: ev for ev in evaluations}
    names = {r["id"]: r["canonical_name"] for r in cand_rows}
    for cand in probed:
        ev = by_id.get(cand.id)
        if ev is None:
            out.append({"candidate_id": cand.id, "canonical_name": names[cand.id],
                        "trigram_similarity": cand.trigram_similarity, "tokens_compatible": None,
                        "name_similarity": None, "cooccurrence": None, "recency": None, "score": None,
                        "decision": scoring.BELOW_FLOOR})
            continue
        out.append({"candidate_id": cand.id, "canonical_name": names[cand.id],
                    "trigram_similarity": cand.trigram_similarity,
                    "tokens_compatible": ev.tokens_compatible, "name_similarity": ev.name_similarity,
                    "cooccurrence": ev.cooccurrence, "recency": ev.recency, "score": ev.score,
                    "decision": ev.decision})
    return out


# -- entry points used by the SQL functions ------------------------------------

def call(plpy, fn, *args):
    """Run fn, turning an InputError into an SQL error with its SQLSTATE."""
    try:
        return fn(plpy, *args)
    except InputError as exc:
        error = exc
    # Raised outside the except block: the report carries no exception chain.
    plpy.error(str(error), sqlstate=error.sqlstate)


def resolve_mentions_sql(plpy, bank_id, mentions, event_date):
    _check_bank(bank_id)
    items = parse_mentions(mentions)
    results = resolve_items(plpy, bank_id, items, event_date)
    return [(i + 1, items[i]["text"], r["entity_id"], r["canonical_name"], r["created"], r["score"])
            for i, r in enumerate(results)]


def resolve_mention_sql(plpy, bank_id, mention, nearby, event_date, resolve):
    _check_bank(bank_id)
    _check_text(mention, "mention")
    if resolve is None:
        raise InputError("must not be null", "resolve", "22004")
    items = [{"text": mention, "nearby": [x for x in (nearby or []) if x is not None],
              "event_date": None, "resolve": resolve, "text_argument": "mention",
              "date_argument": "event_date"}]
    r = resolve_items(plpy, bank_id, items, event_date)[0]
    return [(r["entity_id"], r["canonical_name"], r["created"], r["score"])]


def configure_bank_sql(plpy, bank_id, settings_json):
    _check_bank(bank_id)
    if settings_json is None:
        raise InputError("must not be null", "settings", "22004")
    overrides = settings_mod.validate_settings(_load_json(settings_json, "settings"), "settings")
    _execute(plpy, _plan(plpy, "configure",
                         "INSERT INTO banks (bank_id, settings) VALUES ($1, $2::jsonb)"
                         " ON CONFLICT (bank_id) DO UPDATE SET settings = excluded.settings",
                         ["text", "text"]), [bank_id, json.dumps(overrides)])
    return json.dumps(settings_mod.effective_settings(overrides))


def set_entity_labels_sql(plpy, bank_id, labels_json):
    _check_bank(bank_id)
    if labels_json is None:
        raise InputError("must not be null", "labels", "22004")
    config = labels.validate_labels(_load_json(labels_json, "labels"), "labels")
    # Two keys, two values of a group or two fields of a map equal after
    # PostgreSQL's lower() would make labels that cannot be told apart
    # ("Sarah-Chen" and "sarah-chen" are one label entity).
    names, paths, scopes = [], [], []
    for i, a in enumerate(config["attributes"]):
        names.append(a["key"])
        paths.append("attributes[%d].key" % i)
        scopes.append("keys")
        for member in ("values", "fields"):
            field = "value" if member == "values" else "key"
            for j, item in enumerate(a.get(member) or []):
                names.append(item[field])
                paths.append("attributes[%d].%s[%d].%s" % (i, member, j, field))
                scopes.append("attributes[%d].%s" % (i, member))
    rows = _execute(plpy, _plan(plpy, "lower_array",
                                "SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[])"
                                " WITH ORDINALITY"
                                " AS u (t, i) ORDER BY i) AS l", ["text[]"]), [names])
    seen = {}
    for i, folded in enumerate(rows[0]["l"]):
        first = seen.setdefault((scopes[i], folded), i)
        if first != i:
            raise InputError('%s "%s" duplicates %s after lower()' % (paths[i], names[i], paths[first]),
                             "labels")
    _execute(plpy, _plan(plpy, "set_labels",
                         "INSERT INTO banks (bank_id, entity_labels) VALUES ($1, $2::jsonb)"
                         " ON CONFLICT (bank_id) DO UPDATE SET entity_labels = excluded.entity_labels",
                         ["text", "text"]), [bank_id, json.dumps(config)])
    return json.dumps(config)


def labels_json_schema_sql(plpy, bank_id, _unused=None):
    _check_bank(bank_id)
    rows = _execute(plpy, _plan(plpy, "labels_read", "SELECT entity_labels::text AS l FROM banks"
                                " WHERE bank_id = $1", ["text"]), [bank_id])
    config = json.loads(rows[0]["l"]) if rows else {}
    return json.dumps(labels.json_schema(config))


SQL_LINK_UNITS = "SELECT _link_units($1, $2, $3, $4)"


def resolve_and_link_facts_sql(plpy, bank_ids, ids, mentions, event_dates):
    """The facts trigger: resolve every mention of the inserted rows, then link each fact.

    Arrays hold the inserted rows in statement order. One resolver call per
    bank for all its rows (it queues the mention statistics); linking queues
    the pairs.
    """
    if not ids:
        return
    # Per bank, in the order the statement inserted the facts: the items of
    # one resolver call and, item by item, the fact each came from.
    banks = {}
    for row_no, (bank_id, unit_id, raw, event_date) in enumerate(
            zip(bank_ids, ids, mentions, event_dates), 1):
        # Errors name the mention and the row of the INSERT, so that one bad
        # fact among thousands can be found; the whole statement fails.
        where = " (inserted row %d)" % row_no
        try:
            _check_bank(bank_id)
            items = parse_mentions(raw)
        except InputError as error:
            error.argument += where
            raise
        batch, owners = banks.setdefault(bank_id, ([], []))
        texts = [item["text"] for item in items]
        for n, item in enumerate(items):
            if item["nearby"] is None:
                # The other mentions of the same fact, not of the statement:
                # two facts of one INSERT say nothing about each other.
                item["nearby"] = texts[:n] + texts[n + 1:]
            if item["event_date"] is None:
                item["event_date"] = event_date
            item["text_argument"] += where
            item["date_argument"] += where
            batch.append(item)
            owners.append((unit_id, event_date))

    link = _plan(plpy, "link_units", SQL_LINK_UNITS, ["text", "uuid[]", "uuid[]", "timestamptz[]"])
    # Banks in a fixed order, so that two statements spanning the same banks
    # create their entities in the same order.
    for bank_id in sorted(banks):
        batch, owners = banks[bank_id]
        if not batch:
            continue
        results = resolve_items(plpy, bank_id, batch, None)
        _execute(plpy, link, [
            bank_id,
            [unit for unit, _ in owners],
            [result["entity_id"] for result in results],
            [date for _, date in owners],
        ])


BANK_CALLS = {
    "configure_bank": configure_bank_sql,
    "set_entity_labels": set_entity_labels_sql,
    "labels_json_schema": labels_json_schema_sql,
}
