"""Argument-value rules: each with a passing and a failing case."""

import pytest

from judge import ArgumentRule
from pipelines.matching import MISSING, ValueMatch, compare_argument, values_equal


def ok(*args, **kwargs) -> bool:
    return compare_argument(*args, **kwargs).ok


# ---------------------------------------------------------------- acceptable values and omission


def test_literal_and_any_of_are_acceptable():
    rule = ArgumentRule(any_of=["Paris, France", "Paname"])
    assert ok("Paris", "paris", rule)
    assert ok("Paris", "Paname", rule)
    assert ok(MISSING, "paname", rule)  # only alternatives
    result = compare_argument("Paris", "Lyon", rule)
    assert result == ValueMatch(False, "expected 'Paris' (or 2 alternatives), got 'Lyon'")


def test_any_value_accepts_anything_given_but_is_still_required():
    rule = ArgumentRule(any_value=True)
    assert ok("x", {"whatever": [1]}, rule)
    assert not ok("x", MISSING, rule)
    assert ok("x", MISSING, ArgumentRule(any_value=True, optional=True))


def test_missing_argument_ok_only_when_optional():
    assert ok("Paris", MISSING, ArgumentRule(optional=True))
    miss = compare_argument("Paris", MISSING)
    assert not miss.ok and "not given" in miss.reason
    assert not ok("Paris", MISSING, ArgumentRule(any_of=["Lyon"]))


def test_omit_only_argument():
    rule = ArgumentRule(any_of=[], optional=True)  # BFCL [""]
    assert ok(MISSING, MISSING, rule)
    given = compare_argument(MISSING, "anything", rule)
    assert not given.ok and given.reason == "may only be omitted, got 'anything'"


def test_reference_without_any_acceptable_value_is_an_error():
    with pytest.raises(ValueError, match="no acceptable value"):
        compare_argument(MISSING, "x", ArgumentRule())


def test_explicit_null_is_a_value_not_an_omission():
    assert ok(None, None)
    assert not ok(None, MISSING)
    assert not ok("x", None)


# ---------------------------------------------------------------- numbers


def test_int_and_float_of_same_value_are_equal():
    assert ok(3.0, 3, schema={"type": "number"})
    assert ok(3, 3.0)
    assert ok(3, 3.0, schema={"type": "integer"})  # JSON Schema: 3.0 is an integer
    assert not ok(3, 4)
    assert not ok(3.5, 3, schema={"type": "number"})


def test_bfcl_integer_rejects_a_float():
    schema = {"type": "integer", "x-bfcl-type": "integer"}
    assert ok(3, 3, schema=schema)
    result = compare_argument(3, 3.0, schema=schema)
    assert not result.ok and "type" in result.reason


def test_bool_is_never_a_number():
    assert not ok(1, True)
    assert not ok(True, 1)
    assert not ok(0, False, schema={"type": "integer"})
    assert ok(True, True)
    assert not ok(True, False)


def test_numeric_string_for_number_schema_is_a_type_error_and_vice_versa():
    wrong = compare_argument(3, "3", schema={"type": "integer"})
    assert not wrong.ok and wrong.reason == "expected 3, got '3' (type: the schema wants integer, not string '3')"
    assert not ok("3", 3, schema={"type": "string"})
    assert not ok(3, "3")  # no schema: still different JSON types
    assert ok("3", "3", schema={"type": "string"})


def test_reference_variable_of_other_type_matches_same_value():
    # BFCL "variable": the reference holds a string where the schema says integer
    assert ok("x", "x", schema={"type": "integer"})
    assert not ok("x", 3, schema={"type": "integer"})


def test_absolute_and_relative_tolerance():
    assert ok(10.0, 10.04, ArgumentRule(tolerance=0.05))
    assert not ok(10.0, 10.06, ArgumentRule(tolerance=0.05))
    assert ok(1000.0, 1009.0, ArgumentRule(relative_tolerance=0.01))
    assert not ok(1000.0, 1011.0, ArgumentRule(relative_tolerance=0.01))
    assert not ok(10.0, 10.0001)  # no tolerance: exact
    assert ok(0.1 + 0.2, 0.3)  # ... up to a rounding error between floats
    assert not ok(0.1 + 0.2, 0.3, schema={"type": "number", "x-bfcl-type": "float"})  # BFCL's checker compares exactly


# ---------------------------------------------------------------- strings


def test_strings_are_bfcl_normalised_by_default():
    assert ok("New York", "new-york")
    assert ok("April 1, 2024", "april 1 2024")
    assert not ok("New York", "Boston")


def test_standardised_strings_keep_what_a_number_says():
    # BFCL's standardised text drops "-" and "."; a native task's string still says the same number
    assert not ok("-50.00", "5000")
    assert not ok("1.5", "15")
    assert not ok("-5", "5")
    assert not ok(".5", "5")
    assert ok("555-1234", "5551234")  # a separator between digits, not a sign
    assert ok("1,000", "1000")
    assert ok("COVID-19", "covid19")
    # BFCL's own checker is kept for BFCL tasks: it standardises both alike
    bfcl = {"type": "string", "x-bfcl-type": "string"}
    assert ok("-50.00", "5000", schema=bfcl)


def test_strings_compare_in_their_nfkc_form():
    assert ok("José", "Jose\u0301")  # precomposed / combining accent
    assert ok("１２３", "123")  # full-width digits
    assert not ok("José", "Jose")
    result = compare_argument("Jose\u0301", "José", ArgumentRule(exact=True))
    assert not result.ok  # verbatim means verbatim


def test_exact_strings():
    assert ok("ID-7", "ID-7", ArgumentRule(exact=True))
    assert not ok("ID-7", "id7", ArgumentRule(exact=True))
    assert not ok("ID-7", "id-7", schema={"type": "string", "x-exact": True})
    for fmt in ("uri", "uuid", "email"):
        schema = {"type": "string", "format": fmt}
        assert ok("A-b/C", "A-b/C", schema=schema)
        assert not ok("A-b/C", "a-b/c", schema=schema), fmt


# ---------------------------------------------------------------- dates


def test_a_date_naming_a_weekday_it_does_not_fall_on_is_no_date():
    assert ok("2024-03-05", "Tuesday, March 5, 2024")
    assert not ok("2024-03-05", "Monday, March 5, 2024")  # 5 March 2024 was a Tuesday: which is meant?
    assert not ok("2024-03-05", "Mon 5 Mar 2024")


def test_date_format_compares_dates():
    schema = {"type": "string", "format": "date"}
    assert ok("2024-01-05", "January 5, 2024", schema=schema)
    assert ok("2024-01-05", "2024/01/05", schema=schema)
    assert not ok("2024-01-05", "January 6, 2024", schema=schema)


def test_iso_expected_date_compared_as_date_without_schema():
    assert ok("2024-01-05", "Jan 5 2024")
    assert not ok("2024-01-05", "Jan 7 2024")


def test_date_times_compare_instants():
    assert ok("2024-01-05T10:00:00Z", "2024-01-05T11:00:00+01:00")
    assert not ok("2024-01-05T10:00:00Z", "2024-01-05T10:00:00+01:00")
    schema = {"type": "string", "format": "date-time"}
    assert ok("2024-01-05T10:00:00", "5 Jan 2024 10:00", schema=schema)
    assert not ok("2024-01-05T10:00:00", "5 Jan 2024 10:01", schema=schema)


def test_date_equals_midnight_date_time():
    assert ok("2024-01-05", "2024-01-05T00:00:00")
    assert ok("2024-01-05T00:00", "January 5, 2024")
    assert not ok("2024-01-05", "2024-01-05T09:30:00")


def test_unparseable_or_incomplete_date_is_a_mismatch_with_reason():
    bad = compare_argument("2024-01-05", "next friday")
    assert not bad.ok and "cannot parse 'next friday'" in bad.reason
    partial = compare_argument("2024-01-05", "January 2024", schema={"format": "date"})
    assert not partial.ok and "full date" in partial.reason


def test_non_date_text_under_date_schema_falls_back_to_text():
    schema = {"type": "string", "format": "date"}
    assert ok("tomorrow", "Tomorrow", schema=schema)
    assert not ok("tomorrow", "today", schema=schema)


# ---------------------------------------------------------------- lists


def test_lists_are_ordered_by_default():
    assert ok([1, 2, 3], [1, 2, 3])
    assert ok(["New York", "LA"], ["new york", "l.a."])
    result = compare_argument([1, 2, 3], [1, 3, 2])
    assert not result.ok and result.reason == "[1]: expected 2, got 3"
    assert not ok([1, 2], [1, 2, 3])


def test_tuples_compare_as_lists():
    assert ok((1, 2), [1, 2])
    assert ok([1, 2], (1, 2))
    assert not ok((1, 2), [2, 1])


def test_unordered_by_rule_or_schema():
    assert ok([1, 2, 3], [3, 1, 2], ArgumentRule(unordered=True))
    assert not ok([1, 2, 2], [1, 1, 2], ArgumentRule(unordered=True))  # multiset, not set
    assert ok([1, 2], [2, 1], schema={"type": "array", "uniqueItems": True})
    assert ok([1, 2], [2, 1], schema={"type": "array", "x-unordered": True})
    assert not ok([1, 2], [2, 1], schema={"type": "array"})
    # an explicit rule overrides the schema
    assert not ok([1, 2], [2, 1], ArgumentRule(unordered=False), {"type": "array", "uniqueItems": True})


def test_unordered_uses_an_assignment_not_greedy_matching():
    # 1.0 is within 0.06 of both 1.05 and 1.0; greedy would give 1.05 to 1.0 and strand 1.1
    rule = ArgumentRule(unordered=True, tolerance=0.06)
    assert ok([1.0, 1.1], [1.05, 1.0], rule)
    assert not ok([1.0, 1.2], [1.05, 1.0], rule)


def test_list_items_use_the_items_schema():
    schema = {"type": "array", "items": {"type": "string", "x-exact": True}}
    assert ok(["A"], ["A"], schema=schema)
    assert not ok(["A"], ["a"], schema=schema)
    assert not ok([3], ["3"], schema={"type": "array", "items": {"type": "integer"}})


# ---------------------------------------------------------------- nested objects


def test_nested_objects_key_by_key():
    expected = {"city": "New York", "filters": [{"field": "age", "value": 3}]}
    assert ok(expected, {"filters": [{"value": 3.0, "field": "AGE"}], "city": "new-york"})
    wrong = compare_argument({"filters": [{"value": 1}, {"value": 3}]}, {"filters": [{"value": 1}, {"value": 4}]})
    assert wrong == ValueMatch(False, "filters[1].value: expected 3, got 4")


def test_nested_missing_and_extra_keys_name_the_path():
    missing = compare_argument({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}})
    assert not missing.ok and missing.reason.startswith("a.c: ") and "missing key" in missing.reason
    extra = compare_argument({"a": {"b": 1}}, {"a": {"b": 1, "z": 0}})
    assert not extra.ok and extra.reason.startswith("a.z: ") and "unexpected key" in extra.reason


def test_nested_properties_schema_is_used():
    schema = {"type": "object", "properties": {"id": {"type": "string", "x-exact": True}, "n": {"type": "integer"}}}
    assert ok({"id": "Ab", "n": 1}, {"id": "Ab", "n": 1.0}, schema=schema)
    assert not ok({"id": "Ab", "n": 1}, {"id": "ab", "n": 1}, schema=schema)
    assert not ok({"id": "Ab", "n": 1}, {"id": "Ab", "n": "1"}, schema=schema)


# ---------------------------------------------------------------- values_equal


def test_values_equal_keywords():
    assert values_equal("a-b", "AB")
    assert not values_equal("a-b", "AB", exact=True)
    assert values_equal([1, 2], [2, 1], unordered=True)
    assert not values_equal([1, 2], [2, 1])
    assert values_equal(1.0, 1.1, tolerance=0.1 + 1e-9)
    assert values_equal(100, 101, relative_tolerance=0.01)
    assert not values_equal(100, 102, relative_tolerance=0.01)


def test_missing_sentinel():
    assert repr(MISSING) == "MISSING"
    assert MISSING is not None
    assert compare_argument(MISSING, MISSING, ArgumentRule(any_of=["x"], optional=True)).ok


def test_bfcl_type_names_in_unconverted_specs():
    assert ok({"a": 1}, {"a": 1}, schema={"type": "dict"})
    assert ok(2.0, 2, schema={"type": "float"})
    assert ok([1], (1,), schema={"type": "tuple"})
    assert ok("x", "X", schema={"type": "any"})
    assert not ok(2.0, "2", schema={"type": "float"})
    assert not ok({"a": 1}, "a", schema={"type": "dict"})
