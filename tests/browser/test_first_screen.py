"""The first screen teaches (issue 24): as a class meets the page, on a projector, a school laptop and a
phone, in light and dark: the text, the step slider, the sampling sliders and the next-token distribution
on the first screen; no horizontal scroll on the phone; text large enough for the back of a room.

Each case opens the page fresh and measures the moment the distribution is drawn (the example trace,
no model needed), as a person who just opened the link sees it; the screenshots are kept in
artifacts/screenshots/first-screen-*.png.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

VIEWPORTS = {"projector": (1920, 960, False), "laptop": (1366, 768, False), "phone": (390, 844, True)}
BOXES = """(ids) => Object.fromEntries(ids.map(id => { const e = document.getElementById(id);
  const r = e ? e.getBoundingClientRect() : null;
  return [id, r && r.height ? {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right} : null]; }))"""
# Every visible text on the first screen, by font size: HTML text and the figures' SVG text apart. Text in a
# closed disclosure (the model's details) or hidden is not seen, so not counted.
FONT_SIZES = """() => { const out = []; const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    const t = n.textContent.trim(), el = n.parentElement;
    if (!t || !el || (el.closest('details:not([open])') && !el.closest('summary'))) continue;
    if (/^[0-9.]+s$/.test(t) || /^processing/.test(t)) continue;  // Gradio's own passing timer of a running event
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (!r.width || !r.height || r.bottom < 0 || r.top > innerHeight || cs.visibility === 'hidden' || Number(cs.opacity) === 0) continue;
    out.push({svg: !!el.closest('svg'), px: parseFloat(cs.fontSize), n: t.length, text: t.slice(0, 40)}); }
  return out; }"""
LESSON = ["output", "step-slider", "play", "temperature", "top-k", "top-p", "dist-plot", "generate", "prompt"]


def _open(browser, url: str, viewport: str, theme: str):
    w, h, touch = VIEWPORTS[viewport]
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
    page = ctx.new_page()
    page.goto(url + ("?__theme=dark" if theme == "dark" else ""))
    # the moment the distribution is drawn: the example trace's bars
    page.wait_for_function("() => document.querySelectorAll('#dist-plot .main-svg .bars .point').length > 0", timeout=90_000)
    return page, w, h


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("viewport", ["projector", "laptop"])
def test_text_slider_sampling_and_distribution_share_the_first_screen(browser, app_url, shots, viewport, theme):
    page, w, h = _open(browser, app_url, viewport, theme)
    page.screenshot(path=str(shots / f"first-screen-{w}x{h}-{theme}.png"))
    box = page.evaluate(BOXES, LESSON)
    for id_ in ("output", "step-slider", "play", "temperature", "top-k", "top-p", "generate", "prompt"):
        assert box[id_] is not None and box[id_]["bottom"] <= h and box[id_]["right"] <= w, (id_, box[id_], h)
    # the chart starts on the first screen with its top bars in view (its title, legend and the first
    # candidates: at least 320 px), beside the sliders that reshape it
    dist = box["dist-plot"]
    assert dist["top"] <= h - 320, (dist, h)
    assert box["temperature"]["bottom"] <= dist["top"] + 5 and box["temperature"]["left"] >= box["output"]["right"] - 5, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= w


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_on_a_phone_one_column_the_text_and_the_chart_within_two_screens(browser, app_url, shots, theme):
    page, w, h = _open(browser, app_url, "phone", theme)
    page.screenshot(path=str(shots / f"first-screen-{w}x{h}-{theme}.png"))
    page.screenshot(path=str(shots / f"first-screen-{w}x{h}-{theme}-two-screens.png"), full_page=True,
                    clip={"x": 0, "y": 0, "width": w, "height": 2 * h})
    assert page.evaluate("() => document.documentElement.scrollWidth") <= w, "the phone scrolls sideways"
    box = page.evaluate(BOXES, LESSON)
    assert box["output"]["top"] < h, box["output"]  # the text starts on the first screen
    assert box["dist-plot"]["top"] + 250 <= 2 * h, box["dist-plot"]  # the chart's title and top bars within two screens
    for id_ in LESSON:  # one column: nothing sticks out of the screen's width
        assert box[id_]["left"] >= 0 and box[id_]["right"] <= w, (id_, box[id_])
    # touch targets: the buttons a student taps are at least 32 px each way
    for id_ in ("generate", "step", "stop", "play"):
        b = page.evaluate(f"() => {{ const r = document.getElementById('{id_}').getBoundingClientRect(); return [r.width, r.height]; }}")
        assert min(b) >= 32, (id_, b)
    # a tap on a piece of the text shows its step and probability (a phone has no hover)
    page.locator("#output .gen-text [data-step='2']").tap()
    page.wait_for_selector("#piece-tip:not([hidden])", timeout=5_000)
    assert "step 2" in page.inner_text("#piece-tip") and "p=" in page.inner_text("#piece-tip")
    # and a tap on a glossary word of a caption says what it means (viz/glossary.py)
    page.locator("#panel-distribution abbr.term", has_text="logit").first.tap()
    page.wait_for_function("() => (document.querySelector('#piece-tip:not([hidden])')?.innerText || '').includes('raw score')",
                           timeout=5_000)
    # the chart's mode bar is hidden on a phone (it covered the titles)
    modebar = page.evaluate("() => { const m = document.querySelector('#dist-plot .modebar-container'); return m ? getComputedStyle(m).display : 'none'; }")
    assert modebar == "none"


@pytest.mark.parametrize("viewport", ["projector", "laptop", "phone"])
def test_first_screen_text_is_large_enough_for_a_room(browser, app_url, viewport):
    """Body text >= 16 px (a few small labels, the sliders' end values, >= 14 px); figure text >= 13 px."""
    page, w, h = _open(browser, app_url, viewport, "light")
    texts = page.evaluate(FONT_SIZES)
    if viewport == "phone":  # and its second screen: the chart
        page.evaluate("() => document.getElementById('dist-plot').scrollIntoView()")
        texts += page.evaluate(FONT_SIZES)
    html_texts = [t for t in texts if not t["svg"]]
    svg_texts = [t for t in texts if t["svg"]]
    assert sum(t["n"] for t in html_texts) > 300 and sum(t["n"] for t in svg_texts) > 100, "the first screen shows text and a chart"
    tiny = [t for t in html_texts if t["px"] < 14]
    assert tiny == [], tiny
    big = sum(t["n"] for t in html_texts if t["px"] >= 16) / sum(t["n"] for t in html_texts)
    assert big >= 0.95, (big, [t for t in html_texts if t["px"] < 16])
    small_svg = [t for t in svg_texts if t["px"] < 13]
    assert small_svg == [], small_svg


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_presenter_view_shows_the_lesson_alone_and_large(browser, app_url, shots, theme):
    """?view=present (or its button): the prompt, the text, the step slider and the distribution under its
    sliders; text >= 24 px, figure text >= 18 px at 1920x960; the button leaves it, and the address follows."""
    w, h = 1920, 960
    ctx = browser.new_context(viewport={"width": w, "height": h}, color_scheme=theme)
    page = ctx.new_page()
    page.goto(app_url + "?view=present" + ("&__theme=dark" if theme == "dark" else ""))
    page.wait_for_function("() => document.querySelectorAll('#dist-plot .main-svg .bars .point').length > 0", timeout=90_000)
    # the figures are enlarged when the step viewer draws them (its first drawing follows the page's)
    page.wait_for_function("() => [...document.querySelectorAll('#dist-plot svg text')].some(t => parseFloat(getComputedStyle(t).fontSize) >= 24)",
                           timeout=60_000)
    page.screenshot(path=str(shots / f"presenter-{w}x{h}-{theme}.png"))
    assert page.evaluate("() => document.body.classList.contains('present')")
    box = page.evaluate(BOXES, LESSON + ["panel-tokens", "model-info", "run-settings"])
    assert box["panel-tokens"] is None and box["model-info"] is None and box["run-settings"] is None, "only the lesson shows"
    for id_ in ("output", "step-slider", "temperature", "top-p", "generate", "prompt"):
        assert box[id_]["bottom"] <= h, (id_, box[id_])
    assert box["dist-plot"]["top"] <= h - 320
    texts = page.evaluate(FONT_SIZES)
    html_texts = [t for t in texts if not t["svg"]]
    big = sum(t["n"] for t in html_texts if t["px"] >= 24) / sum(t["n"] for t in html_texts)
    assert big >= 0.9, (big, [t for t in html_texts if t["px"] < 24])
    small_svg = [t for t in texts if t["svg"] and t["px"] < 18]
    assert small_svg == [], small_svg
    page.click("#present-toggle")
    page.wait_for_function("() => !document.body.classList.contains('present')")
    assert "view=present" not in page.url
    assert page.evaluate(BOXES, ["panel-tokens"])["panel-tokens"] is not None
    assert page.evaluate("() => [...document.querySelectorAll('#dist-plot svg text')].every(t => parseFloat(getComputedStyle(t).fontSize) < 24)")


def test_play_speed_sets_the_steps_a_second(browser, app_url):
    """Play's speed control (the page's own): slow is 1 step a second, fast up to 12; changed while playing, it applies."""
    page, w, h = _open(browser, app_url, "projector", "light")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    page.evaluate("() => { const r = document.querySelector('#step-slider input[type=range]'); r.value = 0;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }")
    _speed(page, "slow")
    page.click("#play")
    page.wait_for_timeout(3500)
    slow = page.evaluate("() => LLMApp.state.step")
    _speed(page, "fast")
    page.wait_for_timeout(1500)
    fast = page.evaluate("() => LLMApp.state.step") - slow
    page.click("#play")
    assert 2 <= slow <= 5, slow  # about 1 a second (the first step at once)
    assert fast >= 6, fast  # up to 12 a second: at least 4 a second on a busy machine


def _speed(page, name: str) -> None:
    """Pick Play's speed as a person does: open the dropdown, click the choice."""
    page.click("#play-speed input")
    page.get_by_role("option", name=name).click()
    page.wait_for_function("(v) => document.querySelector('#play-speed input').value === v", arg=name, timeout=5_000)
