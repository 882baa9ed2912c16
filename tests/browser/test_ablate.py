"""The "Switch off" tab of "Inside the model" in a real browser, at 1366x768 and 390x844 (touch), light and dark:
a head switched off for the step on screen, its `#ablate-result` numbers against the pipeline's own computation in
this process; the MLP block; the head map of one block and of every block (streamed block by block); and, with no
model loaded, the sentence that says switch-off needs it. Screenshots: artifacts/screenshots/i35_ablate_*.png."""
from __future__ import annotations

import numpy as np
import pytest

from .harness import ROOT, app_server, new_page, wait_model_loaded

pytestmark = pytest.mark.browser

VIEWPORTS = {"wide": (1366, 768, False), "phone": (390, 844, True)}
RESULT = "() => { const e = document.querySelector('#ablate-result'); return e ? Object.assign({}, e.dataset) : null; }"
MAP_Z = """() => { const el = document.querySelector('#ablate-map .js-plotly-plot');
  if (!el || !el.data) return null; const z = el.data[1].z; return {blocks: Array.from(el.layout.yaxis.ticktext), z: Array.from(z, r => Array.from(r))}; }"""


@pytest.fixture(scope="module")
def smol():
    from pipeline.loading import load_model

    return load_model(None)


@pytest.fixture(scope="module")
def example():
    from pipeline.trace import files as trace_io

    return trace_io.load(str(ROOT / "assets" / "example_trace.json.gz"))


def _open(browser, url: str, viewport: str, theme: str):
    w, h, touch = VIEWPORTS[viewport]
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
    page = ctx.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url + ("?__theme=dark" if theme == "dark" else ""))
    page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=90_000)
    return page


def _open_tab(page):
    """The tab, from its button, or on a narrow screen from the tabs' overflow menu ("More tabs")."""
    page.locator("#panel-inside").scroll_into_view_if_needed()
    if page.locator("#tab-ablate-button").is_visible():
        page.click("#tab-ablate-button")
    else:
        page.click("#inside-tabs button[aria-label='More tabs']")
        page.click("#inside-tabs .overflow-dropdown button:has-text('Switch off')")


def _fill(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input")
    box.fill(str(value))
    box.blur()


def _step_on_screen(page) -> int:
    return int(float(page.input_value("#step-slider input[type=number]")))


def _check(got: dict, rec, step_index: int):
    assert got["layer"] == str(rec.layer) and got["part"] == rec.part and got["token"] == str(rec.token_id)
    assert got.get("head") == (None if rec.head is None else str(rec.head)) and got["step"] == str(step_index)
    assert float(got["before"]) == pytest.approx(rec.chosen_before, abs=1e-6)
    assert float(got["after"]) == pytest.approx(rec.chosen_after, abs=1e-6)


@pytest.mark.parametrize("viewport, theme", [("wide", "light"), ("wide", "dark"), ("phone", "light"), ("phone", "dark")])
def test_switch_a_head_off_then_the_mlp_then_map_one_block(browser, app_url, shots, smol, example, viewport, theme):
    from pipeline.inside import ablate

    page = _open(browser, app_url, viewport, theme)
    wait_model_loaded(page)
    _open_tab(page)
    page.wait_for_selector("#ablate-result", timeout=120_000)  # the tab, drawn for the step on screen as it opens
    s = _step_on_screen(page)
    step = example.steps[s]
    _fill(page, "ablate-layer", 3)
    _fill(page, "ablate-head", 5)
    page.click("#ablate-run")
    page.wait_for_selector("#ablate-result[data-layer='3'][data-head='5']", timeout=120_000)
    _check(page.evaluate(RESULT), ablate.ablate_step(smol, step, layer=3, part="head", head=5), step.index)
    assert "not an explanation of the whole model" in page.inner_text("#ablate-html")
    page.click("#ablate-part label:has-text('the MLP block')")
    page.click("#ablate-run")
    page.wait_for_selector("#ablate-result[data-part='mlp']", timeout=120_000)
    _check(page.evaluate(RESULT), ablate.ablate_step(smol, step, layer=3, part="mlp"), step.index)
    page.click("#ablate-map-run")
    page.wait_for_selector("#ablate-map-result[data-done='1'][data-total='1']", timeout=120_000)
    page.wait_for_function(f"() => ({MAP_Z})() !== null", timeout=30_000)
    drawn = page.evaluate(MAP_Z)
    hm = ablate.head_map(smol, step.context_ids, step.token_id, layers=[3])
    assert drawn["blocks"] == ["3"] and np.allclose(drawn["z"][0], hm.delta[3], atol=1e-5)
    assert page.inner_text("#ablate-map-summary").count("of block 3") == 5  # the largest effects, named
    page.wait_for_timeout(600)
    # the table of the tokens that moved most, and the map's titles: whole within the page, its last column too
    cut = page.evaluate("""() => { const box = document.querySelector('#tab-ablate').getBoundingClientRect();
      return [...document.querySelectorAll('#tab-ablate .ablate-movers th, #tab-ablate .ablate-movers td, #tab-ablate .gtitle')]
        .map((e) => e.getBoundingClientRect()).filter((b) => b.width && (b.right > box.right + 1 || b.left < box.left - 1)).length; }""")
    assert cut == 0, cut
    page.locator("#tab-ablate").screenshot(path=str(shots / f"i35_ablate_{viewport}_{theme}.png"))
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth + 1"), "no horizontal scroll"
    assert not page.errors


@pytest.mark.walk
def test_every_block_streams_its_progress_and_follows_the_step(browser, app_url, shots, smol, example):
    from pipeline.inside import ablate

    page = _open(browser, app_url, "wide", "dark")
    wait_model_loaded(page)
    _open_tab(page)
    page.wait_for_selector("#ablate-result", timeout=120_000)
    page.click("#ablate-map-all")
    page.wait_for_selector("#ablate-map-result[data-total='30']:not([data-done='30'])", timeout=120_000)  # part done
    page.wait_for_selector("#ablate-map-result[data-done='30'][data-total='30']", timeout=400_000)
    step = example.steps[_step_on_screen(page)]
    hm = ablate.head_map(smol, step.context_ids, step.token_id)
    drawn = np.array(page.evaluate(MAP_Z)["z"], dtype=float)
    assert drawn.shape == (30, 9) and np.allclose(drawn, hm.delta, atol=1e-5)
    (l, h, _), *_ = hm.largest(1)
    assert page.locator("#ablate-map-summary li").first.get_attribute("data-layer") == str(l)
    page.wait_for_timeout(600)
    page.locator("#tab-ablate").screenshot(path=str(shots / "i35_ablate_every_block_wide_dark.png"))
    # another step on screen: the tab is drawn for it, and the map of the step before is taken away
    page.evaluate("() => { const r = document.querySelector('#step-slider input[type=range]'); r.value = 2;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_selector("#ablate-result[data-step='2']", timeout=120_000)
    _check(page.evaluate(RESULT), ablate.ablate_step(smol, example.steps[2], layer=0, part="head", head=0), 2)
    page.wait_for_selector("#ablate-map-result[data-key='']", timeout=30_000)
    assert not page.errors


def test_with_no_model_loaded_the_tab_says_it_needs_it(browser, tmp_path, shots):
    with app_server(log=tmp_path / "app.log", env={"LLM_VIZ_LOAD_GATE": str(tmp_path / "never")}) as url:  # loading held
        page = new_page(browser, width=1366, height=768)
        page.goto(url)
        page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=90_000)
        _open_tab(page)
        page.wait_for_selector("#ablate-html :text('needs the model')", timeout=60_000)
        assert "needs the model" in page.inner_text("#ablate-map-summary")
        page.click("#ablate-map-all")
        page.wait_for_selector(".toast-body:has-text('needs the model')", timeout=30_000)
        assert "Rayleigh" in page.inner_text("#output")  # the saved trace is still there to look at
        page.locator("#tab-ablate").screenshot(path=str(shots / "i35_ablate_no_model.png"))
        assert not page.errors
