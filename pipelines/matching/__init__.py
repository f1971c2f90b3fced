"""Deterministic value comparison: argument values against references, answers against gold.

``values``: ``compare_argument`` / ``values_equal`` (BFCL-compatible rules plus tolerances,
dates, unordered collections, nested objects). ``answers``: ``compare_answer`` with CRAG labels
(inconclusive instead of a guess), ``is_missing``, and ``value_in_text``/``numbers_in`` for
grounding. ``normalize``: the text normal forms both use. ``literals``: BFCL's reading of Java and
JavaScript argument text.
"""

from pipelines.matching.answers import (
    AnswerLabel,
    AnswerMatch,
    AnswerThresholds,
    Haystack,
    HaystackParts,
    compare_answer,
    is_missing,
    numbers_in,
    value_finder,
    value_in_text,
)
from pipelines.matching.literals import LITERAL_TYPES, language_of_category, read_literal
from pipelines.matching.normalize import bfcl_normalize, normalize_answer_text, tokens
from pipelines.matching.values import MISSING, ValueMatch, compare_argument, identical, values_equal

__all__ = [
    "LITERAL_TYPES",
    "MISSING",
    "AnswerLabel",
    "AnswerMatch",
    "AnswerThresholds",
    "Haystack",
    "HaystackParts",
    "ValueMatch",
    "bfcl_normalize",
    "compare_answer",
    "compare_argument",
    "identical",
    "is_missing",
    "language_of_category",
    "normalize_answer_text",
    "numbers_in",
    "read_literal",
    "tokens",
    "value_finder",
    "value_in_text",
    "values_equal",
]
