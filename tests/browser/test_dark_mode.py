"""Dark mode: every text on the page readable against what is behind it, and every figure themed.

Gradio puts the class `dark` on <body> when its theme is dark (`?__theme=dark`, or the system's
preference); our own HTML (assets/style.css) and the step panels' figures (assets/viewer_plot.js)
follow it. The offline page (assets/viewer.html) follows `prefers-color-scheme`.

Contrast is measured the way WCAG does (relative luminance), for every text node a person can see,
against its effective background: the first opaque background among its ancestors, with the
translucent ones above it composited in. Text drawn by Plotly (SVG) is measured against the plot's
paper, composited over the page behind it; text on a heatmap's cells (whose colour Plotly picks to
contrast with the cell) is left out.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from .harness import ROOT, new_page, scroll_through, wait_model_loaded

pytestmark = pytest.mark.browser

MIN_RATIO = 4.5
MIN_SHARE = 0.99  # of the visible text's characters
STEP_PANELS = ("dist-plot", "emb-plot", "attn-plot", "attn-overview", "kv-plot")

# Every visible text's contrast: [{text, ratio, fg, bg, where, n}], n its characters.
CONTRAST_JS = r"""
() => {
  const parse = (s) => {
    const h = s && s.match(/^#([0-9a-f]{6})$/i);
    if (h) { const n = parseInt(h[1], 16); return [n >> 16, (n >> 8) & 255, n & 255, 1]; }
    if (s === 'white') return [255, 255, 255, 1];
    const m = s && s.match(/rgba?\(([^)]+)\)/);
    if (!m) return s === 'transparent' || !s ? [0, 0, 0, 0] : null;
    const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const over = (top, under) => { // top composited over an opaque `under`
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const canvas = () => {
    const h = parse(getComputedStyle(document.documentElement).backgroundColor);
    const b = parse(getComputedStyle(document.body).backgroundColor);
    if (h && h[3] > 0) return over(h, [255, 255, 255, 1]);
    if (b && b[3] > 0) return over(b, [255, 255, 255, 1]);
    return [255, 255, 255, 1];
  };
  // the opaque colour behind `el` (its own background included), and the opacity its subtree is drawn with
  const behind = (el) => {
    const layers = []; let opacity = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const cs = getComputedStyle(e);
      opacity *= Number(cs.opacity);
      const c = parse(cs.backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = layers.length && layers[layers.length - 1][3] >= 1 ? layers.pop() : canvas();
    while (layers.length) bg = over(layers.pop(), bg);
    return { bg, opacity };
  };
  const where = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement)
      parts.push(e.id ? '#' + e.id : e.tagName.toLowerCase() + (e.classList[0] ? '.' + e.classList[0] : ''));
    return parts.reverse().join(' > ');
  };
  const out = [];
  // 1. HTML text
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || !el || el.closest('svg, script, style, noscript, template, textarea, option')) continue;
    if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: false })) continue;
    const r = document.createRange(); r.selectNodeContents(n);
    const rect = r.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) continue;
    const cs = getComputedStyle(el);
    const { bg, opacity } = behind(el);
    let fg = parse(cs.color); if (!fg) continue;
    fg = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    out.push({ text: text.slice(0, 40), n: text.length, ratio: ratio(fg, bg), fg: fg.slice(0, 3), bg: bg.slice(0, 3), where: where(el) });
  }
  // 2. text drawn by Plotly, against the plot's paper over the page behind the plot
  document.querySelectorAll('.js-plotly-plot').forEach((plot) => {
    const full = plot._fullLayout; if (!full) return;
    const rect = plot.getBoundingClientRect(); if (rect.width < 2 || rect.height < 2 || !plot.checkVisibility({ visibilityProperty: true })) return;
    const paper = parse(full.paper_bgcolor) || [255, 255, 255, 1];
    const bg = over(paper, behind(plot.parentElement).bg);
    plot.querySelectorAll('text').forEach((t) => {
      const text = t.textContent.trim(); if (!text) return;
      if (t.closest('.heatmaplayer, .hm, .hoverlayer')) return; // on a cell of its own colour (Plotly picks a contrasting one)
      const b = t.getBoundingClientRect(); if (b.width < 2 || b.height < 2) return;
      const cs = getComputedStyle(t);
      if (cs.visibility === 'hidden' || cs.display === 'none' || Number(cs.opacity) === 0) return;
      let fg = parse(cs.fill); if (!fg) return;
      const fo = cs.fillOpacity === undefined ? 1 : Number(cs.fillOpacity);
      fg = over([fg[0], fg[1], fg[2], fg[3] * fo], bg);
      out.push({ text: text.slice(0, 40), n: text.length, ratio: ratio(fg, bg), fg: fg.slice(0, 3), bg: bg.slice(0, 3),
                 where: 'plot ' + (plot.closest('[id]') || {}).id });
    });
  });
  return out;
}
"""

# Each drawn figure's paper and font colour, and its paper's luminance: {id: {paper, font, paper_lum, font_lum}}
FIGURES_JS = r"""
(ids) => {
  const parse = (s) => { if (s === 'white') return [255, 255, 255, 1]; const m = s && s.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const hex = (s) => { const m = s && s.match(/^#([0-9a-f]{6})$/i); if (!m) return null;
    const n = parseInt(m[1], 16); return [n >> 16, (n >> 8) & 255, n & 255, 1]; };
  const col = (s) => parse(s) || hex(s);
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  const lum = (c) => c ? 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]) : null;
  const out = {};
  ids.forEach((id) => {
    const plots = Array.from(document.querySelectorAll('#' + id + ' .js-plotly-plot')).filter((p) => p._fullLayout && !p.closest('.colour-scale') && p.getBoundingClientRect().height > 2
      && p.checkVisibility({ visibilityProperty: true }));
    const p = plots[0]; if (!p) return;
    const paper = col(p._fullLayout.paper_bgcolor), font = col(p._fullLayout.font.color);
    out[id] = { paper: p._fullLayout.paper_bgcolor, font: p._fullLayout.font.color, paper_lum: lum(paper), paper_alpha: paper && paper[3],
                font_lum: lum(font) };
  });
  return out;
}
"""


def _scroll_through(page):
    """Down the whole page a screen at a time (what scrolls into view draws), then back to the top."""
    h = page.evaluate("() => document.documentElement.scrollHeight")
    vh = page.viewport_size["height"]
    for y in range(0, h + vh, max(vh - 100, 200)):
        page.evaluate(f"() => window.scrollTo(0, {y})")
        page.wait_for_timeout(150)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(200)


def contrast_summary(items: list[dict]) -> tuple[float, float, list[dict]]:
    """(share of characters at >= MIN_RATIO, the worst ratio, the worst offenders)."""
    total = sum(i["n"] for i in items)
    ok = sum(i["n"] for i in items if i["ratio"] >= MIN_RATIO)
    bad = sorted((i for i in items if i["ratio"] < MIN_RATIO), key=lambda i: i["ratio"])
    worst = min((i["ratio"] for i in items), default=21.0)
    return (ok / total if total else 1.0), worst, bad


def _report(bad: list[dict], n: int = 25) -> str:
    seen, lines = set(), []
    for b in bad:
        key = (b["where"], tuple(b["fg"]), tuple(b["bg"]))
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"  {b['ratio']:.2f}:1 {b['text']!r} fg={b['fg']} bg={b['bg']} at {b['where']}")
        if len(lines) >= n:
            break
    return "\n".join(lines)


def _assert_readable(page, label: str):
    items = page.evaluate(CONTRAST_JS)
    share, worst, bad = contrast_summary(items)
    chars = sum(i["n"] for i in items)
    print(f"[{label}: {chars} visible characters, {share:.1%} at >= {MIN_RATIO}:1, worst {worst:.2f}:1]")
    assert chars > 500, f"{label}: only {chars} characters of text found: is the page drawn?"
    assert share >= MIN_SHARE, (f"{label}: {share:.1%} of the visible text's characters reach {MIN_RATIO}:1 (want >= "
                                f"{MIN_SHARE:.0%}); worst {worst:.2f}:1. The worst offenders:\n{_report(bad)}")


def _open_app(browser, url: str, *, width: int, height: int, scheme: str, theme: str | None):
    page = new_page(browser, width=width, height=height)
    page.emulate_media(color_scheme=scheme)
    page.goto(url + (f"/?__theme={theme}" if theme else "/"))
    # the example trace's step panels, drawn by the page's step viewer as they come into view
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    scroll_through(page)
    page.wait_for_function(
        "(ids) => ids.every((id) => { const p = document.querySelector('#' + id + ' .viewer-plot');"
        " return p && p._fullLayout; })", arg=list(STEP_PANELS), timeout=120_000)
    page.wait_for_selector("#output .step", timeout=60_000)
    return page


@pytest.mark.parametrize("how", ["__theme=dark", "system dark", "light"])
def test_app_text_and_figures_follow_the_theme(browser, app_url, how):
    dark = how != "light"
    page = _open_app(browser, app_url, width=1366, height=768, scheme="dark" if how == "system dark" else "light",
                     theme="dark" if how == "__theme=dark" else None)
    assert page.evaluate("() => document.body.classList.contains('dark')") == dark, "Gradio's theme class is not what was asked"
    _scroll_through(page)
    _assert_readable(page, f"app, {how}, 1366x768")
    figs = page.evaluate(FIGURES_JS, list(STEP_PANELS))
    assert set(figs) == set(STEP_PANELS), figs
    for id_, f in figs.items():
        if dark:
            assert f["paper_lum"] is not None and f["paper_lum"] < 0.2 and f["paper_alpha"] > 0.9, f"{id_}: paper {f['paper']} is not dark"
            assert f["font_lum"] is not None and f["font_lum"] > 0.5, f"{id_}: font {f['font']} is not light"
        else:
            assert f["paper_lum"] is None or f["paper_lum"] > 0.8 or f["paper_alpha"] < 0.1, f"{id_}: paper {f['paper']} in light mode"
            assert f["font_lum"] is not None and f["font_lum"] < 0.2, f"{id_}: font {f['font']} in light mode"
    assert not page.errors, page.errors


def test_app_follows_a_theme_change(browser, app_url):
    """The system's theme changes while the page is open: the page's figures follow it."""
    page = _open_app(browser, app_url, width=1366, height=768, scheme="light", theme=None)
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.body.classList.contains('dark')", timeout=10_000)
    page.wait_for_function(
        "() => { const p = document.querySelector('#dist-plot .viewer-plot'); const c = p && p._fullLayout.paper_bgcolor;"
        " return !!c && c !== 'white' && c !== '#fff' && c !== '#ffffff' && c !== 'rgb(255, 255, 255)'; }", timeout=10_000)
    figs = page.evaluate(FIGURES_JS, list(STEP_PANELS))
    assert all(f["paper_lum"] < 0.2 for f in figs.values()), figs
    # Gradio's buttons fade to their dark colours: read them once the fade is over (mid-way they are neither theme's)
    page.wait_for_function("() => document.getAnimations().every((a) => a.playState !== 'running')", timeout=10_000)
    _assert_readable(page, "app, light then system dark")


def test_server_drawn_figures_are_readable_in_dark(browser, app_url):
    """The figures the server draws (the 'inside the model' tabs) on the dark page: the first tab on screen."""
    page = _open_app(browser, app_url, width=1366, height=768, scheme="dark", theme="dark")
    wait_model_loaded(page)  # (the open tab, the logit lens, is the model's: computed for the step on screen)
    page.locator("#panel-inside").scroll_into_view_if_needed()  # the page asks for the open tab once it is on screen
    drawn = ("() => Array.from(document.querySelectorAll('#panel-inside .js-plotly-plot'))"
             ".filter((p) => p._fullLayout && p.getBoundingClientRect().height > 2).map((p) => p.closest('[id]').id)")
    page.wait_for_function(f"() => ({drawn})().length > 0", timeout=60_000)
    ids = page.evaluate(drawn)
    figs = page.evaluate(FIGURES_JS, ids)
    for id_, f in figs.items():
        dark_paper = f["paper_alpha"] is not None and (f["paper_alpha"] < 0.1 or f["paper_lum"] < 0.2)
        assert dark_paper, f"{id_}: paper {f['paper']} is a light rectangle on the dark page"
    _assert_readable(page, "app, inside tabs, dark")


@pytest.fixture(scope="module")
def offline_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("offline") / "viewer.html"
    subprocess.run([sys.executable, "-m", "viz", "html", str(ROOT / "assets" / "example_trace.json.gz"), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    return out


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_offline_page_follows_the_system_theme(browser, offline_page, scheme):
    page = new_page(browser, width=1366, height=768)
    page.emulate_media(color_scheme=scheme)
    page.goto(offline_page.as_uri())
    page.wait_for_function("() => document.querySelector('#dist-plot .js-plotly-plot')?._fullLayout", timeout=60_000)
    _scroll_through(page)
    _assert_readable(page, f"offline page, {scheme}")
    ids = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter((p) => p._fullLayout && !p.closest('.colour-scale'))"
                        ".map((p) => p.closest('[id]').id)")
    figs = page.evaluate(FIGURES_JS, ids)
    assert figs, "no figure drawn"
    for id_, f in figs.items():
        if scheme == "dark":
            assert f["paper_lum"] < 0.2 and f["font_lum"] > 0.5, f"{id_}: paper {f['paper']}, font {f['font']}"
        else:
            assert f["font_lum"] < 0.2, f"{id_}: font {f['font']}"
    assert not page.errors, page.errors
