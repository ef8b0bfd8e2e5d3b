"""Grouped bar charts as inline SVG, written by hand.

The eval report needs two small charts (pass rate and tokens per case, with vs without the
skill). Drawing them directly is about a hundred lines, adds no dependency (matplotlib would
bring numpy and a font cache for two charts), and gives the same bytes for the same numbers, so
the page is testable and diffable across iterations.
"""

from __future__ import annotations

from html import escape
from typing import Callable, Sequence

HEIGHT = 240
TOP, BOTTOM, LEFT, RIGHT = 36, 48, 64, 16
BAR, GAP, GROUP_GAP = 22, 4, 26
TICKS = 4
LABEL_CHARS = 14


def _nice_max(value: float) -> float:
    """The smallest 1/2/5 × 10^k at or above ``value`` (an axis that ends on a round number)."""
    if value <= 0:
        return 1.0
    exp = 1.0
    while exp * 10 <= value:
        exp *= 10
    while exp > value:
        exp /= 10
    for step in (1, 2, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _legend_step(name: str) -> int:
    return 24 + 7 * len(name)  # swatch, gap, and about 7 px per character at 11 px


def grouped_bars(title: str, categories: Sequence[str], series: Sequence[tuple[str, str, Sequence[float | None]]],
                 *, fmt: Callable[[float], str] = lambda v: f"{v:g}", max_value: float | None = None) -> str:
    """An SVG bar chart: one group per category, one bar per series (name, colour, values).
    A value None (no data) draws no bar."""
    values = [v for _, _, vs in series for v in vs if v is not None]
    top = max_value if max_value is not None else _nice_max(max(values, default=0.0))
    group_w = len(series) * BAR + (len(series) - 1) * GAP
    plot_w = max(len(categories), 1) * (group_w + GROUP_GAP)
    legend_w = sum(_legend_step(name) for name, _, _ in series)
    width = LEFT + max(plot_w, legend_w) + RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    y = lambda v: TOP + plot_h - (v / top) * plot_h if top else TOP + plot_h  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{HEIGHT}" '
           f'viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(title)}</title>",
           f'<text x="{LEFT}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    for i in range(TICKS + 1):
        v = top * i / TICKS
        yy = y(v)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e2e8f0"/>')
        out.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end" fill="#4a5568">{escape(fmt(v))}</text>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#4a5568"/>')
    for gi, category in enumerate(categories):
        x0 = LEFT + GROUP_GAP / 2 + gi * (group_w + GROUP_GAP)
        for si, (name, colour, vals) in enumerate(series):
            v = vals[gi] if gi < len(vals) else None
            if v is None:
                continue
            x = x0 + si * (BAR + GAP)
            yy = y(min(v, top))
            out.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="{BAR}" height="{TOP + plot_h - yy:.1f}" fill="{colour}">'
                       f"<title>{escape(f'{category} {name}: {fmt(v)}')}</title></rect>")
        label = category if len(category) <= LABEL_CHARS else category[: LABEL_CHARS - 1] + "…"
        out.append(f'<text x="{x0 + group_w / 2:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{escape(label)}</text>')
    lx = LEFT
    for name, colour, _ in series:
        out.append(f'<rect x="{lx}" y="{HEIGHT - 18}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14}" y="{HEIGHT - 9}">{escape(name)}</text>')
        lx += _legend_step(name)
    out.append("</svg>")
    return "\n".join(out)
