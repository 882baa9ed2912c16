"""The samples view (viz/samples.py) in Chromium, inside the app's own page and style sheet: 32 continuations the embedded
model drew (samples_smol.json, written by `python -m pipeline samples --n 32 --max-new-tokens 24`), at 1366x768 and on
a 390x844 phone, light and dark: nothing wider than the screen, every text readable (WCAG 4.5:1), the first token's
bars as long as their counts, and screenshots (artifacts/screenshots/i35_samples_*.png). The page's own wiring of the
view (the Sample button, #samples-result) is tested with it; this file tests the view alone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.trace.samples import from_json
from viz.samples import samples_html

from .test_dark_mode import CONTRAST_JS

pytestmark = pytest.mark.browser
FIXTURE = Path(__file__).with_name("samples_smol.json")

# Put the view at the top of the page's main column (inside .contain, where Gradio scopes the style sheet) and hide everything
# else (so the contrast check reads only it).
SHOW_JS = r"""
(html) => {
  const host = document.querySelector('.gradio-container .contain') || document.querySelector('.gradio-container');
  const probe = document.createElement('div');
  probe.id = 'samples-probe'; probe.className = 'prose';
  probe.innerHTML = html;
  host.prepend(probe);
  for (let e = probe; e && e !== document.body; e = e.parentElement)
    for (const sib of e.parentElement.children) if (sib !== e && sib.tagName !== 'STYLE' && sib.tagName !== 'SCRIPT') sib.style.display = 'none';
  window.scrollTo(0, 0);
}
"""

GEOMETRY_JS = r"""
() => {
  const root = document.querySelector('#samples-probe .samples-result');
  const vw = document.documentElement.clientWidth;
  const wide = Array.from(root.querySelectorAll('*')).filter((e) => e.getBoundingClientRect().right > vw + 1)
    .map((e) => e.className || e.tagName);
  const bars = Array.from(root.querySelectorAll('.samples-frow:not(.samples-rest)')).map((row) => {
    const drawn = row.querySelector('.samples-bar-drawn'), track = drawn.parentElement;
    return { count: Number(row.dataset.count), share: drawn.getBoundingClientRect().width / track.getBoundingClientRect().width };
  });
  return { n: Number(root.dataset.n), texts: root.querySelectorAll('.sample-text').length,
           buttons: root.querySelectorAll('button.sample-open').length, wide, bars, scroll: document.documentElement.scrollWidth, vw };
}
"""


@pytest.mark.parametrize("w,h,touch,theme", [(1366, 768, False, "light"), (1366, 768, False, "dark"),
                                             (390, 844, True, "light"), (390, 844, True, "dark")])
def test_the_view_fits_reads_and_measures_in_the_page(browser, app_url, shots, w, h, touch, theme):
    s = from_json(json.loads(FIXTURE.read_text(encoding="utf-8")))
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
    page = ctx.new_page()
    page.goto(app_url + ("?__theme=dark" if theme == "dark" else ""))
    page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=120_000)
    page.evaluate(SHOW_JS, samples_html(s, alone_seconds=1.7))
    name = f"i35_samples_{'phone' if touch else 'laptop'}_{theme}"
    page.screenshot(path=str(shots / f"{name}.png"))
    page.locator("#samples-probe").screenshot(path=str(shots / f"{name}_whole.png"))
    g = page.evaluate(GEOMETRY_JS)
    assert g["n"] == s.n == 32 and g["texts"] == 32 and g["buttons"] == 32
    assert not g["wide"] and g["scroll"] <= g["vw"] + 1, g["wide"]
    for b in g["bars"]:
        assert b["share"] == pytest.approx(b["count"] / s.n, abs=0.02)
    assert sum(b["count"] for b in g["bars"]) == 32
    low = [r for r in page.evaluate(CONTRAST_JS) if r["ratio"] < 4.5]
    assert not low, low[:5]
    # in the width the app gives it at 1366x768 (its column beside the distribution, ~640 px), and on the phone: every
    # count and percentage whole and inside the first token's card (never "6 o", never over the tree's caption)
    page.evaluate("(w) => { document.getElementById('samples-probe').style.maxWidth = w + 'px'; }", 640 if w > 800 else w)
    cut = page.evaluate("""() => [...document.querySelectorAll('#samples-probe .samples-val')].filter((e) => {
      const card = e.closest('.samples-first').getBoundingClientRect(), b = e.getBoundingClientRect();
      return e.scrollWidth > e.clientWidth + 1 || b.right > card.right + 1; }).map((e) => e.textContent)""")
    assert cut == [], cut
    page.locator("#samples-probe").screenshot(path=str(shots / f"{name}_column.png"))
    ctx.close()
