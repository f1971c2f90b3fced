"""Canonical forms of JSON values, so equal content compares and hashes equal.

Used for cache keys (exact canonical JSON) and for VAKRA-style response-set comparison, where a
tool response is compared order- and duplicate-insensitively but with every column kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from judge.core._depth import parse_json_bounded


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, integral floats written as ints."""
    return json.dumps(_numbers(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _numbers(value: Any) -> Any:
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 2**63:
            return int(value)
        return value
    if isinstance(value, dict):
        return {str(k): _numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numbers(v) for v in value]
    return value


def parse_json_text(value: Any) -> Any:
    """Tool results often arrive as JSON text; compare the structure, not the spelling."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") or text in ("null", "true", "false"):
            try:
                return parse_json_bounded(text)
            except ValueError:  # not JSON, or nested too deeply to be compared as structure
                return value
    return value


def response_key(value: Any, digits: int = 9) -> str:
    """Order- and duplicate-insensitive key of a tool response (lists become sets, rows stay whole).

    Floats are rounded to ``digits`` significant digits so that 1.2587000000001 == 1.2587.
    """
    return json.dumps(_set_form(parse_json_text(value), digits), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _json_number(text: str) -> float | int | None:
    """A tool that returns the text "42" returned the same content as one that returns 42."""
    if not text or text[0] not in "-0123456789":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _set_form(value: Any, digits: int) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        as_float = float(f"{float(value):.{digits}g}")
        return int(as_float) if as_float == int(as_float) and abs(as_float) < 2**63 else as_float
    if isinstance(value, str):
        text = value.strip()
        number = _json_number(text)
        return text if number is None else _set_form(number, digits)
    if isinstance(value, dict):
        return {str(k): _set_form(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = {json.dumps(_set_form(v, digits), sort_keys=True, ensure_ascii=False, default=str) for v in value}
        return ["\u0000set"] + sorted(items)
    return str(value)
