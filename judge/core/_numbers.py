"""How numbers are written for people, everywhere (reports, calibration reports, the console):
one home, so the same value never prints two ways. Undefined values (None, NaN, pandas' NA) print
as ``none``; a rounded negative zero prints without its sign."""

from __future__ import annotations

import math
from typing import Any


def missing(x: Any) -> bool:
    """None, NaN, or a missing-value marker (pandas' NA is not equal to itself either)."""
    if x is None:
        return True
    if isinstance(x, float):
        return math.isnan(x)
    try:
        return bool(x != x)  # NA-like: not equal to itself
    except (TypeError, ValueError):
        return True


def fmt_num(x: Any, digits: int = 3, none: str = "n/a") -> str:
    if missing(x):
        return none
    text = f"{float(x):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def fmt_pct(x: Any, digits: int = 1, none: str = "n/a", sign: str = "%") -> str:
    """A proportion in [0, 1] as a percentage: 0.4567 -> '45.7%'."""
    return none if missing(x) else fmt_num(100 * float(x), digits) + sign


def fmt_pct_ci(ci: Any, digits: int = 1) -> str:
    """A (low, high) proportion interval as '[40.0, 51.3]'; empty when either end is undefined."""
    if not ci or missing(ci[0]) or missing(ci[1]):
        return ""
    return f"[{fmt_num(100 * ci[0], digits)}, {fmt_num(100 * ci[1], digits)}]"


def fmt_signed_pct(x: Any, digits: int = 1, none: str = "n/a") -> str:
    """A difference of proportions in percentage points: +3.2 pp."""
    return none if missing(x) else f"{100 * float(x):+.{digits}f} pp"
