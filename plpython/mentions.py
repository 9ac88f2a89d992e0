"""Parsing and checking what a caller passes in: mention texts and the mentions array.

The one parser of the mention element format, shared by the server (every
resolve entry point and the facts trigger) and the client's importer, which
loads this file from the package data so that a line the importer accepts is
a line the server accepts. Case folding and date parsing are PostgreSQL's and
happen later (fold.py); nothing here lowercases. Standard library only.

The bank_id rule is not here: it is one SQL function (check_bank_id in
sql/020_banks.sql) that every entry point, PL/Python or PL/pgSQL, runs in its
first statement, so the rule cannot drift between languages.
"""

import json
import re
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from errors import InputError, type_name

# Names are stored in a unique btree index with the bank id: 500 characters
# are at most 2,000 bytes, which with a 100-character bank id stays under the
# index's limit of about 2,700 bytes. Longer names are refused, not truncated.
MAX_NAME_CHARS = 500
ELEMENT_KEYS = ("text", "nearby", "event_date", "resolve", "type", "attributes")
# An entity type as a caller names it ("person", "organization", "place"):
# free text, case-folded by PostgreSQL; the limit of entities.entity_type.
MAX_TYPE_CHARS = 100

# Attributes ("attributes": {"birth_date": "1961-05-03"}; attributes.py):
# names are lowercase identifiers, as JSON keys compare exactly; values are
# strings, normalised by the server.
ATTRIBUTE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_ATTRIBUTE_NAME_CHARS = 63
MAX_ATTRIBUTE_VALUE_CHARS = 500
MAX_ATTRIBUTES = 32

# Python's datetime spans years 1 to 9999; PostgreSQL's timestamptz goes
# further and has 'infinity'. An event date outside this span is refused
# (it would also pin last_seen at infinity, so recency could never count).
MIN_EPOCH = datetime(1, 1, 2, tzinfo=timezone.utc).timestamp()
MAX_EPOCH = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp()


def check_text(text: Any, argument: str) -> None:
    """Refuse a mention text that is null, not a string, blank or too long to store."""
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


def _parse_int(digits: str):
    """A JSON integer; one too long for a float becomes +-inf, which every check refuses."""
    # jsonb prints 1e5000 as 5,001 digits: int() refuses strings over 4,300
    # digits and float(int) overflows past 1e308, while float() of the text
    # is simply inf, so the validators can name the key that holds it.
    return int(digits) if len(digits) <= 300 else float(digits)


def load_json(raw: str, argument: str) -> Any:
    """Parse a jsonb argument's text; what jsonb holds but Python cannot is bad input."""
    # jsonb accepts 5,000 nested arrays; Python's json module stops at its
    # recursion limit.
    try:
        return json.loads(raw, parse_int=_parse_int)
    except RecursionError:
        pass
    raise InputError("is nested too deeply", argument)


def item(text: str, where: str, nearby: Optional[List[str]] = None, event_date: Optional[str] = None,
         resolve: bool = True, text_argument: Optional[str] = None, etype: Optional[str] = None,
         attributes: Optional[Dict[str, str]] = None, attributes_argument: Optional[str] = None) -> Dict[str, Any]:
    """One mention item as the resolver takes it; arguments name it in error messages."""
    # nearby_given: the caller's own list (bounded by max_nearby_per_mention),
    # not the fact's other mentions filled in later (bounded per fact).
    return {"text": text, "nearby": nearby, "event_date": event_date, "resolve": resolve,
            "text_argument": text_argument or where, "date_argument": where + ".event_date",
            "nearby_given": nearby is not None, "type": etype, "attributes": attributes or None,
            "attributes_argument": attributes_argument or where + ".attributes"}


def check_attributes(attributes: Any, argument: str) -> Optional[Dict[str, str]]:
    """A mention's attributes: null, or an object of lowercase names to non-blank strings."""
    if attributes is None:
        return None
    if not isinstance(attributes, dict):
        raise InputError("must be an object of attribute names to strings, got %s" % type_name(attributes),
                         argument)
    if len(attributes) > MAX_ATTRIBUTES:
        raise InputError("has %d attributes; at most %d" % (len(attributes), MAX_ATTRIBUTES), argument, "54000")
    for name, value in attributes.items():
        if not ATTRIBUTE_NAME.match(name) or len(name) > MAX_ATTRIBUTE_NAME_CHARS:
            raise InputError("attribute name %s must be a lowercase identifier (a-z, 0-9, _; at most %d "
                             "characters)" % (json.dumps(name, ensure_ascii=False), MAX_ATTRIBUTE_NAME_CHARS),
                             argument)
        where = "%s.%s" % (argument, name)
        if not isinstance(value, str):
            raise InputError("must be a string, got %s" % type_name(value), where)
        if not value.strip():
            raise InputError("must not be empty or blank", where)
        if len(value) > MAX_ATTRIBUTE_VALUE_CHARS:
            raise InputError("is %d characters long; attribute values are limited to %d characters"
                             % (len(value), MAX_ATTRIBUTE_VALUE_CHARS), where, "22001")
    return dict(attributes)


def check_type(etype: Optional[str], argument: str) -> None:
    """A mention's type, when given: not blank, at most MAX_TYPE_CHARS characters."""
    if etype is None:
        return
    if not etype.strip():
        raise InputError("must not be empty or blank", argument)
    if len(etype) > MAX_TYPE_CHARS:
        raise InputError("is %d characters long; types are limited to %d characters"
                         % (len(etype), MAX_TYPE_CHARS), argument, "22001")


def parse_element(elem: Any, where: str) -> Dict[str, Any]:
    """Check one element of a mentions array (a string or an object) and return its item."""
    if isinstance(elem, str):
        check_text(elem, where)
        return item(elem, where)
    if not isinstance(elem, dict):
        raise InputError("must be a string or an object, got %s" % type_name(elem), where)
    for key in elem:
        if key not in ELEMENT_KEYS:
            raise InputError('unknown key "%s" (allowed: %s)' % (key, ", ".join(ELEMENT_KEYS)), where)
    if "text" not in elem:
        raise InputError('needs a "text"', where)
    check_text(elem["text"], where + ".text")
    nearby = elem.get("nearby")
    if nearby is not None:
        if not isinstance(nearby, list) or not all(isinstance(n, str) for n in nearby):
            raise InputError("must be an array of strings", where + ".nearby")
    date = elem.get("event_date")
    if date is not None and not isinstance(date, str):
        raise InputError("must be a timestamp string, got %s" % type_name(date), where + ".event_date")
    resolve = elem.get("resolve", True)
    if resolve is None:
        resolve = True
    if not isinstance(resolve, bool):
        raise InputError("must be true or false, got %s" % type_name(resolve), where + ".resolve")
    etype = elem.get("type")
    if etype is not None and not isinstance(etype, str):
        raise InputError("must be a string, got %s" % type_name(etype), where + ".type")
    check_type(etype, where + ".type")
    attributes = check_attributes(elem.get("attributes"), where + ".attributes")
    return item(elem["text"], where, nearby, date, resolve, where + ".text", etype, attributes)


def load_mentions(raw: Optional[str], argument: str = "mentions") -> List[Any]:
    """A ``mentions`` jsonb argument (its text) as its list of elements, not yet checked one by one.

    What a call's limits need (how many elements) before any per-mention work.
    """
    if raw is None:
        raise InputError("must not be null", argument, "22004")
    value = load_json(raw, argument)
    if not isinstance(value, list):
        raise InputError("must be a JSON array, got %s" % type_name(value), argument)
    return value


def parse_elements(value: List[Any], argument: str = "mentions") -> List[Dict[str, Any]]:
    """Check the elements of a loaded mentions array (load_mentions) into items; errors name the element."""
    return [parse_element(elem, "%s[%d]" % (argument, i)) for i, elem in enumerate(value)]


def parse_mentions(raw: Optional[str], argument: str = "mentions") -> List[Dict[str, Any]]:
    """Parse a ``mentions`` jsonb argument (its text) into items; errors name the element."""
    return parse_elements(load_mentions(raw, argument), argument)


def check_sizes(sizes: List[int], arguments: List[str], limits: Dict[str, Any]) -> None:
    """Refuse a call or a fact with more mentions than a bank's limits allow (SQLSTATE 54000).

    ``sizes``: the mentions of each fact of one call (one bank), ``arguments``
    how errors name each fact; ``limits`` the bank's effective settings. The
    server checks a call with it before any per-mention work, the importer
    each line and batch before writing anything.
    """
    total = sum(sizes)
    if total > limits["max_mentions_per_call"]:
        raise InputError("%d mentions in one call; the limit is max_mentions_per_call = %d"
                         % (total, limits["max_mentions_per_call"]), "mentions", "54000")
    for size, argument in zip(sizes, arguments):
        if size > limits["max_mentions_per_fact"]:
            raise InputError("%d mentions in one fact; the limit is max_mentions_per_fact = %d"
                             % (size, limits["max_mentions_per_fact"]), argument, "54000")


def datetime_of(epoch: Optional[float]) -> Optional[datetime]:
    """A stored or given epoch as a datetime; None when missing or out of Python's range."""
    # A stored last_seen outside the range (written by hand, say 'infinity')
    # is further than any window from every accepted event date: recency 0,
    # exactly as for a missing date.
    if epoch is None or not MIN_EPOCH <= epoch <= MAX_EPOCH:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc)


def epoch_in_range(epoch: Optional[float]) -> bool:
    """True iff a parsed event date is one the resolver accepts (finite, years 1 to 9999)."""
    return epoch is None or MIN_EPOCH <= epoch <= MAX_EPOCH
