"""Mention attributes: what a mention says about its entity besides its name.

``{"text": "Maria Schmidt", "attributes": {"birth_date": "1961-05-03",
"email": "maria@example.org"}}``. Each attribute has a kind, per bank
(configure_bank's ``attribute_kinds``, over defaults in settings.py: email,
phone, url and handle identify, birth_date distinguishes):

- identifying: one value, one entity. An exact match of the normalised value
  is strong evidence of the same entity, whatever the spelling of the name
  ("S. Chen" with Sarah Chen's email);
- distinguishing: one entity, one value. A conflicting value rules an entity
  out (two people called Maria Schmidt, born years apart);
- ignored: stored with the provenance, not read by the resolver.

Values are normalised by PostgreSQL in one statement per call (case folding
is lower(), dates are read as dates), by the attribute's name: NORMALISERS,
then any name ending in "_date" as a date, else trimmed and lowercased. The
resolver reads them in the enhanced profile only; the reference profile
stores them and decides as it always did.

Parsing the shape (an object of names to strings) is mentions.py's, shared
with the importer; this module is the server's.
"""

import json
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

import db
from errors import InputError

from settings import ATTRIBUTE_KINDS

IDENTIFYING, DISTINGUISHING, IGNORED = ATTRIBUTE_KINDS

# How a value is normalised before it is compared or stored: by the
# attribute's name. "digits": a phone number written "+49 30 1234-56" or
# "0049301234 56" differs in its prefix, which is left to the caller.
NORMALISERS = {
    "email": "lower",
    "phone": "digits",
    "url": "url",
    "handle": "handle",
}
DATE_SUFFIX = "_date"

def normaliser(name: str) -> str:
    """The rule a value of this attribute is normalised by (SQL_NORMALISE's CASE)."""
    if name in NORMALISERS:
        return NORMALISERS[name]
    if name.endswith(DATE_SUFFIX):
        return "date"
    return "lower"


def kinds(cfg: Dict[str, Any]) -> Dict[str, str]:
    """The bank's kind of every attribute it names (its effective attribute_kinds, defaults included)."""
    return cfg.get("attribute_kinds") or {}


def named(cfg_kinds: Dict[str, str], kind: str) -> List[str]:
    """The attribute names the bank gives this kind."""
    return sorted(n for n, k in cfg_kinds.items() if k == kind)


def kind_of(cfg_kinds: Dict[str, str], name: str) -> str:
    """An attribute's kind; one the bank never named is ignored."""
    return cfg_kinds.get(name, IGNORED)


# One statement per call that carries attributes: every value normalised by
# its rule (a handle loses its leading at signs). A date PostgreSQL cannot read fails the statement; the values are
# then tried one by one to name it (_name_bad_value).
SQL_NORMALISE = """
SELECT ARRAY(
    SELECT CASE a.rule
               WHEN 'digits' THEN regexp_replace(a.v, '[^0-9]', '', 'g')
               WHEN 'url' THEN regexp_replace(lower(btrim(a.v) COLLATE @collate@),
                                              '^[a-z][a-z0-9+.-]*://(www[.])?|/+$', '', 'g')
               WHEN 'handle' THEN ltrim(lower(btrim(a.v) COLLATE @collate@), '@')
               WHEN 'date' THEN to_char(a.v::date, 'YYYY-MM-DD')
               ELSE lower(btrim(a.v) COLLATE @collate@)
           END
      FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS a (rule, v, i)
     ORDER BY a.i) AS normalised
"""


def _run(plpy, rules: List[str], values: List[str]) -> List[str]:
    plan = db.plan(plpy, "normalise_attributes", SQL_NORMALISE, ["text[]", "text[]"])
    return db.execute(plpy, plan, [rules, values])[0]["normalised"]


def _name_bad_value(plpy, rules, values, arguments) -> None:
    for rule, value, argument in zip(rules, values, arguments):
        with db.attempt(plpy) as outcome:
            _run(plpy, [rule], [value])
        if outcome.error is not None:
            raise InputError("is not a valid date: %s" % json.dumps(value, ensure_ascii=False), argument, "22007")


def normalise(plpy, items: List[Dict[str, Any]]) -> List[Optional[Dict[str, str]]]:
    """Every item's attributes, normalised (None for an item without); one statement when any has some.

    A value that normalises to nothing (a phone without digits) is an error
    naming it: the caller said something the resolver cannot compare.
    """
    where = [(n, name) for n, it in enumerate(items) for name in sorted(it.get("attributes") or {})]
    if not where:
        return [None] * len(items)
    rules = [normaliser(name) for _, name in where]
    values = [items[n]["attributes"][name] for n, name in where]
    arguments = ["%s.%s" % (items[n]["attributes_argument"], name) for n, name in where]
    with db.attempt(plpy) as outcome:
        normalised = _run(plpy, rules, values)
    if outcome.error is not None:
        _name_bad_value(plpy, rules, values, arguments)
        raise outcome.error
    out: List[Optional[Dict[str, str]]] = [None] * len(items)
    for (n, name), value, argument in zip(where, normalised, arguments):
        if not value:
            raise InputError("is empty once normalised (%s): nothing to compare"
                             % json.dumps(items[n]["attributes"][name], ensure_ascii=False), argument)
        out[n] = dict(out[n] or {}, **{name: value})
    return out


def normalise_one(plpy, values: Optional[Dict[str, str]], argument: str) -> Optional[Dict[str, str]]:
    """One mention's attributes, normalised (a one-mention function's ``attributes`` argument)."""
    return normalise(plpy, [{"attributes": values, "attributes_argument": argument}])[0]


def of_kind(values: Optional[Dict[str, str]], cfg_kinds: Dict[str, str], kind: str) -> Dict[str, str]:
    """The attributes of one kind among a mention's normalised ones."""
    return {k: v for k, v in (values or {}).items() if kind_of(cfg_kinds, k) == kind}


class Fit(NamedTuple):
    """How an entity's distinguishing values meet the mention's: the attributes it conflicts and agrees on."""

    conflicts: List[str]
    agrees: List[str]


def fit(mine: Dict[str, str], held: Dict[str, Set[str]]) -> Fit:
    """How an entity holding ``held`` meets the mention's distinguishing values ``mine``.

    An entity conflicts on an attribute when it holds values of it and the
    mention's is not among them; one that holds none does not (nothing is
    known). An over-merged entity holding two birth dates conflicts with a
    third only. It agrees when it holds the mention's value: among entities
    of one name, the one born that day.
    """
    return Fit(sorted(name for name, value in mine.items() if held.get(name) and value not in held[name]),
               sorted(name for name, value in mine.items() if value in held.get(name, ())))


def fits(mine: Dict[str, str], ids: Iterable[str],
         values_of: Callable[[str], Dict[str, Set[str]]]) -> Dict[str, Fit]:
    """The entities among ``ids`` that conflict or agree with the mention's distinguishing values, and how."""
    out = {}
    for e in ids:
        f = fit(mine, values_of(e))
        if f.conflicts or f.agrees:
            out[e] = f
    return out


def ruled_out(found: Dict[str, Fit]) -> Dict[str, List[str]]:
    """entity -> the attributes it conflicts on, for the entities a conflict rules out."""
    return {e: f.conflicts for e, f in found.items() if f.conflicts}


def identified(found: Iterable[str], ruled_out: Callable[[str], bool]) -> Tuple[Optional[str], bool]:
    """What identifying values decide: (the one entity holding them, or None; whether the mention is ambiguous).

    ``found``: the entities of a compatible type holding any identifying
    value of the mention. One, not ruled out by a distinguishing attribute:
    that entity. Several, or the one ruled out: none, and ambiguous (the
    mention is placed by name and context, and says so). None: no say.
    """
    found = sorted(set(found))
    if not found:
        return None, False
    if len(found) == 1 and not ruled_out(found[0]):
        return found[0], False
    return None, True


def as_json(values: Optional[Dict[str, str]]) -> Optional[str]:
    """A mention's normalised attributes as the provenance stores them (NULL: none)."""
    return json.dumps(values, sort_keys=True, ensure_ascii=False) if values else None


# The entities holding identifying values (GIN over mentions.attributes), one
# statement for a call's values; and the values of given entities for given
# attributes (the provenance rows that carry any).
SQL_HOLDERS = """
SELECT DISTINCT k.name, k.value, e.canonical_name, e.entity_type, e.entity_kind, e.id::text AS id,
       lower(e.canonical_name) AS key
  FROM unnest($2::text[], $3::text[]) AS k (name, value)
 INNER JOIN mentions AS m
    ON m.bank_id = $1 AND m.attributes IS NOT NULL AND m.attributes @> jsonb_build_object(k.name, k.value)
 INNER JOIN entities AS e ON m.bank_id = e.bank_id AND m.entity_id = e.id
"""

SQL_HELD = """
SELECT DISTINCT m.entity_id::text AS id, a.key AS name, a.value
  FROM mentions AS m
 CROSS JOIN LATERAL jsonb_each_text(m.attributes) AS a (key, value)
 WHERE m.bank_id = $1 AND m.entity_id = ANY($2::uuid[]) AND m.attributes IS NOT NULL AND a.key = ANY($3::text[])
"""


def holders(plpy, bank_id: str, pairs: Iterable[tuple]) -> Dict[tuple, List[Dict[str, Any]]]:
    """(name, value) -> the bank's entities whose provenance holds it."""
    pairs = sorted(set(pairs))
    if not pairs:
        return {}
    out: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in db.run(plpy, "attribute_holders", SQL_HOLDERS, ["text", "text[]", "text[]"],
                    [bank_id, [p[0] for p in pairs], [p[1] for p in pairs]]):
        out.setdefault((r["name"], r["value"]), []).append(r)
    return out


def held(plpy, bank_id: str, entity_ids: Iterable[str], names: Iterable[str]) -> Dict[str, Dict[str, Set[str]]]:
    """entity id -> attribute -> the values its provenance holds, for the given attributes."""
    ids, names = sorted(set(entity_ids)), sorted(set(names))
    out: Dict[str, Dict[str, Set[str]]] = {i: {} for i in ids}
    if not ids or not names:
        return out
    for r in db.run(plpy, "attributes_held", SQL_HELD, ["text", "uuid[]", "text[]"], [bank_id, ids, names]):
        out[r["id"]].setdefault(r["name"], set()).add(r["value"])
    return out
