"""Number formatting shared by the Markdown and HTML reports, so both print the same strings."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

# columns printed as percentages wherever they appear
PERCENT_COLUMNS = {
    "pass_rate", "ci_low", "ci_high", "share", "failure_rate", "failure_rate_incl_undecided", "agrees_with_panel",
    "pass_at_k", "pass_hat_k", "mean_pass_rate", "std_over_runs", "delta_pass_rate", "vakra_score",
}


def missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


def pct(x: Any) -> str:
    return "n/a" if missing(x) else f"{100 * float(x):.1f}%"


def pct_ci(ci: Any) -> str:
    return "" if not ci or missing(ci[0]) or missing(ci[1]) else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def num(x: Any) -> str:
    return "n/a" if missing(x) else f"{float(x):.3f}"


def signed_pct(x: Any) -> str:
    return "n/a" if missing(x) else f"{100 * float(x):+.1f} pp"


def cell(column: str, value: Any, percent: set[str] | None = None) -> str:
    """One table cell as text: percent columns as %, other floats to 3 decimals, None as '–'."""
    if missing(value):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column == "delta_pass_rate":
        return signed_pct(value)
    if column in (percent if percent is not None else PERCENT_COLUMNS) and isinstance(value, (int, float)):
        return pct(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def rows(df: pd.DataFrame, columns: list[str] | None = None, percent: set[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Cells as text; ``percent`` overrides which columns are percentages (default PERCENT_COLUMNS)."""
    cols = columns or list(df.columns)
    out = []
    for rec in df[cols].itertuples(index=False, name=None):
        out.append([cell(c, v, percent) for c, v in zip(cols, rec)])
    return cols, out


def md_table(df: pd.DataFrame, columns: list[str] | None = None, percent: set[str] | None = None) -> list[str]:
    cols, body = rows(df, columns, percent)
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in cols]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for r in body:
        lines.append("| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in r) + " |")
    return lines
