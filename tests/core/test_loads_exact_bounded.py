"""``loads_exact``'s write-back proof and ``loads_exact_bounded``'s depth bound, against the old path.

The old path (kept here verbatim as ``_old_loads_exact``) counted colons and digit runs on every
line, and the reader then counted brackets and wrote the value out again for its depth check
(``text_nesting_error``). The new path proves most lines by writing the value back once. Checked
on generated text written the way orjson, serde or ``JSON.stringify`` write it (compact, where the
proof applies) and otherwise, with repeated keys, integers past 64 bits, escaped colons, lone
surrogates and nesting past the bound: the new path decides only where the standard library
reads the same value, never a line the old path would have refused as a repeated key, and its
bound holds wherever it says so; the reader yields the same items and errors either way.
"""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from judge import MAX_DEPTH, UNDECIDED, TooDeep, loads_exact, loads_exact_bounded, loads_json, nesting_error, parse_json_bounded, text_nesting_error
from judge.core import _canonical

_DIGITS_AS_ZERO = bytes(ord("0") if 48 <= c <= 57 else ord(".") for c in range(256))


def _old_loads_exact(text: str | bytes, *, unique_keys: bool = False):
    """``loads_exact`` before the write-back proof (verbatim)."""
    raw0 = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if b"0" * 19 in raw0.translate(_DIGITS_AS_ZERO):
        return UNDECIDED
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return UNDECIDED
    if unique_keys and isinstance(value, (dict, list)):
        raw = raw0
        colons = raw.count(b":")
        if colons:
            if b"\\u003" in raw and (b"\\u003a" in raw or b"\\u003A" in raw):
                return UNDECIDED
            try:
                kept = orjson.dumps(value).count(b":")
            except orjson.JSONEncodeError:
                return UNDECIDED
            if kept != colons:
                return UNDECIDED
    return value


def _strict_stdlib(text: bytes):
    def unique(pairs):
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError("repeated key")
        return dict(pairs)

    try:
        return (json.loads(text, object_pairs_hook=unique),)
    except (ValueError, RecursionError):
        return None


def _same(a, b) -> bool:
    """Equal with types (1 is not 1.0, -0.0 is not 0.0): the same text written by the standard library."""
    return json.dumps(a) == json.dumps(b)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["a:b", "::", "\u2028", "é", "12345678901234567890123", "\\u003a", "\x00", '"']),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=25)


def _deep(n: int) -> bytes:
    return b'{"k":' + b"[" * n + b"]" * n + b"}"


@st.composite
def _compact(draw: st.DrawFn) -> bytes:
    """A compact JSON text (orjson's spelling), sometimes altered: a repeated key, an integer past
    64 bits, an escaped colon or letter, nesting around the bound, a line terminator, a space."""
    value = draw(st.dictionaries(st.text(max_size=4), _values, max_size=5) | st.lists(_values, max_size=4))
    text = orjson.dumps(value)
    kind = draw(st.integers(0, 9))
    if kind == 1 and isinstance(value, dict) and value:
        key = orjson.dumps(next(iter(value)))
        text = text[:-1] + b"," + key + b":1}"  # a repeated top-level key
    elif kind == 2:
        text = b'{"a":{"d":1,"d":2},"b":' + text + b"}"  # a repeated key inside
    elif kind == 3:
        text = b'{"n":' + draw(st.sampled_from([b"123456789012345678901234", b"18446744073709551616", b"-9223372036854775809"])) + b',"v":' + text + b"}"
    elif kind == 4:
        text = b'{"\\u003a":1,"\\u003a":2,"v":' + text + b"}"  # escaped colons hide a repeat from counting
    elif kind == 5:
        text = b'{"\\u0061":1,"a":2}'
    elif kind == 6:
        text = _deep(draw(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3)))
    elif kind == 7:
        text = text.replace(b":", b": ", 1)  # not compact: the old checks decide
    elif kind == 8:
        text = b'{"s":"\\ud800","v":' + text + b"}"
    return text + draw(st.sampled_from([b"", b"\n", b"\r\n", b"\r"]))


@given(_compact() | st.binary(max_size=20))
@settings(max_examples=2500, deadline=None)
def test_the_new_path_decides_only_what_the_standard_library_reads_and_bounds_truly(text):
    got, bounded = loads_exact_bounded(text, MAX_DEPTH)
    assert got is loads_exact(text, unique_keys=True) or _same(got, loads_exact(text, unique_keys=True))
    old = _old_loads_exact(text, unique_keys=True)
    if got is UNDECIDED:
        assert bounded is False
        return
    expected = _strict_stdlib(text)
    assert expected is not None, text  # never a repeated key, nor text the standard library refuses
    assert _same(got, expected[0]), text
    if old is not UNDECIDED:
        assert _same(got, old)
    if bounded:
        assert nesting_error(got, MAX_DEPTH) is None and text_nesting_error(got, text, MAX_DEPTH) is None


def test_examples_the_old_path_refused_stay_refused():
    for text in (
        b'{"a":1,"a":2}',
        b'{"a":{"b":1,"b":1}}',
        b'{"n":123456789012345678901}',
        b'{"\\u003a":1,"\\u003a":2}',
        b"[NaN]",
        b'{"a":1',
        b"\xef\xbb\xbf{}",
    ):
        assert loads_exact_bounded(text, MAX_DEPTH) == (UNDECIDED, False), text
    value, bounded = loads_exact_bounded(_deep(MAX_DEPTH), MAX_DEPTH)  # MAX_DEPTH + 1 levels: decided, not bounded
    assert value is not UNDECIDED and not bounded and text_nesting_error(value, _deep(MAX_DEPTH), MAX_DEPTH) is not None
    assert loads_exact_bounded(_deep(MAX_DEPTH - 1), MAX_DEPTH)[1] is True
    assert loads_exact_bounded(b'{"a":"x:y","b":[1,2]}\n', MAX_DEPTH) == ({"a": "x:y", "b": [1, 2]}, True)


def test_a_float_is_never_written_as_digits_alone():
    """The proof's premise: an integer orjson read as a float cannot write back as itself."""
    for n in [2**64, 10**20, 10**25 + 7, -(2**63) - 1, 10**300]:
        value = orjson.loads(str(n))
        assert isinstance(value, float) and orjson.dumps(value) != str(n).encode()
    assert _canonical.loads_exact(b"[%d]" % 2**64, unique_keys=True) is UNDECIDED


@given(st.lists(_compact(), min_size=1, max_size=8))
@settings(max_examples=150, deadline=None)
def test_the_reader_yields_the_same_items_and_errors_as_the_old_path(tmp_path_factory, lines):
    import pipelines.ingest._reader as reader

    path = tmp_path_factory.mktemp("r") / "items.jsonl"
    path.write_bytes(b"\n".join(line.rstrip(b"\r\n") for line in lines) + b"\n")
    new = list(reader.read_items(path))
    saved = reader.loads_exact_bounded
    reader.loads_exact_bounded = lambda raw, limit: (_old_loads_exact(raw, unique_keys=True), False)
    try:
        old = list(reader.read_items(path))
    finally:
        reader.loads_exact_bounded = saved
    assert [(i.line, i.index, i.error) for i in new] == [(i.line, i.index, i.error) for i in old]
    assert all(a.error is not None or _same(a.value, b.value) for a, b in zip(new, old, strict=True))


def test_the_reader_still_names_repeated_keys_and_deep_fields(tmp_path):
    from pipelines.ingest._reader import read_items

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":1,"a":2}\n' + b'{"x":{"y":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}}\n")
    items = list(read_items(path))
    assert items[0].value == {"a": 1}
    assert items[1].error is not None and items[1].error.line == 2 and "duplicate key 'a'" in items[1].error.message
    assert items[2].error is not None and items[2].error.kind == "too_deep" and items[2].error.line == 3 and items[2].error.field.startswith("x.y")


def _old_loads_json(text, limit=MAX_DEPTH):
    """``loads_json`` before one translation served both guards (verbatim, with the old ``loads_exact``)."""
    value = _old_loads_exact(text)
    if value is UNDECIDED:
        return parse_json_bounded(text, limit)
    path = text_nesting_error(value, text, limit)
    if path is not None:
        raise TooDeep(limit, path)
    return value


def _outcome(fn, text):
    try:
        return ("value", json.dumps(fn(text)))
    except ValueError as err:
        return (type(err).__name__, str(err))


_TEXTS = st.one_of(
    _values.map(lambda v: json.dumps(v, ensure_ascii=False)),
    _values.map(lambda v: json.dumps(v)),
    st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3).map(lambda n: '{"a":' + "[" * n + "]" * n + "}"),
    st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3).map(lambda n: '{"a":[' + '"[{",' * n + "1]}"),  # brackets inside strings only
    st.sampled_from(["NaN", "[1e999]", '"\\ud800"', "[12345678901234567890123]", '{"a":1,"a":2}', "{", "é[", "[\ud800]"]),
)


@given(_TEXTS)
@settings(max_examples=1500, deadline=None)
def test_loads_json_gives_what_the_old_path_gave_value_or_error(text):
    for form in (text, text.encode("utf-8", "surrogatepass")):
        assert _outcome(loads_json, form) == _outcome(_old_loads_json, form), form
