"""Text normal forms: BFCL's exactly, and the answer form (CJK kept, numbers intact)."""

from pipelines.matching import bfcl_normalize, normalize_answer_text, tokens


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
