"""A bank's settings and label vocabulary: reading them for a call, and changing them.

Every entry point starts here: its first statement checks bank_id with the
one SQL rule (check_bank_id) and reads the bank's settings and lowered label
config, creating the bank on first use when the call writes.
"""

import contextlib
import json
from typing import Any, Dict, Iterator, NamedTuple, Optional

import db
import labels
import locks
import names
import settings as settings_mod
import words
from errors import InputError
from mentions import load_json


class Bank(NamedTuple):
    """What a call needs to know about its bank."""

    id: str
    cfg: Dict[str, Any]
    matcher: labels.LabelMatcher
    # This transaction queued statistics for the bank that are not applied
    # yet: resolution must count them, as it would once they are.
    pending: bool = False
    # Row-level security applies to the caller (a bank-bound role): without
    # LEAKPROOF trigram operators the index cannot answer a probe, so none is
    # narrowed (candidates.py).
    isolated: bool = False


# What both reads of a bank select after their own columns: its labels,
# whether this transaction has statistics of the bank still queued and whether
# row-level security applies, from the checked bank_id.
_BANK_STATE = """       lower(b.entity_labels::text COLLATE @collate@) AS labels,
       EXISTS(SELECT 1 FROM stats_queue AS q
               WHERE q.bank_id = $1 AND q.txid = pg_current_xact_id_if_assigned()) AS pending,
       row_security_active('entities') AS isolated
  FROM (SELECT check_bank_id($1, $2) AS bank_id) AS c
  LEFT JOIN banks AS b ON b.bank_id = $1
"""

# The writer's first statement: the bank_id rule (its result is selected, so
# that it is evaluated), its settings, the bank lock in share mode (locks.py)
# and the bank's state. A bank used for the first time is created by a second
# statement (and read again: a concurrent configure_bank may have won). Each
# statement is a plain read or a plain insert of one bank_id: on Citus, both
# then run whole on the bank's shard (a data-modifying WITH would be planned in
# pieces, its results shipped between them).
SQL_BANK_OPEN = """
SELECT c.bank_id AS checked, b.settings::text AS settings, b.bank_id IS NOT NULL AS found,
       (SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(%d, hashtext($1))) AS l) AS locked,
""" % locks.BANK + _BANK_STATE

SQL_BANK_CREATE = "INSERT INTO banks (bank_id) VALUES ($1) ON CONFLICT (bank_id) DO NOTHING"

SQL_BANK_READ = """
SELECT c.bank_id, b.settings::text AS settings,
""" + _BANK_STATE

SQL_BANK_CHECK = "SELECT check_bank_id($1, $2) AS bank_id"


def _bank(bank_id: str, row: Optional[Dict[str, Any]]) -> Bank:
    overrides = json.loads(row["settings"]) if row and row["settings"] else {}
    lowered = json.loads(row["labels"]) if row and row["labels"] else {}
    return Bank(bank_id, settings_mod.effective_settings(overrides), labels.LabelMatcher(lowered),
                bool(row and row["pending"]), bool(row and row["isolated"]))


def open_bank(plpy, bank_id: str, argument: str = "bank_id", check=None) -> Bank:
    """For a writer: check bank_id, create the bank if new, read its settings, take the bank lock (share).

    ``check(bank)`` runs on the settings as read, before a new bank is
    created (a call over the limits is refused before it writes anything).
    """
    rows = db.run(plpy, "bank_open", SQL_BANK_OPEN, ["text", "text"], [bank_id, argument])
    if check is not None:
        check(_bank(bank_id, rows[0]))
    if not rows[0]["found"]:
        db.run(plpy, "bank_create", SQL_BANK_CREATE, ["text"], [bank_id])
        rows = db.run(plpy, "bank_open", SQL_BANK_OPEN, ["text", "text"], [bank_id, argument])
    return _bank(bank_id, rows[0])


def read_bank(plpy, bank_id: str, argument: str = "bank_id") -> Bank:
    """For a reader: check bank_id and read its settings (defaults for a bank not created yet)."""
    rows = db.run(plpy, "bank_read", SQL_BANK_READ, ["text", "text"], [bank_id, argument])
    return _bank(bank_id, rows[0] if rows else None)


def effective_settings_sql(plpy, bank_id: str) -> str:
    """_effective_settings: the bank's settings as resolution reads them (defaults and overrides), as JSON.

    For SQL that needs a setting (review_queue's close calls read the
    threshold): the defaults live in settings.py only.
    """
    return json.dumps(read_bank(plpy, bank_id).cfg)


def check_bank(plpy, bank_id: str, argument: str = "bank_id") -> None:
    """Check bank_id with the SQL rule (for entry points that read nothing else first)."""
    db.run(plpy, "bank_check", SQL_BANK_CHECK, ["text", "text"], [bank_id, argument])


@contextlib.contextmanager
def bank_id_first(plpy, bank_id: str) -> Iterator[None]:
    """Check other arguments before the bank is read, yet answer a bad bank_id first.

    An entry point checks its other arguments in Python before its first
    statement reads the bank (and checks bank_id); a refused argument then
    checks bank_id too, so a bad bank_id gets check_bank_id's answer from every
    function whatever else is wrong (tests/db/test_argument_rules.py), and a
    good call runs no statement more."""
    try:
        yield
    except InputError:
        check_bank(plpy, bank_id)
        raise


# -- changing a bank -----------------------------------------------------------

SQL_CONFIGURE = """
INSERT INTO banks (bank_id, settings) VALUES (check_bank_id($1, 'bank_id'), $2::jsonb)
ON CONFLICT (bank_id) DO UPDATE SET settings = excluded.settings
"""

SQL_SET_LABELS = """
INSERT INTO banks (bank_id, entity_labels) VALUES (check_bank_id($1, 'bank_id'), $2::jsonb)
ON CONFLICT (bank_id) DO UPDATE SET entity_labels = excluded.entity_labels
"""

SQL_LOWER_ARRAY = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i)
              ORDER BY i) AS l
"""


def configure_bank(plpy, bank_id: str, settings_json: Optional[str]) -> str:
    """Validate and store a bank's setting overrides; return the effective settings."""
    check_bank(plpy, bank_id)
    if settings_json is None:
        raise InputError("must not be null", "settings", "22004")
    overrides = settings_mod.validate_settings(load_json(settings_json, "settings"), "settings")
    db.run(plpy, "configure", SQL_CONFIGURE, ["text", "text"], [bank_id, json.dumps(overrides)])
    return json.dumps(settings_mod.effective_settings(overrides))


def _label_names(config: Dict[str, Any]):
    """Every key, value and field of a label config, with its path and its uniqueness scope."""
    names, paths, scopes = [], [], []
    for i, a in enumerate(config["attributes"]):
        names.append(a["key"])
        paths.append("attributes[%d].key" % i)
        scopes.append("keys")
        for member in ("values", "fields"):
            field = "value" if member == "values" else "key"
            for j, entry in enumerate(a.get(member) or []):
                names.append(entry[field])
                paths.append("attributes[%d].%s[%d].%s" % (i, member, j, field))
                scopes.append("attributes[%d].%s" % (i, member))
    return names, paths, scopes


def set_entity_labels(plpy, bank_id: str, labels_json: Optional[str]) -> str:
    """Validate and store a bank's label groups; return the stored config."""
    check_bank(plpy, bank_id)
    if labels_json is None:
        raise InputError("must not be null", "labels", "22004")
    config = labels.validate_labels(load_json(labels_json, "labels"), "labels")
    # Two keys, two values of a group or two fields of a map equal after
    # PostgreSQL's lower() would make labels that cannot be told apart
    # ("Sarah-Chen" and "sarah-chen" are one label entity).
    names, paths, scopes = _label_names(config)
    folded = db.run(plpy, "lower_array", SQL_LOWER_ARRAY, ["text[]"], [names])[0]["l"]
    seen = {}
    for i, name in enumerate(folded):
        first = seen.setdefault((scopes[i], name), i)
        if first != i:
            raise InputError('%s "%s" duplicates %s after lower()' % (paths[i], names[i], paths[first]),
                             "labels")
    db.run(plpy, "set_labels", SQL_SET_LABELS, ["text", "text"], [bank_id, json.dumps(config)])
    return json.dumps(config)


SQL_LABELS_READ = """
SELECT c.id, b.entity_labels::text AS l
  FROM (SELECT check_bank_id($1, 'bank_id') AS id) AS c
  LEFT JOIN banks AS b ON b.bank_id = $1
"""


def labels_json_schema(plpy, bank_id: str) -> str:
    """The bank's label vocabulary as a JSON Schema for an extractor."""
    rows = db.run(plpy, "labels_read", SQL_LABELS_READ, ["text"], [bank_id])
    config = json.loads(rows[0]["l"]) if rows and rows[0]["l"] else {}
    return json.dumps(labels.json_schema(config))


SQL_NAME_DATA = """
SELECT 'v' AS kind, lower(v.name) AS a, lower(v.variant) AS b FROM name_variants AS v
UNION ALL
SELECT 's' AS kind, lower(s.form) AS a, NULL AS b FROM org_suffixes AS s
"""

# A bank's own name data (settings name_variants_add ...), case-folded by
# PostgreSQL like every name.
SQL_LOWER = """
SELECT ARRAY(SELECT lower(t COLLATE @collate@) FROM unnest($1::text[]) WITH ORDINALITY AS u (t, i) ORDER BY i) AS l
"""

OVERRIDES = ("name_variants_add", "name_variants_remove", "org_suffixes_add", "org_suffixes_remove")

# Per session: the shipped rows, and the name data of each bank's overrides.
_NAME_DATA: Dict[str, Any] = {}


def name_data(plpy, cfg: Dict[str, Any]) -> names.NameData:
    """The name data a bank reads: shipped (read once per session) with the bank's own additions and removals.

    Empty when no lever needs it.
    """
    needing = (settings_mod.NAME_VARIANTS, settings_mod.ORG_SUFFIXES, settings_mod.BARE_NAMES,
               settings_mod.CONTEXT_BY_ENTITY)
    if not any(settings_mod.lever(cfg, name) for name in needing):
        return names.EMPTY
    shipped = _NAME_DATA.get("shipped")
    if shipped is None:
        rows = db.run(plpy, "name_data", SQL_NAME_DATA, [], [])
        shipped = ([(r["a"], r["b"]) for r in rows if r["kind"] == "v"], [r["a"] for r in rows if r["kind"] == "s"])
        _NAME_DATA["shipped"] = shipped
    overrides = [cfg.get(k) or [] for k in OVERRIDES]
    key = json.dumps(overrides)
    data = _NAME_DATA.get(key)
    if data is None:
        data = _with_overrides(plpy, shipped, overrides)
        if len(_NAME_DATA) > 64:
            _NAME_DATA.clear()
            _NAME_DATA["shipped"] = shipped
        _NAME_DATA[key] = data
    return data


def _with_overrides(plpy, shipped, overrides) -> names.NameData:
    add_v, remove_v, add_s, remove_s = overrides
    flat = [w for pair in add_v + remove_v for w in pair] + add_s + remove_s
    if not flat:
        return names.NameData(shipped[0], shipped[1])
    lowered = iter(db.run(plpy, "lower", SQL_LOWER, ["text[]"], [flat])[0]["l"])
    add_v = [(next(lowered), next(lowered)) for _ in add_v]
    remove_v = {(next(lowered), next(lowered)) for _ in remove_v}
    add_s = [next(lowered) for _ in add_s]
    remove_s = {next(lowered) for _ in remove_s}
    variants = [p for p in shipped[0] + add_v if p not in remove_v and (p[1], p[0]) not in remove_v]
    # A legal form is its words: removing "inc" removes "inc." too.
    removed = {tuple(words.split_words(f)) for f in remove_s}
    suffixes = [f for f in shipped[1] + add_s if tuple(words.split_words(f)) not in removed]
    return names.NameData(variants, suffixes)
