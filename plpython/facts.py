"""The facts table's trigger: resolve every mention of the inserted rows, then link each fact.

Arrays hold the inserted rows in statement order. One resolver call per bank
for all its rows (it queues the mention statistics); linking queues the pairs.
"""

import db
import resolve
from errors import InputError
from mentions import parse_mentions

SQL_CHECK_BANKS = """
SELECT count(check_bank_id(u.b, 'bank_id (inserted row ' || u.i || ')'))
  FROM unnest($1::text[]) WITH ORDINALITY AS u (b, i)
"""

SQL_LINK_UNITS = "SELECT _link_units($1, $2, $3, $4)"


def _batches(bank_ids, ids, mentions, event_dates):
    """Per bank, in statement order: the mention items of its facts and, item by item, its fact."""
    banks = {}
    for row_no, (bank_id, unit_id, raw, event_date) in enumerate(
            zip(bank_ids, ids, mentions, event_dates), 1):
        # Errors name the mention and the row of the INSERT, so that one bad
        # fact among thousands can be found; the whole statement fails.
        where = " (inserted row %d)" % row_no
        try:
            items = parse_mentions(raw)
        except InputError as error:
            error.argument += where
            raise
        batch, owners = banks.setdefault(bank_id, ([], []))
        texts = [it["text"] for it in items]
        for n, it in enumerate(items):
            if it["nearby"] is None:
                # The other mentions of the same fact, not of the statement:
                # two facts of one INSERT say nothing about each other.
                it["nearby"] = texts[:n] + texts[n + 1:]
            if it["event_date"] is None:
                it["event_date"] = event_date
            it["text_argument"] += where
            it["date_argument"] += where
            batch.append(it)
            owners.append((unit_id, event_date))
    return banks


def resolve_and_link_facts_sql(plpy, bank_ids, ids, mentions, event_dates):
    """The facts trigger (see the module docstring)."""
    if not ids:
        return
    db.run(plpy, "check_banks", SQL_CHECK_BANKS, ["text[]"], [bank_ids])
    banks = _batches(bank_ids, ids, mentions, event_dates)
    link = db.plan(plpy, "link_units", SQL_LINK_UNITS, ["text", "uuid[]", "uuid[]", "timestamptz[]"])
    # Banks in a fixed order, so that two statements spanning the same banks
    # create their entities in the same order.
    for bank_id in sorted(banks):
        batch, owners = banks[bank_id]
        if not batch:
            continue
        results = resolve.resolve_items(plpy, bank_id, batch, None)
        db.execute(plpy, link, [
            bank_id,
            [unit for unit, _ in owners],
            [result["entity_id"] for result in results],
            [date for _, date in owners],
        ])
