"""Colour by (issue 35, part 3), in Chromium, on the app's page (1366x768 and a 390x844 phone, light and dark) and
on the offline page: each mode colours every token of the written text by its own number (the shade's bin checked
here against the trace's records, read from the file), with no request; the legend shows the scale; a hover or a
tap gives the token's number; every text on a shade reads >= 4.5:1; Guess first never shows the hidden token, nor
its number, through the colouring."""
from __future__ import annotations

import json
import math
import re

import pytest

from pipeline.trace.files import load
from viz.text import catalogue, pct
from viz.viewer.page import write_html

from .harness import ROOT, new_page, wait_model_loaded
from .test_dark_mode import CONTRAST_JS

pytestmark = pytest.mark.browser

JS = (ROOT / "assets" / "colour_by.js").read_text(encoding="utf-8")
EDGES = {m: json.loads(re.search(rf"const {name} = (\[.*?\]);", JS).group(1))
         for m, name in (("prob", "PROB_EDGES"), ("surprise", "BIT_EDGES"), ("entropy", "BIT_EDGES"))}
MODES = ("prob", "surprise", "entropy")
MOUNTED = "() => window.LLMApp && LLMApp.mounted() && !!document.querySelector('#output .gen-text [data-cb]')"

# every span of the text that shows: its step, shade, numbers, colours, and whether it is drawn
SPANS = """() => Array.from(document.querySelectorAll('#output [data-step]')).map((el) => {
  const cs = getComputedStyle(el), r = el.getBoundingClientRect();
  return { step: Number(el.dataset.step), cb: el.dataset.cb ?? null, bg: cs.backgroundColor, fg: cs.color,
           prob: el.dataset.prob, shown: el.checkVisibility() && r.width > 0 && !el.classList.contains('future') };
})"""
LEGEND = """() => { const l = document.querySelector('#colour-legend .cb-legend');
  if (!l || !l.checkVisibility()) return null;
  return { mode: l.dataset.colourBy, what: l.querySelector('.cb-what').textContent, readout: l.querySelector('.cb-readout').textContent,
           swatches: Array.from(l.querySelectorAll('.cb-scale [data-cb]')).map((s) => ({ cb: s.dataset.cb, bg: getComputedStyle(s).backgroundColor,
                                                                                     text: s.textContent })) }; }"""


def expected(step, mode: str) -> str:
    """The bin a step's number falls in, from the trace's own record: how many of the scale's edges it reaches."""
    x = {"prob": step.chosen_final_prob, "surprise": -math.log2(step.chosen_prob) if step.chosen_prob > 0 else math.inf,
         "entropy": step.entropy}[mode]
    return str(sum(x >= e for e in EDGES[mode]))


def readout_of(step, mode: str) -> str:
    if mode == "prob":
        return pct(step.chosen_final_prob, None)
    return f"{-math.log2(step.chosen_prob) if mode == 'surprise' else step.entropy:.2f} bits"


def lum(css: str) -> float:
    r, g, b = (int(v) for v in re.findall(r"\d+", css)[:3])
    lin = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    x, y = sorted((lum(a), lum(b)), reverse=True)
    return (x + 0.05) / (y + 0.05)


@pytest.fixture(scope="module")
def example():
    return load(ROOT / "assets" / "example_trace.json.gz")


def check_painted(spans, steps, mode: str, dark: bool):
    """Each span shown has its record's bin; one bin, one colour; more: darker (light) or lighter (dark); readable."""
    shown = [s for s in spans if s["shown"]]
    assert len(shown) >= 5
    by_bin = {}
    for s in shown:
        assert s["cb"] == expected(steps[s["step"]], mode), (mode, s)
        assert float(s["prob"]) == pytest.approx(steps[s["step"]].chosen_final_prob, rel=1e-6)
        by_bin.setdefault(int(s["cb"]), set()).add(s["bg"])
        assert contrast(s["bg"], s["fg"]) >= 4.5, (mode, s)
    assert all(len(v) == 1 for v in by_bin.values()), by_bin
    lums = [lum(next(iter(by_bin[k]))) for k in sorted(by_bin)]
    assert lums == sorted(lums, reverse=not dark), (mode, by_bin)
    return by_bin


def pick(page, mode: str, touch: bool):
    label = page.locator("#colour-by label").filter(has_text=re.compile(f"^\\s*{re.escape(catalogue()[f'choice.colour_by.{mode}'])}\\s*$"))
    label.tap() if touch else label.click()
    page.wait_for_function("(m) => document.querySelector('#output[data-colour-by], #output [data-colour-by]')?.dataset.colourBy === m", arg=mode, timeout=5_000)
    page.wait_for_timeout(300)  # (the offline page's shades fade in: viewer.css, a transition of 0.1 s)


@pytest.mark.parametrize("w,h,touch,theme", [(1366, 768, False, "light"), (1366, 768, False, "dark"),
                                             (390, 844, True, "light"), (390, 844, True, "dark")])
def test_each_mode_colours_the_text_with_its_legend_and_numbers(browser, app_url, shots, example, w, h, touch, theme):
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app_url + ("?__theme=dark" if theme == "dark" else ""))
    page.wait_for_function(MOUNTED, timeout=120_000)
    steps, dark = example.steps, theme == "dark"
    # the default: token boundaries, two shades by the step's parity, and no legend (the first screen as before)
    spans = page.evaluate(SPANS)
    assert all(s["cb"] == "ab"[s["step"] % 2] for s in spans) and page.evaluate(LEGEND) is None
    if touch:  # the choices scroll sideways on a phone: a "›" at the row's edge says there are more
        row = page.evaluate("""() => { const e = document.getElementById('colour-by');
          return [e.scrollWidth > e.clientWidth, getComputedStyle(e, '::after').content]; }""")
        assert row == [True, '"›"'], row
    assert all(contrast(s["bg"], s["fg"]) >= 4.5 for s in spans if s["shown"])
    wait_model_loaded(page)  # (once the model has loaded and the page's opening calls are made, it asks nothing by itself)
    page.wait_for_timeout(1500)
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/gradio_api/" in r.url and "heartbeat" not in r.url else None)
    for mode in MODES:
        pick(page, mode, touch)
        by_bin = check_painted(page.evaluate(SPANS), steps, mode, dark)
        legend = page.evaluate(LEGEND)
        assert legend and legend["mode"] == mode and legend["what"] == catalogue()[f"colour.legend.{mode}"]
        assert [s["cb"] for s in legend["swatches"]] == [str(i) for i in range(len(EDGES[mode]) + 1)]
        for k, colours in by_bin.items():  # the legend's shade of a bin is the text's
            assert legend["swatches"][k]["bg"] in colours
        # a hover (a tap on a phone) gives the token's number, in the legend and (the title) in the page's tip
        target = page.locator("#output [data-step]:not([hidden])").nth(3)
        step = steps[int(target.get_attribute("data-step"))]
        target.tap() if touch else target.hover()
        readout = page.evaluate(LEGEND)["readout"]
        assert readout.endswith(readout_of(step, mode)) and f"at step {step.index}:" in readout, readout
        if touch:
            assert f"p={step.chosen_final_prob:.3f}" in page.inner_text("#piece-tip")
        ours = [c for c in page.evaluate(CONTRAST_JS) if any(k in c["where"] for k in ("#output", "#colour-legend", "cb-"))]
        assert len(ours) > 10 and all(c["ratio"] >= 4.5 for c in ours), [c for c in ours if c["ratio"] < 4.5]
        page.locator("#output").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"i35_colour_{w}x{h}_{theme}_{mode}.png"))
    assert requests == [], requests  # every mode drawn by the page alone
    pick(page, "none", touch)
    assert all(s["cb"] is None for s in page.evaluate(SPANS)) and page.evaluate(LEGEND) is None
    pick(page, "boundaries", touch)
    assert all(s["cb"] == "ab"[s["step"] % 2] for s in page.evaluate(SPANS))
    assert errors == []
    ctx.close()


def test_colour_by_probability_says_when_the_sliders_have_moved_since_the_run(browser, app_url):
    """The colours are the run's own probabilities: with the sliders at other settings (the chart reshaped to them) the
    legend says so, and stops saying it when they are back at the run's."""
    from .harness import set_number

    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url)
    page.wait_for_function(MOUNTED, timeout=120_000)
    pick(page, "prob", False)
    moved = "() => { const n = document.querySelector('#colour-legend .cb-moved'); return !!n && !n.hidden && n.textContent; }"
    assert page.evaluate(moved) is False
    run_t = page.evaluate("() => LLMApp.state.bundle.settings.temperature")
    set_number(page, "temperature", 1.3 if run_t != 1.3 else 0.9)
    page.wait_for_function(moved, timeout=10_000)
    assert page.evaluate(moved) == catalogue()["colour.moved"]
    set_number(page, "temperature", run_t)
    page.wait_for_function(f"() => !({moved})()", timeout=10_000)
    assert not page.errors


def test_guess_first_never_shows_the_hidden_token_through_its_colour(browser, app_url, shots, example):
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url)
    page.wait_for_function(MOUNTED, timeout=120_000)
    last = len(example.steps) - 1
    pick(page, "prob", False)
    # a token read, then Guess first on: the step on screen (that token's) is hidden, its number gone from the legend
    page.locator(f"#output [data-step='{last}']").hover()
    assert f"at step {last}:" in page.evaluate(LEGEND)["readout"]
    page.click("#guess-toggle input")
    page.wait_for_function("() => document.body.classList.contains('guess-hidden')", timeout=10_000)
    for mode in MODES:
        pick(page, mode, False)
        page.wait_for_timeout(100)
        hidden = page.evaluate("""() => { const el = document.querySelector('#output .gen-text .at-step');
          const r = el.getBoundingClientRect(); return { display: getComputedStyle(el).display, w: r.width, h: r.height }; }""")
        assert hidden == {"display": "none", "w": 0, "h": 0}, (mode, hidden)
        legend = page.evaluate(LEGEND)
        assert f"step {last}" not in legend["readout"] and legend["readout"] == catalogue()["colour.hint"], legend
        shown = [s for s in page.evaluate(SPANS) if s["shown"]]
        assert shown and max(s["step"] for s in shown) == last - 1  # the steps before it only
        page.locator(f"#output [data-step='{last}']").dispatch_event("click")  # a click on the hidden span: nothing read
        assert page.evaluate(LEGEND)["readout"] == catalogue()["colour.hint"]
        assert not page.is_visible("#piece-tip")  # (nor the tap tip: assets/page_view.js)
    page.screenshot(path=str(shots / "i35_colour_1366x768_light_guess.png"))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_offline_page_colours_its_text_the_same(browser, example, tmp_path, shots, theme):
    path = tmp_path / "trace.html"
    write_html(example, path)
    for w, h, touch in ((1366, 768, False), (390, 844, True)):
        ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
        page = ctx.new_page()
        page.errors = []
        page.on("pageerror", lambda e, page=page: page.errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_function("() => window.LLMViewer && LLMViewer.page && document.querySelector('#output [data-cb]')", timeout=60_000)
        n = len(example.steps)
        page.evaluate(f"() => LLMViewer.page.show({n - 1})")  # (the last step: every token written)
        for mode in MODES:
            pick(page, mode, touch)
            check_painted(page.evaluate(SPANS), example.steps, mode, theme == "dark")
            target = page.locator("#output [data-step]").nth(2)
            step = example.steps[int(target.get_attribute("data-step"))]
            target.tap() if touch else target.hover()
            assert page.evaluate(LEGEND)["readout"].endswith(readout_of(step, mode))
        page.locator("#output").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"i35_colour_offline_{w}x{h}_{theme}.png"))
        # Guess first: the step on screen hidden whatever its colour, and the legend forgets it
        page.locator(f"#output [data-step='{n - 1}']").hover()
        page.click("#guess-toggle input")
        page.wait_for_function("() => document.documentElement.classList.contains('guess-hidden')", timeout=5_000)
        page.wait_for_timeout(100)
        assert page.evaluate(f"() => getComputedStyle(document.querySelector(\"#output [data-step='{n - 1}']\")).display") == "none"
        assert page.evaluate(LEGEND)["readout"] == catalogue()["colour.hint"]
        assert page.errors == []
        ctx.close()
