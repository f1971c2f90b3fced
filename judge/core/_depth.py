"""A bound on how deeply input values may nest, checked without recursion.

Agent output is untrusted: a trajectory line nested 1,000 levels deep would crash every recursive
walker downstream (the JSON parser, canonical JSON, value comparison, schema walking) with a
``RecursionError``. Readers reject such an item as ``too_deep`` (one error row, never the run), so
everything after reading may recurse over values: ``MAX_DEPTH`` levels at a few frames each stay
far below Python's recursion limit. Real data nests far less (the deepest of the tau2, BFCL,
Inspect and VAKRA samples in this project: 12 levels).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from judge.core._errors import BadInputError

MAX_DEPTH = 100  # containers inside containers, the item itself being level 1

__all__ = ["MAX_DEPTH", "TooDeep", "json_lines", "nesting_error", "parse_json_bounded", "text_nesting_error"]


class TooDeep(BadInputError):
    """JSON text nested deeper than the bound (a ValueError too: callers that treat unparseable
    JSON text as plain text keep doing so)."""

    def __init__(self, limit: int, path: str | None = None):
        where = f" at {path}" if path else ""
        super().__init__(f"nested deeper than {limit} levels{where}")
        self.limit = limit
        self.path = path


def nesting_error(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The field path of the first container nested deeper than ``limit`` levels, else None.

    Iterative, level by level: each level's containers are gathered with one comprehension per
    container (no per-child bookkeeping), and a path is built only for a value that is too deep.
    The path is cut after a few segments: ``metadata.x[0][0][0][0]...``.
    """
    if not isinstance(value, (dict, list)):
        return None
    level: list[Any] = [value]
    for _ in range(limit):
        level = [c for node in level for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, (dict, list))]
        if not level:
            return None
    return _deep_path(value, limit)


def text_nesting_error(value: Any, text: str | bytes, limit: int = MAX_DEPTH) -> str | None:
    """``nesting_error`` of ``value`` parsed from ``text``, skipping the walk when the text cannot
    nest that deep (n nested containers need n opening brackets) or its layout shows it does not
    (``_shallow_by_layout``)."""
    if not isinstance(value, (dict, list)) or _openers(text) <= limit or _shallow_by_layout(value, limit):
        return None
    return nesting_error(value, limit)


def _shallow_by_layout(value: Any, limit: int) -> bool:
    """True when ``value`` certainly nests at most ``limit`` levels, read off its indented JSON.

    orjson's two-space layout writes each member of a container on its own line, two spaces deeper
    than the container's own line, and strings never hold a raw line break (it is escaped). A
    container at level ``limit + 1`` is a member of one at level ``limit``: its line starts with a
    line break and ``2 * limit`` spaces. No such line, no such container. A C-speed dump and one
    substring search (a task line with 15 tool specs: ~14 us instead of a ~47 us walk); False
    when orjson cannot write the value (then the walk decides)."""
    try:
        laid_out = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:  # e.g. an integer past 64 bits, a lone surrogate, or past orjson's depth
        return False
    return b"\n" + b" " * (2 * limit) not in laid_out


def _deep_path(value: Any, limit: int) -> str:
    """The path of a container below level ``limit`` (only called when one exists)."""
    stack: list[tuple[Any, int, tuple | None]] = [(value, 1, None)]
    while stack:
        node, depth, link = stack.pop()
        if depth > limit:
            return _render(link)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((child, depth + 1, (link, key)) for key, child in items if isinstance(child, (dict, list)))
    return "<root>"


def _render(link: tuple | None, keep: int = 6) -> str:
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    keys.reverse()
    out = ""
    for key in keys[:keep]:
        out += f"[{key}]" if isinstance(key, int) else ("." if out else "") + str(key)
    if len(keys) > keep:
        out += "..."
    return out or "<root>"


def json_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, split where a line can end: ``\n``, ``\r\n`` or a lone
    ``\r`` (JSON escapes both inside strings), never on the other characters ``str.splitlines``
    breaks at (U+2028, U+2029, U+0085, \x1c-\x1e...), which JSON strings may hold raw: an answer
    holding U+2028 is one line, as every writer here wrote it."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_json_bounded(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` for untrusted text: a ``ValueError`` instead of anything a later step would
    crash on. ``TooDeep`` for nesting beyond ``limit`` (never a ``RecursionError``); a plain
    ``ValueError`` for an unpaired surrogate escape (``"\\ud800"`` decodes to a string no UTF-8
    output can hold) or an integer over Python's 4,300-digit limit."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(limit) from None
    path = text_nesting_error(value, text, limit)
    if path is not None:
        raise TooDeep(limit, path)
    if _SURROGATE_ESCAPE.search(text if isinstance(text, str) else text.decode("utf-8", "replace")) and not _encodable(value):
        raise BadInputError("a string holds an unpaired UTF-16 surrogate escape")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return False
    return True


def _openers(text: str | bytes) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")
