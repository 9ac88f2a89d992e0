"""Bank settings: defaults and validation of overrides (docs/design.md §7 and §8)."""

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from settings import DEFAULTS, InputError, effective_settings, validate_settings

FRACTIONS = ["name_weight", "cooccurrence_weight", "recency_weight", "threshold",
             "merge_min_similarity", "candidate_similarity", "intrabatch_similarity"]


def rejected(overrides, argument="settings"):
    """The message of the InputError raised for ``overrides``."""
    with pytest.raises(InputError) as info:
        validate_settings(overrides, argument)
    return str(info.value)


REFERENCE = ("name_weight", "cooccurrence_weight", "recency_weight", "threshold", "recency_window_days",
             "merge_min_similarity", "candidate_similarity", "max_candidates", "intrabatch_similarity",
             "intrabatch_max_names", "expansion_per_entity_limit")


def test_defaults_are_the_reference_values():
    assert {k: v for k, v in DEFAULTS.items() if k in REFERENCE} == {
        "name_weight": 0.5, "cooccurrence_weight": 0.3, "recency_weight": 0.2,
        "threshold": 0.6, "recency_window_days": 7, "merge_min_similarity": 0.3,
        "candidate_similarity": 0.3, "max_candidates": 200, "intrabatch_similarity": 0.5,
        "intrabatch_max_names": 250, "expansion_per_entity_limit": 200,
    }


def test_limits_have_safe_defaults():
    assert DEFAULTS["max_mentions_per_call"] == 10000
    assert DEFAULTS["max_mentions_per_fact"] == 1000
    assert DEFAULTS["max_nearby_per_mention"] == 1000
    assert DEFAULTS["allow_undeclared_labels"] is False


def test_a_flag_setting_takes_only_true_or_false():
    assert validate_settings({"allow_undeclared_labels": True}) == {"allow_undeclared_labels": True}
    with pytest.raises(InputError, match='"allow_undeclared_labels" must be true or false, got number 1'):
        validate_settings({"allow_undeclared_labels": 1})


def test_reresolve_entities_takes_true_false_or_auto():
    assert DEFAULTS["reresolve_entities"] == "auto"
    for value in (True, False, "auto"):
        assert validate_settings({"reresolve_entities": value}) == {"reresolve_entities": value}
    with pytest.raises(InputError, match='"reresolve_entities" must be true, false or "auto", got string "AUTO"'):
        validate_settings({"reresolve_entities": "AUTO"})
    with pytest.raises(InputError, match='"reresolve_entities" must be true, false or "auto", got number 1'):
        validate_settings({"reresolve_entities": 1})


def test_reresolve_replay_is_off_by_default_and_takes_true_or_false():
    assert DEFAULTS["reresolve_replay"] is False
    assert validate_settings({"reresolve_replay": True}) == {"reresolve_replay": True}
    with pytest.raises(InputError, match='"reresolve_replay" must be true or false, got string "auto"'):
        validate_settings({"reresolve_replay": "auto"})


def test_no_overrides_gives_the_defaults():
    assert effective_settings({}) == DEFAULTS
    assert effective_settings(None) == DEFAULTS


def test_override_replaces_one_default():
    settings = effective_settings({"threshold": 0.75})
    assert settings["threshold"] == 0.75
    assert settings["name_weight"] == 0.5


def test_effective_settings_do_not_alias_defaults():
    effective_settings({"threshold": 0.9})["name_weight"] = 0.0
    assert DEFAULTS["threshold"] == 0.6 and DEFAULTS["name_weight"] == 0.5


def test_validation_returns_only_the_given_keys():
    assert validate_settings({"max_candidates": 50}) == {"max_candidates": 50}


def test_unknown_key_is_named():
    assert rejected({"treshold": 0.5}).startswith('settings: unknown key "treshold"')


def test_unknown_key_suggests_the_close_one():
    assert 'did you mean "threshold"' in rejected({"treshold": 0.5})


@pytest.mark.parametrize("value, kind", [([], "array"), (None, "null"), ("{}", "string"), (3, "number")])
def test_settings_must_be_an_object(value, kind):
    assert rejected(value) == "settings: must be a JSON object, got %s" % kind


def test_out_of_range_threshold_names_key_and_value():
    assert rejected({"threshold": 1.5}) == (
        'settings: "threshold" must be a number between 0 and 1, got 1.5')


@pytest.mark.parametrize("key", FRACTIONS)
@pytest.mark.parametrize("value", [-0.01, 1.01])
def test_fractions_must_lie_in_0_1(key, value):
    assert '"%s"' % key in rejected({key: value})


@pytest.mark.parametrize("key", FRACTIONS)
@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0])
def test_fraction_bounds_are_inclusive(key, value):
    assert validate_settings({key: value}) == {key: float(value)}


def test_boolean_is_not_a_number():
    assert rejected({"threshold": True}) == (
        'settings: "threshold" must be a number, got boolean true')


def test_numeric_string_is_not_a_number():
    assert "got string" in rejected({"threshold": "0.6"})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity")])
def test_non_finite_numbers_are_rejected(value):
    assert "finite" in rejected({"threshold": value})


def test_decimals_from_the_jsonb_transform_are_accepted():
    assert validate_settings({"threshold": Decimal("0.65"), "max_candidates": Decimal("50")}) == {
        "threshold": 0.65, "max_candidates": 50}


def test_huge_finite_number_is_out_of_range():
    assert "between 0 and 1" in rejected({"threshold": Decimal("1e400")})


def test_recency_window_must_be_positive():
    assert "greater than 0" in rejected({"recency_window_days": 0})


def test_recency_window_may_be_fractional():
    assert validate_settings({"recency_window_days": 0.5}) == {"recency_window_days": 0.5}


def test_recency_window_has_an_upper_bound():
    assert "recency_window_days" in rejected({"recency_window_days": 36501})


@pytest.mark.parametrize("key, low, high", [
    ("max_candidates", 1, 10000),
    ("intrabatch_max_names", 0, 10000),
    ("expansion_per_entity_limit", 1, 100000),
])
def test_counts_have_inclusive_integer_ranges(key, low, high):
    assert validate_settings({key: low}) == {key: low}
    assert validate_settings({key: high}) == {key: high}
    assert "must be an integer between %d and %d" % (low, high) in rejected({key: low - 1})
    assert "must be an integer between %d and %d" % (low, high) in rejected({key: high + 1})


def test_integral_float_count_is_accepted_as_int():
    result = validate_settings({"max_candidates": 200.0})
    assert result == {"max_candidates": 200} and isinstance(result["max_candidates"], int)


def test_fractional_count_is_rejected():
    assert "integer" in rejected({"max_candidates": 200.5})


def test_error_carries_sqlstate_and_argument():
    with pytest.raises(InputError) as info:
        validate_settings({"threshold": 2})
    assert info.value.sqlstate == "22023"
    assert info.value.argument == "settings"


def test_error_names_the_sql_argument_given():
    assert rejected({"threshold": 2}, argument="overrides").startswith("overrides: ")


@hsettings(max_examples=2000)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_threshold_accepted_iff_within_0_1(value):
    if 0.0 <= value <= 1.0:
        assert validate_settings({"threshold": value}) == {"threshold": value}
    else:
        with pytest.raises(InputError):
            validate_settings({"threshold": value})


@hsettings(max_examples=1000)
@given(st.dictionaries(st.sampled_from(sorted(DEFAULTS)), st.floats(0.0, 1.0), max_size=4))
def test_valid_overrides_keep_their_keys(overrides):
    # Keys whose range excludes the drawn value raise; the others round-trip.
    try:
        result = validate_settings(overrides)
    except InputError as error:
        assert any('"%s"' % key in str(error) for key in overrides)
    else:
        assert set(result) == set(overrides)
        assert all(math.isfinite(v) for v in result.values())


def test_an_integer_too_large_for_a_float_is_refused_naming_the_key():
    with pytest.raises(InputError, match='"max_candidates"'):
        validate_settings({"max_candidates": 10 ** 400})
    with pytest.raises(InputError, match='"threshold"'):
        validate_settings({"threshold": -(10 ** 400)})
