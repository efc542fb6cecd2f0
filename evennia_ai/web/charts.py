"""Inline SVG charts for the dashboard: no JavaScript, no CDN, works offline.

Every function returns a ready ``<svg>`` element marked safe for templates; all text in it
(labels, section names) is escaped here.
"""

from __future__ import annotations

import zlib

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evennia_ai.formatting import count, money

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
TOKEN_COLOUR = "#4e79a7"
COST_COLOUR = "#e15759"
ERROR_COLOUR = "#b71c1c"


# Prompt sections in their usual order; each gets its own palette colour (others are hashed).
KNOWN_SECTIONS = (
    "system_prompt",
    "character_context",
    "entity_context",
    "semantic_memories",
    "context_buffer",
    "goals",
    "conversation_history",
    "pending_event",
    "tool_result",
    "tools",
)


def colour_for(name: str) -> str:
    """A stable colour for a section name (the same name gets the same colour on every page)."""
    name = str(name)
    if name in KNOWN_SECTIONS:
        return PALETTE[KNOWN_SECTIONS.index(name) % len(PALETTE)]
    return PALETTE[zlib.crc32(name.encode("utf8")) % len(PALETTE)]


def _num(value: float) -> str:
    return f"{value:.1f}"


def _short(value: float) -> str:
    """1234 -> 1.2k, 2500000 -> 2.5M."""
    value = float(value)
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:g}"


def totals(points: list[dict]) -> dict:
    """Tokens and cost summed over ``points`` (a chart's caption), and how many had errors."""
    return {
        "tokens": sum(int(p.get("tokens") or 0) for p in points),
        "cost": sum(float(p.get("cost") or 0.0) for p in points),
        "errors": sum(1 for p in points if p.get("error")),
    }


def usage_chart(points: list[dict], title: str, width: int = 540, height: int = 200) -> SafeString:
    """Tokens as bars (left scale) and cost as a line (right scale) over ``points``.

    Cost is drawn even when it is zero (a model with no known price), so the chart always
    shows both. A point with an ``error`` is marked with a red ``!`` above its bar (and its
    hover title says what failed), so a failed tick is not an unexplained gap.

    Args:
        points: ``[{"label": str, "tokens": int, "cost": float, "error": str}, ...]`` in time
            order (``error`` optional).
        title: Accessible title of the chart.
        width: Width in px.
        height: Height in px.
    """
    title_html = escape(title)
    if not points:
        return mark_safe(
            f'<svg class="ai-chart" role="img" width="{width}" height="40" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{title_html}</title>'
            '<text x="4" y="24" fill="#666">No usage recorded yet.</text></svg>'
        )
    left, right, top, bottom = 48, 56, 16, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    max_tokens = max(max(int(p.get("tokens") or 0) for p in points), 1)
    max_cost = max(float(p.get("cost") or 0.0) for p in points)
    cost_scale = max_cost or 1.0  # all zero: the line lies on the axis
    slot = plot_w / len(points)
    bar_w = max(1.0, min(slot * 0.7, 36.0))
    parts = [
        f'<svg class="ai-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{title_html}</title>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" font-size="10" fill="{TOKEN_COLOUR}">'
        f"{escape(_short(max_tokens))}</text>",
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" font-size="10" fill="#666">0</text>',
        f'<text x="4" y="{top + plot_h / 2}" font-size="10" fill="{TOKEN_COLOUR}">tokens</text>',
        f'<text class="ai-cost-axis" x="{left + plot_w + 4}" y="{top + 8}" font-size="10" '
        f'fill="{COST_COLOUR}">{escape(money(max_cost))}</text>'
        f'<text x="{left + plot_w + 4}" y="{top + plot_h / 2}" font-size="10" '
        f'fill="{COST_COLOUR}">cost</text>',
    ]
    line = []
    step = max(1, len(points) // 8)  # at most ~8 axis labels
    for i, point in enumerate(points):
        tokens = int(point.get("tokens") or 0)
        cost = float(point.get("cost") or 0.0)
        error = str(point.get("error") or "")
        label = escape(str(point.get("label", "")))
        bar_h = plot_h * tokens / max_tokens
        x = left + i * slot + (slot - bar_w) / 2
        hover = f"{label}: {count(tokens)} tokens, {money(cost)}"
        if error:
            hover += f"; failed: {escape(error[:200])}"
        parts.append(
            f'<rect class="ai-bar{" ai-bar-error" if error else ""}" x="{_num(x)}" '
            f'y="{_num(top + plot_h - bar_h)}" width="{_num(bar_w)}" height="{_num(bar_h)}" '
            f'fill="{ERROR_COLOUR if error else TOKEN_COLOUR}" opacity="0.8">'
            f"<title>{hover}</title></rect>"
        )
        if error:
            parts.append(
                f'<text class="ai-error-mark" x="{_num(x + bar_w / 2)}" '
                f'y="{_num(max(top - 4, top + plot_h - bar_h - 3))}" text-anchor="middle" '
                f'font-size="12" font-weight="bold" fill="{ERROR_COLOUR}">!<title>{hover}</title></text>'
            )
        cx = left + i * slot + slot / 2
        cy = top + plot_h - plot_h * cost / cost_scale
        line.append((f"{_num(cx)},{_num(cy)}", hover))
        if i % step == 0:
            parts.append(
                f'<text x="{_num(left + i * slot + slot / 2)}" y="{height - 10}" '
                f'text-anchor="middle" font-size="10" fill="#666">{label}</text>'
            )
    if len(line) > 1:
        parts.append(
            f'<polyline class="ai-cost-line" points="{" ".join(p for p, _ in line)}" fill="none" '
            f'stroke="{COST_COLOUR}" stroke-width="2"/>'
        )
    for point, hover in line:
        x, y = point.split(",")
        parts.append(
            f'<circle class="ai-cost-point" cx="{x}" cy="{y}" r="2.5" fill="{COST_COLOUR}">'
            f"<title>{hover}</title></circle>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def largest_total(section_maps) -> int:
    """The largest prompt among ``{section: tokens}`` maps: the scale bars shown together share."""
    return max((sum(int(v or 0) for v in (m or {}).values()) for m in section_maps), default=0)


def section_bar(
    sections: dict,
    width: int = 320,
    height: int = 14,
    scale: int | None = None,
    error: str | None = None,
) -> SafeString:
    """One stacked bar: the prompt's token count per section, each with a hover title.

    Args:
        sections: ``{section name: tokens}`` as a trace records it.
        width: Width in px of a bar of ``scale`` tokens.
        height: Height in px.
        scale: The token count a full-width bar stands for (the largest prompt of the bars
            shown together, so they compare by size); None: this bar's own total.
        error: The tick's error, if it failed: the bar is outlined in red and says so (a tick
            that failed before its prompt was built shows a red "failed" mark, not a gap).
    """
    items = [(str(k), int(v or 0)) for k, v in (sections or {}).items() if int(v or 0) > 0]
    total = sum(v for _, v in items)
    failed = escape(f"failed: {error[:200]}") if error else ""
    if not total:
        if error:
            return mark_safe(
                f'<span class="ai-error ai-failed-mark" title="{failed}">&#10007; failed</span>'
            )
        return mark_safe('<span class="text-muted">no sections</span>')
    scale = max(int(scale or 0), total)
    full = width * total / scale
    parts = [
        f'<svg class="ai-sections{" ai-sections-error" if error else ""}" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" data-tokens="{total}">'
        f"<title>{count(total)} prompt tokens by section"
        f"{f' ({100 * total / scale:.0f}% of the largest shown)' if scale > total else ''}"
        f"{'; ' + failed if failed else ''}</title>"
    ]
    x = 0.0
    for name, tokens in items:
        w = full * tokens / total
        parts.append(
            f'<rect x="{_num(x)}" y="0" width="{_num(w)}" height="{height}" '
            f'fill="{colour_for(name)}"><title>{escape(name)}: {count(tokens)} tokens '
            f"({100 * tokens / total:.0f}%)</title></rect>"
        )
        x += w
    if error:
        parts.append(
            f'<rect x="0.5" y="0.5" width="{_num(max(full - 1, 1))}" height="{height - 1}" '
            f'fill="none" stroke="{ERROR_COLOUR}" stroke-width="1.5"/>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def legend(names) -> list[dict]:
    """``[{"name", "colour"}]`` for a legend under section bars (same colours as the bars)."""
    return [{"name": str(name), "colour": colour_for(name)} for name in names]
