"""Properties: symmetry of value equality, idempotent normalisation, every gold matches itself."""

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.matching import AnswerLabel, bfcl_normalize, compare_answer, normalize_answer_text, values_equal

PROPS = settings(max_examples=300, deadline=None, derandomize=True)

# Scalars chosen to collide under the rules: 3 / 3.0 / True / "3", case and punctuation variants,
# ISO dates and other spellings of the same dates, unparseable dates.
scalar_pool = st.sampled_from(
    [0, 1, 3, 3.0, 1.0, 2.5, True, False, None, "3", "a", "A", "a-b", "AB", "ab", "New York", "new_york",
     "2024-01-05", "Jan 5, 2024", "2024-01-05T00:00:00", "2024-01-05T10:00:00Z", "2024-01-05T11:00:00+01:00",
     "2024-01-05T10:00:00", "January 2024", "next friday", "2024-13-45", float("nan")]
)  # fmt: skip
scalars = st.one_of(
    scalar_pool,
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text(max_size=8),
)
schemas = st.sampled_from(
    [None, {"type": "string"}, {"type": "integer"}, {"type": "integer", "x-bfcl-type": "integer"},
     {"type": "number"}, {"type": "string", "format": "date"}, {"type": "string", "x-exact": True}, {}]
)  # fmt: skip
tolerances = st.sampled_from([None, 0.0, 0.5])


@PROPS
@given(scalars, scalars, schemas, tolerances, tolerances)
def test_values_equal_is_symmetric_for_scalars(a, b, schema, tol, rel):
    forward = values_equal(a, b, schema, tolerance=tol, relative_tolerance=rel)
    assert forward == values_equal(b, a, schema, tolerance=tol, relative_tolerance=rel)


@PROPS
@given(st.lists(scalar_pool, max_size=5), st.lists(scalar_pool, max_size=5), tolerances)
def test_values_equal_is_symmetric_for_unordered_lists(a, b, tol):
    assert values_equal(a, b, unordered=True, tolerance=tol) == values_equal(b, a, unordered=True, tolerance=tol)


@PROPS
@given(st.lists(scalar_pool, max_size=5), st.randoms(use_true_random=False))
def test_unordered_list_equals_its_permutation(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert values_equal(items, shuffled, unordered=True)


@PROPS
@given(scalars, schemas)
def test_values_equal_is_reflexive(a, schema):
    assert values_equal(a, a, schema)


@PROPS
@given(st.text(max_size=30))
def test_bfcl_normalize_is_idempotent(s):
    assert bfcl_normalize(bfcl_normalize(s)) == bfcl_normalize(s)


@PROPS
@given(st.text(max_size=30))
def test_normalize_answer_text_is_idempotent(s):
    once = normalize_answer_text(s)
    assert normalize_answer_text(once) == once


answer_scalars = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.from_regex(r"-?\d{1,4}(\.\d{1,3})?( ?%| million| kg)?", fullmatch=True),
    st.sampled_from(["I don't know", "N/A", "", "北京", "不是北京", "1,234.5", "$4.50", "2024-01-05"]),
)
answer_lists = st.lists(answer_scalars, max_size=5)
answer_tables = st.integers(1, 4).flatmap(lambda w: st.lists(st.lists(answer_scalars, min_size=w, max_size=w), max_size=4))
golds = st.one_of(answer_scalars, answer_lists, answer_tables)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(golds, st.booleans())
def test_every_gold_matches_itself(gold, ordered):
    result = compare_answer([gold], gold, ordered=ordered)
    assert result.label is AnswerLabel.CORRECT, result.reason
    assert result.gold_index == 0
