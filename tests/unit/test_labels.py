"""Entity labels: config validation, label matching, JSON Schema (docs/design.md §5)."""

import copy

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from labels import LabelMatcher, json_schema, validate_labels
from settings import InputError

CONFIG = {"attributes": [
    {"key": "person", "type": "value", "description": "Who",
     "values": [{"value": "sarah-chen", "description": "Eng lead"}, {"value": "alex-kim"}]},
    {"key": "pedagogy", "type": "multi-values",
     "values": [{"value": "scaffolding"}, {"value": "modelling"}]},
    {"key": "topic", "type": "text"},
    {"key": "tag", "type": "multi-text", "description": "Free tags"},
    {"key": "address", "type": "map",
     "fields": [{"key": "city", "description": "City name"}, {"key": "zip"}]},
]}


def rejected(config):
    """The message of the InputError raised for ``config``."""
    with pytest.raises(InputError) as info:
        validate_labels(config)
    assert info.value.argument == "labels" and info.value.sqlstate == "22023"
    return str(info.value)


def with_attribute(**attr):
    """A one-group config."""
    return {"attributes": [attr]}


# -- validate_labels --------------------------------------------------------------------

def test_valid_config_is_returned_unchanged():
    assert validate_labels(copy.deepcopy(CONFIG)) == CONFIG


@pytest.mark.parametrize("config", [{}, {"attributes": []}])
def test_empty_config_means_no_labels(config):
    assert validate_labels(config) == {"attributes": []}


@pytest.mark.parametrize("config, kind", [([], "array"), (None, "null"), ("x", "string")])
def test_config_must_be_an_object(config, kind):
    assert rejected(config) == "labels: must be a JSON object, got %s" % kind


def test_unknown_top_level_property_is_named():
    assert rejected({"attribute": []}).startswith('labels: unknown property "attribute"')


def test_attributes_must_be_an_array():
    assert rejected({"attributes": {}}) == "labels: attributes must be an array, got object"


def test_attribute_must_be_an_object():
    assert rejected({"attributes": ["person"]}) == (
        "labels: attributes[0] must be a JSON object, got string")


def test_unknown_attribute_property_is_named():
    msg = rejected(with_attribute(key="topic", type="text", value=[]))
    assert msg.startswith('labels: attributes[0] has unknown property "value"')


def test_unknown_value_property_is_named():
    msg = rejected(with_attribute(key="p", type="value", values=[{"value": "a", "label": "x"}]))
    assert msg.startswith('labels: attributes[0].values[0] has unknown property "label"')


def test_path_names_the_offending_value():
    config = {"attributes": [{"key": "topic", "type": "text"},
                             {"key": "person", "type": "value", "values": [{"value": " "}]}]}
    assert rejected(config) == "labels: attributes[1].values[0].value must not be empty or blank"


def test_missing_key_is_rejected():
    assert rejected(with_attribute(type="text")) == "labels: attributes[0].key must be a string, got null"


@pytest.mark.parametrize("key", ["", "  "])
def test_blank_key_is_rejected(key):
    assert "attributes[0].key must not be empty" in rejected(with_attribute(key=key, type="text"))


@pytest.mark.parametrize("key", ["a:b", "a b", "a\tb"])
def test_key_with_colon_or_whitespace_is_rejected(key):
    assert "must not contain ':' or whitespace" in rejected(with_attribute(key=key, type="text"))


def test_unknown_type_is_rejected():
    assert rejected(with_attribute(key="k", type="enum")) == (
        'labels: attributes[0].type must be one of value, multi-values, text, multi-text, map, '
        'got "enum"')


def test_value_group_needs_values():
    assert "attributes[0].values must be an array" in rejected(with_attribute(key="k", type="value"))


def test_value_group_needs_at_least_one_value():
    assert rejected(with_attribute(key="k", type="multi-values", values=[])) == (
        "labels: attributes[0].values must not be empty")


def test_open_group_may_not_declare_values():
    msg = rejected(with_attribute(key="k", type="text", values=[{"value": "a"}]))
    assert msg.startswith("labels: attributes[0].values is only allowed")


def test_map_group_needs_fields():
    assert "attributes[0].fields must be an array" in rejected(with_attribute(key="k", type="map"))


def test_non_map_group_may_not_declare_fields():
    msg = rejected(with_attribute(key="k", type="text", fields=[{"key": "a"}]))
    assert msg.startswith("labels: attributes[0].fields is only allowed")


def test_field_key_with_colon_is_rejected():
    msg = rejected(with_attribute(key="k", type="map", fields=[{"key": "a:b"}]))
    assert msg.startswith("labels: attributes[0].fields[0].key must not contain")


def test_value_must_be_a_string():
    msg = rejected(with_attribute(key="k", type="value", values=[{"value": 3}]))
    assert msg == "labels: attributes[0].values[0].value must be a string, got number"


def test_value_with_surrounding_whitespace_is_rejected():
    msg = rejected(with_attribute(key="k", type="value", values=[{"value": " a"}]))
    assert "attributes[0].values[0].value must not start or end with whitespace" in msg


def test_value_with_inner_space_or_colon_is_accepted():
    config = with_attribute(key="k", type="value", values=[{"value": "in progress"}, {"value": "12:30"}])
    assert validate_labels(config) == config


def test_label_longer_than_an_entity_name_is_rejected():
    msg = rejected(with_attribute(key="k", type="value", values=[{"value": "x" * 499}]))
    assert "longer than 500" in msg


def test_blank_description_is_rejected():
    msg = rejected(with_attribute(key="k", type="text", description=""))
    assert msg == "labels: attributes[0].description must not be empty or blank"


def test_duplicate_group_key_is_rejected():
    config = {"attributes": [{"key": "k", "type": "text"}, {"key": "k", "type": "multi-text"}]}
    assert rejected(config) == 'labels: attributes[1].key duplicates the key "k"'


def test_duplicate_value_is_rejected():
    config = with_attribute(key="k", type="value", values=[{"value": "a"}, {"value": "a"}])
    assert rejected(config) == 'labels: attributes[0].values[1].value duplicates the value "a"'


def test_duplicate_field_is_rejected():
    config = with_attribute(key="k", type="map", fields=[{"key": "a"}, {"key": "a"}])
    assert rejected(config) == 'labels: attributes[0].fields[1].key duplicates the field "a"'


def test_case_variants_are_left_to_the_database():
    # "Person" and "person" differ as strings; the SQL caller compares lower().
    config = {"attributes": [{"key": "Person", "type": "text"}, {"key": "person", "type": "text"}]}
    assert validate_labels(config) == config


# -- LabelMatcher ---------------------------------------------------------------------

MATCHER = LabelMatcher(CONFIG)


@pytest.mark.parametrize("text", [
    "person:sarah-chen", "pedagogy:modelling", "topic:renewals", "tag:urgent",
    "address:city:lisbon", "address:zip:1000-001",
])
def test_declared_labels_are_recognised(text):
    assert MATCHER.is_label(text)


@pytest.mark.parametrize("text", [
    "person:bob",              # undeclared value of a fixed vocabulary
    "pedagogy:scaffold",       # never a fuzzy match of a declared value
    "person",                  # the key alone
    "topic:", "topic:  ",      # an open group with nothing after the colon
    "address:city:",           # a map field with nothing after it
    "address:country:pt",      # undeclared field
    "address:lisbon",          # map key without a field
    "colour:red",              # undeclared group
    ":renewals", "sarah-chen", "topic renewals",
])
def test_other_texts_are_not_labels(text):
    assert not MATCHER.is_label(text)


def test_value_containing_a_colon_matches_whole():
    matcher = LabelMatcher(with_attribute(key="time", type="value", values=[{"value": "12:30"}]))
    assert matcher.is_label("time:12:30")
    assert not matcher.is_label("time:12")


@pytest.mark.parametrize("config", [None, {}, {"attributes": []}])
def test_empty_config_matches_nothing(config):
    matcher = LabelMatcher(config)
    assert not matcher and not matcher.is_label("topic:x")


@hsettings(max_examples=1000)
@given(st.text(min_size=1, max_size=12).filter(lambda s: s.strip() == s and s.strip()))
def test_every_declared_value_is_a_label(value):
    matcher = LabelMatcher(with_attribute(key="k", type="value", values=[{"value": value}]))
    assert matcher.is_label("k:" + value)


@hsettings(max_examples=2000)
@given(st.text(max_size=20))
def test_text_not_starting_with_a_declared_prefix_is_not_a_label(text):
    if not (text.startswith(("person:", "pedagogy:", "topic:", "tag:", "address:"))):
        assert not MATCHER.is_label(text)


# -- json_schema -------------------------------------------------------------------------

def test_schema_of_empty_config_accepts_only_an_empty_object():
    assert json_schema({}) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_value_group_is_an_enum_with_value_descriptions():
    assert json_schema(CONFIG)["properties"]["person"] == {
        "type": "string", "enum": ["sarah-chen", "alex-kim"],
        "description": "Who\n- sarah-chen: Eng lead"}


def test_multi_values_group_is_an_array_of_the_enum():
    assert json_schema(CONFIG)["properties"]["pedagogy"] == {
        "type": "array", "items": {"type": "string", "enum": ["scaffolding", "modelling"]},
        "uniqueItems": True}


def test_text_groups_are_strings():
    props = json_schema(CONFIG)["properties"]
    assert props["topic"] == {"type": "string"}
    assert props["tag"] == {"type": "array", "items": {"type": "string"}, "description": "Free tags"}


def test_map_group_is_an_object_of_string_fields():
    assert json_schema(CONFIG)["properties"]["address"] == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}, "zip": {"type": "string"}},
        "additionalProperties": False}


def test_schema_allows_no_undeclared_group():
    assert json_schema(CONFIG)["additionalProperties"] is False


def test_schema_of_invalid_config_is_an_input_error():
    with pytest.raises(InputError):
        json_schema({"attributes": [{"key": "k", "type": "enum"}]})
