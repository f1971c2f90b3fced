"""Fast paths of the grading loop give the verdicts of the full comparison they skip.

Each fast path is compared with the slow path it short-cuts, on generated values built to sit
next to the fast path's edge: an identical copy, and near-misses (1 vs 1.0 vs True, a list vs a
tuple, another key order, nested lists, NaN, an extra or missing key) that must keep their verdict.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from judge import ArgumentRule
from pipelines.matching import MISSING, compare_argument, identical
from pipelines.matching.values import _compare_argument

PROPS = settings(max_examples=400, deadline=None, derandomize=True)

scalars = st.one_of(
    st.sampled_from([0, 1, 1.0, True, False, None, 3, 3.0, "3", "a", "A", "", "2024-01-05", "Jan 5, 2024", float("nan"), float("inf"), -0.0]),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text(max_size=5),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c", "id"]), inner, max_size=4)),
    max_leaves=12,
)


def _near_miss(value: Any, choice: int) -> Any:
    """A value next to ``value``: one leaf or container changed the way comparison rules care about."""
    if isinstance(value, bool):
        return [int(value), float(value), not value][choice % 3]
    if isinstance(value, int):
        return [float(value), value == 1, value + 1][choice % 3]
    if isinstance(value, float):
        return [int(value) if math.isfinite(value) else value, float("nan"), -value][choice % 3]
    if isinstance(value, str):
        return [value.upper(), value + " ", None][choice % 3]
    if isinstance(value, list):
        if not value:
            return [[None], (), {}][choice % 3]
        i = choice % len(value)
        return [tuple(value), [*value[:i], _near_miss(value[i], choice // 3), *value[i + 1 :]], list(reversed(value)) + [value[0]]][choice % 3]
    if isinstance(value, dict):
        if not value:
            return [{"a": None}, [], None][choice % 3]
        keys = list(value)
        k = keys[choice % len(keys)]
        reordered = {key: value[key] for key in reversed(keys)}  # same content, other order: still identical
        return [reordered, {**value, k: _near_miss(value[k], choice // 3)}, {key: v for key, v in value.items() if key != k}][choice % 3]
    return value


pairs = st.builds(
    lambda v, mode, choice: (v, copy.deepcopy(v) if mode == 0 else v if mode == 1 else _near_miss(v, choice)),
    values,
    st.integers(0, 3),
    st.integers(0, 50),
)
rules = st.sampled_from(
    [None, ArgumentRule(), ArgumentRule(exact=True), ArgumentRule(unordered=True), ArgumentRule(tolerance=0.5), ArgumentRule(any_of=[1, "x"]),
     ArgumentRule(pattern="[a-z]+"), ArgumentRule(optional=True), ArgumentRule(any_value=True)]
)  # fmt: skip
schemas = st.sampled_from(
    [None, {}, {"type": "string"}, {"type": "integer", "x-bfcl-type": "integer"}, {"type": "array", "items": {"type": "number", "x-bfcl-type": "float"}},
     {"type": "object", "properties": {"a": {"type": "string"}}, "x-extra-keys": "ignore"}, {"type": "array", "uniqueItems": True},
     {"type": "string", "x-bfcl-language": "java", "x-bfcl-type": "String"}, {"type": "string", "format": "date"}]
)  # fmt: skip


def _outcome(fn, *args, **kwargs) -> Any:
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:  # a broken reference raises on both paths alike
        return ("raises", str(exc))


@PROPS
@given(pairs, rules, schemas, st.booleans(), st.booleans())
def test_compare_argument_fast_path_keeps_the_full_verdict(pair, rule, schema, extra_keys, undeclared_keys):
    expected, actual = pair
    fast = _outcome(compare_argument, expected, actual, rule, schema, extra_keys=extra_keys, undeclared_keys=undeclared_keys)
    slow = _outcome(_compare_argument, expected, actual, rule, schema, extra_keys=extra_keys, undeclared_keys=undeclared_keys)
    assert fast == slow


@PROPS
@given(pairs)
def test_identical_is_type_strict_equality(pair):
    a, b = pair
    if identical(a, b):
        assert a == b and _types(a) == _types(b)
        assert not _has_nan(a)


def test_identical_near_misses():
    assert identical({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]})
    assert identical({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order is no difference to any rule
    for a, b in [(1, 1.0), (1, True), (0, False), ([1], (1,)), ([[1]], [[1.0]]), (float("nan"), float("nan")), ({"a": None}, {}), ({"a": 1}, {"b": 1})]:
        assert not identical(a, b) and not identical(b, a)
    nan = float("nan")
    assert not identical([nan], [nan])  # the same NaN object: == on the lists says equal, the rules decide
    assert compare_argument([nan], [nan]) == _compare_argument([nan], [nan])
    assert compare_argument(MISSING, MISSING, ArgumentRule(optional=True)) == _compare_argument(MISSING, MISSING, ArgumentRule(optional=True))


def _types(value: Any) -> Any:
    if isinstance(value, list):
        return [list, *map(_types, value)]
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    return type(value)


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, list):
        return any(map(_has_nan, value))
    if isinstance(value, dict):
        return any(map(_has_nan, value.values()))
    return False


needles = st.one_of(
    values,
    st.sampled_from(["12", "12.0", "$12", "12%", "1,200", "1.2 million", "Order #W123", "order w123", '["a", "b"]', '{"k": 12}', '"12"', "null", "true",
                     "New York", "new-york", "\ue002", "", "  ", "nan", "NaN", "1e3", "1000", "café", "东京"]),
    st.text(alphabet="ab 12.,$%-", max_size=8),
)  # fmt: skip
texts = st.one_of(
    st.sampled_from(["Your order #W123 totals $12.00 (1,200 points).", "We are in New York; 1.2 million served", "", "nan NaN 1e3", "东京 café"]),
    st.text(alphabet="ab 12.,$%-", max_size=20),
    values,
)


@PROPS
@given(needles, st.lists(texts, min_size=1, max_size=3), st.sampled_from([1e-6, 0.0, 0.1]))
def test_value_finder_answers_as_value_in_text(value, haystacks, rel):
    from pipelines.matching import Haystack, value_finder, value_in_text

    found = value_finder(value, relative_tolerance=rel)
    prepared = [Haystack(t) for t in haystacks]
    assert [found(h) for h in prepared] == [value_in_text(value, t, relative_tolerance=rel) for t in haystacks]
