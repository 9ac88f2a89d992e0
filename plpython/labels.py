"""Entity labels: a bank's controlled vocabulary (docs/design.md §5).

A label group is declared as ``{"key": "person", "type": "value", "values":
[{"value": "sarah-chen"}]}``; a mention "person:sarah-chen" is then a label,
resolved by exact match only, never fuzzily. This module validates the
declaration, recognises label mentions and derives the JSON Schema offered to
an extractor. Case folding is PostgreSQL's: the matcher is built from the
config lowered by ``lower(config::text)::jsonb`` and is given lowered texts.
Standard library only.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from errors import InputError, type_name

TYPES = ("value", "multi-values", "text", "multi-text", "map")
VALUE_TYPES = ("value", "multi-values")
TEXT_TYPES = ("text", "multi-text")

# A label is stored as an entity name, which holds at most 500 characters
# (entities_name_length); a longer "key:value" could never be created.
MAX_LABEL_LENGTH = 500

_CONFIG_PROPS = ("attributes",)
_ATTRIBUTE_PROPS = ("key", "type", "values", "fields", "description")
_VALUE_PROPS = ("value", "description")
_FIELD_PROPS = ("key", "description")


def _fail(path: str, problem: str, argument: str) -> None:
    """Raise the InputError for ``path``."""
    if not path:
        # Top level: "labels: has unknown ..." reads badly, drop the verb.
        problem = problem[4:] if problem.startswith("has ") else problem
    raise InputError("%s %s" % (path, problem) if path else problem, argument)


def _object(value: Any, path: str, allowed: tuple, argument: str) -> Dict[str, Any]:
    """Check ``value`` is an object with only ``allowed`` properties."""
    if not isinstance(value, dict):
        _fail(path, "must be a JSON object, got %s" % type_name(value), argument)
    for prop in value:
        if prop not in allowed:
            # A typo ("value" for "values") must not silently drop a vocabulary.
            _fail(path, 'has unknown property "%s" (allowed: %s)'
                  % (prop, ", ".join(allowed)), argument)
    return value


def _list(value: Any, path: str, argument: str) -> List[Any]:
    """Check ``value`` is a non-empty array."""
    if not isinstance(value, list):
        _fail(path, "must be an array, got %s" % type_name(value), argument)
    if not value:
        _fail(path, "must not be empty", argument)
    return value


def _text(value: Any, path: str, argument: str) -> str:
    """Check ``value`` is a string that is not empty or blank."""
    if not isinstance(value, str):
        _fail(path, "must be a string, got %s" % type_name(value), argument)
    if not value.strip():
        _fail(path, "must not be empty or blank", argument)
    return value


def _key(value: Any, path: str, argument: str) -> str:
    """Check a group or field key: a non-blank string without ':' or whitespace."""
    _text(value, path, argument)
    # ":" separates key, field and value in "key:field:value": a key holding
    # one would make "a:b:c" ambiguous. Whitespace would make "topic :x" and
    # "topic:x" look alike to a reader but not to the matcher.
    if ":" in value or any(ch.isspace() for ch in value):
        _fail(path, "must not contain ':' or whitespace, got \"%s\"" % value, argument)
    return value


def _described(source: Dict[str, Any], target: Dict[str, Any], path: str, argument: str) -> None:
    """Copy an optional non-blank description."""
    if "description" in source:
        target["description"] = _text(source["description"], path + ".description", argument)


def _unique_items(raw_items: Any, path: str, allowed: tuple, field: str, noun: str,
                  check: Callable[[Any, str], str], argument: str) -> List[Dict[str, Any]]:
    """Validate a non-empty array of {field, description} objects: each ``field``
    passes ``check(value, its path)`` and stands once; return them normalised."""
    result = []
    seen = set()
    for j, raw in enumerate(_list(raw_items, path, argument)):
        item_path = "%s[%d]" % (path, j)
        item = _object(raw, item_path, allowed, argument)
        value = check(item.get(field), item_path + "." + field)
        if value in seen:
            _fail(item_path + "." + field, 'duplicates the %s "%s"' % (noun, value), argument)
        seen.add(value)
        entry = {field: value}
        _described(item, entry, item_path, argument)
        result.append(entry)
    return result


def _values(attr: Dict[str, Any], path: str, argument: str) -> List[Dict[str, Any]]:
    """Validate the values of a value/multi-values group."""

    def check(raw: Any, value_path: str) -> str:
        value = _text(raw, value_path, argument)
        # Mention texts are matched whole: " sarah" could never be written
        # as "person: sarah" by accident and be meant.
        if value != value.strip():
            _fail(value_path, "must not start or end with whitespace", argument)
        if len(attr["key"]) + 1 + len(value) > MAX_LABEL_LENGTH:
            _fail(value_path, "makes a label longer than %d characters" % MAX_LABEL_LENGTH,
                  argument)
        return value

    return _unique_items(attr.get("values"), path, _VALUE_PROPS, "value", "value", check, argument)


def _fields(attr: Dict[str, Any], path: str, argument: str) -> List[Dict[str, Any]]:
    """Validate the fields of a map group."""
    return _unique_items(attr.get("fields"), path, _FIELD_PROPS, "key", "field",
                         lambda raw, key_path: _key(raw, key_path, argument), argument)


def validate_labels(config: Any, argument: str = "labels") -> Dict[str, Any]:
    """Validate a label config and return it normalised as {"attributes": [...]}."""
    _object(config, "", _CONFIG_PROPS, argument)
    raw_attributes = config.get("attributes", [])
    if not isinstance(raw_attributes, list):
        _fail("attributes", "must be an array, got %s" % type_name(raw_attributes), argument)
    attributes = []
    seen = set()
    for i, raw in enumerate(raw_attributes):
        path = "attributes[%d]" % i
        attr = _object(raw, path, _ATTRIBUTE_PROPS, argument)
        key = _key(attr.get("key"), path + ".key", argument)
        if key in seen:
            _fail(path + ".key", 'duplicates the key "%s"' % key, argument)
        seen.add(key)
        kind = attr.get("type")
        if kind not in TYPES:
            _fail(path + ".type", "must be one of %s, got %s"
                  % (", ".join(TYPES), '"%s"' % kind if isinstance(kind, str) else type_name(kind)),
                  argument)
        entry: Dict[str, Any] = {"key": key, "type": kind}
        _described(attr, entry, path, argument)
        # A fixed vocabulary without values would accept nothing; values on
        # an open group would suggest a restriction that is not enforced.
        if kind in VALUE_TYPES:
            entry["values"] = _values(attr, path + ".values", argument)
        elif "values" in attr:
            _fail(path + ".values", 'is only allowed for types "value" and "multi-values"', argument)
        if kind == "map":
            entry["fields"] = _fields(attr, path + ".fields", argument)
        elif "fields" in attr:
            _fail(path + ".fields", 'is only allowed for type "map"', argument)
        attributes.append(entry)
    return {"attributes": attributes}


class LabelMatcher:
    """Recognises label mentions, built from the config lowered by PostgreSQL."""

    def __init__(self, lowered_config: Optional[Dict[str, Any]]):
        self.exact = set()        # "key:value" of value/multi-values groups
        self.open_keys = set()    # "key:" of text/multi-text groups
        self.map_prefixes = set()  # "key:field:" of map groups
        self.vocabularies: Dict[str, List[str]] = {}  # key of a value group -> its values
        for attr in (lowered_config or {}).get("attributes") or []:
            key = attr["key"]
            kind = attr["type"]
            if kind in VALUE_TYPES:
                self.vocabularies[key] = [item["value"] for item in attr.get("values") or []]
                for item in attr.get("values") or []:
                    self.exact.add("%s:%s" % (key, item["value"]))
            elif kind in TEXT_TYPES:
                self.open_keys.add(key + ":")
            elif kind == "map":
                for item in attr.get("fields") or []:
                    self.map_prefixes.add("%s:%s:" % (key, item["key"]))

    def __bool__(self) -> bool:
        """True iff the bank declares at least one label."""
        return bool(self.exact or self.open_keys or self.map_prefixes)

    def undeclared(self, text: str) -> Optional[Tuple[str, str]]:
        """(group key, its declared values) when ``text`` is "key:value" of a value group
        but the value is not declared; None otherwise."""
        first = text.find(":")
        if first <= 0 or text in self.exact:
            return None
        values = self.vocabularies.get(text[:first])
        if values is None or not text[first + 1:].strip():
            return None
        shown = ", ".join(values[:10]) + (", ..." if len(values) > 10 else "")
        return text[:first], shown

    def is_label(self, text: str) -> bool:
        """True iff the lowered ``text`` is a declared label."""
        # A fixed vocabulary matches whole: "person:bob" is not a label when
        # bob is not a declared person, it is an ordinary name.
        if text in self.exact:
            return True
        # Keys and fields hold no ":", so the first colon ends the key and
        # the second ends the field.
        first = text.find(":")
        if first <= 0:
            return False
        # "topic:" alone (or followed by blanks) names nothing.
        if text[:first + 1] in self.open_keys and text[first + 1:].strip():
            return True
        second = text.find(":", first + 1)
        if second < 0:
            return False
        return text[:second + 1] in self.map_prefixes and bool(text[second + 1:].strip())


def _value_description(attr: Dict[str, Any]) -> Optional[str]:
    """The group description followed by one line per described value."""
    lines = [attr["description"]] if "description" in attr else []
    lines.extend("- %s: %s" % (item["value"], item["description"])
                 for item in attr["values"] if "description" in item)
    return "\n".join(lines) if lines else None


def json_schema(config: Any) -> Dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) an extractor fills with this vocabulary."""
    # An enum per value group: a model constrained by this schema can only
    # return declared values, which then resolve exactly.
    properties: Dict[str, Any] = {}
    for attr in validate_labels(config)["attributes"]:
        kind = attr["type"]
        if kind in VALUE_TYPES:
            enum = {"type": "string", "enum": [item["value"] for item in attr["values"]]}
            prop = enum if kind == "value" else {"type": "array", "items": enum, "uniqueItems": True}
            description = _value_description(attr)
        elif kind in TEXT_TYPES:
            prop = {"type": "string"} if kind == "text" else {"type": "array", "items": {"type": "string"}}
            description = attr.get("description")
        else:
            fields = {}
            for item in attr["fields"]:
                fields[item["key"]] = {"type": "string"}
                if "description" in item:
                    fields[item["key"]]["description"] = item["description"]
            prop = {"type": "object", "properties": fields, "additionalProperties": False}
            description = attr.get("description")
        if description is not None:
            prop["description"] = description
        properties[attr["key"]] = prop
    return {"type": "object", "properties": properties, "additionalProperties": False}
