"""Reports: a graded run (or several, side by side) as report.md, a self-contained report.html
with inline SVG charts and a filterable drill-down, and tables as CSV + Parquet.

Public API:
- ``write_reports(summary, out)``: all formats for the run in ``out`` (the grading run calls it);
- ``build_report(run_dirs, out)``: the same for one or more finished run directories (``judge report``);
- ``load_run`` / ``analyse`` / ``render``: the steps in between, for callers that need the tables;
- ``pass_at_k`` / ``pass_hat_k``: the unbiased repeated-run estimators;
- ``drill_picks`` / ``may_pick`` and the ``drill_steps.jsonl`` record (``DrillStepsHeader``,
  ``KeptTrajectory``, ``kept_line``, ...): which trajectories the drill-down shows, and the steps
  the grading run keeps of them;
- ``find_chromium`` / ``screenshot`` / ``dump_dom``: headless Chromium helpers (tests, README image).

Each name loads its module on first use (PEP 562): the grading path needs only ``to_row`` while
it grades, and must not carry pandas, pyarrow and jinja2 (~50 MB of RSS) until the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judge import lazy_exports

_EXPORTS: dict[str, str] = {
    "RunReport": "reports._analysis",
    "analyse": "reports._analysis",
    "dump_dom": "reports._browser",
    "find_chromium": "reports._browser",
    "screenshot": "reports._browser",
    "render_html": "reports._html",
    "render_markdown": "reports._markdown",
    "ReportInputError": "reports._run",
    "Row": "reports._run",
    "RunData": "reports._run",
    "load_run": "reports._run",
    "to_row": "reports._run",
    "DRILL_EXTRA_FAILURES": "reports._steps",
    "DRILL_FIRST": "reports._steps",
    "DRILL_STEPS": "reports._steps",
    "DrillStepsHeader": "reports._steps",
    "KeptTrajectory": "reports._steps",
    "drill_picks": "reports._steps",
    "header_line": "reports._steps",
    "kept_index": "reports._steps",
    "kept_line": "reports._steps",
    "later_failure": "reports._steps",
    "may_pick": "reports._steps",
    "more_failures_wanted": "reports._steps",
    "pass_at_k": "calibration._stats",
    "pass_hat_k": "calibration._stats",
    "build_report": "reports._write",
    "render": "reports._write",
    "write_reports": "reports._write",
}

if TYPE_CHECKING:
    from calibration._stats import pass_at_k, pass_hat_k
    from reports._analysis import RunReport, analyse
    from reports._browser import dump_dom, find_chromium, screenshot
    from reports._html import render_html
    from reports._markdown import render_markdown
    from reports._run import ReportInputError, Row, RunData, load_run, to_row
    from reports._steps import (
        DRILL_EXTRA_FAILURES,
        DRILL_FIRST,
        DRILL_STEPS,
        DrillStepsHeader,
        KeptTrajectory,
        drill_picks,
        header_line,
        kept_index,
        kept_line,
        later_failure,
        may_pick,
        more_failures_wanted,
    )
    from reports._write import build_report, render, write_reports

__all__ = [
    "DRILL_EXTRA_FAILURES",
    "DRILL_FIRST",
    "DRILL_STEPS",
    "DrillStepsHeader",
    "KeptTrajectory",
    "ReportInputError",
    "Row",
    "RunData",
    "RunReport",
    "analyse",
    "build_report",
    "drill_picks",
    "dump_dom",
    "find_chromium",
    "header_line",
    "kept_index",
    "kept_line",
    "later_failure",
    "load_run",
    "may_pick",
    "more_failures_wanted",
    "pass_at_k",
    "pass_hat_k",
    "render",
    "render_html",
    "render_markdown",
    "screenshot",
    "to_row",
    "write_reports",
]


__getattr__, __dir__ = lazy_exports("reports", _EXPORTS, globals())
