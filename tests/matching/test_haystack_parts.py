"""``HaystackParts`` (one prepared haystack per tool output, reused across a conversation's turns)
answers every ``value_in_text`` question exactly as one ``Haystack`` over all the outputs does."""

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.matching import Haystack, HaystackParts, value_in_text
from pipelines.matching.answers import _LEAF_SEP, _any_close

PROPS = settings(max_examples=600, deadline=None, derandomize=True)

# words that collide across outputs and leaf boundaries: digits, percent text, punctuation, articles,
# non-ASCII, the private leaf separator, JSON-looking text
words = st.sampled_from(
    ["a", "the", "New", "york", "new-york", "U.S.", "1,234.5", "12%", "12", "0.12", "$4.50", "-3", "1e3",
     "x", "café", "Café", "東京", "ß", "ss", _LEAF_SEP, f"a{_LEAF_SEP}b", "", " ", "[1, 2]", '{"k": "v"}',
     "3.0", "3", "done.", "it's", "its", "50 %", "half"]
)  # fmt: skip
texts = st.one_of(st.lists(words, max_size=5).map(" ".join), st.text(max_size=10))
scalars = st.one_of(
    texts,
    st.none(),
    st.booleans(),
    st.integers(-20, 2000),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.12, 12, 12.0, 1234.5, 1000, 3]),
)
outputs = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["id", "name", "v", "x"]), inner, max_size=3)),
    max_leaves=12,
)
needles = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)), max_leaves=5
)


def _leaf_texts(value):
    """Strings and numbers inside ``value``: needles that often hit (whole leaves and their slices)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [t for v in value for t in _leaf_texts(v)]
    return [] if value is None else [value]


@PROPS
@given(st.lists(outputs, max_size=4), st.data())
def test_parts_answer_like_one_haystack(outs, data):
    leaves = [x for o in outs for x in _leaf_texts(o)]
    picks = [needles]
    if leaves:
        leaf = st.sampled_from(leaves)
        sliced = leaf.flatmap(
            lambda s: st.tuples(st.integers(0, len(s)), st.integers(0, len(s))).map(lambda ij: s[ij[0] : ij[1]]) if isinstance(s, str) else st.just(s)
        )
        picks += [leaf, sliced, st.lists(st.one_of(leaf, sliced), min_size=1, max_size=3)]  # lists: elements from different outputs
    values = data.draw(st.lists(st.one_of(*picks), min_size=1, max_size=6))
    whole = Haystack(outs)
    parts = HaystackParts([Haystack(o) for o in outs])
    for value in values:
        assert value_in_text(value, parts) == value_in_text(value, whole), value
        assert value_in_text(value, parts) == value_in_text(value, outs), value


def test_list_elements_may_sit_in_different_parts():
    parts = HaystackParts([Haystack({"a": "red apple"}), Haystack(["12%"])])
    assert value_in_text(["red apple", 0.12], parts)
    assert not value_in_text("apple 12", parts)  # a string run never spans two outputs
    assert not value_in_text([], parts) and not value_in_text(None, parts)


floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 12.0, 0.12, 1e-300, 5e-324, 1.7976931348623157e308, 1000.0]),
)
rels = st.sampled_from([0.0, 1e-12, 1e-6, 1e-3, 0.1, 0.49, 0.5, 2.0])


@PROPS
@given(st.lists(st.lists(floats, min_size=1, max_size=3).map(tuple), max_size=8), st.lists(floats, min_size=1, max_size=3), rels, st.data())
def test_has_close_answers_like_the_scan(readings, needle, rel, data):
    # a reading near the tolerance window of one needle number: just inside or just outside it
    x = data.draw(st.sampled_from(needle))
    factors = [1 + rel, 1 - rel, 1 / (1 + rel)] + ([1 / (1 - rel), (1 - 1e-9) / (1 - rel), (1 + 1e-9) / (1 - rel)] if rel < 1 else [])
    if x == x and data.draw(st.booleans()):
        readings = [*readings, (x * data.draw(st.sampled_from(factors)),)]
    hay = Haystack(None)
    hay._readings = readings  # the prepared readings, as the leaves would give them
    scan = any(_any_close(tuple(needle), r, rel) for r in readings)
    assert hay.has_close(tuple(needle), rel) == scan  # the first question scans
    assert hay.has_close(tuple(needle), rel) == scan  # later ones bisect the sorted readings
