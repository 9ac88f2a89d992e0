"""Folding case and reading dates, in PostgreSQL: the second half of parsing.

Every mention text and nearby name of a call is lowercased by PostgreSQL's
lower() (with the collation of entities.canonical_name) and every event date
is parsed as timestamptz, in one statement. The same statement sets the
pg_trgm probe threshold: set_config(..., true) is undone when the calling
function returns, because every entry point is declared with
SET pg_trgm.similarity_threshold.
"""

import json

import db
import trigrams
from errors import InputError
from mentions import MAX_EPOCH, MIN_EPOCH

SQL_FOLD = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i)
              ORDER BY i)
           AS lowered,
       ARRAY(SELECT extract(epoch FROM d::timestamptz)::float8
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS epochs,
       ARRAY(SELECT d::timestamptz::text
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS dates,
       set_config('pg_trgm.similarity_threshold', $3, true) AS threshold
"""


def fold(plpy, texts, dates, probe, date_arguments):
    """Lowercase texts and parse dates; return (lowered, epochs, canonical date texts).

    A date PostgreSQL cannot read, or one outside years 1 to 9999, is an
    error naming its argument (date_arguments, one per date).
    """
    plan = db.plan(plpy, "fold", SQL_FOLD, ["text[]", "text[]", "text"])
    with db.attempt(plpy) as outcome:
        row = db.execute(plpy, plan, [texts, dates, repr(float(probe))])[0]
    if outcome.error is not None:
        _name_bad_date(plpy, plan, dates, probe, date_arguments)
        raise outcome.error
    _check_range(row, date_arguments)
    return row["lowered"], row["epochs"], row["dates"]


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
            db.execute(plpy, plan, [[], [date], repr(float(probe))])
        if outcome.error is not None:
            raise InputError("is not a valid timestamp: %s" % json.dumps(date, ensure_ascii=False),
                             date_arguments[index], "22007")


# The same, and the trigrams of the first $4 texts (the mention keys), for the
# call's own similarity computations (trigrams.py).
SQL_FOLD_CALL = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i)
              ORDER BY i)
           AS lowered,
       ARRAY(SELECT extract(epoch FROM d::timestamptz)::float8
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS epochs,
       ARRAY(SELECT d::timestamptz::text
               FROM unnest($2::text[]) WITH ORDINALITY AS u (d, i) ORDER BY i) AS dates,
       ARRAY(SELECT array_to_string(@trgm@.show_trgm(lower(t COLLATE @collate@)), chr(%d))
               FROM unnest($1[1:$4]) WITH ORDINALITY AS u (t, i) ORDER BY i) AS trigrams,
       set_config('pg_trgm.similarity_threshold', $3, true) AS threshold
""" % ord(trigrams.SEPARATOR)


def fold_call(plpy, texts, dates, probe, date_arguments, n_keys):
    """fold(), plus the trigrams of the first ``n_keys`` texts (show_trgm of their lowered form)."""
    plan = db.plan(plpy, "fold_call", SQL_FOLD_CALL, ["text[]", "text[]", "text", "int"])
    with db.attempt(plpy) as outcome:
        row = db.execute(plpy, plan, [texts, dates, repr(float(probe)), n_keys])[0]
    if outcome.error is not None:
        _name_bad_date(plpy, db.plan(plpy, "fold", SQL_FOLD, ["text[]", "text[]", "text"]),
                       dates, probe, date_arguments)
        raise outcome.error
    _check_range(row, date_arguments)
    return row["lowered"], row["epochs"], row["dates"], row["trigrams"]
