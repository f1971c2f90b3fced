"""Patterns from task files run in linear time on untrusted text (google-re2)."""

from __future__ import annotations

import time

import pytest

from judge import PatternError, compile_pattern, pattern_full_match, pattern_search


def test_catastrophic_pattern_is_linear():
    started = time.perf_counter()
    assert not pattern_full_match(r"^(a+)+$", "a" * 5000 + "b")
    assert time.perf_counter() - started < 1.0  # Python's re takes minutes on 32 characters


def test_full_match_and_search_differ():
    assert pattern_full_match(r"\d{4}-\d{2}", "2024-05")
    assert not pattern_full_match(r"\d{4}", "year 2024")
    assert pattern_search(r"\d{4}", "year 2024")


@pytest.mark.parametrize("bad", [r"(a)\1", r"(?=a)b", "(unclosed"])
def test_unsupported_or_broken_patterns_raise_a_clear_error(bad):
    with pytest.raises(PatternError, match="invalid regular expression"):
        compile_pattern(bad)
