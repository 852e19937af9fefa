"""Hand-written SVG charts (no plotting library is a dependency): a log-log line chart and a bar chart."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd")
FONT = 'font-family="Helvetica, Arial, sans-serif"'


def _ticks(lo: float, hi: float) -> list[float]:
    return [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def _fmt(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:g}"
    return f"{v:.3g}"


def loglog_chart(title: str, x_label: str, y_label: str, series: dict[str, Sequence[tuple[float, float]]],
                 width: int = 640, height: int = 400) -> str:
    """Lines with markers on log-log axes; ``series`` maps a label to (x, y) points (all > 0)."""
    points = [p for s in series.values() for p in s if p[0] > 0 and p[1] > 0]
    if not points:
        raise ValueError("nothing to plot")
    xs = _ticks(min(p[0] for p in points), max(p[0] for p in points))
    ys = _ticks(min(p[1] for p in points), max(p[1] for p in points))
    left, right, top, bottom = 70, 190, 40, 50
    pw, ph = width - left - right, height - top - bottom
    lx0, lx1, ly0, ly1 = math.log10(xs[0]), math.log10(xs[-1]), math.log10(ys[0]), math.log10(ys[-1])
    lx1 = lx1 if lx1 > lx0 else lx0 + 1
    ly1 = ly1 if ly1 > ly0 else ly0 + 1

    def px(x: float) -> float:
        return left + (math.log10(x) - lx0) / (lx1 - lx0) * pw

    def py(y: float) -> float:
        return top + ph - (math.log10(y) - ly0) / (ly1 - ly0) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="24" {FONT} font-size="15" font-weight="bold">{escape(title)}</text>']
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{top + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" {FONT} font-size="11" text-anchor="middle">'
                   f'{_fmt(x)}</text>')
    for y in ys:
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" {FONT} font-size="11" text-anchor="end">'
                   f'{_fmt(y)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 12}" {FONT} font-size="12" text-anchor="middle">'
               f'{escape(x_label)}</text>')
    out.append(f'<text x="16" y="{top + ph / 2}" {FONT} font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + ph / 2})">{escape(y_label)}</text>')
    for i, (label, pts) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        pts = [p for p in pts if p[0] > 0 and p[1] > 0]
        path = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}"><title>{escape(label)}: '
                       f'{_fmt(x)} -> {y:.3g}</title></circle>')
        ly = top + 14 + 20 * i
        out.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" stroke="{color}" '
                   f'stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 38}" y="{ly + 4}" {FONT} font-size="11">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def bar_chart(title: str, unit: str, categories: Sequence[str], series: dict[str, Sequence[float]],
              width: int = 760) -> str:
    """Horizontal grouped bars: one group per category, one bar per series."""
    if not categories:
        raise ValueError("nothing to plot")
    left, right, top, bottom = 210, 30, 60, 40
    bar, gap = 7, 8
    group = bar * len(series) + gap
    height = top + bottom + group * len(categories)
    pw = width - left - right
    vmax = max((v for values in series.values() for v in values), default=1.0) or 1.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="22" {FONT} font-size="15" font-weight="bold">{escape(title)}</text>']
    for i, label in enumerate(series):
        out.append(f'<rect x="{10 + 190 * i}" y="34" width="12" height="10" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{26 + 190 * i}" y="43" {FONT} font-size="11">{escape(label)}</text>')
    step = 10 ** math.floor(math.log10(vmax))
    step = step / 2 if vmax / step < 4 else step
    tick = 0.0
    while tick <= vmax * 1.0001:
        x = left + tick / vmax * pw
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 14}" {FONT} font-size="10" text-anchor="middle">'
                   f'{tick:g}</text>')
        tick += step
    out.append(f'<text x="{left + pw / 2}" y="{height - 8}" {FONT} font-size="11" text-anchor="middle">'
               f'{escape(unit)}</text>')
    for c, category in enumerate(categories):
        y0 = top + c * group
        out.append(f'<text x="{left - 6}" y="{y0 + bar * len(series) / 2 + 4:.1f}" {FONT} font-size="11" '
                   f'text-anchor="end">{escape(category)}</text>')
        for i, (label, values) in enumerate(series.items()):
            value = values[c]
            out.append(f'<rect x="{left}" y="{y0 + i * bar}" width="{max(0.5, value / vmax * pw):.1f}" '
                       f'height="{bar - 1}" fill="{COLORS[i % len(COLORS)]}"><title>{escape(category)} — '
                       f'{escape(label)}: {value:.3g} {escape(unit)}</title></rect>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
