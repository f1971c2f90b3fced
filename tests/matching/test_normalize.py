"""Text normal forms: BFCL's exactly, and the answer form (CJK kept, numbers intact)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.matching import bfcl_normalize, normalize_answer_text, tokens
from pipelines.matching import normalize as _normalize


def test_bfcl_normalize_is_bfcls_standardize_string():
    assert bfcl_normalize("April 1, 2024") == "april12024"
    assert bfcl_normalize("New-York_City/NY.") == "newyorkcityny"
    assert bfcl_normalize("a*b^c") == "abc"
    assert bfcl_normalize("It's") == 'it"s'


def test_bfcl_normalize_keeps_what_bfcl_keeps():
    # only space and , . / - _ * ^ are removed: other punctuation still distinguishes
    assert bfcl_normalize("a+b") != bfcl_normalize("ab")
    assert bfcl_normalize("a:b") != bfcl_normalize("ab")
    assert bfcl_normalize("Paris") != bfcl_normalize("Lyon")


def test_normalize_answer_text_case_punctuation_articles():
    assert normalize_answer_text("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer_text("an apple, a pear") == "apple pear"
    assert normalize_answer_text("U.S.") == "us"
    assert normalize_answer_text("don't") == "dont"
    assert normalize_answer_text("New York-based") == "new york based"


def test_normalize_answer_text_keeps_numbers_and_cjk():
    assert normalize_answer_text("1,234.5") == "1,234.5"
    assert normalize_answer_text("1.5") != normalize_answer_text("15")
    assert normalize_answer_text("北京，中国。") == "北京 中国"
    # articles are whole words only
    assert normalize_answer_text("Theatre") == "theatre"


def test_tokens_split_cjk_per_character():
    assert tokens("The Forbidden City") == ["forbidden", "city"]
    assert tokens("北京大学 Peking") == ["北", "京", "大", "学", "peking"]
    assert tokens("abc北京") == ["abc", "北", "京"]
    assert tokens("!!!") == []


# ---- the ASCII fast path is the general rule, only faster ------------------------------------

_ASCII_HEAVY = st.text(alphabet=st.characters(max_codepoint=127), max_size=60) | st.text(alphabet="0123456789.,'` $%-_aAtThHeEnN \t\n\x1f\x00", max_size=40)


@given(_ASCII_HEAVY)
@settings(max_examples=600, deadline=None)
def test_ascii_fast_path_equals_the_general_rule(text):
    assert _normalize.normalize_ascii(text) == _normalize._normalize_general(text)
    assert tokens(text) == _normalize._normalize_general(text).split()


def test_ascii_fast_path_examples():
    for text in ("The 1,234.5 U.S. dollars", "1.2.3", "a.b,c", "it's `quoted`", "x$5 and 12%", "1.,2", "an  the a"):
        assert _normalize.normalize_ascii(text) == _normalize._normalize_general(text), text
