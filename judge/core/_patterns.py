"""Regular expressions written in task files and run on untrusted agent text.

They run on google-re2, whose matching time is linear in the text: no pattern can backtrack
catastrophically (``^(a+)+$`` on 32 characters takes microseconds, not minutes). RE2 has no
backreferences or look-around; a pattern using them is rejected when the task is read, with a
message naming the field, never at grading time. Text longer than ``MAX_TEXT`` is not matched
(the pattern is applied to its first ``MAX_TEXT`` characters), which bounds memory as well.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from judge.core._errors import BadInputError

MAX_TEXT = 1 << 20  # characters of agent text a pattern is applied to
_MAX_MEM = 8 << 20  # bytes RE2 may use for one compiled pattern

__all__ = ["MAX_TEXT", "PatternError", "compile_pattern", "pattern_full_match", "pattern_search"]


class PatternError(BadInputError):
    """A pattern RE2 cannot compile (syntax, a backreference, look-around, too large)."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors become PatternError, not lines on stderr
    options.max_mem = _MAX_MEM
    return options


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern (cached); raises ``PatternError`` with RE2's reason."""
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"invalid regular expression {pattern!r}: {reason} (RE2 syntax: no backreferences or look-around)") from None


def pattern_full_match(pattern: str, text: str) -> bool:
    """Whether the whole of ``text`` matches ``pattern``."""
    return compile_pattern(pattern).fullmatch(text[:MAX_TEXT]) is not None


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text``."""
    return compile_pattern(pattern).search(text[:MAX_TEXT]) is not None
