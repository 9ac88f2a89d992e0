"""Per-bank settings: the reference defaults and the validation of overrides.

Overrides arrive as a JSON object: parsed by ``json.loads`` (ints and floats)
or by the jsonb PL/Python transform (every number a ``decimal.Decimal``).
Both are accepted; the result holds ``float`` for real settings and ``int``
for counts. A rejected value raises :class:`InputError`, which the SQL layer
turns into an error with its SQLSTATE.
"""

from __future__ import annotations

import decimal
import difflib
import math
from typing import Any, Dict, Optional, Tuple

from errors import InputError, type_name as _type_name
from mentions import ATTRIBUTE_NAME, MAX_ATTRIBUTE_NAME_CHARS

# The enhanced profile's levers (docs/accuracy.md), each a setting of its own:
# code names a lever by its constant, and lever() refuses any other name, so a
# misspelt lever is an error rather than a lever silently off.
BARE_NAMES = "bare_names"
NAME_VARIANTS = "name_variants"
ORG_SUFFIXES = "org_suffixes"
TYPED_MENTIONS = "typed_mentions"
CONTEXT_BY_ENTITY = "context_by_entity"
ALIAS_MEMORY = "alias_memory"
MISSPELLINGS = "misspellings"
LEVERS = (BARE_NAMES, NAME_VARIANTS, ORG_SUFFIXES, TYPED_MENTIONS, CONTEXT_BY_ENTITY, ALIAS_MEMORY, MISSPELLINGS)

DEFAULTS = {
    "name_weight": 0.5,
    "cooccurrence_weight": 0.3,
    "recency_weight": 0.2,
    "threshold": 0.6,
    "recency_window_days": 7,
    "merge_min_similarity": 0.3,
    "candidate_similarity": 0.3,
    "max_candidates": 200,
    "intrabatch_similarity": 0.5,
    "intrabatch_max_names": 250,
    "expansion_per_entity_limit": 200,
    # Limits, checked before any work: a call's cost grows with its size, and
    # the nearby names of a fact grow with the square of its mentions.
    "max_mentions_per_call": 10000,
    "max_mentions_per_fact": 1000,
    "max_nearby_per_mention": 1000,
    # A "key:value" mention whose key is a declared value group but whose
    # value is not declared is a typo or an extractor's invention: refused
    # unless the bank allows it (it then resolves as a regular name).
    "allow_undeclared_labels": False,
    # Each unit written is queued (reresolve_queue) for reresolve_queued to
    # decide its neighbourhood again, outside the writer's transaction: a
    # writer cannot take the bank's exclusive lock at its commit while other
    # writers hold it shared.
    "auto_reresolve": False,
    # reresolve also decides again, as a whole, an entity the resolver made of
    # one name: it is left out, its mentions are decided again, and where all
    # of them go to one other entity they move there; and a mention of a form
    # other than its entity's name, without the other facts of that form on
    # that entity (sql/058_reresolve.sql). "auto": so where a plan has at most
    # _reresolve_whole_auto_max() such entities to decide (each costs about a
    # fact's decision: 8,212 of them took 40 s on a bank of 14,121 entities),
    # not in the queue's plans (reresolve_queued).
    "reresolve_entities": "auto",
    # reresolve of the whole bank replays it: every fact decided again from
    # nothing in event order (then fact_id), its clusters placed on the
    # entities the bank holds (sql/058_reresolve.sql, the module reresolve),
    # so the partition stops depending on the order facts arrived in. Off by
    # default: on data nobody tuned on (bench.heldout) the event order decided
    # worse than the arrivals it replaced (docs/evaluation.md).
    "reresolve_replay": False,
    # "reference": the reference design's decisions, bit for bit.
    # "enhanced": the levers below, each of which can be switched off
    # (docs/accuracy.md); they do nothing under "reference".
    "profile": "enhanced",
    **{name: True for name in LEVERS},
    # The bank's own name data, over the shipped tables name_variants and
    # org_suffixes: [name, variant] pairs and legal forms to add or to remove.
    "name_variants_add": [],
    "name_variants_remove": [],
    "org_suffixes_add": [],
    "org_suffixes_remove": [],
    # Attribute name -> "identifying", "distinguishing" or "ignored"
    # (attributes.py). A bank's own object is laid over these defaults, not
    # in their place. Read in the enhanced profile only.
    "attribute_kinds": {"email": "identifying", "phone": "identifying", "url": "identifying",
                        "handle": "identifying", "birth_date": "distinguishing"},
}

# At most this many entries in one of the name data settings, each of at most
# MAX_WORD_CHARS characters.
MAX_NAME_DATA = 1000
MAX_WORD_CHARS = 100

PROFILES = ("reference", "enhanced")

# A setting of kind "auto_bool" is true, false or this: the code that reads it decides.
AUTO = "auto"

# attribute_kinds: at most this many names, each one of ATTRIBUTE_KINDS.
MAX_ATTRIBUTE_KINDS = 100
ATTRIBUTE_KINDS = ("identifying", "distinguishing", "ignored")

# key -> (kind, low, high, low_inclusive). Each range says what a value means:
# weights, the threshold and trigram similarities are fractions of 1.
# recency_window_days must be positive: a zero window would divide by zero
# and make recency meaningless; 100 years is more than any memory needs.
# intrabatch_max_names may be 0 or 1, which switches in-batch clustering off
# (it needs at least 2 distinct new names to do anything).
_RULES: Dict[str, Tuple[str, float, float, bool]] = {
    "name_weight": ("real", 0.0, 1.0, True),
    "cooccurrence_weight": ("real", 0.0, 1.0, True),
    "recency_weight": ("real", 0.0, 1.0, True),
    "threshold": ("real", 0.0, 1.0, True),
    "recency_window_days": ("real", 0.0, 36500.0, False),
    "merge_min_similarity": ("real", 0.0, 1.0, True),
    "candidate_similarity": ("real", 0.0, 1.0, True),
    "max_candidates": ("int", 1, 10000, True),
    "intrabatch_similarity": ("real", 0.0, 1.0, True),
    "intrabatch_max_names": ("int", 0, 10000, True),
    "expansion_per_entity_limit": ("int", 1, 100000, True),
    "max_mentions_per_call": ("int", 1, 1000000, True),
    "max_mentions_per_fact": ("int", 1, 100000, True),
    "max_nearby_per_mention": ("int", 0, 100000, True),
    "allow_undeclared_labels": ("bool", 0, 0, True),
    "auto_reresolve": ("bool", 0, 0, True),
    "reresolve_entities": ("auto_bool", 0, 0, True),
    "reresolve_replay": ("bool", 0, 0, True),
    "profile": ("enum", 0, 0, True),
    **{name: ("bool", 0, 0, True) for name in LEVERS},
    "name_variants_add": ("pairs", 0, MAX_NAME_DATA, True),
    "name_variants_remove": ("pairs", 0, MAX_NAME_DATA, True),
    "org_suffixes_add": ("words", 0, MAX_NAME_DATA, True),
    "org_suffixes_remove": ("words", 0, MAX_NAME_DATA, True),
    "attribute_kinds": ("kinds", 0, MAX_ATTRIBUTE_KINDS, True),
}


def _show(value: Any) -> str:
    """Render a rejected value the way the user wrote it (JSON-ish)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return '"%s"' % value
    return str(value)


def _number(key: str, value: Any, argument: str) -> float:
    """Return ``value`` as a finite float, or raise naming ``key``."""
    # JSON true is not 1: a boolean where a number belongs is a mistake.
    if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
        raise InputError('"%s" must be a number, got %s %s'
                         % (key, _type_name(value), _show(value)), argument)
    if isinstance(value, decimal.Decimal):
        finite = value.is_finite()
    else:
        # Python ints are always finite (math.isfinite would overflow on 10**400).
        finite = isinstance(value, int) or math.isfinite(value)
    if not finite:
        raise InputError('"%s" must be a finite number, got %s' % (key, _show(value)), argument)
    # A huge but finite JSON number (1e400) becomes inf here and then fails
    # the range check below with the bounds in the message; an integer too
    # large for a float (10**400) would raise OverflowError, so it is read as
    # infinity the same way.
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _check(key: str, value: Any, argument: str):
    """Validate one setting and return its normalised value."""
    kind, low, high, low_inclusive = _RULES[key]
    if kind == "enum":
        if value not in PROFILES:
            raise InputError('"%s" must be one of %s, got %s %s'
                             % (key, ", ".join('"%s"' % p for p in PROFILES), _type_name(value), _show(value)),
                             argument)
        return value
    if kind in ("pairs", "words"):
        return _name_data(key, kind, value, argument)
    if kind == "kinds":
        return _attribute_kinds(key, value, argument)
    if kind == "auto_bool":
        if not isinstance(value, bool) and value != AUTO:
            raise InputError('"%s" must be true, false or "%s", got %s %s'
                             % (key, AUTO, _type_name(value), _show(value)), argument)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError('"%s" must be true or false, got %s %s'
                             % (key, _type_name(value), _show(value)), argument)
        return value
    number = _number(key, value, argument)
    if kind == "int":
        # 200.0 is accepted as 200 (JSON has one number type); 200.5 is not.
        if not low <= number <= high or number != int(number):
            raise InputError('"%s" must be an integer between %d and %d, got %s'
                             % (key, low, high, _show(value)), argument)
        return int(number)
    too_low = number < low if low_inclusive else number <= low
    if too_low or number > high:
        if low_inclusive:
            bounds = "between %g and %g" % (low, high)
        else:
            bounds = "greater than %g and at most %g" % (low, high)
        raise InputError('"%s" must be a number %s, got %s' % (key, bounds, _show(value)), argument)
    return number


def _word(key: str, value: Any, argument: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError('"%s": every name must be a non-blank string, got %s %s'
                         % (key, _type_name(value), _show(value)), argument)
    if len(value) > MAX_WORD_CHARS:
        raise InputError('"%s": a name is at most %d characters, got %d' % (key, MAX_WORD_CHARS, len(value)),
                         argument)
    return value


def _name_data(key: str, kind: str, value: Any, argument: str) -> list:
    """A list of names ("words") or of [name, variant] pairs ("pairs"), at most MAX_NAME_DATA."""
    what = "[name, variant] pairs" if kind == "pairs" else "names"
    if not isinstance(value, list):
        raise InputError('"%s" must be an array of %s, got %s %s' % (key, what, _type_name(value), _show(value)),
                         argument)
    if len(value) > MAX_NAME_DATA:
        raise InputError('"%s" has %d entries; at most %d' % (key, len(value), MAX_NAME_DATA), argument)
    if kind == "words":
        return [_word(key, v, argument) for v in value]
    out = []
    for v in value:
        if not isinstance(v, list) or len(v) != 2:
            raise InputError('"%s" must be an array of %s, got %s' % (key, what, _show(v)), argument)
        out.append([_word(key, v[0], argument), _word(key, v[1], argument)])
    return out


def _attribute_kinds(key: str, value: Any, argument: str) -> dict:
    """attribute_kinds: an object of attribute names (as mentions name them) to one of ATTRIBUTE_KINDS."""
    if not isinstance(value, dict):
        raise InputError('"%s" must be an object of attribute names to kinds, got %s %s'
                         % (key, _type_name(value), _show(value)), argument)
    if len(value) > MAX_ATTRIBUTE_KINDS:
        raise InputError('"%s" has %d entries; at most %d' % (key, len(value), MAX_ATTRIBUTE_KINDS), argument)
    for name, kind in value.items():
        if not ATTRIBUTE_NAME.match(name) or len(name) > MAX_ATTRIBUTE_NAME_CHARS:
            raise InputError('"%s": attribute name %s must be a lowercase identifier (a-z, 0-9, _; at most %d '
                             'characters)' % (key, _show(name), MAX_ATTRIBUTE_NAME_CHARS), argument)
        if kind not in ATTRIBUTE_KINDS:
            raise InputError('"%s": the kind of "%s" must be one of %s, got %s %s'
                             % (key, name, ", ".join('"%s"' % k for k in ATTRIBUTE_KINDS), _type_name(kind),
                                _show(kind)), argument)
    return dict(value)


def _unknown(what: str, name: Any, known, argument: str) -> InputError:
    """The error for a name that is not one of ``known``, with the closest one as a hint."""
    hint = difflib.get_close_matches(str(name), list(known), n=1)
    message = "unknown %s %s" % (what, _show(name))
    if hint:
        message += ' (did you mean "%s"?)' % hint[0]
    return InputError(message, argument)


def validate_settings(overrides: Any, argument: str = "settings") -> Dict[str, Any]:
    """Validate a settings object and return only its keys, normalised."""
    if not isinstance(overrides, dict):
        raise InputError("must be a JSON object, got %s" % _type_name(overrides), argument)
    result: Dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in _RULES:
            raise _unknown("key", key, _RULES, argument)
        result[key] = _check(key, value, argument)
    return result


def effective_settings(overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Return DEFAULTS updated with the validated overrides (None means none)."""
    settings = dict(DEFAULTS)
    if overrides is not None:
        settings.update(validate_settings(overrides))
        # One attribute's kind set leaves the others' defaults in place.
        settings["attribute_kinds"] = {**DEFAULTS["attribute_kinds"], **settings["attribute_kinds"]}
    return settings


def lever(settings: Dict[str, Any], name: str) -> bool:
    """True iff a lever is on: its own setting, under the enhanced profile.

    ``name`` is one of LEVERS; any other name raises (SQLSTATE 22023, naming
    it), whatever the profile: a misspelt lever must not read as a lever off.
    """
    if name not in LEVERS:
        raise _unknown("lever", name, LEVERS, "settings")
    return settings.get("profile") == "enhanced" and bool(settings[name])
