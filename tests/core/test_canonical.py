"""Canonical forms: the fast paths write and read exactly what the definitions do.

``canonical_json`` fixed the bytes of every cache key and content hash already written, so its
orjson path must agree byte for byte with the reference definition; ``loads_json`` must return
the same value as ``json.loads`` (and fail for the same inputs).
"""

import enum
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from judge import canonical_json, content_hash, loads_json, parse_json_bounded, response_key
from judge.core import _canonical

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(["\x00", "\x1f\x7f", "\u2028", '"\\', "é", "𝄞", "\ud800"])
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([3.0, -0.0, 1e16, 1e-05, 0.1, 2.0**63, 1.5e300]),
    _TEXT,
)
_KEY = _TEXT | st.integers(-3, 3) | st.booleans() | st.none()
_VALUE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEY, inner, max_size=4) | st.tuples(inner, inner), max_leaves=20)


@given(_VALUE)
@settings(max_examples=1500, deadline=None)
def test_canonical_json_is_the_definition_byte_for_byte(value):
    try:
        expected = _canonical._reference_canonical_json(value)
    except (TypeError, ValueError):  # keys json cannot sort: the definition fails, so must the fast path
        return
    assert canonical_json(value) == expected


def test_canonical_json_examples_keep_their_hashes():
    # integral floats are written as ints, keys sorted, no whitespace: hashes already on disk stay valid
    assert canonical_json({"b": 1.0, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'
    assert canonical_json({"x": float("nan")}) == '{"x":NaN}'
    # the hash the first implementation gave (computed with it before the fast path existed)
    assert content_hash({"k": [1, 2.0], "é": None}) == "2116ad37c38e27c5ff1f2c16f9b3772f111065984599123649be2517b20d4cd5"
    assert content_hash({"k": [1, 2], "é": None}) == content_hash({"é": None, "k": (1, 2)})


class _Colour(enum.Enum):
    RED = "r"


def test_canonical_json_values_outside_plain_json_use_the_definition():
    # orjson writes enum values and floats its own way: those values never take the fast path
    assert canonical_json({"c": _Colour.RED}) == '{"c":"_Colour.RED"}'
    assert canonical_json([1e-05, 1e16]) == "[1e-05,10000000000000000]"
    assert canonical_json({1: "a", 10: "b", 9: "c"}) == '{"1":"a","10":"b","9":"c"}'


_DEEP = st.integers(1, 1200).map(lambda n: "[" * n + "]" * n) | st.integers(90, 110).map(lambda n: '{"a":' * n + "1" + "}" * n)
_JSON_TEXT = st.one_of(
    _VALUE.map(lambda v: json.dumps(v, default=str) if not isinstance(v, dict) or all(isinstance(k, str) for k in v) else "{}"),
    st.sampled_from(
        [
            "NaN",
            "[Infinity, -Infinity]",
            '"\\ud800"',
            "12345678901234567890123",
            "-9999999999999999999",
            "1e400",
            "[1,]",
            "",
            "{",
            ' {"a": 1} ',
            '{"a":1,"a":2}',
        ]
    ),
    st.text(max_size=20),
)


@given(_JSON_TEXT | _DEEP)
@settings(max_examples=1500, deadline=None)
def test_loads_json_reads_what_the_bounded_parser_reads(text):
    try:
        expected = parse_json_bounded(text)
    except ValueError:
        try:
            loads_json(text)
        except ValueError:
            return
        raise AssertionError(f"loads_json accepted {text!r}, which parse_json_bounded rejects") from None
    got = loads_json(text)
    assert _same(got, expected), text
    assert _same(loads_json(text.encode("utf-8", "surrogatepass")) if "\ud800" not in text else got, expected)


def _same(a, b) -> bool:
    """Equal with types (1 is not 1.0) and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@given(_VALUE, _VALUE)
@settings(max_examples=600, deadline=None)
def test_response_key_equality_is_unchanged(a, b):
    """response_key is only ever compared: its new spelling must give the same equal / unequal."""

    def old_key(value):
        return json.dumps(_old_set_form(_canonical.parse_json_text(value)), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

    try:
        old_equal = old_key(a) == old_key(b)
    except (TypeError, ValueError):
        return
    assert (response_key(a) == response_key(b)) == old_equal


def _old_set_form(value, digits=9):
    """The set form as first written (items dumped with json's default separators)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        as_float = float(f"{float(value):.{digits}g}")
        return int(as_float) if as_float == int(as_float) and abs(as_float) < 2**63 else as_float
    if isinstance(value, str):
        text = value.strip()
        number = _canonical._json_number(text)
        return text if number is None else _old_set_form(number, digits)
    if isinstance(value, dict):
        return {str(k): _old_set_form(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = {json.dumps(_old_set_form(v, digits), sort_keys=True, ensure_ascii=False, default=str) for v in value}
        return ["\u0000set"] + sorted(items)
    return str(value)


def _strict_stdlib(text):
    """The reader's definition: json.loads refusing a repeated key (None when it refuses the text)."""

    def unique(pairs):
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("repeated key")
        return dict(pairs)

    try:
        return ("ok", json.loads(text, object_pairs_hook=unique))
    except (ValueError, RecursionError):
        return None


_REPEATS = st.lists(st.sampled_from(['"a"', '"b"', '"a:b"', '"\\u003a"', '"\\u003A"', '"c\\"d"']), min_size=1, max_size=5).flatmap(
    lambda keys: st.lists(st.sampled_from(["1", '"x:y"', '":"', '{"a":1,"a":2}', "[]", '"\\u003a"', "null"]), min_size=len(keys), max_size=len(keys)).map(
        lambda values: "{" + ",".join(f"{k}:{v}" for k, v in zip(keys, values)) + "}"
    )
)


@given(_JSON_TEXT | _REPEATS | st.integers(1, 300).map(lambda n: "[" * n + "]" * n))
@settings(max_examples=2000, deadline=None)
def test_loads_exact_reads_what_the_duplicate_refusing_stdlib_reads_or_abstains(text):
    """The reader's fast path: orjson's value only where it is the standard library's, and never
    for an object that repeats a key (the standard library reports which)."""
    got = _canonical.loads_exact(text.encode("utf-8", "surrogatepass"), unique_keys=True)
    if got is _canonical.UNDECIDED:
        return
    expected = _strict_stdlib(text)
    assert expected is not None, f"loads_exact read {text!r}, which the standard library refuses"
    assert _same(got, expected[1]), text


def test_loads_exact_abstains_on_every_repeated_key():
    for text in ['{"a":1,"a":2}', '{"a":"x:y","a":1}', '[{"k":{"a":1,"a":1}}]', '{"a":1,"\\u0061":2}', '{"a:":1,"a:":":"}']:
        assert _canonical.loads_exact(text, unique_keys=True) is _canonical.UNDECIDED, text
        assert _canonical.loads_exact(text) is not _canonical.UNDECIDED  # without the rule orjson keeps the last
    assert _canonical.loads_exact('{"a":"\\u003a","b":1}', unique_keys=True) is _canonical.UNDECIDED  # escaped colon: cannot count
    assert _canonical.loads_exact('{"a":"x:y","b":{"c":":"}}', unique_keys=True) == {"a": "x:y", "b": {"c": ":"}}
    assert _canonical.loads_exact("[" * 1100 + "]" * 1100) is _canonical.UNDECIDED  # past orjson's depth: callers bound depth themselves
