"""Text as literal characters in Markdown: every report that writes a table (report.md, the
calibration report) passes user strings through ``md_text``, so a renderer shows ``<script>``,
``![x](https://...)`` or a pipe as the characters they are, never as markup or a new cell."""

from __future__ import annotations

import re

__all__ = ["md_text"]

_MD_SPECIAL = re.compile(r"([\\<>\[\]|])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\u0085]+")


def md_text(text: str) -> str:
    """``text`` as literal characters inside a Markdown table cell or line: ``\\ < > [ ]`` and the
    table pipe backslash-escaped, line breaks folded to a space."""
    return _MD_SPECIAL.sub(r"\\\1", _LINE_BREAKS.sub(" ", text))
