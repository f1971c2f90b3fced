"""How a judge's answer is read into a verdict: strictly where the answer matters, leniently where
only its form is off.

Why: a small local model (SmolLM2 through llama.cpp) gave the right shape of verdict with a
confidence of 78, 100 or 4.56, or with raw newlines inside its JSON strings (llama.cpp's grammar
lets them through), and each such answer abstained ``unparseable``: a lost vote for a fault that
says nothing about the label. Two faults are repaired; each repair leaves a note on the verdict
(``repairs_of``), which its vote keeps (``Vote.repairs``) and the run counts per judge
(``JudgeUsage.repaired``), so the valid-verdict rate before and after repair can be told apart:

- raw control characters (U+0000-U+001F) inside JSON strings are escaped before parsing
  (``escape_control_characters``): valid JSON has none there, so it is never changed, and text
  longer than any verdict (``MAX_REPAIR_CHARS``) is not touched;
- the confidence is advisory (the label is what counts), so it is read, never rejected
  (``read_confidence``): a number in [0, 1] as it is; one in (1, 100] as a percentage (78 -> 0.78,
  100 -> 1.0, 4.56 -> 0.0456); text holding a number ("0.8", "78%") as that number; a number on
  neither scale (below 0, above 100: SmolLM2 once sent 2563897421.0) and anything else (NaN,
  infinity, true, "high", null, a missing field) -> no confidence (None): clamping would record
  a confidence the judge never expressed. The schema a model is shown still asks for a number
  from 0 to 1.

Everything else the schema rejects (a label it does not allow, a missing rationale, JSON that does
not parse) is not guessed at: instructor re-asks once (``ProviderConfig.validation_retries``,
default 1), then the vote abstains ``unparseable``. A rubric whose schema redeclares
``confidence`` as a required number still rejects a confidence read as None.

The reading is the verdict schema's own (``JudgeVerdict``), so it is the same wherever an answer is
parsed: a live answer, a provider batch's answer, a cache entry.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# The version of this reader, recorded with a cached ``unparseable`` abstention: an abstention
# recorded by an older, stricter reader (none recorded) may be an answer this one accepts, so it is
# asked again rather than served from the cache (once: the answer or abstention is then cached).
READER_VERSION = 2

# A verdict is bounded (rationale 800 characters, 10 evidence items of 200): text far longer is not
# a verdict to repair, and is parsed (and rejected) as it is.
MAX_REPAIR_CHARS = 100_000

_ANY_CONTROL = re.compile(r"[\x00-\x1f]")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)  # alternatives start differently: linear, no backtracking
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_control_characters(text: str) -> tuple[str, int]:
    """``text`` with every raw control character inside a JSON string escaped, and how many were.

    Outside strings a newline or tab is whitespace between tokens and stays; inside a string JSON
    forbids it raw, so valid JSON comes back unchanged (count 0). A string left open at the end
    (a truncated answer) is not touched: it fails to parse as it would have."""
    if len(text) > MAX_REPAIR_CHARS or not _ANY_CONTROL.search(text):
        return text, 0
    escaped = 0

    def escape_one(char: re.Match[str]) -> str:
        nonlocal escaped
        escaped += 1
        c = char.group()
        return _SHORT_ESCAPES.get(c) or f"\\u{ord(c):04x}"

    def escape_string(literal: re.Match[str]) -> str:
        return _ANY_CONTROL.sub(escape_one, literal.group())

    repaired = _JSON_STRING.sub(escape_string, text)
    return (repaired, escaped) if escaped else (text, 0)


def read_confidence(value: Any) -> tuple[float | None, str | None]:
    """The confidence ``value`` stands for, and a note when reading it took a repair (None: it was
    a number in [0, 1]). The rule is the module docstring's."""
    shown = _shown(value)
    if isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        try:
            number = float(text.removesuffix("%").strip())
        except ValueError:
            return None, f"confidence: {shown} is not a number: no confidence"
        if not math.isfinite(number):
            return None, f"confidence: {shown} is not a finite number: no confidence"
        if percent:  # "78%": a percentage whatever its size, so 0% to 100%
            read: float | None = round(number / 100, 6) if 0.0 <= number <= 100.0 else None
            how: str | None = "a percentage"
        else:
            read, how = _on_the_scale(number)
        if read is None:
            return None, f"confidence: {shown} is on no scale from 0 to 1 or 100: no confidence"
        return read, f"confidence: {shown} given as text, read as {_number(read)}" + (f" ({how})" if how else "")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "confidence: none given" if value is None else f"confidence: {shown} is not a number: no confidence"
    number = float(value)
    if not math.isfinite(number):
        return None, f"confidence: {shown} is not a finite number: no confidence"
    read, how = _on_the_scale(number)
    if read is None:
        return None, f"confidence: {shown} is on no scale from 0 to 1 or 100: no confidence"
    return read, None if how is None else f"confidence: {shown} is outside 0..1, read as {how} ({_number(read)})"


def _on_the_scale(number: float) -> tuple[float | None, str | None]:
    """A finite number on the 0..1 scale and how it got there (None: it was on it), or None for
    a number on neither scale."""
    if 0.0 <= number <= 1.0:
        return number, None
    if 1.0 < number <= 100.0:
        return round(number / 100, 6), "a percentage"
    return None, None


def _number(x: float) -> str:
    return f"{x:g}"


def _shown(value: Any) -> str:
    """``value`` as the model wrote it (JSON), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def repair_kind(note: str) -> str:
    """The kind of a repair note ("confidence", "control_characters"): its first word."""
    return note.partition(":")[0]


def repairs_of(verdict: Any) -> list[str]:
    """The repair notes a verdict was read with (none for a verdict that needed none, or for a
    schema that is not a ``JudgeVerdict``)."""
    notes = getattr(verdict, "__pydantic_private__", None) or {}
    return list(notes.get("_repairs") or [])
