"""Facts and units: the facts table's trigger, and retain for units kept in the caller's tables.

The trigger receives the inserted rows as arrays, in statement order. The facts
of one bank are one call: resolved in that order, each seeing what the earlier
ones did, linked, with one provenance row per mention (resolve.py).
"""

import banks
import db
import resolve
from errors import InputError
from mentions import load_mentions

SQL_CHECK_BANKS = """
SELECT count(check_bank_id(u.b, 'bank_id (inserted row ' || u.i || ')'))
  FROM unnest($1::text[]) WITH ORDINALITY AS u (b, i)
"""

# A unit retained again keeps its mentions and links: the new mentions follow
# the old ones, and pairs count once per unit (as _link_units counts them).
SQL_UNIT = """
SELECT coalesce((SELECT max(m.ordinal) FROM mentions AS m WHERE m.bank_id = $1 AND m.unit_id = $2), 0)
           AS last_ordinal,
       ARRAY(SELECT ue.entity_id::text FROM unit_entities AS ue
              WHERE ue.bank_id = $1 AND ue.unit_id = $2 ORDER BY ue.entity_id) AS members
"""


def fact_elements(raw, where: str = ""):
    """A fact's mentions array as loaded (its elements are checked once the call is within its limits).

    An element without nearby gets the fact's other mentions (fold.py): two
    facts of one INSERT say nothing about each other.
    """
    try:
        return load_mentions(raw)
    except InputError as error:
        error.argument += where
        raise


def resolve_and_link_facts_sql(plpy, bank_ids, ids, mentions, event_dates):
    """The facts trigger (see the module docstring)."""
    if not ids:
        return
    # The statement's statements are counted from here (last_call_statements).
    db.start_call()
    if len(set(bank_ids)) > 1:
        # Every bank id before any work: an error names the first bad row.
        db.run(plpy, "check_banks", SQL_CHECK_BANKS, ["text[]"], [bank_ids])
        argument = "bank_id"
    else:
        # One bank (fact by fact, always): the bank's first statement checks
        # it, naming the first row as the check above would.
        argument = "bank_id (inserted row 1)"
    calls = {}
    for row_no, (bank_id, unit_id, raw, event_date) in enumerate(
            zip(bank_ids, ids, mentions, event_dates), 1):
        # Errors name the mention and the row of the INSERT, so that one bad
        # fact among thousands can be found; the whole statement fails.
        where = " (inserted row %d)" % row_no
        calls.setdefault(bank_id, []).append(resolve.Fact(
            unit_id, [], event_date, True, argument="mentions" + where, elements=fact_elements(raw, where),
            where=where))
    # Banks in a fixed order, so that two statements spanning the same banks
    # take their locks in the same order.
    for bank_id in sorted(calls):
        resolve.resolve_call(plpy, bank_id, calls[bank_id], None, argument=argument, count_from_here=False)


def retain_sql(plpy, bank_id, unit_id, mentions, event_date):
    """retain: resolve one unit's mentions, link the unit, record provenance."""
    with banks.bank_id_first(plpy, bank_id):
        if unit_id is None:
            raise InputError("must not be null", "unit_id", "22004")
        elements = fact_elements(mentions)
    unit = db.run(plpy, "unit", SQL_UNIT, ["text", "uuid"], [bank_id, unit_id])[0]
    fact = resolve.Fact(unit_id, [], event_date, True, unit["last_ordinal"] + 1, tuple(unit["members"]),
                        elements=elements)
    outcomes = resolve.resolve_call(plpy, bank_id, [fact], event_date)[0]
    return [(i + 1, resolve.element_text(elements[i]), o.entity_id, o.canonical_name, o.created, o.score,
             o.decision) for i, o in enumerate(outcomes)]
