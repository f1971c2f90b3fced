"""BFCL's Java and JavaScript arguments: source text read by the declared type, as BFCL reads it.

The oracle is BFCL's own reader: ``java_type_converter`` / ``js_type_converter`` of bfcl-eval
(installed without its dependencies by the dev set-up, see the Makefile; these two modules import
nothing else of it). Hypothesis writes literal-like strings from the tokens those readers look for;
ours must read every one of them to the same value.
"""

from __future__ import annotations

import pytest
from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import java_type_converter as java_converter  # make test installs it
from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import js_type_converter as js_converter
from hypothesis import given, settings
from hypothesis import strategies as st

from judge import ArgumentRule
from pipelines.matching import compare_argument, read_literal
from pipelines.matching.literals import LITERAL_TYPES, language_of_category

_TOKENS = [
    "1", "-2", "3L", "4.5", "4.5f", "2e3", "2.0F", "5n", "true", "false", "null", '"a"', "'b'", '"k"', "x", "a b", "", " ",
    "[", "]", "{", "}", "(", ")", ",", ":", ";", "{{", "}}", "new", "int[]", "String[]", "Array", "ArrayList<>", "ArrayList<Integer>",
    "HashMap<String, String>", "HashMap<>", "Arrays.asList", "add", "put", "new Array",
]  # fmt: skip
_SHAPES = [
    "new int[]{1, 2, 3}", 'new String[]{"a", "b"}', "new long[]{1L, 2, 3L}", 'new ArrayList<>(Arrays.asList("a", "b"))',
    "new ArrayList<Integer>() {{ add(1); add(2); }}", "new ArrayList<>()", 'new HashMap<String, String>() {{ put("k", "v"); put("n", 5); }}',
    "new HashMap<>()", "[1, 2, 3]", "new Array(1, 2)", "[[1, 2], [3, 4]]", "{'a': 1, 'b': [1, 2], 'c': {'d': 'e'}}", "{a: '5', b: true}",
    '["x", "y"]', "['p', 'q']", "[]", "{}",
]  # fmt: skip
literals = st.one_of(
    st.sampled_from(_SHAPES),
    st.lists(st.tuples(st.sampled_from(_TOKENS), st.sampled_from(["", " "])), min_size=1, max_size=8).map(lambda parts: "".join(a + b for a, b in parts)),
)
JAVA_ITEMS = [None, "String", "integer", "long", "any", "char", "boolean", "double"]
JS_ITEMS = [None, "String", "integer", "float", "any", "Boolean", "array", "dict"]


def _theirs(converter, text: str, declared: str, items: str | None):
    try:
        return converter(text, declared, items)
    except Exception as exc:  # BFCL's reader raises for some element types: both must then fail the same way
        return ("raises", type(exc).__name__)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(literals, st.sampled_from(sorted(LITERAL_TYPES["java"])), st.sampled_from(JAVA_ITEMS))
def test_java_literals_read_as_bfcl_reads_them(text, declared, items):
    items = items if declared in ("Array", "ArrayList") else None
    assert repr(read_literal(text, "java", declared, items).value) == repr(_theirs(java_converter, text, declared, items))


@settings(max_examples=600, deadline=None, derandomize=True)
@given(literals, st.sampled_from(sorted(LITERAL_TYPES["javascript"])), st.sampled_from(JS_ITEMS))
def test_javascript_literals_read_as_bfcl_reads_them(text, declared, items):
    items = items if declared == "array" else None
    assert repr(read_literal(text, "javascript", declared, items).value) == repr(_theirs(js_converter, text, declared, items))


def test_the_language_of_a_category_is_bfcls():
    assert [language_of_category(c) for c in ("simple_java", "simple_javascript", "simple_python", "live_simple")] == ["java", "javascript", None, None]


def _schema(language: str, kind: str, items: str | None = None) -> dict:
    schema = {"type": "string", "x-bfcl-type": kind, "x-bfcl-language": language}
    if items:
        schema["x-bfcl-items"] = items
    return schema


@pytest.mark.parametrize(
    ("language", "kind", "items", "expected", "given", "ok"),
    [
        ("java", "boolean", None, True, "true", True),
        ("java", "long", None, 42, "42L", True),
        ("java", "long", None, 42, "42", False),  # a long literal needs its L: "42" stays text
        ("java", "integer", None, "ResultSet.TYPE_SCROLL_INSENSITIVE", "ResultSet.TYPE_SCROLL_INSENSITIVE", True),  # a "variable" answer
        ("java", "integer", None, "ResultSet.TYPE_SCROLL_INSENSITIVE", "1004", False),
        ("java", "HashMap", None, {"limit": "50"}, 'new HashMap<String, String>() {{ put("limit", "50"); }}', True),
        ("java", "ArrayList", "long", [101, 202], "new ArrayList<>(Arrays.asList(101L, 202L))", True),
        ("java", "Array", "String", ["a", "b"], 'new String[]{"a", "b"}', False),  # BFCL keeps the quotes of Array elements
        ("java", "Array", "String", ["a", "b"], "new String[]{a, b}", True),
        ("java", "String", None, "x", ["x"], False),  # not a string: BFCL's type_error:java
        ("javascript", "array", "float", [60, 30], "[60, 30]", True),  # the answer's ints stand for themselves
        ("javascript", "String", None, "a", "'a'", True),
        ("javascript", "dict", None, {"stopPropagation": True}, "{stopPropagation: true}", True),
        ("javascript", "float", None, 9.81, "9.8", False),
    ],
)
def test_arguments_of_java_and_javascript_parameters(language, kind, items, expected, given, ok):
    result = compare_argument(expected, given, ArgumentRule(), _schema(language, kind, items))
    assert result.ok is ok, result.reason
    if not ok and isinstance(given, str) and read_literal(given, language, kind, items).value != given:
        assert "reads as" in result.reason  # the reason shows what the text was read as


def test_a_value_that_is_not_source_text_fails_saying_why():
    result = compare_argument(["user:online:both"], ["user:online:both"], None, _schema("java", "Array", "String"))
    assert not result.ok and "strings holding Java source" in result.reason


# BFCL's own literal patterns nest lazy quantifiers: under Python's backtracking ``re`` an unclosed
# nested array of 50 elements took minutes, so one model output stalled the run. They run on RE2.
HOSTILE_LITERALS = [
    ("javascript", "array", "[[" + "[1]," * 20_000),
    ("javascript", "array", "[[" + "[1]," * 20_000 + "]"),
    ("javascript", "dict", "{" + ",a" * 20_000 + "}"),
    ("javascript", "dict", "{" + "a:" * 20_000 + "}"),
    ("java", "HashMap", "new HashMap<String, String>() {{ " + 'put("k", "v"); ' * 20_000),
    ("java", "Array", "new int[]{" + "1," * 20_000),
    ("java", "ArrayList", "new ArrayList<Integer>() {{ " + "add(1); " * 20_000),
]


def test_hostile_literals_are_read_in_linear_time():
    import subprocess
    import sys

    code = (
        "from pipelines.matching import read_literal\n"
        "from tests.matching.test_literals import HOSTILE_LITERALS\n"
        "for language, declared, text in HOSTILE_LITERALS:\n"
        "    read_literal(text, language, declared)\n"
        "print('read')\n"
    )
    # a liveness bound, not a timing figure: linear matching reads these in milliseconds, the
    # backtracking patterns never finish
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read"


def test_an_object_body_over_the_bound_stays_text():
    from pipelines.matching.literals import MAX_OBJECT

    text = "{" + "a: 1, " * (MAX_OBJECT // 6 + 1) + "}"
    assert read_literal(text, "javascript", "dict").value == text
    assert read_literal("{a: 1, b: 'x'}", "javascript", "dict").value == {"a": 1, "b": "x"}
