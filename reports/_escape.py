"""Text from trajectories is data in every report format, never markup or a formula.

- Markdown (``report.md``): a renderer would execute raw HTML (``<script>``, ``<img onerror>``) and
  fetch images (``![x](https://...)``); ``md_text`` backslash-escapes ``\\ < > [ ]`` and the table
  pipe, and folds line breaks, so such text shows as the characters it is.
- CSV (``tables/*.csv``): a spreadsheet runs a cell starting with ``= + - @`` (or a tab / carriage
  return) as a formula (OWASP "CSV injection"); ``csv_safe`` prefixes such string cells with ``'``.
  Plain numbers written as text (``-3``, ``+1.5``) cannot hold a formula and stay as they are.
- HTML and SVG escape with ``html.escape`` where they are written (``reports/_html.py``, ``_svg.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from judge import md_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMULA_PREFIX", "csv_cell", "csv_safe", "md_text"]

FORMULA_PREFIX = "'"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def csv_cell(value: object) -> object:
    """A string cell a spreadsheet would evaluate, made inert with a leading ``'``."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return FORMULA_PREFIX + value
    return value


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every formula-like string cell neutralised (columns are replaced, never edited in place);
    the reports write their tables with ``reports._frame.Table.write_csv``, which does the same cell by cell."""
    import pandas as pd

    out = df
    for col in df.columns:
        series = df[col]
        if series.dtype != object and not pd.api.types.is_string_dtype(series):
            continue
        first = series.map(lambda v: v[:1] if isinstance(v, str) else "")
        if not first.isin(_FORMULA_START).any():
            continue
        if out is df:
            out = df.copy(deep=False)
        out[col] = series.map(csv_cell)
    if isinstance(out.columns, pd.Index) and any(isinstance(c, str) and c.startswith(_FORMULA_START) for c in out.columns):
        out = out.rename(columns=lambda c: csv_cell(c))
    return out
