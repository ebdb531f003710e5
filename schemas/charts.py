"""Charts as inline SVG: no script, no library, nothing fetched. Used by the run report (``runs/<id>.html``)
and by ``zan serve``'s run history page.

A chart is a row of groups (a run, a version) of stacked bars (change classes, stages), labelled below,
with a legend and each bar's value in its ``<title>`` (a browser shows it on hover). Its natural size is in
pixels (wide enough for its title and legend); a narrower page shrinks it (``max-width: 100%``) rather than
overflowing.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

PALETTE = ("#3b6ea5", "#e0923a", "#5a9e5a", "#c4504f", "#8a6bb3", "#8c6d5a", "#d77fb9", "#7f7f7f", "#b5b83c")


def stacked_bars(
    title: str,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    unit: str = "",
    height: int = 200,
) -> str:
    """One SVG: for each label a bar stacked from ``series`` (name → one value per label), in that order."""
    esc = html.escape
    n = len(labels)
    bar, gap, left, bottom, top = 26, 10, 48, 70, 22  # the bottom holds labels written at a slant
    width = max(460, left + max(n, 1) * (bar + gap) + 10)  # room for the title and the legend
    column = max(90, 20 + 7 * max((len(name) for name in series), default=0))  # one legend entry
    per_row = max(1, (width - left) // column)
    legend = 18 * -(-len(series) // per_row)
    totals = [sum(float(values[i] or 0) for values in series.values()) for i in range(n)]
    peak = max(totals, default=0) or 1.0
    scale = (height - bottom - top) / peak
    parts = [
        f'<svg class="chart" role="img" width="{width}" height="{height + legend}" '
        f'viewBox="0 0 {width} {height + legend}" xmlns="http://www.w3.org/2000/svg" '
        f'style="max-width:100%;height:auto" font-size="12" font-family="system-ui,sans-serif">',
        f"<title>{esc(title)}</title>",
        f'<text x="{left}" y="12" font-weight="bold">{esc(title)}</text>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 6}" y2="{height - bottom}" stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_number(peak)}{esc(unit)}</text>',
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
    ]
    for i, label in enumerate(labels):
        x = left + gap / 2 + i * (bar + gap)
        y = float(height - bottom)
        for k, (name, values) in enumerate(series.items()):
            value = float(values[i] or 0)
            if value <= 0:
                continue
            h = value * scale
            y -= h
            colour = PALETTE[k % len(PALETTE)]
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar}" height="{max(h, 0.5):.1f}" fill="{colour}">'
                f"<title>{esc(str(label))}: {esc(name)} {_number(value)}{esc(unit)}</title></rect>"
            )
        short = str(label) if len(str(label)) <= 12 else "…" + str(label)[-11:]
        lx, ly = x + bar / 2, height - bottom + 12
        parts.append(
            f'<text x="{lx:.1f}" y="{ly}" text-anchor="end" transform="rotate(-35 {lx:.1f} {ly})">{esc(short)}'
            f"<title>{esc(str(label))}</title></text>"
        )
    for k, name in enumerate(series):
        lx, ly = left + (k % per_row) * column, height + 12 + 18 * (k // per_row)
        parts.append(f'<rect x="{lx}" y="{ly - 8}" width="10" height="10" fill="{PALETTE[k % len(PALETTE)]}"/>')
        parts.append(f'<text x="{lx + 14}" y="{ly + 1}">{esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"
