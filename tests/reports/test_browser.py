"""report.html in real headless Chromium: no console errors, no network requests, charts and the
drill-down render, the filters work, and a screenshot is not blank.

The page's CSP forbids every fetch, and a negative control (a page with one external image) shows
that the checks do catch a network attempt.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from pathlib import Path

import pytest

from reports import build_report, dump_dom, find_chromium, screenshot
from tests.reports.conftest import read_results

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="no chromium binary on PATH (CI installs Debian's chromium via .ci/run)")
HAVE_AIOHTTP = importlib.util.find_spec("aiohttp") is not None
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
FACTS = {
    "charts": "document.querySelectorAll('svg.chart').length",
    "chart_shapes": "document.querySelectorAll('svg.chart rect, svg.chart polygon').length",
    "chart_height": "Math.min.apply(null, Array.from(document.querySelectorAll('svg.chart')).map(function(s){return s.getBoundingClientRect().height}))",
    "traj": "document.querySelectorAll('details.traj').length",
    "ready": "document.querySelector('.drill').getAttribute('data-ready')",
    "shown": "document.querySelector('.shown').textContent",
}


@pytest.fixture(scope="module")
def report_html(judged_run: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    build_report([judged_run], out)
    return out / "report.html"


@pytest.fixture(scope="module")
def leaky_html(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("leaky") / "leaky.html"
    path.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}"></head><body><img src="http://example.invalid/x.png"></body></html>'
    )
    return path


def _non_file_requests(urls: list[str]) -> list[str]:
    return [u for u in urls if not u.startswith(("file://", "data:", "about:"))]


@pytest.mark.skipif(not HAVE_AIOHTTP, reason="aiohttp (websocket client for the DevTools protocol) not installed; the --dump-dom test still runs")
def test_devtools_no_errors_no_network_and_everything_renders(report_html: Path, judged_run: Path):
    from tests.reports._cdp import inspect_page

    results = read_results(judged_run)
    stage = Counter(r.failure_stage.value for r in results if r.failure_stage is not None and r.failure_stage.value != "none").most_common(1)[0]
    pick = f"var s=document.querySelector('.drill select[name=stage]');s.value='{stage[0]}';s.dispatchEvent(new Event('change'))"
    page = inspect_page(
        report_html,
        {**FACTS, "filtered": "document.querySelector('.shown').textContent", "visible": "document.querySelectorAll('details.traj:not([hidden])').length"},
        actions=[pick],
    )
    assert page.errors == [], page.errors
    assert _non_file_requests(page.requests) == [], page.requests
    assert page.values["charts"] >= 6 and page.values["chart_shapes"] > 50 and page.values["chart_height"] > 20
    assert page.values["traj"] == len(results) and page.values["ready"] == "1"
    assert page.values["filtered"] == str(stage[1]) == str(page.values["visible"])


@pytest.mark.skipif(not HAVE_AIOHTTP, reason="aiohttp not installed")
def test_devtools_check_catches_a_network_attempt(leaky_html: Path):
    from tests.reports._cdp import inspect_page

    page = inspect_page(leaky_html, {"n": "document.images.length"}, until=lambda p: bool(p.errors))
    assert page.errors and "Content Security Policy" in page.errors[0], (page.errors, page.requests, page.log_entries)


def test_dump_dom_after_scripts_ran(report_html: Path, judged_run: Path, leaky_html: Path):
    dom, log = dump_dom(report_html)
    n = len(read_results(judged_run))
    assert re.search(r'<div class="drill" data-ready="1">', dom), "the drill-down script did not run"
    assert f'<span class="shown">{n}</span>' in dom
    assert len(re.findall(r'<svg [^>]*class="chart"', dom)) >= 6
    assert dom.count('<details class="traj"') == n
    assert "CONSOLE" not in log, log  # the report logs nothing; a CSP violation would be logged here
    _, leaky_log = dump_dom(leaky_html)
    assert "Content Security Policy" in leaky_log


def test_screenshot_is_not_blank(report_html: Path, tmp_path: Path):
    image = pytest.importorskip("PIL.Image")
    png = screenshot(report_html, tmp_path / "shot.png", width=1000, height=800)
    with image.open(png) as im:
        gray = list(im.convert("L").tobytes())
    mean = sum(gray) / len(gray)
    assert sum((g - mean) ** 2 for g in gray) / len(gray) > 100  # text, bars and cards, not a flat page
    assert len(set(gray)) > 20
