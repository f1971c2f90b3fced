"""Number formatting shared by the Markdown and HTML reports, so both print the same strings."""

from __future__ import annotations

from typing import Any

from judge import fmt_num, fmt_pct, fmt_pct_ci, fmt_signed_pct, missing
from reports._escape import md_text
from reports._frame import Table

# columns printed as percentages wherever they appear
PERCENT_COLUMNS = {
    "pass_rate",
    "ci_low",
    "ci_high",
    "share",
    "failure_rate",
    "failure_rate_incl_undecided",
    "agrees_with_panel",
    "pass_at_k",
    "pass_hat_k",
    "mean_pass_rate",
    "std_over_runs",
    "delta_pass_rate",
    "vakra_score",
}


# the project's one number formatter (judge.core._numbers), under the names the reports use
pct, pct_ci, num, signed_pct = fmt_pct, fmt_pct_ci, fmt_num, fmt_signed_pct


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


def rows(df: Table, columns: list[str] | None = None, percent: set[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Cells as text; ``percent`` overrides which columns are percentages (default PERCENT_COLUMNS)."""
    cols = columns or list(df.columns)
    out = []
    for rec in df.tuples(cols):
        out.append([cell(c, v, percent) for c, v in zip(cols, rec)])
    return cols, out


def md_table(df: Table, columns: list[str] | None = None, percent: set[str] | None = None) -> list[str]:
    cols, body = rows(df, columns, percent)
    numeric = [df.is_numeric(c) for c in cols]
    lines = ["| " + " | ".join(md_text(str(c)) for c in cols) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for r in body:
        lines.append("| " + " | ".join(md_text(x) for x in r) + " |")
    return lines


def pivot_comparison(df: Table) -> Table:
    """Long comparison rows -> one row per group, per run: 'pass rate (n)' and the delta with a
    marker when the CIs do not overlap (``*``). Cells are display strings."""
    runs = list(dict.fromkeys(df["run"]))
    out = []
    parts: dict[Any, list[dict[str, Any]]] = {}
    for rec in df.records():
        parts.setdefault(rec["group"], []).append(rec)
    for group, part in parts.items():
        row = {"group": str(group)}
        for run in runs:
            r = next(x for x in part if x["run"] == run)
            row[run] = "–" if missing(r["pass_rate"]) else f"{pct(r['pass_rate'])} (n={r['n']})"
            if run != runs[0]:
                mark = "" if missing(r["ci_overlaps_first"]) or r["ci_overlaps_first"] else " *"
                row[f"Δ {run}"] = "–" if missing(r["delta_pass_rate"]) else signed_pct(r["delta_pass_rate"]) + mark
        out.append(row)
    return Table.from_records(out, columns=["group"] + [c for run in runs for c in ([run] if run == runs[0] else [run, f"Δ {run}"])])


def calibration_sentence(cf: dict | None, observed: float | None) -> str:
    """One readable line about the judge-error correction (or why there is none)."""
    if not cf:
        return ""
    if cf.get("corrected_pass_rate") is None or "judge_decided_pass_rate" not in cf:
        return f"No corrected pass rate: {cf.get('note', 'no judge-decided trajectories')}."
    return (
        f"Pass rate corrected for judge error: {pct(cf['corrected_pass_rate'])} (observed {pct(observed)}). "
        f"The {cf['judge_decided']} judge-decided trajectories pass at {pct(cf['judge_decided_pass_rate'])}, "
        f"{pct(cf['judge_decided_pass_rate_corrected'])} after the Rogan-Gladen correction with {cf['rater']} "
        f"(TPR {num(cf['tpr'])}, TNR {num(cf['tnr'])}; from {cf['source']}); deterministic verdicts are taken as exact."
    )


def trust_sentence(facts: dict[str, Any]) -> str:
    """The headline's word on the judges: how many verdicts rest on an unmeasured judge, or which
    judges their control items set aside (empty when no verdict rests on a judge)."""
    if facts.get("unmeasured"):
        return (
            f"{facts['unmeasured']} verdicts rest on an unmeasured judge (no control items, no calibration.json): "
            "nothing says whether it is lenient; grade with --controls gate or calibrate it (judge calibrate)"
        )
    gated = facts.get("gated") or []
    if gated:
        named = ", ".join(f"{judge} on {rubric} ({num(acc)})" for judge, rubric, acc in gated)
        return f"Judges set aside by their control items (accuracy below {facts['threshold']}): {named}; their votes there count as abstentions"
    return ""
