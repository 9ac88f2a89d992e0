"""Folding case and reading dates, in PostgreSQL: the second half of parsing.

Every mention text and nearby name of a call is lowercased by PostgreSQL's
lower() (with the collation of entities.canonical_name) and every event date
is parsed as timestamptz, in one statement. The same statement sets the
pg_trgm probe threshold: set_config(..., true) is undone when the calling
function returns, because every entry point is declared with
SET pg_trgm.similarity_threshold.
"""

import json
from typing import Dict, List, NamedTuple, Optional

import attributes
import db
import trigrams
from errors import InputError
from mentions import MAX_EPOCH, MIN_EPOCH

def fold(plpy, texts, dates, probe, date_arguments):
    """Lowercase texts and parse dates; return (lowered, epochs, canonical date texts).

    A date PostgreSQL cannot read, or one outside years 1 to 9999, is an
    error naming its argument (date_arguments, one per date).
    """
    lowered, epochs, canon, _ = fold_call(plpy, texts, dates, probe, date_arguments, 0)
    return lowered, epochs, canon


def _check_range(row, date_arguments):
    for index, epoch in enumerate(row["epochs"]):
        if epoch is not None and not MIN_EPOCH <= epoch <= MAX_EPOCH:
            raise InputError("is out of range (%s): event dates must be finite, years 1 to 9999"
                             % row["dates"][index], date_arguments[index], "22007")


def _name_bad_date(plpy, plan, dates, probe, date_arguments):
    """Find the date PostgreSQL refuses and raise an error naming it (error path only)."""
    for index, date in enumerate(dates):
        if date is None:
            continue
        with db.attempt(plpy) as outcome:
            db.execute(plpy, plan, [[], [date], repr(float(probe)), 0])
        if outcome.error is not None:
            raise InputError("is not a valid timestamp: %s" % json.dumps(date, ensure_ascii=False),
                             date_arguments[index], "22007")


# Every text lowered, every date parsed, the trigrams of the first $4 texts
# (the mention keys, for the call's own similarity computations, trigrams.py).
SQL_FOLD_CALL = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i)
              ORDER BY i)
           AS lowered,
       ARRAY(SELECT extract(EPOCH FROM d::timestamptz)::float8
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS epochs,
       ARRAY(SELECT d::timestamptz::text
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS dates,
       ARRAY(SELECT array_to_string(@trgm@.show_trgm(lower(t COLLATE @collate@)), chr(%d))
               FROM unnest($1[1:$4]) WITH ORDINALITY AS u (t, i) ORDER BY i) AS trigrams,
       set_config('pg_trgm.similarity_threshold', $3, TRUE) AS threshold
""" % ord(trigrams.SEPARATOR)


def fold_call(plpy, texts, dates, probe, date_arguments, n_keys, dates_checked=False):
    """fold(), plus the trigrams of the first ``n_keys`` texts (show_trgm of their lowered form).

    ``dates_checked``: every date is the text of a timestamptz PostgreSQL
    already read (a column or an argument), which reads back without error:
    no subtransaction is needed to name a bad one.
    """
    plan = db.plan(plpy, "fold_call", SQL_FOLD_CALL, ["text[]", "text[]", "text", "int"])
    if dates_checked:
        row = db.execute(plpy, plan, [texts, dates, repr(float(probe)), n_keys])[0]
        _check_range(row, date_arguments)
        return row["lowered"], row["epochs"], row["dates"], row["trigrams"]
    with db.attempt(plpy) as outcome:
        row = db.execute(plpy, plan, [texts, dates, repr(float(probe)), n_keys])[0]
    if outcome.error is not None:
        _name_bad_date(plpy, plan, dates, probe, date_arguments)
        raise outcome.error
    _check_range(row, date_arguments)
    return row["lowered"], row["epochs"], row["dates"], row["trigrams"]


class Folded(NamedTuple):
    """Every item of a call after folding, flat, in call order."""

    keys: List[str]
    # Each item's nearby names: its own, lowered, or (none given) its fact's
    # keys, one list per fact shared by its items, the item's own key
    # included: a mention is never its own context (scoring.distinct_nearby
    # drops it), and a fact of N mentions costs N names, not N*(N-1).
    nearby: List[List[str]]
    nearby_given: List[bool]
    epochs: List[Optional[float]]
    dates: List[Optional[str]]
    trigrams: Dict[str, frozenset]
    fact_of: List[int]
    spans: List[range]              # per fact, the indexes of its items (contiguous)
    types: List[Optional[str]]      # each item's type, lowered (None: untyped)
    # each item's attributes, normalised (attributes.py; None: none given)
    attributes: Optional[List[Optional[Dict[str, str]]]] = None

    def attributes_of(self, i: int) -> Optional[Dict[str, str]]:
        return self.attributes[i] if self.attributes is not None else None

    def items_of(self, fact_index: int) -> range:
        return self.spans[fact_index]


def _dates(facts, items, fact_of, default_event_date):
    """Each item's date and the argument that names it: its own, its fact's, or the call's.

    Only an item's own date is text from the caller; a fact's date and the
    call's are timestamptz values (a column of facts, an argument) as text.
    """
    dates, arguments = [], []
    for i, it in enumerate(items):
        fact = facts[fact_of[i]]
        # An element's own event_date ("" included, which is not a date) is
        # named by its argument; a missing one takes its fact's, then the call's.
        if it.get("event_date") is not None:
            dates.append(it["event_date"])
            arguments.append(it.get("date_argument") or "mentions[%d].event_date" % i)
        elif fact.event_date is not None:
            dates.append(fact.event_date)
            arguments.append("event_date")
        else:
            dates.append(default_event_date)
            arguments.append("event_date")
    return dates, arguments


def fold_facts(plpy, facts, default_event_date, probe_at: float, typed: bool) -> Folded:
    """Lowercase every text, nearby name and type, parse every date, take every key's trigrams (one statement)."""
    items = [it for f in facts for it in f.items]
    fact_of = [n for n, f in enumerate(facts) for _ in f.items]
    texts = [it["text"] for it in items]
    spans, type_at = [], []
    for it in items:
        start = len(texts)
        if it.get("nearby") is not None:
            texts.extend(x for x in it["nearby"] if isinstance(x, str))
        spans.append((start, len(texts)))
    for it in items:
        if typed and it.get("type") is not None:
            type_at.append(len(texts))
            texts.append(it["type"])
        else:
            type_at.append(None)
    dates, arguments = _dates(facts, items, fact_of, default_event_date)
    n = len(items)
    own_dates = any(it.get("event_date") is not None for it in items)
    lowered, epochs, canon, tri = fold_call(plpy, texts, dates, probe_at, arguments, n, dates_checked=not own_dates)
    keys = lowered[:n]
    fact_spans, start = [], 0
    for f in facts:
        fact_spans.append(range(start, start + len(f.items)))
        start += len(f.items)
    nearby, given = [], []
    fact_keys = [keys[span.start:span.stop] for span in fact_spans]
    for i, it in enumerate(items):
        given.append(it.get("nearby") is not None)
        # No nearby given: the other mentions of the same fact (see Folded).
        nearby.append(lowered[spans[i][0]:spans[i][1]] if given[-1] else fact_keys[fact_of[i]])
    types = [lowered[t].strip() if t is not None else None for t in type_at]
    return Folded(keys, nearby, given, epochs, canon, {k: trigrams.parse(t) for k, t in zip(keys, tri)},
                  fact_of, fact_spans, types, attributes.normalise(plpy, items))
