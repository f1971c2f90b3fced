"""Hand-built inline SVG charts: no fonts, dates or random ids, so the same data gives the same
bytes (matplotlib's SVG backend needs hashsalt/metadata pinning and is 10x larger).

Coordinates are rounded to 0.1 px; all text is escaped. Each chart is an ``<svg>`` with
``role="img"`` and a ``<title>`` so a screen reader (and the browser test) can find it.
"""

from __future__ import annotations

import math
from html import escape

PASS_COLOR = "#3a9d5d"
UNRESOLVED_COLOR = "#9e9e9e"
STAGE_COLORS = {
    "policy": "#7b3294",
    "tool_selection": "#d7301f",
    "argument_names": "#fc8d59",
    "argument_values": "#fdbb84",
    "answer_correctness": "#4575b4",
    "answer_grounding": "#91bfdb",
}
SERIES = ("#4575b4", "#d7301f", "#3a9d5d", "#fc8d59", "#7b3294", "#91bfdb", "#8c6d31", "#636363")
MIN_BAR = 4.0  # px of one bar of grouped_bars with its 2 px gap: below it a bar would have no width left


def _f(x: float) -> str:
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11, extra: str = "") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" font-family="sans-serif"><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def _legend(items: list[tuple[str, str]], x: float, y: float, width: float) -> tuple[list[str], float]:
    out, cx, cy = [], x, y
    for label, color in items:
        w = 16 + 6.5 * len(label) + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        out.append(f'<rect x="{_f(cx)}" y="{_f(cy - 9)}" width="10" height="10" fill="{color}"/>')
        out.append(_text(cx + 14, cy, label, size=10))
        cx += w
    return out, cy + 10


def stacked_bars(title: str, rows: list[tuple[str, list[tuple[str, int, str]]]], width: int = 760) -> str:
    """One horizontal 100% bar per row; segments (name, count, colour); counts labelled if wide."""
    label_w, bar_h, gap = 150, 18, 6
    plot_w = width - label_w - 60
    legend_items: list[tuple[str, str]] = []
    for _, segs in rows:
        for name, _, color in segs:
            if (name, color) not in legend_items:
                legend_items.append((name, color))
    legend, ly = _legend(legend_items, 10, 16, width - 20)
    body = legend
    y0 = ly + 6
    for i, (label, segs) in enumerate(rows):
        y = y0 + i * (bar_h + gap)
        total = sum(c for _, c, _ in segs)
        body.append(_text(label_w - 6, y + 13, label, anchor="end"))
        x = float(label_w)
        for name, count, color in segs:
            if total == 0 or count == 0:
                continue
            w = plot_w * count / total
            body.append(
                f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{bar_h}" fill="{color}"><title>{escape(f"{label}: {name} {count} ({100 * count / total:.1f}%)")}</title></rect>'
            )
            if w > 26:
                body.append(_text(x + w / 2, y + 13, str(count), anchor="middle", size=10, extra=' fill="#fff"'))
            x += w
        body.append(_text(label_w + plot_w + 6, y + 13, f"n={total}", size=10))
    height = y0 + len(rows) * (bar_h + gap) + 6
    return _svg(width, height, title, body)


def grouped_bars(
    title: str,
    categories: list[str],
    series: list[tuple[str, list[tuple[float | None, float | None, float | None]]]],
    width: int = 760,
    y_label: str = "pass rate",
) -> str:
    """Vertical bars (value, ci_low, ci_high) per category and series, values in [0, 1], CI whiskers.
    The chart grows wider than ``width`` rather than draw a bar under ``MIN_BAR`` (its 2 px gap
    included): 25 policy conditions over a dozen hop counts drew rects of negative width."""
    left, bottom, right = 46, 46, 10
    n_cat, n_ser = max(len(categories), 1), max(len(series), 1)
    plot_w = max(width - left - right, n_cat * n_ser * MIN_BAR / 0.8)
    chart_w = left + plot_w + right
    legend, ly = _legend([(name, SERIES[i % len(SERIES)]) for i, (name, _) in enumerate(series)], left, 16, plot_w)
    top = ly + 8
    plot_h = 180
    height = top + plot_h + bottom
    body = legend
    for t in range(6):
        v = t / 5
        y = top + plot_h * (1 - v)
        body.append(f'<line x1="{left}" y1="{_f(y)}" x2="{_f(left + plot_w)}" y2="{_f(y)}" stroke="#ddd"/>')
        body.append(_text(left - 4, y + 4, f"{100 * v:.0f}%", anchor="end", size=10))
    body.append(_text(12, top + plot_h / 2, y_label, anchor="middle", size=10, extra=f' transform="rotate(-90 12 {_f(top + plot_h / 2)})"'))
    slot = plot_w / n_cat
    bar_w = min(36.0, slot * 0.8 / n_ser)
    for ci, cat in enumerate(categories):
        cx = left + slot * ci + slot / 2
        body.append(_text(cx, top + plot_h + 16, cat, anchor="middle", size=10))
        for si, (name, values) in enumerate(series):
            value, lo, hi = values[ci]
            if value is None:
                continue
            x = cx - bar_w * n_ser / 2 + si * bar_w
            y = top + plot_h * (1 - value)
            body.append(
                f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(bar_w - 2)}" height="{_f(top + plot_h - y)}" fill="{SERIES[si % len(SERIES)]}"><title>{escape(f"{cat} / {name}: {100 * value:.1f}%")}</title></rect>'
            )
            if lo is not None and hi is not None:
                mx = x + (bar_w - 2) / 2
                y1, y2 = top + plot_h * (1 - lo), top + plot_h * (1 - hi)
                body.append(f'<path d="M{_f(mx)} {_f(y1)}V{_f(y2)}M{_f(mx - 3)} {_f(y1)}h6M{_f(mx - 3)} {_f(y2)}h6" stroke="#222" fill="none"/>')
    return _svg(chart_w, height, title, body)


def hbars(title: str, items: list[tuple[str, float, str]], width: int = 760) -> str:
    """Horizontal bars for rates in [0, 1] with a right-hand annotation (e.g. '12/40')."""
    label_w, bar_h, gap = 200, 14, 5
    plot_w = width - label_w - 90
    body: list[str] = []
    for i, (label, value, note) in enumerate(items):
        y = 6 + i * (bar_h + gap)
        body.append(_text(label_w - 6, y + 11, label, anchor="end", size=10))
        w = plot_w * value
        body.append(f'<rect x="{label_w}" y="{_f(y)}" width="{_f(plot_w)}" height="{bar_h}" fill="#eee"/>')
        body.append(
            f'<rect x="{label_w}" y="{_f(y)}" width="{_f(w)}" height="{bar_h}" fill="#d7301f"><title>{escape(f"{label}: {100 * value:.1f}% ({note})")}</title></rect>'
        )
        body.append(_text(label_w + plot_w + 6, y + 11, f"{100 * value:.1f}% {note}", size=10))
    height = 12 + len(items) * (bar_h + gap)
    return _svg(width, height, title, body)


def radar(
    title: str, axes: list[str], series: list[tuple[str, list[float | None]]], size: int = 250, reference: tuple[str, list[float | None]] | None = None
) -> str:
    """Spider chart, each axis 0..1; a missing value (None) is drawn at 0 and marked 'n/a' in
    the tooltip. ``reference`` (e.g. the all-agents mean) is drawn dashed grey underneath."""
    items = [(name, SERIES[i % len(SERIES)]) for i, (name, _) in enumerate(series)]
    if reference is not None:
        items.append((reference[0], "#777"))
    width = size + 150
    legend, ly = _legend(items, 10, 16, width - 20)
    r = size / 2 - 30
    cx, cy = width / 2, ly + 24 + r
    body = legend
    n = len(axes)

    def point(i: int, v: float) -> tuple[float, float]:
        a = -math.pi / 2 + 2 * math.pi * i / n
        return cx + r * v * math.cos(a), cy + r * v * math.sin(a)

    def poly(values: list[float | None], style: str, tip: str) -> str:
        pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(i, v or 0.0) for i, v in enumerate(values)))
        return f'<polygon points="{pts}" {style}><title>{escape(tip)}</title></polygon>'

    def tip(name: str, values: list[float | None]) -> str:
        return f"{name}: " + ", ".join(f"{a} {'n/a' if v is None else f'{v:.3f}'}" for a, v in zip(axes, values))

    for ring in (0.25, 0.5, 0.75, 1.0):
        pts = " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(i, ring) for i in range(n)))
        body.append(f'<polygon points="{pts}" fill="none" stroke="#ddd"/>')
    for i, ax in enumerate(axes):
        x, y = point(i, 1.0)
        body.append(f'<line x1="{_f(cx)}" y1="{_f(cy)}" x2="{_f(x)}" y2="{_f(y)}" stroke="#ccc"/>')
        lx, ly2 = point(i, 1.12)
        anchor = "middle" if abs(lx - cx) < 5 else ("start" if lx > cx else "end")
        body.append(_text(lx, ly2 + 4, ax, anchor=anchor, size=10))
    if reference is not None:
        body.append(poly(reference[1], 'fill="none" stroke="#777" stroke-width="1.5" stroke-dasharray="4 3"', tip(*reference)))
    for si, (name, values) in enumerate(series):
        color = SERIES[si % len(SERIES)]
        body.append(poly(values, f'fill="{color}" fill-opacity="0.15" stroke="{color}" stroke-width="2"', tip(name, values)))
    return _svg(width, cy + r + 24, title, body)


def value_bars(title: str, categories: list[str], series: list[tuple[str, list[float]]], width: int = 760, y_label: str = "") -> str:
    """Horizontal grouped bars for non-negative quantities (not rates): one row per category, one
    bar per series, scaled to the largest value, each labelled with its value."""
    label_w, bar_h, gap, group_gap = 200, 11, 2, 8
    plot_w = width - label_w - 70
    legend, ly = _legend([(name, SERIES[i % len(SERIES)]) for i, (name, _) in enumerate(series)], 10, 16, width - 20)
    body = legend
    top = ly + 8
    if y_label:
        body.append(_text(label_w, top + 2, y_label, size=10, extra=' fill="#555"'))
        top += 10
    peak = max((v for _, values in series for v in values), default=0.0) or 1.0
    group_h = len(series) * (bar_h + gap) + group_gap
    for ci, cat in enumerate(categories):
        y0 = top + ci * group_h
        body.append(_text(label_w - 6, y0 + group_h / 2, cat, anchor="end", size=10))
        for si, (name, values) in enumerate(series):
            v = values[ci]
            y = y0 + si * (bar_h + gap)
            w = plot_w * v / peak
            body.append(
                f'<rect x="{label_w}" y="{_f(y)}" width="{_f(w)}" height="{bar_h}" fill="{SERIES[si % len(SERIES)]}"><title>{escape(f"{cat} / {name}: {v:.2f}")}</title></rect>'
            )
            body.append(_text(label_w + w + 4, y + bar_h - 2, f"{v:.2f}", size=9))
    height = top + len(categories) * group_h + 6
    return _svg(width, height, title, body)
