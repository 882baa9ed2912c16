"""Shared look and text helpers for every panel: fonts, colours, safe readable token text.

Token pieces can hold any characters (including '<script>'), so every piece that reaches
HTML or a plotly label goes through `html_piece` / `plot_piece`, which make whitespace
visible and escape markup.
"""
from __future__ import annotations

import html
import re
import textwrap

import plotly.io as pio

from viz.text import count, number_marks, t

# Every figure's template, as plotly's default rather than in each layout: plotly.py deep-copies a
# template named in a layout for each figure (most of what building the viewer bundle costs), while
# the default is linked as it is. The figures' JSON is the same.
TEMPLATE = "plotly_white"
pio.templates.default = TEMPLATE

FONT = dict(family="Inter, 'Segoe UI', Helvetica, Arial, sans-serif", size=14, color="#1a202c")
TITLE_FONT = dict(size=17)
TITLE_PAD = 12  # px from a figure's top to its title
# Plotly lifts a title of several lines (yanchor "top") by 0.7 of its font size above where one line stands (its
# cap-height shift is given to a single line only): 3 px past the figure's top, Chinese glyphs cut. Given back as
# padding, and as margin, so the plot under it keeps its place (assets/viewer_phone.js does the same when it wraps).
CAP_SHIFT = 0.7
# Eight pastel chip colours, cycled by token position.
PASTELS = ("#fde2e4", "#e2ece9", "#dfe7fd", "#fff1c1", "#e8dff5", "#d7f2f7", "#fce1cf", "#e4f4d7")
PROMPT_COLOR = "#3b6fd8"  # prompt tokens (blue)
GEN_COLOR = "#e07b1a"  # generated tokens (orange)
NEW_COLOR = "#c0262d"  # the newest / sampled token (red)
MUTED = "#a0aec0"  # filtered / background (grey): marks and bars
MUTED_TEXT = "#6b7280"  # filtered, as text: the grey that still reads at 4.5:1 on white
CLEAR = "rgba(0,0,0,0)"  # a figure's paper and plot area: the page's background shows through
# White at 0, dark blue at 1; the low end is stretched so small attention weights stay visible.
WEIGHT_SCALE = [[0.0, "#ffffff"], [0.02, "#eef3fb"], [0.1, "#c6d8f0"], [0.3, "#7fa6dc"], [0.6, "#3b6fd8"], [1.0, "#0b2a6b"]]

_VISIBLE = {" ": "·", "\n": "↵", "\t": "→", "\r": "␍"}


def visible(piece: str) -> str:
    """Whitespace and control characters made visible: ' a\\n' -> '·a↵'; '' -> '∅'."""
    if piece == "":
        return "∅"
    out = []
    for c in piece:
        if c in _VISIBLE:
            out.append(_VISIBLE[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(chr(0x2400 + ord(c)) if ord(c) < 0x20 else "␡")
        else:
            out.append(c)
    return "".join(out)


def truncate(s: str, n: int) -> str:
    return s if len(s) <= n else s[: max(n - 1, 1)] + "…"


def html_piece(piece: str, n: int | None = None) -> str:
    """A piece ready for HTML: visible whitespace, optionally truncated, escaped."""
    v = visible(piece)
    return html.escape(truncate(v, n) if n else v)


def plot_piece(piece: str, n: int | None = 16) -> str:
    """A piece ready for plotly text, ticks and hover (plotly renders some HTML: escape it)."""
    v = visible(piece)
    return html.escape(truncate(v, n) if n else v, quote=False)


def plot_text(s: str) -> str:
    """Any other text from the records for plotly labels (escaped, whitespace kept)."""
    return html.escape(s, quote=False)


_CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


# A language written without spaces: a character is twice as wide; a Latin word among them is kept whole; a closing
# mark never begins a line (it stays at the end of the line before, as Chinese typesetting does). The same rule as
# assets/viewer_phone.js's fitWide, which wraps on the page what a phone draws narrower.
_UNITS = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]+|\s+")
CLOSING_MARKS = "、。，．：；！？）」』】》〉〕｝”’…·%)]}.,:;!?"


def wide_lines(sentence: str, width: int) -> list[str]:
    lines, line, w = [], "", 0
    for u in _UNITS.findall(sentence):
        uw = 2 if _CJK.match(u) else len(u)
        if line and w + uw > width and u[0] not in CLOSING_MARKS and u.strip():
            lines.append(line.rstrip())
            line, w = "", 0
        if not line and not u.strip():
            continue
        line, w = line + u, w + uw
    return lines + [line.rstrip()] if line else lines


def plot_lines(sentence: str, width: int = 60) -> str:
    """A plain sentence, escaped, in lines of about `width` characters joined by <br> (plotly's titles and annotations
    do not wrap, and a phone cuts a long line at both ends): at spaces, or in a language written without them by
    characters (twice as wide: wide_lines)."""
    if _CJK.search(sentence):
        lines = wide_lines(sentence, width)
    else:
        lines = textwrap.wrap(sentence, width, break_long_words=False, break_on_hyphens=False)
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def plot_separators() -> str:
    """Plotly's `separators` (decimal mark, then thousands mark) of the language spoken: ".," in English, ", " in
    French, so an axis reads 0,5 where the page's sentences write 0,5."""
    group, decimal, _, _ = number_marks()
    return decimal + group


def base_layout(title: str, *, height: int = 420, **kw) -> dict:
    """The common layout: white template, readable font, short title, compact margins, and a
    transparent paper and plot area, so that a figure sits on the page's own background in the light
    theme and the dark (the page's script and stylesheet give the text and grid the dark theme's colours:
    assets/viewer_plot.js, assets/style.css)."""
    layout = dict(
        paper_bgcolor=CLEAR,
        plot_bgcolor=CLEAR,
        title=dict(text=title, font=TITLE_FONT, x=0.01, xanchor="left", y=1.0, yref="container", yanchor="top", pad=dict(t=TITLE_PAD)),
        font=FONT,
        height=height,
        margin=dict(l=60, r=20, t=60, b=50),
        hoverlabel=dict(font_size=13, bgcolor="white"),
        separators=plot_separators(),
    )
    layout.update(kw)
    if "<br>" in title:  # (see CAP_SHIFT)
        shift = round(CAP_SHIFT * TITLE_FONT["size"])
        layout["title"]["pad"] = dict(t=TITLE_PAD + shift)
        layout["margin"] = dict(layout["margin"], t=layout["margin"].get("t", 60) + shift)
        layout["height"] += shift
    return layout


def significant(x: float, digits: int = 3) -> str:
    """`x` to `digits` significant digits, as f"{x:.3g}" writes it, with the language's decimal mark: 1.66 (French 1,66)."""
    return f"{float(x):.{digits}g}".replace(".", number_marks()[1])


def human_bytes(n: float) -> str:
    """1658880 -> '1.66 MB' (decimal units, as people read them; the number the language's way)."""
    n = float(n)
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return count(int(n), "byte") if unit == "bytes" else f"{significant(n)} {unit}"
        n /= 1000.0
    return f"{significant(n)} TB"


# One name for one thing: blocks are numbered from 0, as in the hook names (`blocks.{i}`); a
# depth of the residual stream is "embedding" (the input to block 0) or "after block i".
def block_label(i: int) -> str:
    """'block 3': block i, numbered from 0 as the hook names number it."""
    return t("style.block", i=int(i))


def depth_label(row: int, n_layers: int | None = None) -> str:
    """Row `row` of a residual-stream stack of L + 1 rows: 'embedding', then 'after block i'
    (row i + 1), and with `n_layers`, '(the last)' on the last row."""
    row = int(row)
    if row == 0:
        return t("style.embedding")
    last = n_layers is not None and row == int(n_layers)
    return t("style.after_block_last" if last else "style.after_block", i=row - 1)
