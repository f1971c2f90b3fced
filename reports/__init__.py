"""Reports: a graded run (or several, side by side) as report.md, a self-contained report.html
with inline SVG charts and a filterable drill-down, and tables as CSV + Parquet.

Public API:
- ``write_reports(summary, out)``: all formats for the run in ``out`` (the grading run calls it);
- ``build_report(run_dirs, out)``: the same for one or more finished run directories (``judge report``);
- ``load_run`` / ``analyse`` / ``render``: the steps in between, for callers that need the tables;
- ``pass_at_k`` / ``pass_hat_k``: the unbiased repeated-run estimators;
- ``find_chromium`` / ``screenshot`` / ``dump_dom``: headless Chromium helpers (tests, README image).
"""

from reports._analysis import RunReport, analyse
from reports._browser import dump_dom, find_chromium, screenshot
from reports._html import render_html
from reports._markdown import render_markdown
from reports._run import ReportInputError, Row, RunData, load_run, to_row
from reports._tables import pass_at_k, pass_hat_k
from reports._write import build_report, render, write_reports

__all__ = [
    "ReportInputError",
    "Row",
    "RunData",
    "RunReport",
    "analyse",
    "build_report",
    "dump_dom",
    "find_chromium",
    "load_run",
    "pass_at_k",
    "pass_hat_k",
    "render",
    "render_html",
    "render_markdown",
    "screenshot",
    "to_row",
    "write_reports",
]
