"""Entity labels on a real bank (docs/design.md §5): stored config, exact-only resolution, JSON Schema."""

from __future__ import annotations

import psycopg
import pytest

from bank_builders import NOW, Bank

PEDAGOGY = {"key": "pedagogy", "type": "value", "description": "Teaching approach",
            "values": [{"value": "scaffolding", "description": "Support then fade"},
                       {"value": "scaffolded"}]}
TOPIC = {"key": "topic", "type": "text"}
META = {"key": "meta", "type": "map", "fields": [{"key": "owner"}]}
LABELS = {"attributes": [PEDAGOGY, TOPIC, META]}


def test_set_entity_labels_stores_the_validated_config(bank):
    returned = bank.set_labels(LABELS)

    stored = bank.conn.execute("SELECT entity_labels FROM entity_resolver.banks WHERE bank_id = %s",
                               (bank.id,)).fetchone()[0]
    assert returned == stored == LABELS


def test_set_entity_labels_creates_the_bank(shared_conn):
    new = Bank(shared_conn, "labels first")

    new.set_labels(LABELS)

    assert new.row_counts()["banks"] == 1


def test_a_declared_label_is_created_as_a_label_entity(bank):
    bank.set_labels(LABELS)

    result = bank.resolve("pedagogy:scaffolding")

    assert result["created"] is True
    assert bank.entity_row(result["entity_id"])["entity_kind"] == "label"


def test_a_label_is_found_by_exact_match_in_any_case(bank):
    bank.set_labels(LABELS)
    label = bank.entity("pedagogy:scaffolding", kind="label")

    result = bank.resolve("Pedagogy:SCAFFOLDING")

    assert (result["entity_id"], result["created"]) == (label, False)


def test_a_label_value_is_never_fuzzy_merged_into_a_neighbouring_value(bank):
    # Everything a fuzzy merge could want: trigram 0.71, name 0.87, the
    # partner nearby and seen today. A label still resolves exactly.
    bank.set_labels(LABELS)
    scaffolding = bank.entity("pedagogy:scaffolding", kind="label", last_seen=NOW)
    bank.cooccur(scaffolding, bank.entity("lesson plan"))

    result = bank.resolve("pedagogy:scaffolded", ["lesson plan"])

    assert result["created"] is True
    assert result["entity_id"] != scaffolding
    assert bank.entity_row(result["entity_id"])["entity_kind"] == "label"


def test_a_regular_mention_is_never_merged_into_a_label_row(bank):
    # "pedagogy scaffolding" has the label's trigram set exactly (score 1.0
    # if the label row were a candidate).
    bank.set_labels(LABELS)
    label = bank.entity("pedagogy:scaffolding", kind="label", last_seen=NOW)

    result = bank.resolve("pedagogy scaffolding")

    assert (result["created"], result["score"]) == (True, None)
    assert result["entity_id"] != label
    assert bank.entity_row(result["entity_id"])["entity_kind"] == "regular"


def test_an_undeclared_value_of_a_value_group_is_refused_naming_the_group(bank):
    bank.set_labels(LABELS)
    bank.entity("pedagogy:scaffolding", kind="label", last_seen=NOW)

    with pytest.raises(psycopg.errors.InvalidParameterValue,
                       match='mention: "pedagogy:scafolding" is not a declared value of label group "pedagogy"'):
        bank.resolve("pedagogy:scafolding")
    assert bank.names() == ["pedagogy:scaffolding"]


def test_a_bank_may_allow_undeclared_values_as_regular_names(bank):
    bank.set_labels(LABELS)
    bank.configure({"allow_undeclared_labels": True})
    bank.entity("pedagogy:scaffolding", kind="label", last_seen=NOW)

    result = bank.resolve("pedagogy:scafolding")

    assert result["created"] is True
    assert bank.entity_row(result["entity_id"])["entity_kind"] == "regular"


def test_any_value_of_a_text_group_is_a_label(bank):
    bank.set_labels(LABELS)

    result = bank.resolve("topic:Quarterly Planning")

    assert bank.entity_row(result["entity_id"])["entity_kind"] == "label"


def test_a_declared_field_of_a_map_group_makes_a_label(bank):
    bank.set_labels(LABELS)

    owner, other = bank.resolve_batch(["meta:owner:alice", "meta:colour:blue"])

    assert bank.entity_row(owner["entity_id"])["entity_kind"] == "label"
    assert bank.entity_row(other["entity_id"])["entity_kind"] == "regular"


def test_label_keys_and_values_match_case_insensitively(bank):
    bank.set_labels({"attributes": [{"key": "Person", "type": "value",
                                     "values": [{"value": "Sarah-Chen"}]}]})

    result = bank.resolve("person:sarah-chen")

    assert bank.entity_row(result["entity_id"])["entity_kind"] == "label"


def test_a_label_is_not_clustered_with_a_new_regular_near_duplicate(bank):
    bank.set_labels(LABELS)

    label, regular = bank.resolve_batch(["pedagogy:scaffolding", "Pedagogy Scaffolding"])

    assert label["entity_id"] != regular["entity_id"]
    assert bank.names() == ["Pedagogy Scaffolding", "pedagogy:scaffolding"]


def test_a_name_that_was_a_label_before_the_vocabulary_changed_reuses_its_row(bank):
    # The label row is no fuzzy candidate, so the name is inserted as new,
    # meets the row in the unique index, and takes it.
    bank.set_labels({"attributes": [TOPIC]})
    label = bank.entity("pedagogy:scaffolding", kind="label")

    result = bank.resolve("Pedagogy:Scaffolding")

    assert (result["entity_id"], result["created"]) == (label, False)
    assert bank.names() == ["pedagogy:scaffolding"]


def test_json_schema_offers_an_enum_per_value_group(bank):
    bank.set_labels({"attributes": [
        PEDAGOGY, {"key": "tags", "type": "multi-values", "values": [{"value": "a"}, {"value": "b"}]},
        TOPIC]})

    schema = bank.conn.execute("SELECT entity_resolver.entity_labels_json_schema(%s)",
                               (bank.id,)).fetchone()[0]

    properties = schema["properties"]
    assert properties["pedagogy"]["enum"] == ["scaffolding", "scaffolded"]
    assert properties["tags"]["items"]["enum"] == ["a", "b"]
    assert "enum" not in properties["topic"]
    assert schema["additionalProperties"] is False


def test_json_schema_of_a_bank_without_labels_allows_nothing(shared_conn):
    schema = shared_conn.execute("SELECT entity_resolver.entity_labels_json_schema('no labels')"
                                 ).fetchone()[0]

    assert (schema["properties"], schema["additionalProperties"]) == ({}, False)


def test_two_values_equal_after_lower_are_refused_naming_both(bank):
    import psycopg
    import pytest

    person = {"key": "person", "type": "value",
              "values": [{"value": "Sarah-Chen"}, {"value": "sarah-chen"}]}

    with pytest.raises(psycopg.errors.InvalidParameterValue) as refusal:
        bank.set_labels({"attributes": [person]})

    message = refusal.value.diag.message_primary
    assert message.startswith("labels: attributes[0].values[1].value")
    assert "attributes[0].values[0].value" in message
    stored = bank.conn.execute("SELECT entity_labels FROM entity_resolver.banks WHERE bank_id = %s",
                               (bank.id,)).fetchone()
    assert stored is None or stored[0] == {}


def test_the_same_value_in_two_groups_is_allowed(bank):
    # "person:alex" and "owner:alex" are different labels.
    config = {"attributes": [{"key": "person", "type": "value", "values": [{"value": "alex"}]},
                             {"key": "owner", "type": "value", "values": [{"value": "Alex"}]}]}

    assert bank.set_labels(config) == config
